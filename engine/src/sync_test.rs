//! A sync-test harness in the spirit of GGRS's `SyncTestSession`: save the
//! world, advance K ticks recording hashes, restore, re-advance with the
//! same inputs, and require identical hashes every tick. It catches any
//! hidden state the save misses and any nondeterminism in a tick.

use std::collections::BTreeMap;

use crate::wire::input::InputSnapshot;
use game_api::PlayerId;
use thiserror::Error;

use crate::engine::{Engine, EngineError};

/// One tick's inputs and roster removals.
pub type TickInputs = (BTreeMap<PlayerId, InputSnapshot>, Vec<PlayerId>);

/// What the harness found.
#[derive(Debug, Error)]
pub enum SyncTestError {
    /// Re-simulating gave a different hash.
    #[error("desync at tick {tick}: first run {first:#018x}, re-run {second:#018x}")]
    Mismatch {
        /// The tick after which the hashes differ.
        tick: u64,
        /// First run's hash.
        first: u64,
        /// Re-run's hash.
        second: u64,
    },
    /// Saving or restoring failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Runs `ticks` ticks in windows of `window`, re-simulating every window.
/// `inputs` is asked once per tick (first run only) and may read the engine.
/// Returns how many ticks were checked.
pub fn run<E: Engine>(
    engine: &mut E,
    ticks: u64,
    window: u64,
    mut inputs: impl FnMut(&E) -> TickInputs,
) -> Result<u64, SyncTestError> {
    let window = window.max(1);
    let mut checked = 0;
    while checked < ticks {
        let saved = engine.save_state()?;
        let mut recorded = Vec::new();
        for _ in 0..window.min(ticks - checked) {
            let tick_inputs = inputs(engine);
            engine.advance(&tick_inputs.0, &tick_inputs.1);
            recorded.push((tick_inputs, engine.world_hash()));
        }
        engine.load_state(&saved)?;
        for ((tick_inputs, first), _) in recorded.iter().zip(0..) {
            engine.advance(&tick_inputs.0, &tick_inputs.1);
            let second = engine.world_hash();
            if second != *first {
                return Err(SyncTestError::Mismatch {
                    tick: engine.tick(),
                    first: *first,
                    second,
                });
            }
            checked += 1;
        }
    }
    Ok(checked)
}
