//! Determinism: identical seed and inputs give identical hashes every tick,
//! a different seed diverges, a JSON round trip of the world mid-run changes
//! nothing, and the sync-test harness passes for the real engine and fails
//! for a deliberately nondeterministic stub.

mod common;

use std::collections::BTreeMap;

use engine::Game;
use engine::RaycasterEngine;
use engine::engine::{Engine, EngineError, LevelSetup, LevelStatus};
use engine::sync_test::{self, SyncTestError, TickInputs};
use engine::wire::input::InputSnapshot;
use engine::wire::snapshot::{Carryover, ReconciliationSnapshot};
use game_api::PlayerId;

use common::{bot_inputs, bots, engine, noisy_inputs};

const TICKS: u64 = 1500;

fn record_run(seed: u32) -> (Vec<BTreeMap<PlayerId, InputSnapshot>>, Vec<u64>) {
    let mut e = engine(7, 1, 3, seed);
    let b = bots(&e);
    let mut inputs = Vec::new();
    let mut hashes = Vec::new();
    for _ in 0..TICKS {
        let i = noisy_inputs(&e, &b);
        e.advance(&i, &[]);
        inputs.push(i);
        hashes.push(e.world_hash());
    }
    (inputs, hashes)
}

fn replay(seed: u32, inputs: &[BTreeMap<PlayerId, InputSnapshot>]) -> Vec<u64> {
    let mut e = engine(7, 1, 3, seed);
    inputs
        .iter()
        .map(|i| {
            e.advance(i, &[]);
            e.world_hash()
        })
        .collect()
}

#[test]
fn identical_seed_and_inputs_hash_identically_every_tick() {
    let (inputs, first) = record_run(99);
    let second = replay(99, &inputs);
    for (tick, (a, b)) in first.iter().zip(&second).enumerate() {
        assert_eq!(a, b, "hash differs at tick {tick}");
    }
    // The run did something: the hash changes over time.
    assert!(first.windows(2).filter(|w| w[0] != w[1]).count() > (TICKS as usize) / 2);
}

#[test]
fn different_seed_gives_a_different_stream() {
    let (inputs, first) = record_run(99);
    let mut a = engine(7, 1, 3, 99);
    let mut b = engine(7, 1, 3, 100);
    assert_ne!(a.rng_state(), b.rng_state());
    let mut diverged_positions = false;
    for i in &inputs {
        a.advance(i, &[]);
        b.advance(i, &[]);
        let pos = |e: &RaycasterEngine| {
            e.state()
                .enemies
                .iter()
                .map(|x| (x.pos.x, x.pos.y))
                .collect::<Vec<_>>()
        };
        diverged_positions |= pos(&a) != pos(&b);
    }
    let second = replay(100, &inputs);
    assert!(
        first.iter().zip(&second).all(|(x, y)| x != y),
        "a different seed must never share a hash"
    );
    assert!(
        diverged_positions,
        "a different seed must change enemy behaviour, not only the PRNG state"
    );
}

#[test]
fn mid_run_json_round_trip_changes_nothing() {
    let mut a = engine(3, 2, 2, 5);
    let b = bots(&a);
    for _ in 0..400 {
        let i = noisy_inputs(&a, &b);
        a.advance(&i, &[]);
    }
    let saved = a.save_state().expect("save");
    let mut restored = engine(3, 2, 2, 5);
    assert_ne!(restored.world_hash(), a.world_hash());
    restored.load_state(&saved).expect("load");
    assert_eq!(restored.world_hash(), a.world_hash());
    assert_eq!(
        restored.save_state().expect("save again"),
        saved,
        "the JSON itself must be stable"
    );
    for _ in 0..400 {
        let i = noisy_inputs(&a, &b);
        a.advance(&i, &[]);
        restored.advance(&i, &[]);
        assert_eq!(
            restored.world_hash(),
            a.world_hash(),
            "diverged at tick {}",
            a.tick()
        );
    }
    // Garbage is an error, not a panic.
    assert!(restored.load_state("{\"state\": 1}").is_err());
    assert!(restored.load_state("not json").is_err());
}

#[test]
fn sync_test_harness_passes_for_the_real_engine() {
    let mut e = engine(11, 1, 2, 42);
    let b = bots(&e);
    let checked = sync_test::run(&mut e, 900, 8, |e: &RaycasterEngine| -> TickInputs {
        (noisy_inputs(e, &b), Vec::new())
    })
    .expect("the reference engine re-simulates identically");
    assert_eq!(checked, 900);
    // Also across a roster removal in the middle of a window.
    let mut e = engine(11, 1, 3, 42);
    let b = bots(&e);
    let checked = sync_test::run(&mut e, 64, 16, |e: &RaycasterEngine| -> TickInputs {
        let remove = if e.tick() == 20 {
            vec![PlayerId::new("p1")]
        } else {
            Vec::new()
        };
        (bot_inputs(e, &b), remove)
    })
    .expect("removal re-simulates identically");
    assert_eq!(checked, 64);
}

/// An engine whose hash depends on how often it was advanced in total,
/// state that `save_state` does not capture: the harness must catch it.
struct LeakyEngine {
    tick: u64,
    advances_ever: u64,
}

impl Game for LeakyEngine {
    type Wire = engine::wire::Raycaster;
    type Error = EngineError;
    type Bot = engine::IdleBot;
    fn default_plan() -> std::sync::Arc<dyn game_api::LevelPlan<engine::wire::Raycaster>> {
        engine::RaycasterEngine::default_plan()
    }
    fn campaign_level(
        campaign: &engine::wire::raycaster::CampaignSeed,
        index: u32,
        player_count: u32,
    ) -> game_api::LevelSpec<engine::wire::Raycaster> {
        engine::RaycasterEngine::campaign_level(campaign, index, player_count)
    }
    fn new_level(_: LevelSetup) -> Result<Self, EngineError> {
        Ok(Self {
            tick: 0,
            advances_ever: 0,
        })
    }
    fn advance(&mut self, _: &BTreeMap<PlayerId, InputSnapshot>, _: &[PlayerId]) {
        self.tick += 1;
        self.advances_ever += 1;
    }
    fn snapshot(&mut self) -> ReconciliationSnapshot {
        ReconciliationSnapshot {
            tick: self.tick,
            rng_state: 0,
            players: BTreeMap::new(),
            enemies: vec![],
            mines: vec![],
            loot_drops: vec![],
            pickups_collected: vec![],
            keys_collected: vec![],
            grid_version: 0,
            grid_delta: vec![],
            residual: None,
        }
    }
    fn apply_snapshot(&mut self, _: &ReconciliationSnapshot) -> Result<(), EngineError> {
        Ok(())
    }
    fn world_hash(&self) -> u64 {
        self.tick.wrapping_mul(31) ^ self.advances_ever
    }
    fn status(&self) -> LevelStatus {
        LevelStatus::Running
    }
    fn tick(&self) -> u64 {
        self.tick
    }
    fn roster(&self) -> Vec<PlayerId> {
        Vec::new()
    }
    fn carryovers(&self) -> BTreeMap<PlayerId, Carryover> {
        BTreeMap::new()
    }
    fn scores(&self) -> BTreeMap<PlayerId, engine::wire::snapshot::PlayerScore> {
        BTreeMap::new()
    }
    fn positions(&self) -> BTreeMap<PlayerId, (f64, f64)> {
        BTreeMap::new()
    }
    fn add_player(&mut self, _: &PlayerId, _: u64) {}
    fn save_exact(&self) -> Result<Vec<u8>, EngineError> {
        self.save_state().map(String::into_bytes)
    }
    fn load_exact(&mut self, bytes: &[u8]) -> Result<(), EngineError> {
        let text = std::str::from_utf8(bytes).map_err(|e| EngineError::BadState(e.to_string()))?;
        self.load_state(text)
    }
}

impl Engine for LeakyEngine {
    fn rng_state(&self) -> u32 {
        0
    }
    fn set_rng_state(&mut self, _: u32) {}
    fn difficulty(&self) -> engine::Difficulty {
        engine::Difficulty::Normal
    }
    fn save_state(&self) -> Result<String, EngineError> {
        Ok(self.tick.to_string())
    }
    fn load_state(&mut self, state: &str) -> Result<(), EngineError> {
        self.tick = state
            .parse()
            .map_err(|_| EngineError::BadState("not a tick".into()))?;
        Ok(())
    }
}

#[test]
fn sync_test_harness_catches_a_nondeterministic_engine() {
    let mut stub = LeakyEngine::new_level(common::setup(1, 0, 1, 1)).expect("stub");
    let result = sync_test::run(&mut stub, 10, 4, |_: &LeakyEngine| -> TickInputs {
        (BTreeMap::new(), Vec::new())
    });
    match result {
        Err(SyncTestError::Mismatch {
            tick,
            first,
            second,
        }) => {
            assert_eq!(tick, 1);
            assert_ne!(first, second);
        }
        other => panic!("the harness must report a mismatch, got {other:?}"),
    }
}
