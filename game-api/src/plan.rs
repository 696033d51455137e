//! Which levels a session plays: a [`LevelPlan`] hands out each level as a
//! [`LevelSpec`], in the game's own parts.

use crate::wire::GameWire;

/// One level of a plan: its small facts and its content, as a level
/// transition carries them.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelSpec<W: GameWire> {
    /// The level's small facts (the raycaster's: its gameplay seed).
    pub head: W::LevelHead,
    /// The level's content (the raycaster's: its map).
    pub body: W::LevelBody,
}

/// The levels of one session, in game `W`. A host is handed a plan; it
/// never decides where levels come from.
pub trait LevelPlan<W: GameWire>: std::fmt::Debug + Send + Sync {
    /// Levels in the session.
    fn level_count(&self) -> u32;

    /// Level `index` (0-based, below [`LevelPlan::level_count`]) for
    /// `player_count` players.
    fn level(&self, index: u32, player_count: u32) -> LevelSpec<W>;
}
