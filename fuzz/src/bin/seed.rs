//! Writes the seed corpus of the session targets from a real exchange: a
//! host and one guest (both netcode sessions over the reference engine)
//! talking directly for two simulated seconds of a level, in the wire forms
//! they negotiate as text (a binary message's record as its `~` text, so
//! the lines stay lines). The host's messages to the
//! guest seed `guest_session`, the guest's to the host seed `host_session`,
//! and a few of each, in JSON and in their wire form, seed `peer_messages`.
//!
//!   cargo run --manifest-path fuzz/Cargo.toml --bin seed -- fuzz/corpus

use std::path::Path;
use std::time::Duration;

use campfire_fuzz::line;
use engine::RaycasterEngine;
use netcode::guest::{GuestConfig, GuestSession};
use netcode::host::{HostConfig, HostOutput, HostSession};
use netcode::link::{ConnectionState, PeerEvent};

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/corpus".into());
    let out = Path::new(&out);
    let mut host = HostSession::<RaycasterEngine>::new(HostConfig {
        expected_guests: 1,
        lobby_wait: None,
        ..HostConfig::default()
    });
    let mut guest = GuestSession::<RaycasterEngine>::new(GuestConfig {
        display_name: "seed".into(),
        bot: true,
        ..GuestConfig::default()
    });
    let mut to_guest = String::new();
    let mut to_host = String::new();
    let mut samples: Vec<String> = Vec::new();
    let mut now = Duration::ZERO;
    let slot = host.add_guest(now);
    guest.on_event(PeerEvent::State(ConnectionState::Connected), now);
    for _ in 0..200 {
        now += Duration::from_millis(10);
        host.poll(now);
        for o in host.drain_outbox() {
            let (msg, format) = match o {
                HostOutput::Send(_, m, f) | HostOutput::Broadcast(_, m, f) => (m, f),
                HostOutput::Close(_) => continue,
            };
            let text = msg.encode(format).expect("encode");
            to_guest.push_str(&line(msg.channel(), &text));
            if samples.len() < 40 && text.len() < 4096 {
                samples.push(msg.to_json().expect("encode"));
                samples.push(text.clone());
            }
            guest.on_event(PeerEvent::Message(msg.channel(), text.into()), now);
        }
        guest.poll(now);
        let format = guest.wire_format();
        for msg in guest.drain_outbox() {
            let text = msg.encode(format).expect("encode");
            to_host.push_str(&line(msg.channel(), &text));
            if samples.len() < 80 {
                samples.push(msg.to_json().expect("encode"));
                samples.push(text.clone());
            }
            host.on_event(slot, PeerEvent::Message(msg.channel(), text.into()), now);
        }
    }
    assert!(host.stats().ticks > 30, "the level ran");
    let write = |dir: &str, name: &str, body: &[u8]| {
        let d = out.join(dir);
        std::fs::create_dir_all(&d).expect("corpus dir");
        std::fs::write(d.join(name), body).expect("write seed");
    };
    write("guest_session", "host-to-guest", to_guest.as_bytes());
    write("host_session", "guest-to-host", to_host.as_bytes());
    // Each message in JSON and in its negotiated form as text (compact or the same
    // JSON again, written once).
    samples.dedup();
    for (i, s) in samples.iter().enumerate() {
        write("peer_messages", &format!("message-{i:02}"), s.as_bytes());
    }
    println!(
        "seeds: {} bytes to the guest, {} to the host, {} messages",
        to_guest.len(),
        to_host.len(),
        samples.len()
    );
}
