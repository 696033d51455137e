//! The raycaster's side of the game boundary: its [`LevelSetup`], its
//! [`EngineError`], and [`Engine`], what the raycaster's own tools (the
//! sync tests, the viewers) need beyond [`Game`], the interface the
//! sessions drive.

use crate::wire::Raycaster;
use crate::wire::map::MapError;
use game_api::Game;
use thiserror::Error;

use crate::rules::Difficulty;

pub use game_api::{Bot, IdleBot, LevelStatus};

/// Everything a raycaster level is built from (the setup handshake or a
/// §7 transition payload): its gameplay seed as the head, its map as the
/// body, the session's difficulty as the settings.
pub type LevelSetup = game_api::LevelSetup<Raycaster>;

/// Why an engine refused a level, a snapshot or a saved state.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The map failed validation.
    #[error("invalid map: {0}")]
    InvalidMap(#[from] MapError),
    /// The roster is empty, unsorted or has duplicates.
    #[error("roster must be non-empty, sorted and free of duplicates")]
    BadRoster,
    /// A snapshot reflects a different tick than the engine is at.
    #[error("snapshot is for tick {snapshot} but the engine is at tick {engine}")]
    TickMismatch {
        /// The snapshot's tick.
        snapshot: u64,
        /// The engine's tick.
        engine: u64,
    },
    /// A snapshot's players differ from the roster.
    #[error("snapshot players do not match the roster: {0}")]
    RosterMismatch(String),
    /// A snapshot field is out of range or not finite.
    #[error("snapshot field {field} is invalid: {detail}")]
    BadSnapshot {
        /// Which field.
        field: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A saved world state could not be restored.
    #[error("saved state rejected: {0}")]
    BadState(String),
}

/// The raycaster's engine beyond [`Game`]: its stream of randomness, its
/// difficulty, and its whole state as text, for rollback and sync tests.
pub trait Engine: Game<Wire = Raycaster, Error = EngineError> {
    /// The raw mulberry32 state.
    fn rng_state(&self) -> u32;

    /// Resumes the stream at a raw state.
    fn set_rng_state(&mut self, state: u32);

    /// The session difficulty the level was built with.
    fn difficulty(&self) -> Difficulty;

    /// The complete world state (for rollback and sync tests).
    ///
    /// # Errors
    ///
    /// The state could not be written.
    fn save_state(&self) -> Result<String, EngineError>;

    /// Restores a state from [`Engine::save_state`] of the same level.
    ///
    /// # Errors
    ///
    /// The text is not such a state; nothing changed.
    fn load_state(&mut self, state: &str) -> Result<(), EngineError>;
}
