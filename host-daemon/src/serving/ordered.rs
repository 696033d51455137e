//! A tester's order (`POST /api/sessions` of the control API) applied to
//! the daemon's own configuration: what the order sets replaces the flag,
//! checked as the flags are.

use std::sync::Arc;

use engine::plan::{FixedCampaign, GeneratedCampaign};
use engine::wire::Raycaster;
use engine::wire::difficulty::Difficulty;
use game_api::LevelPlan;
use protocol::name::SESSION_NAME_MAX_CHARS;

use super::ServingConfig;
use crate::control::view::OpenRequest;
use crate::game::GameName;

/// The most levels an ordered campaign may have.
pub const MAX_ORDERED_LEVELS: u32 = 50;

/// The most players an ordered session may seat.
pub const MAX_ORDERED_PLAYERS: u32 = 16;

/// `base` with what `order` sets, or why it cannot be run.
pub fn ordered_config(base: &ServingConfig, order: &OpenRequest) -> Result<ServingConfig, String> {
    let mut config = base.clone();
    if let Some(name) = &order.name {
        let name = name.trim();
        let chars = name.chars().count();
        if chars == 0 || chars > SESSION_NAME_MAX_CHARS {
            return Err(format!(
                "name must have 1 to {SESSION_NAME_MAX_CHARS} characters"
            ));
        }
        config.name = name.to_owned();
    }
    if let Some(public) = order.public {
        config.public = public;
    }
    if let Some(max) = order.max_players {
        if !(1..=MAX_ORDERED_PLAYERS).contains(&max) {
            return Err(format!(
                "maxPlayers must be between 1 and {MAX_ORDERED_PLAYERS}"
            ));
        }
        config.max_players = max;
    }
    if order.difficulty.is_some() && config.game != GameName::Raycaster {
        return Err(format!(
            "difficulty is the raycaster's; this daemon serves {}",
            config.game.as_str()
        ));
    }
    let difficulty = match &order.difficulty {
        Some(d) => Difficulty::parse(d).ok_or("difficulty must be easy, normal or hard")?,
        None => config.host.settings.difficulty,
    };
    config.host.settings.difficulty = difficulty;
    if let Some(levels) = order.levels
        && !(1..=MAX_ORDERED_LEVELS).contains(&levels)
    {
        return Err(format!("levels must be between 1 and {MAX_ORDERED_LEVELS}"));
    }
    if let Some(relay) = config.relay.as_mut() {
        if order.bots.is_some_and(|b| b > 0) {
            return Err("a relay has no bots; its players play".to_owned());
        }
        relay.settings.difficulty = difficulty;
        let seed = &mut relay.campaign.campaign_seed;
        *seed = order.seed.unwrap_or(*seed);
        config.seed = *seed;
        relay.levels = order.levels.unwrap_or(relay.levels);
    } else {
        if let Some(bots) = order.bots {
            config.bots = bots;
            config.host.bots = bots;
        }
        config.host.plan = replanned(&mut config, order)?;
    }
    if let Some(start) = order.start_when {
        config.start_when = start.max(1);
    }
    if config.local_players() >= config.max_players.max(1) && config.relay.is_none() {
        return Err(format!(
            "{} bots and the host's player leave no seat of {} for a guest",
            config.bots, config.max_players
        ));
    }
    if config.guest_seats() < config.start_when {
        return Err(format!(
            "maxPlayers {} leaves {} seats, fewer than startWhen {}",
            config.max_players,
            config.guest_seats(),
            config.start_when
        ));
    }
    Ok(config)
}

/// The level plan with the order's seed and level count: generated levels,
/// or the daemon's campaign folder (whose level count is its own).
fn replanned(
    config: &mut ServingConfig,
    order: &OpenRequest,
) -> Result<Arc<dyn LevelPlan<Raycaster>>, String> {
    let seed = order.seed.unwrap_or(config.seed);
    config.seed = seed;
    match &config.campaign_maps {
        Some(maps) => {
            if order.levels.is_some() {
                return Err("this daemon plays a campaign folder; its level count is fixed".into());
            }
            Ok(Arc::new(FixedCampaign {
                seed,
                maps: maps.clone(),
            }))
        }
        None => Ok(Arc::new(GeneratedCampaign {
            seed,
            levels: order.levels.unwrap_or(config.host.plan.level_count()),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::{Cli, Command, host, relay};
    use clap::Parser;

    fn base(kind: &str) -> ServingConfig {
        let cli =
            Cli::try_parse_from(["host-daemon", kind, "--server", "http://127.0.0.1:1"]).unwrap();
        match cli.command {
            Command::Host(a) => host::serving_config(&a).unwrap(),
            Command::Relay(a) => relay::serving_config(&a).unwrap(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn an_order_replaces_the_flags_it_sets() {
        let order = OpenRequest {
            bots: Some(3),
            levels: Some(2),
            difficulty: Some("hard".into()),
            seed: Some(42),
            name: Some(" Hard night ".into()),
            public: Some(false),
            start_when: Some(2),
            max_players: Some(8),
        };
        let c = ordered_config(&base("host"), &order).unwrap();
        assert_eq!((c.bots, c.host.bots), (3, 3));
        assert_eq!(c.host.plan.level_count(), 2);
        assert_eq!(c.seed, 42);
        assert_eq!(
            c.host.plan.level(0, 1).head.gameplay_seed,
            engine::plan::seed_for_level(42, 0)
        );
        assert_eq!(c.host.settings.difficulty, Difficulty::Hard);
        assert_eq!(c.name, "Hard night");
        assert!(!c.public);
        assert_eq!(c.start_when, 2);
        let same = ordered_config(&base("host"), &OpenRequest::default()).unwrap();
        assert_eq!(same.seed, 1);
        assert_eq!(same.bots, 1);
    }

    #[test]
    fn an_order_the_daemon_cannot_run_is_refused() {
        let host = base("host");
        for bad in [
            OpenRequest {
                levels: Some(0),
                ..OpenRequest::default()
            },
            OpenRequest {
                levels: Some(51),
                ..OpenRequest::default()
            },
            OpenRequest {
                difficulty: Some("nightmare".into()),
                ..OpenRequest::default()
            },
            OpenRequest {
                name: Some("  ".into()),
                ..OpenRequest::default()
            },
            OpenRequest {
                name: Some("x".repeat(65)),
                ..OpenRequest::default()
            },
            OpenRequest {
                max_players: Some(17),
                ..OpenRequest::default()
            },
            OpenRequest {
                bots: Some(7),
                max_players: Some(8),
                ..OpenRequest::default()
            },
            OpenRequest {
                start_when: Some(5),
                max_players: Some(4),
                ..OpenRequest::default()
            },
        ] {
            assert!(ordered_config(&host, &bad).is_err(), "{bad:?}");
        }
        let relay = base("relay");
        let bots = OpenRequest {
            bots: Some(1),
            ..OpenRequest::default()
        };
        assert!(ordered_config(&relay, &bots).is_err());
        let r = ordered_config(
            &relay,
            &OpenRequest {
                levels: Some(3),
                seed: Some(9),
                ..OpenRequest::default()
            },
        )
        .unwrap();
        let r = r.relay.unwrap();
        assert_eq!((r.levels, r.campaign.campaign_seed), (3, 9));
    }
}
