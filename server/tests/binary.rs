//! The real `lobby-server` binary: it logs `listening on http://ADDR` once
//! serving, exits 0 on SIGTERM, and a session outlives a restart.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::{SDP, eventually};
use serde_json::{Value, json};

struct Server {
    child: Child,
    base: String,
    /// Its JSON log lines after the first, as they come (see [`log_line`]).
    logs: Receiver<Value>,
}

fn start(db: &common::TestDb) -> Server {
    start_env(db, &[])
}

/// [`start`] with extra environment variables (flags).
fn start_env(db: &common::TestDb, envs: &[(&str, &str)]) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_lobby-server"))
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .env("LOBBY_DATABASE_URL", db.url())
        .envs(envs.iter().copied())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start lobby-server");
    serving(child)
}

/// The started binary, once its first log line says where it listens;
/// the lines after it go on [`Server::logs`] (read as they come, so the
/// server never blocks on a full pipe).
fn serving(mut child: Child) -> Server {
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().expect("a log line").expect("readable");
    let line: Value = serde_json::from_str(&first).expect("JSON log line");
    let base = line["message"]
        .as_str()
        .and_then(|m| m.strip_prefix("listening on "))
        .unwrap_or_else(|| panic!("the first line says where it listens; got {first}"))
        .to_owned();
    let (tx, logs) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    Server { child, base, logs }
}

impl Server {
    /// `PUT /session` of a daemon-hosted session with an open round.
    async fn create_session(&self, client: &reqwest::Client) -> reqwest::Response {
        client
            .put(format!("{}/session", self.base))
            .json(&json!({"name": "n", "hostName": "h", "maxPlayers": 3, "build": "b", "hostKind": "daemon", "offer": SDP}))
            .send()
            .await
            .expect("PUT /session")
    }

    /// The body of `GET /session/{code}`, whatever the status.
    async fn session_view(&self, client: &reqwest::Client, code: &str) -> Value {
        client
            .get(format!("{}/session/{code}", self.base))
            .send()
            .await
            .expect("GET /session")
            .json()
            .await
            .expect("a JSON body")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A failing test must not leave a server running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sigterm(server: &mut Server) -> std::process::ExitStatus {
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    exit_status(server)
}

/// How the server exited, within 5 s of a signal.
fn exit_status(server: &mut Server) -> std::process::ExitStatus {
    for _ in 0..100 {
        if let Some(status) = server.child.try_wait().unwrap() {
            return status;
        }
        // std has no timed wait for a child: poll it.
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = server.child.kill();
    panic!("lobby-server did not exit within 5 s of SIGTERM");
}

#[tokio::test]
async fn the_binary_serves_stops_on_sigterm_and_keeps_sessions_across_restarts() {
    let db = common::TestDb::new().await;
    let client = reqwest::Client::new();

    let mut server = start(&db);
    let res = server.create_session(&client).await;
    assert_eq!(res.status(), 201);
    let created: Value = res.json().await.unwrap();
    let (code, token) = (
        created["code"].as_str().unwrap(),
        created["hostToken"].as_str().unwrap(),
    );
    // A long-poll in flight when SIGTERM arrives is answered, not cut off.
    let poll = tokio::spawn(
        client
            .get(format!(
                "{}/session/{code}/answer?round=1&waitMs=20000",
                server.base
            ))
            .bearer_auth(token)
            .send(),
    );
    eventually(
        Duration::from_secs(5),
        "the long-poll waits in the server",
        || async {
            let metrics = client.get(format!("{}/metrics", server.base)).send();
            match metrics.await {
                Ok(res) => res
                    .text()
                    .await
                    .is_ok_and(|m| m.lines().any(|l| l == "lobby_long_poll_waiters 1")),
                Err(_) => false,
            }
        },
    )
    .await;
    let status = sigterm(&mut server);
    assert_eq!(status.code(), Some(0), "exit status {status:?}");
    assert_eq!(poll.await.unwrap().unwrap().status(), 204);

    let mut server = start(&db);
    let view = server.session_view(&client, code).await;
    assert_eq!(view["round"], 1);
    let res = client
        .put(format!("{}/session", server.base))
        .bearer_auth(token)
        .json(&json!({"code": code, "players": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(sigterm(&mut server).code(), Some(0));
}

#[tokio::test]
async fn a_sigterm_the_moment_it_says_where_it_listens_still_stops_it_cleanly() {
    // The signal handlers are installed before the server starts: a
    // supervisor's SIGTERM right after the first line is a clean stop
    // (exit 0), never the default action's kill.
    let db = common::TestDb::new().await;
    for _ in 0..20 {
        let mut server = start(&db);
        // Sent straight from here (a `kill` process would take a
        // millisecond to start).
        let pid = i32::try_from(server.child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .expect("a pid");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
        let status = exit_status(&mut server);
        assert_eq!(status.code(), Some(0), "exit status {status:?}");
    }
}

#[tokio::test]
async fn an_acknowledged_change_survives_a_kill_9() {
    let db = common::TestDb::new().await;
    let client = reqwest::Client::new();
    let mut server = start(&db);
    let res = server.create_session(&client).await;
    let created: Value = res.json().await.unwrap();
    let code = created["code"].as_str().unwrap().to_owned();
    let res = client
        .post(format!("{}/session/{code}/answer", server.base))
        .json(&json!({"round": 1, "answer": SDP, "name": "Bob"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    // No graceful shutdown: whatever was acknowledged must already be on disk.
    server.child.kill().unwrap();
    server.child.wait().unwrap();

    let mut server = start(&db);
    let view = server.session_view(&client, &code).await;
    assert_eq!(view["code"], code.as_str());
    assert_eq!(
        view["round"],
        Value::Null,
        "the accepted answer closed the round durably"
    );
    let token = created["hostToken"].as_str().unwrap();
    let answer: Value = client
        .get(format!("{}/session/{code}/answer?round=1", server.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["name"], "Bob");
    assert_eq!(sigterm(&mut server).code(), Some(0));
}

/// Starts the binary under `sh`, with its open-file limit set first by
/// `ulimit {limit_args}`.
#[cfg(target_os = "linux")]
fn start_with_open_files(db: &common::TestDb, limit_args: &str, extra: &[&str]) -> Server {
    let child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit {limit_args} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_lobby-server"))
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .args(extra)
        .env("LOBBY_DATABASE_URL", db.url())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start lobby-server under sh");
    serving(child)
}

/// The first log line not read yet whose message contains `text`.
fn log_line(lines: &Receiver<Value>, text: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(v) if v["message"].as_str().is_some_and(|m| m.contains(text)) => return v,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    panic!("no log line saying {text:?} within 10 s");
}

/// (soft, hard) "Max open files" of a process, from `/proc/PID/limits`.
#[cfg(target_os = "linux")]
fn open_file_limits(pid: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let mut fields = line["Max open files".len()..].split_whitespace();
    let mut next = || {
        let f = fields.next().unwrap();
        if f == "unlimited" {
            u64::MAX
        } else {
            f.parse().unwrap()
        }
    };
    (next(), next())
}

/// Issue 14: `--max-connections` defaults to 4,096 where the usual soft
/// open-file limit is 1,024, so the server could fail accepts for everyone
/// before its cap answered anyone `503`.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_low_open_file_limit_is_raised_for_the_connection_cap_or_the_cap_lowered_to_fit() {
    use lobby_server::descriptors::reserved_for;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let db = common::TestDb::new().await;
    let reserved = reserved_for(16);

    // A low soft limit under a higher hard one: raised as far as the cap needs.
    let (_, hard) = open_file_limits("self");
    let mut server = start_with_open_files(&db, "-S -n 256", &["--max-connections", "500"]);
    let want = (500 + reserved).min(hard);
    let raised = log_line(&server.logs, "raised the open-file limit");
    assert_eq!(raised["to"], want, "{raised}");
    let pid = server.child.id().to_string();
    assert_eq!(open_file_limits(&pid).0, want);
    // Served: so it is listening for SIGTERM too.
    let res = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(sigterm(&mut server).code(), Some(0));

    // A hard limit of 200: the cap is lowered to what fits, with a warning,
    // and a connection over it is answered 503 while the server keeps serving.
    let mut server =
        start_with_open_files(&db, "-n 200", &["--max-connections-per-address", "1000"]);
    let fit = 200 - reserved;
    let warning = log_line(
        &server.logs,
        "the open-file limit leaves room for fewer connections",
    );
    assert_eq!(warning["level"], "WARN", "{warning}");
    assert_eq!(warning["max_connections"], fit, "{warning}");
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for _ in 0..fit {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        held.push(s);
    }
    // Answered before its request is read, so read it raw.
    let mut over = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), over.read_to_end(&mut answer))
        .await
        .expect("answered and closed at once")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 503"),
        "over the lowered cap: {answer}"
    );
    drop(held);
    eventually(
        Duration::from_secs(5),
        "freed connections are served again",
        || async {
            let res = reqwest::Client::new()
                .get(format!("{}/healthz", server.base))
                .send()
                .await;
            match res.map(|r| r.status().as_u16()) {
                Ok(200) => Ok(()),
                other => Err(other.map_err(|e| e.to_string())),
            }
        },
    )
    .await;
    assert_eq!(sigterm(&mut server).code(), Some(0));
}

/// Issue 45: the word list is read again on SIGHUP; a file that cannot be
/// read leaves the list as it was.
#[tokio::test]
async fn sighup_reloads_the_word_list() {
    let db = common::TestDb::new().await;
    let dir = tempfile::tempdir().unwrap();
    let words = dir.path().join("words.txt");
    std::fs::write(&words, "badword\n").unwrap();
    let path = words.display().to_string();
    let server = start_env(&db, &[("LOBBY_WORD_LIST_FILE", &path)]);
    let client = reqwest::Client::new();
    let create = |name: &'static str| {
        let (client, url) = (client.clone(), format!("{}/session", server.base));
        async move {
            let body = common::session_body_with(json!({"name": name}));
            common::create_status(&client, url, &body).await
        }
    };
    assert_eq!(create("Friday co-op").await, 201);
    assert_eq!(create("The badword club").await, 400);
    std::fs::write(&words, "friday\n").unwrap();
    let hup = |pid: u32| {
        let status = Command::new("kill")
            .args(["-HUP", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    hup(server.child.id());
    eventually(Duration::from_secs(5), "the new list is read", || async {
        match create("Friday co-op").await {
            400 => Ok(()),
            other => Err(other),
        }
    })
    .await;
    assert_eq!(create("The badword club").await, 201);
    // Unreadable: the list stays as it was, and the server runs on.
    std::fs::remove_file(&words).unwrap();
    hup(server.child.id());
    log_line(&server.logs, "SIGHUP: the word list stays as it was");
    assert_eq!(create("Friday co-op").await, 400);
}
