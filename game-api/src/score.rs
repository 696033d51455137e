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

impl PlayerScore {
    /// Adds `other` to this tally (a run's levels add up), saturating: a
    /// tally never wraps, whatever a peer reports.
    pub fn add(&mut self, other: PlayerScore) {
        self.kill_score = self.kill_score.saturating_add(other.kill_score);
        self.kills = self.kills.saturating_add(other.kills);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_add_up_and_never_wrap() {
        let mut t = PlayerScore {
            kill_score: 5,
            kills: 1,
        };
        t.add(PlayerScore {
            kill_score: 7,
            kills: 2,
        });
        assert_eq!((t.kill_score, t.kills), (12, 3));
        t.add(PlayerScore {
            kill_score: u32::MAX,
            kills: 0,
        });
        assert_eq!((t.kill_score, t.kills), (u32::MAX, 3));
    }
}
