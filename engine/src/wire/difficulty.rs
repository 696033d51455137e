//! The session's difficulty, the raycaster's one setting: the host sends
//! it in the session init (`raycaster::Settings`) and snapshots carry it.

use serde::{Deserialize, Serialize};

/// The session's difficulty: host-authoritative, sent at setup and frozen
/// for the session. It scales enemy hit points, damage and aim (the engine's
/// `DifficultyScaling` says by how much).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Difficulty {
    /// Weaker, clumsier enemies.
    Easy,
    /// The baseline.
    #[default]
    Normal,
    /// Tougher, deadlier, more accurate enemies.
    Hard,
}

impl Difficulty {
    /// Parses `easy`, `normal` or `hard`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "easy" => Some(Difficulty::Easy),
            "normal" => Some(Difficulty::Normal),
            "hard" => Some(Difficulty::Hard),
            _ => None,
        }
    }

    /// The name [`Difficulty::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Difficulty::Easy => "easy",
            Difficulty::Normal => "normal",
            Difficulty::Hard => "hard",
        }
    }
}
