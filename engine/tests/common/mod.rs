//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use engine::wire::raycaster::{LevelSeed, Settings};
use std::collections::BTreeMap;

use engine::level_gen::generate;
use engine::wire::input::InputSnapshot;
use engine::{BotController, Difficulty, Game, LevelSetup, RaycasterEngine};
use game_api::PlayerId;

pub fn roster(n: u32) -> Vec<PlayerId> {
    (0..n).map(|i| PlayerId::new(format!("p{i}"))).collect()
}

pub fn setup(campaign_seed: u32, level: u32, players: u32, gameplay_seed: u32) -> LevelSetup {
    LevelSetup {
        body: generate(campaign_seed, level, players),
        roster: roster(players),
        head: LevelSeed { gameplay_seed },
        settings: Settings {
            difficulty: Difficulty::Normal,
        },
        player_count: players,
        carryovers: BTreeMap::new(),
        input_delays: BTreeMap::new(),
    }
}

pub fn engine(campaign_seed: u32, level: u32, players: u32, gameplay_seed: u32) -> RaycasterEngine {
    RaycasterEngine::new_level(setup(campaign_seed, level, players, gameplay_seed))
        .expect("generated level is valid")
}

pub fn bots(e: &RaycasterEngine) -> Vec<BotController> {
    e.roster().into_iter().map(BotController::new).collect()
}

/// Every bot's input for this tick.
pub fn bot_inputs(
    e: &RaycasterEngine,
    bots: &[BotController],
) -> BTreeMap<PlayerId, InputSnapshot> {
    bots.iter()
        .map(|b| (b.player_id().clone(), b.decide(e)))
        .collect()
}

/// Bot inputs plus scripted noise (turning, firing) that depends only on the tick.
pub fn noisy_inputs(
    e: &RaycasterEngine,
    bots: &[BotController],
) -> BTreeMap<PlayerId, InputSnapshot> {
    let t = e.tick();
    let mut inputs = bot_inputs(e, bots);
    for (i, input) in inputs.values_mut().enumerate() {
        if (t + i as u64) % 17 == 0 {
            input.mouse_delta_x += 37.0;
            input.fire = true;
        }
    }
    inputs
}
