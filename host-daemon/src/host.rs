//! The host side of the netcode spec as a state machine: [`HostSession`].
//!
//! The session never does I/O and never reads a clock: the driver
//! ([`crate::driver::run_host`]) feeds it transport events and the current
//! time, calls [`HostSession::poll`], and sends what it queued in its
//! outbox. Phases: lobby (phase A handshakes), setup (phase B: init and map,
//! waiting for acks), running (fixed ticks from an accumulator),
//! transition (waiting for acks with bounded resends), ended.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use engine::level_gen::generate;
use engine::rng::Mulberry32;
use engine::{Difficulty, Engine, LevelSetup, LevelStatus, RaycasterEngine};
use protocol::chunk::split;
use protocol::input::{InputSnapshot, PlayerId, TickInput};
use protocol::map::GameMap;
use protocol::name::sanitize_display_name;
use protocol::peer::{
    EndReason, GuestMessage, HostMessage, LinkHealth, PEER_PROTOCOL_VERSION,
    ReconciliationSnapshotMessage, RefusalReason, ScoreRow, SessionInit, TickInputBundle,
    TransitionPayload, format_hash,
};
use protocol::tick::{
    DISCONNECT_GRACE_MS, FIXED_DT, INPUT_DELAY_TICKS, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ,
    TRANSITION_ACK_TIMEOUT_MS, TRANSITION_RETRY_LIMIT,
};
use tokio::time::Instant;

use crate::guest::HASH_REPORT_INTERVAL_TICKS;
use crate::metrics::SessionMetrics;
use crate::pilot::DelayAwareBot;
use crate::transport::{ConnectionState, TransportEvent};
use crate::wire::to_wire_difficulty;

/// Index of a guest connection, in arrival order.
pub type GuestSlot = usize;

/// How far ahead of the current tick a guest input may be tagged.
const INPUT_WINDOW_TICKS: u64 = INPUT_DELAY_TICKS + 90;
/// Ticks after which [`HostStats::tick_lateness_steady_us`] records (2 s).
pub const STEADY_AFTER_TICKS: u64 = 60;
/// Host hashes kept for comparing guests' reports, ticks.
const HASH_HISTORY_TICKS: u64 = 900;
const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// What the host is configured with.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// Build identifier guests must match.
    pub build_version: String,
    /// Campaign seed: level maps and per-level gameplay seeds derive from it.
    pub seed: u32,
    /// Levels in the campaign (ignored when `campaign` is set).
    pub levels: u32,
    /// Fixed level maps, played in order, instead of generated ones.
    pub campaign: Option<Arc<Vec<GameMap>>>,
    /// Session difficulty.
    pub difficulty: Difficulty,
    /// The host's own player (bot-driven in the daemon), if it plays.
    pub host_player: Option<(PlayerId, String)>,
    /// Extra bot players driven by the host.
    pub bots: u32,
    /// Guests to wait for before setup phase B starts.
    pub expected_guests: usize,
    /// How long the lobby waits for `expected_guests` after the first guest
    /// is in before it starts with whoever is there (`None`: wait).
    pub lobby_wait: Option<Duration>,
    /// How long phase B waits for setup acks before going on without stragglers.
    pub setup_timeout: Duration,
    /// Safety stop: end the session if a level runs longer than this.
    pub max_ticks_per_level: Option<u64>,
    /// Keep every tick's world hash (tests compare whole runs).
    pub record_hashes: bool,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            build_version: crate::BUILD_VERSION.to_owned(),
            seed: 1,
            levels: 1,
            difficulty: Difficulty::Normal,
            host_player: Some((PlayerId::new("host"), "Host".to_owned())),
            campaign: None,
            bots: 0,
            expected_guests: 0,
            lobby_wait: Some(Duration::from_secs(10)),
            setup_timeout: Duration::from_secs(10),
            max_ticks_per_level: None,
            record_hashes: false,
        }
    }
}

/// What the host wants sent.
#[derive(Clone, Debug, PartialEq)]
pub enum HostOutput {
    /// Send a message to a guest.
    Send(GuestSlot, HostMessage),
    /// Send one message to several guests (encoded once).
    Broadcast(Vec<GuestSlot>, HostMessage),
    /// Close a guest's connection (after what was queued before).
    Close(GuestSlot),
}

/// Counters for metrics and the simulate summary.
#[derive(Clone, Debug, Default)]
pub struct HostStats {
    /// Ticks simulated, all levels.
    pub ticks: u64,
    /// Levels whose countdown ran out.
    pub levels_completed: u32,
    /// Held-input fallbacks used (player-ticks).
    pub held_inputs: u64,
    /// Held-input fallbacks per player (a lagging connection shows here).
    pub held_per_player: BTreeMap<PlayerId, u64>,
    /// Reconciliation snapshots taken.
    pub snapshots: u64,
    /// Players removed after the disconnect grace or a missed transition, with the tick.
    pub roster_removed: Vec<(u32, u64, PlayerId)>,
    /// Hash reports that disagreed with the host, per player.
    pub desyncs: BTreeMap<PlayerId, u32>,
    /// Mismatches that a reconciliation snapshot sent between two reports
    /// did not clear, per player (should stay zero).
    pub persistent_desyncs: BTreeMap<PlayerId, u32>,
    /// Hash reports that agreed, per player.
    pub hash_matches: BTreeMap<PlayerId, u32>,
    /// Guest inputs that arrived after their tick was finalized.
    pub late_inputs: u64,
    /// Per guest player: how many ticks ahead of the host's current tick
    /// its inputs arrived (negative: late), as `(count, sum, min)`. With
    /// `INPUT_DELAY_TICKS = 3` a healthy link shows about 3-4.
    pub input_lead: BTreeMap<PlayerId, (u64, i64, i64)>,
    /// Transition resends.
    pub transition_resends: u32,
    /// How late each tick ran after its due time, microseconds (bounded
    /// memory: a histogram, not a list).
    pub tick_lateness_us: LatenessHistogram,
    /// The same, from the session's tick [`STEADY_AFTER_TICKS`] on (after
    /// setup, map generation and transfer, which load the first seconds).
    pub tick_lateness_steady_us: LatenessHistogram,
    /// Joins refused, with the reason.
    pub refusals: Vec<(GuestSlot, RefusalReason)>,
}

/// A bounded-memory histogram of tick lateness in microseconds.
#[derive(Clone, Debug)]
pub struct LatenessHistogram(hdrhistogram::Histogram<u64>);

impl Default for LatenessHistogram {
    fn default() -> Self {
        // 1 µs to 60 s at 3 significant digits: a few tens of KB.
        Self(
            hdrhistogram::Histogram::new_with_bounds(1, 60_000_000, 3)
                .expect("constant histogram bounds are valid"),
        )
    }
}

impl LatenessHistogram {
    /// Records one tick's lateness (saturating at the top bound).
    pub fn record(&mut self, us: u64) {
        self.0.saturating_record(us.max(1));
    }

    /// Ticks recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at percentile `p` (0-100), 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.value_at_percentile(p)
        }
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &LatenessHistogram) {
        let _ = self.0.add(&other.0);
    }
}

#[derive(Debug)]
struct GuestSeat {
    player: Option<PlayerId>,
    name: String,
    admitted: bool,
    setup_acked: bool,
    connected: bool,
    disconnected_at: Option<Instant>,
    removed: bool,
    /// Refused, or left before the start: its connection is being closed.
    closed: bool,
    /// The tick of this guest's last hash report, and whether it mismatched.
    last_report: Option<(u32, u64, bool)>,
}

#[derive(Debug)]
enum Phase {
    Lobby { deadline: Option<Instant> },
    Setup { deadline: Instant },
    Running,
    Transition(Transition),
    Ended(EndReason),
}

#[derive(Debug)]
struct Transition {
    pending: BTreeSet<GuestSlot>,
    attempt: u32,
    deadline: Instant,
    messages: Vec<HostMessage>,
}

/// The host's netcode session.
pub struct HostSession {
    config: HostConfig,
    phase: Phase,
    seats: Vec<GuestSeat>,
    bots: Vec<DelayAwareBot>,
    names: BTreeMap<PlayerId, String>,
    engine: Option<RaycasterEngine>,
    level_index: u32,
    level_epoch: u32,
    player_count: u32,
    buffer: BTreeMap<u64, BTreeMap<PlayerId, InputSnapshot>>,
    last_input: BTreeMap<PlayerId, InputSnapshot>,
    remove_at_start: Vec<PlayerId>,
    clock: Option<(Instant, u128)>,
    hashes: BTreeMap<(u32, u64), u64>,
    run_scores: BTreeMap<PlayerId, (u32, u32)>,
    outbox: Vec<HostOutput>,
    stats: HostStats,
    hash_log: Vec<(u32, u64, u64)>,
    guests_admitted_ever: usize,
    metrics: Option<SessionMetrics>,
}

impl std::fmt::Debug for HostSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSession")
            .field("phase", &self.phase)
            .field("level_index", &self.level_index)
            .field("level_epoch", &self.level_epoch)
            .finish_non_exhaustive()
    }
}

fn seed_for_level(campaign: u32, level: u32) -> u32 {
    let mut r = Mulberry32::new(campaign ^ level.wrapping_mul(0x2545_F491) ^ 0x5EED_0001);
    r.next_u32()
}

impl HostSession {
    /// A host waiting for guests.
    pub fn new(config: HostConfig) -> Self {
        let mut bots: Vec<DelayAwareBot> = (1..=config.bots)
            .map(|i| DelayAwareBot::new(PlayerId::new(format!("bot-{i}"))))
            .collect();
        if let Some((id, _)) = &config.host_player {
            bots.push(DelayAwareBot::new(id.clone()));
        }
        Self {
            config,
            phase: Phase::Lobby { deadline: None },
            seats: Vec::new(),
            bots,
            names: BTreeMap::new(),
            engine: None,
            level_index: 0,
            level_epoch: 0,
            player_count: 0,
            buffer: BTreeMap::new(),
            last_input: BTreeMap::new(),
            remove_at_start: Vec::new(),
            clock: None,
            hashes: BTreeMap::new(),
            run_scores: BTreeMap::new(),
            outbox: Vec::new(),
            stats: HostStats::default(),
            hash_log: Vec::new(),
            guests_admitted_ever: 0,
            metrics: None,
        }
    }

    /// Reports ticks, lateness, held inputs, desyncs and guests to `metrics`.
    pub fn with_metrics(mut self, metrics: SessionMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The metrics handle given by [`HostSession::with_metrics`].
    pub fn metrics(&self) -> Option<&SessionMetrics> {
        self.metrics.as_ref()
    }

    /// Levels in the campaign.
    pub fn level_count(&self) -> u32 {
        match &self.config.campaign {
            Some(maps) => u32::try_from(maps.len()).unwrap_or(u32::MAX),
            None => self.config.levels,
        }
    }

    fn level_map(&self, level: u32) -> GameMap {
        // `level_count` keeps `level` inside the campaign.
        match self
            .config
            .campaign
            .as_ref()
            .and_then(|m| m.get(level as usize))
        {
            Some(map) => map.clone(),
            None => generate(self.config.seed, level, self.player_count),
        }
    }

    /// Whether the session has left its lobby phase (setup or later).
    pub fn started(&self) -> bool {
        !matches!(self.phase, Phase::Lobby { .. })
    }

    /// Guests admitted and still connected.
    pub fn guests_present(&self) -> usize {
        self.seats
            .iter()
            .filter(|s| s.admitted && s.connected && !s.removed)
            .count()
    }

    /// Seats taken: guests admitted and connected, plus connections still
    /// in their version handshake.
    pub fn seats_taken(&self) -> usize {
        self.seats
            .iter()
            .filter(|s| s.connected && !s.removed && !s.closed)
            .count()
    }

    /// Guest connections handed to the session so far.
    pub fn connections(&self) -> usize {
        self.seats.len()
    }

    /// Counters.
    pub fn stats(&self) -> &HostStats {
        &self.stats
    }

    /// The current level's engine, once setup has built it.
    pub fn engine(&self) -> Option<&RaycasterEngine> {
        self.engine.as_ref()
    }

    /// The current level epoch (1 for the first level).
    pub fn level_epoch(&self) -> u32 {
        self.level_epoch
    }

    /// Every tick's `(epoch, tick, hash)` if `record_hashes` is set.
    pub fn hash_log(&self) -> &[(u32, u64, u64)] {
        &self.hash_log
    }

    /// The player ids in the current level's roster.
    pub fn roster(&self) -> Vec<PlayerId> {
        self.engine.as_ref().map(|e| e.roster()).unwrap_or_default()
    }

    /// Every admitted player's sanitized display name.
    pub fn names(&self) -> &BTreeMap<PlayerId, String> {
        &self.names
    }

    /// Why the session ended, once it has.
    pub fn ended(&self) -> Option<EndReason> {
        match self.phase {
            Phase::Ended(r) => Some(r),
            _ => None,
        }
    }

    /// The end-of-run table so far (levels finished plus the current one).
    pub fn scores(&self) -> Vec<ScoreRow> {
        let mut totals = self.run_scores.clone();
        if let Some(e) = &self.engine {
            for (id, s) in e.scores() {
                let t = totals.entry(id).or_default();
                t.0 += s.kill_score;
                t.1 += s.kills;
            }
        }
        let removed: BTreeSet<&PlayerId> = self
            .stats
            .roster_removed
            .iter()
            .map(|(_, _, p)| p)
            .collect();
        totals
            .into_iter()
            .map(|(id, (kill_score, kills))| ScoreRow {
                name: self.names.get(&id).cloned().unwrap_or_default(),
                disconnected: removed.contains(&id),
                link: LinkHealth {
                    desyncs: self.stats.desyncs.get(&id).copied().unwrap_or(0),
                    persistent_desyncs: self
                        .stats
                        .persistent_desyncs
                        .get(&id)
                        .copied()
                        .unwrap_or(0),
                    held_inputs: self.stats.held_per_player.get(&id).copied().unwrap_or(0),
                },
                player_id: id,
                kill_score,
                kills,
            })
            .collect()
    }

    /// Takes what should be sent.
    pub fn drain_outbox(&mut self) -> Vec<HostOutput> {
        std::mem::take(&mut self.outbox)
    }

    fn send(&mut self, slot: GuestSlot, msg: HostMessage) {
        self.outbox.push(HostOutput::Send(slot, msg));
    }

    /// A new connection: phase A starts with the host's hello, whatever the
    /// phase (a late one is refused when its reply arrives).
    pub fn add_guest(&mut self) -> GuestSlot {
        let slot = self.seats.len();
        self.seats.push(GuestSeat {
            player: None,
            name: String::new(),
            admitted: false,
            setup_acked: false,
            connected: true,
            disconnected_at: None,
            removed: false,
            closed: false,
            last_report: None,
        });
        self.update_guest_gauge();
        self.send(
            slot,
            HostMessage::HostHello {
                build_version: self.config.build_version.clone(),
                protocol_version: PEER_PROTOCOL_VERSION,
            },
        );
        slot
    }

    /// Feeds one transport event from a guest.
    pub fn on_event(&mut self, slot: GuestSlot, event: TransportEvent, now: Instant) {
        if slot >= self.seats.len() {
            return;
        }
        match event {
            TransportEvent::State(state) => self.on_state(slot, state, now),
            TransportEvent::Message(_, text) => match GuestMessage::from_json(&text) {
                Ok(msg) => self.on_message(slot, msg, now),
                Err(e) => tracing::warn!(slot, error = %e, "unparsable guest message"),
            },
        }
    }

    fn on_state(&mut self, slot: GuestSlot, state: ConnectionState, now: Instant) {
        let seat = &mut self.seats[slot];
        match state {
            ConnectionState::Connected => {
                seat.connected = true;
                seat.disconnected_at = None;
            }
            ConnectionState::Disconnected | ConnectionState::Failed | ConnectionState::Closed => {
                if seat.connected {
                    tracing::info!(slot, ?state, "guest transport lost");
                }
                seat.connected = false;
                if seat.disconnected_at.is_none() {
                    seat.disconnected_at = Some(now);
                }
                // Before the start nothing was shared yet: the seat is free
                // again, and the connection is closed.
                let in_lobby = matches!(self.phase, Phase::Lobby { .. });
                if in_lobby && !seat.closed {
                    seat.admitted = false;
                    seat.player = None;
                    seat.closed = true;
                    self.outbox.push(HostOutput::Close(slot));
                    if self.seats.iter().all(|s| !s.admitted) {
                        self.phase = Phase::Lobby { deadline: None };
                    }
                }
            }
        }
        self.update_guest_gauge();
    }

    fn update_guest_gauge(&self) {
        if let Some(m) = &self.metrics {
            m.set_guests(self.guests_present());
        }
    }

    fn refuse(&mut self, slot: GuestSlot, reason: RefusalReason, detail: String) {
        self.stats.refusals.push((slot, reason));
        self.seats[slot].closed = true;
        self.send(slot, HostMessage::JoinRefused { reason, detail });
        self.outbox.push(HostOutput::Close(slot));
    }

    fn on_message(&mut self, slot: GuestSlot, msg: GuestMessage, now: Instant) {
        match msg {
            GuestMessage::GuestHello {
                build_version,
                protocol_version,
                display_name,
            } => self.on_hello(slot, build_version, protocol_version, &display_name, now),
            GuestMessage::SetupAck => {
                if matches!(self.phase, Phase::Setup { .. }) && self.seats[slot].admitted {
                    self.seats[slot].setup_acked = true;
                }
            }
            GuestMessage::TickInput(input) => self.on_input(slot, input),
            GuestMessage::LevelTransitionAck { level_epoch } => {
                if let Phase::Transition(t) = &mut self.phase
                    && level_epoch == self.level_epoch
                {
                    t.pending.remove(&slot);
                }
            }
            GuestMessage::HashReport {
                tick,
                level_epoch,
                hash,
            } => self.on_hash_report(slot, tick, level_epoch, &hash),
        }
    }

    fn on_hello(
        &mut self,
        slot: GuestSlot,
        build: String,
        protocol_version: u32,
        name: &str,
        now: Instant,
    ) {
        if self.seats[slot].admitted {
            return;
        }
        if !matches!(self.phase, Phase::Lobby { .. }) {
            self.refuse(
                slot,
                RefusalReason::SessionStarted,
                "the session has started; the roster is frozen".into(),
            );
            return;
        }
        if build != self.config.build_version || protocol_version != PEER_PROTOCOL_VERSION {
            let detail = format!(
                "host runs build {} protocol {}, guest runs build {} protocol {}",
                self.config.build_version, PEER_PROTOCOL_VERSION, build, protocol_version
            );
            self.refuse(slot, RefusalReason::VersionMismatch, detail);
            return;
        }
        self.guests_admitted_ever += 1;
        let number = self.guests_admitted_ever;
        let seat = &mut self.seats[slot];
        seat.admitted = true;
        seat.player = Some(PlayerId::new(format!("guest-{number}")));
        seat.name = sanitize_display_name(name);
        if let Phase::Lobby { deadline } = &mut self.phase
            && deadline.is_none()
        {
            *deadline = self.config.lobby_wait.map(|w| now + w);
        }
        self.update_guest_gauge();
    }

    fn on_input(&mut self, slot: GuestSlot, input: TickInput) {
        let seat = &self.seats[slot];
        let Some(player) = seat.player.clone() else {
            return;
        };
        if seat.removed || input.player_id != player {
            return;
        }
        let Some(engine) = &self.engine else { return };
        // Setup counts too: a guest samples its first input as it acks.
        if !matches!(
            self.phase,
            Phase::Setup { .. } | Phase::Running | Phase::Transition(_)
        ) {
            return;
        }
        let now_tick = engine.tick();
        let lead = i64::try_from(input.tick).unwrap_or(i64::MAX)
            - i64::try_from(now_tick).unwrap_or(i64::MAX);
        let entry = self
            .stats
            .input_lead
            .entry(player.clone())
            .or_insert((0, 0, i64::MAX));
        entry.0 += 1;
        entry.1 = entry.1.saturating_add(lead);
        entry.2 = entry.2.min(lead);
        if input.tick < now_tick {
            // Too late for its tick, but still this player's last-received
            // input: the one held for them from now on (spec: hold the
            // last-received snapshot). Without this, a link whose round trip
            // exceeds the input delay would hold a stale input forever.
            self.stats.late_inputs += 1;
            self.last_input.insert(player, input.input.sanitized());
            return;
        }
        if input.tick > now_tick + INPUT_WINDOW_TICKS {
            return;
        }
        self.buffer
            .entry(input.tick)
            .or_default()
            .insert(player, input.input.sanitized());
    }

    fn on_hash_report(&mut self, slot: GuestSlot, tick: u64, epoch: u32, hash: &str) {
        let Some(player) = self.seats[slot].player.clone() else {
            return;
        };
        let Some(ours) = self.hashes.get(&(epoch, tick)) else {
            return;
        };
        let matched = format_hash(*ours) == hash;
        let previous = self.seats[slot]
            .last_report
            .replace((epoch, tick, !matched));
        if matched {
            *self.stats.hash_matches.entry(player).or_default() += 1;
            return;
        }
        tracing::warn!(%player, tick, epoch, "desync: guest hash differs from host");
        *self.stats.desyncs.entry(player.clone()).or_default() += 1;
        if let Some(m) = &self.metrics {
            m.desync();
        }
        // Persistent: the previous report mismatched too, and a snapshot
        // taken strictly between the two reports should have cleared it.
        if let Some((e, t, true)) = previous
            && e == epoch
            && t < tick
            && snapshot_between(t, tick)
        {
            tracing::warn!(%player, tick, epoch, "desync persisted across a snapshot");
            *self.stats.persistent_desyncs.entry(player).or_default() += 1;
        }
    }

    /// Ends the session now (daemon shutdown).
    pub fn shutdown(&mut self) {
        if self.ended().is_none() {
            self.end(EndReason::HostShutdown);
        }
    }

    /// When the session next needs [`HostSession::poll`].
    pub fn next_wakeup(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Lobby { deadline } => *deadline,
            Phase::Setup { deadline } => Some(*deadline),
            Phase::Transition(t) => Some(t.deadline),
            Phase::Ended(_) => None,
            Phase::Running => self.clock.map(|(last, acc)| {
                let missing = (NANOS_PER_SECOND - acc).div_ceil(u128::from(TICK_RATE_HZ));
                last + Duration::from_nanos(u64::try_from(missing).unwrap_or(u64::MAX))
            }),
        }
    }

    /// Runs whatever is due at `now`: phase deadlines and every due tick.
    pub fn poll(&mut self, now: Instant) {
        match &self.phase {
            Phase::Lobby { deadline } => {
                let admitted = self.seats.iter().filter(|s| s.admitted).count();
                let due = deadline.is_some_and(|d| now >= d);
                if admitted >= self.config.expected_guests || (due && admitted > 0) {
                    self.begin_setup(now);
                }
            }
            Phase::Setup { deadline } => {
                let all = self
                    .seats
                    .iter()
                    .filter(|s| s.admitted && s.connected)
                    .all(|s| s.setup_acked);
                if all || now >= *deadline {
                    self.start_running(now);
                }
            }
            Phase::Transition(t) => {
                let pending_connected = t.pending.iter().any(|s| self.seats[*s].connected);
                if !pending_connected || now >= t.deadline {
                    self.transition_deadline(now);
                }
            }
            Phase::Running => self.run_due_ticks(now),
            Phase::Ended(_) => {}
        }
    }

    fn local_players(&self) -> Vec<(PlayerId, String)> {
        let host = self.config.host_player.as_ref().map(|h| &h.0);
        self.bots
            .iter()
            .map(|b| b.player_id().clone())
            .filter(|id| Some(id) != host)
            .map(|id| (id, String::new()))
            .chain(
                self.config
                    .host_player
                    .iter()
                    .map(|(id, name)| (id.clone(), sanitize_display_name(name))),
            )
            .collect()
    }

    fn begin_setup(&mut self, now: Instant) {
        let mut names: BTreeMap<PlayerId, String> = self.local_players().into_iter().collect();
        for seat in self.seats.iter().filter(|s| s.admitted) {
            if let Some(p) = &seat.player {
                names.insert(p.clone(), seat.name.clone());
            }
        }
        let roster: Vec<PlayerId> = names.keys().cloned().collect();
        self.names = names;
        self.player_count = u32::try_from(roster.len()).unwrap_or(u32::MAX);
        if roster.is_empty() {
            self.end(EndReason::HostShutdown);
            return;
        }
        let seed = seed_for_level(self.config.seed, 0);
        let map = self.level_map(0);
        let setup = LevelSetup {
            map: map.clone(),
            roster: roster.clone(),
            seed,
            difficulty: self.config.difficulty,
            player_count: self.player_count,
            carryovers: BTreeMap::new(),
        };
        match RaycasterEngine::new_level(setup) {
            Ok(e) => self.engine = Some(e),
            Err(e) => {
                tracing::error!(error = %e, "could not build level 1");
                self.end(EndReason::HostShutdown);
                return;
            }
        }
        self.level_epoch = 1;
        let payload = match serde_json::to_string(&map) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "could not serialize level 1");
                self.end(EndReason::HostShutdown);
                return;
            }
        };
        let (chunks, end) = split(&payload);
        for slot in 0..self.seats.len() {
            let Some(player) = self.seats[slot].player.clone() else {
                continue;
            };
            let init = SessionInit {
                roster: roster.clone(),
                your_player_id: player,
                tick_rate_hz: TICK_RATE_HZ,
                fixed_dt: FIXED_DT,
                input_delay_ticks: INPUT_DELAY_TICKS,
                reconcile_interval_ticks: RECONCILE_INTERVAL_TICKS,
                gameplay_seed: seed,
                difficulty: to_wire_difficulty(self.config.difficulty),
                player_count: self.player_count,
                player_names: self.names.clone(),
            };
            self.send(slot, HostMessage::SessionInit(init));
            for c in &chunks {
                self.send(slot, HostMessage::MapChunk(c.clone()));
            }
            self.send(slot, HostMessage::MapEnd(end.clone()));
        }
        self.phase = Phase::Setup {
            deadline: now + self.config.setup_timeout,
        };
    }

    fn start_running(&mut self, now: Instant) {
        // An admitted guest that never acked (setup failed, or it left) is
        // in the roster already sent: it is treated as disconnected, so it
        // gets neutral input and a synchronized removal after the grace.
        for seat in self.seats.iter_mut().filter(|s| s.admitted) {
            if !seat.setup_acked && seat.disconnected_at.is_none() {
                seat.disconnected_at = Some(now);
            }
        }
        self.phase = Phase::Running;
        self.clock = Some((now, 0));
    }

    fn run_due_ticks(&mut self, now: Instant) {
        let Some((last, mut acc)) = self.clock else {
            return;
        };
        acc += (now - last).as_nanos() * u128::from(TICK_RATE_HZ);
        self.clock = Some((now, acc));
        while acc >= NANOS_PER_SECOND {
            acc -= NANOS_PER_SECOND;
            self.clock = Some((now, acc));
            let late_us = u64::try_from(acc / u128::from(TICK_RATE_HZ) / 1000).unwrap_or(u64::MAX);
            self.stats.tick_lateness_us.record(late_us);
            if self.stats.ticks >= STEADY_AFTER_TICKS {
                self.stats.tick_lateness_steady_us.record(late_us);
            }
            if let Some(m) = &self.metrics {
                m.tick(late_us);
            }
            self.run_tick(now);
            if !matches!(self.phase, Phase::Running) {
                return;
            }
        }
    }

    fn sample_local_inputs(&mut self, tick: u64) {
        let Some(engine) = &self.engine else { return };
        let mut sampled = Vec::new();
        for bot in &mut self.bots {
            sampled.push((bot.player_id().clone(), bot.decide(engine)));
        }
        let slot = self.buffer.entry(tick + INPUT_DELAY_TICKS).or_default();
        for (id, input) in sampled {
            slot.insert(id, input.sanitized());
        }
    }

    fn grace_expired(&self, now: Instant) -> Vec<PlayerId> {
        let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
        self.seats
            .iter()
            .filter(|s| s.admitted && !s.removed)
            .filter(|s| s.disconnected_at.is_some_and(|d| now >= d + grace))
            .filter_map(|s| s.player.clone())
            .collect()
    }

    fn run_tick(&mut self, now: Instant) {
        let Some(tick) = self.engine.as_ref().map(|e| e.tick()) else {
            return;
        };
        self.sample_local_inputs(tick);
        let mut remove: Vec<PlayerId> = std::mem::take(&mut self.remove_at_start);
        for p in self.grace_expired(now) {
            if !remove.contains(&p) {
                remove.push(p);
            }
        }
        let roster = self.roster();
        remove.retain(|p| roster.contains(p));
        remove.sort();
        for seat in self.seats.iter_mut() {
            if seat.player.as_ref().is_some_and(|p| remove.contains(p)) {
                seat.removed = true;
            }
        }
        let in_grace: BTreeSet<PlayerId> = self
            .seats
            .iter()
            .filter(|s| s.disconnected_at.is_some() && !s.removed)
            .filter_map(|s| s.player.clone())
            .collect();
        let arrived = self.buffer.remove(&tick).unwrap_or_default();
        let mut inputs = BTreeMap::new();
        let mut held = Vec::new();
        for id in roster.iter().filter(|p| !remove.contains(p)) {
            let input = if in_grace.contains(id) {
                InputSnapshot::NEUTRAL
            } else if let Some(i) = arrived.get(id) {
                self.last_input.insert(id.clone(), i.clone());
                i.clone()
            } else if tick < INPUT_DELAY_TICKS {
                InputSnapshot::NEUTRAL
            } else {
                held.push(id.clone());
                self.last_input.get(id).cloned().unwrap_or_default()
            };
            inputs.insert(id.clone(), input);
        }
        self.stats.held_inputs += held.len() as u64;
        if let Some(m) = &self.metrics {
            m.held_inputs(held.len() as u64);
        }
        for p in &held {
            *self.stats.held_per_player.entry(p.clone()).or_default() += 1;
        }
        for p in &remove {
            tracing::info!(level_epoch = self.level_epoch, tick, player = %p, "player removed from the roster");
            self.stats
                .roster_removed
                .push((self.level_epoch, tick, p.clone()));
        }
        let bundle = TickInputBundle {
            tick,
            dt: FIXED_DT,
            level_epoch: self.level_epoch,
            inputs,
            held_input_fallback: held,
            roster_remove: (!remove.is_empty()).then(|| remove.clone()),
        };
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        engine.advance(&bundle.inputs, &remove);
        let after = engine.tick();
        // Hashing the world is not free: only on report ticks (and every
        // tick when a test records them).
        let report_tick = after % HASH_REPORT_INTERVAL_TICKS == 0;
        let hash = (report_tick || self.config.record_hashes).then(|| engine.world_hash());
        let status = engine.status();
        let snapshot = (after % RECONCILE_INTERVAL_TICKS == 0).then(|| engine.snapshot());
        self.broadcast(HostMessage::TickInputBundle(bundle));
        self.stats.ticks += 1;
        if let Some(hash) = hash {
            if self.config.record_hashes {
                self.hash_log.push((self.level_epoch, after, hash));
            }
            if report_tick {
                self.hashes.insert((self.level_epoch, after), hash);
                let horizon = after.saturating_sub(HASH_HISTORY_TICKS);
                let epoch = self.level_epoch;
                self.hashes.retain(|(e, t), _| *e == epoch && *t >= horizon);
            }
        }
        if let Some(snapshot) = snapshot {
            self.stats.snapshots += 1;
            self.broadcast(HostMessage::ReconciliationSnapshot(
                ReconciliationSnapshotMessage {
                    level_epoch: self.level_epoch,
                    snapshot,
                },
            ));
        }
        match status {
            LevelStatus::Complete => self.level_complete(now),
            LevelStatus::TeamEliminated => self.end(EndReason::TeamEliminated),
            LevelStatus::Running | LevelStatus::Countdown { .. } => {
                if self.config.max_ticks_per_level.is_some_and(|m| after >= m) {
                    self.end(EndReason::HostShutdown);
                }
            }
        }
    }

    /// Guests that are in the session and reachable.
    fn live_slots(&self) -> Vec<GuestSlot> {
        (0..self.seats.len())
            .filter(|s| {
                let seat = &self.seats[*s];
                seat.admitted && !seat.removed && seat.connected
            })
            .collect()
    }

    fn broadcast(&mut self, msg: HostMessage) {
        let slots = self.live_slots();
        if !slots.is_empty() {
            self.outbox.push(HostOutput::Broadcast(slots, msg));
        }
    }

    fn fold_level_scores(&mut self) {
        if let Some(e) = &self.engine {
            for (id, s) in e.scores() {
                let t = self.run_scores.entry(id).or_default();
                t.0 += s.kill_score;
                t.1 += s.kills;
            }
        }
    }

    fn level_complete(&mut self, now: Instant) {
        self.stats.levels_completed += 1;
        if self.level_index + 1 >= self.level_count() {
            self.end(EndReason::Completed);
            return;
        }
        let Some(old) = self.engine.as_ref() else {
            return;
        };
        let roster = old.roster();
        let carryovers = old.carryovers();
        self.fold_level_scores();
        self.level_index += 1;
        let payload = TransitionPayload {
            level_index: self.level_index,
            gameplay_seed: seed_for_level(self.config.seed, self.level_index),
            player_count: u32::try_from(roster.len()).unwrap_or(u32::MAX),
            roster: roster.clone(),
            carryovers: carryovers.clone(),
            map: self.level_map(self.level_index),
        };
        let setup = LevelSetup {
            map: payload.map.clone(),
            roster,
            seed: payload.gameplay_seed,
            difficulty: self.config.difficulty,
            player_count: payload.player_count,
            carryovers,
        };
        let text = serde_json::to_string(&payload);
        let (engine, text) = match (RaycasterEngine::new_level(setup), text) {
            (Ok(e), Ok(t)) => (e, t),
            _ => {
                tracing::error!("could not build the next level");
                self.end(EndReason::HostShutdown);
                return;
            }
        };
        // The engine holds nothing else we need; the run table kept the scores.
        self.engine = Some(engine);
        self.level_epoch += 1;
        self.bots.iter_mut().for_each(DelayAwareBot::reset);
        self.buffer.clear();
        self.last_input.clear();
        self.hashes.clear();
        let epoch = self.level_epoch;
        let (chunks, end) = split(&text);
        let mut messages = vec![HostMessage::LevelTransitionInit {
            level_epoch: epoch,
            level_index: self.level_index,
        }];
        messages.extend(
            chunks
                .into_iter()
                .map(|chunk| HostMessage::LevelTransitionChunk {
                    level_epoch: epoch,
                    chunk,
                }),
        );
        messages.push(HostMessage::LevelTransitionEnd {
            level_epoch: epoch,
            end,
        });
        let pending: BTreeSet<GuestSlot> = self.live_slots().into_iter().collect();
        for slot in &pending {
            for m in &messages {
                self.send(*slot, m.clone());
            }
        }
        self.phase = Phase::Transition(Transition {
            pending,
            attempt: 0,
            deadline: now + Duration::from_millis(TRANSITION_ACK_TIMEOUT_MS),
            messages,
        });
    }

    fn transition_deadline(&mut self, now: Instant) {
        let Phase::Transition(t) = &mut self.phase else {
            return;
        };
        let pending: Vec<GuestSlot> = t
            .pending
            .iter()
            .copied()
            .filter(|s| self.seats[*s].connected)
            .collect();
        if !pending.is_empty() && t.attempt < TRANSITION_RETRY_LIMIT {
            t.attempt += 1;
            t.deadline = now + Duration::from_millis(TRANSITION_ACK_TIMEOUT_MS);
            let messages = t.messages.clone();
            self.stats.transition_resends += 1;
            for slot in pending {
                for m in &messages {
                    self.send(slot, m.clone());
                }
            }
            return;
        }
        // Proceed without whoever never acked: they leave at tick 0 of the
        // new level, a synchronized removal like any other.
        let never_acked: Vec<GuestSlot> = t.pending.iter().copied().collect();
        for slot in never_acked {
            if let Some(p) = self.seats[slot].player.clone() {
                tracing::warn!(player = %p, "guest never acked the transition; dropping it");
                self.remove_at_start.push(p);
            }
        }
        self.phase = Phase::Running;
        self.clock = Some((now, 0));
    }

    fn end(&mut self, reason: EndReason) {
        let scores = self.scores();
        let final_tick = self.engine.as_ref().map(|e| e.tick()).unwrap_or(0);
        let level_epoch = self.level_epoch;
        for slot in 0..self.seats.len() {
            let seat = &self.seats[slot];
            if seat.admitted && !seat.removed && seat.connected {
                self.send(
                    slot,
                    HostMessage::SessionEnd {
                        reason,
                        scores: scores.clone(),
                        level_epoch,
                        final_tick,
                    },
                );
            }
            self.outbox.push(HostOutput::Close(slot));
        }
        self.phase = Phase::Ended(reason);
        if let Some(m) = &self.metrics {
            m.set_guests(0);
        }
    }
}

/// Whether a reconciliation snapshot tick lies strictly between two ticks.
fn snapshot_between(earlier: u64, later: u64) -> bool {
    let next_snapshot = (earlier / RECONCILE_INTERVAL_TICKS + 1) * RECONCILE_INTERVAL_TICKS;
    next_snapshot < later
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_lies_between_reports_only_when_strictly_inside() {
        let n = RECONCILE_INTERVAL_TICKS;
        assert!(snapshot_between(n - 1, n + 1));
        assert!(snapshot_between(0, 2 * n));
        assert!(
            !snapshot_between(n, n + 1),
            "the snapshot at the first report"
        );
        assert!(
            !snapshot_between(n - 2, n),
            "the snapshot at the second report"
        );
        assert!(!snapshot_between(n + 1, 2 * n - 1));
    }

    #[test]
    fn lateness_histogram_is_bounded_and_reports_percentiles() {
        let mut h = LatenessHistogram::default();
        assert_eq!(h.percentile(99.0), 0);
        for us in 1..=1000 {
            h.record(us);
        }
        h.record(u64::MAX);
        assert_eq!(h.len(), 1001);
        let p50 = h.percentile(50.0);
        assert!((495..=505).contains(&p50), "{p50}");
        assert!(
            h.percentile(100.0) >= 59_000_000,
            "saturates at the top bound"
        );
    }
}
