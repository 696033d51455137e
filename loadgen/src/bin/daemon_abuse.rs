//! `daemon-abuse`: attacks on a running `host-daemon` through its one UDP
//! socket, measured (issue 44; `scripts/bench-abuse --daemon`).
//!
//! `spray`: joins a session's round like any joiner (a real answer from a
//! real endpoint, so the daemon applies it and knows its credentials),
//! then sends binding requests signed with those credentials from forged
//! source addresses (a raw socket: root), 127.100.0.0 upward, every one
//! on the same port. A socket bound to that port on every address counts
//! what the daemon sends to the forged addresses. Before and after, it
//! reads the daemon's tick lateness from its Prometheus metrics and its
//! CPU time from /proc, and prints one JSON line.
//!
//! Loopback only: the daemon, the lobby and every forged address are on
//! 127.0.0.0/8. Bounded: at most `--sources` requests (200,000 at most),
//! at most `--seconds`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use host_daemon::lobby_client::LobbyClient;
use host_daemon::transport::webrtc::{Endpoint, GuestAnswer, WebRtcOptions};
use serde_json::json;

/// Attacks on a host-daemon's UDP socket (loopback only).
#[derive(Parser, Debug)]
#[command(name = "daemon-abuse", version)]
enum Command {
    /// Forged-source binding requests on one claimed round of a session.
    Spray(Spray),
}

#[derive(clap::Args, Debug)]
struct Spray {
    /// Lobby server base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    server: String,
    /// The session whose round to claim.
    #[arg(long)]
    code: String,
    /// Forged source addresses (one request each; 0: measure only).
    #[arg(long, default_value_t = 30_000)]
    sources: u32,
    /// Requests per second.
    #[arg(long, default_value_t = 15_000)]
    rate: u32,
    /// The port every forged source uses (the counting socket binds it).
    #[arg(long, default_value_t = 47_001)]
    port: u16,
    /// The daemon's Prometheus metrics, `http://ADDR/metrics`.
    #[arg(long)]
    metrics: String,
    /// The daemon's process id (for its CPU time).
    #[arg(long)]
    daemon_pid: Option<u32>,
    /// Most seconds the spray runs.
    #[arg(long, default_value_t = 4)]
    seconds: u64,
    /// Seconds measured after the spray (late replies and checks).
    #[arg(long, default_value_t = 2)]
    settle_seconds: u64,
}

/// The daemon's tick lateness histogram: sum (seconds) and count.
async fn lateness(metrics: &str) -> anyhow::Result<(f64, f64)> {
    let text = reqwest::get(metrics)
        .await
        .context("reading the daemon's metrics")?
        .text()
        .await?;
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Ok((
        value("campfire_daemon_tick_lateness_seconds_sum "),
        value("campfire_daemon_tick_lateness_seconds_count "),
    ))
}

/// A process's CPU time (user and system), seconds.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// A process's resident memory, MB.
fn rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// An SDP attribute's value (`a=NAME:value`).
fn attribute<'a>(sdp: &'a str, name: &str) -> Option<&'a str> {
    sdp.lines().find_map(|l| l.trim_end().strip_prefix(name))
}

/// The offer's one candidate: the daemon's UDP address.
fn candidate(sdp: &str) -> Option<SocketAddrV4> {
    let line = attribute(sdp, "a=candidate:")?;
    let parts: Vec<&str> = line.split_whitespace().collect();
    let ip: Ipv4Addr = parts.get(4)?.parse().ok()?;
    let port: u16 = parts.get(5)?.parse().ok()?;
    Some(SocketAddrV4::new(ip, port))
}

/// A binding request from the controlled side naming `username`, signed
/// with `password`.
fn binding_request(username: &str, password: &str) -> anyhow::Result<Vec<u8>> {
    use str0m::ice::{StunMessage, TransId};
    let provider = str0m::crypto::from_feature_flags();
    let hmac = |key: &[u8], parts: &[&[u8]]| provider.sha1_hmac_provider.sha1_hmac(key, parts);
    let request = StunMessage::binding_request(username, TransId::new(), false, 7, 1 << 24, false);
    let mut buf = vec![0; 1200];
    let n = request
        .to_bytes(Some(password.as_bytes()), &mut buf, hmac)
        .map_err(|e| anyhow::anyhow!("encoding a binding request: {e:?}"))?;
    buf.truncate(n);
    Ok(buf)
}

/// `datagram` as the IPv4 packet a host at `from` would send to `to`.
fn forged_packet(from: SocketAddrV4, to: SocketAddrV4, datagram: &[u8]) -> Vec<u8> {
    let total = (28 + datagram.len()) as u16;
    let mut p = Vec::with_capacity(usize::from(total));
    // Version 4, a 20-byte header; the kernel fills in the id and checksum.
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    p.extend_from_slice(&from.ip().octets());
    p.extend_from_slice(&to.ip().octets());
    p.extend_from_slice(&from.port().to_be_bytes());
    p.extend_from_slice(&to.port().to_be_bytes());
    p.extend_from_slice(&(total - 20).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(datagram);
    p
}

/// The `i`th forged source: 127.100.0.0 upward.
fn forged_source(i: u32, port: u16) -> SocketAddrV4 {
    let n = (100u32 << 16) + i;
    SocketAddrV4::new(
        Ipv4Addr::new(127, (n >> 16) as u8, (n >> 8) as u8, n as u8),
        port,
    )
}

async fn spray(args: Spray) -> anyhow::Result<serde_json::Value> {
    if args.sources > 200_000 {
        bail!("--sources: at most 200,000");
    }
    // Claim a round as any joiner would, from a real endpoint of our own.
    let lobby = LobbyClient::new(&args.server)?;
    let view = lobby.get_session(&args.code).await?;
    let (Some(round), Some(offer)) = (view.round, view.offer) else {
        bail!("session {} has no open round", args.code);
    };
    let daemon = candidate(&offer).context("the offer names no IPv4 candidate")?;
    if !daemon.ip().is_loopback() {
        bail!("the daemon at {daemon} is not on loopback");
    }
    let endpoint = Endpoint::bind(&WebRtcOptions {
        bind_ip: IpAddr::V4(Ipv4Addr::new(127, 0, 66, 6)),
        ..WebRtcOptions::default()
    })
    .await?;
    let answer = GuestAnswer::new(&endpoint, &offer).await?;
    lobby
        .post_answer(
            &args.code,
            round,
            answer.answer_sdp().to_owned(),
            Some("sprayer".into()),
        )
        .await?;
    let host_ufrag = attribute(&offer, "a=ice-ufrag:").context("offer ufrag")?;
    let host_pwd = attribute(&offer, "a=ice-pwd:").context("offer password")?;
    let own_ufrag = attribute(answer.answer_sdp(), "a=ice-ufrag:").context("answer ufrag")?;
    let request = binding_request(&format!("{host_ufrag}:{own_ufrag}"), host_pwd)?;
    // The daemon applies the answer within a long-poll's wake-up.
    tokio::time::sleep(Duration::from_millis(300)).await;

    // What the daemon sends to the forged addresses, counted.
    let counter = std::net::UdpSocket::bind(SocketAddr::from(([0, 0, 0, 0], args.port)))
        .context("binding the counting socket")?;
    counter.set_read_timeout(Some(Duration::from_millis(100)))?;
    // Nothing else uses the port: every datagram it gets went to a
    // forged source.
    let heard = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let counting = {
        let (heard, done) = (heard.clone(), done.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !done.load(Ordering::SeqCst) {
                if counter.recv_from(&mut buf).is_ok() {
                    heard.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };

    let before = lateness(&args.metrics).await?;
    let cpu_before = args.daemon_pid.and_then(cpu_seconds);
    let rss_before = args.daemon_pid.and_then(rss_mb);
    let started = Instant::now();
    let sent = {
        let raw = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::RAW,
            Some(socket2::Protocol::from(255)),
        )
        .context("a raw socket (run as root)")?;
        let target = socket2::SockAddr::from(daemon);
        let per_ms = f64::from(args.rate.max(1)) / 1000.0;
        let limit = Duration::from_secs(args.seconds);
        let mut sent = 0u32;
        while sent < args.sources && started.elapsed() < limit {
            let due = (started.elapsed().as_secs_f64() * 1000.0 * per_ms) as u32;
            if sent >= due {
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
            let packet = forged_packet(forged_source(sent, args.port), daemon, &request);
            if raw.send_to(&packet, &target).is_ok() {
                sent += 1;
            }
        }
        sent
    };
    let spray_secs = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(args.settle_seconds)).await;
    let after = lateness(&args.metrics).await?;
    let cpu_after = args.daemon_pid.and_then(cpu_seconds);
    let rss_after = args.daemon_pid.and_then(rss_mb);
    done.store(true, Ordering::SeqCst);
    let _ = counting.join();
    let window = started.elapsed().as_secs_f64();
    let ticks = after.1 - before.1;
    let mean_ms = if ticks > 0.0 {
        (after.0 - before.0) / ticks * 1000.0
    } else {
        0.0
    };
    answer.close().await;
    Ok(json!({
        "type": "daemon-spray",
        "sources": sent,
        "spraySeconds": spray_secs,
        "windowSeconds": window,
        "ticksInWindow": ticks,
        "meanTickLatenessMs": mean_ms,
        "datagramsToForgedSources": heard.load(Ordering::Relaxed),
        "daemonCpuSeconds": match (cpu_before, cpu_after) {
            (Some(a), Some(b)) => json!(b - a),
            _ => json!(null),
        },
        "daemonRssMb": {"before": rss_before, "after": rss_after},
    }))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let result = match Command::parse() {
        Command::Spray(args) => spray(args).await?,
    };
    println!("{result}");
    Ok(())
}
