//! The load-and-abuse benchmark (issue 14): normal players from many
//! addresses go through complete exchanges and read the lobby at a steady
//! pace, while one address runs one attack at a time. Reports the normal
//! clients' latency and error rate with and without each attack, what the
//! attacker got through, and the server's peak memory and descriptors.
//!
//! Every address is on 127.0.0.0/8: normal hosts on 127.0.1.x and 127.0.2.x,
//! their joiners on 127.0.3.x and 127.0.4.x, the attacker on 127.0.66.6.
//! Every loop is bounded in count and time.

mod attack;
mod tools;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hyper::{Method, StatusCode};
use lobby_api::api::PutSessionResponse;
use serde_json::{Value, json};

use crate::client::HttpClient;
use crate::exchange::sample_sdp;

pub use attack::Attack;
use attack::attack_loop;

/// The attacker's one address.
pub(super) const ATTACKER: Ipv4Addr = Ipv4Addr::new(127, 0, 66, 6);
/// The proxy the `forwarded` attacker comes through.
pub(super) const PROXY: Ipv4Addr = Ipv4Addr::new(127, 0, 66, 7);
/// Most requests (or connections) one attack makes in a phase.
pub(super) const MAX_ATTACK_OPS: u64 = 200_000;
/// Most connections the connection attacks hold at once.
pub(super) const MAX_HELD: usize = 5_000;

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
