//! Connect/close soak with real processes and real WebRTC on loopback: 200
//! `host-daemon join` guests join always-on daemon sessions and leave again,
//! a few at a time; afterwards the daemon's open file descriptors are back
//! where they were and its RSS has not grown by more than a few leaked
//! connections would take.
//!
//! The daemon keeps 4 sessions open that never start (`--start-when 7`, at
//! most 4 guests ever in one), so every guest goes through the whole
//! handshake, admission and a lobby-phase leave, which frees its seat and
//! reopens a round. Every WebRTC connection lives on the daemon's one UDP
//! socket, so a connection that is never closed shows in its connection
//! gauge (and in its memory), not in its descriptors, which are checked
//! too.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Children, Site, daemon, start_lobby_with, wait_until};

/// Guests in the soak.
const GUESTS: usize = 200;
/// Sessions the daemon keeps open; one joiner lane per session.
const LANES: usize = 4;
/// Guests joined before the baseline is taken (allocator and pools warm).
const WARM_UP: usize = 20;

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc/PID/fd")
        .count()
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Runs `count` joiners on `code` one after another; each joins, stays
/// 0.3 s and leaves. Returns how many reported `left`.
fn lane(url: String, code: String, count: usize) -> usize {
    let mut left = 0;
    for i in 0..count {
        let out = daemon::host_daemon(&Site::loopback())
            .args(["join", &code, "--server", &url, "--leave-after", "0.3"])
            .args(["--bind-ip", "127.0.0.1"])
            .args(["--name", &format!("soak-{i}"), "--connect-timeout", "10"])
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("run host-daemon join");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "joiner {i} on {code}: {}: {stdout} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value =
            serde_json::from_str(stdout.trim()).expect("one JSON report line");
        if report["endReason"] == "left" {
            left += 1;
        }
    }
    left
}

/// Runs `per_lane` joiners on each session code at once.
fn run_lanes(url: &str, codes: &[String], per_lane: usize) -> usize {
    let lanes: Vec<_> = codes
        .iter()
        .map(|code| {
            let (url, code) = (url.to_owned(), code.clone());
            std::thread::spawn(move || lane(url, code, per_lane))
        })
        .collect();
    lanes.into_iter().map(|l| l.join().expect("lane")).sum()
}

#[test]
fn two_hundred_guests_join_and_leave_and_the_daemon_stays_flat() {
    let started = Instant::now();
    let db = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    // The soak makes far more joins from one address than a player would.
    let url = start_lobby_with(
        &mut children,
        db.path(),
        &Site::loopback(),
        &["--disable-rate-limits"],
    )
    .url;

    let lanes = LANES.to_string();
    let host = daemon::host(&Site::loopback(), &url)
        .name("soak")
        .args(["--bots", "0", "--max-players", "8", "--start-when", "7"])
        .args(["--sessions", &lanes])
        .metrics()
        .quiet()
        .spawn(&mut children);
    let pid = host.pid;
    let codes = host.session_codes(LANES);

    let settled = |expect_guests: f64| {
        wait_until(Duration::from_secs(30), "guests gone", || {
            host.metric("campfire_daemon_guests") == expect_guests
        });
    };

    let left = run_lanes(&url, &codes, WARM_UP / LANES);
    assert_eq!(left, WARM_UP);
    settled(0.0);
    // Every session is back to one open round: one connection each, all on
    // the one socket (the gauge is sampled once a second).
    let rounds_only = || {
        wait_until(Duration::from_secs(30), "connections gone", || {
            host.metric("campfire_daemon_webrtc_connections") == LANES as f64
        });
    };
    rounds_only();
    let fds_before = open_fds(pid);
    let rss_before = rss_kib(pid);

    let left = run_lanes(&url, &codes, (GUESTS - WARM_UP) / LANES);
    assert_eq!(left, GUESTS - WARM_UP, "every guest got in and left");
    settled(0.0);
    rounds_only();
    assert_eq!(
        host.metric("campfire_daemon_sessions"),
        LANES as f64,
        "the sessions never started and are all still open"
    );
    // Closing is asynchronous: give the last sockets a moment to go.
    let mut fds_after = open_fds(pid);
    let _ = std::panic::catch_unwind(|| {
        wait_until(Duration::from_secs(10), "descriptors back", || {
            open_fds(pid) <= fds_before
        })
    });
    fds_after = fds_after.min(open_fds(pid));
    let rss_after = rss_kib(pid);
    eprintln!(
        "soak: {GUESTS} guests in {:?}; daemon fds {fds_before} -> {fds_after}, \
         RSS {rss_before} KiB -> {rss_after} KiB",
        started.elapsed()
    );
    assert!(
        fds_after <= fds_before,
        "descriptors leaked: {fds_before} before, {fds_after} after"
    );
    // A leaked connection would show in the gauge above; its memory (tens
    // of KB each) is checked too. Allow allocator noise of a few MB.
    assert!(
        rss_after <= rss_before + 6 * 1024,
        "RSS grew from {rss_before} KiB to {rss_after} KiB"
    );
}
