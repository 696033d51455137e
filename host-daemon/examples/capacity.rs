//! Capacity benchmark: how many concurrent sessions (1 host bot + 4 bot
//! guests each, all in this process over the simulated network with zero
//! latency) one process sustains at 30 Hz while the p99 tick lateness stays
//! under 5 ms.
//!
//! `cargo run --release -p host-daemon --example capacity -- [SECONDS] [SESSIONS...]`
//!
//! For each session count it starts that many sessions (staggered across one
//! tick period, as independent hosts would be), runs them for SECONDS of wall
//! time, and prints one JSON line: sessions, players, p50/p99/max tick
//! lateness over every host tick after each session's first 2 s, and the
//! process CPU use (including set-up). It stops after
//! the first count whose p99 exceeds 5 ms.

#[path = "support/proc_stat.rs"]
mod proc_stat;

use std::time::Duration;

use std::sync::Arc;

use engine::RaycasterEngine;
use engine::plan::GeneratedCampaign;
use host_daemon::realtime::run;
use netcode::guest::GuestConfig;
use netcode::host::HostConfig;
use netcode::sim::{LinkConfig, Scenario};
use netcode::stats::LatenessHistogram;
use proc_stat::cpu_seconds;
use protocol::tick::TICK_RATE_HZ;

fn scenario(i: usize, ticks: u64) -> Scenario<RaycasterEngine> {
    Scenario {
        host: HostConfig {
            plan: Arc::new(GeneratedCampaign {
                seed: 1000 + i as u32,
                levels: 50,
            }),
            bots: 0,
            expected_guests: 4,
            max_ticks_per_level: Some(ticks),
            ..HostConfig::default()
        },
        guests: (0..4)
            .map(|g| {
                (
                    GuestConfig::default(),
                    LinkConfig {
                        seed: (i * 10 + g) as u64,
                        ..LinkConfig::default()
                    },
                )
            })
            .collect(),
        events: vec![],
    }
}

async fn step(sessions: usize, seconds: u64) -> serde_json::Value {
    let ticks = seconds * u64::from(TICK_RATE_HZ);
    let period = Duration::from_secs(1) / TICK_RATE_HZ;
    let cpu0 = cpu_seconds("self");
    let wall0 = std::time::Instant::now();
    let mut tasks = Vec::new();
    for i in 0..sessions {
        tokio::time::sleep(period / sessions as u32).await;
        tasks.push(tokio::spawn(run(scenario(i, ticks), None)));
    }
    let mut lateness = LatenessHistogram::default();
    let mut host_ticks = 0;
    for t in tasks {
        if let Ok(o) = t.await {
            // Steady state: each session's first 2 s are left out (setup
            // of the others, map generation and transfer, happen then).
            lateness.merge(&o.host.stats().tick_lateness_steady_us);
            host_ticks += o.host.stats().ticks;
        }
    }
    let wall = wall0.elapsed().as_secs_f64();
    let cpu = cpu_seconds("self") - cpu0;
    serde_json::json!({
        "sessions": sessions,
        "players": sessions * 5,
        "hostTicks": host_ticks,
        "p50LatenessUs": lateness.percentile(50.0),
        "p99LatenessUs": lateness.percentile(99.0),
        "maxLatenessUs": lateness.percentile(100.0),
        "cpuCores": cpu / wall,
        "wallSeconds": wall,
    })
}

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(15);
    let mut counts: Vec<usize> = args.filter_map(|s| s.parse().ok()).collect();
    if counts.is_empty() {
        counts = vec![25, 50, 100, 150, 200, 250, 300, 400];
    }
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
    else {
        eprintln!("could not build the runtime");
        return;
    };
    for n in counts {
        let line = rt.block_on(step(n, seconds));
        println!("{line}");
        if line["p99LatenessUs"].as_u64().unwrap_or(0) > 5_000 {
            break;
        }
    }
}
