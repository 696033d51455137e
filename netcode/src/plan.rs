//! The level plan: which maps a session plays and with which gameplay
//! seeds. The host is handed a plan; it never decides where maps come from.

use std::fmt::Debug;

use engine::level_gen::generate;
use engine::rng::Mulberry32;
use engine::wire::map::GameMap;

/// The levels of one session.
pub trait LevelPlan: Debug + Send + Sync {
    /// Levels in the session.
    fn level_count(&self) -> u32;

    /// Level `level`'s map (0-based, below [`LevelPlan::level_count`]) for
    /// `player_count` players.
    fn map(&self, level: u32, player_count: u32) -> GameMap;

    /// Level `level`'s gameplay seed (the engine PRNG's first state).
    fn gameplay_seed(&self, level: u32) -> u32;
}

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

impl LevelPlan for GeneratedCampaign {
    fn level_count(&self) -> u32 {
        self.levels
    }

    fn map(&self, level: u32, player_count: u32) -> GameMap {
        generate(self.seed, level, player_count)
    }

    fn gameplay_seed(&self, level: u32) -> u32 {
        seed_for_level(self.seed, level)
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

impl LevelPlan for FixedCampaign {
    fn level_count(&self) -> u32 {
        u32::try_from(self.maps.len()).unwrap_or(u32::MAX)
    }

    fn map(&self, level: u32, player_count: u32) -> GameMap {
        // The host never asks past `level_count`; should it, the generator
        // stands in rather than a panic.
        match self.maps.get(level as usize) {
            Some(map) => map.clone(),
            None => generate(self.seed, level, player_count),
        }
    }

    fn gameplay_seed(&self, level: u32) -> u32 {
        seed_for_level(self.seed, level)
    }
}
