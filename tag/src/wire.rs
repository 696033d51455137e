//! Tag's wire: a stick direction per tick, the whole arena as its
//! snapshot, rounds as a seed, a length and the pillars.

use std::collections::BTreeMap;

use game_api::{GameWire, PlayerId};
use serde::{Deserialize, Serialize};

/// Tag's name on the wire. Never built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {}

/// One runner's input for one tick: a direction on each axis, -1, 0 or 1
/// (anything else is clamped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stick {
    /// Left (-1) or right (1).
    #[serde(default)]
    pub dx: i8,
    /// Up (-1) or down (1).
    #[serde(default)]
    pub dy: i8,
}

/// One runner on the arena, in sixteenths of a tile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Runner {
    /// Across.
    pub x: i32,
    /// Down.
    pub y: i32,
    /// Tags made this round.
    pub tags: u32,
}

/// The whole arena at the end of a tick: tag's snapshot and its exact
/// state alike.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Arena {
    /// Ticks simulated this round.
    pub tick: u64,
    /// Who is it.
    pub it: Option<PlayerId>,
    /// Ticks before it may tag again.
    pub cooldown: u32,
    /// Every runner in the roster.
    pub runners: BTreeMap<PlayerId, Runner>,
}

/// The session's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TagSettings {
    /// The arena's side, in tiles (8 to 64).
    pub arena_tiles: u16,
}

impl Default for TagSettings {
    fn default() -> Self {
        Self { arena_tiles: 20 }
    }
}

/// A round's small facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoundHead {
    /// Where runners start and who is it first.
    pub round_seed: u32,
    /// How long the round lasts.
    pub round_ticks: u32,
}

/// A round's content: the tiles runners cannot enter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pillars(pub Vec<[u16; 2]>);

/// What a relay's authority builds rounds from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TagCampaign {
    /// Every round's seed derives from it.
    pub tag_seed: u32,
    /// How long each round lasts.
    pub round_ticks: u32,
}

impl Default for TagCampaign {
    /// Seed 1, rounds of the default length.
    fn default() -> Self {
        Self {
            tag_seed: 1,
            round_ticks: crate::plan::ROUND_TICKS,
        }
    }
}

impl GameWire for Tag {
    type Input = Stick;
    type Snapshot = Arena;
    type CompactInput = [i8; 2];
    type Settings = TagSettings;
    type LevelHead = RoundHead;
    type LevelBody = Pillars;
    /// Tags made in the rounds before.
    type Carryover = u32;
    type Campaign = TagCampaign;
    const NAME: Option<&'static str> = Some("tag");

    fn sanitize(input: &Stick) -> Stick {
        Stick {
            dx: input.dx.clamp(-1, 1),
            dy: input.dy.clamp(-1, 1),
        }
    }

    fn snapshot_tick(snapshot: &Arena) -> u64 {
        snapshot.tick
    }

    fn compact_input(input: &Stick) -> [i8; 2] {
        [input.dx, input.dy]
    }

    fn input_from_compact(compact: [i8; 2]) -> Result<Stick, String> {
        Ok(Stick {
            dx: compact[0],
            dy: compact[1],
        })
    }
}
