//! The `host-daemon` binary: `simulate` runs a host, bot players and bot
//! guests in one process over the simulated network and prints one JSON
//! line; `host` hosts bot sessions through a lobby server over WebRTC;
//! `join` joins one as a (bot) guest.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use engine::Difficulty;
use host_daemon::campaign::Campaign;
use host_daemon::guest::GuestConfig;
use host_daemon::host::HostConfig;
use host_daemon::hosting::{self, HostingConfig};
use host_daemon::joining::{self, JoinConfig, JoinEnd};
use host_daemon::metrics::{DaemonMetrics, serve as serve_metrics};
use host_daemon::simnet::LinkConfig;
use host_daemon::simulate::{NetAction, NetEvent, Scenario, Summary, run};
use host_daemon::webrtc::WebRtcOptions;
use protocol::api::IceServer;
use protocol::peer::EndReason;
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(name = "host-daemon", about = "campfire netcode host daemon")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a whole session in one process over the simulated network.
    Simulate(SimulateArgs),
    /// Host bot sessions through a lobby server over WebRTC. Prints
    /// `session CODE` on stdout for each session it opens.
    Host(HostArgs),
    /// Join a session through the lobby; prints one JSON line at the end.
    Join(JoinArgs),
}

#[derive(Args, Debug, Clone)]
struct IceArgs {
    /// Address the UDP sockets bind (the only host candidate).
    #[arg(long, default_value = "127.0.0.1")]
    bind_ip: std::net::IpAddr,
    /// UDP port range A-B (one port per connection).
    #[arg(long, value_name = "A-B")]
    udp_ports: Option<String>,
    /// Address advertised instead of --bind-ip (1:1 NAT).
    #[arg(long)]
    public_ip: Option<std::net::IpAddr>,
    /// STUN server URL (stun:host:port), repeatable.
    #[arg(long)]
    stun: Vec<String>,
    /// TURN server as URL,USERNAME,CREDENTIAL, repeatable.
    #[arg(long)]
    turn: Vec<String>,
    /// Seconds the WebRTC connection may take to open.
    #[arg(long, default_value_t = 20)]
    connect_timeout: u64,
}

#[derive(Args, Debug)]
struct HostArgs {
    /// Lobby server base URL.
    #[arg(long)]
    server: String,
    /// The session's name in the lobby.
    #[arg(long, default_value = "campfire bots")]
    name: String,
    /// List the sessions in the public lobby (default).
    #[arg(long, overrides_with = "private")]
    public: bool,
    /// Do not list the sessions (join by code only).
    #[arg(long, overrides_with = "public")]
    private: bool,
    /// Bot players hosted in-process, besides the host's own bot player.
    #[arg(long, default_value_t = 1)]
    bots: u32,
    /// Most players per session, host and bots included.
    #[arg(long, default_value_t = 8)]
    max_players: u32,
    /// Start once this many guests are in.
    #[arg(long, default_value_t = 1)]
    start_when: usize,
    /// Seconds to wait: a session nobody joined within SECS of opening is
    /// closed (and a fresh one opened); one with guests in but fewer than
    /// --start-when starts SECS after its first guest arrived. Without it,
    /// sessions wait for --start-when guests as long as it takes.
    #[arg(long, value_name = "SECS")]
    lobby_timeout: Option<u64>,
    /// easy, normal or hard.
    #[arg(long, default_value = "normal")]
    difficulty: String,
    /// Campaign seed.
    #[arg(long, default_value_t = 1)]
    seed: u32,
    /// Levels in the generated campaign.
    #[arg(long, default_value_t = 1, conflicts_with = "campaign")]
    levels: u32,
    /// Play the level maps in this folder (`*.json`, in file-name order)
    /// instead of generated levels.
    #[arg(long, value_name = "DIR")]
    campaign: Option<std::path::PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// Sessions kept open at once (a fresh one replaces each that ends).
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// Safety stop per level, ticks.
    #[arg(long, default_value_t = 20_000)]
    max_ticks: u64,
    #[command(flatten)]
    ice: IceArgs,
}

#[derive(Args, Debug)]
struct JoinArgs {
    /// The session's code.
    code: String,
    /// Lobby server base URL.
    #[arg(long)]
    server: String,
    /// Display name.
    #[arg(long, default_value = "bot")]
    name: String,
    /// Play with the engine's bot (else idle input).
    #[arg(long)]
    bot: bool,
    /// Leave this many seconds after connecting (soak tests: join, then
    /// leave). The report's endReason is then "left".
    #[arg(long, value_name = "SECS")]
    leave_after: Option<f64>,
    #[command(flatten)]
    ice: IceArgs,
}

fn webrtc_options(a: &IceArgs) -> anyhow::Result<WebRtcOptions> {
    let udp_ports = match &a.udp_ports {
        None => None,
        Some(r) => {
            let (lo, hi) = r.split_once('-').context("--udp-ports takes A-B")?;
            let lo: u16 = lo.trim().parse().context("--udp-ports: A must be a port")?;
            let hi: u16 = hi.trim().parse().context("--udp-ports: B must be a port")?;
            if lo == 0 || lo > hi {
                bail!("--udp-ports: need 0 < A <= B");
            }
            Some(lo..=hi)
        }
    };
    let mut ice_servers: Vec<IceServer> = a
        .stun
        .iter()
        .map(|u| IceServer {
            urls: vec![u.clone()],
            username: None,
            credential: None,
        })
        .collect();
    for t in &a.turn {
        let mut parts = t.splitn(3, ',');
        let url = parts.next().unwrap_or_default().to_owned();
        ice_servers.push(IceServer {
            urls: vec![url],
            username: parts.next().map(str::to_owned),
            credential: parts.next().map(str::to_owned),
        });
    }
    Ok(WebRtcOptions {
        bind_ip: a.bind_ip,
        udp_ports,
        public_ip: a.public_ip,
        ice_servers,
        connect_timeout: Duration::from_secs(a.connect_timeout),
        ..WebRtcOptions::default()
    })
}

fn hosting_config(a: &HostArgs) -> anyhow::Result<HostingConfig> {
    let difficulty = Difficulty::parse(&a.difficulty).context("unknown --difficulty")?;
    let campaign = match &a.campaign {
        Some(dir) => Some(Campaign::load(dir)?),
        None => None,
    };
    let config = HostingConfig {
        server: a.server.clone(),
        name: a.name.clone(),
        public: !a.private,
        bots: a.bots,
        max_players: a.max_players,
        start_when: a.start_when.max(1),
        lobby_timeout: a.lobby_timeout.map(Duration::from_secs),
        host: HostConfig {
            seed: a.seed,
            levels: a.levels,
            campaign: campaign.as_ref().map(|c| Arc::new(c.maps.clone())),
            difficulty,
            bots: a.bots,
            max_ticks_per_level: Some(a.max_ticks),
            ..HostConfig::default()
        },
        sessions: a.sessions.max(1),
        webrtc: webrtc_options(&a.ice)?,
        campaign_name: campaign.map_or_else(|| "generated".to_owned(), |c| c.name),
        metrics: None,
        tick_runtime: None,
    };
    if config.guest_seats() < config.start_when {
        bail!(
            "--max-players {} leaves {} guest seats, fewer than --start-when {}",
            a.max_players,
            config.guest_seats(),
            config.start_when
        );
    }
    Ok(config)
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("building the runtime")
}

/// A single-threaded runtime on its own OS thread for the sessions' tick
/// loops (measured: it keeps tick lateness low while the main runtime is
/// busy with hundreds of WebRTC connections). Runs until the process exits.
fn tick_thread() -> anyhow::Result<tokio::runtime::Handle> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the tick runtime")?;
    let handle = rt.handle().clone();
    std::thread::Builder::new()
        .name("campfire-ticks".into())
        .spawn(move || rt.block_on(std::future::pending::<()>()))
        .context("starting the tick thread")?;
    Ok(handle)
}

#[derive(Args, Debug)]
struct SimulateArgs {
    /// Bot players driven by the host (besides the host's own player).
    #[arg(long, default_value_t = 1)]
    bots: u32,
    /// Bot guests connecting over the simulated network.
    #[arg(long, default_value_t = 2)]
    guests: usize,
    /// One-way base latency per link, milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// One-way jitter per link (uniform 0..=J), milliseconds.
    #[arg(long, default_value_t = 0)]
    jitter_ms: u64,
    /// Stall guest 1's link for this long, 3 s (90 ticks) into the run.
    #[arg(long, default_value_t = 0)]
    stall_ms: u64,
    /// Cut guest GUEST's link (1-based) once the host has simulated TICK ticks.
    #[arg(long, value_name = "GUEST@TICK")]
    disconnect: Vec<String>,
    /// Levels in the campaign.
    #[arg(long, default_value_t = 1)]
    levels: u32,
    /// Seed of the campaign and of the network's jitter.
    #[arg(long, default_value_t = 1)]
    seed: u32,
    /// Session difficulty: easy, normal or hard.
    #[arg(long, default_value = "normal")]
    difficulty: String,
    /// Safety stop per level, ticks.
    #[arg(long, default_value_t = 20_000)]
    max_ticks: u64,
}

fn parse_disconnect(s: &str, guests: usize) -> anyhow::Result<NetEvent> {
    let (g, t) = s.split_once('@').context("--disconnect takes GUEST@TICK")?;
    let g: usize = g.parse().context("GUEST must be a number")?;
    let t: u64 = t.parse().context("TICK must be a number")?;
    if g == 0 || g > guests {
        bail!("--disconnect guest {g} is not in 1..={guests}");
    }
    Ok(NetEvent {
        at_tick: t,
        action: NetAction::Disconnect(g - 1),
    })
}

fn scenario(a: &SimulateArgs) -> anyhow::Result<Scenario> {
    let difficulty = Difficulty::parse(&a.difficulty).context("unknown --difficulty")?;
    let mut events = a
        .disconnect
        .iter()
        .map(|d| parse_disconnect(d, a.guests))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if a.stall_ms > 0 && a.guests > 0 {
        events.push(NetEvent {
            at_tick: 90,
            action: NetAction::Stall(0, Duration::from_millis(a.stall_ms)),
        });
    }
    let guests = (0..a.guests)
        .map(|i| {
            (
                GuestConfig {
                    display_name: format!("Guest {}", i + 1),
                    ..GuestConfig::default()
                },
                LinkConfig {
                    latency: Duration::from_millis(a.latency_ms),
                    jitter: Duration::from_millis(a.jitter_ms),
                    seed: u64::from(a.seed) * 1000 + i as u64,
                    ..LinkConfig::default()
                },
            )
        })
        .collect();
    Ok(Scenario {
        host: HostConfig {
            seed: a.seed,
            levels: a.levels,
            difficulty,
            bots: a.bots,
            expected_guests: a.guests,
            max_ticks_per_level: Some(a.max_ticks),
            ..HostConfig::default()
        },
        guests,
        events,
    })
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(
                    "warn,rtc=error,rtc_ice=error,rtc_dtls=error,webrtc=error",
                )
            }),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate(args) => {
            let scenario = scenario(&args)?;
            // Wall-clock time: the host paces 30 ticks a second, as in a
            // real session (the tests run the same code on paused time).
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .context("building the runtime")?;
            let outcome = rt.block_on(run(scenario));
            let summary = Summary::of(&outcome);
            println!(
                "{}",
                serde_json::to_string(&summary).context("encoding the summary")?
            );
        }
        Command::Host(args) => {
            let mut config = hosting_config(&args)?;
            config.tick_runtime = Some(tick_thread()?);
            runtime()?.block_on(async move {
                if let Some(addr) = args.metrics_listen {
                    let listener = tokio::net::TcpListener::bind(addr)
                        .await
                        .with_context(|| format!("--metrics-listen {addr}"))?;
                    let bound = listener.local_addr().context("--metrics-listen")?;
                    eprintln!("host-daemon: metrics on http://{bound}/metrics");
                    let metrics = DaemonMetrics::new();
                    config.metrics = Some(metrics.clone());
                    tokio::spawn(async move {
                        if let Err(e) = serve_metrics(listener, metrics).await {
                            eprintln!("host-daemon: metrics server stopped: {e}");
                        }
                    });
                }
                let (tx, rx) = tokio::sync::watch::channel(false);
                tokio::spawn(async move {
                    shutdown_signal().await;
                    let _ = tx.send(true);
                });
                hosting::run(config, rx).await
            })?;
        }
        Command::Join(args) => {
            let config = JoinConfig {
                server: args.server.clone(),
                code: args.code.clone(),
                name: args.name.clone(),
                bot: args.bot,
                webrtc: webrtc_options(&args.ice)?,
                leave_after: args
                    .leave_after
                    .map(|s| {
                        Duration::try_from_secs_f64(s).context("--leave-after takes seconds >= 0")
                    })
                    .transpose()?,
            };
            // One guest is light work: a single-threaded runtime costs the
            // least CPU (testers run hundreds of these on one machine).
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("building the runtime")?;
            match rt.block_on(joining::join(config)) {
                Ok(report) => {
                    println!(
                        "{}",
                        serde_json::to_string(&report).context("encoding the report")?
                    );
                    // Lost the host or fell out of a transition: the report
                    // is printed, but the run did not end normally.
                    if matches!(
                        report.end_reason,
                        JoinEnd::Session(
                            EndReason::HostDisconnected | EndReason::LevelTransitionFailed
                        )
                    ) {
                        eprintln!(
                            "host-daemon join: session {} ended abnormally: {:?}",
                            report.code, report.end_reason
                        );
                        std::process::exit(3);
                    }
                }
                Err(e) => {
                    eprintln!("host-daemon join: {e}");
                    std::process::exit(2);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Scenario> {
        let cli = Cli::try_parse_from(["host-daemon", "simulate"].iter().chain(args))?;
        let Command::Simulate(a) = cli.command else {
            anyhow::bail!("not simulate");
        };
        scenario(&a)
    }

    #[test]
    fn simulate_flags_build_the_scenario() {
        let s = parse(&[
            "--bots",
            "2",
            "--guests",
            "3",
            "--latency-ms",
            "40",
            "--jitter-ms",
            "10",
            "--stall-ms",
            "500",
            "--disconnect",
            "2@120",
            "--levels",
            "3",
            "--seed",
            "9",
        ])
        .unwrap();
        assert_eq!(s.guests.len(), 3);
        assert_eq!(s.host.bots, 2);
        assert_eq!(s.host.levels, 3);
        assert_eq!(s.host.expected_guests, 3);
        assert_eq!(s.guests[0].1.latency, Duration::from_millis(40));
        assert!(
            s.events
                .iter()
                .any(|e| e.at_tick == 120 && matches!(e.action, NetAction::Disconnect(1)))
        );
        assert!(s.events.iter().any(
            |e| matches!(e.action, NetAction::Stall(0, d) if d == Duration::from_millis(500))
        ));
    }

    fn host(args: &[&str]) -> anyhow::Result<HostingConfig> {
        let cli = Cli::try_parse_from(
            ["host-daemon", "host", "--server", "http://127.0.0.1:1"]
                .iter()
                .chain(args),
        )?;
        let Command::Host(a) = cli.command else {
            anyhow::bail!("not host");
        };
        hosting_config(&a)
    }

    #[test]
    fn host_flags_build_the_config() {
        let c = host(&[
            "--bots",
            "2",
            "--start-when",
            "3",
            "--max-players",
            "6",
            "--private",
            "--levels",
            "2",
            "--udp-ports",
            "40000-40010",
            "--stun",
            "stun:127.0.0.1:3478",
            "--turn",
            "turn:127.0.0.1:3478,u,p",
            "--lobby-timeout",
            "30",
        ])
        .unwrap();
        assert!(!c.public);
        assert_eq!(c.guest_seats(), 3);
        assert_eq!(c.start_when, 3);
        assert_eq!(c.host.levels, 2);
        assert_eq!(c.host.bots, 2);
        assert_eq!(c.lobby_timeout, Some(Duration::from_secs(30)));
        assert_eq!(c.webrtc.udp_ports, Some(40000..=40010));
        assert_eq!(c.webrtc.ice_servers.len(), 2);
        assert_eq!(c.webrtc.ice_servers[1].username.as_deref(), Some("u"));
        assert_eq!(c.webrtc.bind_ip.to_string(), "127.0.0.1");
        assert!(host(&[]).unwrap().public);
    }

    #[test]
    fn bad_host_flags_are_rejected() {
        assert!(host(&["--udp-ports", "5-1"]).is_err());
        assert!(host(&["--udp-ports", "x"]).is_err());
        assert!(host(&["--max-players", "3", "--start-when", "2"]).is_err());
        assert!(host(&["--difficulty", "nightmare"]).is_err());
    }

    #[test]
    fn bad_disconnect_specs_are_rejected() {
        for bad in ["0@10", "4@10", "x@1", "2", "2@-1"] {
            assert!(
                parse(&["--guests", "3", "--disconnect", bad]).is_err(),
                "{bad}"
            );
        }
        assert!(parse(&["--difficulty", "nightmare"]).is_err());
    }
}
