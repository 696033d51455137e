//! The relay: a lockstep session that never runs the game.
//!
//! [`Relay`] orders what the peers send. Each tick it builds one
//! [`Frame`](crate::frame::Frame) from the players' inputs by the host session's rules (the
//! shared [`InputBuffer`]: per-player input delay, the last input held
//! when one is late, neutral input during a disconnect grace, roster adds
//! and removes) and sends it to every peer. What needs the game comes from
//! one peer, the *authority*: each level's start payload, the level's end,
//! and a snapshot every [`RelayConfig::snapshot_interval`] ticks. The
//! authority is the first player, then the longest-connected one; when it
//! leaves or desyncs, the next takes over at the next tick.
//!
//! Peers report world hashes; a [`HashJudge`] decides by majority of
//! origins (a connection's [`Origin`]: one address's seats count once, and
//! it holds at most [`RelayConfig::max_seats_per_origin`]), ties to the
//! authority. Only a majority of the voting origins decides anything: a
//! snapshot whose hash it reported anchors the [`InputLog`] and the frames
//! before it are dropped; a peer whose hash loses to it is rebuilt from
//! that anchor and the frames since ([`RelayMessage::CatchUp`]), as late
//! joiners, rejoining players and spectators are. A split (a tie, or a
//! plurality short of a majority) changes nothing.
//!
//! Like the host session it does no I/O and reads no clock: the driver
//! feeds it events and the time, calls [`Relay::poll`], and sends what
//! [`Relay::drain_outbox`] returns. Modules: [`config`] (configuration,
//! messages, events), `peers` (admission and departures), `starting`
//! (asking for a level and starting it), `running` (ticks, authority
//! answers, judging), `authority` (electing the authority and handing the
//! role on).

mod authority;
pub mod config;
mod peers;
mod running;
mod starting;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use game_api::PlayerId;

pub use config::{
    DEFAULT_SNAPSHOT_INTERVAL, Entry, MAX_SNAPSHOT_INTERVAL, Origin, Refusal, RelayConfig,
    RelayEnd, RelayEvent, RelayMessage, RelayOutput, RelayStats, Slot,
};

use crate::frame::Arrival;
use crate::inputs::InputBuffer;
use crate::judge::HashJudge;
use crate::log::{InputLog, Snapshot};
use crate::pacing::TickClock;

/// Where a relay session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayPhase {
    /// Waiting for players.
    Lobby,
    /// Waiting for the authority's level payload.
    Asking,
    /// The level payload went out; waiting for the peers to load it.
    Starting,
    /// Ticking.
    Running,
    /// Over.
    Ended,
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Lobby { first_at: Option<Duration> },
    Asking { since: Duration },
    Starting { deadline: Duration },
    Running { clock: TickClock },
    Ended(RelayEnd),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Role {
    Player(PlayerId),
    Spectator,
}

#[derive(Debug)]
struct Peer {
    role: Role,
    name: String,
    /// Admission order: the longest-connected peer has the lowest.
    seniority: u64,
    connected: bool,
    disconnected_at: Option<Duration>,
    input_delay: u64,
    /// Has the current level (its start or a catch-up) been sent to it.
    receiving: bool,
    /// Has it said it loaded what it was sent.
    loaded: bool,
    /// Where it connects from (its seats vote once).
    origin: Origin,
}

impl Peer {
    fn player(&self) -> Option<&PlayerId> {
        match &self.role {
            Role::Player(p) => Some(p),
            Role::Spectator => None,
        }
    }
}

/// A snapshot asked of the authority.
#[derive(Debug)]
struct AskedSnapshot {
    tick: u64,
    /// The roster and delays at that tick, as the relay ordered it.
    roster: BTreeMap<PlayerId, u64>,
    /// The answer: its claimed hash and the snapshot.
    answer: Option<(u64, Snapshot)>,
}

/// A relay session over inputs of type `I` (`I::default()` is neutral).
pub struct Relay<I> {
    config: RelayConfig,
    phase: Phase,
    peers: BTreeMap<Slot, Peer>,
    next_seniority: u64,
    next_player_number: u64,
    authority: Option<Slot>,
    /// The current level (0 before the first).
    epoch: u32,
    /// The current level's index in the campaign (0 is the first).
    level_index: u32,
    /// The level's roster, and everyone who has a seat for the next.
    roster: BTreeSet<PlayerId>,
    /// Players waiting to enter the running level at the next tick.
    arrivals: BTreeMap<PlayerId, Arrival>,
    /// The roster the latest frame carried, shared by the frames after it
    /// until the roster changes.
    frame_roster: std::sync::Arc<[PlayerId]>,
    inputs: InputBuffer<I>,
    /// The delays the current level was asked for (its roster's).
    level_delays: BTreeMap<PlayerId, u64>,
    /// Everyone the current level was started with or who entered it
    /// since, removed players included.
    level_players: BTreeSet<PlayerId>,
    log: Option<InputLog<I>>,
    judge: HashJudge,
    /// The snapshot asked for, and once answered, its claimed hash.
    asked_snapshot: Option<AskedSnapshot>,
    outbox: Vec<RelayOutput<I>>,
    events: Vec<RelayEvent>,
    stats: RelayStats,
}

impl<I> std::fmt::Debug for Relay<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("phase", &self.phase)
            .field("epoch", &self.epoch)
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

impl<I: Clone + Default> Relay<I> {
    /// A relay waiting for players.
    pub fn new(config: RelayConfig) -> Self {
        let judge = HashJudge::new(config.judge_window);
        Self {
            config,
            phase: Phase::Lobby { first_at: None },
            peers: BTreeMap::new(),
            next_seniority: 0,
            next_player_number: 1,
            authority: None,
            epoch: 0,
            level_index: 0,
            roster: BTreeSet::new(),
            arrivals: BTreeMap::new(),
            frame_roster: std::sync::Arc::from([]),
            inputs: InputBuffer::default(),
            level_delays: BTreeMap::new(),
            level_players: BTreeSet::new(),
            log: None,
            judge,
            asked_snapshot: None,
            outbox: Vec::new(),
            events: Vec::new(),
            stats: RelayStats::default(),
        }
    }

    /// Where the session is.
    pub fn phase(&self) -> RelayPhase {
        match self.phase {
            Phase::Lobby { .. } => RelayPhase::Lobby,
            Phase::Asking { .. } => RelayPhase::Asking,
            Phase::Starting { .. } => RelayPhase::Starting,
            Phase::Running { .. } => RelayPhase::Running,
            Phase::Ended(_) => RelayPhase::Ended,
        }
    }

    /// Why the session ended, once it has.
    pub fn ended(&self) -> Option<RelayEnd> {
        match self.phase {
            Phase::Ended(r) => Some(r),
            _ => None,
        }
    }

    /// The current level's epoch (0 before the first).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The next tick the relay will send.
    pub fn next_tick(&self) -> u64 {
        self.log.as_ref().map_or(0, InputLog::next_tick)
    }

    /// The authority's player, if there is one.
    pub fn authority(&self) -> Option<&PlayerId> {
        self.authority
            .and_then(|s| self.peers.get(&s))
            .and_then(Peer::player)
    }

    /// The current level's index in the campaign (0 is the first), as
    /// the relay counts levels: the one it asked the authority for.
    pub fn level_index(&self) -> u32 {
        self.level_index
    }

    /// Every player of the current level: its roster at the start and
    /// whoever entered it since, removed or not (a player entering at the
    /// next tick has not played it yet).
    pub fn level_players(&self) -> impl Iterator<Item = &PlayerId> {
        self.level_players.iter()
    }

    /// The level's roster (and in the lobby, the seated players).
    pub fn roster(&self) -> Vec<PlayerId> {
        self.roster.iter().cloned().collect()
    }

    /// Every player with a place: in the roster, or entering it.
    pub fn places(&self) -> impl Iterator<Item = &PlayerId> {
        self.roster.iter().chain(self.arrivals.keys())
    }

    /// Whether `player` has a place: in the roster, or entering it.
    pub fn has_place(&self, player: &PlayerId) -> bool {
        self.roster.contains(player) || self.arrivals.contains_key(player)
    }

    /// Connected players and players in their grace.
    pub fn players_present(&self) -> usize {
        self.peers.values().filter(|p| self.holds_seat(p)).count()
    }

    /// Player seats `origin` holds (as [`Self::players_present`] counts
    /// them).
    fn seats_of(&self, origin: Origin) -> usize {
        self.peers
            .values()
            .filter(|p| p.origin == origin && self.holds_seat(p))
            .count()
    }

    /// Whether `p` holds a player seat: in the roster, or arriving.
    fn holds_seat(&self, p: &Peer) -> bool {
        p.player()
            .is_some_and(|id| self.roster.contains(id) || self.arrivals.contains_key(id))
    }

    /// Counters.
    pub fn stats(&self) -> &RelayStats {
        &self.stats
    }

    /// Frames the log holds now, and its anchor's payload size.
    pub fn log_size(&self) -> (usize, usize) {
        self.log
            .as_ref()
            .map_or((0, 0), |l| (l.len(), l.anchor_bytes()))
    }

    /// Takes what should be sent.
    pub fn drain_outbox(&mut self) -> Vec<RelayOutput<I>> {
        std::mem::take(&mut self.outbox)
    }

    /// Takes what happened since the last call.
    pub fn drain_events(&mut self) -> Vec<RelayEvent> {
        std::mem::take(&mut self.events)
    }

    /// Starts now with whoever is seated (does nothing outside the lobby
    /// or with nobody seated).
    pub fn start_now(&mut self, now: Duration) {
        if matches!(self.phase, Phase::Lobby { .. }) && !self.roster.is_empty() {
            self.begin_level(now);
        }
    }

    /// The delays the current level was asked for (in the lobby, none).
    pub fn level_delays(&self) -> &BTreeMap<PlayerId, u64> {
        &self.level_delays
    }

    /// `player`'s input delay in the running level: an arrival's own, a
    /// roster member's as the level has it (`None`: no place).
    pub fn player_delay(&self, player: &PlayerId) -> Option<u64> {
        if let Some(a) = self.arrivals.get(player) {
            return Some(a.input_delay);
        }
        self.roster
            .contains(player)
            .then(|| self.inputs.delay(player))
    }

    /// Connection `slot`'s link now fits input delay `delay`, ticks (its
    /// driver measured the round trip). It applies from the next level on;
    /// the running level keeps the delays it started with.
    pub fn set_input_delay(&mut self, slot: Slot, delay: u64) {
        if let Some(p) = self.peers.get_mut(&slot) {
            p.input_delay = delay;
        }
    }

    /// Ends the session now.
    pub fn shutdown(&mut self) {
        if self.ended().is_none() {
            self.end(RelayEnd::Shutdown);
        }
    }

    /// When the relay next needs [`Relay::poll`].
    pub fn next_wakeup(&self) -> Option<Duration> {
        let phase = match &self.phase {
            Phase::Lobby { first_at } => {
                let full = self.connected_players().len() >= self.config.start_players;
                // Everyone is in: due now (the first arrival's time is past).
                let start = if full { *first_at } else { None };
                let waited = first_at.zip(self.config.lobby_wait).map(|(f, w)| f + w);
                [start, waited].into_iter().flatten().min()
            }
            Phase::Asking { since } => Some(*since + self.config.answer_timeout),
            // Everyone loaded: due at once.
            Phase::Starting { deadline } if !self.all_loaded() => Some(*deadline),
            Phase::Starting { .. } => Some(Duration::ZERO),
            Phase::Running { clock } => Some(clock.next_due()),
            Phase::Ended(_) => return None,
        };
        // While running, ticks expire graces; between them, a poll does.
        let ticking = matches!(self.phase, Phase::Running { .. });
        let grace = self
            .peers
            .values()
            .filter(|_| !ticking)
            .filter(|p| p.player().is_some())
            .filter_map(|p| p.disconnected_at)
            .map(|d| d + self.config.grace)
            .min();
        [phase, grace].into_iter().flatten().min()
    }

    /// Runs whatever is due at `now`.
    pub fn poll(&mut self, now: Duration) {
        match self.phase {
            Phase::Lobby { first_at } => {
                let connected = self.connected_players().len();
                let waited = first_at
                    .zip(self.config.lobby_wait)
                    .is_some_and(|(f, w)| now >= f + w);
                if connected > 0 && (connected >= self.config.start_players || waited) {
                    self.begin_level(now);
                }
            }
            Phase::Asking { since } => {
                if now >= since + self.config.answer_timeout {
                    self.phase = Phase::Asking { since: now };
                    self.authority_silent();
                }
            }
            Phase::Starting { deadline } => {
                if self.all_loaded() || now >= deadline {
                    self.start_running(now);
                }
            }
            Phase::Running { mut clock } => {
                clock.advance(now);
                self.phase = Phase::Running { clock };
                self.run_due_ticks(now);
            }
            Phase::Ended(_) => {}
        }
        if !matches!(self.phase, Phase::Running { .. }) {
            self.expire_graces_between_ticks(now);
        }
        self.end_if_empty();
    }

    /// The level's players with their connections.
    fn seated(&self) -> impl Iterator<Item = (&PlayerId, &Peer)> {
        self.peers
            .values()
            .filter_map(|p| p.player().map(|id| (id, p)))
            .filter(|(id, _)| self.roster.contains(*id))
    }

    /// The level's players' input delays, as their connections were given.
    fn seated_delays(&self) -> BTreeMap<PlayerId, u64> {
        self.seated()
            .map(|(id, p)| (id.clone(), p.input_delay))
            .collect()
    }

    /// Every connected player sent the level has loaded it.
    fn all_loaded(&self) -> bool {
        self.peers
            .values()
            .filter(|p| p.connected && p.receiving && p.player().is_some())
            .all(|p| p.loaded)
    }

    fn connected_players(&self) -> Vec<Slot> {
        self.peers
            .iter()
            .filter(|(_, p)| p.connected && p.player().is_some())
            .map(|(s, _)| *s)
            .collect()
    }

    /// Every connected peer.
    fn connected(&self) -> Vec<Slot> {
        self.peers
            .iter()
            .filter(|(_, p)| p.connected)
            .map(|(s, _)| *s)
            .collect()
    }

    /// Connections that get frames: connected and sent the level.
    fn receivers(&self) -> Vec<Slot> {
        self.peers
            .iter()
            .filter(|(_, p)| p.connected && p.receiving)
            .map(|(s, _)| *s)
            .collect()
    }

    fn broadcast(&mut self, to: Vec<Slot>, msg: RelayMessage<I>) {
        if !to.is_empty() {
            self.outbox.push(RelayOutput::Broadcast(to, msg));
        }
    }

    fn end(&mut self, reason: RelayEnd) {
        let to = self.connected();
        self.broadcast(to, RelayMessage::SessionEnd(reason));
        self.phase = Phase::Ended(reason);
        self.events.push(RelayEvent::Ended(reason));
    }

    /// After the start, a session with no player connected and none in
    /// its grace is over.
    fn end_if_empty(&mut self) {
        if matches!(self.phase, Phase::Lobby { .. } | Phase::Ended(_)) {
            return;
        }
        if self.players_present() == 0 {
            self.end(RelayEnd::Empty);
        }
    }
}
