//! `host-daemon relay`: always-on relay sessions published through a
//! lobby server (`hostKind: relay`). The relay runs no engine: every
//! player connects to it, one of them is the authority, and the session
//! outlives any player. See docs/relay.md.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use engine::Difficulty;
use lockstep::peer::PeerRelayConfig;
use lockstep::relay::{DEFAULT_SNAPSHOT_INTERVAL, MAX_SNAPSHOT_INTERVAL, RelayConfig};
use netcode::host::{DEFAULT_MAX_SPECTATORS, HostConfig};
use netcode::plan::GeneratedCampaign;
use protocol::tick::{MAX_INPUT_DELAY_TICKS, MIN_INPUT_DELAY_TICKS};

use super::control::ControlArgs;
use super::host::{runtime, serve_metrics_at};
use super::ice::IceArgs;
use super::shutdown_signal;
use crate::hosting::{self, HostingConfig};

/// `relay` flags.
#[derive(Args, Debug)]
pub struct RelayArgs {
    /// Lobby server base URL.
    #[arg(long)]
    server: String,
    /// The session's name in the lobby.
    #[arg(long, default_value = "campfire relay")]
    name: String,
    /// List the sessions in the public lobby (default).
    #[arg(long, overrides_with = "private")]
    public: bool,
    /// Do not list the sessions (join by code only).
    #[arg(long, overrides_with = "public")]
    private: bool,
    /// Most players per session.
    #[arg(long, default_value_t = 8)]
    max_players: u32,
    /// Start once this many players are connected.
    #[arg(long, default_value_t = 2)]
    start_when: usize,
    /// Seconds: a session nobody joined within SECS is closed (and a fresh
    /// one opened); one with players in but fewer than --start-when starts
    /// SECS after its first player came.
    #[arg(long, value_name = "SECS")]
    lobby_timeout: Option<u64>,
    /// Seconds a joiner's connection may stay silent before its hello.
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    hello_timeout: u64,
    /// easy, normal or hard.
    #[arg(long, default_value = "normal")]
    difficulty: String,
    /// Campaign seed.
    #[arg(long, default_value_t = 1)]
    seed: u32,
    /// Levels in the generated campaign.
    #[arg(long, default_value_t = 1)]
    levels: u32,
    /// Sessions kept open at once (a fresh one replaces each that ends);
    /// with --control-listen it may be 0 (testers open them).
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// Ticks between the snapshots asked of the authority (late joiners
    /// and desynced peers are rebuilt from the latest verified one plus
    /// the log, which holds at most two intervals plus the judging window).
    #[arg(long, value_name = "TICKS", default_value_t = DEFAULT_SNAPSHOT_INTERVAL)]
    snapshot_every: u64,
    /// Every player's input delay, fixed, ticks (other than the spec's 3
    /// it needs guests that take up `input-delay`; campfire's do). Without
    /// it each player's delay is fitted to its link's round trip, as a
    /// host fits them.
    #[arg(long, value_name = "TICKS")]
    input_delay: Option<u64>,
    /// Write each level's replay to DIR (`CODE-level-EPOCH.replay`; play
    /// one back with `host-daemon replay FILE`).
    #[arg(long, value_name = "DIR")]
    record: Option<std::path::PathBuf>,
    /// Admit nobody after the start.
    #[arg(long)]
    no_late_join: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// Spectators admitted at once. 0: nobody may watch.
    #[arg(long, default_value_t = DEFAULT_MAX_SPECTATORS)]
    max_spectators: usize,
    /// Player seats one address (an IPv6 /56) may hold in a session; its
    /// seats count once when world hashes are judged.
    #[arg(long, default_value_t = 4)]
    max_seats_per_address: usize,
    #[command(flatten)]
    ice: IceArgs,
    #[command(flatten)]
    control: ControlArgs,
}

/// The hosting configuration the flags describe.
pub fn relaying_config(a: &RelayArgs) -> anyhow::Result<HostingConfig> {
    let difficulty = Difficulty::parse(&a.difficulty).context("unknown --difficulty")?;
    let delays = MIN_INPUT_DELAY_TICKS..=MAX_INPUT_DELAY_TICKS;
    if a.input_delay.is_some_and(|d| !delays.contains(&d)) {
        bail!("--input-delay must be between {MIN_INPUT_DELAY_TICKS} and {MAX_INPUT_DELAY_TICKS}");
    }
    if !(30..=MAX_SNAPSHOT_INTERVAL).contains(&a.snapshot_every) {
        bail!("--snapshot-every must be between 30 and {MAX_SNAPSHOT_INTERVAL} ticks");
    }
    let start_when = a.start_when.max(1);
    if (a.max_players as usize) < start_when {
        bail!(
            "--max-players {} is fewer than --start-when {start_when}",
            a.max_players
        );
    }
    let relay = PeerRelayConfig {
        relay: RelayConfig {
            max_spectators: a.max_spectators,
            snapshot_interval: a.snapshot_every,
            late_join: !a.no_late_join,
            max_seats_per_origin: a.max_seats_per_address.max(1),
            ..RelayConfig::default()
        },
        campaign_seed: a.seed,
        levels: a.levels.max(1),
        difficulty,
        input_delay: a.input_delay,
        hello_timeout: Duration::from_secs(a.hello_timeout.max(1)),
        record: a.record.is_some(),
        ..PeerRelayConfig::default()
    };
    Ok(HostingConfig {
        server: a.server.clone(),
        name: a.name.clone(),
        public: !a.private,
        bots: 0,
        max_players: a.max_players,
        start_when,
        lobby_timeout: a.lobby_timeout.map(Duration::from_secs),
        host: HostConfig {
            plan: std::sync::Arc::new(GeneratedCampaign {
                seed: a.seed,
                levels: a.levels.max(1),
            }),
            difficulty,
            host_player: None,
            bots: 0,
            late_join: !a.no_late_join,
            ..HostConfig::default()
        },
        sessions: a.sessions,
        webrtc: a.ice.webrtc_options()?,
        campaign_name: "generated".to_owned(),
        seed: a.seed,
        campaign_maps: None,
        metrics: None,
        record_dir: a.record.clone(),
        relay: Some(relay),
    })
}

/// Runs `host-daemon relay` until SIGTERM or Ctrl-C.
pub fn run(args: RelayArgs) -> anyhow::Result<()> {
    let mut config = relaying_config(&args)?;
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
