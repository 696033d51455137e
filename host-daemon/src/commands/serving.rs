//! What `host` and `relay` share: the flags of a daemon that keeps
//! sessions open through a lobby (each also an environment variable,
//! `CAMPFIRE_` and the flag's name, as the lobby server's are `LOBBY_`),
//! the configuration they describe, and running it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use engine::Difficulty;
use engine::plan::GeneratedCampaign;
use engine::wire::raycaster::Settings;
use netcode::host::{DEFAULT_MAX_SPECTATORS, HostConfig};

use super::control::ControlArgs;
use super::ice::IceArgs;
use super::shutdown_signal;
use crate::game::GameName;
use crate::metrics::{DaemonMetrics, serve as serve_metrics};
use crate::serving::ServingConfig;

/// The flags `host` and `relay` share.
#[derive(Args, Debug, Clone)]
pub struct ServingArgs {
    /// Lobby server base URL.
    #[arg(long, env = "CAMPFIRE_SERVER")]
    pub server: String,
    /// List the sessions in the public lobby (default).
    #[arg(long, overrides_with = "private")]
    pub public: bool,
    /// Do not list the sessions (join by code only).
    #[arg(long, env = "CAMPFIRE_PRIVATE", overrides_with = "public")]
    pub private: bool,
    /// Most players per session, the host's own player and bots included.
    #[arg(long, env = "CAMPFIRE_MAX_PLAYERS", default_value_t = 8)]
    pub max_players: u32,
    /// Seconds to wait: a session nobody joined within SECS of opening is
    /// closed (and a fresh one opened); one with players in but fewer than
    /// --start-when starts SECS after the first arrived. Without it,
    /// sessions wait for --start-when as long as it takes.
    #[arg(long, value_name = "SECS", env = "CAMPFIRE_LOBBY_TIMEOUT")]
    pub lobby_timeout: Option<u64>,
    /// Seconds a joiner's connection may stay silent before its hello; then
    /// it is closed (a connected peer that never speaks holds nothing).
    #[arg(
        long,
        value_name = "SECS",
        env = "CAMPFIRE_HELLO_TIMEOUT",
        default_value_t = 5
    )]
    pub hello_timeout: u64,
    /// The game the sessions play.
    #[arg(long, value_enum, env = "CAMPFIRE_GAME", default_value_t = GameName::Raycaster)]
    pub game: GameName,
    /// tag: ticks a round lasts (30 a second).
    #[arg(long, env = "CAMPFIRE_ROUND_TICKS", default_value_t = tag::plan::ROUND_TICKS)]
    pub round_ticks: u32,
    /// The raycaster: easy, normal or hard.
    #[arg(long, env = "CAMPFIRE_DIFFICULTY", default_value = "normal")]
    pub difficulty: String,
    /// Campaign seed.
    #[arg(long, env = "CAMPFIRE_SEED", default_value_t = 1)]
    pub seed: u32,
    /// Levels in the generated campaign.
    #[arg(long, env = "CAMPFIRE_LEVELS", default_value_t = 1)]
    pub levels: u32,
    /// Sessions kept open at once (a fresh one replaces each that ends);
    /// with --control-listen it may be 0 (testers open them).
    #[arg(long, env = "CAMPFIRE_SESSIONS", default_value_t = 1)]
    pub sessions: usize,
    /// Write each level's replay to DIR (`CODE-level-EPOCH.replay`; play
    /// one back with `host-daemon replay FILE`).
    #[arg(long, value_name = "DIR", env = "CAMPFIRE_RECORD")]
    pub record: Option<PathBuf>,
    /// Admit nobody after the start. By default a started session with a
    /// free seat stays listed and a joiner enters the running level.
    #[arg(long, env = "CAMPFIRE_NO_LATE_JOIN")]
    pub no_late_join: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR", env = "CAMPFIRE_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Spectators admitted at once (they hold no seat and send no input;
    /// `join CODE --spectate` watches). 0: nobody may watch.
    #[arg(long, env = "CAMPFIRE_MAX_SPECTATORS", default_value_t = DEFAULT_MAX_SPECTATORS)]
    pub max_spectators: usize,
    #[command(flatten)]
    ice: IceArgs,
    #[command(flatten)]
    control: ControlArgs,
}

impl ServingArgs {
    /// Whether sessions are listed: `--public` wins over `--private` and
    /// over `CAMPFIRE_PRIVATE` (a variable only counts where its flag is
    /// not given, and `--public` has none).
    pub fn public(&self) -> bool {
        self.public || !self.private
    }

    /// The difficulty named.
    pub fn difficulty(&self) -> anyhow::Result<Difficulty> {
        Difficulty::parse(&self.difficulty).context("unknown --difficulty")
    }

    /// The configuration these flags describe, for sessions named `name`
    /// that start with `start_when` (at least one): generated levels, no
    /// bots and no relay, which `host` and `relay` then fill in.
    pub fn config(&self, name: &str, start_when: usize) -> anyhow::Result<ServingConfig> {
        let difficulty = self.difficulty()?;
        Ok(ServingConfig {
            server: self.server.clone(),
            name: name.to_owned(),
            public: self.public(),
            bots: 0,
            max_players: self.max_players,
            start_when: start_when.max(1),
            lobby_timeout: self.lobby_timeout.map(Duration::from_secs),
            host: HostConfig {
                plan: Arc::new(GeneratedCampaign {
                    seed: self.seed,
                    levels: self.levels,
                }),
                settings: Settings { difficulty },
                hello_timeout: Duration::from_secs(self.hello_timeout.max(1)),
                record_replay: self.record.is_some(),
                late_join: !self.no_late_join,
                max_spectators: self.max_spectators,
                ..HostConfig::default()
            },
            sessions: self.sessions,
            webrtc: self.ice.webrtc_options()?,
            game: self.game,
            round_ticks: self.round_ticks.max(1),
            campaign_name: match self.game {
                GameName::Raycaster => "generated".to_owned(),
                GameName::Tag => "tag".to_owned(),
            },
            seed: self.seed,
            campaign_maps: None,
            metrics: None,
            record_dir: self.record.clone(),
            relay: None,
        })
    }
}

/// Runs `config` until SIGTERM or Ctrl-C, with the metrics and the
/// control API `args` ask for.
pub fn run(mut config: ServingConfig, args: &ServingArgs) -> anyhow::Result<()> {
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
        crate::serving::run(config, rx, desk).await
    })
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
async fn serve_metrics_at(addr: SocketAddr) -> anyhow::Result<DaemonMetrics> {
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
