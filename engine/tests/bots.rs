//! Bot teams play generated levels to the end.

mod common;

use engine::Game;
use engine::engine::LevelStatus;

/// Tick budget for one level: 6,000 ticks, 200 seconds of game time.
const BUDGET: u64 = 6_000;

#[test]
fn bot_pairs_finish_ninety_percent_of_a_hundred_levels() {
    let mut finished = 0;
    let mut failures = Vec::new();
    for seed in 0..100u32 {
        let level = seed % 3;
        let mut e = common::engine(seed.wrapping_mul(104_729), level, 2, seed);
        let bots = common::bots(&e);
        while e.tick() < BUDGET
            && matches!(
                e.status(),
                LevelStatus::Running | LevelStatus::Countdown { .. }
            )
        {
            let inputs = common::bot_inputs(&e, &bots);
            e.advance(&inputs, &[]);
        }
        if e.status() == LevelStatus::Complete {
            finished += 1;
        } else {
            failures.push((seed, level, e.status(), e.tick()));
        }
    }
    assert!(
        finished >= 90,
        "bots finished {finished}/100; failures: {failures:?}"
    );
    eprintln!("bots finished {finished}/100 within {BUDGET} ticks; failures: {failures:?}");
}
