//! `lobby-load`: a load generator for `lobby-server`.
//!
//! Runs, in order: complete host/joiner exchanges (create, read offer,
//! answer, receive answer; then delete), a fill of the lobby to N live
//! sessions, `GET /lobby` page walks (plain; then searched and filtered, the
//! `search` phase), `GET /healthz` as the ceiling, and the lobby feed's
//! fan-out cost with many SSE subscribers (the `fanout` phase).
//! Prints a table per phase and one JSON line with everything at the end.
//! Every loop is bounded in count and time.
//!
//! # Layout
//!
//! - `client`: a lean pooled HTTP/1.1 client.
//! - `exchange`: the host/joiner exchange workload.
//! - `reads`: lobby fill, lobby page walks, the healthz ceiling.
//! - `fanout`: server CPU per lobby change with many SSE subscribers.
//! - `stats`: latency histograms and the report.
//! - `cpu`: the server's CPU time from /proc.
//! - `abuse`: normal traffic while one address attacks (the `abuse` phase).
//! - `matchbox`: the same exchange against `matchbox_server`, the anchor.

mod abuse;
mod client;
mod cpu;
mod exchange;
mod fanout;
mod matchbox;
mod reads;
mod stats;

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use stats::{Recorder, print_table};

/// Load generator for campfire's lobby-server.
#[derive(Parser, Debug)]
#[command(name = "lobby-load", version)]
struct Args {
    /// Server base URL; repeat to spread hosts and joiners over replicas.
    #[arg(long = "server", default_value = "http://127.0.0.1:8080")]
    servers: Vec<String>,
    /// Concurrent host/joiner pairs.
    #[arg(long, default_value_t = 32)]
    pairs: usize,
    /// Most exchanges to run.
    #[arg(long, default_value_t = 50_000)]
    exchanges: u64,
    /// Most seconds of the exchange phase.
    #[arg(long, default_value_t = 20)]
    exchange_seconds: u64,
    /// Leave sessions to expire instead of deleting each after its exchange
    /// (the exchange as the issue defines it: create, read, answer, receive).
    #[arg(long)]
    no_delete: bool,
    /// Every host and every joiner opens its own connection (kept alive
    /// for its own requests, closed after the exchange), as two browser
    /// tabs would; otherwise all share one keep-alive pool.
    #[arg(long)]
    fresh_connections: bool,
    /// Pad the offer and the answer to at least this many bytes (default:
    /// about 1 KB).
    #[arg(long, default_value_t = 0)]
    sdp_bytes: usize,
    /// `matchbox_server` to run the same exchanges against (the `matchbox`
    /// phase), e.g. `ws://127.0.0.1:3536`.
    #[arg(long)]
    matchbox: Option<String>,
    /// PID of that `matchbox_server`, to report its CPU per exchange.
    #[arg(long)]
    matchbox_pid: Option<u32>,
    /// Live sessions to create before the lobby read phase.
    #[arg(long, default_value_t = 10_000)]
    lobby_sessions: u64,
    /// Concurrent connections of the read phases.
    #[arg(long, default_value_t = 32)]
    read_concurrency: usize,
    /// Seconds of each read phase.
    #[arg(long, default_value_t = 10)]
    read_seconds: u64,
    /// Most requests of each read phase.
    #[arg(long, default_value_t = 2_000_000)]
    max_reads: u64,
    /// PIDs of the servers, to report their CPU time per exchange.
    #[arg(long = "server-pid")]
    server_pids: Vec<u32>,
    /// Phases to run, comma-separated: exchange, matchbox, lobby, search,
    /// healthz, fanout, abuse.
    #[arg(long, value_delimiter = ',', default_value = "exchange,lobby,healthz")]
    phases: Vec<String>,
    /// SSE subscribers of the fanout phase.
    #[arg(long, default_value_t = 1_000)]
    subscribers: usize,
    /// Lobby changes of each fanout measurement.
    #[arg(long, default_value_t = 300)]
    fanout_changes: u64,
    /// Seconds of each phase of the `abuse` benchmark.
    #[arg(long, default_value_t = 15)]
    abuse_seconds: u64,
    /// Normal clients of the `abuse` benchmark (a host and a joiner each,
    /// every one from its own 127.0.x.y address).
    #[arg(long, default_value_t = 100)]
    normal_clients: usize,
    /// Seconds between one normal client's exchanges.
    #[arg(long, default_value_t = 3.0)]
    pace_seconds: f64,
    /// The attacks of the `abuse` benchmark, in order (`none` is the baseline).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "none,methods,page-cache,slow-headers,event-streams,long-polls,round-grab,sessions,update-flood"
    )]
    attacks: Vec<abuse::Attack>,
    /// The server's SQLite file, for the `locked-db` attack.
    #[arg(long)]
    database_path: Option<std::path::PathBuf>,
}

/// The searched and filtered pages of the `search` phase (the fill's names
/// are `lobby session {i}` by `host{i}`; builds v1/v2, every fourth full,
/// every third a daemon).
const SEARCHES: [(&str, &str); 5] = [
    ("q=session (one word, every session)", "q=session"),
    ("q=host12 (one word, 11,111 sessions)", "q=host12"),
    ("q=lobby+session+4 (three words)", "q=lobby+session+4"),
    (
        "build=v1&hasSpace=true&hostKind=player",
        "build=v1&hasSpace=true&hostKind=player",
    ),
    (
        "q=host7&build=v2&hasSpace=true",
        "q=host7&build=v2&hasSpace=true",
    ),
];

fn server_cpu(pids: &[u32]) -> Option<Duration> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&p| cpu::process_cpu_time(p).ok()).sum()
}

fn exchange_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("exchanges {bar:40} {pos}/{len} {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Prints an exchange phase's table and returns its summary; `cpu` is the
/// server's CPU time before and after, when its PID was given.
fn exchange_report(
    title: &str,
    recorder: &Recorder,
    done: u64,
    elapsed: Duration,
    cpu: Option<(Duration, Duration)>,
) -> serde_json::Value {
    let mut summary = recorder.summary(elapsed);
    summary["exchanges"] = json!(done);
    summary["exchangesPerSecond"] = json!(done as f64 / elapsed.as_secs_f64());
    if let Some((before, after)) = cpu {
        let cpu = after.saturating_sub(before);
        summary["serverCpuSeconds"] = json!(cpu.as_secs_f64());
        summary["serverCpuMicrosPerExchange"] = json!(cpu.as_secs_f64() * 1e6 / done.max(1) as f64);
    }
    print_table(
        &format!(
            "{title}: {done} complete, {:.0}/s",
            done as f64 / elapsed.as_secs_f64()
        ),
        &summary,
    );
    if let Some(us) = summary["serverCpuMicrosPerExchange"].as_f64() {
        println!("  server CPU per exchange: {us:.0} µs");
    }
    summary
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let servers: Vec<String> = args
        .servers
        .iter()
        .map(|s| s.trim_end_matches('/').to_owned())
        .collect();
    let mut report = serde_json::Map::new();
    report.insert("servers".into(), json!(servers));

    if args.phases.iter().any(|p| p == "abuse") {
        let server = servers
            .first()
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("abuse: no --server"))?;
        println!(
            "\nAbuse: {} normal clients, one exchange each per {} s; {} s per attack",
            args.normal_clients, args.pace_seconds, args.abuse_seconds
        );
        let results = abuse::run(abuse::AbuseRun {
            server,
            server_pid: args.server_pids.first().copied(),
            seconds: args.abuse_seconds,
            normal_clients: args.normal_clients,
            pace_seconds: args.pace_seconds,
            attacks: args.attacks.clone(),
            database_path: args.database_path.clone(),
        })
        .await?;
        report.insert("abuse".into(), json!(results));
    }

    if args.phases.iter().any(|p| p == "exchange") {
        let recorder = Arc::new(Recorder::default());
        let bar = exchange_bar(args.exchanges);
        let cpu_before = server_cpu(&args.server_pids);
        let started = Instant::now();
        let done = exchange::run(
            exchange::ExchangeRun {
                servers: servers.clone(),
                pairs: args.pairs,
                max_exchanges: args.exchanges,
                max_duration: Duration::from_secs(args.exchange_seconds),
                delete_after: !args.no_delete,
                fresh_connections: args.fresh_connections,
                sdp_bytes: args.sdp_bytes,
            },
            recorder.clone(),
            bar.clone(),
        )
        .await;
        bar.finish_and_clear();
        let cpu = cpu_before.zip(server_cpu(&args.server_pids));
        let summary = exchange_report("Exchanges", &recorder, done, started.elapsed(), cpu);
        report.insert("exchange".into(), summary);
    }

    if args.phases.iter().any(|p| p == "matchbox") {
        let server = args
            .matchbox
            .clone()
            .ok_or_else(|| anyhow::anyhow!("the matchbox phase needs --matchbox"))?;
        let pids: Vec<u32> = args.matchbox_pid.into_iter().collect();
        let recorder = Arc::new(Recorder::default());
        let bar = exchange_bar(args.exchanges);
        let cpu_before = server_cpu(&pids);
        let started = Instant::now();
        let done = matchbox::run(
            matchbox::MatchboxRun {
                server,
                pairs: args.pairs,
                max_exchanges: args.exchanges,
                max_duration: Duration::from_secs(args.exchange_seconds),
                sdp_bytes: args.sdp_bytes,
            },
            recorder.clone(),
            bar.clone(),
        )
        .await;
        bar.finish_and_clear();
        let cpu = cpu_before.zip(server_cpu(&pids));
        let summary = exchange_report(
            "matchbox_server exchanges",
            &recorder,
            done,
            started.elapsed(),
            cpu,
        );
        report.insert("matchbox".into(), summary);
    }

    if args.phases.iter().any(|p| p == "lobby") {
        let recorder = Arc::new(Recorder::default());
        let t = Instant::now();
        let made = reads::populate(
            &servers,
            args.lobby_sessions,
            args.read_concurrency,
            recorder.clone(),
        )
        .await;
        println!(
            "\nLobby fill: {made} sessions in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        let started = Instant::now();
        let n = reads::read_loop(
            &servers,
            reads::Target::LobbyPages,
            args.read_concurrency,
            Duration::from_secs(args.read_seconds),
            args.max_reads,
            recorder.clone(),
        )
        .await;
        let mut summary = recorder.summary(started.elapsed());
        summary["liveSessionsCreated"] = json!(made);
        summary["requests"] = json!(n);
        print_table("GET /lobby", &summary);
        report.insert("lobby".into(), summary);
    }

    if args.phases.iter().any(|p| p == "search") {
        let mut searches = serde_json::Map::new();
        for (title, query) in SEARCHES {
            let recorder = Arc::new(Recorder::default());
            let started = Instant::now();
            let n = reads::read_loop(
                &servers,
                reads::Target::LobbyQuery(query),
                args.read_concurrency,
                Duration::from_secs(args.read_seconds),
                args.max_reads,
                recorder.clone(),
            )
            .await;
            let mut summary = recorder.summary(started.elapsed());
            summary["requests"] = json!(n);
            print_table(&format!("GET /lobby?{title}"), &summary);
            searches.insert(query.into(), summary);
        }
        report.insert("search".into(), serde_json::Value::Object(searches));
    }

    if args.phases.iter().any(|p| p == "healthz") {
        let recorder = Arc::new(Recorder::default());
        let started = Instant::now();
        let n = reads::read_loop(
            &servers,
            reads::Target::Healthz,
            args.read_concurrency,
            Duration::from_secs(args.read_seconds),
            args.max_reads,
            recorder.clone(),
        )
        .await;
        let mut summary = recorder.summary(started.elapsed());
        summary["requests"] = json!(n);
        print_table("GET /healthz (ceiling)", &summary);
        report.insert("healthz".into(), summary);
    }

    if args.phases.iter().any(|p| p == "fanout") {
        let (Some(server), Some(&pid)) = (servers.first(), args.server_pids.first()) else {
            anyhow::bail!("the fanout phase needs --server and --server-pid");
        };
        let session = fanout::create_session(server).await?;
        let n = args.subscribers;
        let runs = [
            ("no subscriber (the update alone)", 0, "", true),
            ("unfiltered subscribers", n, "", true),
            (
                "subscribers whose search the session never matches",
                n,
                "?q=zzzz",
                false,
            ),
            (
                "subscribers whose filters it matches",
                n,
                "?q=fanout&build=v1",
                true,
            ),
        ];
        println!(
            "\nLobby feed fan-out: {} changes per run",
            args.fanout_changes
        );
        let mut results = serde_json::Map::new();
        for (title, subscribers, query, expect) in runs {
            let r = fanout::run(
                server,
                pid,
                &session,
                subscribers,
                query,
                expect,
                args.fanout_changes,
            )
            .await?;
            println!(
                "  {subscribers:>5} {title}: {:.0} µs server CPU per change, {} events received, {:.1} s",
                r.cpu_us_per_change, r.events_received, r.seconds
            );
            results.insert(
                format!("{subscribers} {title}"),
                json!({"cpuMicrosPerChange": r.cpu_us_per_change, "eventsReceived": r.events_received, "seconds": r.seconds}),
            );
        }
        report.insert("fanout".into(), serde_json::Value::Object(results));
    }

    println!("\n{}", serde_json::Value::Object(report));
    Ok(())
}
