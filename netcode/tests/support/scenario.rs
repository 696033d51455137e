//! Hosts, guests, links and network events for whole sessions over the
//! simulated network, and the runs.

use std::sync::Arc;
use std::time::Duration;

use super::HostConfig;
use engine::RaycasterEngine;
use engine::plan::GeneratedCampaign;
use netcode::guest::GuestConfig;
use netcode::sim::{LinkConfig, NetAction, NetEvent, Scenario};

use super::Outcome;

/// A host of `levels` levels of campaign 11 with one bot, that starts
/// when `guests` guests are in and records its hashes.
pub fn host(levels: u32, guests: usize, max_ticks: Option<u64>) -> HostConfig {
    HostConfig {
        plan: Arc::new(GeneratedCampaign { seed: 11, levels }),
        bots: 1,
        expected_guests: guests,
        max_ticks_per_level: max_ticks,
        record_hashes: true,
        ..HostConfig::default()
    }
}

/// The rejoin secret of [`rejoining_host`].
pub const REJOIN_SECRET: [u8; 32] = [5; 32];

/// A one-level host for two guests that hands out rejoin tokens.
pub fn rejoining_host(max_ticks: u64) -> HostConfig {
    HostConfig {
        rejoin_secret: Some(REJOIN_SECRET),
        ..host(1, 2, Some(max_ticks))
    }
}

/// A guest that records every tick it applies.
pub fn guest(name: &str) -> GuestConfig {
    GuestConfig {
        display_name: name.into(),
        record_ticks: true,
        ..GuestConfig::default()
    }
}

/// A guest that does not take up `input-delay`: its session keeps the
/// spec's fixed `INPUT_DELAY_TICKS` for every player.
pub fn fixed_delay_guest(name: &str) -> GuestConfig {
    GuestConfig {
        features: vec![protocol::peer::FEATURE_PING.to_owned()],
        ..guest(name)
    }
}

/// `config` taking up all it would but `feature`.
pub fn without_feature(feature: &str, config: GuestConfig) -> GuestConfig {
    GuestConfig {
        features: config
            .features
            .iter()
            .filter(|f| *f != feature)
            .cloned()
            .collect(),
        ..config
    }
}

/// A link `latency_ms` each way, give or take `jitter_ms`.
pub fn net(latency_ms: u64, jitter_ms: u64, seed: u64) -> LinkConfig {
    LinkConfig {
        latency: Duration::from_millis(latency_ms),
        jitter: Duration::from_millis(jitter_ms),
        seed,
        ..LinkConfig::default()
    }
}

/// Guests A and B over 20 ms and 30 ms links with a little jitter.
pub fn a_and_b() -> Vec<(GuestConfig, LinkConfig)> {
    vec![(guest("A"), net(20, 5, 1)), (guest("B"), net(30, 5, 2))]
}

/// `action` once the host has simulated `tick` ticks.
pub fn at(tick: u64, action: NetAction) -> NetEvent {
    NetEvent {
        at_tick: tick,
        action,
    }
}

/// Plays a session with nothing happening to the network.
pub fn run(host: HostConfig, guests: Vec<(GuestConfig, LinkConfig)>) -> Outcome {
    run_with(host, guests, vec![])
}

/// Plays a session with `events` happening to the network.
pub fn run_with(
    host: HostConfig,
    guests: Vec<(GuestConfig, LinkConfig)>,
    events: Vec<NetEvent>,
) -> Outcome {
    netcode::sim::run::<RaycasterEngine>(Scenario {
        host,
        guests,
        events,
    })
}
