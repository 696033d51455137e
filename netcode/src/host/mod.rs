//! The host side of the netcode spec as a state machine: [`HostSession`].
//!
//! The session never does I/O and never reads a clock: its driver feeds it
//! peer events and the current time (a [`Duration`] since an origin the
//! driver chooses), calls [`HostSession::poll`], sends what
//! [`HostSession::drain_outbox`] returns and logs what
//! [`HostSession::drain_events`] returns. Phases: lobby (phase A
//! handshakes), setup (phase B: init and map, waiting for acks), running
//! (fixed ticks from an accumulator), transition (waiting for acks with
//! bounded resends), ended.
//!
//! Each job lives in its own module: [`admission`] (handshakes, the
//! hello deadline), [`seat_table`] (seats, kept while they can matter),
//! [`setup`] (roster, init and map transfer),
//! [`ticks`] (pacing and the tick itself), [`lockstep::inputs`] (the input buffer and
//! held-input policy, shared with the relay), [`late_join`] (admitting a guest into a running
//! level with the world's exact state), [`audit`] (hash reports), [`transition`] (level
//! changes), [`end_table`] (scores and the end of the session),
//! [`budget`] (what each guest may send), [`recording`] (replay
//! records), [`spectators`] (who watches), [`waiting_room`] (who is in
//! before the start), `snapshot_deltas` (snapshots as deltas against what
//! each guest acknowledged), `placed_bundles` (tick bundles without their
//! players' ids), `netgraph` (each link's figures, live) and [`report`] (the per-session report for the operator). [`join_slots`]
//! is the hosts' policy for answers being connected, before a session
//! ever sees them (its driver applies it), and [`rounds`] when its driver
//! keeps an offer round open; [`hosting`] puts both in one machine for the
//! lobby side of hosting (offers, answers, the `players` count).

mod admission;
pub mod audit;
pub use lockstep::budget;
mod config;
mod end_table;
pub mod hosting;
pub mod join_slots;
mod late_join;
mod netgraph;
mod placed_bundles;
mod recording;
mod rejoin;
mod report;
pub mod rounds;
mod seat_table;
mod setup;
mod snapshot_deltas;
mod spectators;
mod ticks;
mod transition;
mod waiting_room;

use std::collections::BTreeMap;
use std::time::Duration;

use game_api::GameWire;
use game_api::PlayerId;
use game_api::game::{Input, Settings};
use game_api::{Bot, Game, LevelSetup, PlayerScore};
use protocol::peer::EndReason;
use protocol::peer::{GuestMessage, HostMessage};
use protocol::wire::WireFormat;

pub use config::{DEFAULT_MAX_SPECTATORS, HostConfig, HostEvent, HostOutput};
pub use report::{LeftAt, PlayerKind, PlayerReport, SessionReport, SpectatorReport};

use crate::link::PeerEvent;
use crate::predict;
use crate::stats::{GuestSlot, HostStats};
use audit::HashAudit;
use lockstep::inputs::InputBuffer;
use seat_table::SeatTable;
use transition::Transition;

/// Where a host session is, as its driver and page see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostPhase {
    /// Waiting for guests (phase A handshakes).
    Lobby,
    /// The roster is frozen; init and map sent, waiting for acks (phase B).
    Setup,
    /// Ticking.
    Running,
    /// Between two levels, waiting for acks.
    Transition,
    /// Over.
    Ended,
}

#[derive(Debug)]
enum Phase<W: GameWire> {
    Lobby { deadline: Option<Duration> },
    Setup { deadline: Duration },
    Running,
    Transition(Transition<W>),
    Ended(EndReason),
}

/// The host's netcode session over engine `E`.
pub struct HostSession<E: Game> {
    config: HostConfig<E>,
    /// The players' rejoin tokens, when the host takes rejoins.
    rejoins: Option<lockstep::rejoin::RejoinTokens>,
    phase: Phase<E::Wire>,
    /// Guest connections that can still matter, by slot.
    seats: SeatTable,
    bots: Vec<E::Bot>,
    local_input: Input<E>,
    names: BTreeMap<PlayerId, String>,
    engine: Option<E>,
    level_index: u32,
    level_epoch: u32,
    player_count: u32,
    inputs: InputBuffer<Input<E>>,
    remove_at_start: Vec<PlayerId>,
    /// The tick clock while running.
    clock: Option<lockstep::pacing::TickClock>,
    audit: HashAudit,
    run_scores: BTreeMap<PlayerId, PlayerScore>,
    outbox: Vec<HostOutput<E::Wire>>,
    events: Vec<HostEvent<E::Wire>>,
    stats: HostStats,
    hash_log: Vec<(u32, u64, u64)>,
    guests_admitted_ever: usize,
    /// A level's replay header went out and its end not yet.
    recording: bool,
    /// The current level as it was built: a late joiner builds it too.
    level: Option<LevelSetup<E::Wire>>,
    /// Spectators admitted so far (their ids count up).
    spectators_admitted_ever: usize,
    /// Every spectator ever admitted, by id: its display name.
    spectator_names: BTreeMap<PlayerId, String>,
    /// The spectator list the guests last heard.
    spectators_announced: Vec<String>,
    /// The waiting room the guests last heard (before the start), and
    /// which of them heard it.
    waiting_room_announced: Option<(HostMessage<E::Wire>, Vec<GuestSlot>)>,
    /// Recent snapshots and what each guest acknowledged (delta
    /// snapshots).
    deltas: snapshot_deltas::DeltaBases,
    /// The players of the last whole tick bundle each connection was sent
    /// (placed bundles).
    bundle_ids: placed_bundles::BundleIds,
}

impl<E: Game> std::fmt::Debug for HostSession<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSession")
            .field("phase", &self.phase)
            .field("level_index", &self.level_index)
            .field("level_epoch", &self.level_epoch)
            .finish_non_exhaustive()
    }
}

impl<E: Game> HostSession<E> {
    /// The session's settings, in every level's setup and init.
    fn settings(&self) -> Settings<E> {
        self.config.settings.clone()
    }

    /// A host waiting for guests.
    pub fn new(config: HostConfig<E>) -> Self {
        let mut bots: Vec<E::Bot> = (1..=config.bots)
            .map(|i| E::Bot::new(PlayerId::new(format!("bot-{i}"))))
            .collect();
        if let (Some((id, _)), true) = (&config.host_player, config.host_bot) {
            bots.push(E::Bot::new(id.clone()));
        }
        Self {
            rejoins: config
                .rejoin_secret
                .map(lockstep::rejoin::RejoinTokens::new),
            config,
            phase: Phase::Lobby { deadline: None },
            seats: SeatTable::default(),
            bots,
            local_input: Input::<E>::default(),
            names: BTreeMap::new(),
            engine: None,
            level_index: 0,
            level_epoch: 0,
            player_count: 0,
            inputs: InputBuffer::default(),
            remove_at_start: Vec::new(),
            clock: None,
            audit: HashAudit::default(),
            run_scores: BTreeMap::new(),
            outbox: Vec::new(),
            events: Vec::new(),
            stats: HostStats::default(),
            hash_log: Vec::new(),
            guests_admitted_ever: 0,
            recording: false,
            level: None,
            spectators_admitted_ever: 0,
            spectator_names: BTreeMap::new(),
            deltas: snapshot_deltas::DeltaBases::default(),
            bundle_ids: placed_bundles::BundleIds::default(),
            spectators_announced: Vec::new(),
            waiting_room_announced: None,
        }
    }

    /// Levels in the session.
    pub fn level_count(&self) -> u32 {
        self.config.plan.level_count()
    }

    /// Whether the session has left its lobby phase (setup or later).
    pub fn started(&self) -> bool {
        !matches!(self.phase, Phase::Lobby { .. })
    }

    /// Where the session is.
    pub fn phase(&self) -> HostPhase {
        match self.phase {
            Phase::Lobby { .. } => HostPhase::Lobby,
            Phase::Setup { .. } => HostPhase::Setup,
            Phase::Running => HostPhase::Running,
            Phase::Transition(_) => HostPhase::Transition,
            Phase::Ended(_) => HostPhase::Ended,
        }
    }

    /// Starts the session at `now` with whoever is admitted (a player
    /// host's Start button), without waiting for `expected_guests`. The
    /// roster is frozen from here; later joiners are refused with
    /// `session-started`. Does nothing once the session has started.
    pub fn start_now(&mut self, now: Duration) {
        if matches!(self.phase, Phase::Lobby { .. }) {
            self.begin_setup(now);
        }
    }

    /// Counters.
    pub fn stats(&self) -> &HostStats {
        &self.stats
    }

    /// The current level's engine, once setup has built it.
    pub fn engine(&self) -> Option<&E> {
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

    /// `player`'s input delay in the current level, ticks.
    pub fn input_delay(&self, player: &PlayerId) -> u64 {
        self.inputs.delay(player)
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

    /// The host player's own input from now on, when no bot drives it
    /// (a browser host's keyboard and mouse).
    pub fn set_local_input(&mut self, input: Input<E>) {
        self.local_input = E::Wire::sanitize(&input);
    }

    /// The tick the host player's predicted view shows
    /// ([`HostSession::predicted`]): one past the newest input filed for
    /// the host's own player, or `None` when there is none ahead.
    pub fn predicted_tick(&self) -> Option<u64> {
        let (me, _) = self.config.host_player.as_ref()?;
        let engine = self.engine.as_ref()?;
        if !matches!(self.phase, Phase::Running) {
            return None;
        }
        predict::predicted_tick(engine.tick(), self.inputs.newest(me))
    }

    /// Takes what should be sent.
    pub fn drain_outbox(&mut self) -> Vec<HostOutput<E::Wire>> {
        std::mem::take(&mut self.outbox)
    }

    /// Takes what happened since the last call.
    pub fn drain_events(&mut self) -> Vec<HostEvent<E::Wire>> {
        std::mem::take(&mut self.events)
    }

    fn send(&mut self, slot: GuestSlot, msg: HostMessage<E::Wire>) {
        self.note_bundle_ids(&[slot], &msg);
        if let Some(seat) = self.seats.get(slot) {
            let format = seat.features.wire_format();
            self.outbox.push(HostOutput::Send(slot, msg, format));
        }
    }

    /// Feeds one event from guest `slot` at time `now` (nothing, when the
    /// slot was never handed out or its seat is spent).
    pub fn on_event(&mut self, slot: GuestSlot, event: PeerEvent, now: Duration) {
        let Some(seat) = self.seats.get_mut(slot) else {
            return;
        };
        match event {
            PeerEvent::State(state) => self.on_state(slot, state, now),
            // A closed seat (refused, left, over budget) is heard no more.
            PeerEvent::Message(..) if seat.closed => {}
            PeerEvent::Message(_, payload) => {
                if seat
                    .budget
                    .charge(&self.config.guest_budget, payload.len(), now)
                {
                    match GuestMessage::decode_payload(&payload) {
                        Ok(msg) => self.on_message(slot, msg, now),
                        Err(e) => {
                            self.stats.bad_messages += 1;
                            self.events.push(HostEvent::BadMessage(slot, e.to_string()));
                        }
                    }
                } else {
                    self.over_budget(slot, now);
                }
            }
        }
        self.seats.let_go_spent();
    }

    fn on_message(&mut self, slot: GuestSlot, msg: GuestMessage<E::Wire>, now: Duration) {
        match msg {
            GuestMessage::GuestHello(hello) => self.on_hello(slot, hello, now),
            GuestMessage::Pong { id } => self.on_pong(slot, id, now),
            GuestMessage::SetupAck => self.on_setup_ack(slot),
            GuestMessage::TickInput(input) => self.on_input(slot, input),
            GuestMessage::TickInputs(batch) => self.on_inputs(slot, batch),
            GuestMessage::LevelTransitionAck { level_epoch } => {
                self.on_transition_ack(slot, level_epoch);
            }
            GuestMessage::HashReport {
                tick,
                level_epoch,
                hash,
            } => self.on_hash_report(slot, tick, level_epoch, &hash),
            GuestMessage::SnapshotAck { level_epoch, tick } => {
                self.on_snapshot_ack(slot, level_epoch, tick);
            }
            GuestMessage::SnapshotAsk { level_epoch, tick } => {
                self.on_snapshot_ask(slot, level_epoch, tick);
            }
            GuestMessage::RelayLevel { .. }
            | GuestMessage::RelaySnapshot { .. }
            | GuestMessage::RelayLevelEnd { .. } => {
                self.stats.bad_messages += 1;
                self.events.push(HostEvent::BadMessage(
                    slot,
                    "a relay authority's message sent to a host".into(),
                ));
            }
        }
    }

    /// Ends the session now (the host shuts down).
    pub fn shutdown(&mut self) {
        if self.ended().is_none() {
            self.end(EndReason::HostShutdown);
        }
    }

    /// When the session next needs [`HostSession::poll`].
    pub fn next_wakeup(&self) -> Option<Duration> {
        let phase = match &self.phase {
            Phase::Lobby { deadline } => {
                let admitted = self.players_admitted();
                // Everyone is in: the start waits for the warm-up at most.
                let warm = (admitted >= self.config.expected_guests)
                    .then(|| self.warm_up_ends())
                    .flatten();
                [*deadline, warm].into_iter().flatten().min()
            }
            Phase::Setup { deadline } => Some(*deadline),
            Phase::Transition(t) => Some(t.deadline),
            Phase::Ended(_) => return None,
            Phase::Running => self.next_tick_due(),
        };
        [phase, self.next_hello_deadline(), self.next_ping_due()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Runs whatever is due at `now`: deadlines and every due tick.
    pub fn poll(&mut self, now: Duration) {
        self.expire_silent_connections(now);
        self.send_pings(now);
        match &self.phase {
            Phase::Lobby { deadline } => {
                let admitted = self.players_admitted();
                let due = deadline.is_some_and(|d| now >= d);
                let all_in = admitted >= self.config.expected_guests && self.links_measured(now);
                if all_in || (due && admitted > 0) {
                    self.begin_setup(now);
                }
            }
            Phase::Setup { deadline } => {
                let all = self
                    .seats
                    .iter()
                    .filter(|s| s.admitted && s.connected && !s.joining)
                    .all(|s| s.setup_acked);
                if all || now >= *deadline {
                    self.start_running(now);
                }
            }
            Phase::Transition(t) => {
                let pending_connected = t
                    .pending
                    .iter()
                    .any(|s| self.seats.get(*s).is_some_and(|seat| seat.connected));
                if !pending_connected || now >= t.deadline {
                    self.transition_deadline(now);
                }
            }
            Phase::Running => self.run_due_ticks(now),
            Phase::Ended(_) => {}
        }
        self.announce_spectators();
        self.announce_waiting_room();
        self.seats.let_go_spent();
    }

    /// Guests that are in the session and reachable.
    fn live_slots(&self) -> Vec<GuestSlot> {
        self.seats
            .entries()
            .filter(|(_, seat)| seat.admitted && !seat.removed && seat.connected && !seat.joining)
            .map(|(slot, _)| slot)
            .collect()
    }

    /// Sends `msg` to `slots`: one broadcast per wire form.
    fn broadcast_to(&mut self, slots: Vec<GuestSlot>, msg: HostMessage<E::Wire>) {
        self.note_bundle_ids(&slots, &msg);
        let format_of = |s: &GuestSlot| {
            self.seats
                .get(*s)
                .map_or(WireFormat::Json, |seat| seat.features.wire_format())
        };
        for (format, slots) in WireFormat::split(slots, format_of) {
            self.outbox
                .push(HostOutput::Broadcast(slots, msg.clone(), format));
        }
    }
}

impl<E: Game + Clone> HostSession<E> {
    /// The host player's world to draw: a copy of the engine run ahead
    /// through the inputs already filed for the coming ticks (the host's
    /// own, delayed by its input delay, and whatever guests sent early),
    /// each player otherwise holding its last input (see
    /// [`crate::predict`]). `None` when nothing is ahead: draw
    /// [`HostSession::engine`]. The engine itself is not touched.
    pub fn predicted(&self) -> Option<E> {
        let until = self.predicted_tick()?;
        let engine = self.engine.as_ref()?;
        let mut current: BTreeMap<PlayerId, Input<E>> = engine
            .roster()
            .into_iter()
            .map(|p| {
                let held = self.inputs.last(&p).cloned().unwrap_or_default();
                (p, held)
            })
            .collect();
        Some(predict::run_ahead(engine, until, |tick| {
            for (p, input) in self.inputs.arrived(tick) {
                if let Some(slot) = current.get_mut(p) {
                    slot.clone_from(input);
                }
            }
            current.clone()
        }))
    }
}
