//! The tick constants: the ones every peer shares whatever the game
//! (`game_api::tick`, re-exported) and the raycaster's own rules of timing.

pub use game_api::tick::*;

/// Ticks of the exit countdown (five seconds) before a level is complete.
pub const COUNTDOWN_TICKS: u32 = 150;

/// Position corrections at or above this many tiles snap in rendering too;
/// smaller ones are smoothed over [`CORRECTION_SMOOTH_MS`].
pub const SNAP_THRESHOLD_TILES: f64 = 0.5;

/// Rendering window over which a small correction decays to zero.
pub const CORRECTION_SMOOTH_MS: u64 = 150;
