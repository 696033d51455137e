//! Issue 24: the lobby's `players` follows admissions. A daemon used to
//! republish `players` only with its next round, so a joiner showed up in
//! the lobby only when somebody answered that round (20 s or more later, or
//! never). Now the daemon publishes the count as soon as the session
//! admits a guest, with the round left open.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    Children, HOST_LOG, Lobby, Site, capture_stderr, host_cmd, http_get, join_cmd, lines_of,
    session_code, start_lobby, wait_log,
};

/// The session's `players` as a joiner reads it.
fn players(addr: &str, code: &str) -> u64 {
    let view: serde_json::Value =
        serde_json::from_str(&http_get(addr, &format!("/session/{code}"))).expect("session JSON");
    view["players"].as_u64().expect("players")
}

#[test]
fn the_lobby_counts_a_joiner_within_a_second_of_its_admission() {
    let db = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let here = Site::loopback();
    let Lobby { url, addr } = start_lobby(&mut children, db.path(), &here);
    // Two guests start it: after the first the session waits in its lobby
    // with a round open.
    let mut host = host_cmd(&here, &url, &[])
        .args(["--start-when", "2", "--levels", "1", "--sessions", "1"])
        .env("RUST_LOG", HOST_LOG)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn host-daemon host");
    let host_lines = lines_of(&mut host);
    let host_log = capture_stderr(&mut host, "host");
    children.push(host);
    let code = session_code(&host_lines);
    let before = players(&addr, &code);

    children.push(
        join_cmd(&here, &url, &code, "first")
            .spawn()
            .expect("spawn join"),
    );
    let (connected, _) = wait_log(
        &host_log,
        Duration::from_secs(30),
        "the joiner connecting",
        |l| l.contains("guest connected"),
    );
    // Polled, bounded: the admission (the hello) follows the connection
    // within milliseconds, the lobby update within one round trip.
    let deadline = connected + Duration::from_secs(10);
    let counted = loop {
        if players(&addr, &code) == before + 1 {
            break Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "players still {before} 10 s after the joiner connected"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!(
        "players {before} -> {} {:?} after the joiner connected",
        before + 1,
        counted - connected
    );
    assert!(
        counted - connected < Duration::from_secs(1),
        "the lobby counted the joiner {:?} after it connected",
        counted - connected
    );
    let view: serde_json::Value =
        serde_json::from_str(&http_get(&addr, &format!("/session/{code}"))).expect("session JSON");
    assert!(
        view["round"].is_u64(),
        "a seat is still free, so a round stays open: {view}"
    );
}
