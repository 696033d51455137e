//! The attacks: what each does from the attacker's address, bounded in
//! operations, connections held and time.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::client::HttpClient;
use crate::exchange::sample_sdp;

use super::tools::*;
use super::*;

/// The attacks, each run alone against normal traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Attack {
    /// No attack: the baseline.
    None,
    /// Requests with invented 8,000-letter HTTP methods (metric labels).
    Methods,
    /// Distinct 64-character build filters and searches (the page cache).
    PageCache,
    /// Connections holding unfinished headers.
    SlowHeaders,
    /// Lobby event streams from one address.
    EventStreams,
    /// Concurrent answer long-polls on the attacker's own session.
    LongPolls,
    /// Answering every open round it can see with junk SDP.
    RoundGrab,
    /// 65 addresses (127.0.67.1-65), each holding as many idle
    /// connections as the server lets it (64 at the default cap), every
    /// one the server closes reopened: together past `--max-connections`.
    ManyAddresses,
    /// As many sessions as it can create, kept alive with free polls.
    Sessions,
    /// Host updates of its own session as fast as it can.
    UpdateFlood,
    /// Connections that pipeline requests for a large document and read
    /// nothing (the server's writes stall).
    SlowReaders,
    /// One client behind a trusted proxy (connecting from [`PROXY`], which
    /// the server must trust: `--trust-forwarded-for --trusted-proxies
    /// 127.0.66.7`) holding event streams and long-polls with one forwarded
    /// address.
    Forwarded,
    /// Lobby pages the cache cannot answer: the longest searches the
    /// server takes (eight words), each with a made-up cursor.
    Search,
    /// The SQLite file locked by another process (`BEGIN EXCLUSIVE`) for
    /// the first half of the phase, as a stuck disk would; needs
    /// `--database-path`. What gets through: nothing is sent; normal
    /// clients' writes fail then (counted as their errors) and must
    /// recover once the lock goes.
    LockedDb,
}

impl Attack {
    pub(super) fn name(self) -> &'static str {
        match self {
            Attack::None => "none",
            Attack::Methods => "methods",
            Attack::PageCache => "page-cache",
            Attack::SlowHeaders => "slow-headers",
            Attack::EventStreams => "event-streams",
            Attack::LongPolls => "long-polls",
            Attack::RoundGrab => "round-grab",
            Attack::ManyAddresses => "many-addresses",
            Attack::Sessions => "sessions",
            Attack::UpdateFlood => "update-flood",
            Attack::SlowReaders => "slow-readers",
            Attack::Forwarded => "forwarded",
            Attack::Search => "search",
            Attack::LockedDb => "locked-db",
        }
    }
}

pub(super) async fn attack_loop(
    attack: Attack,
    server: &str,
    database: Option<&std::path::Path>,
    deadline: Instant,
    counts: &AttackCount,
) -> anyhow::Result<()> {
    let client = HttpClient::with_local_address(64, IpAddr::V4(ATTACKER));
    let addr: SocketAddr = server
        .trim_start_matches("http://")
        .parse()
        .map_err(|e| anyhow::anyhow!("server address: {e}"))?;
    let mut n = 0u64;
    let mut next = || {
        n += 1;
        n
    };
    let count = |status: Option<StatusCode>| {
        counts.sent.fetch_add(1, Ordering::Relaxed);
        match status {
            Some(s) if s.is_success() => counts.succeeded.fetch_add(1, Ordering::Relaxed),
            _ => counts.refused.fetch_add(1, Ordering::Relaxed),
        };
    };
    let live = |counts: &AttackCount| {
        Instant::now() < deadline && counts.sent.load(Ordering::Relaxed) < MAX_ATTACK_OPS
    };
    match attack {
        Attack::None => tokio::time::sleep_until(deadline.into()).await,
        Attack::Methods => {
            while live(counts) {
                let method = Method::from_bytes(invented(next(), 8_000).as_bytes())?;
                let reply = client
                    .send(method, &format!("{server}/lobby"), None, None)
                    .await;
                count(reply.ok().map(|r| r.status));
            }
        }
        Attack::PageCache => {
            while live(counts) {
                let i = next();
                let query = if i % 2 == 0 {
                    format!("build={}", invented(i, 64))
                } else {
                    format!("q={}", invented(i, 64))
                };
                let reply = client
                    .send(
                        Method::GET,
                        &format!("{server}/lobby?limit=100&{query}"),
                        None,
                        None,
                    )
                    .await;
                count(reply.ok().map(|r| r.status));
            }
        }
        Attack::SlowHeaders => {
            let mut held = Vec::new();
            while live(counts) && held.len() < MAX_HELD {
                counts.sent.fetch_add(1, Ordering::Relaxed);
                match open_from(addr).await {
                    Ok(mut s) => {
                        let _ = s
                            .write_all(b"GET /lobby HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                            .await;
                        held.push(s);
                    }
                    Err(_) => {
                        counts.refused.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            // Count how many the server still holds open at the end.
            tokio::time::sleep_until(deadline.into()).await;
            let open = held.iter().filter(|s| still_open(s)).count() as u64;
            counts.succeeded.store(open, Ordering::Relaxed);
        }
        Attack::ManyAddresses => {
            let sources: Vec<Ipv4Addr> = (1..=65).map(|i| Ipv4Addr::new(127, 0, 67, i)).collect();
            let mut held: Vec<(usize, TcpStream)> = Vec::new();
            while live(counts) {
                held.retain(|(_, s)| still_open(s));
                let mut per = vec![0usize; sources.len()];
                for (i, _) in &held {
                    per[*i] += 1;
                }
                for (i, source) in sources.iter().enumerate() {
                    while per[i] < 64 && held.len() < MAX_HELD && live(counts) {
                        counts.sent.fetch_add(1, Ordering::Relaxed);
                        match connect_from(addr, *source, None).await {
                            Ok(s) => {
                                held.push((i, s));
                                per[i] += 1;
                            }
                            Err(_) => {
                                counts.refused.fetch_add(1, Ordering::Relaxed);
                                break;
                            }
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let open = held.iter().filter(|(_, s)| still_open(s)).count() as u64;
            counts.succeeded.store(open, Ordering::Relaxed);
        }
        Attack::EventStreams => {
            let mut held = Vec::new();
            while live(counts) && held.len() < MAX_HELD {
                counts.sent.fetch_add(1, Ordering::Relaxed);
                let Ok(mut s) = open_from(addr).await else {
                    counts.refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = s
                    .write_all(b"GET /lobby/events HTTP/1.1\r\nHost: x\r\n\r\n")
                    .await;
                held.push(s);
                if held.len() % 100 == 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            tokio::time::sleep_until(deadline.into()).await;
            let open = held.iter().filter(|s| still_open(s)).count() as u64;
            counts.succeeded.store(open, Ordering::Relaxed);
            counts.refused.store(
                counts.sent.load(Ordering::Relaxed).saturating_sub(open),
                Ordering::Relaxed,
            );
        }
        Attack::LongPolls => {
            let Some((code, token)) = create_own(&client, server, 0).await else {
                anyhow::bail!("the attacker could not create its session");
            };
            let mut polls = tokio::task::JoinSet::new();
            while live(counts) && polls.len() < 2_000 {
                let (client, url, token) = (
                    client.clone(),
                    format!("{server}/session/{code}/answer?round=1&waitMs=25000"),
                    token.clone(),
                );
                counts.sent.fetch_add(1, Ordering::Relaxed);
                polls.spawn(async move {
                    client
                        .send(Method::GET, &url, None, Some(&token))
                        .await
                        .ok()
                        .map(|r| r.status)
                });
            }
            while let Some(done) = polls.join_next().await {
                match done.ok().flatten() {
                    Some(StatusCode::NO_CONTENT) => {
                        counts.succeeded.fetch_add(1, Ordering::Relaxed)
                    }
                    _ => counts.refused.fetch_add(1, Ordering::Relaxed),
                };
            }
            delete_own(&client, server, &code, &token).await;
        }
        Attack::RoundGrab => {
            let junk = serde_json::to_vec(
                &json!({"round": 1, "answer": sample_sdp(), "name": "grabber"}),
            )?;
            while live(counts) {
                let page = client
                    .send(
                        Method::GET,
                        &format!("{server}/lobby?limit=100&build=bench"),
                        None,
                        None,
                    )
                    .await;
                let codes: Vec<String> = page
                    .ok()
                    .and_then(|r| serde_json::from_slice::<Value>(&r.body).ok())
                    .and_then(|v| {
                        v["sessions"].as_array().map(|s| {
                            s.iter()
                                .filter_map(|e| e["code"].as_str().map(str::to_owned))
                                .collect()
                        })
                    })
                    .unwrap_or_default();
                for code in codes {
                    let reply = client
                        .send(
                            Method::POST,
                            &format!("{server}/session/{code}/answer"),
                            Some(junk.clone()),
                            None,
                        )
                        .await;
                    count(reply.ok().map(|r| r.status));
                    if !live(counts) {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Attack::Sessions => {
            let mut own = Vec::new();
            while live(counts) && own.len() < 10_000 {
                let made = create_own(&client, server, 1_000).await;
                counts.sent.fetch_add(1, Ordering::Relaxed);
                match made {
                    Some(s) => {
                        counts.succeeded.fetch_add(1, Ordering::Relaxed);
                        own.push(s);
                    }
                    None => {
                        counts.refused.fetch_add(1, Ordering::Relaxed);
                        // Keep what it has alive with free polls meanwhile
                        // (not counted: only creates are).
                        for (code, token) in own.iter().take(50) {
                            let url = format!("{server}/session/{code}/answer?round=1&waitMs=0");
                            let _ = client.send(Method::GET, &url, None, Some(token)).await;
                        }
                    }
                }
            }
            for (code, token) in &own {
                delete_own(&client, server, code, token).await;
            }
        }
        Attack::UpdateFlood => {
            let Some((code, token)) = create_own(&client, server, 0).await else {
                anyhow::bail!("the attacker could not create its session");
            };
            while live(counts) {
                let body =
                    serde_json::to_vec(&json!({"code": code, "name": invented(next(), 30)}))?;
                let reply = client
                    .send(
                        Method::PUT,
                        &format!("{server}/session"),
                        Some(body),
                        Some(&token),
                    )
                    .await;
                count(reply.ok().map(|r| r.status));
            }
            delete_own(&client, server, &code, &token).await;
        }
        Attack::SlowReaders => {
            // Each connection asks for the OpenAPI document (tens of KB)
            // 400 times with a small receive window and reads nothing; a
            // refused or closed connection is replaced. What got through:
            // connections the server still held at the end that were
            // opened more than SLOW_READER_GRACE before it (past the
            // server's write stall timeout).
            let request = "GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n".repeat(400);
            let mut held: Vec<(TcpStream, Instant)> = Vec::new();
            // Nothing is read from them before the end (reading would
            // make them readers), so closed ones stay in the list too.
            while live(counts) && held.len() < MAX_HELD {
                counts.sent.fetch_add(1, Ordering::Relaxed);
                match open_with_window(addr).await {
                    Ok(mut s) => {
                        // The write may block once the server stops reading.
                        let _ = tokio::time::timeout(
                            Duration::from_millis(200),
                            s.write_all(request.as_bytes()),
                        )
                        .await;
                        held.push((s, Instant::now()));
                    }
                    Err(_) => {
                        counts.refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep_until(deadline.into()).await;
            let old = held
                .iter()
                .filter(|(s, at)| {
                    deadline.saturating_duration_since(*at) > SLOW_READER_GRACE && still_open(s)
                })
                .count() as u64;
            counts.succeeded.store(old, Ordering::Relaxed);
        }
        Attack::Forwarded => {
            // Half event streams, half long-polls on its own session, all
            // from one forwarded address; what got through: requests the
            // server still held at the end.
            let Some((code, token)) = create_own(&client, server, 0).await else {
                anyhow::bail!("the attacker could not create its session");
            };
            let mut held = Vec::new();
            while live(counts) && held.len() < MAX_HELD {
                counts.sent.fetch_add(1, Ordering::Relaxed);
                let Ok(mut s) = connect_from(addr, PROXY, None).await else {
                    counts.refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let path = if held.len() % 2 == 0 {
                    "/lobby/events".to_owned()
                } else {
                    format!("/session/{code}/answer?round=1&waitMs=25000")
                };
                let request = format!(
                    "GET {path} HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: {FORWARDED_CLIENT}\r\n\
                     Authorization: Bearer {token}\r\n\r\n"
                );
                let _ = s.write_all(request.as_bytes()).await;
                // As the shipped nginx does (a keepalive pool of 32 per
                // worker), a refused request's connection is not kept:
                // only requests the server holds hold a connection.
                // A long-poll held by the server sends nothing yet.
                match status_line(&mut s).await {
                    Some(line) if !line.contains(" 200 ") => {
                        counts.refused.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => held.push(s),
                }
            }
            tokio::time::sleep_until(deadline.into()).await;
            let open = held.iter().filter(|s| still_open(s)).count() as u64;
            counts.succeeded.store(open, Ordering::Relaxed);
            drop(held);
            delete_own(&client, server, &code, &token).await;
        }
        Attack::Search => {
            while live(counts) {
                let i = next();
                // Eight words of seven letters: the most the server takes
                // (8 words, 64 characters).
                let words: Vec<String> = (0..8).map(|w| invented(i * 8 + w, 7)).collect();
                let cursor = format!("{}.{}", 1_000_000 + i, invented_code(i));
                let url = format!(
                    "{server}/lobby?limit=100&q={}&cursor={cursor}",
                    words.join("+")
                );
                let reply = client.send(Method::GET, &url, None, None).await;
                count(reply.ok().map(|r| r.status));
            }
        }
        Attack::LockedDb => {
            let Some(path) = database else {
                anyhow::bail!("the locked-db attack needs --database-path");
            };
            let hold = deadline.saturating_duration_since(Instant::now()) / 2;
            counts.sent.fetch_add(1, Ordering::Relaxed);
            lock_database(path, hold).await?;
            tokio::time::sleep_until(deadline.into()).await;
        }
    }
    Ok(())
}
