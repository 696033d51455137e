//! WebRTC guests per daemon process (docs/benchmarks.md): one
//! `host-daemon host` (or `relay`) keeps K sessions of 4 bot guests each;
//! every guest is its own `host-daemon join --bot` process. A host session
//! also runs the engine and the host's own bot player; a relay session runs
//! no engine (one of its guests is the authority). Once every session runs, the
//! daemon's metrics and `/proc` are sampled across a window: p99 tick
//! lateness (from the histogram's bucket deltas), daemon CPU, guests' CPU,
//! RSS per guest, bytes sent per guest per second and UDP datagrams (both
//! directions, from /proc/net/snmp) per guest per second. One JSON line per
//! guest count. Guests run under `nice -n 19`, so the daemon is served
//! first, as it would be with its guests on other machines.
//!
//! With `--swarm` the guests are one `host-daemon swarm` process (light
//! guests, no engine, each its own WebRTC connection and socket), which
//! can push a daemon to a thousand guests on this machine. Host mode only:
//! a relay session waits for an authority, a guest with an engine.
//!
//! Usage (release binaries, built by `scripts/bench-daemon`):
//! `guest_capacity BIN_DIR [--mode host|relay|both] [--swarm] GUESTS...`
//! (multiples of 4), e.g. `target/release --mode both 100 200`.
//! Everything binds 127.0.0.1; every wait is bounded; every child is killed.

#[path = "support/proc_stat.rs"]
mod proc_stat;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proc_stat::{cpu_seconds, rss_kib, udp_datagrams_sent};

/// Guests per session.
const PER_SESSION: usize = 4;
/// Settle time once every session runs, before the window opens.
const WARM_UP: Duration = Duration::from_secs(5);
/// The measured window.
const WINDOW: Duration = Duration::from_secs(20);

#[derive(Default)]
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}

fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn http_get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read");
    resp.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

/// The daemon's series: `name{labels}` -> value.
fn scrape(addr: &str) -> Vec<(String, f64)> {
    http_get(addr, "/metrics")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_owned(), v.parse().ok()?))
        })
        .collect()
}

fn value(m: &[(String, f64)], key: &str) -> f64 {
    m.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
        .unwrap_or(0.0)
}

/// p-quantile (0-1) of the lateness observed between two scrapes: the
/// upper bound of the first bucket reaching it, in milliseconds.
fn lateness_quantile(before: &[(String, f64)], after: &[(String, f64)], q: f64) -> f64 {
    let prefix = "campfire_daemon_tick_lateness_seconds_bucket{le=\"";
    let mut buckets: Vec<(f64, f64)> = after
        .iter()
        .filter_map(|(k, v)| {
            let le = k.strip_prefix(prefix)?.strip_suffix("\"}")?;
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((bound, v - value(before, k)))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last().map(|b| b.1).unwrap_or(0.0);
    buckets
        .iter()
        .find(|(_, c)| *c >= q * total)
        .map(|(b, _)| b * 1000.0)
        .unwrap_or(f64::NAN)
}

fn start_lobby(bin: &Path, children: &mut Children, db: &Path) -> String {
    let mut lobby = Command::new(bin.join("lobby-server"))
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .arg("--disable-rate-limits")
        .arg("--database-url")
        .arg(format!("sqlite://{}", db.join("lobby.db").display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn lobby-server");
    let lines = lines_of(&mut lobby);
    children.0.push(lobby);
    let first = lines
        .recv_timeout(Duration::from_secs(30))
        .expect("lobby line");
    first
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("listening URL")
        .to_owned()
}

fn run(bin: &Path, mode: &str, swarm: bool, guests: usize) -> serde_json::Value {
    let sessions = guests / PER_SESSION;
    let db = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let url = start_lobby(bin, &mut children, db.path());
    let mut daemon = Command::new(bin.join("host-daemon"));
    if mode == "relay" {
        daemon.args(["relay", "--server", &url, "--name", "capacity"]);
        daemon.args(["--max-players", "4", "--start-when", "4", "--levels", "50"]);
    } else {
        daemon.args([
            "host", "--server", &url, "--name", "capacity", "--bots", "0",
        ]);
        daemon.args(["--max-players", "5", "--start-when", "4", "--levels", "50"]);
    }
    let mut host = daemon
        .args(["--sessions", &sessions.to_string()])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn host-daemon");
    let pid = host.id();
    let codes = lines_of(&mut host);
    let mut err = BufReader::new(host.stderr.take().expect("stderr")).lines();
    children.0.push(host);
    let first = err.next().expect("metrics line").expect("stderr");
    let metrics = first
        .split("http://")
        .nth(1)
        .and_then(|r| r.strip_suffix("/metrics"))
        .expect("metrics address")
        .to_owned();
    std::thread::spawn(move || for _ in err.by_ref() {});
    let codes: Vec<String> = (0..sessions)
        .map(|_| {
            codes
                .recv_timeout(Duration::from_secs(60))
                .expect("a session line")
                .trim_start_matches("session ")
                .to_owned()
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let idle_rss = rss_kib(&pid.to_string());
    let t_join = Instant::now();
    let mut guest_pids = Vec::new();
    if swarm {
        // One process for every guest, niced like the bots below.
        let child = Command::new("nice")
            .args(["-n", "19"])
            .arg(bin.join("host-daemon"))
            .args(["swarm", "--server", &url, "--per-session"])
            .arg(PER_SESSION.to_string())
            .args(["--seconds", "600", "--threads", "1"])
            .args(&codes)
            // Its warnings (failed joins) show in the bench's output.
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn swarm");
        guest_pids.push(child.id());
        children.0.push(child);
    }
    for code in codes.iter().filter(|_| !swarm) {
        for g in 0..PER_SESSION {
            // Guests run niced: on a real deployment they are on other
            // machines, so the daemon gets the CPU first here too.
            let child = Command::new("nice")
                .args(["-n", "19"])
                .arg(bin.join("host-daemon"))
                .args(["join", code, "--server", &url, "--bot", "--name"])
                .arg(format!("g{g}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn join");
            guest_pids.push(child.id());
            children.0.push(child);
        }
    }
    // Every session started: all guests in.
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut next_note = Instant::now() + Duration::from_secs(10);
    loop {
        let m = scrape(&metrics);
        let (inside, links) = (
            value(&m, "campfire_daemon_guests"),
            value(&m, "campfire_daemon_webrtc_connections"),
        );
        if inside >= guests as f64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every guest got in within 300 s ({inside} of {guests}, {links} connections)"
        );
        if Instant::now() >= next_note {
            eprintln!("{inside} of {guests} guests in, {links} connections");
            next_note += Duration::from_secs(10);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let all_in = t_join.elapsed();
    std::thread::sleep(WARM_UP);
    let m0 = scrape(&metrics);
    let udp0 = udp_datagrams_sent();
    let (d0, g0, t0) = (
        cpu_seconds(&pid.to_string()),
        guest_pids
            .iter()
            .map(|p| cpu_seconds(&p.to_string()))
            .sum::<f64>(),
        Instant::now(),
    );
    std::thread::sleep(WINDOW);
    let m1 = scrape(&metrics);
    let udp1 = udp_datagrams_sent();
    let (d1, g1, wall) = (
        cpu_seconds(&pid.to_string()),
        guest_pids
            .iter()
            .map(|p| cpu_seconds(&p.to_string()))
            .sum::<f64>(),
        t0.elapsed().as_secs_f64(),
    );
    let rss = rss_kib(&pid.to_string());
    let guests_after = value(&m1, "campfire_daemon_guests");
    let d = |k: &str| value(&m1, k) - value(&m0, k);
    serde_json::json!({
        "mode": mode,
        "guestsAre": if swarm { "swarm" } else { "join --bot processes" },
        "guests": guests,
        "sessions": sessions,
        "guestsConnectedAtEnd": guests_after,
        "allInSeconds": all_in.as_secs_f64(),
        "ticksPerSecond": d("campfire_daemon_ticks_total") / wall,
        "p50LatenessMs": lateness_quantile(&m0, &m1, 0.50),
        "p99LatenessMs": lateness_quantile(&m0, &m1, 0.99),
        "daemonCpuCores": (d1 - d0) / wall,
        "guestProcessesCpuCores": (g1 - g0) / wall,
        "daemonRssMiB": rss as f64 / 1024.0,
        "rssPerGuestKiB": (rss.saturating_sub(idle_rss)) as f64 / guests as f64,
        "bytesPerGuestPerSecond": d("campfire_daemon_sent_bytes_total") / wall / guests as f64,
        // Both directions: the daemon's and the guests' datagrams alike.
        "udpDatagramsPerGuestPerSecond": udp1.saturating_sub(udp0) as f64 / wall / guests as f64,
        "heldInputsPerSecond": d("campfire_daemon_held_inputs_total") / wall,
        "heldInputsFraction": d("campfire_daemon_held_inputs_total")
            / d("campfire_daemon_ticks_total").max(1.0)
            / PER_SESSION as f64,
        "desyncs": d("campfire_daemon_desyncs_total"),
    })
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let bin = PathBuf::from(args.next().unwrap_or_else(|| "target/release".into()));
    let mut modes = vec!["host"];
    if args.peek().map(String::as_str) == Some("--mode") {
        args.next();
        modes = match args.next().as_deref() {
            Some("relay") => vec!["relay"],
            Some("both") => vec!["host", "relay"],
            Some("host") => vec!["host"],
            other => panic!("--mode host, relay or both, not {other:?}"),
        };
    }
    let mut swarm = false;
    if args.peek().map(String::as_str) == Some("--swarm") {
        args.next();
        swarm = true;
        // A relay session needs an authority with an engine; swarm guests
        // have none, so a relay session of swarm guests never starts.
        assert!(
            !modes.contains(&"relay"),
            "--swarm measures host mode only: a relay session needs an authority guest with an engine"
        );
    }
    let counts: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    let counts = if counts.is_empty() {
        vec![100, 200, 300]
    } else {
        counts
    };
    for guests in counts {
        assert!(
            guests > 0 && guests % PER_SESSION == 0 && guests <= 1_200,
            "guest counts are multiples of {PER_SESSION}, at most 1200"
        );
        for mode in &modes {
            println!("{}", run(&bin, mode, swarm, guests));
        }
    }
}
