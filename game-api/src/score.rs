//! What a player scored in a level, the same for every game: two counters
//! the end-of-run table shows. (The field names are the raycaster's, as the
//! wire's `ScoreRow` has them; a game's own score type is a later step.)

use serde::{Deserialize, Serialize};

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
