//! Read workloads: filling the lobby with sessions, walking `GET /lobby`
//! pages (plain, searched, filtered), and the `/healthz` ceiling.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::{Value, json};

use crate::client::HttpClient;
use crate::stats::{Op, Recorder};

/// Creates `count` public sessions (no offer) across `servers`.
pub async fn populate(
    servers: &[String],
    count: u64,
    concurrency: usize,
    recorder: Arc<Recorder>,
) -> u64 {
    let client = HttpClient::new(concurrency);
    let next = Arc::new(AtomicU64::new(0));
    let made = Arc::new(AtomicU64::new(0));
    let servers = Arc::new(servers.to_vec());
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, next, made, servers, recorder) = (
            client.clone(),
            next.clone(),
            made.clone(),
            servers.clone(),
            recorder.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let body = json!({
                    "name": format!("lobby session {i}"), "hostName": format!("host{i}"),
                    "maxPlayers": 4, "players": 1 + i % 4, "build": if i % 2 == 0 { "v1" } else { "v2" },
                    "difficulty": "normal", "campaign": "demos", "hostKind": if i % 3 == 0 { "daemon" } else { "player" },
                });
                let url = format!("{}/session", servers[i as usize % servers.len()]);
                match client.send(Method::PUT, &url, Some(body.to_string().into_bytes()), None).await {
                    Ok(r) if r.status == 201 => {
                        made.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(r) => recorder.error(format!("populate: status {}", r.status)),
                    Err(e) => recorder.error(format!("populate: {e}")),
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    made.load(Ordering::Relaxed)
}

/// The `nextCursor` of a lobby page, found without parsing the whole page
/// (the field is last), so the client spends its CPU on requests.
fn next_cursor(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let at = text.rfind("\"nextCursor\":")?;
    serde_json::from_str::<Value>(text[at + 13..].trim_end_matches('}'))
        .ok()?
        .as_str()
        .map(str::to_owned)
}

/// What a read loop requests.
#[derive(Clone, Copy)]
pub enum Target {
    /// `GET /lobby?limit=50`, walking pages by cursor and starting over.
    LobbyPages,
    /// `GET /lobby?limit=50&` plus a search and filters, walking pages by
    /// cursor and starting over.
    LobbyQuery(&'static str),
    /// `GET /healthz`.
    Healthz,
}

/// Hammers `target` with `concurrency` loops for `duration` (bounded by
/// `max_requests`); returns requests completed.
pub async fn read_loop(
    servers: &[String],
    target: Target,
    concurrency: usize,
    duration: Duration,
    max_requests: u64,
    recorder: Arc<Recorder>,
) -> u64 {
    let client = HttpClient::new(concurrency);
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + duration;
    let servers = Arc::new(servers.to_vec());
    let mut workers = Vec::new();
    for w in 0..concurrency {
        let (client, done, servers, recorder) = (
            client.clone(),
            done.clone(),
            servers.clone(),
            recorder.clone(),
        );
        workers.push(tokio::spawn(async move {
            let base = &servers[w % servers.len()];
            let mut cursor: Option<String> = None;
            while Instant::now() < deadline && done.fetch_add(1, Ordering::Relaxed) < max_requests {
                let (op, url) = match target {
                    Target::Healthz => (Op::Healthz, format!("{base}/healthz")),
                    Target::LobbyPages => (
                        Op::LobbyPage,
                        match &cursor {
                            Some(c) => format!("{base}/lobby?limit=50&cursor={c}"),
                            None => format!("{base}/lobby?limit=50"),
                        },
                    ),
                    Target::LobbyQuery(query) => (
                        Op::LobbyPage,
                        match &cursor {
                            Some(c) => format!("{base}/lobby?limit=50&{query}&cursor={c}"),
                            None => format!("{base}/lobby?limit=50&{query}"),
                        },
                    ),
                };
                let t = Instant::now();
                match client.send(Method::GET, &url, None, None).await {
                    Ok(r) if r.status == 200 => {
                        recorder.record(op, t.elapsed());
                        if matches!(target, Target::LobbyPages | Target::LobbyQuery(_)) {
                            cursor = next_cursor(&r.body);
                        }
                    }
                    Ok(r) => recorder.error(format!("{}: status {}", op.name(), r.status)),
                    Err(e) => recorder.error(format!("{}: {e}", op.name())),
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    done.load(Ordering::Relaxed).min(max_requests)
}
