//! What a level is built from ([`LevelSetup`]) and where it stands
//! ([`LevelStatus`]): the same for every game, with the game's own parts
//! from its [`GameWire`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::player::PlayerId;
use crate::wire::GameWire;

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
    /// Each player's input delay in ticks (absent:
    /// [`crate::tick::INPUT_DELAY_TICKS`]). Every peer must be given the
    /// same map.
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
