//! Memory capped by bytes, not only by sessions (issue 24, finding 5):
//! the offers, answers and `meta` that the sessions of one address, and of
//! the whole lobby, hold have budgets next to the session-count caps. A
//! create, update or answer that would pass one is refused and changes
//! nothing. Runs on the backend the environment selects.

mod common;

use std::net::{IpAddr, Ipv4Addr};

use common::{SDP, TestServer, assert_error, client_from, retry_after_secs, sdp_of};
use serde_json::{Value, json};

/// The budget both tests use, in bytes.
const BUDGET: u64 = 10_000;

fn body_with_offer(offer: &str) -> Value {
    json!({"name": "Bytes", "hostName": "Ada", "maxPlayers": 4, "build": "b1",
           "hostKind": "player", "offer": offer})
}

async fn create(srv: &TestServer, offer: &str) -> reqwest::Response {
    srv.put(&body_with_offer(offer), None).await
}

async fn created(res: reqwest::Response) -> (String, String) {
    assert_eq!(res.status(), 201, "create refused");
    let v: Value = res.json().await.unwrap();
    (
        v["code"].as_str().unwrap().to_owned(),
        v["hostToken"].as_str().unwrap().to_owned(),
    )
}

async fn update_offer(srv: &TestServer, code: &str, token: &str, offer: &str) -> reqwest::Response {
    let mut body = body_with_offer(offer);
    body["code"] = json!(code);
    srv.put(&body, Some(token)).await
}

async fn answer_with(srv: &TestServer, code: &str, answer: &str) -> reqwest::Response {
    srv.client
        .post(srv.url(&format!("/session/{code}/answer")))
        .json(&json!({"round": 1, "answer": answer, "name": "joiner"}))
        .send()
        .await
        .expect("POST answer")
}

async fn open_round(srv: &TestServer, code: &str) -> Value {
    let view: Value = srv.get_session(code).await.json().await.unwrap();
    view["round"].clone()
}

#[tokio::test]
async fn the_bytes_one_address_holds_are_capped() {
    let srv = TestServer::start_rate_limited(|c| {
        c.max_session_bytes_per_address = BUDGET;
    })
    .await;
    let (big, bigger, big_answer) = (sdp_of(4_000), sdp_of(6_000), sdp_of(3_000));
    let (a, a_token) = created(create(&srv, &big).await).await;
    created(create(&srv, &big).await).await;
    // 12,000 bytes would be held: refused, with the wait for a place.
    let refused = create(&srv, &big).await;
    assert!(retry_after_secs(&refused) >= srv.config.session_ttl);
    let message = assert_error(refused, 429, "rate_limited").await;
    assert!(message.contains("bytes"), "{message}");
    let (c, _) = created(create(&srv, SDP).await).await;

    // An update that grows past the budget changes nothing.
    assert_error(
        update_offer(&srv, &a, &a_token, &bigger).await,
        429,
        "rate_limited",
    )
    .await;
    assert_eq!(open_round(&srv, &a).await, 1);
    // So does an answer that would: the round stays open for a smaller one.
    assert_error(
        answer_with(&srv, &c, &big_answer).await,
        429,
        "rate_limited",
    )
    .await;
    assert_eq!(open_round(&srv, &c).await, 1);
    assert_eq!(answer_with(&srv, &c, SDP).await.status(), 201);

    // A deleted session frees its bytes.
    assert_eq!(srv.delete_session(&a, &a_token).await.status(), 204);
    created(create(&srv, &big).await).await;
    // Another address has a budget of its own.
    let other = client_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    let res = other
        .put(srv.url("/session"))
        .json(&body_with_offer(&big))
        .send()
        .await
        .expect("PUT from 127.0.0.2");
    assert_eq!(res.status(), 201);
}

#[tokio::test]
async fn the_bytes_the_lobby_holds_are_capped() {
    let srv = TestServer::start_with(|c| c.max_session_bytes = BUDGET).await;
    let (big, bigger, big_answer) = (sdp_of(4_000), sdp_of(6_000), sdp_of(3_000));
    let (a, a_token) = created(create(&srv, &big).await).await;
    let (b, b_token) = created(create(&srv, &big).await).await;
    let refused = create(&srv, &big).await;
    assert!(retry_after_secs(&refused) >= 1);
    let message = assert_error(refused, 503, "lobby_full").await;
    assert!(message.contains("bytes"), "{message}");
    let (c, _) = created(create(&srv, SDP).await).await;

    assert_error(answer_with(&srv, &c, &big_answer).await, 503, "lobby_full").await;
    assert_eq!(open_round(&srv, &c).await, 1);
    assert_eq!(answer_with(&srv, &c, SDP).await.status(), 201);
    assert_error(
        update_offer(&srv, &a, &a_token, &bigger).await,
        503,
        "lobby_full",
    )
    .await;
    assert_eq!(open_round(&srv, &a).await, 1);

    assert_eq!(srv.delete_session(&b, &b_token).await.status(), 204);
    created(create(&srv, &big).await).await;
}

#[tokio::test]
async fn disable_rate_limits_lifts_the_byte_budget_per_address() {
    let srv = TestServer::start_with(|c| c.max_session_bytes_per_address = 1_000).await;
    assert!(srv.config.disable_rate_limits);
    let big = sdp_of(4_000);
    for _ in 0..3 {
        created(create(&srv, &big).await).await;
    }
}
