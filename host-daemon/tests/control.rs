//! The control API (issue 46) in front of the real serving loop and the
//! real lobby server: a tester's order opens a session in the lobby, the
//! API shows it, refuses what it cannot do, ends it, and keeps its report.
//!
//! Network safety: the lobby, the control API and the daemon's one UDP
//! socket are all on 127.0.0.1; every wait is bounded.

use std::time::Duration;

use clap::Parser;
use host_daemon::commands::{Cli, Command, host};
use host_daemon::control::hub::ControlHub;
use host_daemon::control::token::ControlToken;
use host_daemon::control::view::{DaemonInfo, SessionKind, SessionList, SessionView};
use host_daemon::serving::{self, ControlDesk};
use lobby_server::{Application, Config};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::watch;

/// The lobby server, in-process on 127.0.0.1:0; stops when dropped.
struct Lobby {
    base: String,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

async fn lobby() -> Lobby {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("lobby.db").display());
    let mut config = Config::for_tests(url);
    config.disable_rate_limits = true;
    let app = Application::build(config).await.expect("lobby builds");
    let base = format!("http://{}", app.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run_until_stopped(async move {
        let _ = rx.await;
    }));
    Lobby {
        base,
        _stop: tx,
        _dir: dir,
    }
}

fn info() -> DaemonInfo {
    DaemonInfo {
        kind: SessionKind::Host,
        lobby: String::new(),
        recording: false,
        standing_sessions: 0,
        max_control_sessions: 1,
    }
}

/// A daemon keeping no session of its own, with the control API on
/// 127.0.0.1:0 allowing one ordered session: its base URL, and word of
/// every change of its sessions (as its event stream hears it).
async fn daemon(lobby: &Lobby, shutdown: watch::Receiver<bool>) -> (String, watch::Receiver<u64>) {
    let cli = Cli::try_parse_from([
        "host-daemon",
        "host",
        "--server",
        &lobby.base,
        "--sessions",
        "0",
        "--name",
        "control test",
    ])
    .expect("flags");
    let Command::Host(args) = cli.command else {
        unreachable!()
    };
    let config = host::serving_config(&args).expect("config");
    let (hub, orders) = ControlHub::new(None);
    let addr = host_daemon::control::serve(
        "127.0.0.1:0".parse().unwrap(),
        None,
        hub.clone(),
        info(),
        shutdown.clone(),
    )
    .await
    .expect("control API");
    let changes = hub.changes();
    let desk = ControlDesk {
        hub,
        orders,
        max_sessions: 1,
    };
    tokio::spawn(serving::run(config, shutdown, Some(desk)));
    (format!("http://{addr}"), changes)
}

async fn call(method: reqwest::Method, url: String, body: Option<Value>) -> (StatusCode, Value) {
    let client = reqwest::Client::new();
    let mut req = client.request(method, url).timeout(Duration::from_secs(40));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.expect("an answer");
    let status = res.status();
    let text = res.text().await.expect("a body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn view(control: &str, code: &str) -> SessionView {
    let (status, body) = call(
        reqwest::Method::GET,
        format!("{control}/api/sessions/{code}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_value(body).expect("a session view")
}

#[tokio::test]
async fn a_tester_opens_a_session_sees_it_ends_it_and_reads_its_report() {
    let lobby = lobby().await;
    let (stop, shutdown) = watch::channel(false);
    let (control, mut changes) = daemon(&lobby, shutdown).await;
    use reqwest::Method;

    let (status, body) = call(Method::GET, format!("{control}/api/sessions"), None).await;
    assert_eq!(status, StatusCode::OK);
    let list: SessionList = serde_json::from_value(body).unwrap();
    assert!(
        list.sessions.is_empty(),
        "a daemon with --sessions 0 opens nothing itself"
    );

    // Bad orders change nothing.
    let client = reqwest::Client::new();
    let res = client
        .post(format!("{control}/api/sessions"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "invalid_json");
    for (bad, code) in [
        (json!({"levels": 0}), "invalid_field"),
        (json!({"difficulty": "nightmare"}), "invalid_field"),
        (json!({"bots": 7, "maxPlayers": 8}), "invalid_field"),
        (json!({"colour": "red"}), "invalid_json"),
    ] {
        let (status, body) = call(
            Method::POST,
            format!("{control}/api/sessions"),
            Some(bad.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad} -> {body}");
        assert_eq!(body["error"], code, "{bad} -> {body}");
    }
    let (_, body) = call(Method::GET, format!("{control}/api/sessions"), None).await;
    assert_eq!(body["sessions"], json!([]));

    // A private session with one bot, seed 7, two levels.
    let order = json!({"bots": 1, "levels": 2, "seed": 7, "difficulty": "hard", "public": false, "name": "ordered"});
    let (status, body) = call(Method::POST, format!("{control}/api/sessions"), Some(order)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let code = body["code"].as_str().expect("a code").to_owned();
    let (status, entry) = call(Method::GET, format!("{}/session/{code}", lobby.base), None).await;
    assert_eq!(status, StatusCode::OK, "the lobby has it: {entry}");
    assert_eq!(entry["name"], "ordered");
    let (_, listed) = call(Method::GET, format!("{}/lobby", lobby.base), None).await;
    assert!(!listed.to_string().contains(&code), "private: not listed");
    let v = view(&control, &code).await;
    assert_eq!((v.levels, v.seed, v.difficulty.as_str()), (2, 7, "hard"));
    assert_eq!(serde_json::to_value(v.state).unwrap(), "waiting");
    assert_eq!(serde_json::to_value(v.opened_by).unwrap(), "control");

    // One ordered session at a time on this daemon.
    let (status, body) = call(
        Method::POST,
        format!("{control}/api/sessions"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    // Nothing to report or replay while it runs.
    let (status, _) = call(
        Method::GET,
        format!("{control}/api/sessions/{code}/report"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(
        Method::GET,
        format!("{control}/api/sessions/{code}/replays/1"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, _) = call(
        Method::DELETE,
        format!("{control}/api/sessions/{code}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    // Read the view again on each change of the sessions until it ends
    // (marking the changes seen first, so none slips between).
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            changes.borrow_and_update();
            let v = view(&control, &code).await;
            if serde_json::to_value(v.state).unwrap() == "ended" {
                return v;
            }
            changes.changed().await.expect("the control hub lives");
        }
    })
    .await
    .expect("the session ends within 10 s");
    assert_eq!(ended.end.as_deref(), Some("host-shutdown"));
    let (status, report) = call(
        Method::GET,
        format!("{control}/api/sessions/{code}/report"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(report["endReason"], "host-shutdown");
    let (status, _) = call(
        Method::DELETE,
        format!("{control}/api/sessions/{code}"),
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "an ended session cannot be ended"
    );
    let (status, _) = call(Method::GET, format!("{}/session/{code}", lobby.base), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "deleted from the lobby");
    // Its place is free again.
    let (status, body) = call(
        Method::POST,
        format!("{control}/api/sessions"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let (status, doc) = call(Method::GET, format!("{control}/openapi.json"), None).await;
    assert_eq!(status, StatusCode::OK);
    for path in [
        "/api/sessions",
        "/api/sessions/{code}",
        "/api/sessions/{code}/report",
        "/api/sessions/{code}/replays/{level}",
        "/api/events",
        "/api/daemon",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} is described");
    }
    let (status, body) = call(Method::GET, format!("{control}/no/such/route"), None).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    stop.send_replace(true);
}

#[tokio::test]
async fn a_token_guards_the_api_but_not_the_page_and_a_wide_address_needs_one() {
    let (_stop, shutdown) = watch::channel(false);
    let (hub, _orders) = ControlHub::new(None);
    let wide = host_daemon::control::serve(
        "0.0.0.0:0".parse().unwrap(),
        None,
        hub.clone(),
        info(),
        shutdown.clone(),
    )
    .await;
    assert!(wide.is_err(), "beyond loopback without a token");
    let token = ControlToken::parse("a-control-token-0123456789").unwrap();
    let addr = host_daemon::control::serve(
        "127.0.0.1:0".parse().unwrap(),
        Some(token),
        hub,
        info(),
        shutdown,
    )
    .await
    .unwrap();
    let client = reqwest::Client::new();
    let get = |path: &str, token: Option<&str>| {
        let mut req = client.get(format!("http://{addr}{path}"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    assert_eq!(
        get("/api/daemon", None).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        get("/api/daemon", Some("a-control-token-0123456788"))
            .await
            .unwrap()
            .status(),
        StatusCode::FORBIDDEN
    );
    let ok = get("/api/daemon", Some("a-control-token-0123456789"))
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(ok.json::<Value>().await.unwrap()["kind"], "host");
    let page = get("/", None).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("campfire daemon"));
}
