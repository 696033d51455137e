//! `GET /lobby` as a CPU amplifier (issue 24, finding 4): a search of many
//! words is refused, and pages rendered afresh (a client-made cursor always
//! misses the page cache) draw on a per-address budget; cached pages do not.

mod common;

use std::net::{IpAddr, Ipv4Addr};

use common::{START_MS, TestServer, assert_error, client_from, retry_after_secs};
use serde_json::json;

/// A client-made cursor no page handed out: never in the page cache.
fn made_up_cursor(i: i64) -> String {
    let code = lobby_api::code::SessionCode::parse("22222222").unwrap();
    let position = lobby_api::lobby_order::LobbyPosition::new(START_MS + 1_000 + i, code);
    format!("?cursor={position}")
}

async fn get_lobby(client: &reqwest::Client, srv: &TestServer, query: &str) -> reqwest::Response {
    client
        .get(srv.url(&format!("/lobby{query}")))
        .send()
        .await
        .expect("GET /lobby")
}

#[tokio::test]
async fn a_search_of_more_than_eight_words_is_refused() {
    let srv = TestServer::start().await;
    srv.create_with(json!({"name": "a b c d e f g h"})).await;
    let eight = srv.lobby("?q=a%20b%20c%20d%20e%20f%20g%20h").await;
    assert_eq!(eight["total"], 1);
    // Repeated words count once.
    let repeated = srv.lobby(&format!("?q={}", ["a"; 20].join("%20"))).await;
    assert_eq!(repeated["total"], 1);
    let nine = "?q=a%20b%20c%20d%20e%20f%20g%20h%20i";
    let message = assert_error(
        get_lobby(&srv.client, &srv, nine).await,
        400,
        "invalid_field",
    )
    .await;
    assert!(message.contains("8 words"), "{message}");
    assert_error(srv.lobby_events(nine).await, 400, "invalid_field").await;
}

#[tokio::test]
async fn pages_rendered_afresh_are_budgeted_per_address_and_cached_pages_are_free() {
    let srv = TestServer::start_rate_limited(|c| {
        c.lobby_pages_per_minute = 1;
        c.lobby_page_burst = 3;
    })
    .await;
    srv.create().await;
    let client = &srv.client;
    // The first page is rendered (and cached), then two made-up cursors.
    assert_eq!(get_lobby(client, &srv, "").await.status(), 200);
    for i in 0..2 {
        let res = get_lobby(client, &srv, &made_up_cursor(i)).await;
        assert_eq!(res.status(), 200);
    }
    let refused = get_lobby(client, &srv, &made_up_cursor(2)).await;
    let retry_after = retry_after_secs(&refused);
    assert!((1..=60).contains(&retry_after), "Retry-After {retry_after}");
    assert_error(refused, 429, "rate_limited").await;
    // Served from the cache: not charged.
    assert_eq!(get_lobby(client, &srv, "").await.status(), 200);
    // Another address has its own budget.
    let other = client_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    assert_eq!(
        get_lobby(&other, &srv, &made_up_cursor(3)).await.status(),
        200
    );
}

#[tokio::test]
async fn disable_rate_limits_lifts_the_lobby_page_budget() {
    let srv = TestServer::start_with(|c| {
        c.lobby_pages_per_minute = 1;
        c.lobby_page_burst = 1;
    })
    .await;
    assert!(srv.config.disable_rate_limits);
    for i in 0..5 {
        let res = get_lobby(&srv.client, &srv, &made_up_cursor(i)).await;
        assert_eq!(res.status(), 200);
    }
}
