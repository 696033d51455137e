//! The load-and-abuse benchmark (issue 14): normal players from many
//! addresses go through complete exchanges and read the lobby at a steady
//! pace, while one address runs one attack at a time. Reports the normal
//! clients' latency and error rate with and without each attack, what the
//! attacker got through, and the server's peak memory and descriptors.
//!
//! Every address is on 127.0.0.0/8: normal hosts on 127.0.1.x and 127.0.2.x,
//! their joiners on 127.0.3.x and 127.0.4.x, the attacker on 127.0.66.6.
//! Every loop is bounded in count and time.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hyper::{Method, StatusCode};
use protocol::api::PutSessionResponse;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

use crate::client::HttpClient;
use crate::exchange::sample_sdp;

/// The attacker's one address.
const ATTACKER: Ipv4Addr = Ipv4Addr::new(127, 0, 66, 6);
/// The proxy the `forwarded` attacker comes through.
const PROXY: Ipv4Addr = Ipv4Addr::new(127, 0, 66, 7);
/// Most requests (or connections) one attack makes in a phase.
const MAX_ATTACK_OPS: u64 = 200_000;
/// Most connections the connection attacks hold at once.
const MAX_HELD: usize = 5_000;

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
    fn name(self) -> &'static str {
        match self {
            Attack::None => "none",
            Attack::Methods => "methods",
            Attack::PageCache => "page-cache",
            Attack::SlowHeaders => "slow-headers",
            Attack::EventStreams => "event-streams",
            Attack::LongPolls => "long-polls",
            Attack::RoundGrab => "round-grab",
            Attack::Sessions => "sessions",
            Attack::UpdateFlood => "update-flood",
            Attack::SlowReaders => "slow-readers",
            Attack::Forwarded => "forwarded",
            Attack::Search => "search",
            Attack::LockedDb => "locked-db",
        }
    }
}

/// Settings of the benchmark.
pub struct AbuseRun {
    /// The server's base URL (`http://127.0.0.1:PORT`).
    pub server: String,
    /// The server's PID, to sample its memory and descriptors.
    pub server_pid: Option<u32>,
    /// Seconds each phase runs.
    pub seconds: u64,
    /// Normal clients (a host and a joiner each, every one its own address).
    pub normal_clients: usize,
    /// Seconds between one normal client's exchanges.
    pub pace_seconds: f64,
    /// The attacks, in order.
    pub attacks: Vec<Attack>,
    /// The server's SQLite file (the `locked-db` attack).
    pub database_path: Option<std::path::PathBuf>,
}

/// Runs every phase; one JSON object per attack.
pub async fn run(run: AbuseRun) -> anyhow::Result<Vec<Value>> {
    let mut results = Vec::new();
    for &attack in &run.attacks {
        let result = phase(&run, attack).await?;
        print_phase(&result);
        results.push(result);
        // Let the server settle (closed connections, expired budgets).
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    Ok(results)
}

/// Latencies and failures of the normal clients.
#[derive(Default)]
struct Normal {
    latencies: Mutex<Option<Histogram<u64>>>,
    requests: AtomicU64,
    errors: AtomicU64,
    exchanges: AtomicU64,
    first_errors: Mutex<Vec<String>>,
}

impl Normal {
    fn record(&self, took: Duration, ok: bool, what: impl FnOnce() -> String) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut h) = self.latencies.lock() {
            let h = h.get_or_insert_with(|| {
                Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds")
            });
            let _ = h.record(took.as_micros().clamp(1, 120_000_000) as u64);
        }
        if !ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut first) = self.first_errors.lock()
                && first.len() < 5
            {
                first.push(what());
            }
        }
    }
}

/// What the attacker sent and how much of it the server refused.
#[derive(Default)]
struct AttackCount {
    sent: AtomicU64,
    refused: AtomicU64,
    succeeded: AtomicU64,
}

async fn phase(run: &AbuseRun, attack: Attack) -> anyhow::Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(run.seconds);
    let normal = Arc::new(Normal::default());
    let counts = Arc::new(AttackCount::default());
    let peaks = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let sampler = run.server_pid.map(|pid| {
        let peaks = peaks.clone();
        tokio::spawn(async move {
            while Instant::now() < deadline {
                if let Some((rss, fds)) = sample(pid) {
                    peaks.0.fetch_max(rss, Ordering::Relaxed);
                    peaks.1.fetch_max(fds, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    });
    let mut clients = Vec::new();
    for i in 0..run.normal_clients {
        let (server, normal) = (run.server.clone(), normal.clone());
        let pace = Duration::from_secs_f64(run.pace_seconds);
        // Spread the first exchanges over one pace.
        let offset = pace.mul_f64(i as f64 / run.normal_clients.max(1) as f64);
        clients.push(tokio::spawn(async move {
            tokio::time::sleep(offset).await;
            normal_client(i, &server, pace, deadline, &normal).await;
        }));
    }
    let attacker = {
        let (server, counts) = (run.server.clone(), counts.clone());
        let database = run.database_path.clone();
        tokio::spawn(async move {
            attack_loop(attack, &server, database.as_deref(), deadline, &counts).await
        })
    };
    for c in clients {
        let _ = c.await;
    }
    let attacker_result = tokio::time::timeout(Duration::from_secs(30), attacker).await;
    if let Some(s) = sampler {
        let _ = s.await;
    }
    if !matches!(attacker_result, Ok(Ok(Ok(())))) {
        eprintln!(
            "abuse: the {} attack ended with {attacker_result:?}",
            attack.name()
        );
    }
    let hist = normal.latencies.lock().ok().and_then(|h| h.clone());
    let ms = |q: f64| {
        hist.as_ref()
            .map_or(0.0, |h| h.value_at_quantile(q) as f64 / 1000.0)
    };
    let requests = normal.requests.load(Ordering::Relaxed);
    let errors = normal.errors.load(Ordering::Relaxed);
    Ok(json!({
        "attack": attack.name(),
        "seconds": run.seconds,
        "normal": {
            "clients": run.normal_clients,
            "exchanges": normal.exchanges.load(Ordering::Relaxed),
            "requests": requests,
            "errors": errors,
            "errorRate": errors as f64 / requests.max(1) as f64,
            "p50Ms": ms(0.5),
            "p99Ms": ms(0.99),
            "maxMs": hist.as_ref().map_or(0.0, |h| h.max() as f64 / 1000.0),
            "firstErrors": normal.first_errors.lock().map(|e| e.clone()).unwrap_or_default(),
        },
        "attacker": {
            "sent": counts.sent.load(Ordering::Relaxed),
            "refused": counts.refused.load(Ordering::Relaxed),
            "succeeded": counts.succeeded.load(Ordering::Relaxed),
        },
        "server": {
            "peakRssMb": peaks.0.load(Ordering::Relaxed) as f64 / 1024.0,
            "peakFds": peaks.1.load(Ordering::Relaxed),
        },
    }))
}

fn print_phase(r: &Value) {
    println!(
        "{:<14} normal: {:>5} req, {:>4} errors ({:.2}%), p50 {:>7.2} ms, p99 {:>7.2} ms | attacker: {:>6} sent, {:>6} refused, {:>6} through | server peak {:>6.1} MB RSS, {:>5} fds",
        r["attack"].as_str().unwrap_or(""),
        r["normal"]["requests"],
        r["normal"]["errors"],
        r["normal"]["errorRate"].as_f64().unwrap_or(0.0) * 100.0,
        r["normal"]["p50Ms"].as_f64().unwrap_or(0.0),
        r["normal"]["p99Ms"].as_f64().unwrap_or(0.0),
        r["attacker"]["sent"],
        r["attacker"]["refused"],
        r["attacker"]["succeeded"],
        r["server"]["peakRssMb"].as_f64().unwrap_or(0.0),
        r["server"]["peakFds"],
    );
}

/// Resident memory (KiB) and open descriptors of `pid`.
fn sample(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some((rss, fds))
}

fn normal_address(i: usize, role: u8) -> IpAddr {
    // Hosts on 127.0.1-2.x, joiners on 127.0.3-4.x: one address each.
    let block = (i / 250) as u8;
    IpAddr::V4(Ipv4Addr::new(
        127,
        0,
        role * 2 + 1 + block,
        (i % 250) as u8 + 1,
    ))
}

/// One player hosting and one joining, an exchange every `pace`: create,
/// read, answer, the host's poll, a lobby page, delete.
async fn normal_client(i: usize, server: &str, pace: Duration, deadline: Instant, normal: &Normal) {
    let host = HttpClient::with_local_address(4, normal_address(i, 0));
    let joiner = HttpClient::with_local_address(4, normal_address(i, 1));
    let sdp = sample_sdp();
    let create = serde_json::to_vec(&json!({
        "name": format!("normal {i}"), "hostName": "host", "maxPlayers": 4, "build": "bench",
        "hostKind": "player", "offer": sdp,
    }))
    .unwrap_or_default();
    let answer = serde_json::to_vec(&json!({"round": 1, "answer": sdp, "name": "joiner"}))
        .unwrap_or_default();
    while Instant::now() + Duration::from_secs(2) < deadline {
        let started = Instant::now();
        let step = |what: &'static str, expected: StatusCode| {
            move |took: Duration, status: Option<StatusCode>, normal: &Normal| {
                normal.record(took, status == Some(expected), || {
                    format!("{what}: {status:?}")
                });
                status == Some(expected)
            }
        };
        // Create.
        let t = Instant::now();
        let reply = host
            .send(
                Method::PUT,
                &format!("{server}/session"),
                Some(create.clone()),
                None,
            )
            .await
            .ok();
        let ok = step("create", StatusCode::CREATED)(
            t.elapsed(),
            reply.as_ref().map(|r| r.status),
            normal,
        );
        let created: Option<PutSessionResponse> = reply
            .filter(|_| ok)
            .and_then(|r| serde_json::from_slice(&r.body).ok());
        if let Some(created) = created {
            let code = created.code.to_string();
            let token = created.host_token.unwrap_or_default();
            let t = Instant::now();
            let reply = joiner
                .send(Method::GET, &format!("{server}/session/{code}"), None, None)
                .await
                .ok();
            step("read", StatusCode::OK)(t.elapsed(), reply.map(|r| r.status), normal);
            let t = Instant::now();
            let reply = joiner
                .send(
                    Method::POST,
                    &format!("{server}/session/{code}/answer"),
                    Some(answer.clone()),
                    None,
                )
                .await
                .ok();
            let answered =
                step("answer", StatusCode::CREATED)(t.elapsed(), reply.map(|r| r.status), normal);
            if answered {
                let t = Instant::now();
                let reply = host
                    .send(
                        Method::GET,
                        &format!("{server}/session/{code}/answer?round=1&waitMs=1000"),
                        None,
                        Some(&token),
                    )
                    .await
                    .ok();
                step("poll", StatusCode::OK)(t.elapsed(), reply.map(|r| r.status), normal);
                normal.exchanges.fetch_add(1, Ordering::Relaxed);
            }
            let t = Instant::now();
            let reply = joiner
                .send(Method::GET, &format!("{server}/lobby?limit=20"), None, None)
                .await
                .ok();
            step("lobby", StatusCode::OK)(t.elapsed(), reply.map(|r| r.status), normal);
            let t = Instant::now();
            let reply = host
                .send(
                    Method::DELETE,
                    &format!("{server}/session/{code}"),
                    None,
                    Some(&token),
                )
                .await
                .ok();
            step("delete", StatusCode::NO_CONTENT)(t.elapsed(), reply.map(|r| r.status), normal);
        }
        let next = started + pace;
        if next >= deadline {
            break;
        }
        tokio::time::sleep_until(next.into()).await;
    }
}

async fn attack_loop(
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

/// The first line of the response on `stream`, if one comes within 200 ms
/// (a refusal on loopback does; a held long-poll does not).
async fn status_line(stream: &mut TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&buf[..n]);
    text.lines().next().map(str::to_owned)
}

/// The forwarded address of the `forwarded` attack (TEST-NET-2).
const FORWARDED_CLIENT: &str = "198.51.100.7";

/// A made-up session code for cursor `n`.
fn invented_code(n: u64) -> String {
    let alphabet = protocol::code::CODE_ALPHABET;
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..protocol::code::CODE_LEN)
        .map(|_| {
            let c = alphabet[(x % alphabet.len() as u64) as usize];
            x /= alphabet.len() as u64;
            char::from(c)
        })
        .collect()
}

/// Holds an exclusive lock on the SQLite file at `path` for `hold`, from
/// another process (Python's sqlite3, on every machine of this kind), as a
/// stuck disk or a backup tool would. Returns once the lock is gone.
async fn lock_database(path: &std::path::Path, hold: Duration) -> anyhow::Result<()> {
    let script = "import sqlite3, sys, time\n\
                  c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)\n\
                  c.execute('BEGIN EXCLUSIVE')\n\
                  print('locked', flush=True)\n\
                  time.sleep(float(sys.argv[2]))\n\
                  c.execute('ROLLBACK')\n";
    // The locker ends on its own after `hold`.
    let (path, hold) = (path.to_owned(), hold.as_secs_f64().to_string());
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(path)
            .arg(hold)
            .stdout(std::process::Stdio::null())
            .status()
    })
    .await??;
    anyhow::ensure!(status.success(), "locking the database failed: {status}");
    Ok(())
}

/// How long past its opening a slow reader's connection may be held open
/// before the benchmark counts it as getting through: the server's default
/// write stall timeout (10 s) and a margin.
const SLOW_READER_GRACE: Duration = Duration::from_secs(12);

/// [`open_from`] with a 4 KiB receive buffer, so the server's writes stall
/// soon.
async fn open_with_window(server: SocketAddr) -> std::io::Result<TcpStream> {
    connect_from(server, ATTACKER, Some(4096)).await
}

/// Ends one of the attacker's sessions, so the next phase starts clean.
async fn delete_own(client: &HttpClient, server: &str, code: &str, token: &str) {
    let _ = client
        .send(
            Method::DELETE,
            &format!("{server}/session/{code}"),
            None,
            Some(token),
        )
        .await;
}

/// A session of the attacker's own, public, with a maximum-size offer when
/// `meta_bytes` > 0 (and that much metadata).
async fn create_own(
    client: &HttpClient,
    server: &str,
    meta_bytes: usize,
) -> Option<(String, String)> {
    let offer = if meta_bytes > 0 {
        let mut sdp = sample_sdp();
        while sdp.len() < 31 * 1024 {
            sdp.push_str(
                "a=x-pad:0123456789012345678901234567890123456789012345678901234567890123\r\n",
            );
        }
        sdp
    } else {
        sample_sdp()
    };
    let mut body = json!({
        "name": "attacker", "hostName": "attacker", "maxPlayers": 4, "build": "attack",
        "hostKind": "player", "offer": offer,
    });
    if meta_bytes > 0 {
        body["meta"] = json!({"pad": "x".repeat(meta_bytes - 20)});
    }
    let reply = client
        .send(
            Method::PUT,
            &format!("{server}/session"),
            serde_json::to_vec(&body).ok(),
            None,
        )
        .await
        .ok()?;
    if reply.status != StatusCode::CREATED {
        return None;
    }
    let created: PutSessionResponse = serde_json::from_slice(&reply.body).ok()?;
    Some((created.code.to_string(), created.host_token?))
}

/// A TCP connection to the server from the attacker's address.
async fn open_from(server: SocketAddr) -> std::io::Result<TcpStream> {
    connect_from(server, ATTACKER, None).await
}

/// A TCP connection to the server from `source`, with a receive buffer of
/// `recv_buffer` bytes when given; at most 2 s to connect.
async fn connect_from(
    server: SocketAddr,
    source: Ipv4Addr,
    recv_buffer: Option<u32>,
) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    if let Some(bytes) = recv_buffer {
        socket.set_recv_buffer_size(bytes)?;
    }
    socket.bind(SocketAddr::new(IpAddr::V4(source), 0))?;
    tokio::time::timeout(Duration::from_secs(2), socket.connect(server))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
}

/// Whether the server has not closed `stream` (nothing to read, no EOF).
fn still_open(stream: &TcpStream) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match stream.try_read(&mut buf) {
            Ok(0) => return false,
            // A refusal (503, 429) or event data: drain and look again.
            Ok(_) => {
                if buf.starts_with(b"HTTP/1.1 4") || buf.starts_with(b"HTTP/1.1 5") {
                    return false;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

/// A distinct string of `len` letters for counter `n`.
fn invented(n: u64, len: usize) -> String {
    let mut s = String::with_capacity(len);
    let mut x = n;
    for _ in 0..len {
        s.push(char::from(b'A' + (x % 26) as u8));
        x = x / 26 + n.wrapping_mul(2_654_435_761) % 7;
    }
    s
}
