//! The smallest game a peer can carry, for the tests of the envelope and
//! the relay (feature `toy`): proof that they need no type of a real
//! game. It is wire types only (no simulation): a player's input is one
//! byte, the snapshot a count, and its settings, level head, body,
//! carry-over and campaign are the toy's own.

use serde::{Deserialize, Serialize};

use crate::wire::GameWire;

/// The toy game's name on the wire. Never built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toy {}

/// The byte no toy input may be: peers sanitize it away, and a compact
/// record carrying it is refused.
pub const NOT_A_MOVE: u8 = 255;

/// The toy's reconciliation snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Count {
    /// The tick it was taken at.
    pub tick: u64,
    /// The count so far.
    pub total: u64,
}

/// The toy's session settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// How much a tick adds.
    pub speed: u8,
}

/// A toy level's head.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Start {
    /// Where the count starts.
    pub start: u64,
}

/// What a toy relay's authority builds levels from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rounds {
    /// Rounds in the campaign.
    pub rounds: u8,
}

impl GameWire for Toy {
    type Input = u8;
    type Snapshot = Count;
    type CompactInput = u8;
    type Settings = Speed;
    type LevelHead = Start;
    type LevelBody = Vec<u8>;
    type Carryover = u64;
    type Campaign = Rounds;
    const NAME: Option<&'static str> = Some("toy");

    fn sanitize(input: &u8) -> u8 {
        (*input).min(NOT_A_MOVE - 1)
    }

    fn snapshot_tick(snapshot: &Count) -> u64 {
        snapshot.tick
    }

    fn compact_input(input: &u8) -> u8 {
        *input
    }

    fn input_from_compact(compact: u8) -> Result<u8, String> {
        (compact != NOT_A_MOVE)
            .then_some(compact)
            .ok_or_else(|| format!("{NOT_A_MOVE} is not a move"))
    }
}
