//! Folded reports (the `folded-reports` hello feature, issue 48), on a
//! virtual clock: a guest that takes it up sends its world hash reports
//! and snapshot acknowledgements inside its redundant inputs. The host
//! takes each report once however many copies arrive, even over a lossy
//! link, and the guest sends about four messages a second fewer than one
//! that sends them on their own. (The desync tests in `lockstep.rs` run
//! with the feature, as every default guest now does.)

mod support;

use std::time::Duration;

use netcode::guest::GuestConfig;
use netcode::sim::LinkConfig;
use protocol::peer::FEATURE_FOLDED_REPORTS;
use support::checks::{assert_lockstep, player};
use support::scenario::{guest, host, net, run, without_feature};

fn bot(name: &str) -> GuestConfig {
    GuestConfig {
        bot: true,
        ..guest(name)
    }
}

fn lossy(seed: u64) -> LinkConfig {
    LinkConfig {
        loss: 0.05,
        retransmit: Duration::from_millis(120),
        ..net(30, 5, seed)
    }
}

#[test]
fn folded_reports_are_counted_once_and_save_messages() {
    let o = run(
        host(1, 1, Some(900)),
        vec![
            (bot("Folds"), lossy(1)),
            (
                without_feature(FEATURE_FOLDED_REPORTS, bot("Sends")),
                lossy(2),
            ),
        ],
    );
    for g in 0..2 {
        assert_lockstep(&o, g);
    }
    let stats = o.host.stats();
    let matches = |g: usize| stats.hash_matches.get(&player(&o, g)).copied().unwrap_or(0);
    let (folded, sent) = (matches(0), matches(1));
    // A report every 10 ticks over 900: the guest that sends them on the
    // reliable channel gets every one in; the folding guest loses one only
    // when all its copies are lost (5% each), and none is counted twice.
    assert!((85..=91).contains(&sent), "sent alone: {sent}");
    assert!(
        folded <= sent && folded + 2 >= sent,
        "folded {folded}, alone {sent}"
    );
    assert!(stats.desyncs.is_empty(), "{:?}", stats.desyncs);
    // Each guest counts the reports it made, once whatever the copies.
    let made = |g: usize| o.guests[g].stats().hash_reports;
    assert_eq!(made(0), made(1));
    assert!(made(0) >= u64::from(sent), "made {} sent {sent}", made(0));
    // The snapshots went as deltas to both: the acknowledgements arrived.
    let snapshot_bytes = |g: usize| o.guests[g].meter().totals().snapshot_bytes;
    assert!(
        snapshot_bytes(0) * 10 <= snapshot_bytes(1) * 12,
        "folded {} bytes of snapshots, alone {}",
        snapshot_bytes(0),
        snapshot_bytes(1)
    );
    // Messages up: about 3 hash reports and 1 acknowledgement a second fewer.
    let seconds = o.elapsed.as_secs_f64();
    let up = |g: usize| o.guests[g].meter().totals().messages_up as f64 / seconds;
    let saved = up(1) - up(0);
    eprintln!(
        "reports counted: folded {folded}, alone {sent}; messages up a second: folded {:.1}, alone {:.1}; snapshot bytes {} and {}",
        up(0),
        up(1),
        snapshot_bytes(0),
        snapshot_bytes(1)
    );
    assert!(
        (3.0..=5.0).contains(&saved),
        "{saved:.2} fewer messages a second ({:.1} against {:.1})",
        up(0),
        up(1)
    );
}
