//! Placed bundles (the `placed-bundles` hello feature, issue 48), on a
//! virtual clock: a guest that takes the feature up gets tick bundles
//! without player ids once it has had one whole, plays in lockstep beside a
//! guest that gets them whole, through a late joiner (whose bundle goes
//! whole to everyone), for far fewer bytes.

mod support;

use engine::RaycasterEngine;
use netcode::guest::GuestConfig;
use netcode::sim::{NetAction, NetEvent, Scenario, Sim};
use protocol::peer::{FEATURE_DELTA_SNAPSHOTS, FEATURE_PLACED_BUNDLES};
use support::checks::{assert_late_lockstep, assert_lockstep};
use support::scenario::{guest, host, net, run, without_feature};

fn bot(name: &str) -> GuestConfig {
    GuestConfig {
        bot: true,
        ..guest(name)
    }
}

#[test]
fn placed_and_whole_bundle_guests_play_in_lockstep_and_placed_ones_cost_far_less() {
    // Snapshots whole for both, so the difference is the bundles'.
    let whole_snapshots = |c| without_feature(FEATURE_DELTA_SNAPSHOTS, c);
    let o = run(
        host(1, 2, Some(900)),
        vec![
            (whole_snapshots(bot("Placed")), net(20, 5, 1)),
            (
                without_feature(FEATURE_PLACED_BUNDLES, whole_snapshots(bot("Whole"))),
                net(20, 5, 2),
            ),
        ],
    );
    for g in 0..2 {
        assert_lockstep(&o, g);
        let s = o.guests[g].stats();
        assert_eq!(
            (s.bad_messages, s.out_of_sequence),
            (0, 0),
            "guest {g}: {s:?}"
        );
    }
    let [placed, whole] = [0, 1].map(|g| {
        let t = o.guests[g].meter().totals();
        t.bytes_down - t.snapshot_bytes
    });
    assert!(
        placed * 10 < whole * 6,
        "placed {placed} bytes, whole {whole} bytes besides snapshots"
    );
}

#[test]
fn a_late_joiner_changes_the_players_and_everyone_stays_in_lockstep() {
    let mut scenario: Scenario<RaycasterEngine> = Scenario {
        host: netcode::host::HostConfig {
            late_join: true,
            ..host(1, 1, Some(600))
        },
        guests: vec![(bot("Early"), net(10, 0, 1))],
        ..Scenario::default()
    };
    scenario.events.push(NetEvent {
        at_tick: 200,
        action: NetAction::LateJoin(bot("Late"), net(10, 0, 2)),
    });
    let mut sim = Sim::new(scenario);
    while sim.step() {}
    let o = sim.finish();
    assert_lockstep(&o, 0);
    assert_eq!(o.late.len(), 1, "the late joiner connected");
    assert!(assert_late_lockstep(&o, 0) > 300);
    let late = &o.late[0];
    assert!(late.stats().bundles_applied > 300, "{:?}", late.stats());
    assert_eq!(late.stats().bad_messages, 0);
    assert_eq!(o.guests[0].stats().bad_messages, 0);
}
