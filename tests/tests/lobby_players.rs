//! Issue 24: the lobby's `players` follows admissions. A daemon used to
//! republish `players` only with its next round, so a joiner showed up in
//! the lobby only when somebody answered that round (20 s or more later, or
//! never). Now the daemon publishes the count as soon as the session
//! admits a guest, with the round left open.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::time::Duration;

use common::{Lobby, daemon, http_get, join_cmd, stage, wait_until_every};

/// The session's `players` as a joiner reads it.
fn players(addr: &str, code: &str) -> u64 {
    let view: serde_json::Value =
        serde_json::from_str(&http_get(addr, &format!("/session/{code}"))).expect("session JSON");
    view["players"].as_u64().expect("players")
}

#[test]
fn the_lobby_counts_a_joiner_within_a_second_of_its_admission() {
    let (_files, mut children, here, lobby) = stage();
    let Lobby { url, addr } = lobby;
    // Two guests start it: after the first the session waits in its lobby
    // with a round open.
    let host = daemon::host(&here, &url).one_level(2).spawn(&mut children);
    let code = host.session_code();
    let before = players(&addr, &code);

    children.push(
        join_cmd(&here, &url, &code, "first")
            .spawn()
            .expect("spawn join"),
    );
    let (connected, _) = host
        .log
        .wait_for(Duration::from_secs(30), "the joiner connecting", |l| {
            l.contains("guest connected")
        });
    // Polled finely, bounded: the admission (the hello) follows the
    // connection within milliseconds, the lobby update within one round
    // trip.
    let counted = wait_until_every(
        Duration::from_millis(20),
        Duration::from_secs(10).saturating_sub(connected.elapsed()),
        &format!(
            "players {} (from {before}) after the joiner connected",
            before + 1
        ),
        || players(&addr, &code) == before + 1,
    );
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
