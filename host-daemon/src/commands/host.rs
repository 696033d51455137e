//! `host-daemon host`: always-on bot sessions published through a lobby
//! server and played over WebRTC.

use std::sync::Arc;

use anyhow::bail;
use clap::Args;
use engine::plan::FixedCampaign;
use engine::wire::Raycaster;
use game_api::LevelPlan;

use super::serving::{self, ServingArgs};
use crate::campaign::Campaign;
use crate::game::GameName;
use crate::serving::ServingConfig;

/// `host` flags.
#[derive(Args, Debug)]
pub struct HostArgs {
    #[command(flatten)]
    serving: ServingArgs,
    /// The session's name in the lobby.
    #[arg(long, env = "CAMPFIRE_SESSION_NAME", default_value = "campfire bots")]
    name: String,
    /// Bot players hosted in-process, besides the host's own bot player.
    #[arg(long, env = "CAMPFIRE_BOTS", default_value_t = 1)]
    bots: u32,
    /// Start once this many guests are in.
    #[arg(long, env = "CAMPFIRE_START_WHEN", default_value_t = 1)]
    start_when: usize,
    /// Play the level maps in this folder (`*.json`, in file-name order)
    /// instead of generated levels.
    #[arg(
        long,
        value_name = "DIR",
        env = "CAMPFIRE_CAMPAIGN",
        conflicts_with = "levels"
    )]
    campaign: Option<std::path::PathBuf>,
    /// Safety stop per level, ticks.
    #[arg(long, env = "CAMPFIRE_MAX_TICKS", default_value_t = 20_000)]
    max_ticks: u64,
}

/// The serving configuration the flags describe.
pub fn serving_config(a: &HostArgs) -> anyhow::Result<ServingConfig> {
    let mut config = a.serving.config(&a.name, a.start_when)?;
    if let Some(dir) = &a.campaign {
        if a.serving.game != GameName::Raycaster {
            bail!("--campaign is a folder of the raycaster's maps; tag generates its rounds");
        }
        let campaign = Campaign::load(dir)?;
        config.host.plan = Arc::new(FixedCampaign {
            seed: a.serving.seed,
            maps: campaign.maps.clone(),
        }) as Arc<dyn LevelPlan<Raycaster>>;
        config.campaign_maps = Some(campaign.maps);
        config.campaign_name = campaign.name;
    }
    config.bots = a.bots;
    config.host.bots = a.bots;
    config.host.max_ticks_per_level = Some(a.max_ticks);
    if config.guest_seats() < config.start_when {
        bail!(
            "--max-players {} leaves {} guest seats, fewer than --start-when {}",
            a.serving.max_players,
            config.guest_seats(),
            config.start_when
        );
    }
    Ok(config)
}

/// Runs `host-daemon host` until SIGTERM or Ctrl-C.
pub fn run(args: HostArgs) -> anyhow::Result<()> {
    serving::run(serving_config(&args)?, &args.serving)
}
