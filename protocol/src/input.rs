//! The player id every message names, from `game-api` (re-exported here
//! for the peers that name it through `protocol`).

pub use game_api::PlayerId;
