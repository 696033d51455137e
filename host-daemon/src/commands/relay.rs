//! `host-daemon relay`: always-on relay sessions published through a
//! lobby server (`hostKind: relay`). The relay runs no engine: every
//! player connects to it, one of them is the authority, and the session
//! outlives any player. See docs/relay.md.

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use engine::plan::GeneratedCampaign;
use engine::wire::raycaster::{CampaignSeed, Settings};
use lockstep::peer::PeerRelayConfig;
use lockstep::relay::{DEFAULT_SNAPSHOT_INTERVAL, MAX_SNAPSHOT_INTERVAL, RelayConfig};
use netcode::host::HostConfig;
use protocol::tick::{MAX_INPUT_DELAY_TICKS, MIN_INPUT_DELAY_TICKS};

use super::serving::{self, ServingArgs};
use crate::serving::ServingConfig;

/// `relay` flags.
#[derive(Args, Debug)]
pub struct RelayArgs {
    #[command(flatten)]
    serving: ServingArgs,
    /// The session's name in the lobby.
    #[arg(long, env = "CAMPFIRE_SESSION_NAME", default_value = "campfire relay")]
    name: String,
    /// Start once this many players are connected.
    #[arg(long, env = "CAMPFIRE_START_WHEN", default_value_t = 2)]
    start_when: usize,
    /// Ticks between the snapshots asked of the authority (late joiners
    /// and desynced peers are rebuilt from the latest verified one plus
    /// the log, which holds at most two intervals plus the judging window).
    #[arg(long, value_name = "TICKS", env = "CAMPFIRE_SNAPSHOT_EVERY", default_value_t = DEFAULT_SNAPSHOT_INTERVAL)]
    snapshot_every: u64,
    /// Every player's input delay, fixed, ticks (other than the spec's 3
    /// it needs guests that take up `input-delay`; campfire's do). Without
    /// it each player's delay is fitted to its link's round trip, as a
    /// host fits them.
    #[arg(long, value_name = "TICKS", env = "CAMPFIRE_INPUT_DELAY")]
    input_delay: Option<u64>,
    /// Player seats one address (an IPv6 /56) may hold in a session; its
    /// seats count once when world hashes are judged.
    #[arg(long, env = "CAMPFIRE_MAX_SEATS_PER_ADDRESS", default_value_t = 4)]
    max_seats_per_address: usize,
}

/// The serving configuration the flags describe.
pub fn serving_config(a: &RelayArgs) -> anyhow::Result<ServingConfig> {
    let serving = &a.serving;
    let difficulty = serving.difficulty()?;
    let delays = MIN_INPUT_DELAY_TICKS..=MAX_INPUT_DELAY_TICKS;
    if a.input_delay.is_some_and(|d| !delays.contains(&d)) {
        bail!("--input-delay must be between {MIN_INPUT_DELAY_TICKS} and {MAX_INPUT_DELAY_TICKS}");
    }
    if !(30..=MAX_SNAPSHOT_INTERVAL).contains(&a.snapshot_every) {
        bail!("--snapshot-every must be between 30 and {MAX_SNAPSHOT_INTERVAL} ticks");
    }
    let start_when = a.start_when.max(1);
    if (serving.max_players as usize) < start_when {
        bail!(
            "--max-players {} is fewer than --start-when {start_when}",
            serving.max_players
        );
    }
    let levels = serving.levels.max(1);
    let mut config = serving.config(&a.name, start_when)?;
    // A relay runs no host session: its own settings are the relay's.
    config.host = HostConfig {
        plan: Arc::new(GeneratedCampaign {
            seed: serving.seed,
            levels,
        }),
        settings: Settings { difficulty },
        host_player: None,
        bots: 0,
        late_join: !serving.no_late_join,
        ..HostConfig::default()
    };
    config.relay = Some(PeerRelayConfig {
        relay: RelayConfig {
            max_spectators: serving.max_spectators,
            snapshot_interval: a.snapshot_every,
            late_join: !serving.no_late_join,
            max_seats_per_origin: a.max_seats_per_address.max(1),
            ..RelayConfig::default()
        },
        campaign: CampaignSeed {
            campaign_seed: serving.seed,
        },
        levels,
        settings: Settings { difficulty },
        input_delay: a.input_delay,
        hello_timeout: Duration::from_secs(serving.hello_timeout.max(1)),
        record: serving.record.is_some(),
        ..PeerRelayConfig::default()
    });
    Ok(config)
}

/// Runs `host-daemon relay` until SIGTERM or Ctrl-C.
pub fn run(args: RelayArgs) -> anyhow::Result<()> {
    serving::run(serving_config(&args)?, &args.serving)
}
