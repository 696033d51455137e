//! A guest session fed arbitrary host messages (one per line, see
//! `campfire_fuzz::messages`): handshake, session init, map chunks and
//! their decoding into a level, bundles, snapshots and their application,
//! transitions. Never a panic. The seed corpus is a real host's messages
//! (`cargo run --bin seed`), so mutations reach map and snapshot decoding.
#![no_main]

use std::time::Duration;

use engine::RaycasterEngine;
use libfuzzer_sys::fuzz_target;
use netcode::guest::{GuestConfig, GuestSession};
use netcode::link::{ConnectionState, PeerEvent};

fuzz_target!(|data: &[u8]| {
    let mut guest = GuestSession::<RaycasterEngine>::new(GuestConfig {
        display_name: "fuzz".into(),
        ..GuestConfig::default()
    });
    let mut now = Duration::ZERO;
    guest.on_event(PeerEvent::State(ConnectionState::Connected), now);
    for (channel, payload) in campfire_fuzz::messages(data) {
        now += Duration::from_millis(33);
        guest.on_event(PeerEvent::Message(channel, payload), now);
        guest.poll(now);
        let _ = guest.drain_outbox();
        let _ = guest.drain_events();
    }
});
