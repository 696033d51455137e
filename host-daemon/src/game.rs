//! Which game the daemon's sessions play (`--game`): the raycaster, or
//! tag. Registering a game is this module: its name, and how a session
//! template's plan and settings become its own.

use std::sync::Arc;

use clap::ValueEnum;
use engine::RaycasterEngine;
use engine::wire::Raycaster;
use lockstep::peer::PeerRelayConfig;
use netcode::host::HostConfig;
use tag::TagWorld;
use tag::plan::Rounds;
use tag::wire::{Tag, TagCampaign, TagSettings};

/// A game the daemon can host, relay and join.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum GameName {
    /// The raycaster co-op shooter (the browser's game).
    #[default]
    Raycaster,
    /// Tag: runners on an arena, the smallest second game.
    Tag,
}

impl GameName {
    /// Its name on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Raycaster => "raycaster",
            Self::Tag => "tag",
        }
    }
}

/// A tag host with the session rules of `template` (a raycaster host's,
/// as the daemon's flags build it): `rounds` rounds from `seed`.
pub fn tag_host(
    template: HostConfig<RaycasterEngine>,
    seed: u32,
    rounds: u32,
    round_ticks: u32,
) -> HostConfig<TagWorld> {
    let plan = Arc::new(Rounds {
        seed,
        rounds,
        round_ticks,
    });
    template.with_game::<TagWorld>(plan, TagSettings::default())
}

/// A tag relay with the rules of `template` (a raycaster relay's, as the
/// daemon's flags build it), its campaign from `seed`.
pub fn tag_relay(
    template: PeerRelayConfig<Raycaster>,
    seed: u32,
    round_ticks: u32,
) -> PeerRelayConfig<Tag> {
    let campaign = TagCampaign {
        tag_seed: seed,
        round_ticks,
    };
    template.with_game::<Tag>(campaign, TagSettings::default())
}
