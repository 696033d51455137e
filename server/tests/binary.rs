//! The real `lobby-server` binary: it logs `listening on http://ADDR` once
//! serving, exits 0 on SIGTERM, and a session outlives a restart.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::SDP;
use serde_json::{Value, json};

struct Server {
    child: Child,
    base: String,
}

fn start(db: &common::TestDb) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lobby-server"))
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .env("LOBBY_DATABASE_URL", db.url())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start lobby-server");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().expect("a log line").expect("readable");
    let line: Value = serde_json::from_str(&first).expect("JSON log line");
    let message = line["message"].as_str().expect("message field");
    let base = message
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the first line says where it listens; got {first}"))
        .to_owned();
    // Keep draining the logs so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, base }
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
    for _ in 0..100 {
        if let Some(status) = server.child.try_wait().unwrap() {
            return status;
        }
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
    let res = client
        .put(format!("{}/session", server.base))
        .json(&json!({"name": "n", "hostName": "h", "maxPlayers": 3, "build": "b", "hostKind": "daemon", "offer": SDP}))
        .send()
        .await
        .unwrap();
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
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = sigterm(&mut server);
    assert_eq!(status.code(), Some(0), "exit status {status:?}");
    assert_eq!(poll.await.unwrap().unwrap().status(), 204);

    let mut server = start(&db);
    let view: Value = client
        .get(format!("{}/session/{code}", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
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
async fn an_acknowledged_change_survives_a_kill_9() {
    let db = common::TestDb::new().await;
    let client = reqwest::Client::new();
    let mut server = start(&db);
    let res = client
        .put(format!("{}/session", server.base))
        .json(&json!({"name": "n", "hostName": "h", "maxPlayers": 3, "build": "b", "hostKind": "daemon", "offer": SDP}))
        .send()
        .await
        .unwrap();
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
    let view: Value = client
        .get(format!("{}/session/{code}", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
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
