//! A degraded link, end to end: the lobby and `host-daemon host` in one
//! network namespace, two `host-daemon join --bot` guests in another, and
//! the link between them delaying every packet 75 ms ± 10 ms each way and
//! losing 2% (`tc netem`, or its user-space stand-in where the kernel lacks
//! netem; see `common::netns`). The session completes; no guest ends with a
//! persistent desync (a mismatch, if any, is cleared by the next snapshot);
//! each guest's input delay is fitted to the link (more than the clean
//! link's, at most the cap) and its input was held on at most 5% of its
//! ticks (issue 15's target; 99.7% with the spec's fixed 3 ticks).
//!
//! Needs root for the namespaces: without it the test fails, it does not
//! skip. All traffic stays inside the two namespaces; every wait is bounded.

mod common;

use std::time::{Duration, Instant};

use common::netns::{DegradedLink, Impairment, LinkKind};
use common::{
    Children, Lobby, daemon, join_cmd, next_line, outputs_of, start_lobby, successful_report,
};

/// The degraded link: 75 ms each way, 10 ms jitter, 2% loss.
const IMPAIRMENT: Impairment = Impairment {
    delay_ms: 75,
    jitter_ms: 10,
    loss_percent: 2.0,
};

/// Issue 15's bound: held inputs over a guest's ticks.
const MAX_HELD_RATIO: f64 = 0.05;

/// `report[field]` as a count (present and a number, or the test fails).
fn count(report: &serde_json::Value, field: &str) -> u64 {
    report
        .get(field)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("{field} is not a count: {report}"))
}

#[test]
fn a_session_over_a_slow_lossy_link_completes_without_persistent_desyncs() {
    let started = Instant::now();
    let mut link = DegradedLink::up(IMPAIRMENT);
    let (host_site, guest_site) = (link.site_a(), link.site_b());
    let db = tempfile::tempdir().expect("tempdir");
    // Dropped before `link`: every process ends before the namespaces go.
    let mut children = Children::default();
    let Lobby { url, addr } = start_lobby(&mut children, db.path(), &host_site);

    // The link really is slow: a TCP handshake takes a round trip, 2 x 75 ms
    // give or take the jitter.
    let port: u16 = addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    let handshake = link.tcp_handshake_from_b(port, 3);
    eprintln!("TCP handshake B -> A: {handshake:?}");
    let round_trip = Duration::from_millis(2 * u64::from(IMPAIRMENT.delay_ms));
    let jitter = Duration::from_millis(2 * u64::from(IMPAIRMENT.jitter_ms));
    assert!(
        handshake >= round_trip - jitter && handshake < round_trip + Duration::from_secs(1),
        "TCP handshake across the link took {handshake:?}, expected about {round_trip:?}"
    );

    let host = daemon::host(&host_site, &url)
        .args(["--bots", "1"])
        .one_level(2)
        .spawn(&mut children);
    let code = host.session_code();

    // The guests reach the lobby, and then the daemon, across the link.
    let guests = [
        children.push(
            join_cmd(&guest_site, &url, &code, "g1")
                .spawn()
                .expect("join 1"),
        ),
        children.push(
            join_cmd(&guest_site, &url, &code, "g2")
                .spawn()
                .expect("join 2"),
        ),
    ];
    let outs = outputs_of(
        &mut children,
        &guests,
        Duration::from_secs(240),
        "the guests",
    );
    // The daemon's report: each guest's round trip as the host measured it.
    let report_line = next_line(&host.lines, Duration::from_secs(30), "the session report");
    eprintln!("the daemon's session report: {report_line}");
    for (i, e) in outs.iter().enumerate() {
        let what = format!("guest {}", i + 1);
        let report = successful_report(e, &what);
        assert_eq!(report["endReason"], "completed", "{report}");
        assert_eq!(report["levelsCompleted"], 1, "{report}");
        assert!(report["ticks"].as_u64().unwrap_or(0) > 0, "{report}");
        // Snapshots arrived, so a mismatch had a chance to be cleared.
        assert!(
            report["snapshotsApplied"].as_u64().unwrap_or(0) > 0,
            "{report}"
        );
        // What the guest counted in (its netgraph's totals) is what the
        // daemon counted out to it, over a lossy link (the host's
        // channel is reliable; the hello precedes the host's count).
        let daemon: serde_json::Value =
            serde_json::from_str(&report_line).expect("the session report is JSON");
        let mine = daemon["players"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["playerId"] == report["playerId"]))
            .unwrap_or_else(|| panic!("{what} in the daemon's report: {report_line}"));
        let (down, sent) = (
            count(&report["traffic"], "bytesDown"),
            count(mine, "bytesSent"),
        );
        assert!(
            sent > 10_000 && down.abs_diff(sent) * 50 <= sent,
            "{what}: received {down} bytes, the daemon sent {sent}: {report}"
        );
        let (in_msgs, out_msgs) = (
            count(&report["traffic"], "messagesDown"),
            count(mine, "messagesSent"),
        );
        assert!(
            in_msgs.abs_diff(out_msgs) * 50 <= out_msgs,
            "{what}: received {in_msgs} messages, the daemon sent {out_msgs}"
        );
        // Counted by the host: mismatches, if any, were cleared by the
        // next snapshot.
        let desyncs = count(&report, "desyncs");
        assert_eq!(
            count(&report, "persistentDesyncs"),
            0,
            "{what}: persistent desyncs: {report}"
        );
        let held = count(&report, "heldInputs");
        let ticks = count(&report, "ticks");
        let delay = count(&report, "inputDelayTicks");
        let ratio = held as f64 / ticks as f64;
        eprintln!(
            "{what}: input delay {delay} ticks, held inputs {held} of {ticks} ticks \
             ({:.2}%), desyncs {desyncs} (none persistent), snapshots applied {}",
            ratio * 100.0,
            report["snapshotsApplied"]
        );
        // 150 ms round trips need more than a clean link's delay.
        assert!(
            (3..=protocol::tick::MAX_INPUT_DELAY_TICKS).contains(&delay),
            "{what}: input delay {delay}: {report}"
        );
        assert!(
            ratio <= MAX_HELD_RATIO,
            "{what}: held inputs on {:.2}% of ticks (at most {:.0}%): {report}",
            ratio * 100.0,
            MAX_HELD_RATIO * 100.0
        );
    }

    // The daemon's own account of the session.
    let (_, over) = host
        .log
        .wait_for(Duration::from_secs(30), "session over", |l| {
            l.contains("session over") && l.contains(&code)
        });
    assert!(over.contains("Some(Completed)"), "{over}");
    assert!(over.contains("joined=2"), "{over}");
    let host_desyncs = host.log.count(|l| l.contains("desync: guest hash differs"));
    eprintln!("the daemon logged {host_desyncs} hash mismatches: {over}");

    // The link really was degraded.
    drop(children);
    match link.kind {
        LinkKind::Netem => eprintln!("{}", link.qdisc_stats()),
        LinkKind::Emulated => {
            let counts = link.stop_emulator().expect("the emulator's counts");
            eprintln!("link emulator: {}", serde_json::Value::from(counts.clone()));
            let lost: u64 = counts.iter().filter_map(|c| c["lost"].as_u64()).sum();
            let sent: u64 = counts.iter().filter_map(|c| c["sent"].as_u64()).sum();
            assert_eq!(counts.len(), 2, "{counts:?}");
            assert!(sent > 1000 && lost > 0, "{counts:?}");
        }
    }
    eprintln!("degraded-link e2e took {:?}", started.elapsed());
}
