//! Delta snapshots (the `delta-snapshots` hello feature, issue 48), on a
//! virtual clock: a guest that takes the feature up gets each snapshot as a
//! delta against the one it acknowledged and plays in lockstep beside a
//! guest that gets them whole; a delta it cannot read is sent again whole,
//! once.

mod support;

use std::time::Duration;

use engine::{Game, RaycasterEngine};
use netcode::guest::GuestConfig;
use netcode::host::HostOutput;
use netcode::link::PeerEvent;
use netcode::sim::{Scenario, Sim};
use protocol::peer::{Channel, FEATURE_DELTA_SNAPSHOTS, GuestMessage, HostMessage};
use protocol::wire::WireFormat;
use support::checks::assert_lockstep;
use support::scenario::{guest, host, net, run, without_feature};

fn bot(name: &str) -> GuestConfig {
    GuestConfig {
        bot: true,
        ..guest(name)
    }
}

#[test]
fn a_delta_guest_and_a_whole_snapshot_guest_play_in_lockstep_and_the_deltas_are_smaller() {
    let o = run(
        host(1, 2, Some(900)),
        vec![
            (bot("Delta"), net(20, 5, 1)),
            (
                without_feature(FEATURE_DELTA_SNAPSHOTS, bot("Whole")),
                net(20, 5, 2),
            ),
        ],
    );
    for g in 0..2 {
        assert_lockstep(&o, g);
        let s = o.guests[g].stats();
        assert!(s.snapshots_applied >= 25, "guest {g}: {s:?}");
        assert_eq!(s.snapshots_discarded, 0, "guest {g}: {s:?}");
        assert_eq!(s.bad_messages, 0, "guest {g}: {s:?}");
    }
    let (delta, whole) = (o.guests[0].meter().totals(), o.guests[1].meter().totals());
    assert_eq!(delta.snapshots, whole.snapshots);
    assert!(
        // About half for three players on level 1 (42-44% for five bots,
        // docs/benchmarks.md); at most 60%.
        delta.snapshot_bytes * 10 < whole.snapshot_bytes * 6,
        "deltas {} bytes, whole {} bytes",
        delta.snapshot_bytes,
        whole.snapshot_bytes
    );
}

#[test]
fn a_delta_the_guest_cannot_read_is_asked_for_and_sent_whole_once() {
    let mut sim: Sim<RaycasterEngine> = Sim::new(Scenario {
        host: host(1, 1, Some(600)),
        guests: vec![(bot("Asker"), net(10, 0, 3))],
        ..Scenario::default()
    });
    let tick = |sim: &Sim<RaycasterEngine>| sim.host().engine().map_or(0, |e| e.tick());
    while tick(&sim) < 100 {
        assert!(sim.step(), "the session ended before tick 100");
    }
    let ask = GuestMessage::<engine::wire::Raycaster>::SnapshotAsk {
        level_epoch: 1,
        tick: 90,
    }
    .encode(WireFormat::Json)
    .expect("json");
    let now = sim.now();
    let host = sim.host_mut();
    host.drain_outbox();
    let whole = |out: Vec<HostOutput<engine::wire::Raycaster>>| {
        out.into_iter()
            .filter_map(|o| match o {
                HostOutput::Send(0, HostMessage::SnapshotDelta(d), _) => Some(d),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    host.on_event(
        0,
        PeerEvent::Message(Channel::Reconciliation, ask.clone().into()),
        now,
    );
    let sent = whole(host.drain_outbox());
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!((sent[0].tick, sent[0].base_tick), (90, None));
    // Asked again for the same snapshot: nothing more.
    host.on_event(
        0,
        PeerEvent::Message(Channel::Reconciliation, ask.into()),
        now,
    );
    assert!(whole(host.drain_outbox()).is_empty());
    // A snapshot the host no longer keeps: nothing either.
    let gone = GuestMessage::<engine::wire::Raycaster>::SnapshotAsk {
        level_epoch: 1,
        tick: 30_000,
    }
    .encode(WireFormat::Json)
    .expect("json");
    host.on_event(
        0,
        PeerEvent::Message(Channel::Reconciliation, gone.into()),
        now,
    );
    assert!(whole(host.drain_outbox()).is_empty());
    // The session plays on.
    let until = now + Duration::from_secs(5);
    while sim.now() < until && sim.step() {}
    assert!(
        sim.guest(0)
            .is_some_and(|g| g.stats().snapshots_applied >= 6)
    );
}
