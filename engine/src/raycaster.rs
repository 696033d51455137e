//! [`Game`] and [`Engine`] over [`RaycasterEngine`]: the interface the
//! sessions drive and the raycaster's own, put together from the world's
//! tick ([`crate::world`]), snapshots ([`crate::reconcile`]), exact
//! transfers ([`crate::transfer`]) and the bots ([`crate::pilot`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::wire::input::InputSnapshot;
use crate::wire::snapshot::{Carryover, LevelOutcome, PlayerScore, ReconciliationSnapshot};
use game_api::PlayerId;

use game_api::{Game, LevelPlan, LevelSpec, LevelStatus};

use crate::engine::{Engine, EngineError, LevelSetup};

use crate::hash::hash_value;
use crate::level_gen::generate;
use crate::pilot::DelayAwareBot;
use crate::plan::{GeneratedCampaign, seed_for_level};
use crate::reconcile;
use crate::rng::Mulberry32;
use crate::rules::Difficulty;
use crate::wire::Raycaster;
use crate::wire::raycaster::{CampaignSeed, LevelSeed};
use crate::wire::snapshot::{CORRECTION_SMOOTH_MS, SNAP_THRESHOLD_TILES, VISIBLE_CORRECTION_TILES};
use crate::world::{RaycasterEngine, SavedWorld};

impl Game for RaycasterEngine {
    type Wire = Raycaster;
    type Bot = DelayAwareBot;
    type Error = EngineError;
    const SNAP_THRESHOLD: f64 = SNAP_THRESHOLD_TILES;
    const VISIBLE_CORRECTION: f64 = VISIBLE_CORRECTION_TILES;
    const CORRECTION_SMOOTH_MS: u64 = CORRECTION_SMOOTH_MS;

    /// One level generated from seed 1.
    fn default_plan() -> Arc<dyn LevelPlan<Raycaster>> {
        Arc::new(GeneratedCampaign { seed: 1, levels: 1 })
    }

    /// The campaign generated from the campaign's seed.
    fn campaign_level(
        campaign: &CampaignSeed,
        index: u32,
        player_count: u32,
    ) -> LevelSpec<Raycaster> {
        LevelSpec {
            head: LevelSeed {
                gameplay_seed: seed_for_level(campaign.campaign_seed, index),
            },
            body: generate(campaign.campaign_seed, index, player_count),
        }
    }

    fn new_level(setup: LevelSetup) -> Result<Self, EngineError> {
        RaycasterEngine::start(setup)
    }

    /// Removed players' inventories drop as loot at the start of the tick.
    fn advance(&mut self, inputs: &BTreeMap<PlayerId, InputSnapshot>, roster_remove: &[PlayerId]) {
        self.step(inputs, roster_remove);
    }

    /// Its `gridDelta` holds the tile changes since the previous call.
    fn snapshot(&mut self) -> ReconciliationSnapshot {
        let delta = self
            .grid_log
            .get(self.snapshot_cursor..)
            .unwrap_or_default()
            .to_vec();
        self.snapshot_cursor = self.grid_log.len();
        reconcile::build(&self.state, self.map(), delta)
    }

    fn apply_snapshot(&mut self, snapshot: &ReconciliationSnapshot) -> Result<(), EngineError> {
        reconcile::validate(self, snapshot)?;
        reconcile::apply(self, snapshot);
        Ok(())
    }

    fn world_hash(&self) -> u64 {
        hash_value(&self.state)
    }

    fn status(&self) -> LevelStatus {
        match (self.state.outcome, self.state.countdown) {
            (Some(LevelOutcome::Complete), _) => LevelStatus::Complete,
            (Some(LevelOutcome::TeamEliminated), _) => LevelStatus::TeamEliminated,
            (None, Some(ticks_left)) => LevelStatus::Countdown { ticks_left },
            (None, None) => LevelStatus::Running,
        }
    }

    fn tick(&self) -> u64 {
        self.state.tick
    }

    fn roster(&self) -> Vec<PlayerId> {
        self.state.players.keys().cloned().collect()
    }

    fn carryovers(&self) -> BTreeMap<PlayerId, Carryover> {
        self.state
            .players
            .iter()
            .map(|(id, p)| (id.clone(), p.carryover()))
            .collect()
    }

    fn scores(&self) -> BTreeMap<PlayerId, PlayerScore> {
        self.all_scores()
    }

    fn positions(&self) -> BTreeMap<PlayerId, (f64, f64)> {
        self.state
            .players
            .iter()
            .map(|(id, p)| (id.clone(), (p.pos.x, p.pos.y)))
            .collect()
    }

    /// A fresh player spawns at one of the level's spawn points; one
    /// removed earlier this level gets its score back. Elite scaling and
    /// the multiplayer rules stay as the level began.
    fn add_player(&mut self, player: &PlayerId, input_delay: u64) {
        self.admit(player, input_delay);
    }

    fn save_exact(&self) -> Result<Vec<u8>, EngineError> {
        crate::transfer::save(self)
    }

    fn load_exact(&mut self, bytes: &[u8]) -> Result<(), EngineError> {
        crate::transfer::load(self, bytes)
    }

    /// Flips bits of the PRNG and moves the player `me` a fifth of a tile
    /// and takes 17 of its health, through a snapshot applied back.
    fn scramble(&mut self, me: Option<&PlayerId>) -> Result<(), String> {
        self.set_rng_state(self.rng_state() ^ 0xDEAD_BEEF);
        let mut snap = self.snapshot();
        if let Some(p) = me.and_then(|id| snap.players.get_mut(id)) {
            p.pos_x += 0.2;
            p.health = (p.health - 17.0).max(1.0);
        }
        snap.grid_delta.clear();
        self.apply_snapshot(&snap).map_err(|e| e.to_string())
    }
}

impl Engine for RaycasterEngine {
    fn rng_state(&self) -> u32 {
        self.state.rng.state()
    }

    fn set_rng_state(&mut self, state: u32) {
        self.state.rng = Mulberry32::from_state(state);
    }

    fn difficulty(&self) -> Difficulty {
        self.state.difficulty
    }

    fn save_state(&self) -> Result<String, EngineError> {
        serde_json::to_string(&self.saved()).map_err(|e| EngineError::BadState(e.to_string()))
    }

    fn load_state(&mut self, state: &str) -> Result<(), EngineError> {
        let saved: SavedWorld =
            serde_json::from_str(state).map_err(|e| EngineError::BadState(e.to_string()))?;
        self.restore(saved)
    }
}
