//! Rounds generated from a seed: [`Rounds`], tag's [`LevelPlan`].

use game_api::rng::Mulberry32;
use game_api::{LevelPlan, LevelSpec};

use crate::wire::{Pillars, RoundHead, Tag};

/// How long a round lasts unless a plan says otherwise: 40 s at 30 Hz.
pub const ROUND_TICKS: u32 = 1_200;

/// Pillars in every round.
const PILLARS: u32 = 6;

/// `rounds` rounds from `seed`, each `round_ticks` long, with pillars on
/// the inner tiles of the smallest arena (so they fit every arena).
#[derive(Clone, Copy, Debug)]
pub struct Rounds {
    /// Every round's seed derives from it.
    pub seed: u32,
    /// Rounds in the session.
    pub rounds: u32,
    /// How long each round lasts.
    pub round_ticks: u32,
}

impl LevelPlan<Tag> for Rounds {
    fn level_count(&self) -> u32 {
        self.rounds
    }

    fn level(&self, index: u32, _player_count: u32) -> LevelSpec<Tag> {
        let round_seed = self.seed.wrapping_mul(31).wrapping_add(index);
        let mut rng = Mulberry32::new(round_seed);
        let pillars = (0..PILLARS)
            .map(|_| [2 + rng.below(4) as u16, 2 + rng.below(4) as u16])
            .collect();
        LevelSpec {
            head: RoundHead {
                round_seed,
                round_ticks: self.round_ticks,
            },
            body: Pillars(pillars),
        }
    }
}
