//! Test harness: the real server on an ephemeral loopback port, over a
//! fresh database, with a manual clock; a reqwest client to talk to it.
//!
//! The backend is SQLite (a fresh file) unless `LOBBY_TEST_DATABASE=postgres`,
//! in which case every server gets a fresh PostgreSQL database on the server
//! at `LOBBY_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`),
//! dropped when the test ends. `scripts/test` runs the suite both ways.
//!
//! A test that waits for something another task makes true waits with
//! [`eventually`] (`eventually.rs`), bounded, not with a fixed sleep; the
//! sleeps left in the suite let time pass on purpose or pace a load, and
//! each says which.
#![allow(dead_code)]

mod eventually;

// Not every test file waits for something.
#[allow(unused_imports)]
pub use eventually::{Outcome, eventually};

use std::sync::Arc;
use std::time::Duration;

use lobby_server::clock::ManualClock;
use lobby_server::state::AppState;
use lobby_server::{Application, Config};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A minimal data-channel offer or answer that passes the SDP check.
pub const SDP: &str = "v=0\r\no=- 4611 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sctp-port:5000\r\n";

/// [`SDP`] padded with an `a=pad:` line to exactly `len` bytes (at least
/// `SDP.len() + 9`), for tests of size limits and byte budgets.
pub fn sdp_of(len: usize) -> String {
    let head = format!("{SDP}a=pad:");
    let pad = len - head.len() - 2;
    format!("{head}{}\r\n", "x".repeat(pad))
}

/// A response's `Retry-After` in seconds (panics when it has none).
pub fn retry_after_secs(res: &reqwest::Response) -> u64 {
    res.headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in seconds")
}

/// A client whose connections come from `ip` (another loopback address is
/// another client to the server's per-address budgets).
pub fn client_from(ip: std::net::IpAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip)
        .timeout(Duration::from_secs(10))
        .build()
        .expect("a client on that address")
}

/// The body of a default create: "Friday co-op", a public session that a
/// player hosts, with an open round.
pub fn session_body() -> Value {
    json!({
        "name": "Friday co-op", "hostName": "Ada", "maxPlayers": 4, "build": "b1",
        "hostKind": "player", "offer": SDP,
    })
}

/// [`session_body`] with the fields of `extra` set over it.
pub fn session_body_with(extra: Value) -> Value {
    let mut body = session_body();
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    body
}

/// The status of `PUT /session` with `body`, sent by `client` to `url`
/// (a client of its own: another address, or another process's server).
pub async fn create_status(client: &reqwest::Client, url: String, body: &Value) -> u16 {
    client
        .put(url)
        .json(body)
        .send()
        .await
        .expect("PUT /session")
        .status()
        .as_u16()
}

/// Where the manual clock starts (2026-01-01T00:00:00Z).
pub const START_MS: i64 = 1_767_225_600_000;

pub struct TestServer {
    pub base: String,
    pub state: AppState,
    pub clock: ManualClock,
    pub client: reqwest::Client,
    pub config: Config,
    pub db: Arc<TestDb>,
    shutdown: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<anyhow::Result<()>>>,
}

/// A fresh database for one test, of the backend the environment selects.
pub enum TestDb {
    Sqlite(tempfile::TempDir),
    Postgres { admin_url: String, name: String },
}

/// Whether this run tests the PostgreSQL backend.
pub fn postgres_selected() -> bool {
    std::env::var("LOBBY_TEST_DATABASE")
        .map(|v| v == "postgres")
        .unwrap_or(false)
}

impl TestDb {
    pub async fn new() -> Self {
        if !postgres_selected() {
            return TestDb::Sqlite(tempfile::tempdir().expect("temp dir"));
        }
        Self::postgres().await
    }

    /// A fresh PostgreSQL database whatever the selected backend (tests of
    /// behaviour only PostgreSQL has: several replicas, outages).
    pub async fn postgres() -> Self {
        use sqlx::Connection;
        let admin_url = std::env::var("LOBBY_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let name = format!("campfire_test_{}_{:08x}", std::process::id(), rand_u32());
        let mut conn = sqlx::PgConnection::connect(&admin_url)
            .await
            .expect("PostgreSQL for tests is reachable (LOBBY_TEST_POSTGRES_URL)");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create test database");
        TestDb::Postgres { admin_url, name }
    }

    /// Runs one statement as the PostgreSQL administrator (outage tests).
    pub async fn admin(&self, sql: &str) {
        use sqlx::Connection;
        let TestDb::Postgres { admin_url, .. } = self else {
            panic!("not a PostgreSQL test database")
        };
        let mut conn = sqlx::PgConnection::connect(admin_url)
            .await
            .expect("admin connection");
        sqlx::query(sql)
            .execute(&mut conn)
            .await
            .expect("admin statement");
    }

    /// The database name (PostgreSQL only).
    pub fn name(&self) -> &str {
        match self {
            TestDb::Postgres { name, .. } => name,
            TestDb::Sqlite(_) => "",
        }
    }

    pub fn url(&self) -> String {
        match self {
            TestDb::Sqlite(dir) => format!("sqlite://{}", dir.path().join("lobby.db").display()),
            TestDb::Postgres { admin_url, name } => {
                let base = admin_url
                    .rsplit_once('/')
                    .map_or(admin_url.as_str(), |(b, _)| b);
                format!("{base}/{name}")
            }
        }
    }
}

fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.finish() as u32
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let TestDb::Postgres { admin_url, name } = self else {
            return;
        };
        let (admin_url, name) = (admin_url.clone(), name.clone());
        // Drop runs inside the test's runtime; use a thread with its own.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                use sqlx::Connection;
                if let Ok(mut conn) = sqlx::PgConnection::connect(&admin_url).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut conn)
                        .await;
                }
            });
        })
        .join();
    }
}

impl TestServer {
    /// A server with rate limits off (most tests create many sessions from one address).
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// A server with rate limits off (unless `tweak` turns them on) and
    /// `tweak` applied to its configuration.
    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> Self {
        let db = Arc::new(TestDb::new().await);
        let mut config = Config::for_tests(db.url());
        config.disable_rate_limits = true;
        tweak(&mut config);
        Self::start_in(db, config, ManualClock::new(START_MS)).await
    }

    /// A server with its rate limits on, `tweak` setting the budgets under test.
    pub async fn start_rate_limited(tweak: impl FnOnce(&mut Config)) -> Self {
        Self::start_with(|c| {
            c.disable_rate_limits = false;
            tweak(c);
        })
        .await
    }

    /// Starts a server over an existing database and configuration.
    pub async fn start_in(db: Arc<TestDb>, config: Config, clock: ManualClock) -> Self {
        if std::env::var_os("TEST_LOG").is_some() {
            lobby_server::telemetry::init(lobby_server::config::LogFormat::Pretty);
        }
        let app = Application::build_with_clock(config.clone(), Arc::new(clock.clone()))
            .await
            .expect("server builds");
        let base = format!("http://{}", app.local_addr());
        let state = app.state();
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(app.run_until_stopped(async move {
            let _ = rx.await;
        }));
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        TestServer {
            base,
            state,
            clock,
            client,
            config,
            db,
            shutdown: Some(tx),
            handle: Some(handle),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Triggers graceful shutdown and waits for the server to finish.
    pub async fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(Duration::from_secs(10), handle)
                .await
                .expect("server stops within 10 s")
                .expect("server task")
                .expect("server exits cleanly");
        }
    }

    /// `GET {path}` with no credentials: the response, whatever its status.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// `GET {path}`'s body as JSON, whatever the status.
    pub async fn get_json(&self, path: &str) -> Value {
        self.get(path).await.json().await.expect("a JSON body")
    }

    /// The text of `GET /metrics` (the Prometheus exposition).
    pub async fn metrics(&self) -> String {
        self.get("/metrics")
            .await
            .text()
            .await
            .expect("metrics text")
    }

    /// Moves the clock a millisecond past the session TTL and runs the
    /// sweep: every session not refreshed since is expired and gone.
    pub async fn expire_sessions_and_sweep(&self) {
        self.clock
            .advance_ms(self.config.session_ttl as i64 * 1000 + 1);
        lobby_server::sessions::sweep(&self.state)
            .await
            .expect("the sweep runs");
    }

    pub async fn put(&self, body: &Value, token: Option<&str>) -> reqwest::Response {
        let mut req = self.client.put(self.url("/session")).json(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("PUT /session")
    }

    /// Creates a public session with an open round; returns (code, token).
    pub async fn create(&self) -> (String, String) {
        self.create_with(json!({})).await
    }

    /// Creates a session from the default body with `extra` fields merged in.
    pub async fn create_with(&self, extra: Value) -> (String, String) {
        let res = self.put(&session_body_with(extra), None).await;
        assert_eq!(
            res.status(),
            201,
            "create failed: {}",
            res.text().await.unwrap_or_default()
        );
        let v: Value = res.json().await.expect("json");
        (
            v["code"].as_str().unwrap().to_owned(),
            v["hostToken"].as_str().unwrap().to_owned(),
        )
    }

    pub async fn get_session(&self, code: &str) -> reqwest::Response {
        self.client
            .get(self.url(&format!("/session/{code}")))
            .send()
            .await
            .expect("GET /session")
    }

    pub async fn answer(&self, code: &str, round: u64, name: &str) -> reqwest::Response {
        self.client
            .post(self.url(&format!("/session/{code}/answer")))
            .json(&json!({"round": round, "answer": SDP, "name": name}))
            .send()
            .await
            .expect("POST answer")
    }

    pub async fn poll(
        &self,
        code: &str,
        token: &str,
        round: u64,
        wait_ms: u64,
    ) -> reqwest::Response {
        self.client
            .get(self.url(&format!(
                "/session/{code}/answer?round={round}&waitMs={wait_ms}"
            )))
            .bearer_auth(token)
            .send()
            .await
            .expect("GET answer")
    }

    /// `GET /lobby/events` plus `query` (`""` or `?…`): the response, to
    /// check or to read with [`SseReader`].
    pub async fn lobby_events(&self, query: &str) -> reqwest::Response {
        self.client
            .get(self.url(&format!("/lobby/events{query}")))
            .send()
            .await
            .expect("GET /lobby/events")
    }

    /// The lobby's event stream (`query` as for [`TestServer::lobby_events`]),
    /// read from the moment it is subscribed: the handler subscribes before
    /// it answers, so every change made after this returns reaches the
    /// reader, with no wait. The subscriber count checks that (the tests
    /// that use this hold no other stream).
    pub async fn subscribe(&self, query: &str) -> SseReader {
        let res = self.lobby_events(query).await;
        assert_eq!(res.status(), 200, "GET /lobby/events{query}");
        assert!(
            self.state.lobby.subscribers() >= 1,
            "the stream is subscribed once its headers arrive"
        );
        SseReader::new(res)
    }

    /// `DELETE /session/{code}` with the host's token.
    pub async fn delete_session(&self, code: &str, token: &str) -> reqwest::Response {
        self.client
            .delete(self.url(&format!("/session/{code}")))
            .bearer_auth(token)
            .send()
            .await
            .expect("DELETE session")
    }

    pub async fn lobby(&self, query: &str) -> Value {
        let res = self
            .client
            .get(self.url(&format!("/lobby{query}")))
            .send()
            .await
            .expect("GET /lobby");
        assert_eq!(res.status(), 200);
        res.json().await.expect("json")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Asserts the API's JSON error shape and code; returns the message.
pub async fn assert_error(res: reqwest::Response, status: u16, code: &str) -> String {
    assert_eq!(res.status(), status, "expected {status} {code}");
    let ct = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert!(
        ct.starts_with("application/json"),
        "error content-type was {ct:?}"
    );
    let body: Value = res.json().await.expect("error body is JSON");
    assert_eq!(body["error"], code, "body: {body}");
    let message = body["message"].as_str().expect("message").to_owned();
    assert!(!message.is_empty());
    message
}

/// Reads Server-Sent Events from a streaming response.
pub struct SseReader {
    stream:
        std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buffer: String,
}

impl SseReader {
    pub fn new(res: reqwest::Response) -> Self {
        Self {
            stream: Box::pin(res.bytes_stream()),
            buffer: String::new(),
        }
    }

    /// The next event's data, within 5 s, asserting the event is `event`
    /// (panics naming `what` when none comes).
    pub async fn expect_event(&mut self, event: &str, what: &str) -> String {
        let (got, data) = self.next_event(Duration::from_secs(5)).await.expect(what);
        assert_eq!(got, event);
        data
    }

    /// The next (event, data) pair, skipping comments and keep-alives.
    pub async fn next_event(&mut self, within: Duration) -> Option<(String, String)> {
        use futures_util::StreamExt;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = String::from("message");
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                    }
                }
                if !data.is_empty() || event != "message" {
                    return Some((event, data.join("\n")));
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.stream.next())
                .await
                .ok()??
                .ok()?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}
