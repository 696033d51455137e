//! Issue 14, attack 6: a stranger grabs an open round with an answer that
//! never connects. The daemon connects answers in the background and opens
//! the next round at once, so the real joiner loses one round, not the
//! daemon's connect timeout, and plays.
//!
//! Everything binds 127.0.0.1 (the junk answer's only candidate is
//! 127.0.0.1:9); every wait is bounded.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    Children, HOST_LOG, Lobby, Site, capture_stderr, host_cmd, http_request, join_cmd, lines_of,
    outputs_of, session_code, start_lobby, successful_report, wait_log,
};

/// The session's open round and its offer, from the joiner's view.
fn open_round(addr: &str, code: &str) -> Option<(u64, String)> {
    let (status, body) = http_request(addr, "GET", &format!("/session/{code}"), None);
    assert_eq!(status, 200, "GET /session/{code}: {body}");
    let view: serde_json::Value = serde_json::from_str(&body).expect("session JSON");
    Some((view["round"].as_u64()?, view["offer"].as_str()?.to_owned()))
}

/// A complete, well-formed answer to `offer` whose only ICE candidate is a
/// port nobody listens on: the lobby accepts it, the daemon applies it, and
/// the connection can never open.
fn junk_answer(offer: &str) -> String {
    let mid = offer
        .lines()
        .find_map(|l| l.strip_prefix("a=mid:"))
        .unwrap_or("0");
    let fingerprint = offer
        .lines()
        .find(|l| l.starts_with("a=fingerprint:"))
        .expect("the offer has a fingerprint");
    [
        "v=0",
        "o=- 4242 2 IN IP4 127.0.0.1",
        "s=-",
        "t=0 0",
        &format!("a=group:BUNDLE {mid}"),
        "m=application 9 UDP/DTLS/SCTP webrtc-datachannel",
        "c=IN IP4 127.0.0.1",
        "a=ice-ufrag:junkjunkjunk",
        "a=ice-pwd:junkjunkjunkjunkjunkjunkjunk",
        fingerprint,
        "a=setup:active",
        &format!("a=mid:{mid}"),
        "a=sctp-port:5000",
        "a=candidate:1 1 udp 2130706431 127.0.0.1 9 typ host",
        "a=end-of-candidates",
        "",
    ]
    .join("\r\n")
}

#[test]
fn a_round_grabbed_with_an_answer_that_never_connects_reopens_at_once() {
    let db = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let here = Site::loopback();
    let Lobby { url, addr } = start_lobby(&mut children, db.path(), &here);

    // A connect timeout long enough that waiting it out would be obvious.
    let mut host = host_cmd(&here, &url, &["--connect-timeout", "20"])
        .args(["--start-when", "1", "--levels", "1", "--sessions", "1"])
        .env("RUST_LOG", HOST_LOG)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn host-daemon host");
    let host_lines = lines_of(&mut host);
    let host_log = capture_stderr(&mut host, "host");
    children.0.push(host);
    let code = session_code(&host_lines);

    // The stranger reads the open round and grabs it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (round, offer) = loop {
        if let Some(open) = open_round(&addr, &code) {
            break open;
        }
        assert!(Instant::now() < deadline, "no round opened within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    let answer =
        serde_json::json!({"round": round, "answer": junk_answer(&offer), "name": "grabber"});
    let (status, body) = http_request(
        &addr,
        "POST",
        &format!("/session/{code}/answer"),
        Some(&answer.to_string()),
    );
    assert_eq!(status, 201, "the junk answer wins the round: {body}");
    let grabbed = Instant::now();

    // The next round opens while the junk connection is still in flight.
    let reopened = loop {
        if open_round(&addr, &code).is_some_and(|(r, _)| r > round) {
            break Instant::now();
        }
        assert!(
            grabbed.elapsed() < Duration::from_secs(30),
            "no new round within 30 s of the grab"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // The real joiner takes the new round and plays the level through.
    children.0.push(
        join_cmd(&here, &url, &code, "real")
            .spawn()
            .expect("spawn join"),
    );
    let joiner = children.0.len() - 1;
    let (failed, line) = wait_log(
        &host_log,
        Duration::from_secs(60),
        "junk join failing",
        |l| l.contains("a joiner's connection failed"),
    );
    assert!(
        reopened < failed,
        "the daemon waited for the junk connection ({line}) before reopening"
    );
    eprintln!(
        "round reopened {:?} after the grab; the junk connection failed after {:?}",
        reopened - grabbed,
        failed - grabbed
    );
    let out = outputs_of(
        &mut children,
        &[joiner],
        Duration::from_secs(120),
        "the joiner",
    );
    let report = successful_report(&out[0], "the real joiner");
    assert_eq!(report["endReason"], "completed", "{report}");
    assert_eq!(report["desyncs"], 0, "{report}");
}
