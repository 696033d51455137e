//! Conversions between engine types and their wire forms.

use engine::Difficulty;
use protocol::peer::Difficulty as WireDifficulty;

/// The wire form of the session difficulty.
pub fn to_wire_difficulty(d: Difficulty) -> WireDifficulty {
    match d {
        Difficulty::Easy => WireDifficulty::Easy,
        Difficulty::Normal => WireDifficulty::Normal,
        Difficulty::Hard => WireDifficulty::Hard,
    }
}

/// The engine form of a received difficulty.
pub fn to_engine_difficulty(d: WireDifficulty) -> Difficulty {
    match d {
        WireDifficulty::Easy => Difficulty::Easy,
        WireDifficulty::Normal => Difficulty::Normal,
        WireDifficulty::Hard => Difficulty::Hard,
    }
}
