//! The lobby against one busy or hostile client, on loopback (issue 14): a
//! page's walk is bounded whatever the query, a burst of host updates
//! reaches subscribers coalesced, and the sweep keeps the lobby index
//! consistent when its commit fails. Every wait is bounded.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{SseReader, TestServer};
use lobby_server::lobby_index::PAGE_SCAN_PER_RESULT;
use serde_json::{Value, json};

/// Walks a query page by page (`limit=1`); returns the codes seen and the
/// candidates each page examined.
async fn walk(srv: &TestServer, query: &str) -> (Vec<String>, Vec<u64>) {
    let mut seen = Vec::new();
    let mut examined = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..400 {
        let before = srv.state.lobby.entries_examined();
        let page = match &cursor {
            Some(c) => srv.lobby(&format!("?{query}&limit=1&cursor={c}")).await,
            None => srv.lobby(&format!("?{query}&limit=1")).await,
        };
        examined.push(srv.state.lobby.entries_examined() - before);
        for s in page["sessions"].as_array().unwrap() {
            seen.push(s["code"].as_str().unwrap().to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (seen, examined),
        }
    }
    panic!("{query}: the walk did not end within 400 pages");
}

/// Issue 14, finding 2: a filter that matches nothing once walked every session.
#[tokio::test]
async fn a_page_examines_a_bounded_number_of_candidates_and_hands_back_a_cursor() {
    let srv = TestServer::start().await;
    // 300 sessions: "Campfire" ones of build b1, "Ember" ones of b2,
    // interleaved, and every 60th a "Campfire" of b2 (a rare match).
    let mut rare = Vec::new();
    for i in 0..300 {
        let (name, build) = match i {
            i if i % 60 == 0 => (format!("Campfire {i}"), "b2"),
            i if i % 2 == 0 => (format!("Campfire {i}"), "b1"),
            i => (format!("Ember {i}"), "b2"),
        };
        let (code, _) = srv.create_with(json!({"name": name, "build": build})).await;
        if name.starts_with("Campfire") && build == "b2" {
            rare.push(code);
        }
        srv.clock.advance_ms(1);
    }
    let budget = PAGE_SCAN_PER_RESULT as u64;
    // Nothing matches: each page examines at most its budget, comes back
    // empty with a cursor, and the walk ends.
    for query in ["q=campfirex", "q=campfire%20ember", "q=ember&build=b1"] {
        let (seen, examined) = walk(&srv, query).await;
        assert!(seen.is_empty(), "{query}");
        assert!(
            examined.iter().all(|&n| n <= budget),
            "{query}: a page examined more than {budget}: {examined:?}"
        );
        assert!(
            examined.len() >= 2,
            "{query}: ~150 candidates take more than one page: {examined:?}"
        );
        let page = srv.lobby(&format!("?{query}")).await;
        assert_eq!(
            (page["total"].clone(), page["totalCapped"].clone()),
            (json!(0), json!(false))
        );
    }
    // Rare matches: short pages, but every match exactly once, newest first.
    let (seen, examined) = walk(&srv, "q=campfire&build=b2").await;
    rare.reverse();
    assert_eq!(seen, rare);
    assert!(examined.iter().all(|&n| n <= budget), "{examined:?}");
    // Common matches: full pages, as before.
    let (seen, examined) = walk(&srv, "q=campfire&build=b1").await;
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 145);
    assert!(examined.iter().all(|&n| n <= 3), "{examined:?}");
}

/// Issue 14, finding 8: every host update went to every subscriber at once.
#[tokio::test]
async fn a_burst_of_host_updates_reaches_a_subscriber_as_one_and_before_the_removal() {
    let srv = TestServer::start_rate_limited(|c| {
        c.updates_per_minute = 10_000;
        // Nothing falls due during the test: only the removal releases what is held.
        c.feed_update_interval_ms = 600_000;
    })
    .await;
    let mut events = SseReader::new(srv.lobby_events("").await);
    let (code, token) = srv.create().await;
    for i in 1..=40 {
        let res = srv
            .put(
                &json!({"code": code, "name": format!("Burst {i}")}),
                Some(&token),
            )
            .await;
        assert_eq!(res.status(), 200);
    }
    // Pages show the latest state at once.
    assert_eq!(srv.lobby("").await["sessions"][0]["name"], "Burst 40");
    let res = srv.delete_session(&code, &token).await;
    assert_eq!(res.status(), 204);
    let mut seen = Vec::new();
    while let Some((name, data)) = events.next_event(Duration::from_secs(5)).await {
        let data: Value = serde_json::from_str(&data).unwrap();
        let done = name == "removed";
        seen.push((name, data["name"].clone()));
        if done {
            break;
        }
    }
    assert_eq!(
        seen,
        [
            ("added".into(), json!("Friday co-op")),
            ("updated".into(), json!("Burst 1")),
            ("updated".into(), json!("Burst 40")),
            ("removed".into(), Value::Null),
        ]
    );
}

/// The held update goes out on its own when the interval has passed.
#[tokio::test]
async fn held_host_updates_go_out_once_per_interval_with_the_latest_state() {
    const INTERVAL_MS: u64 = 200;
    let srv = TestServer::start_rate_limited(|c| {
        c.updates_per_minute = 10_000;
        c.feed_update_interval_ms = INTERVAL_MS;
    })
    .await;
    let (code, token) = srv.create().await;
    let mut events = SseReader::new(srv.lobby_events("").await);
    let started = Instant::now();
    for i in 1..=60 {
        srv.put(
            &json!({"code": code, "name": format!("Burst {i}")}),
            Some(&token),
        )
        .await;
    }
    let burst = started.elapsed();
    let mut updates = Vec::new();
    while let Some((name, data)) = events.next_event(Duration::from_secs(5)).await {
        assert_eq!(name, "updated");
        let name = serde_json::from_str::<Value>(&data).unwrap()["name"].clone();
        updates.push(name.clone());
        if name == "Burst 60" {
            break;
        }
    }
    assert_eq!(
        updates.last(),
        Some(&json!("Burst 60")),
        "the latest state wins"
    );
    // At once, then at most one per interval over the burst, then the last.
    let most = 2 + (burst.as_millis() as u64 / INTERVAL_MS) as usize;
    assert!(
        updates.len() <= most.min(60),
        "{} events for 60 updates in {burst:?}: {updates:?}",
        updates.len()
    );
}

/// Issue 14: a sweep whose commit failed left its sessions listed.
#[tokio::test]
async fn a_sweep_whose_commit_fails_still_unlists_expired_sessions_for_subscribers() {
    let srv = TestServer::start_with(|c| c.session_ttl = 60).await;
    let (code, _) = srv.create().await;
    let mut events = SseReader::new(srv.lobby_events("").await);
    // The store goes away first, so no sweep can succeed after the expiry.
    srv.state.store.close().await;
    srv.clock.advance_ms(61_000);
    assert!(
        lobby_server::sessions::sweep(&srv.state).await.is_err(),
        "the commit fails"
    );
    // No page is read: the sweep itself unlisted the session.
    assert_eq!(
        events.next_event(Duration::from_secs(5)).await,
        Some(("removed".into(), json!({"code": code}).to_string()))
    );
    assert_eq!(srv.state.lobby.len(), 0);
}
