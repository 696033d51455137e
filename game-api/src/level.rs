//! Which levels a session plays ([`LevelPlan`], [`LevelSpec`]), what a
//! level is built from ([`LevelSetup`]), where it stands ([`LevelStatus`])
//! and what a player scored in it ([`PlayerScore`]): the same for every
//! game, with the game's own parts from its [`GameWire`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::player::PlayerId;
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

/// Everything a level is built from: the session's setup, or a level
/// transition's payload. Every peer builds the same level from the same
/// setup.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelSetup<W: GameWire> {
    /// The level's small facts (the raycaster's: its gameplay seed).
    pub head: W::LevelHead,
    /// The level's content (the raycaster's: its map).
    pub body: W::LevelBody,
    /// The session's settings.
    pub settings: W::Settings,
    /// Every player, sorted ascending, no duplicates.
    pub roster: Vec<PlayerId>,
    /// The number of players the level was built for, fixed for the level.
    pub player_count: u32,
    /// What each player carries from the previous level (absent: fresh).
    pub carryovers: BTreeMap<PlayerId, W::Carryover>,
    /// Each player's input delay in ticks (absent: the spec's
    /// `INPUT_DELAY_TICKS`). Every peer must be given the same map.
    pub input_delays: BTreeMap<PlayerId, u64>,
}

/// Where a level stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum LevelStatus {
    /// Playing; the level's end has not been triggered.
    Running,
    /// The level ends in `ticks_left` ticks.
    #[serde(rename_all = "camelCase")]
    Countdown {
        /// Ticks until the level is complete.
        ticks_left: u32,
    },
    /// The level is complete: on to the next level.
    Complete,
    /// Every player is out.
    TeamEliminated,
}

/// A player's tally in the end-of-run table: the score and the count the
/// table shows beside it (the raycaster's: kill score and kills).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlayerScore {
    /// Kill score.
    pub kill_score: u32,
    /// Kills.
    pub kills: u32,
}
