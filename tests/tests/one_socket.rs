//! Issue 27 end to end: one `host-daemon host` keeps five sessions of four
//! guests, all twenty guests come from one `host-daemon swarm` process, and
//! while every session runs, `ss -uanp` shows the daemon holding exactly
//! one UDP socket, which carries all twenty connections. Every swarm guest
//! plays its level to the end.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Children, Site, daemon, lines_of, next_line, start_lobby, wait_until};

const SESSIONS: usize = 5;
const PER_SESSION: usize = 4;

/// The UDP sockets `ss` lists for process `pid`.
fn udp_sockets_of(pid: u32) -> Vec<String> {
    let out = Command::new("ss")
        .args(["-uanp"])
        .output()
        .expect("run ss -uanp");
    assert!(out.status.success(), "ss -uanp failed");
    let needle = format!("pid={pid},");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(&needle))
        .map(str::to_owned)
        .collect()
}

#[test]
fn twenty_guests_share_the_daemons_one_udp_socket() {
    let db = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let here = Site::loopback();
    let url = start_lobby(&mut children, db.path(), &here).url;

    let sessions = SESSIONS.to_string();
    let host = daemon::host(&here, &url)
        .name("one socket")
        .args(["--bots", "0", "--max-players", "5", "--start-when", "4"])
        .args([
            "--levels",
            "1",
            "--max-ticks",
            "900",
            "--sessions",
            &sessions,
        ])
        .metrics()
        .quiet()
        .spawn(&mut children);
    let codes = host.session_codes(SESSIONS);

    let mut swarm = daemon::host_daemon(&here)
        .args(["swarm", "--server", &url, "--per-session"])
        .arg(PER_SESSION.to_string())
        .args(["--seconds", "240", "--bind-ip", "127.0.0.1"])
        .args(&codes)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn host-daemon swarm");
    let swarm_lines = lines_of(&mut swarm);
    children.push(swarm);

    // Every guest admitted and every session running.
    let guests = (SESSIONS * PER_SESSION) as f64;
    wait_until(Duration::from_secs(120), "every guest in", || {
        host.metric("campfire_daemon_guests") >= guests
    });
    let sockets = udp_sockets_of(host.pid);
    assert_eq!(
        sockets.len(),
        1,
        "the daemon holds exactly one UDP socket:\n{}",
        sockets.join("\n")
    );
    // The connection count is sampled once a second.
    wait_until(
        Duration::from_secs(10),
        "the socket carrying every guest",
        || host.metric("campfire_daemon_webrtc_connections") >= guests,
    );

    // The sessions end at their tick limit; the swarm reports.
    let line = next_line(&swarm_lines, Duration::from_secs(120), "the swarm's report");
    let report: serde_json::Value = serde_json::from_str(&line).expect("one JSON line");
    eprintln!("swarm: {line}");
    assert_eq!(report["guests"], SESSIONS * PER_SESSION, "{line}");
    assert_eq!(report["connected"], SESSIONS * PER_SESSION, "{line}");
    assert_eq!(report["endedNormally"], SESSIONS * PER_SESSION, "{line}");
    assert_eq!(report["unreadable"], 0, "{line}");
    // Each guest answered most of the level's 900 bundles with an input,
    // sent on input runs: the recording repeats itself on most ticks.
    let per_guest = report["inputs"].as_u64().unwrap_or(0) / (SESSIONS * PER_SESSION) as u64;
    assert!(per_guest > 800, "{line}");
    let messages = report["inputMessages"].as_u64().unwrap_or(u64::MAX);
    assert!(
        messages * 2 < report["inputs"].as_u64().unwrap_or(0),
        "{line}"
    );
}
