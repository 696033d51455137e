//! A host session fed arbitrary guest messages from two connections (lines
//! alternate between them): hellos, setup acks, tick inputs, hash reports
//! and transition acks at any phase. Never a panic.
#![no_main]

use std::time::Duration;

use engine::RaycasterEngine;
use libfuzzer_sys::fuzz_target;
use netcode::host::{HostConfig, HostSession};
use netcode::link::PeerEvent;

fuzz_target!(|data: &[u8]| {
    let mut host = HostSession::<RaycasterEngine>::new(HostConfig {
        expected_guests: 1,
        lobby_wait: None,
        max_ticks_per_level: Some(300),
        ..HostConfig::default()
    });
    let mut now = Duration::ZERO;
    let slots = [host.add_guest(now), host.add_guest(now)];
    for (i, (channel, payload)) in campfire_fuzz::messages(data).into_iter().enumerate() {
        now += Duration::from_millis(33);
        host.on_event(slots[i % 2], PeerEvent::Message(channel, payload), now);
        host.poll(now);
        let _ = host.drain_outbox();
        let _ = host.drain_events();
    }
});
