//! The operator's admin API against the real server, on SQLite or (with
//! `LOBBY_TEST_DATABASE=postgres`) PostgreSQL: admin tokens, blocks and
//! their effect on the public API, the audit log.

mod common;

use std::net::IpAddr;

use common::{SDP, TestServer, assert_error, client_from};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef-xyz";

/// A token file with two moderators, kept for the server's start.
fn token_file() -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(
        file.path(),
        format!("# moderators\nalice:{ALICE}\nbob:{BOB}\n"),
    )
    .expect("written");
    file
}

/// A server with the admin API on (rate limits off, as for most tests).
async fn admin_server() -> (TestServer, tempfile::NamedTempFile) {
    let file = token_file();
    let path = file.path().to_owned();
    let srv = TestServer::start_with(|c| c.admin_token_file = Some(path)).await;
    (srv, file)
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("an address")
}

/// An admin call with `token` (none: no header).
async fn admin(
    srv: &TestServer,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> reqwest::Response {
    let mut req = srv.client.request(method, srv.url(path));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.expect("an admin call")
}

async fn block(srv: &TestServer, token: &str, prefix: &str, reason: &str) -> reqwest::Response {
    let body = json!({"prefix": prefix, "durationSecs": 3600, "reason": reason});
    admin(
        srv,
        reqwest::Method::POST,
        "/admin/blocks",
        Some(token),
        Some(body),
    )
    .await
}

/// A session created from `from`; (code, token).
async fn create_from(srv: &TestServer, from: &reqwest::Client) -> reqwest::Response {
    from.put(srv.url("/session"))
        .json(&json!({
            "name": "Friday co-op", "hostName": "Ada", "maxPlayers": 4, "build": "b1",
            "hostKind": "player", "offer": SDP,
        }))
        .send()
        .await
        .expect("PUT /session")
}

async fn answer_from(srv: &TestServer, from: &reqwest::Client, code: &str) -> reqwest::Response {
    from.post(srv.url(&format!("/session/{code}/answer")))
        .json(&json!({"round": 1, "answer": SDP, "name": "Bo"}))
        .send()
        .await
        .expect("POST answer")
}

#[tokio::test]
async fn the_admin_api_is_404_without_a_token_file_and_403_with_a_wrong_token() {
    let off = TestServer::start().await;
    let res = admin(
        &off,
        reqwest::Method::GET,
        "/admin/blocks",
        Some(ALICE),
        None,
    )
    .await;
    assert_error(res, 404, "not_found").await;

    let (srv, _file) = admin_server().await;
    for token in [None, Some("alice-token-0123456789abcdeX"), Some("")] {
        let res = admin(&srv, reqwest::Method::GET, "/admin/blocks", token, None).await;
        assert_eq!(
            res.headers()["cache-control"],
            "no-store",
            "errors are not cached either"
        );
        assert_error(res, 403, "wrong_token").await;
    }
    let res = block(&srv, "not-a-token-at-all-000000", "203.0.113.0/24", "x").await;
    assert_error(res, 403, "wrong_token").await;
    let res = admin(&srv, reqwest::Method::GET, "/admin/blocks", Some(BOB), None).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["cache-control"], "no-store");
    let list: Value = res.json().await.unwrap();
    assert_eq!(list, json!({"blocks": []}));
    // Nothing a wrong token sent was done.
    let res = admin(
        &srv,
        reqwest::Method::GET,
        "/admin/audit",
        Some(ALICE),
        None,
    )
    .await;
    let page: Value = res.json().await.unwrap();
    assert_eq!(page, json!({"entries": []}));
}

#[tokio::test]
async fn a_blocked_prefix_is_refused_on_create_update_and_answer_while_another_is_served() {
    let (srv, _file) = admin_server().await;
    let (blocked, other) = (client_from(ip("127.0.55.5")), client_from(ip("127.0.66.6")));
    // Before the block: a session of the soon-blocked address, one of another.
    let res = create_from(&srv, &blocked).await;
    assert_eq!(res.status(), 201);
    let own: Value = res.json().await.unwrap();
    let (own_code, own_token) = (
        own["code"].as_str().unwrap().to_owned(),
        own["hostToken"].as_str().unwrap().to_owned(),
    );
    let (code, _) = srv.create().await;

    let res = block(&srv, ALICE, "127.0.55.77/24", "junk sessions").await;
    assert_eq!(res.status(), 201);
    let placed: Value = res.json().await.unwrap();
    assert_eq!(placed["prefix"], "127.0.55.0/24", "host bits cleared");
    assert_eq!(placed["createdBy"], "alice");
    assert_eq!(placed["reason"], "junk sessions");

    let message = assert_error(create_from(&srv, &blocked).await, 403, "blocked").await;
    assert!(message.contains("moderators"), "{message}");
    assert!(
        !message.contains("junk"),
        "the reason stays with the moderators"
    );
    let update = blocked
        .put(srv.url("/session"))
        .bearer_auth(&own_token)
        .json(&json!({"code": own_code, "players": 2}))
        .send()
        .await
        .unwrap();
    assert_error(update, 403, "blocked").await;
    assert_error(answer_from(&srv, &blocked, &code).await, 403, "blocked").await;
    // Reading the lobby and sessions is not refused.
    let read = blocked
        .get(srv.url(&format!("/session/{code}")))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    // Another address is served all along.
    assert_eq!(create_from(&srv, &other).await.status(), 201);
    assert_eq!(answer_from(&srv, &other, &code).await.status(), 201);

    // Lifted: served again.
    let id = placed["id"].as_i64().unwrap();
    let res = admin(
        &srv,
        reqwest::Method::DELETE,
        &format!("/admin/blocks/{id}?reason=appealed"),
        Some(BOB),
        None,
    )
    .await;
    assert_eq!(res.status(), 204);
    assert_eq!(create_from(&srv, &blocked).await.status(), 201);
    let res = admin(&srv, reqwest::Method::GET, "/admin/blocks", Some(BOB), None).await;
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"blocks": []}));

    // Both actions are in the audit log, newest first, with who did them.
    let res = admin(&srv, reqwest::Method::GET, "/admin/audit", Some(BOB), None).await;
    let page: Value = res.json().await.unwrap();
    let entries = page["entries"].as_array().unwrap();
    let seen: Vec<(&str, &str, &str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
                e["target"].as_str().unwrap(),
                e["reason"].as_str().unwrap(),
            )
        })
        .collect();
    let id = id.to_string();
    assert_eq!(
        seen,
        [
            ("bob", "unblock", id.as_str(), "appealed"),
            ("alice", "block", "127.0.55.0/24", "junk sessions"),
        ]
    );
    let metrics = srv
        .client
        .get(srv.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("admin_actions_total 2"), "{metrics}");
    assert!(metrics.contains("blocked_requests_total 3"), "{metrics}");
}

#[tokio::test]
async fn a_block_lapses_and_the_sweep_forgets_it_and_old_audit_entries() {
    let (srv, _file) = admin_server().await;
    let blocked = client_from(ip("127.0.55.5"));
    let body = json!({"prefix": "127.0.55.5", "durationSecs": 60, "reason": "cool off"});
    let res = admin(
        &srv,
        reqwest::Method::POST,
        "/admin/blocks",
        Some(ALICE),
        Some(body),
    )
    .await;
    assert_eq!(res.status(), 201);
    assert_error(create_from(&srv, &blocked).await, 403, "blocked").await;
    srv.clock.advance_ms(60_000);
    assert_eq!(create_from(&srv, &blocked).await.status(), 201, "lapsed");
    // The audit entry outlives the block until its retention runs out.
    lobby_server::sessions::sweep(&srv.state).await.unwrap();
    let audit = |srv: &TestServer| {
        let srv_url = srv.url("/admin/audit");
        let client = srv.client.clone();
        async move {
            let res = client.get(srv_url).bearer_auth(ALICE).send().await.unwrap();
            let page: Value = res.json().await.unwrap();
            page["entries"].as_array().unwrap().len()
        }
    };
    assert_eq!(audit(&srv).await, 1);
    srv.clock
        .advance_ms(i64::from(srv.config.audit_retention_days) * 24 * 3600 * 1000);
    lobby_server::sessions::sweep(&srv.state).await.unwrap();
    assert_eq!(audit(&srv).await, 0);
}

#[tokio::test]
async fn bad_admin_input_is_refused_and_changes_nothing() {
    let (srv, _file) = admin_server().await;
    for (body, field) in [
        (
            json!({"prefix": "example.org", "durationSecs": 60, "reason": "x"}),
            "prefix",
        ),
        (
            json!({"prefix": "10.0.0.0/33", "durationSecs": 60, "reason": "x"}),
            "prefix",
        ),
        (
            json!({"prefix": "10.0.0.0/8", "durationSecs": 0, "reason": "x"}),
            "durationSecs",
        ),
        (
            json!({"prefix": "10.0.0.0/8", "durationSecs": 40_000_000, "reason": "x"}),
            "durationSecs",
        ),
        (
            json!({"prefix": "10.0.0.0/8", "durationSecs": 60, "reason": " \n "}),
            "reason",
        ),
        (
            json!({"prefix": "10.0.0.0/8", "durationSecs": 60, "reason": "x".repeat(501)}),
            "reason",
        ),
    ] {
        let res = admin(
            &srv,
            reqwest::Method::POST,
            "/admin/blocks",
            Some(ALICE),
            Some(body),
        )
        .await;
        let message = assert_error(res, 400, "invalid_field").await;
        assert!(message.starts_with(field), "{message}");
    }
    let res = admin(
        &srv,
        reqwest::Method::POST,
        "/admin/blocks",
        Some(ALICE),
        Some(json!({"prefix": 5})),
    )
    .await;
    assert_error(res, 400, "invalid_json").await;
    let res = admin(
        &srv,
        reqwest::Method::DELETE,
        "/admin/blocks/77",
        Some(ALICE),
        None,
    )
    .await;
    assert_error(res, 404, "not_found").await;
    let res = admin(
        &srv,
        reqwest::Method::DELETE,
        "/admin/blocks/x",
        Some(ALICE),
        None,
    )
    .await;
    assert_error(res, 400, "invalid_field").await;
    for query in ["limit=0", "limit=201", "limit=x", "before=x", "before=0"] {
        let path = format!("/admin/audit?{query}");
        let res = admin(&srv, reqwest::Method::GET, &path, Some(ALICE), None).await;
        assert_eq!(res.status(), 400, "{query}");
    }
    let res = admin(
        &srv,
        reqwest::Method::GET,
        "/admin/audit",
        Some(ALICE),
        None,
    )
    .await;
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"entries": []}));
    let res = admin(
        &srv,
        reqwest::Method::GET,
        "/admin/blocks",
        Some(ALICE),
        None,
    )
    .await;
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"blocks": []}));
}

#[tokio::test]
async fn the_audit_log_pages_newest_first() {
    let (srv, _file) = admin_server().await;
    for i in 1..=5 {
        let res = block(&srv, ALICE, &format!("203.0.113.{i}"), &format!("r{i}")).await;
        assert_eq!(res.status(), 201);
    }
    let mut reasons = Vec::new();
    let mut path = "/admin/audit?limit=2".to_owned();
    for _ in 0..5 {
        let res = admin(&srv, reqwest::Method::GET, &path, Some(ALICE), None).await;
        let page: Value = res.json().await.unwrap();
        for e in page["entries"].as_array().unwrap() {
            reasons.push(e["reason"].as_str().unwrap().to_owned());
        }
        match page["nextBefore"].as_i64() {
            Some(before) => path = format!("/admin/audit?limit=2&before={before}"),
            None => break,
        }
    }
    assert_eq!(reasons, ["r5", "r4", "r3", "r2", "r1"]);
}

#[tokio::test]
async fn guessing_admin_tokens_is_rate_limited_per_address() {
    let file = token_file();
    let path = file.path().to_owned();
    let srv = TestServer::start_with(|c| {
        c.admin_token_file = Some(path);
        c.disable_rate_limits = false;
        c.admin_requests_per_minute = 5;
    })
    .await;
    let guesser = client_from(ip("127.0.77.7"));
    let mut statuses = Vec::new();
    for i in 0..8 {
        let res = guesser
            .get(srv.url("/admin/blocks"))
            .bearer_auth(format!("guess-{i:020}"))
            .send()
            .await
            .unwrap();
        statuses.push(res.status().as_u16());
    }
    assert_eq!(statuses, [403, 403, 403, 403, 403, 429, 429, 429]);
    // Even the right token waits out the address's budget; another
    // address is not held back.
    let res = guesser
        .get(srv.url("/admin/blocks"))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 429);
    let res = admin(
        &srv,
        reqwest::Method::GET,
        "/admin/blocks",
        Some(ALICE),
        None,
    )
    .await;
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn a_server_refuses_to_start_with_a_weak_token_file() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "alice:short\n").unwrap();
    let db = common::TestDb::new().await;
    let mut config = lobby_server::Config::for_tests(db.url());
    config.admin_token_file = Some(file.path().to_owned());
    let err = lobby_server::Application::build(config)
        .await
        .err()
        .expect("refused");
    assert!(err.to_string().contains("at least 20"), "{err}");
}
