//! What a guest is configured with, how it ends, and what it reports.

use std::time::Duration;

use game_api::PlayerId;
use protocol::BUILD_VERSION;
use protocol::peer::{
    EndReason, FEATURE_BINARY, FEATURE_COMPACT, FEATURE_DELTA_SNAPSHOTS, FEATURE_FOLDED_REPORTS,
    FEATURE_INPUT_DELAY, FEATURE_INPUT_RUNS, FEATURE_PING, FEATURE_PLACED_BUNDLES,
    FEATURE_REDUNDANT_INPUTS, FEATURE_RELAY, FEATURE_RESYNC, FEATURE_ROUND_TRIP,
    FEATURE_SPECTATORS, FEATURE_WAITING_ROOM, RefusalReason,
};

/// How a guest's session ended.
#[derive(Clone, Debug, PartialEq)]
pub enum GuestEnd {
    /// The host ended it (or the guest gave up with a spec reason).
    Ended(EndReason),
    /// The host refused the join.
    Refused(RefusalReason, String),
    /// Setup failed on this side (map rejected, constants disagree).
    SetupFailed(String),
    /// This side can no longer follow the running session (a tick the
    /// host sent never arrived, so every later one is out of sequence).
    Failed(String),
}

/// A deliberate fault, for tests of the repair mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestFault {
    /// After applying the bundle that brings the engine to this tick of the
    /// first level, scramble the PRNG and this guest's own player (once).
    CorruptAtTick(u64),
}

/// What a guest is configured with.
#[derive(Clone, Debug)]
pub struct GuestConfig {
    /// Build identifier sent in the handshake.
    pub build_version: String,
    /// Display name as typed ("" for none).
    pub display_name: String,
    /// Drive this guest's player with the engine's bot (else the input
    /// given to [`crate::guest::GuestSession::set_local_input`]).
    pub bot: bool,
    /// Keep every applied tick's record (tests).
    pub record_ticks: bool,
    /// A fault to inject.
    pub fault: Option<GuestFault>,
    /// Hello features this guest takes up when the host offers them
    /// (default: every one this build knows; empty: the spec's plain
    /// protocol, as an older peer speaks it).
    pub features: Vec<String>,
    /// A rejoin token from an earlier connection to this session: the
    /// hello asks to resume that player.
    pub resume_token: Option<String>,
    /// Ask to watch instead of play: no seat, no input, the running
    /// level's state at whatever point the host admits this guest.
    pub spectate: bool,
}

impl Default for GuestConfig {
    fn default() -> Self {
        Self {
            build_version: BUILD_VERSION.to_owned(),
            display_name: String::new(),
            bot: true,
            record_ticks: false,
            fault: None,
            features: vec![
                FEATURE_PING.to_owned(),
                FEATURE_INPUT_DELAY.to_owned(),
                FEATURE_REDUNDANT_INPUTS.to_owned(),
                FEATURE_COMPACT.to_owned(),
                FEATURE_BINARY.to_owned(),
                FEATURE_SPECTATORS.to_owned(),
                FEATURE_WAITING_ROOM.to_owned(),
                FEATURE_RELAY.to_owned(),
                FEATURE_RESYNC.to_owned(),
                FEATURE_DELTA_SNAPSHOTS.to_owned(),
                FEATURE_PLACED_BUNDLES.to_owned(),
                FEATURE_ROUND_TRIP.to_owned(),
                FEATURE_FOLDED_REPORTS.to_owned(),
                FEATURE_INPUT_RUNS.to_owned(),
            ],
            resume_token: None,
            spectate: false,
        }
    }
}

/// One applied tick, for tests and diagnostics.
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedTick {
    /// Level epoch.
    pub epoch: u32,
    /// The bundle's tick.
    pub tick: u64,
    /// World hash after the advance.
    pub hash: u64,
    /// Players whose input was held.
    pub held: Vec<PlayerId>,
    /// Players removed at this tick.
    pub removed: Vec<PlayerId>,
    /// Players whose input was exactly neutral.
    pub neutral: Vec<PlayerId>,
}

/// A position correction being smoothed in rendering.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenderOffset {
    /// `old - new` position, tiles.
    pub dx: f64,
    /// `old - new` position, tiles.
    pub dy: f64,
    /// When the correction happened.
    pub at: Duration,
}

/// Something that happened, for logs (the session itself never logs).
#[derive(Clone, Debug, PartialEq)]
pub enum GuestEvent {
    /// The host sent something that is not a host message.
    BadMessage(String),
    /// The host runs another build (its refusal follows).
    HostBuildDiffers(String),
    /// A transition payload was rejected; a resend is awaited.
    TransitionRejected(String),
    /// A snapshot failed validation and was discarded.
    SnapshotRejected(String),
    /// A bundle for another tick than the engine's.
    OutOfSequence {
        /// The bundle's tick.
        bundle: u64,
        /// The engine's tick.
        engine: u64,
    },
    /// A bundle lacked a roster member's input (neutral used).
    MissingInput(PlayerId),
    /// The test fault could not be injected.
    FaultFailed(String),
    /// A relay's ask this guest, as its authority, could not answer (a
    /// level beyond the campaign, a roster out of bounds, a level the
    /// engine refused).
    RelayAskRefused(String),
    /// The host admitted this guest (its session init arrived): the player
    /// it plays and, when the host takes rejoins, the token that resumes it.
    Admitted {
        /// The player.
        player: PlayerId,
        /// Its rejoin token.
        rejoin_token: Option<String>,
    },
    /// A relay is rebuilding this desynced guest in place: its bundle
    /// stream restarts at `tick` of `level_epoch`.
    Resyncing {
        /// The level.
        level_epoch: u32,
        /// The tick the new stream starts at.
        tick: u64,
    },
    /// The rebuild is done: the world stands at `tick` of `level_epoch`
    /// again, as the relay's latest verified snapshot had it.
    Resynced {
        /// The level.
        level_epoch: u32,
        /// The snapshot's tick.
        tick: u64,
    },
    /// The session ended.
    Ended(GuestEnd),
}
