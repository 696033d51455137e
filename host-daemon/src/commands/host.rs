//! `host-daemon host`: always-on bot sessions published through a lobby
//! server and played over WebRTC.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use engine::Difficulty;
use netcode::host::HostConfig;
use netcode::plan::{FixedCampaign, GeneratedCampaign, LevelPlan};

use super::control::ControlArgs;
use super::ice::IceArgs;
use super::shutdown_signal;
use crate::campaign::Campaign;
use crate::hosting::{self, HostingConfig};
use crate::metrics::{DaemonMetrics, serve as serve_metrics};

/// `host` flags.
#[derive(Args, Debug)]
pub struct HostArgs {
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
    /// Seconds a joiner's connection may stay silent before its hello; then
    /// it is closed (a connected peer that never speaks holds nothing).
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    hello_timeout: u64,
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
    /// Sessions kept open at once (a fresh one replaces each that ends);
    /// with --control-listen it may be 0 (testers open them).
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// Safety stop per level, ticks.
    #[arg(long, default_value_t = 20_000)]
    max_ticks: u64,
    /// Write each level's replay to DIR (`CODE-level-EPOCH.replay`; play
    /// one back with `host-daemon replay FILE`).
    #[arg(long, value_name = "DIR")]
    record: Option<std::path::PathBuf>,
    /// Admit nobody after the start. By default a started session with a
    /// free seat stays listed and a joiner enters the running level.
    #[arg(long)]
    no_late_join: bool,
    /// Spectators admitted at once (they hold no seat and send no input;
    /// `join CODE --spectate` watches). 0: nobody may watch.
    #[arg(long, default_value_t = netcode::host::DEFAULT_MAX_SPECTATORS)]
    max_spectators: usize,
    #[command(flatten)]
    ice: IceArgs,
    #[command(flatten)]
    control: ControlArgs,
}

/// The hosting configuration the flags describe.
pub fn hosting_config(a: &HostArgs) -> anyhow::Result<HostingConfig> {
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
            plan: match &campaign {
                Some(c) => Arc::new(FixedCampaign {
                    seed: a.seed,
                    maps: c.maps.clone(),
                }) as Arc<dyn LevelPlan>,
                None => Arc::new(GeneratedCampaign {
                    seed: a.seed,
                    levels: a.levels,
                }),
            },
            difficulty,
            bots: a.bots,
            max_ticks_per_level: Some(a.max_ticks),
            hello_timeout: Duration::from_secs(a.hello_timeout.max(1)),
            record_replay: a.record.is_some(),
            late_join: !a.no_late_join,
            max_spectators: a.max_spectators,
            ..HostConfig::default()
        },
        sessions: a.sessions,
        webrtc: a.ice.webrtc_options()?,
        seed: a.seed,
        campaign_maps: campaign.as_ref().map(|c| c.maps.clone()),
        campaign_name: campaign.map_or_else(|| "generated".to_owned(), |c| c.name),
        metrics: None,
        record_dir: a.record.clone(),
        relay: None,
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

/// The daemon's runtime: one thread for everything (the WebRTC run loop,
/// the sessions' tick loops, their readers and writers, the lobby calls,
/// the metrics). Every message crosses tasks on its way between a session
/// and the socket; on one thread those hand-offs are queue pushes, where
/// across threads each was a wake-up of a parked thread. Measured with 300
/// guests (docs/benchmarks.md): 0.42 cores against 0.67-0.72 on two
/// workers plus a tick thread. A daemon therefore uses one core at most;
/// run one per core (docs/decisions.md).
pub(super) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the runtime")
}

/// Serves the daemon's Prometheus metrics at `addr` (logging the bound
/// address on stderr); the handle the sessions feed.
pub(super) async fn serve_metrics_at(addr: std::net::SocketAddr) -> anyhow::Result<DaemonMetrics> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("--metrics-listen {addr}"))?;
    let bound = listener.local_addr().context("--metrics-listen")?;
    eprintln!("host-daemon: metrics on http://{bound}/metrics");
    let metrics = DaemonMetrics::new();
    let served = metrics.clone();
    tokio::spawn(async move {
        if let Err(e) = serve_metrics(listener, served).await {
            eprintln!("host-daemon: metrics server stopped: {e}");
        }
    });
    Ok(metrics)
}

/// Runs `host-daemon host` until SIGTERM or Ctrl-C.
pub fn run(args: HostArgs) -> anyhow::Result<()> {
    let mut config = hosting_config(&args)?;
    runtime()?.block_on(async move {
        if let Some(addr) = args.metrics_listen {
            config.metrics = Some(serve_metrics_at(addr).await?);
        }
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = tx.send(true);
        });
        let desk = args.control.start(&config, rx.clone()).await?;
        hosting::run(config, rx, desk).await
    })
}
