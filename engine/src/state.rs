//! [`SimState`], all simulation state: what the world hash covers, what
//! every system reads and writes, and what snapshots and transfers carry.

use std::collections::{BTreeMap, VecDeque};

use crate::wire::snapshot::{LevelOutcome, PlayerScore};
use game_api::PlayerId;
use serde::{Deserialize, Serialize};

use crate::enemy::Enemy;
use crate::geom::Vec2;
use crate::grid::Grid;
use crate::loot::LootDrop;
use crate::mine::Mine;
use crate::player::Player;
use crate::rng::Mulberry32;
use crate::rules::Difficulty;

/// All simulation state: exactly what the world hash covers. Every
/// collection is a `Vec` or a `BTreeMap`, so iteration order is canonical.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SimState {
    /// Ticks simulated this level.
    pub tick: u64,
    /// Simulated seconds (`tick * FIXED_DT`, accumulated).
    pub level_time: f64,
    /// The one shared stream.
    pub rng: Mulberry32,
    /// Session difficulty.
    pub difficulty: Difficulty,
    /// Player count used for elite scaling.
    pub player_count: u32,
    /// More than one player at level start: lag compensation and the
    /// multiplayer weapon-drop rule apply.
    pub multiplayer: bool,
    /// The live grid.
    pub grid: Grid,
    /// Roster members, dead or alive.
    pub players: BTreeMap<PlayerId, Player>,
    /// Players removed this level, with their score.
    pub departed: BTreeMap<PlayerId, PlayerScore>,
    /// Index-aligned with the map's enemies.
    pub enemies: Vec<Enemy>,
    /// Enemy positions at the end of recent ticks, oldest first.
    pub enemy_history: VecDeque<Vec<Vec2>>,
    /// Index-aligned with the map's mines.
    pub mines: Vec<Mine>,
    /// Per map pickup.
    pub pickups_collected: Vec<bool>,
    /// Per map key.
    pub keys_collected: Vec<bool>,
    /// Live loot drops.
    pub loot: Vec<LootDrop>,
    /// Exit countdown ticks left, once started.
    pub countdown: Option<u32>,
    /// Set when the level is over.
    pub outcome: Option<LevelOutcome>,
}
