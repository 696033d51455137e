//! End to end with real processes and real WebRTC on loopback: the
//! `lobby-server` binary, `host-daemon host` and two `host-daemon join --bot`
//! guests play a 2-level session; with late join off the lobby lists the
//! session before the start and not after, and a third join after the
//! start fails with "started" (late join itself: `late_join.rs`);
//! SIGTERM shuts the daemon down cleanly and empties the lobby. A guest
//! SIGKILLed mid-level is dropped after the grace while the other plays on;
//! a daemon SIGKILLed mid-level leaves its guests to end with
//! `host-disconnected` after the grace.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    Children, Lobby, Site, daemon, guest_rows, http_get, join_cmd, listed, next_line, outputs_of,
    report_of, stage, successful_report, wait_exit, wait_unlisted,
};
use protocol::tick::DISCONNECT_GRACE_MS;

/// `join --bot` guests `g1` and `g2` of session `code`: their indices.
fn two_guests(children: &mut Children, here: &Site, url: &str, code: &str) -> [usize; 2] {
    ["g1", "g2"].map(|name| {
        children.push(
            join_cmd(here, url, code, name)
                .spawn()
                .unwrap_or_else(|e| panic!("spawn join {name}: {e}")),
        )
    })
}

#[test]
fn two_bot_guests_play_two_levels_through_the_real_lobby() {
    let started = Instant::now();
    let (_files, mut children, here, lobby) = stage();
    let Lobby { url, addr } = lobby;

    // The daemon: one host bot, one extra bot, starts with two guests.
    let host = daemon::host(&here, &url)
        .args(["--bots", "1", "--no-late-join"])
        .args(["--start-when", "2", "--levels", "2", "--sessions", "1"])
        .spawn(&mut children);
    let code = host.session_code();
    assert!(
        listed(&addr, &code),
        "the lobby lists {code} before the start"
    );

    // Two bot guests, racing for the rounds.
    let guests = two_guests(&mut children, &here, &url, &code);

    // Once started, the session leaves the lobby.
    wait_unlisted(&addr, &code);

    // A third joiner after the start is turned away.
    let late_idx = children.push(
        join_cmd(&here, &url, &code, "late")
            .spawn()
            .expect("spawn join 3"),
    );
    let late = outputs_of(
        &mut children,
        &[late_idx],
        Duration::from_secs(60),
        "the late join",
    );
    let late = &late[0].out;
    let late_err = String::from_utf8_lossy(&late.stderr);
    assert!(!late.status.success(), "the late join must fail");
    assert!(late_err.contains("started"), "late join stderr: {late_err}");

    let outs = outputs_of(
        &mut children,
        &guests,
        Duration::from_secs(300),
        "the guests",
    );
    for (i, e) in outs.iter().enumerate() {
        let what = format!("guest {}", i + 1);
        let report = successful_report(e, &what);
        assert_eq!(report["endReason"], "completed", "{report}");
        assert_eq!(report["desyncs"], 0, "{report}");
        assert!(
            report["levelsCompleted"].as_u64().unwrap_or(0) >= 2,
            "{report}"
        );
        assert!(report["ticks"].as_u64().unwrap_or(0) > 0, "{report}");
    }

    // The daemon reports the finished session on stdout: both guests sent
    // hash reports and none differed.
    let line = next_line(&host.lines, Duration::from_secs(30), "the session report");
    let report: serde_json::Value = serde_json::from_str(&line).expect("a JSON report line");
    assert_eq!(report["type"], "session-report", "{line}");
    assert_eq!(report["endReason"], "completed", "{line}");
    assert!(
        report["levelsCompleted"].as_u64().unwrap_or(0) >= 2,
        "{line}"
    );
    let guests = guest_rows(&report);
    assert_eq!(guests.len(), 2, "{line}");
    for g in guests {
        assert!(g["hashReports"].as_u64().unwrap_or(0) > 0, "{line}");
        assert_eq!(g["desyncs"], 0, "{line}");
    }

    // The daemon opens a fresh session (--sessions 1), then shuts down
    // gracefully on SIGTERM: exit 0 and nothing left in the lobby.
    let next = next_line(&host.lines, Duration::from_secs(30), "next session");
    assert!(next.starts_with("session "), "{next}");
    let status = Command::new("kill")
        .args(["-TERM", &host.pid.to_string()])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    let status = wait_exit(
        &mut children.0[host.idx],
        Duration::from_secs(30),
        "the daemon after SIGTERM",
    );
    assert!(status.success(), "daemon exit after SIGTERM: {status}");
    let page = http_get(&addr, "/lobby");
    assert!(
        !page.contains(next.trim_start_matches("session ").trim()),
        "lobby after shutdown: {page}"
    );
    eprintln!("e2e took {:?}", started.elapsed());
}

/// Guest A is SIGKILLed a few seconds into the level. The daemon sees its
/// transport go, keeps the session running, and removes A after the grace;
/// guest B plays on to the normal end with no desync (a roster removal that
/// B applied differently from the host would show up as snapshot
/// mismatches), well past the grace.
#[test]
fn a_guest_killed_mid_level_is_removed_and_the_other_guest_finishes() {
    let started = Instant::now();
    let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
    let (_files, mut children, here, lobby) = stage();
    let Lobby { url, addr } = lobby;

    // Late join off: the session leaves the lobby at its start, which is
    // how this test sees the level running.
    let host = daemon::host(&here, &url)
        .args(["--bots", "1", "--no-late-join"])
        .one_level(2)
        .metrics()
        .spawn(&mut children);
    let code = host.session_code();

    let a = children.push(
        join_cmd(&here, &url, &code, "ga")
            .spawn()
            .expect("spawn join A"),
    );
    let b = children.push(
        join_cmd(&here, &url, &code, "gb")
            .spawn()
            .expect("spawn join B"),
    );

    // The level is running (the session left the lobby), for a few
    // seconds (90 ticks at 30 Hz).
    wait_unlisted(&addr, &code);
    host.wait_ticks(90, Duration::from_secs(30));
    // A's seat: guests are seated in connection order, slot = guests - 1.
    let (_, a_connected) = host
        .log
        .wait_for(Duration::from_secs(5), "A connected", |l| {
            l.contains("guest connected") && l.contains("name=ga")
        });
    let a_guests: usize = a_connected
        .split("guests=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no guest count in: {a_connected}"));
    let a_slot = a_guests - 1;
    assert!(
        children.0[a].try_wait().expect("try_wait").is_none(),
        "guest A ended before it was killed"
    );
    let killed_at = Instant::now();
    children.0[a].kill().expect("SIGKILL guest A");
    let status = wait_exit(&mut children.0[a], Duration::from_secs(10), "guest A");
    assert_eq!(status.signal(), Some(9), "guest A: {status}");

    // The daemon notices A's transport is gone (ICE consent: ~5 s).
    let (lost_at, lost) = host.log.wait_for(Duration::from_secs(40), "A lost", |l| {
        l.contains("guest transport lost") && l.contains(&format!("slot={a_slot} "))
    });
    eprintln!(
        "A killed; the daemon saw it lost {:?} later: {lost}",
        lost_at - killed_at
    );

    // B plays on to the end of the level.
    let outs = outputs_of(&mut children, &[b], Duration::from_secs(180), "guest B");
    let e = &outs[0];
    let report = successful_report(e, "guest B");
    // A normal end of a 1-level run: the level completed, or (a legitimate
    // bot outcome) every remaining player died. host-shutdown would mean
    // the 20 000-tick safety stop or a SIGTERM, neither of which happens.
    let reason = report["endReason"].as_str().unwrap_or_default().to_owned();
    match reason.as_str() {
        "completed" => assert_eq!(report["levelsCompleted"], 1, "{report}"),
        "team-eliminated" => assert_eq!(report["levelsCompleted"], 0, "{report}"),
        other => panic!("guest B ended with {other}: {report}"),
    }
    assert_eq!(report["desyncs"], 0, "{report}");
    assert!(report["ticks"].as_u64().unwrap_or(0) > 0, "{report}");
    assert_ne!(report["playerId"], serde_json::Value::Null, "{report}");
    let b_err = String::from_utf8_lossy(&e.out.stderr);
    assert!(
        !b_err.contains("bundle lacks a roster member's input")
            && !b_err.contains("out of sequence"),
        "guest B's roster diverged from the host's: {b_err}"
    );
    // The session outlived A's grace: the daemon's removal tick (the first
    // tick after lost + grace) came before the end B saw.
    assert!(
        e.at >= lost_at + grace,
        "B ended {:?} after A was seen lost, within the {grace:?} grace",
        e.at - lost_at
    );

    // The daemon's own account: both guests had joined, the same end.
    let want = if reason == "completed" {
        "Completed"
    } else {
        "TeamEliminated"
    };
    let (_, over) = host
        .log
        .wait_for(Duration::from_secs(30), "session over", |l| {
            l.contains("session over") && l.contains(&code)
        });
    assert!(over.contains(&format!("Some({want})")), "{over}");
    assert!(over.contains("joined=2"), "{over}");
    // The synchronized removal itself: exactly one player left the roster,
    // not B, no earlier than the grace after A's transport was seen lost.
    let removals = host
        .log
        .matching(|l| l.contains("player removed from the roster"));
    assert_eq!(removals.len(), 1, "{removals:?}");
    let (removed_at, removed) = &removals[0];
    let b_id = report["playerId"].as_str().unwrap_or_default();
    assert!(removed.contains("player=guest-"), "{removed}");
    assert!(
        !removed.contains(&format!("player={b_id}")),
        "B was removed: {removed}"
    );
    assert!(
        *removed_at + Duration::from_secs(1) >= lost_at + grace,
        "removed {:?} after the loss, before the {grace:?} grace ran out",
        *removed_at - lost_at
    );
    // Only A's seat was lost while A's grace ran (B stayed connected).
    let lost_lines: Vec<String> = host
        .log
        .matching(|l| l.contains("guest transport lost"))
        .into_iter()
        .filter(|(t, _)| *t <= lost_at + grace)
        .map(|(_, l)| l)
        .collect();
    assert_eq!(lost_lines.len(), 1, "{lost_lines:?}");
    eprintln!(
        "guest-killed e2e took {:?}; B ended {:?} after the kill",
        started.elapsed(),
        e.at - killed_at
    );
}

/// The daemon is SIGKILLed a few seconds into the level: both guests end
/// with `host-disconnected` (exit 3, the report still printed) once the
/// grace has run out, and within a bounded margin.
#[test]
fn when_the_host_is_killed_guests_end_with_host_disconnected() {
    let started = Instant::now();
    let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
    let (_files, mut children, here, lobby) = stage();
    let Lobby { url, addr } = lobby;

    let host = daemon::host(&here, &url)
        .args(["--start-when", "2", "--levels", "1", "--no-late-join"])
        .metrics()
        .spawn(&mut children);
    let code = host.session_code();
    let guests = two_guests(&mut children, &here, &url, &code);

    // The level is running, for a few seconds (90 ticks at 30 Hz).
    wait_unlisted(&addr, &code);
    host.wait_ticks(90, Duration::from_secs(30));
    for &g in &guests {
        assert!(
            children.0[g].try_wait().expect("try_wait").is_none(),
            "a guest ended before the host was killed"
        );
    }
    let killed_at = Instant::now();
    children.0[host.idx].kill().expect("SIGKILL the daemon");
    let status = wait_exit(
        &mut children.0[host.idx],
        Duration::from_secs(10),
        "the daemon",
    );
    assert_eq!(status.signal(), Some(9), "daemon: {status}");

    let bound = Duration::from_secs(60);
    let outs = outputs_of(&mut children, &guests, bound, "the guests");
    for (i, e) in outs.iter().enumerate() {
        let what = format!("guest {}", i + 1);
        let took = e.at - killed_at;
        assert_eq!(
            e.out.status.code(),
            Some(3),
            "{what}: {} after {took:?}: {}",
            e.out.status,
            String::from_utf8_lossy(&e.out.stderr)
        );
        let report = report_of(e, &what);
        assert_eq!(report["endReason"], "host-disconnected", "{report}");
        assert_eq!(report["levelsCompleted"], 0, "{report}");
        // The host's counts come with its end table, which never came.
        assert!(report["desyncs"].is_null(), "{report}");
        assert_eq!(report["snapshotCorrections"], 0, "{report}");
        assert!(report["ticks"].as_u64().unwrap_or(0) > 0, "{report}");
        let err = String::from_utf8_lossy(&e.out.stderr);
        assert!(
            err.contains("ended abnormally") && err.contains("HostDisconnected"),
            "{what} stderr: {err}"
        );
        // Not before the grace ran out (the loss is noticed at the kill at
        // the earliest), and within the bound.
        assert!(took >= grace, "{what} ended {took:?} after the kill");
        assert!(took <= bound, "{what} ended {took:?} after the kill");
        eprintln!("{what} ended {took:?} after the daemon was killed");
    }
    eprintln!("host-killed e2e took {:?}", started.elapsed());
}
