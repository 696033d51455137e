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

/// A server with the admin API and its rate limits on, `tweak` setting the
/// budgets under test.
async fn rate_limited_admin_server(
    tweak: impl FnOnce(&mut lobby_server::Config),
) -> (TestServer, tempfile::NamedTempFile) {
    let file = token_file();
    let path = file.path().to_owned();
    let srv = TestServer::start_rate_limited(|c| {
        c.admin_token_file = Some(path);
        tweak(c);
    })
    .await;
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

/// A GET of the admin API with Alice's token.
async fn get_admin(srv: &TestServer, path: &str) -> reqwest::Response {
    admin(srv, reqwest::Method::GET, path, Some(ALICE), None).await
}

/// A POST of the admin API with Alice's token.
async fn post_admin(srv: &TestServer, path: &str, body: Value) -> reqwest::Response {
    admin(srv, reqwest::Method::POST, path, Some(ALICE), Some(body)).await
}

/// A DELETE of the admin API with Alice's token.
async fn delete_admin(srv: &TestServer, path: &str) -> reqwest::Response {
    admin(srv, reqwest::Method::DELETE, path, Some(ALICE), None).await
}

/// Bob asks the server to read its word list again.
async fn reload_words(srv: &TestServer) -> reqwest::Response {
    admin(
        srv,
        reqwest::Method::POST,
        "/admin/words/reload",
        Some(BOB),
        None,
    )
    .await
}

/// The actions of an audit page's entries, in the page's order.
fn audit_actions(page: &Value) -> Vec<&str> {
    page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["action"].as_str().expect("an action"))
        .collect()
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
        .json(&common::session_body())
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
    let res = get_admin(&srv, "/admin/audit").await;
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
    let metrics = srv.metrics().await;
    assert!(metrics.contains("admin_actions_total 2"), "{metrics}");
    assert!(metrics.contains("blocked_requests_total 3"), "{metrics}");
}

#[tokio::test]
async fn a_block_lapses_and_the_sweep_forgets_it_and_old_audit_entries() {
    let (srv, _file) = admin_server().await;
    let blocked = client_from(ip("127.0.55.5"));
    let body = json!({"prefix": "127.0.55.5", "durationSecs": 60, "reason": "cool off"});
    let res = post_admin(&srv, "/admin/blocks", body).await;
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
        let res = post_admin(&srv, "/admin/blocks", body).await;
        let message = assert_error(res, 400, "invalid_field").await;
        assert!(message.starts_with(field), "{message}");
    }
    let res = post_admin(&srv, "/admin/blocks", json!({"prefix": 5})).await;
    assert_error(res, 400, "invalid_json").await;
    let res = delete_admin(&srv, "/admin/blocks/77").await;
    assert_error(res, 404, "not_found").await;
    let res = delete_admin(&srv, "/admin/blocks/x").await;
    assert_error(res, 400, "invalid_field").await;
    for query in ["limit=0", "limit=201", "limit=x", "before=x", "before=0"] {
        let path = format!("/admin/audit?{query}");
        let res = get_admin(&srv, &path).await;
        assert_eq!(res.status(), 400, "{query}");
    }
    let res = get_admin(&srv, "/admin/audit").await;
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"entries": []}));
    let res = get_admin(&srv, "/admin/blocks").await;
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
        let res = get_admin(&srv, &path).await;
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
    let (srv, _file) = rate_limited_admin_server(|c| {
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
    let res = get_admin(&srv, "/admin/blocks").await;
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

async fn listed_codes(srv: &TestServer) -> Vec<String> {
    let page = srv.lobby("").await;
    page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["code"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_hidden_session_leaves_the_lobby_and_its_feed_but_stays_joinable() {
    let (srv, _file) = admin_server().await;
    let (code, token) = srv.create().await;
    let (other, _) = srv.create().await;
    let mut events = srv.subscribe("").await;

    let hide = json!({"hidden": true, "reason": "rude name"});
    let res = post_admin(&srv, &format!("/admin/sessions/{code}/hide"), hide).await;
    assert_eq!(res.status(), 204);
    let data = events.expect_event("removed", "an event").await;
    assert_eq!(
        serde_json::from_str::<Value>(&data).unwrap()["code"],
        code.as_str()
    );
    assert_eq!(listed_codes(&srv).await, [other.as_str()]);
    // Still joinable by code, and the host's updates do not list it again.
    assert_eq!(srv.get_session(&code).await.status(), 200);
    let res = srv
        .put(&json!({"code": code, "players": 2}), Some(&token))
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(listed_codes(&srv).await, [other.as_str()]);
    assert_eq!(srv.answer(&code, 1, "Bo").await.status(), 201);

    // The moderators still see it, marked hidden.
    let res = admin(
        &srv,
        reqwest::Method::GET,
        &format!("/admin/sessions/{code}"),
        Some(BOB),
        None,
    )
    .await;
    let view: Value = res.json().await.unwrap();
    assert_eq!(view["hidden"], true);
    assert_eq!(view["players"], 2);

    let unhide = json!({"hidden": false, "reason": "renamed"});
    let res = post_admin(&srv, &format!("/admin/sessions/{code}/hide"), unhide).await;
    assert_eq!(res.status(), 204);
    let mut listed = listed_codes(&srv).await;
    listed.sort();
    let mut both = vec![code.clone(), other];
    both.sort();
    assert_eq!(listed, both, "listed again");
    let res = admin(&srv, reqwest::Method::GET, "/admin/audit", Some(BOB), None).await;
    let page: Value = res.json().await.unwrap();
    let actions = audit_actions(&page);
    assert_eq!(actions, ["unhide", "hide"]);
    // An unknown session is 404 and logs nothing.
    let res = post_admin(
        &srv,
        "/admin/sessions/ABCD2345/hide",
        json!({"hidden": true}),
    )
    .await;
    assert_error(res, 404, "no_such_session").await;
}

#[tokio::test]
async fn an_ended_session_tells_its_host_its_long_poll_and_its_joiners() {
    let (srv, _file) = admin_server().await;
    let (code, token) = srv.create().await;
    let poll = {
        let client = srv.client.clone();
        let url = srv.url(&format!("/session/{code}/answer?round=1&waitMs=20000"));
        let token = token.clone();
        tokio::spawn(async move { client.get(url).bearer_auth(token).send().await.unwrap() })
    };
    common::eventually(
        std::time::Duration::from_secs(5),
        "the host's long-poll is waiting",
        || async { srv.state.waiters.waiting() == 1 },
    )
    .await;
    let res = post_admin(
        &srv,
        &format!("/admin/sessions/{code}/end"),
        json!({"reason": "spam"}),
    )
    .await;
    assert_eq!(res.status(), 204);
    let message = assert_error(poll.await.unwrap(), 410, "session_ended").await;
    assert!(message.contains("moderator"), "{message}");
    assert!(
        !message.contains("spam"),
        "the reason stays with the moderators"
    );
    let update = srv
        .put(&json!({"code": code, "players": 2}), Some(&token))
        .await;
    assert_error(update, 410, "session_ended").await;
    assert_error(srv.get_session(&code).await, 410, "session_ended").await;
    assert_error(srv.answer(&code, 1, "Bo").await, 410, "session_ended").await;
    assert_error(
        srv.delete_session(&code, &token).await,
        410,
        "session_ended",
    )
    .await;
    assert!(listed_codes(&srv).await.is_empty());
    let res = get_admin(&srv, &format!("/admin/sessions/{code}")).await;
    assert_error(res, 404, "no_such_session").await;
    // Ending needs a reason; ending it again finds nothing.
    let (second, _) = srv.create().await;
    let res = post_admin(
        &srv,
        &format!("/admin/sessions/{second}/end"),
        json!({"reason": ""}),
    )
    .await;
    assert_error(res, 400, "invalid_field").await;
    let res = post_admin(
        &srv,
        &format!("/admin/sessions/{code}/end"),
        json!({"reason": "again"}),
    )
    .await;
    assert_error(res, 404, "no_such_session").await;
    // Remembered for a day, then an ordinary unknown code.
    srv.clock.advance_ms(24 * 3600 * 1000);
    lobby_server::sessions::sweep(&srv.state).await.unwrap();
    lobby_server::moderating::reload(&srv.state).await.unwrap();
    assert_error(srv.get_session(&code).await, 404, "no_such_session").await;
}

/// `GET /admin/sessions{query}` as alice; the page.
async fn list_sessions(srv: &TestServer, query: &str) -> Value {
    let path = format!("/admin/sessions{query}");
    let res = get_admin(srv, &path).await;
    assert_eq!(res.status(), 200, "{path}");
    res.json::<Value>().await.unwrap()
}

#[tokio::test]
async fn the_admin_list_shows_every_session_with_filters_and_pages() {
    let (srv, _file) = admin_server().await;
    let (public, _) = srv.create_with(json!({"name": "Friday co-op"})).await;
    let (private, _) = srv
        .create_with(json!({"name": "Secret base", "public": false, "hostKind": "daemon"}))
        .await;
    let from = client_from(ip("127.0.55.5"));
    let res = create_from(&srv, &from).await;
    let remote = res.json::<Value>().await.unwrap()["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let hide = json!({"hidden": true, "reason": "x"});
    assert_eq!(
        post_admin(&srv, &format!("/admin/sessions/{remote}/hide"), hide)
            .await
            .status(),
        204
    );

    let codes = |page: &Value| -> Vec<String> {
        let mut c: Vec<String> = page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["code"].as_str().unwrap().to_owned())
            .collect();
        c.sort();
        c
    };
    let all = list_sessions(&srv, "").await;
    assert_eq!(all["total"], 3);
    let mut every = vec![public.clone(), private.clone(), remote.clone()];
    every.sort();
    assert_eq!(codes(&all), every);
    assert_eq!(
        codes(&list_sessions(&srv, "?q=SECRET").await),
        [private.as_str()]
    );
    assert_eq!(codes(&list_sessions(&srv, "?q=friday+co").await), {
        let mut v = vec![public.clone(), remote.clone()];
        v.sort();
        v
    });
    assert_eq!(
        codes(&list_sessions(&srv, "?hostKind=daemon").await),
        [private.as_str()]
    );
    assert_eq!(
        codes(&list_sessions(&srv, "?hidden=true").await),
        [remote.as_str()]
    );
    assert_eq!(
        codes(&list_sessions(&srv, "?creator=127.0.55.0/24").await),
        [remote.as_str()]
    );
    assert_eq!(list_sessions(&srv, "?creator=10.0.0.0/8").await["total"], 0);
    let private_view = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["code"] == private.as_str())
        .unwrap();
    assert_eq!(private_view["public"], false);
    assert_eq!(private_view["round"], 1);
    assert_eq!(private_view["roundOpen"], true);
    assert_eq!(private_view["creator"], "127.0.0.1");

    // Paged one by one, every session once.
    let mut seen = Vec::new();
    let mut query = "?limit=1".to_owned();
    for _ in 0..5 {
        let page = list_sessions(&srv, &query).await;
        seen.extend(codes(&page));
        match page["nextCursor"].as_str() {
            Some(c) => query = format!("?limit=1&cursor={c}"),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, every);
    for bad in [
        "?limit=0",
        "?limit=201",
        "?cursor=junk",
        "?creator=nowhere",
        "?hostKind=robot",
    ] {
        let res = get_admin(&srv, &format!("/admin/sessions{bad}")).await;
        assert_eq!(res.status(), 400, "{bad}");
    }
}

async fn report_from(srv: &TestServer, from: &str, code: &str, body: Value) -> reqwest::Response {
    client_from(ip(from))
        .post(srv.url(&format!("/session/{code}/report")))
        .json(&body)
        .send()
        .await
        .expect("POST report")
}

#[tokio::test]
async fn players_report_sessions_and_moderators_see_the_most_reported_first() {
    let (srv, _file) = admin_server().await;
    let (first, _) = srv.create().await;
    let (second, _) = srv.create().await;
    let (quiet, _) = srv.create().await;
    let spam = json!({"reason": "spam"});
    let named = json!({"reason": "offensive_name", "text": " the name \u{7} is a slur "});
    for (from, code, body) in [
        ("127.0.10.1", &second, spam.clone()),
        ("127.0.10.1", &first, spam.clone()),
        // A repeat from the same address changes nothing.
        ("127.0.10.1", &first, spam.clone()),
        ("127.0.10.2", &first, named),
    ] {
        let res = report_from(&srv, from, code, body).await;
        assert_eq!(res.status(), 204, "{from} reports {code}");
    }

    let page = list_sessions(&srv, "?sort=reports").await;
    let order: Vec<(&str, u64)> = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["code"].as_str().unwrap(), s["reports"].as_u64().unwrap()))
        .collect();
    assert_eq!(order[..2], [(first.as_str(), 2), (second.as_str(), 1)]);
    assert_eq!(order[2], (quiet.as_str(), 0));
    assert_eq!(list_sessions(&srv, "?reported=true").await["total"], 2);
    let unreported = list_sessions(&srv, "?reported=false").await;
    assert_eq!(unreported["sessions"][0]["code"], quiet.as_str());
    // Paged by reports, every session once and in order.
    let mut seen = Vec::new();
    let mut query = "?sort=reports&limit=1".to_owned();
    for _ in 0..4 {
        let page = list_sessions(&srv, &query).await;
        seen.push(page["sessions"][0]["code"].as_str().unwrap().to_owned());
        match page["nextCursor"].as_str() {
            Some(c) => query = format!("?sort=reports&limit=1&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, [first.clone(), second.clone(), quiet.clone()]);

    let res = get_admin(&srv, &format!("/admin/sessions/{first}")).await;
    let view: Value = res.json().await.unwrap();
    assert_eq!(view["reports"], 2);
    let recent = view["recentReports"].as_array().unwrap();
    assert_eq!(recent.len(), 2);
    assert_eq!(recent[0]["reason"], "offensive_name");
    assert_eq!(
        recent[0]["text"], "the name  is a slur",
        "trimmed, control characters dropped"
    );
    assert_eq!(recent[1]["reason"], "spam");

    // Bad reports change nothing.
    for (body, status) in [
        (json!({"reason": "bogus"}), 400),
        (json!({"reason": "other", "text": "x".repeat(501)}), 400),
        (json!({}), 400),
    ] {
        let res = report_from(&srv, "127.0.10.3", &quiet, body).await;
        assert_eq!(res.status(), status);
    }
    let res = report_from(&srv, "127.0.10.3", "ABCD2345", spam.clone()).await;
    assert_error(res, 404, "no_such_session").await;
    let end = json!({"reason": "reported"});
    assert_eq!(
        post_admin(&srv, &format!("/admin/sessions/{second}/end"), end)
            .await
            .status(),
        204
    );
    let res = report_from(&srv, "127.0.10.3", &second, spam).await;
    assert_error(res, 410, "session_ended").await;
    assert_eq!(list_sessions(&srv, "?reported=true").await["total"], 1);
    let metrics = srv.metrics().await;
    assert!(metrics.contains("lobby_reports_total 3"), "{metrics}");
}

#[tokio::test]
async fn reports_are_budgeted_per_address_and_per_session() {
    let (srv, _file) = rate_limited_admin_server(|c| {
        c.reports_per_minute = 2;
        c.max_reports_per_session = 3;
    })
    .await;
    let spam = json!({"reason": "spam"});
    let codes = [
        srv.create().await.0,
        srv.create().await.0,
        srv.create().await.0,
    ];
    let statuses: Vec<u16> = {
        let mut s = Vec::new();
        for code in &codes {
            s.push(
                report_from(&srv, "127.0.20.1", code, spam.clone())
                    .await
                    .status()
                    .as_u16(),
            );
        }
        s
    };
    assert_eq!(statuses, [204, 204, 429], "two a minute from one address");
    for (i, expected) in [(2, 204), (3, 204), (4, 429)] {
        let res = report_from(&srv, &format!("127.0.20.{i}"), &codes[0], spam.clone()).await;
        assert_eq!(res.status(), expected, "reporter {i} of the first session");
    }
    let res = get_admin(&srv, &format!("/admin/sessions/{}", codes[0])).await;
    assert_eq!(res.json::<Value>().await.unwrap()["reports"], 3);
}

#[tokio::test]
async fn a_refused_word_is_refused_on_create_and_update_naming_the_field() {
    let tokens = token_file();
    let words = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(words.path(), "# refused\nbadword\nrude*\n").unwrap();
    let (tokens_path, words_path) = (tokens.path().to_owned(), words.path().to_owned());
    let srv = TestServer::start_with(|c| {
        c.admin_token_file = Some(tokens_path);
        c.word_list_file = Some(words_path);
    })
    .await;
    let create = |extra: Value| {
        let body = common::session_body_with(extra);
        let req = srv.client.put(srv.url("/session")).json(&body);
        async move { req.send().await.unwrap() }
    };
    for (extra, field) in [
        (json!({"name": "The BADWORD club"}), "name"),
        (json!({"hostName": "Rudeboy"}), "hostName"),
        (json!({"meta": {"tags": ["coop", "badword"]}}), "meta"),
    ] {
        let message = assert_error(create(extra).await, 400, "name_refused").await;
        assert!(message.starts_with(field), "{message}");
    }
    let (code, token) = srv.create().await;
    let res = srv
        .put(&json!({"code": code, "name": "badword"}), Some(&token))
        .await;
    assert_error(res, 400, "name_refused").await;
    let res = srv
        .put(&json!({"code": code, "players": 2}), Some(&token))
        .await;
    assert_eq!(res.status(), 200);
    assert!(srv.lobby("").await["sessions"][0]["name"] == "Friday co-op");

    // A moderator reloads a longer list; sessions already named keep
    // updating what they do not rename.
    std::fs::write(words.path(), "badword\nrude*\nfriday\n").unwrap();
    let res = reload_words(&srv).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"entries": 3}));
    assert_error(create(json!({})).await, 400, "name_refused").await;
    let res = srv
        .put(&json!({"code": code, "players": 3}), Some(&token))
        .await;
    assert_eq!(res.status(), 200);
    let res = admin(&srv, reqwest::Method::GET, "/admin/audit", Some(BOB), None).await;
    let page: Value = res.json().await.unwrap();
    assert_eq!(page["entries"][0]["action"], "reload_words");
    assert_eq!(page["entries"][0]["actor"], "bob");
    // Without a list file the reload is 404.
    let (off, _file) = admin_server().await;
    let res = reload_words(&off).await;
    assert_error(res, 404, "not_found").await;
}

#[tokio::test]
async fn a_block_can_end_every_session_of_its_prefix() {
    let (srv, _file) = admin_server().await;
    let (spammer, other) = (client_from(ip("127.0.55.5")), client_from(ip("127.0.66.6")));
    let mut theirs = Vec::new();
    for _ in 0..2 {
        let res = create_from(&srv, &spammer).await;
        theirs.push(
            res.json::<Value>().await.unwrap()["code"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let res = create_from(&srv, &other).await;
    let kept = res.json::<Value>().await.unwrap()["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({"prefix": "127.0.55.0/24", "durationSecs": 600, "reason": "spam",
        "endSessions": true});
    let res = post_admin(&srv, "/admin/blocks", body).await;
    assert_eq!(res.status(), 201);
    let placed: Value = res.json().await.unwrap();
    let mut ended: Vec<String> = placed["ended"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    ended.sort();
    theirs.sort();
    assert_eq!(ended, theirs);
    assert_eq!(placed["prefix"], "127.0.55.0/24");
    for code in &theirs {
        assert_error(srv.get_session(code).await, 410, "session_ended").await;
    }
    assert_eq!(srv.get_session(&kept).await.status(), 200);
    let res = get_admin(&srv, "/admin/audit").await;
    let page: Value = res.json().await.unwrap();
    let actions = audit_actions(&page);
    assert_eq!(actions, ["end", "end", "block"]);
}

#[tokio::test]
async fn the_moderation_page_is_served_only_with_the_admin_api_and_never_cached() {
    let off = TestServer::start().await;
    for path in ["/admin", "/web/admin.js"] {
        let res = off.get(path).await;
        assert_eq!(res.status(), 404, "{path}");
    }
    let (srv, _file) = admin_server().await;
    for (path, kind) in [
        ("/admin", "text/html"),
        ("/web/admin.js", "text/javascript"),
    ] {
        let res = srv.get(path).await;
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(res.headers()["cache-control"], "no-store", "{path}");
        let content_type = res.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(content_type.starts_with(kind), "{content_type}");
        let body = res.text().await.unwrap();
        assert!(!body.contains(ALICE), "no token in what is served");
    }
}
