//! An offline bot campaign: every player is a bot, levels come from the
//! generator, and each level's outcome is folded into one campaign hash.
//!
//! The native `botmatch` example and the WebAssembly module's `botmatch`
//! export both run this code, so their summaries can be compared field by
//! field: that comparison is the cross-build determinism test. Timing is
//! the caller's business (this crate reads no clock): time
//! [`Campaign::play`], which runs only the simulation.

use crate::wire::raycaster::{LevelSeed, Settings};
use std::collections::BTreeMap;

use crate::wire::snapshot::Carryover;
use game_api::PlayerId;
use serde::Serialize;

use crate::level_gen::generate;
use crate::{BotController, Difficulty, EngineError, LevelSetup, LevelStatus, RaycasterEngine};
use game_api::Game;

/// What a campaign is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CampaignSpec {
    /// Campaign seed: level `i` is `generate(seed, i, players)`.
    pub seed: u32,
    /// Number of bot players (1 to 8).
    pub players: u32,
    /// Levels to attempt; the campaign stops at the first level not completed.
    pub levels: u32,
    /// Frozen difficulty.
    pub difficulty: Difficulty,
    /// A level still running after this many ticks is abandoned.
    pub max_ticks: u64,
}

impl Default for CampaignSpec {
    fn default() -> Self {
        Self {
            seed: 1,
            players: 2,
            levels: 3,
            difficulty: Difficulty::Normal,
            max_ticks: 9_000,
        }
    }
}

/// One level's outcome (the `botmatch` per-level line).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LevelRecord {
    /// Level index, from 0.
    pub level: u32,
    /// How the level stood when the campaign stopped playing it.
    pub status: LevelStatus,
    /// Ticks played.
    pub ticks: u64,
    /// Kills by all players.
    pub kills: u32,
    /// Enemies the level started with.
    pub enemies: usize,
    /// The final world hash, 16 lowercase hex digits.
    pub world_hash: String,
}

/// The whole campaign's outcome (the `botmatch` summary line, minus timing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CampaignSummary {
    /// Campaign seed.
    pub seed: u32,
    /// Bot players.
    pub players: u32,
    /// Frozen difficulty.
    pub difficulty: Difficulty,
    /// Levels completed in a row.
    pub levels_completed: u32,
    /// Levels attempted at most.
    pub levels: u32,
    /// Ticks played over all levels.
    pub ticks: u64,
    /// Every level's final hash folded together, 16 lowercase hex digits.
    pub world_hash: String,
}

/// A campaign in progress.
#[derive(Debug)]
pub struct Campaign {
    spec: CampaignSpec,
    roster: Vec<PlayerId>,
    bots: Vec<BotController>,
    carryovers: BTreeMap<PlayerId, Carryover>,
    next_level: u32,
    stopped: bool,
    completed: u32,
    ticks: u64,
    hash: u64,
}

impl Campaign {
    /// A campaign about to build its first level.
    pub fn new(spec: CampaignSpec) -> Self {
        let roster: Vec<PlayerId> = (0..spec.players)
            .map(|i| PlayerId::new(format!("bot-{i}")))
            .collect();
        let bots = roster.iter().cloned().map(BotController::new).collect();
        Self {
            spec,
            roster,
            bots,
            carryovers: BTreeMap::new(),
            next_level: 0,
            stopped: false,
            completed: 0,
            ticks: 0,
            hash: 0,
        }
    }

    /// Builds the next level, or `None` when the campaign is over (all
    /// levels attempted, or the last one was not completed).
    pub fn next_level(&mut self) -> Option<Result<RaycasterEngine, EngineError>> {
        if self.stopped || self.next_level >= self.spec.levels {
            return None;
        }
        let level = self.next_level;
        let setup = LevelSetup {
            body: generate(self.spec.seed, level, self.spec.players),
            roster: self.roster.clone(),
            head: LevelSeed {
                gameplay_seed: self
                    .spec
                    .seed
                    .wrapping_mul(2_654_435_761)
                    .wrapping_add(level),
            },
            settings: Settings {
                difficulty: self.spec.difficulty,
            },
            player_count: self.spec.players,
            carryovers: self.carryovers.clone(),
            input_delays: BTreeMap::new(),
        };
        let built = RaycasterEngine::new_level(setup);
        if built.is_err() {
            self.stopped = true;
        }
        Some(built)
    }

    /// Plays a level built by [`Campaign::next_level`] with every player a
    /// bot, until it is over or reaches the tick limit.
    pub fn play(&mut self, mut engine: RaycasterEngine) -> LevelRecord {
        let level = self.next_level;
        self.next_level += 1;
        while engine.tick() < self.spec.max_ticks
            && matches!(
                engine.status(),
                LevelStatus::Running | LevelStatus::Countdown { .. }
            )
        {
            let inputs = self
                .bots
                .iter()
                .map(|b| (b.player_id().clone(), b.decide(&engine)))
                .collect();
            engine.advance(&inputs, &[]);
        }
        let status = engine.status();
        let hash = engine.world_hash();
        self.ticks += engine.tick();
        self.hash = self.hash.rotate_left(5) ^ hash;
        if status == LevelStatus::Complete {
            self.completed += 1;
            self.carryovers = engine.carryovers();
        } else {
            self.stopped = true;
        }
        LevelRecord {
            level,
            status,
            ticks: engine.tick(),
            kills: engine.state().players.values().map(|p| p.kills).sum(),
            enemies: engine.map().enemies.len(),
            world_hash: game_api::WorldHash(hash).to_string(),
        }
    }

    /// The outcome so far.
    pub fn summary(&self) -> CampaignSummary {
        CampaignSummary {
            seed: self.spec.seed,
            players: self.spec.players,
            difficulty: self.spec.difficulty,
            levels_completed: self.completed,
            levels: self.spec.levels,
            ticks: self.ticks,
            world_hash: game_api::WorldHash(self.hash).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_is_reproducible_and_stops_at_its_level_count() {
        let spec = CampaignSpec {
            seed: 7,
            players: 2,
            levels: 2,
            max_ticks: 600,
            ..CampaignSpec::default()
        };
        let run = || {
            let mut c = Campaign::new(spec);
            let mut records = Vec::new();
            while let Some(level) = c.next_level() {
                records.push(c.play(level.expect("generated levels build")));
            }
            (records, c.summary())
        };
        let (a, sa) = run();
        let (b, sb) = run();
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert!(!a.is_empty() && a.len() <= 2);
        assert_eq!(sa.ticks, a.iter().map(|r| r.ticks).sum::<u64>());
        assert!(a.iter().all(|r| r.ticks <= 600));
    }
}
