//! The lobby feed's fan-out: what one lobby change costs the server with
//! many `GET /lobby/events` subscribers, measured as server CPU per change.
//!
//! One session is updated `changes` times (each a visible change, so each
//! publishes an event), first with no subscriber (the baseline: the update
//! itself), then with `subscribers` open feeds; the difference is what the
//! fan-out costs. Subscribers are raw TCP connections that count `event:`
//! lines. Every loop is bounded in count and time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::HttpClient;

/// What one measurement found.
pub struct FanoutRun {
    /// Server CPU per change, microseconds.
    pub cpu_us_per_change: f64,
    /// Events the subscribers received in all.
    pub events_received: u64,
    /// Seconds from the first change until the last subscriber had every event.
    pub seconds: f64,
}

/// Opens `count` subscriptions to `GET /lobby/events{query}`; each counts
/// the events it receives into the shared counter. Returns once every one
/// has its response headers (or after 30 s).
async fn subscribe(
    server: &str,
    query: &str,
    count: usize,
    received: Arc<AtomicU64>,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let addr = server
        .strip_prefix("http://")
        .ok_or_else(|| anyhow::anyhow!("only http:// servers"))?
        .trim_end_matches('/')
        .to_owned();
    let connected = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(count);
    for _ in 0..count {
        let (addr, query, received, connected) = (
            addr.clone(),
            query.to_owned(),
            received.clone(),
            connected.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let Ok(mut stream) = TcpStream::connect(&addr).await else {
                return;
            };
            let request = format!(
                "GET /lobby/events{query} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
            );
            if stream.write_all(request.as_bytes()).await.is_err() {
                return;
            }
            let mut buf = vec![0u8; 64 * 1024];
            let mut carry: Vec<u8> = Vec::new();
            let mut headers_seen = false;
            loop {
                let n = match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                carry.extend_from_slice(&buf[..n]);
                if !headers_seen {
                    let Some(at) = carry.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    headers_seen = true;
                    connected.fetch_add(1, Ordering::Relaxed);
                    carry.drain(..at + 4);
                }
                let events = carry.windows(7).filter(|w| *w == b"event: ").count() as u64;
                received.fetch_add(events, Ordering::Relaxed);
                // Keep a tail that could hold the start of a split `event: `.
                let keep = carry.len().min(6);
                carry.drain(..carry.len() - keep);
            }
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while (connected.load(Ordering::Relaxed) as usize) < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The stream is lazy: give every subscription a moment to exist.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(tasks)
}

/// Creates the session the runs update; returns (code, token).
pub async fn create_session(server: &str) -> anyhow::Result<(String, String)> {
    let client = HttpClient::new(1);
    let body = json!({
        "name": "fanout probe", "hostName": "probe", "maxPlayers": 8, "players": 1,
        "build": "v1", "hostKind": "player",
    });
    let reply = client
        .send(
            Method::PUT,
            &format!("{server}/session"),
            Some(body.to_string().into_bytes()),
            None,
        )
        .await?;
    anyhow::ensure!(reply.status == 201, "create: status {}", reply.status);
    let v: Value = serde_json::from_slice(&reply.body)?;
    Ok((
        v["code"].as_str().unwrap_or_default().to_owned(),
        v["hostToken"].as_str().unwrap_or_default().to_owned(),
    ))
}

/// Updates the session `changes` times (players alternating, so each is a
/// visible change) with `subscribers` feeds of `query` open, and waits (at
/// most 60 s) until each feed that should see them has them.
pub async fn run(
    server: &str,
    server_pid: u32,
    session: &(String, String),
    subscribers: usize,
    query: &str,
    expect_events: bool,
    changes: u64,
) -> anyhow::Result<FanoutRun> {
    let received = Arc::new(AtomicU64::new(0));
    let feeds = if subscribers > 0 {
        subscribe(server, query, subscribers, received.clone()).await?
    } else {
        Vec::new()
    };
    let client = HttpClient::new(4);
    let (code, token) = session;
    let cpu_before = crate::cpu::process_cpu_time(server_pid)?;
    let started = Instant::now();
    for i in 0..changes {
        let body = json!({"code": code, "players": 2 + i % 2});
        let reply = client
            .send(
                Method::PUT,
                &format!("{server}/session"),
                Some(body.to_string().into_bytes()),
                Some(token),
            )
            .await?;
        anyhow::ensure!(reply.status == 200, "update: status {}", reply.status);
    }
    let want = if expect_events {
        changes * subscribers as u64
    } else {
        0
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while received.load(Ordering::Relaxed) < want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    // Let the server finish writing whatever is in flight.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu = crate::cpu::process_cpu_time(server_pid)? - cpu_before;
    for feed in feeds {
        feed.abort();
    }
    Ok(FanoutRun {
        cpu_us_per_change: cpu.as_secs_f64() * 1e6 / changes as f64,
        events_received: received.load(Ordering::Relaxed),
        seconds,
    })
}
