//! The guest side of the netcode spec as a state machine: [`GuestSession`].
//!
//! Like the host, it does no I/O and reads no clock; [`crate::driver::run_guest`]
//! feeds it events and the time. The guest is purely reply-driven during
//! setup and event-driven afterwards: it advances only when a
//! `TickInputBundle` arrives, applying a backlog oldest first and never
//! skipping one.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use engine::{Engine, LevelSetup, LevelStatus, RaycasterEngine};
use protocol::chunk::{ChunkError, Reassembler};
use protocol::input::{InputSnapshot, PlayerId, TickInput};
use protocol::map::GameMap;
use protocol::peer::{
    EndReason, GuestMessage, HostMessage, PEER_PROTOCOL_VERSION, ReconciliationSnapshotMessage,
    RefusalReason, ScoreRow, SessionInit, TickInputBundle, TransitionPayload, format_hash,
};
use protocol::tick::{
    CORRECTION_SMOOTH_MS, DISCONNECT_GRACE_MS, FIXED_DT, INPUT_DELAY_TICKS,
    RECONCILE_INTERVAL_TICKS, SNAP_THRESHOLD_TILES, TICK_RATE_HZ,
};
use tokio::time::Instant;

use crate::pilot::DelayAwareBot;
use crate::transport::{ConnectionState, TransportEvent};
use crate::wire::to_engine_difficulty;

/// Ticks between two world-hash reports to the host.
pub const HASH_REPORT_INTERVAL_TICKS: u64 = 10;
/// Bundles applied per poll before yielding to the driver (the bounded
/// fast-forward loop).
const MAX_CATCH_UP_PER_POLL: usize = 256;
/// Snapshots held while the bundles before them are still on their way.
const MAX_PENDING_SNAPSHOTS: usize = 64;

/// How a guest's session ended.
#[derive(Clone, Debug, PartialEq)]
pub enum GuestEnd {
    /// The host ended it (or the guest gave up with a spec reason).
    Ended(EndReason),
    /// The host refused the join.
    Refused(RefusalReason, String),
    /// Setup failed on this side (map rejected, constants disagree).
    SetupFailed(String),
}

/// A deliberate fault, for tests of the repair mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestFault {
    /// After applying the bundle that brings the engine to this tick of the
    /// first level, scramble the PRNG and this guest's own player.
    CorruptAtTick(u64),
}

/// What a guest is configured with.
#[derive(Clone, Debug)]
pub struct GuestConfig {
    /// Build identifier sent in the handshake.
    pub build_version: String,
    /// Display name as typed ("" for none).
    pub display_name: String,
    /// Drive this guest's player with the engine's bot (else idle input).
    pub bot: bool,
    /// Keep every applied tick's record (tests).
    pub record_ticks: bool,
    /// A fault to inject.
    pub fault: Option<GuestFault>,
}

impl Default for GuestConfig {
    fn default() -> Self {
        Self {
            build_version: crate::BUILD_VERSION.to_owned(),
            display_name: String::new(),
            bot: true,
            record_ticks: false,
            fault: None,
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
    pub at: Instant,
}

/// Counters.
#[derive(Clone, Debug, Default)]
pub struct GuestStats {
    /// Bundles applied.
    pub bundles_applied: u64,
    /// Bundles discarded for a stale or future level epoch.
    pub stale_bundles: u64,
    /// Snapshots applied.
    pub snapshots_applied: u64,
    /// Snapshots discarded (wrong epoch, too late, rejected).
    pub snapshots_discarded: u64,
    /// Corrections at or above the snap threshold.
    pub hard_snaps: u64,
    /// Snapshots that changed this guest's world hash at their tick: the
    /// guest had drifted from the host (its own desync count).
    pub snapshot_mismatches: u64,
    /// Level transitions applied.
    pub transitions: u32,
    /// Transition payloads that failed reassembly or validation.
    pub transition_failures: u32,
    /// Bundles that referenced a tick other than the next one.
    pub out_of_sequence: u64,
}

#[derive(Debug)]
enum Phase {
    AwaitHello,
    AwaitInit,
    Map(Box<SessionInit>, Reassembler),
    Running,
    Ended(GuestEnd),
}

/// The guest's netcode session.
pub struct GuestSession {
    config: GuestConfig,
    phase: Phase,
    me: Option<PlayerId>,
    names: BTreeMap<PlayerId, String>,
    engine: Option<RaycasterEngine>,
    level_epoch: u32,
    backlog: VecDeque<TickInputBundle>,
    pending_snapshots: BTreeMap<u64, ReconciliationSnapshotMessage>,
    transition: Option<(u32, Reassembler)>,
    host_lost_at: Option<Instant>,
    fell_behind_since: Option<Instant>,
    render_offsets: BTreeMap<PlayerId, RenderOffset>,
    final_scores: Vec<ScoreRow>,
    outbox: Vec<GuestMessage>,
    stats: GuestStats,
    applied: Vec<AppliedTick>,
    snapshot_hashes: Vec<(u32, u64, u64)>,
    ending: Option<(EndReason, u32, u64)>,
    clock_hint: Instant,
    pilot: Option<DelayAwareBot>,
}

impl std::fmt::Debug for GuestSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestSession")
            .field("phase", &self.phase)
            .field("me", &self.me)
            .field("level_epoch", &self.level_epoch)
            .finish_non_exhaustive()
    }
}

impl GuestSession {
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
            pending_snapshots: BTreeMap::new(),
            transition: None,
            host_lost_at: None,
            fell_behind_since: None,
            render_offsets: BTreeMap::new(),
            final_scores: Vec::new(),
            outbox: Vec::new(),
            stats: GuestStats::default(),
            applied: Vec::new(),
            snapshot_hashes: Vec::new(),
            ending: None,
            clock_hint: Instant::now(),
            pilot: None,
        }
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
    pub fn engine(&self) -> Option<&RaycasterEngine> {
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

    /// The render offset for `player` at `now`: the position correction
    /// still to be smoothed away (zero once [`CORRECTION_SMOOTH_MS`] has
    /// passed, and always zero for corrections at or above the snap
    /// threshold).
    pub fn render_offset(&self, player: &PlayerId, now: Instant) -> (f64, f64) {
        let Some(o) = self.render_offsets.get(player) else {
            return (0.0, 0.0);
        };
        let window = Duration::from_millis(CORRECTION_SMOOTH_MS);
        let elapsed = now.saturating_duration_since(o.at);
        if elapsed >= window {
            return (0.0, 0.0);
        }
        let left = 1.0 - elapsed.as_secs_f64() / window.as_secs_f64();
        (o.dx * left, o.dy * left)
    }

    /// The last smoothed correction recorded for `player`, if any.
    pub fn correction(&self, player: &PlayerId) -> Option<RenderOffset> {
        self.render_offsets.get(player).copied()
    }

    /// Takes what should be sent to the host.
    pub fn drain_outbox(&mut self) -> Vec<GuestMessage> {
        std::mem::take(&mut self.outbox)
    }

    fn end(&mut self, end: GuestEnd) {
        if self.ended().is_none() {
            tracing::info!(player = ?self.me, ?end, "guest session ended");
            self.phase = Phase::Ended(end);
        }
    }

    /// When the session next needs [`GuestSession::poll`] without an event.
    pub fn next_wakeup(&self) -> Option<Instant> {
        if self.ended().is_some() {
            return None;
        }
        let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
        let a = self.host_lost_at.map(|t| t + grace);
        let b = self.fell_behind_since.map(|t| t + grace);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether applicable bundles are waiting (the driver polls again at once).
    pub fn has_backlog(&self) -> bool {
        self.ended().is_none() && !self.backlog.is_empty() && !self.waiting_for_snapshot()
    }

    /// Feeds one transport event.
    pub fn on_event(&mut self, event: TransportEvent, now: Instant) {
        if self.ended().is_some() {
            return;
        }
        match event {
            TransportEvent::State(ConnectionState::Connected) => self.host_lost_at = None,
            TransportEvent::State(_) => {
                if self.host_lost_at.is_none() {
                    self.host_lost_at = Some(now);
                }
            }
            TransportEvent::Message(_, text) => match HostMessage::from_json(&text) {
                Ok(msg) => self.on_message(msg, now),
                Err(e) => tracing::warn!(error = %e, "unparsable host message"),
            },
        }
    }

    /// Runs timers and applies what can be applied.
    pub fn poll(&mut self, now: Instant) {
        if self.ended().is_some() {
            return;
        }
        let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
        self.apply_backlog(now);
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

    fn on_message(&mut self, msg: HostMessage, now: Instant) {
        match msg {
            HostMessage::HostHello {
                build_version,
                protocol_version,
            } => {
                if matches!(self.phase, Phase::AwaitHello) {
                    if build_version != self.config.build_version
                        || protocol_version != PEER_PROTOCOL_VERSION
                    {
                        tracing::warn!(%build_version, "host runs another build");
                    }
                    self.outbox.push(GuestMessage::GuestHello {
                        build_version: self.config.build_version.clone(),
                        protocol_version: PEER_PROTOCOL_VERSION,
                        display_name: self.config.display_name.clone(),
                    });
                    self.phase = Phase::AwaitInit;
                }
            }
            HostMessage::JoinRefused { reason, detail } => {
                self.end(GuestEnd::Refused(reason, detail));
            }
            HostMessage::SessionInit(init) => self.on_init(init),
            HostMessage::MapChunk(chunk) => {
                if let Phase::Map(_, r) = &mut self.phase
                    && let Err(e) = r.push(&chunk)
                {
                    self.end(GuestEnd::SetupFailed(format!("map transfer: {e}")));
                }
            }
            HostMessage::MapEnd(end) => {
                let phase = std::mem::replace(&mut self.phase, Phase::AwaitInit);
                if let Phase::Map(init, r) = phase {
                    let map: Result<GameMap, ChunkError> = r.finish_parse(&end);
                    match map {
                        Ok(map) => self.finish_setup(*init, map),
                        Err(e) => self.end(GuestEnd::SetupFailed(format!("map transfer: {e}"))),
                    }
                } else {
                    self.phase = phase;
                }
            }
            HostMessage::TickInputBundle(b) => {
                if !matches!(self.phase, Phase::Running) {
                    return;
                }
                if b.level_epoch != self.level_epoch {
                    self.stats.stale_bundles += 1;
                    if b.level_epoch > self.level_epoch && self.fell_behind_since.is_none() {
                        self.fell_behind_since = Some(now);
                    }
                    return;
                }
                self.backlog.push_back(b);
            }
            HostMessage::ReconciliationSnapshot(s) => {
                if s.level_epoch != self.level_epoch {
                    self.stats.snapshots_discarded += 1;
                    return;
                }
                // Snapshots can outrun the bundles they follow (the other
                // channel): keep them by tick until the engine gets there.
                if self.pending_snapshots.len() >= MAX_PENDING_SNAPSHOTS {
                    self.pending_snapshots.pop_first();
                    self.stats.snapshots_discarded += 1;
                }
                self.pending_snapshots.insert(s.snapshot.tick, s);
            }
            HostMessage::LevelTransitionInit { level_epoch, .. } => {
                if level_epoch > self.level_epoch {
                    self.transition = Some((level_epoch, Reassembler::default()));
                } else if level_epoch == self.level_epoch {
                    // A resend after our ack crossed it: ack again.
                    self.outbox
                        .push(GuestMessage::LevelTransitionAck { level_epoch });
                }
            }
            HostMessage::LevelTransitionChunk { level_epoch, chunk } => {
                if let Some((epoch, r)) = &mut self.transition
                    && *epoch == level_epoch
                    && let Err(e) = r.push(&chunk)
                {
                    self.transition_failed(&format!("{e}"), now);
                }
            }
            HostMessage::LevelTransitionEnd { level_epoch, end } => {
                let Some((epoch, r)) = self.transition.take() else {
                    return;
                };
                if epoch != level_epoch {
                    self.transition = Some((epoch, r));
                    return;
                }
                match r.finish_parse::<TransitionPayload>(&end) {
                    Ok(p) => self.apply_transition(epoch, p, now),
                    Err(e) => self.transition_failed(&format!("{e}"), now),
                }
            }
            HostMessage::SessionEnd {
                reason,
                scores,
                level_epoch,
                final_tick,
            } => {
                self.final_scores = scores;
                self.ending = Some((reason, level_epoch, final_tick));
            }
        }
    }

    fn on_init(&mut self, init: SessionInit) {
        if !matches!(self.phase, Phase::AwaitInit) {
            return;
        }
        if init.tick_rate_hz != TICK_RATE_HZ
            || init.fixed_dt != FIXED_DT
            || init.input_delay_ticks != INPUT_DELAY_TICKS
            || init.reconcile_interval_ticks != RECONCILE_INTERVAL_TICKS
        {
            self.end(GuestEnd::SetupFailed(
                "tick constants differ from this build's".into(),
            ));
            return;
        }
        self.phase = Phase::Map(Box::new(init), Reassembler::default());
    }

    fn finish_setup(&mut self, init: SessionInit, map: GameMap) {
        let setup = LevelSetup {
            map,
            roster: init.roster.clone(),
            seed: init.gameplay_seed,
            difficulty: to_engine_difficulty(init.difficulty),
            player_count: init.player_count,
            carryovers: BTreeMap::new(),
        };
        match RaycasterEngine::new_level(setup) {
            Ok(engine) => {
                self.engine = Some(engine);
                if self.config.bot {
                    self.pilot = Some(DelayAwareBot::new(init.your_player_id.clone()));
                }
                self.me = Some(init.your_player_id);
                self.names = init.player_names;
                self.level_epoch = 1;
                self.phase = Phase::Running;
                self.outbox.push(GuestMessage::SetupAck);
                self.sample_input();
            }
            Err(e) => self.end(GuestEnd::SetupFailed(format!("level rejected: {e}"))),
        }
    }

    fn transition_failed(&mut self, why: &str, now: Instant) {
        tracing::warn!(player = ?self.me, why, "level transition payload rejected; waiting for a resend");
        self.transition = None;
        self.stats.transition_failures += 1;
        if self.fell_behind_since.is_none() {
            self.fell_behind_since = Some(now);
        }
    }

    fn apply_transition(&mut self, epoch: u32, p: TransitionPayload, now: Instant) {
        // Old-level bundles still queued belong to a level we are leaving.
        self.apply_backlog(now);
        let Some(me) = self.me.clone() else { return };
        if !p.roster.contains(&me) {
            self.transition_failed("the new roster does not include this player", now);
            return;
        }
        let difficulty = match &self.engine {
            Some(e) => e.state().difficulty,
            None => return,
        };
        let setup = LevelSetup {
            map: p.map,
            roster: p.roster,
            seed: p.gameplay_seed,
            difficulty,
            player_count: p.player_count,
            carryovers: p.carryovers,
        };
        match RaycasterEngine::new_level(setup) {
            Ok(engine) => {
                self.engine = Some(engine);
                self.level_epoch = epoch;
                self.backlog.clear();
                self.pending_snapshots.clear();
                self.fell_behind_since = None;
                self.render_offsets.clear();
                if let Some(p) = &mut self.pilot {
                    p.reset();
                }
                self.stats.transitions += 1;
                self.outbox
                    .push(GuestMessage::LevelTransitionAck { level_epoch: epoch });
                self.sample_input();
            }
            Err(e) => self.transition_failed(&format!("level rejected: {e}"), now),
        }
    }

    /// At a snapshot tick the guest applies the host's snapshot before it
    /// advances further, so the correction lands on exactly the tick it
    /// reflects.
    fn waiting_for_snapshot(&self) -> bool {
        let Some(engine) = &self.engine else {
            return false;
        };
        let t = engine.tick();
        t > 0
            && t % RECONCILE_INTERVAL_TICKS == 0
            && !matches!(
                engine.status(),
                LevelStatus::Complete | LevelStatus::TeamEliminated
            )
            && self.snapshot_hashes.last().map(|s| (s.0, s.1)) != Some((self.level_epoch, t))
    }

    fn try_apply_snapshot(&mut self, now: Instant) {
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        let t = engine.tick();
        while let Some(entry) = self.pending_snapshots.first_entry() {
            if *entry.key() >= t {
                break;
            }
            entry.remove();
            self.stats.snapshots_discarded += 1;
        }
        let Some(msg) = self.pending_snapshots.remove(&t) else {
            return;
        };
        let before: BTreeMap<PlayerId, (f64, f64)> = engine
            .state()
            .players
            .iter()
            .map(|(id, p)| (id.clone(), (p.pos.x, p.pos.y)))
            .collect();
        let hash_before = engine.world_hash();
        if let Err(e) = engine.apply_snapshot(&msg.snapshot) {
            tracing::warn!(error = %e, "snapshot rejected");
            self.stats.snapshots_discarded += 1;
            return;
        }
        self.stats.snapshots_applied += 1;
        for (id, ps) in &msg.snapshot.players {
            let Some((ox, oy)) = before.get(id) else {
                continue;
            };
            let (dx, dy) = (ox - ps.pos_x, oy - ps.pos_y);
            let dist = (dx * dx + dy * dy).sqrt();
            if dist == 0.0 {
                continue;
            }
            if dist >= SNAP_THRESHOLD_TILES {
                self.stats.hard_snaps += 1;
                self.render_offsets.remove(id);
            } else {
                self.render_offsets
                    .insert(id.clone(), RenderOffset { dx, dy, at: now });
            }
        }
        let hash = engine.world_hash();
        if hash != hash_before {
            self.stats.snapshot_mismatches += 1;
        }
        self.snapshot_hashes.push((self.level_epoch, t, hash));
    }

    fn apply_backlog(&mut self, now: Instant) {
        self.clock_hint = now;
        for _ in 0..MAX_CATCH_UP_PER_POLL {
            if self.waiting_for_snapshot() {
                self.try_apply_snapshot(now);
                if self.waiting_for_snapshot() {
                    return;
                }
            }
            let Some(bundle) = self.backlog.pop_front() else {
                return;
            };
            self.apply_bundle(bundle);
        }
    }

    fn apply_bundle(&mut self, b: TickInputBundle) {
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        if b.tick != engine.tick() {
            self.stats.out_of_sequence += 1;
            tracing::warn!(
                bundle = b.tick,
                engine = engine.tick(),
                "bundle out of sequence"
            );
            return;
        }
        let remove = b.roster_remove.clone().unwrap_or_default();
        let mut inputs = b.inputs;
        for id in engine.roster() {
            if !remove.contains(&id) && !inputs.contains_key(&id) {
                tracing::warn!(player = %id, "bundle lacks a roster member's input");
                inputs.insert(id, InputSnapshot::NEUTRAL);
            }
        }
        engine.advance(&inputs, &remove);
        let after = engine.tick();
        if let Some(GuestFault::CorruptAtTick(t)) = self.config.fault
            && t == after
            && self.level_epoch == 1
        {
            corrupt(engine, self.me.as_ref());
        }
        let report_tick = after % HASH_REPORT_INTERVAL_TICKS == 0;
        let hash = (report_tick || self.config.record_ticks).then(|| engine.world_hash());
        if engine.status() == LevelStatus::Complete && self.fell_behind_since.is_none() {
            // Waiting for the host's transition from now on.
            self.fell_behind_since = Some(self.clock_hint);
        }
        self.stats.bundles_applied += 1;
        if let (true, Some(hash)) = (self.config.record_ticks, hash) {
            self.applied.push(AppliedTick {
                epoch: self.level_epoch,
                tick: b.tick,
                hash,
                held: b.held_input_fallback,
                removed: remove,
                neutral: inputs
                    .iter()
                    .filter(|(_, i)| **i == InputSnapshot::NEUTRAL)
                    .map(|(id, _)| id.clone())
                    .collect(),
            });
        }
        if let (true, Some(hash)) = (report_tick, hash) {
            self.outbox.push(GuestMessage::HashReport {
                tick: after,
                level_epoch: self.level_epoch,
                hash: format_hash(hash),
            });
        }
        self.sample_input();
    }

    fn sample_input(&mut self) {
        let (Some(engine), Some(me)) = (&self.engine, &self.me) else {
            return;
        };
        if !matches!(
            engine.status(),
            LevelStatus::Running | LevelStatus::Countdown { .. }
        ) {
            return;
        }
        let input = match &mut self.pilot {
            Some(p) => p.decide(engine),
            None => InputSnapshot::NEUTRAL,
        };
        self.outbox.push(GuestMessage::TickInput(TickInput {
            tick: engine.tick() + INPUT_DELAY_TICKS,
            player_id: me.clone(),
            input: input.sanitized(),
        }));
    }
}

/// Scrambles the PRNG and this guest's own player (position and health),
/// through the engine's public surface.
fn corrupt(engine: &mut RaycasterEngine, me: Option<&PlayerId>) {
    engine.set_rng_state(engine.rng_state() ^ 0xDEAD_BEEF);
    let mut snap = engine.snapshot();
    if let Some(p) = me.and_then(|id| snap.players.get_mut(id)) {
        p.pos_x += 0.2;
        p.health = (p.health - 17.0).max(1.0);
    }
    snap.grid_delta.clear();
    if let Err(e) = engine.apply_snapshot(&snap) {
        tracing::warn!(error = %e, "fault injection failed");
    }
}
