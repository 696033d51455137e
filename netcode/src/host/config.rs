//! What a host is configured with, what it asks its driver to do, and what
//! it reports.

use crate::replay::ReplayRecord;
use std::sync::Arc;
use std::time::Duration;

use game_api::PlayerId;
use protocol::BUILD_VERSION;
use protocol::peer::HostMessage;
use protocol::peer::{
    EndReason, FEATURE_BINARY, FEATURE_COMPACT, FEATURE_DELTA_SNAPSHOTS, FEATURE_FOLDED_REPORTS,
    FEATURE_INPUT_DELAY, FEATURE_INPUT_RUNS, FEATURE_PING, FEATURE_PLACED_BUNDLES,
    FEATURE_REDUNDANT_INPUTS, FEATURE_ROUND_TRIP, FEATURE_SPECTATORS, FEATURE_WAITING_ROOM,
    RefusalReason,
};
use protocol::wire::WireFormat;

use super::budget::GuestBudgetPolicy;
use crate::link::ConnectionState;
use crate::stats::GuestSlot;
use game_api::game::Settings;
use game_api::{Game, GameWire, LevelPlan};

/// Spectators a host admits at once unless configured otherwise.
pub const DEFAULT_MAX_SPECTATORS: usize = 8;

/// What a host of game `G` is configured with.
pub struct HostConfig<G: Game> {
    /// Build identifier guests must match.
    pub build_version: String,
    /// The levels to play.
    pub plan: Arc<dyn LevelPlan<G::Wire>>,
    /// The session's settings, in every level's setup and init.
    pub settings: Settings<G>,
    /// The host's own player (bot-driven in the daemon), if it plays.
    pub host_player: Option<(PlayerId, String)>,
    /// Drive the host's own player with the engine's bot (the daemon);
    /// otherwise its input comes from [`crate::host::HostSession::set_local_input`].
    pub host_bot: bool,
    /// Extra bot players driven by the host.
    pub bots: u32,
    /// Guests to wait for before setup phase B starts.
    pub expected_guests: usize,
    /// How long the lobby waits for `expected_guests` after the first guest
    /// is in before it starts with whoever is there (`None`: wait).
    pub lobby_wait: Option<Duration>,
    /// How long a new connection may take to send its hello before it is
    /// refused and its seat freed.
    pub hello_timeout: Duration,
    /// How long phase B waits for setup acks before going on without stragglers.
    pub setup_timeout: Duration,
    /// Safety stop: end the session if a level runs longer than this.
    pub max_ticks_per_level: Option<u64>,
    /// Keep every tick's world hash (tests compare whole runs).
    pub record_hashes: bool,
    /// Emit [`HostEvent::Replay`] records: each level's setup, every
    /// tick's bundle and its end, for a replay file ([`crate::replay`]).
    pub record_replay: bool,
    /// Hello features offered to guests (default: every one this build
    /// knows; empty: the spec's plain protocol).
    pub features: Vec<String>,
    /// What each guest may send; a guest over it is disconnected.
    pub guest_budget: GuestBudgetPolicy,
    /// Admit guests after the start: a hello that arrives once the roster
    /// is frozen joins the running level at the next tick (a `rosterAdd`)
    /// and gets the world's exact state. Off: such a hello is refused
    /// with `session-started`, as the spec has it.
    pub late_join: bool,
    /// Most guests admitted and present at once; a hello beyond it is
    /// refused with `session-full` (`None`: no cap, the driver's seats
    /// decide).
    pub max_guests: Option<usize>,
    /// The secret rejoin tokens are made with (see `host::rejoin`); the
    /// driver draws it at random per session. `None`: no tokens, no
    /// rejoins.
    pub rejoin_secret: Option<[u8; 32]>,
    /// Most spectators watching at once (see `host::spectators`); a hello
    /// asking to watch beyond it is refused with `session-full`. 0: nobody
    /// may watch.
    pub max_spectators: usize,
}

impl<G: Game> Default for HostConfig<G> {
    /// The game's default plan and settings, every feature this build
    /// knows, a bot-driven host player, late join on, no rejoins.
    fn default() -> Self {
        Self {
            build_version: BUILD_VERSION.to_owned(),
            plan: G::default_plan(),
            settings: Settings::<G>::default(),
            host_player: Some((PlayerId::new("host"), "Host".to_owned())),
            host_bot: true,
            bots: 0,
            expected_guests: 0,
            lobby_wait: Some(Duration::from_secs(10)),
            hello_timeout: Duration::from_secs(5),
            setup_timeout: Duration::from_secs(10),
            max_ticks_per_level: None,
            record_hashes: false,
            record_replay: false,
            features: vec![
                FEATURE_PING.to_owned(),
                FEATURE_INPUT_DELAY.to_owned(),
                FEATURE_REDUNDANT_INPUTS.to_owned(),
                FEATURE_COMPACT.to_owned(),
                FEATURE_BINARY.to_owned(),
                FEATURE_SPECTATORS.to_owned(),
                FEATURE_WAITING_ROOM.to_owned(),
                FEATURE_DELTA_SNAPSHOTS.to_owned(),
                FEATURE_PLACED_BUNDLES.to_owned(),
                FEATURE_ROUND_TRIP.to_owned(),
                FEATURE_FOLDED_REPORTS.to_owned(),
                FEATURE_INPUT_RUNS.to_owned(),
            ],
            guest_budget: GuestBudgetPolicy::default(),
            late_join: true,
            max_guests: None,
            rejoin_secret: None,
            max_spectators: DEFAULT_MAX_SPECTATORS,
        }
    }
}

impl<G: Game> HostConfig<G> {
    /// The same session rules for game `H`, which plays `plan` with
    /// `settings`: everything here but the plan and the settings is the
    /// network's, whatever the game.
    pub fn with_game<H: Game>(
        self,
        plan: Arc<dyn LevelPlan<H::Wire>>,
        settings: Settings<H>,
    ) -> HostConfig<H> {
        HostConfig {
            build_version: self.build_version,
            plan,
            settings,
            host_player: self.host_player,
            host_bot: self.host_bot,
            bots: self.bots,
            expected_guests: self.expected_guests,
            lobby_wait: self.lobby_wait,
            hello_timeout: self.hello_timeout,
            setup_timeout: self.setup_timeout,
            max_ticks_per_level: self.max_ticks_per_level,
            record_hashes: self.record_hashes,
            record_replay: self.record_replay,
            features: self.features,
            guest_budget: self.guest_budget,
            late_join: self.late_join,
            max_guests: self.max_guests,
            rejoin_secret: self.rejoin_secret,
            max_spectators: self.max_spectators,
        }
    }
}

// By hand rather than derived: a derive would ask the game itself to be
// `Clone` and `Debug`, and the config holds none of the game's state.
impl<G: Game> Clone for HostConfig<G> {
    fn clone(&self) -> Self {
        Self {
            build_version: self.build_version.clone(),
            plan: Arc::clone(&self.plan),
            settings: self.settings.clone(),
            host_player: self.host_player.clone(),
            host_bot: self.host_bot,
            bots: self.bots,
            expected_guests: self.expected_guests,
            lobby_wait: self.lobby_wait,
            hello_timeout: self.hello_timeout,
            setup_timeout: self.setup_timeout,
            max_ticks_per_level: self.max_ticks_per_level,
            record_hashes: self.record_hashes,
            record_replay: self.record_replay,
            features: self.features.clone(),
            guest_budget: self.guest_budget,
            late_join: self.late_join,
            max_guests: self.max_guests,
            rejoin_secret: self.rejoin_secret,
            max_spectators: self.max_spectators,
        }
    }
}

impl<G: Game> std::fmt::Debug for HostConfig<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConfig")
            .field("build_version", &self.build_version)
            .field("levels", &self.plan.level_count())
            .field("settings", &self.settings)
            .field("host_player", &self.host_player)
            .field("bots", &self.bots)
            .field("expected_guests", &self.expected_guests)
            .field("features", &self.features)
            .field("late_join", &self.late_join)
            .field("max_guests", &self.max_guests)
            .field("rejoins", &self.rejoin_secret.is_some())
            .field("max_spectators", &self.max_spectators)
            .finish_non_exhaustive()
    }
}

/// What the host wants sent, and in which wire form
/// ([`HostMessage::encode`]).
#[derive(Clone, Debug, PartialEq)]
pub enum HostOutput<W: GameWire> {
    /// Send a message to a guest.
    Send(GuestSlot, HostMessage<W>, WireFormat),
    /// Send one message to several guests (encoded once: all of them read
    /// the same form).
    Broadcast(Vec<GuestSlot>, HostMessage<W>, WireFormat),
    /// Close a guest's connection (after what was queued before).
    Close(GuestSlot),
}

/// Something that happened, for logs and metrics (the session itself
/// never logs).
#[derive(Clone, Debug, PartialEq)]
pub enum HostEvent<W: GameWire> {
    /// A replay record (with `record_replay` only): write it as one line.
    Replay(ReplayRecord<W>),
    /// A tick ran, this late after its due time, holding this many inputs.
    Ticked {
        /// Microseconds after the tick's due time.
        lateness_us: u64,
        /// Inputs held for players whose input had not arrived.
        held_inputs: u64,
    },
    /// Guests admitted and connected changed.
    GuestsPresent(usize),
    /// A guest's transport went away.
    GuestLost(GuestSlot, ConnectionState),
    /// A join was refused.
    Refused(GuestSlot, RefusalReason),
    /// A guest sent something that is not a guest message.
    BadMessage(GuestSlot, String),
    /// A guest sent more than its budget of messages or bytes and is
    /// disconnected.
    OverBudget(GuestSlot),
    /// A player left the roster at this level epoch and tick.
    PlayerRemoved(u32, u64, PlayerId),
    /// A late joiner entered the roster at this level epoch and tick.
    PlayerJoined(u32, u64, PlayerId),
    /// A fresh connection (this slot) presented a player's rejoin token and
    /// takes that player over.
    PlayerResumed(GuestSlot, PlayerId),
    /// A connection (this slot) was admitted to watch, as this spectator.
    SpectatorAdmitted(GuestSlot, PlayerId),
    /// A late joiner's state could not be saved or encoded: it leaves the
    /// roster again at the next tick.
    JoinFailed(PlayerId, String),
    /// A guest's hash report disagreed with the host's.
    Desync {
        /// Whose.
        player: PlayerId,
        /// Level epoch.
        level_epoch: u32,
        /// Tick.
        tick: u64,
        /// The previous report disagreed too, across a snapshot.
        persistent: bool,
    },
    /// A guest never acknowledged a level transition and is dropped.
    TransitionDropped(PlayerId),
    /// A guest answered a ping: one round trip of its input channel.
    RoundTrip {
        /// Whose.
        player: PlayerId,
        /// The round trip measured.
        rtt: Duration,
    },
    /// The host could not build or encode a level and ends the session.
    LevelFailed(String),
    /// The session ended.
    Ended(EndReason),
}
