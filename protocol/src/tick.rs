//! The tick constants every peer shares whatever the game
//! (`game_api::tick`, re-exported).

pub use game_api::tick::*;
