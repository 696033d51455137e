//! The raycaster's level plans ([`game_api::LevelPlan`]): which maps a
//! session plays and with which gameplay seeds, generated from one seed or
//! fixed maps in order.

use game_api::{LevelPlan, LevelSpec};

use crate::level_gen::generate;
use crate::rng::Mulberry32;
use crate::wire::Raycaster;
use crate::wire::map::GameMap;
use crate::wire::raycaster::LevelSeed;

/// A level's gameplay seed, derived from the session seed.
pub fn seed_for_level(session_seed: u32, level: u32) -> u32 {
    let mut r = Mulberry32::new(session_seed ^ level.wrapping_mul(0x2545_F491) ^ 0x5EED_0001);
    r.next_u32()
}

/// A campaign generated from one seed by the engine's level generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneratedCampaign {
    /// Campaign seed: maps and gameplay seeds derive from it.
    pub seed: u32,
    /// Levels.
    pub levels: u32,
}

impl LevelPlan<Raycaster> for GeneratedCampaign {
    fn level_count(&self) -> u32 {
        self.levels
    }

    fn level(&self, index: u32, player_count: u32) -> LevelSpec<Raycaster> {
        LevelSpec {
            head: LevelSeed {
                gameplay_seed: seed_for_level(self.seed, index),
            },
            body: generate(self.seed, index, player_count),
        }
    }
}

/// Fixed maps played in order (`host-daemon --campaign DIR`).
#[derive(Clone, Debug, PartialEq)]
pub struct FixedCampaign {
    /// Gameplay seeds derive from it.
    pub seed: u32,
    /// The maps, first level first; never empty.
    pub maps: Vec<GameMap>,
}

impl LevelPlan<Raycaster> for FixedCampaign {
    fn level_count(&self) -> u32 {
        u32::try_from(self.maps.len()).unwrap_or(u32::MAX)
    }

    fn level(&self, index: u32, player_count: u32) -> LevelSpec<Raycaster> {
        // The host never asks past `level_count`; should it, the generator
        // stands in rather than a panic.
        let body = match self.maps.get(index as usize) {
            Some(map) => map.clone(),
            None => generate(self.seed, index, player_count),
        };
        LevelSpec {
            head: LevelSeed {
                gameplay_seed: seed_for_level(self.seed, index),
            },
            body,
        }
    }
}
