//! The netgraph's figures on a virtual clock: what a guest counts it
//! received is what the host counts it sent that guest, the rates follow
//! the session's steady traffic, and the snapshots' corrections and the
//! link's figures are there for the overlay.

mod support;

use std::time::Duration;

use engine::{Game, RaycasterEngine};
use netcode::guest::GuestConfig;
use netcode::netgraph::Flow;
use netcode::sim::{Scenario, Sim};
use protocol::peer::FEATURE_ROUND_TRIP;
use support::scenario::{guest, host, net, without_feature};

/// A one-guest session over a 30 ms link, played until the host's tick
/// `until`.
fn play_until(config: GuestConfig, until: u64) -> Sim<RaycasterEngine> {
    let mut sim: Sim<RaycasterEngine> = Sim::new(Scenario {
        host: host(1, 1, Some(600)),
        guests: vec![(config, net(30, 5, 7))],
        ..Scenario::default()
    });
    let tick = |sim: &Sim<RaycasterEngine>| sim.host().engine().map_or(0, |e| e.tick());
    while tick(&sim) < until {
        assert!(sim.step(), "the session ended before tick {until}");
    }
    sim
}

#[test]
fn a_guest_reads_what_the_host_sends_it_and_sees_its_link() {
    let bot = GuestConfig {
        bot: true,
        ..guest("Bot")
    };
    // Ten seconds of play: ten snapshots, the map transfer long gone by;
    // stopped between two snapshots, so only bundles are in flight.
    let sim = play_until(bot, 310);
    let now = sim.now();
    let g = sim.guest(0).expect("one guest");
    let me = g.player_id().cloned().expect("admitted");
    let seen = g.netgraph(now);
    let host_flow = sim
        .host()
        .stats()
        .sent
        .get(&me)
        .cloned()
        .unwrap_or_default();
    let sent = host_flow.reading(now);

    // Totals: what is in flight (30 ms of it) is all that may differ; the
    // host counts from admission on, so the hello is the guest's alone.
    assert!(seen.down.bytes <= sim.bytes_to_guest(0));
    assert!(
        sent.bytes <= seen.down.bytes + 2_000,
        "host {} guest {}",
        sent.bytes,
        seen.down.bytes
    );
    assert!(
        seen.down.bytes <= sent.bytes + 2_000,
        "host {} guest {}",
        sent.bytes,
        seen.down.bytes
    );
    // Rates: the guest's window and the host's agree within 20%.
    let ratio = seen.down.bytes_per_s / sent.bytes_per_s;
    assert!((0.8..=1.2).contains(&ratio), "guest {seen:?} host {sent:?}");
    assert!(
        seen.down.messages_per_s >= 30.0,
        "a bundle a tick at least: {seen:?}"
    );
    assert!(seen.up.messages_per_s >= 25.0, "an input a tick: {seen:?}");
    assert!(seen.down.wire_bytes_per_s > seen.down.bytes_per_s);

    // Snapshots: one a second, each counted with its size.
    assert!((0.5..=1.5).contains(&seen.snapshots_per_s), "{seen:?}");
    assert!(seen.snapshots >= 8, "{seen:?}");
    assert!(seen.snapshot_bytes.is_some_and(|b| b > 100), "{seen:?}");

    // The clock, the delay and the corrections.
    assert!(seen.tick > 250);
    let host_tick = seen.host_tick.expect("bundles arrived");
    // The world's tick is one past the last bundle applied.
    assert!(
        host_tick + 1 >= seen.tick,
        "host {host_tick} guest {}",
        seen.tick
    );
    assert_eq!(seen.input_delay, g.input_delay());
    let jitter = seen.arrival_jitter_ms.expect("bundles arrived");
    assert!(
        (0.0..=10.0).contains(&jitter),
        "5 ms of jitter each way: {jitter}"
    );
    assert!(seen.correction.is_some(), "a snapshot was applied");
    assert_eq!(seen.correction_visible_at, Some(0.1));
    assert_eq!(seen.desyncs, 0);

    // The host's line for this guest says the same.
    let line = sim
        .host()
        .netgraph(now)
        .links
        .into_iter()
        .find(|l| l.player == me.as_str())
        .expect("a line for the guest");
    assert_eq!(line.name, "Bot");
    assert_eq!(line.down, sent);
    assert!(
        line.rtt_ms.is_some_and(|r| (50.0..=90.0).contains(&r)),
        "{line:?}"
    );
    assert_eq!(line.input_delay, seen.input_delay);
    // `round-trip`: the host told the guest its measure with the last
    // ping, so the guest's figure is the host's of a second ago at most.
    let told = seen.rtt_ms.expect("the host's pings carry its round trip");
    assert!((50.0..=90.0).contains(&told), "{seen:?}");
    let host_rtt = line.rtt_ms.expect("measured");
    assert!(
        (told - host_rtt).abs() <= 15.0,
        "guest {told} host {host_rtt}"
    );
    assert!(seen.rtt_jitter_ms.is_some_and(|j| j >= 0.0), "{seen:?}");
    let totals = g.meter().totals();
    assert_eq!(totals.bytes_down, seen.down.bytes);
    assert_eq!(totals.snapshots, seen.snapshots);
    assert!(Flow::default().reading(Duration::from_secs(1)).bytes_per_s == 0.0);
}

#[test]
fn a_guest_without_round_trip_is_told_none() {
    let quiet = without_feature(FEATURE_ROUND_TRIP, guest("Quiet"));
    let sim = play_until(quiet, 100);
    let now = sim.now();
    let g = sim.guest(0).expect("one guest");
    let seen = g.netgraph(now);
    assert!(g.meter().down.messages() > 100, "it played: {seen:?}");
    assert_eq!(seen.rtt_ms, None);
    assert_eq!(seen.rtt_jitter_ms, None);
    // The host measured it all the same (the pings are `ping`'s).
    let line = &sim.host().netgraph(now).links[0];
    assert!(line.rtt_ms.is_some(), "{line:?}");
}
