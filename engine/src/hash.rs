//! The raycaster's world hash is `game_api::digest`'s walk of its state,
//! shared with every game.

pub use game_api::digest::{Fnv64, HashError, hash_value};
