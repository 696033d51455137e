//! The guest side of the netcode spec as a state machine: [`GuestSession`].
//!
//! Like the host, it does no I/O and reads no clock; its driver feeds it
//! events and the time. The guest is reply-driven during setup and
//! event-driven afterwards: it advances only when a `TickInputBundle`
//! arrives, applying a backlog oldest first and never skipping one.
//!
//! One module per job: [`handshake`] (hello, init, map transfer),
//! [`bundles`] (applying ticks and sampling input), [`clock`] (the host's
//! tick clock as this guest sees it), [`snapshots`] (the snapshot backlog
//! and corrections), [`transition`] (level changes), `authority` (a relay
//! session's authority duties), `dispatch` (host events and messages to
//! their handlers), `prediction` (the predicted view), `resync` (a relay's
//! in-place rebuild of a desynced guest), `netgraph` (what the overlay
//! shows).
//!
//! With the `redundant-inputs` feature the guest also wakes on its own: it
//! samples its input on its estimate of the host's clock and sends each
//! one again with the next few.

mod authority;
mod bundles;
mod clock;
mod config;
mod dispatch;
mod folded;
mod handshake;
mod netgraph;
mod prediction;
mod resync;
mod snapshots;
mod transition;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use game_api::Game;
use game_api::GameWire;
use game_api::PlayerId;
use game_api::game::{Input, Settings};
use protocol::chunk::Reassembler;
use protocol::peer::Features;
use protocol::peer::{EndReason, ScoreRow};
use protocol::peer::{GuestMessage, SessionInit, TickInputBundle};
use protocol::tick::{DISCONNECT_GRACE_MS, INPUT_DELAY_TICKS};
use protocol::wire::WireFormat;

pub use config::{AppliedTick, GuestConfig, GuestEnd, GuestEvent, GuestFault, RenderOffset};

use crate::netgraph::GuestMeter;
use crate::predict::PendingInputs;
use crate::stats::GuestStats;
use clock::HostClock;
use snapshots::SnapshotBacklog;

/// Who is in a session that has not started, and what its start waits
/// for, as the host said
/// ([`HostMessage::WaitingRoom`](protocol::peer::HostMessage::WaitingRoom)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitingRoom {
    /// Display names of the players in (the host's own first).
    pub players: Vec<String>,
    /// Most players the session takes, host included (`None`: no cap).
    pub max_players: Option<u32>,
    /// More guests the start waits for (`None`: the host's Start).
    pub guests_needed: Option<u32>,
    /// Which of `players` this guest is (`None` from hosts that do not
    /// say).
    pub you: Option<u32>,
}

/// Where a guest's session stands, for a user interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestPhase {
    /// Waiting for the host's hello.
    AwaitHello,
    /// Version agreed; waiting for the session init.
    AwaitInit,
    /// Receiving the map.
    ReceivingMap,
    /// The level is set up (ticks flow once the host starts).
    Running,
    /// Over: see [`GuestSession::ended`].
    Ended,
}

#[derive(Debug)]
enum Phase<W: GameWire> {
    AwaitHello,
    AwaitInit,
    Map(Box<SessionInit<W>>, Reassembler),
    Running,
    Ended(GuestEnd),
}

/// The guest's netcode session over engine `E`.
pub struct GuestSession<E: Game> {
    config: GuestConfig,
    phase: Phase<E::Wire>,
    me: Option<PlayerId>,
    names: BTreeMap<PlayerId, String>,
    engine: Option<E>,
    level_epoch: u32,
    backlog: VecDeque<TickInputBundle<E::Wire>>,
    snapshots: SnapshotBacklog<E::Wire>,
    transition: Option<(u32, Reassembler)>,
    host_lost_at: Option<Duration>,
    fell_behind_since: Option<Duration>,
    render_offsets: BTreeMap<PlayerId, RenderOffset>,
    final_scores: Vec<ScoreRow>,
    outbox: Vec<GuestMessage<E::Wire>>,
    events: Vec<GuestEvent>,
    stats: GuestStats,
    /// What the netgraph shows: messages each way, snapshots, held
    /// inputs, corrections.
    meter: GuestMeter,
    /// The players of the last whole tick bundle: a placed bundle's
    /// inputs are theirs, in this order.
    bundle_ids: Vec<PlayerId>,
    applied: Vec<AppliedTick>,
    snapshot_hashes: Vec<(u32, u64, u64)>,
    ending: Option<(EndReason, u32, u64)>,
    clock_hint: Duration,
    pilot: Option<E::Bot>,
    /// The session's settings, from its init: every level is built with
    /// them (a transition carries none).
    settings: Option<Settings<E>>,
    local_input: Input<E>,
    /// The hello features this guest took up (offered and wanted).
    features: Features,
    /// This player's input delay this level.
    input_delay: u64,
    /// The host's tick clock as the bundles show it (redundant inputs).
    clock: HostClock,
    /// The newest tick an input was sampled for this level.
    last_tagged: Option<u64>,
    /// The newest inputs sent, consecutive ticks, oldest first (redundant
    /// inputs: each goes out again with the next few).
    recent_inputs: VecDeque<(u64, Input<E>)>,
    /// When the next input message is due (`input-runs`).
    runs: lockstep::runs::InputRuns,
    /// This player's inputs the confirmed engine has not applied yet (the
    /// predicted view runs through them).
    pending: PendingInputs<Input<E>>,
    /// Every player's input in the newest applied bundle (the predicted
    /// view repeats them).
    known_inputs: BTreeMap<PlayerId, Input<E>>,
    /// A late joiner's entry: `(level epoch, tick)` of the state it got.
    joined_at: Option<(u32, u64)>,
    /// The rejoin token the host gave this player, if any.
    rejoin_token: Option<String>,
    /// The host said this connection resumed the player its token named.
    resumed: bool,
    /// The host admitted this guest to watch: it sends no input.
    spectator: bool,
    /// The reports the next input messages carry (`folded-reports`).
    folded: folded::Folded,
    /// Who watches the session, as the host last said.
    spectators: Vec<String>,
    /// The waiting room, as the host last said before the start.
    waiting_room: Option<WaitingRoom>,
    /// The current level's index (0 is the first).
    level_index: u32,
    /// A relay session's authority duties ([`authority`]).
    authority: authority::Authority,
    /// A relay's in-place rebuild under way ([`resync`]).
    resync: Option<resync::Resync>,
}

impl<E: Game> std::fmt::Debug for GuestSession<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestSession")
            .field("phase", &self.phase)
            .field("me", &self.me)
            .field("level_epoch", &self.level_epoch)
            .finish_non_exhaustive()
    }
}

impl<E: Game> GuestSession<E> {
    /// A guest waiting for the host's hello.
    pub fn new(config: GuestConfig) -> Self {
        Self {
            config,
            phase: Phase::AwaitHello,
            me: None,
            names: BTreeMap::new(),
            engine: None,
            level_epoch: 0,
            backlog: VecDeque::new(),
            snapshots: SnapshotBacklog::new(),
            transition: None,
            host_lost_at: None,
            fell_behind_since: None,
            render_offsets: BTreeMap::new(),
            final_scores: Vec::new(),
            outbox: Vec::new(),
            events: Vec::new(),
            stats: GuestStats::default(),
            meter: GuestMeter::default(),
            bundle_ids: Vec::new(),
            applied: Vec::new(),
            snapshot_hashes: Vec::new(),
            ending: None,
            clock_hint: Duration::ZERO,
            pilot: None,
            settings: None,
            local_input: Input::<E>::default(),
            features: Features::default(),
            input_delay: INPUT_DELAY_TICKS,
            clock: HostClock::default(),
            last_tagged: None,
            recent_inputs: VecDeque::new(),
            runs: lockstep::runs::InputRuns::default(),
            pending: PendingInputs::default(),
            known_inputs: BTreeMap::new(),
            joined_at: None,
            rejoin_token: None,
            resumed: false,
            spectator: false,
            folded: folded::Folded::default(),
            spectators: Vec::new(),
            waiting_room: None,
            level_index: 0,
            authority: authority::Authority::default(),
            resync: None,
        }
    }

    /// Where the session stands.
    pub fn phase(&self) -> GuestPhase {
        match self.phase {
            Phase::AwaitHello => GuestPhase::AwaitHello,
            Phase::AwaitInit => GuestPhase::AwaitInit,
            Phase::Map(..) => GuestPhase::ReceivingMap,
            Phase::Running => GuestPhase::Running,
            Phase::Ended(_) => GuestPhase::Ended,
        }
    }

    /// Whether the connection to the host is lost (the grace is running).
    pub fn host_lost(&self) -> bool {
        self.host_lost_at.is_some()
    }

    /// This guest's player id, once assigned.
    pub fn player_id(&self) -> Option<&PlayerId> {
        self.me.as_ref()
    }

    /// Every player's name as the host sent it.
    pub fn names(&self) -> &BTreeMap<PlayerId, String> {
        &self.names
    }

    /// The engine, once setup completed.
    pub fn engine(&self) -> Option<&E> {
        self.engine.as_ref()
    }

    /// The level epoch this guest runs.
    pub fn level_epoch(&self) -> u32 {
        self.level_epoch
    }

    /// Counters.
    pub fn stats(&self) -> &GuestStats {
        &self.stats
    }

    /// How the session ended, once it has.
    pub fn ended(&self) -> Option<&GuestEnd> {
        match &self.phase {
            Phase::Ended(e) => Some(e),
            _ => None,
        }
    }

    /// The end-of-run table the host sent.
    pub fn final_scores(&self) -> &[ScoreRow] {
        &self.final_scores
    }

    /// Applied ticks, if `record_ticks` is set.
    pub fn applied(&self) -> &[AppliedTick] {
        &self.applied
    }

    /// `(epoch, tick, hash)` right after each applied snapshot.
    pub fn snapshot_hashes(&self) -> &[(u32, u64, u64)] {
        &self.snapshot_hashes
    }

    /// `(epoch, tick, hash)` of the engine now (computed on demand).
    pub fn last_hash(&self) -> Option<(u32, u64, u64)> {
        self.engine
            .as_ref()
            .map(|e| (self.level_epoch, e.tick(), e.world_hash()))
    }

    /// This player's own input from now on, when no bot drives it.
    pub fn set_local_input(&mut self, input: Input<E>) {
        self.local_input = E::Wire::sanitize(&input);
    }

    /// Whether this guest is receiving a running level's state (a late
    /// joiner between its session init and the state's last chunk).
    pub fn joining(&self) -> bool {
        matches!(&self.phase, Phase::Map(init, _) if init.join.is_some())
    }

    /// The rejoin token the host gave this player with its session init: a
    /// fresh connection that presents it (`GuestConfig::resume_token`)
    /// within the disconnect grace resumes this player.
    pub fn rejoin_token(&self) -> Option<&str> {
        self.rejoin_token.as_deref()
    }

    /// Whether this connection resumed a player: its hello presented a
    /// token, and the host's join point said it resumed (the init then
    /// carries the player's next token: the presented one is spent).
    pub fn resumed(&self) -> bool {
        self.joined_at.is_some() && self.config.resume_token.is_some() && self.resumed
    }

    /// Whether the host admitted this guest to watch (its session init
    /// said so): it plays no player and sends no input.
    pub fn is_spectator(&self) -> bool {
        self.spectator
    }

    /// The display names of who watches the session, as the host last
    /// said (guests that take up `spectators`).
    pub fn spectators(&self) -> &[String] {
        &self.spectators
    }

    /// Who is in before the start, as the host last said (guests that
    /// take up `waiting-room`; `None` before the host said anything).
    pub fn waiting_room(&self) -> Option<&WaitingRoom> {
        self.waiting_room.as_ref()
    }

    /// Where this guest entered a running level, as `(level epoch, tick)`
    /// (`None`: it was in from the start).
    pub fn joined_at(&self) -> Option<(u32, u64)> {
        self.joined_at
    }

    /// This player's input delay in the current level, in ticks.
    pub fn input_delay(&self) -> u64 {
        self.input_delay
    }

    /// How this guest writes its messages ([`GuestMessage::encode`]).
    pub fn wire_format(&self) -> WireFormat {
        self.features.wire_format()
    }

    /// Takes what should be sent to the host.
    pub fn drain_outbox(&mut self) -> Vec<GuestMessage<E::Wire>> {
        std::mem::take(&mut self.outbox)
    }

    /// Takes what happened since the last call.
    pub fn drain_events(&mut self) -> Vec<GuestEvent> {
        std::mem::take(&mut self.events)
    }

    fn end(&mut self, end: GuestEnd) {
        if self.ended().is_none() {
            self.events.push(GuestEvent::Ended(end.clone()));
            self.phase = Phase::Ended(end);
        }
    }

    /// When the session next needs [`GuestSession::poll`] without an event.
    pub fn next_wakeup(&self) -> Option<Duration> {
        if self.ended().is_some() {
            return None;
        }
        let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
        [
            self.host_lost_at.map(|t| t + grace),
            self.fell_behind_since.map(|t| t + grace),
            self.next_sample_due(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Whether bundles are waiting that a [`Self::poll`] now would apply:
    /// the driver then polls again before it reads its next message.
    /// Bundles held while the level's state is still arriving (a late
    /// joiner's) are not: only messages can move them, so a driver that
    /// polled for them would never read those messages.
    pub fn has_backlog(&self) -> bool {
        self.ended().is_none()
            && matches!(self.phase, Phase::Running)
            && !self.backlog.is_empty()
            && !self.waiting_for_snapshot()
            && !self.resync_holds()
    }

    /// Runs timers and applies what can be applied.
    pub fn poll(&mut self, now: Duration) {
        if self.ended().is_some() {
            return;
        }
        let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
        self.apply_backlog(now);
        self.sample_on_clock(now);
        if let Some((reason, epoch, final_tick)) = self.ending {
            let reached = epoch != self.level_epoch
                || self.engine.as_ref().is_none_or(|e| e.tick() >= final_tick);
            if reached || self.host_lost_at.is_some_and(|t| now >= t + grace) {
                self.end(GuestEnd::Ended(reason));
                return;
            }
        }
        if self.host_lost_at.is_some_and(|t| now >= t + grace) {
            self.end(GuestEnd::Ended(EndReason::HostDisconnected));
            return;
        }
        if self.fell_behind_since.is_some_and(|t| now >= t + grace) {
            self.end(GuestEnd::Ended(EndReason::LevelTransitionFailed));
        }
    }
}
