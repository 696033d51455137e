//! The [`Engine`] trait the netcode layer drives, its level setup, its status
//! and its error type. Host and guest sessions know only this surface.

use std::collections::BTreeMap;

use crate::wire::input::{InputSnapshot, PlayerId};
use crate::wire::map::{GameMap, MapError};
use crate::wire::snapshot::{Carryover, PlayerScore, ReconciliationSnapshot};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::rules::Difficulty;

/// Everything a level is constructed from (the setup handshake or a §7
/// transition payload).
#[derive(Clone, Debug, PartialEq)]
pub struct LevelSetup {
    /// The level.
    pub map: GameMap,
    /// Every player, sorted ascending, no duplicates.
    pub roster: Vec<PlayerId>,
    /// The level's gameplay seed (the PRNG stream's first state).
    pub seed: u32,
    /// The session's difficulty.
    pub difficulty: Difficulty,
    /// Player count for elite scaling, fixed for the level.
    pub player_count: u32,
    /// What each player carries from the previous level (absent: fresh).
    pub carryovers: BTreeMap<PlayerId, Carryover>,
    /// Each player's input delay in ticks, how far lag compensation
    /// rewinds the targets of that player's shots (absent: the spec's
    /// `INPUT_DELAY_TICKS`). Every peer must be given the same map.
    pub input_delays: BTreeMap<PlayerId, u64>,
}

/// Where a level stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum LevelStatus {
    /// Playing; the exit has not been triggered.
    Running,
    /// The exit countdown is running.
    #[serde(rename_all = "camelCase")]
    Countdown {
        /// Ticks until the level is complete.
        ticks_left: u32,
    },
    /// The countdown reached zero: transition to the next level.
    Complete,
    /// Every player is dead.
    TeamEliminated,
}

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

/// A computer player for engine `E`: decides one player's input from the
/// world as it stands.
pub trait Bot<E: ?Sized> {
    /// A bot driving `player`.
    fn new(player: PlayerId) -> Self;

    /// The player it drives.
    fn player_id(&self) -> &PlayerId;

    /// The input it would give now.
    fn decide(&mut self, world: &E) -> InputSnapshot;
}

/// A bot that never touches the controls (stub engines, idle players).
#[derive(Clone, Debug)]
pub struct IdleBot(PlayerId);

impl<E: ?Sized> Bot<E> for IdleBot {
    fn new(player: PlayerId) -> Self {
        Self(player)
    }

    fn player_id(&self) -> &PlayerId {
        &self.0
    }

    fn decide(&mut self, _: &E) -> InputSnapshot {
        InputSnapshot::NEUTRAL
    }
}

/// A deterministic game simulation the netcode layer can drive. The host and
/// guest sessions (crate `netcode`) know only this surface.
pub trait Engine {
    /// The engine's computer player.
    type Bot: Bot<Self>;

    /// Builds a level. Fails on an invalid map or roster.
    fn new_level(setup: LevelSetup) -> Result<Self, EngineError>
    where
        Self: Sized;

    /// Simulates one `FIXED_DT` tick. `roster_remove` players are removed at
    /// the start of this tick (their inventory drops as loot); a roster
    /// member missing from `inputs` gets the neutral input.
    fn advance(&mut self, inputs: &BTreeMap<PlayerId, InputSnapshot>, roster_remove: &[PlayerId]);

    /// The reconciliation snapshot of the current tick; `gridDelta` holds the
    /// tile changes since the previous call.
    fn snapshot(&mut self) -> ReconciliationSnapshot;

    /// Snaps every reconciled field to the host's snapshot (validated first:
    /// on error nothing changed).
    fn apply_snapshot(&mut self, snapshot: &ReconciliationSnapshot) -> Result<(), EngineError>;

    /// The raw mulberry32 state.
    fn rng_state(&self) -> u32;

    /// Resumes the stream at a raw state.
    fn set_rng_state(&mut self, state: u32);

    /// A hash of all simulation state in canonical order: exactly what a
    /// snapshot restores, so after [`Engine::apply_snapshot`] two peers at
    /// the same tick hash equal.
    fn world_hash(&self) -> u64;

    /// The level's status.
    fn status(&self) -> LevelStatus;

    /// Ticks simulated this level.
    fn tick(&self) -> u64;

    /// The current roster, sorted.
    fn roster(&self) -> Vec<PlayerId>;

    /// What every roster member carries into the next level.
    fn carryovers(&self) -> BTreeMap<PlayerId, Carryover>;

    /// Every player's score this level, players removed mid-level included.
    fn scores(&self) -> BTreeMap<PlayerId, PlayerScore>;

    /// The session difficulty the level was built with.
    fn difficulty(&self) -> Difficulty;

    /// Every roster member's position, tiles (renderers smooth corrections
    /// with it).
    fn player_positions(&self) -> BTreeMap<PlayerId, (f64, f64)>;

    /// The complete world state (for rollback and sync tests).
    fn save_state(&self) -> Result<String, EngineError>;

    /// Restores a state from [`Engine::save_state`] of the same level.
    fn load_state(&mut self, state: &str) -> Result<(), EngineError>;

    /// Adds `player`, whose input delay is `input_delay` ticks, to the
    /// roster at the start of the current tick, before [`Engine::advance`]
    /// runs it (a late joiner: every peer does this at the same tick, the
    /// mirror of a roster removal). A fresh player spawns at one of the
    /// level's spawn points; one removed earlier this level gets its score
    /// back. Elite scaling and the multiplayer rules stay as the level
    /// began. A player already in the roster is left as it is.
    fn add_player(&mut self, player: &PlayerId, input_delay: u64);

    /// The whole world at the current tick, exactly: everything
    /// [`Engine::world_hash`] covers, so that a peer which builds the same
    /// level, loads it ([`Engine::load_exact`]) and applies the same
    /// bundles hashes equal from then on. The default is
    /// [`Engine::save_state`]'s text; engines may compress it.
    fn save_exact(&self) -> Result<Vec<u8>, EngineError> {
        self.save_state().map(String::into_bytes)
    }

    /// Restores a state from [`Engine::save_exact`] of the same level. On
    /// an error nothing changes.
    fn load_exact(&mut self, bytes: &[u8]) -> Result<(), EngineError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| EngineError::BadState(format!("the state is not text: {e}")))?;
        self.load_state(text)
    }
}
