//! Measures a late join on the simulated network: a five-player level
//! (host, three guests and the joiner), the joiner connecting over a
//! link of `LATENCY_MS` each way once the host has run `TICK` ticks. Prints
//! the figures (catch-up time, state size, bytes to the joiner) as one line.
//!
//! `cargo run --release -p netcode --example late_join -- [TICK] [LATENCY_MS]`
//! (defaults 3000 and 75).

use std::sync::Arc;
use std::time::Duration;

use engine::RaycasterEngine;
use engine::level_gen::generate;
use engine::plan::FixedCampaign;
use netcode::guest::GuestConfig;
use netcode::host::HostConfig;
use netcode::sim::{LinkConfig, Scenario, final_hash_matches, measure_late_join};

fn main() {
    let mut args = std::env::args().skip(1);
    let tick: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3000);
    let latency: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(75);
    let link = |ms: u64, seed: u64| LinkConfig {
        latency: Duration::from_millis(ms),
        jitter: Duration::from_millis(10),
        seed,
        ..LinkConfig::default()
    };
    // Every player is a bot; the level is the seventh of seed 11's
    // campaign on hard (the engine's state-transfer test measures the same
    // level), which bots are still playing at tick 3,000.
    let guest = |name: &str| GuestConfig {
        display_name: name.into(),
        ..GuestConfig::default()
    };
    let scenario = Scenario {
        host: HostConfig {
            plan: Arc::new(FixedCampaign {
                seed: 11,
                maps: vec![generate(11, 7, 5)],
            }),
            settings: engine::wire::raycaster::Settings {
                difficulty: engine::Difficulty::Hard,
            },
            expected_guests: 3,
            max_ticks_per_level: Some(tick + 600),
            ..HostConfig::default()
        },
        guests: vec![
            (guest("A"), link(20, 1)),
            (guest("B"), link(30, 2)),
            (guest("C"), link(40, 3)),
        ],
        events: vec![],
    };
    let (figures, outcome) =
        measure_late_join::<RaycasterEngine>(scenario, guest("Late"), link(latency, 9), tick);
    let joined = outcome.late.first();
    let line = serde_json::json!({
        "end": outcome.host.ended().map(|r| format!("{r:?}")),
        "hostTicks": outcome.host.stats().ticks,
        "joinAt": tick,
        "latencyMs": latency,
        "joinTick": figures.join_tick,
        "catchUpMs": figures.catch_up.map(|d| d.as_millis()),
        "stateBytes": figures.state_bytes,
        "bytesToJoiner": figures.bytes_to_joiner,
        "roster": outcome.host.roster().len(),
        "finalHashMatches": joined.is_some_and(|g| final_hash_matches(&outcome.host, g)),
    });
    println!("{line}");
}
