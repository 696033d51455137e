//! Issue 45: a moderator ends a daemon's session through the admin API;
//! the daemon hears `410 session_ended`, logs it once and publishes no
//! more rounds of that session, and joiners hear why it is gone.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::time::Duration;

use common::daemon::{self, DAEMON_NAME};
use common::{Children, Lobby, Site, admin_request, http_request, start_lobby_with};

const TOKEN: &str = "e2e-moderator-token-0123456789";

#[test]
fn a_session_a_moderator_ends_is_not_published_again_by_its_daemon() {
    let db = tempfile::tempdir().expect("tempdir");
    let tokens = db.path().join("admin-tokens");
    std::fs::write(&tokens, format!("mod:{TOKEN}\n")).expect("token file");
    let mut children = Children::default();
    let here = Site::loopback();
    let token_arg = tokens.display().to_string();
    let Lobby { url, addr } = start_lobby_with(
        &mut children,
        db.path(),
        &here,
        &["--admin-token-file", &token_arg],
    );
    let host = daemon::host(&here, &url).one_level(2).spawn(&mut children);
    let code = host.session_code();
    // Its round is open: the daemon long-polls for an answer.
    let (status, _) = http_request(&addr, "GET", &format!("/session/{code}"), None);
    assert_eq!(status, 200);

    let (status, body) = admin_request(
        &addr,
        TOKEN,
        "POST",
        &format!("/admin/sessions/{code}/end"),
        Some(r#"{"reason":"e2e"}"#),
    );
    assert_eq!(status, 204, "{body}");
    host.log.wait_for(
        Duration::from_secs(30),
        "the daemon hearing the moderator",
        |l| l.contains("a moderator of the lobby ended this session"),
    );
    let (status, body) = http_request(&addr, "GET", &format!("/session/{code}"), None);
    assert_eq!(status, 410, "{body}");
    assert!(body.contains("session_ended"), "{body}");
    // A few seconds on: no retries of that session (each would log again or
    // warn of a failed publish), and the lobby lists nothing of it.
    std::thread::sleep(Duration::from_secs(3));
    let moderated = host
        .log
        .count(|l| l.contains("a moderator of the lobby ended"));
    let retried = host.log.count(|l| l.contains("publishing a round failed"));
    assert_eq!((moderated, retried), (1, 0));
    let (_, audit) = admin_request(&addr, TOKEN, "GET", "/admin/audit", None);
    assert!(audit.contains(&format!("\"target\":\"{code}\"")), "{audit}");
}

/// A daemon whose name the lobby's word list refuses publishes its session
/// under a neutral name instead (and says so), rather than failing.
#[test]
fn a_daemon_whose_name_the_lobby_refuses_publishes_a_neutral_one() {
    let db = tempfile::tempdir().expect("tempdir");
    let words = db.path().join("words");
    std::fs::write(&words, format!("{DAEMON_NAME}\n")).expect("word list");
    let mut children = Children::default();
    let here = Site::loopback();
    let words_arg = words.display().to_string();
    let Lobby { url, addr } = start_lobby_with(
        &mut children,
        db.path(),
        &here,
        &["--word-list-file", &words_arg],
    );
    let host = daemon::host(&here, &url).one_level(1).spawn(&mut children);
    let code = host.session_code();
    let (status, body) = http_request(&addr, "GET", &format!("/session/{code}"), None);
    assert_eq!(status, 200, "{body}");
    let view: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(view["name"], "campfire session");
    host.log.wait_for(
        Duration::from_secs(5),
        "the daemon saying its name was refused",
        |l| l.contains("refuses this session's name"),
    );
}
