//! The relay speaking campfire's peer protocol: [`PeerRelay`].
//!
//! To every guest a relay session looks like a host (the same hello,
//! session init, map chunks, tick bundles, transitions and session end),
//! so the daemon's bot guests and the browser's wasm guest join it
//! unchanged. The guest that took up [`FEATURE_RELAY`] and is named the
//! authority also answers the relay's asks ([`HostMessage::RelayAskLevel`],
//! [`HostMessage::RelayAskSnapshot`]) and reports each level's end. The
//! relay parses campfire's wire types (maps and states stay opaque
//! strings to it) and never runs the game: see [`crate::relay`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use protocol::BUILD_VERSION;
use protocol::chunk::split;
use protocol::difficulty::Difficulty;
use protocol::input::{InputSnapshot, PlayerId};
use protocol::name::sanitize_display_name;
use protocol::peer::{
    EndReason, FEATURE_COMPACT, FEATURE_INPUT_DELAY, FEATURE_RELAY, GuestMessage, HostMessage,
    JoinPayload, JoinPoint, PEER_PROTOCOL_VERSION, RefusalReason, RelayLevel, RosterAdd, ScoreRow,
    SessionInit, TickInputBundle, TransitionPayload,
};
use protocol::tick::{FIXED_DT, INPUT_DELAY_TICKS, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ};
use protocol::wire::WireFormat;

use crate::budget::{GuestBudget, GuestBudgetPolicy};
use crate::frame::Frame;
use crate::log::CatchUp;
use crate::rejoin;
use crate::relay::{
    Entry, Refusal, Relay, RelayConfig, RelayEnd, RelayEvent, RelayMessage, RelayOutput, Slot,
};

/// The largest message a guest may send a relay, bytes (an authority's
/// level carries a map and a state).
pub const MAX_GUEST_MESSAGE_BYTES: usize = 1024 * 1024;

/// What a campfire relay is configured with.
#[derive(Clone, Debug)]
pub struct PeerRelayConfig {
    /// The relay session itself.
    pub relay: RelayConfig,
    /// Build identifier guests must match.
    pub build_version: String,
    /// The campaign's seed.
    pub campaign_seed: u32,
    /// Levels in the campaign.
    pub levels: u32,
    /// The session's difficulty.
    pub difficulty: Difficulty,
    /// Every player's input delay, ticks (the spec's fixed delay unless
    /// raised; guests must then take up `input-delay`).
    pub input_delay: u64,
    /// How long a connection may take to say hello before it is closed.
    pub hello_timeout: Duration,
    /// Emit [`PeerEvent::Record`]s: each level's start, every bundle sent
    /// and its end, for a replay file.
    pub record: bool,
    /// What each guest may send; a guest over it is disconnected.
    pub guest_budget: GuestBudgetPolicy,
    /// The session's rejoin secret (`None`: no rejoin tokens): every player
    /// gets its token with its session init, and a hello presenting it
    /// resumes that player while it has a place.
    pub rejoin_secret: Option<[u8; 32]>,
}

impl Default for PeerRelayConfig {
    fn default() -> Self {
        Self {
            relay: RelayConfig::default(),
            build_version: BUILD_VERSION.to_owned(),
            campaign_seed: 1,
            levels: 3,
            difficulty: Difficulty::Normal,
            input_delay: INPUT_DELAY_TICKS,
            hello_timeout: Duration::from_secs(5),
            record: false,
            rejoin_secret: None,
            guest_budget: GuestBudgetPolicy::default(),
        }
    }
}

/// What the driver should do. Messages go in the wire form given (the
/// compact one for connections that took up `compact`; it applies to tick
/// bundles only).
#[derive(Clone, Debug)]
pub enum PeerOutput {
    /// Send to one connection.
    Send(Slot, HostMessage, WireFormat),
    /// Send the same message to several, all in one form.
    Broadcast(Vec<Slot>, HostMessage, WireFormat),
    /// Close a connection.
    Close(Slot),
}

/// What happened, for the driver's log and counters.
#[derive(Clone, Debug, PartialEq)]
pub enum PeerEvent {
    /// A connection was let in: its player (`None`: a spectator) and name.
    Admitted(Slot, Option<PlayerId>, String),
    /// The relay session's own event.
    Relay(RelayEvent),
    /// A connection was refused.
    Refused(Slot, RefusalReason),
    /// A message could not be read, or was not the guest's to send.
    BadMessage(Slot, String),
    /// A guest sent more than its budget: disconnected.
    OverBudget(Slot),
    /// What a replay file records (with [`PeerRelayConfig::record`]).
    Record(LevelRecord),
}

/// One record of a relayed level, for a replay file.
#[derive(Clone, Debug, PartialEq)]
pub enum LevelRecord {
    /// A level starts, as its authority built it.
    Begin {
        /// The level's epoch.
        epoch: u32,
        /// The level.
        level: Box<TransitionPayload>,
        /// Display names by player.
        names: BTreeMap<PlayerId, String>,
        /// The session's difficulty.
        difficulty: Difficulty,
        /// The relay's build.
        build: String,
    },
    /// One tick's bundle, as sent (a level's last ones may follow its end
    /// tick: every peer stops at the end).
    Bundle(TickInputBundle),
    /// The authority ended the level at `tick` with this world hash.
    End {
        /// The tick.
        tick: u64,
        /// The authority's world hash there, 16 hex digits.
        final_hash: String,
    },
}

/// A guest's hello, as the relay reads it.
struct Hello {
    build: String,
    protocol_version: u32,
    name: String,
    features: Vec<String>,
    spectate: bool,
    resume: Option<String>,
}

#[derive(Debug)]
struct Connection {
    features: Vec<String>,
    /// `None` until its hello was admitted; then its player (`None` for
    /// a spectator).
    admitted: Option<Option<PlayerId>>,
    name: String,
    /// The level epoch it was last sent (0: none).
    has_epoch: u32,
    /// When it opened.
    opened_at: Duration,
    /// What it may still send.
    budget: GuestBudget,
}

/// A relay session for campfire's peers.
#[derive(Debug)]
pub struct PeerRelay {
    config: PeerRelayConfig,
    relay: Relay<InputSnapshot>,
    connections: BTreeMap<Slot, Connection>,
    /// The current level as its authority built it.
    level: Option<(u32, RelayLevel)>,
    /// Run totals per player: `(kill score, kills)` of levels ended.
    run_scores: BTreeMap<PlayerId, (u32, u32)>,
    /// The latest level end: `(epoch, tick, team eliminated)`.
    last_end: Option<(u32, u64, bool)>,
    outbox: Vec<PeerOutput>,
    events: Vec<PeerEvent>,
    /// Connections handed to the relay so far.
    connections_ever: usize,
}

impl PeerRelay {
    /// A relay waiting for guests.
    pub fn new(config: PeerRelayConfig) -> Self {
        Self {
            relay: Relay::new(config.relay.clone()),
            config,
            connections: BTreeMap::new(),
            level: None,
            run_scores: BTreeMap::new(),
            last_end: None,
            outbox: Vec::new(),
            events: Vec::new(),
            connections_ever: 0,
        }
    }

    /// Seats taken: connected players, and connections still in their
    /// hello (a spectator takes none).
    pub fn seats_taken(&self) -> usize {
        self.connections
            .values()
            .filter(|c| !matches!(c.admitted, Some(None)))
            .count()
    }

    /// Spectators connected.
    pub fn spectators(&self) -> usize {
        self.connections
            .values()
            .filter(|c| matches!(c.admitted, Some(None)))
            .count()
    }

    /// Connections handed to the relay so far.
    pub fn connections_ever(&self) -> usize {
        self.connections_ever
    }

    /// The relay session underneath.
    pub fn relay(&self) -> &Relay<InputSnapshot> {
        &self.relay
    }

    /// Takes what should be sent.
    pub fn drain_outbox(&mut self) -> Vec<PeerOutput> {
        self.pump();
        std::mem::take(&mut self.outbox)
    }

    /// Takes what happened.
    pub fn drain_events(&mut self) -> Vec<PeerEvent> {
        self.pump();
        std::mem::take(&mut self.events)
    }

    /// When the relay next needs [`PeerRelay::poll`].
    pub fn next_wakeup(&self) -> Option<Duration> {
        let hello = self
            .connections
            .values()
            .filter(|c| c.admitted.is_none())
            .map(|c| c.opened_at + self.config.hello_timeout)
            .min();
        [self.relay.next_wakeup(), hello]
            .into_iter()
            .flatten()
            .min()
    }

    /// Runs whatever is due: connections silent past the hello timeout
    /// are closed, then the relay session runs.
    pub fn poll(&mut self, now: Duration) {
        let silent: Vec<Slot> = self
            .connections
            .iter()
            .filter(|(_, c)| c.admitted.is_none() && now >= c.opened_at + self.config.hello_timeout)
            .map(|(s, _)| *s)
            .collect();
        for slot in silent {
            let detail = format!(
                "no hello within {} ms",
                self.config.hello_timeout.as_millis()
            );
            self.refuse(slot, RefusalReason::BadHandshake, detail);
        }
        self.relay.poll(now);
        self.pump();
    }

    /// Ends the session now.
    pub fn shutdown(&mut self) {
        self.relay.shutdown();
        self.pump();
    }

    /// A connection opened at `now`: the relay says hello.
    pub fn connected(&mut self, slot: Slot, now: Duration) {
        self.connections_ever += 1;
        let mut features = vec![FEATURE_RELAY.to_owned(), FEATURE_COMPACT.to_owned()];
        if self.config.input_delay != INPUT_DELAY_TICKS {
            features.push(FEATURE_INPUT_DELAY.to_owned());
        }
        self.connections.insert(
            slot,
            Connection {
                features: Vec::new(),
                admitted: None,
                name: String::new(),
                has_epoch: 0,
                opened_at: now,
                budget: GuestBudget::new(&self.config.guest_budget, now),
            },
        );
        self.send(
            slot,
            HostMessage::HostHello {
                build_version: self.config.build_version.clone(),
                protocol_version: PEER_PROTOCOL_VERSION,
                features,
            },
        );
    }

    /// A connection was lost, perhaps for a moment: its player keeps its
    /// place for the grace (authority passes on at once).
    pub fn lost(&mut self, slot: Slot, now: Duration) {
        if self.connections.contains_key(&slot) {
            self.relay.leave(slot, now);
            self.pump();
        }
    }

    /// A lost connection is back.
    pub fn back(&mut self, slot: Slot) {
        if self.connections.contains_key(&slot) {
            self.relay.back(slot);
        }
    }

    /// A connection closed.
    pub fn closed(&mut self, slot: Slot, now: Duration) {
        if self.connections.remove(&slot).is_some() {
            self.relay.leave(slot, now);
            self.pump();
        }
    }

    /// A message from a connection.
    pub fn message(&mut self, slot: Slot, text: &str, now: Duration) {
        let policy = self.config.guest_budget;
        let Some(conn) = self.connections.get_mut(&slot) else {
            return;
        };
        if !conn.budget.charge(&policy, text.len(), now) {
            self.connections.remove(&slot);
            self.events.push(PeerEvent::OverBudget(slot));
            self.outbox.push(PeerOutput::Close(slot));
            self.relay.leave(slot, now);
            self.pump();
            return;
        }
        if text.len() > MAX_GUEST_MESSAGE_BYTES {
            self.bad(slot, format!("a message of {} bytes", text.len()));
            return;
        }
        match GuestMessage::decode(text) {
            Ok(msg) => self.on_message(slot, msg, now),
            Err(e) => self.bad(slot, e.to_string()),
        }
        self.pump();
    }

    fn bad(&mut self, slot: Slot, why: String) {
        self.events.push(PeerEvent::BadMessage(slot, why));
    }

    fn player_of(&self, slot: Slot) -> Option<&PlayerId> {
        self.connections.get(&slot)?.admitted.as_ref()?.as_ref()
    }

    fn on_message(&mut self, slot: Slot, msg: GuestMessage, now: Duration) {
        let epoch = self.relay.epoch();
        match msg {
            GuestMessage::GuestHello {
                build_version,
                protocol_version,
                display_name,
                features,
                spectate,
                resume,
            } => self.on_hello(
                slot,
                Hello {
                    build: build_version,
                    protocol_version,
                    name: display_name,
                    features,
                    spectate,
                    resume,
                },
                now,
            ),
            GuestMessage::SetupAck => self.relay.loaded(slot, epoch),
            GuestMessage::LevelTransitionAck { level_epoch } => {
                self.relay.loaded(slot, level_epoch)
            }
            GuestMessage::Pong { .. } => {}
            GuestMessage::TickInput(t) => {
                if self.player_of(slot) == Some(&t.player_id) {
                    self.relay.input(slot, epoch, t.tick, t.input.sanitized());
                }
            }
            GuestMessage::TickInputs(batch) => {
                if self.player_of(slot) == Some(&batch.player_id) {
                    for (i, input) in batch.inputs.into_iter().enumerate() {
                        let tick = batch.first_tick + i as u64;
                        self.relay
                            .input(slot, batch.level_epoch, tick, input.sanitized());
                    }
                }
            }
            GuestMessage::HashReport {
                tick,
                level_epoch,
                hash,
            } => match u64::from_str_radix(&hash, 16) {
                Ok(h) => self.relay.hash(slot, level_epoch, tick, h),
                Err(_) => self.bad(slot, format!("hash {hash:?} is not hex")),
            },
            GuestMessage::RelayLevel { level_epoch, level } => {
                let Ok(json) = serde_json::to_string(&level) else {
                    return;
                };
                // Kept once the relay took it: LevelStart goes out at the
                // next pump, from this copy.
                if self
                    .relay
                    .level(slot, level_epoch, Arc::from(json.into_bytes()), now)
                {
                    self.level = Some((level_epoch, *level));
                }
            }
            GuestMessage::RelaySnapshot {
                level_epoch,
                tick,
                hash,
                state,
            } => match u64::from_str_radix(&hash, 16) {
                Ok(h) => {
                    self.relay
                        .snapshot(slot, level_epoch, tick, h, Arc::from(state.into_bytes()))
                }
                Err(_) => self.bad(slot, format!("hash {hash:?} is not hex")),
            },
            GuestMessage::RelayLevelEnd {
                level_epoch,
                tick,
                more,
                scores,
                final_hash,
            } => {
                // The session's end (if this was the last level) goes out at
                // the next pump, with what is kept here.
                if !self.relay.level_end(slot, level_epoch, tick, more, now) {
                    return;
                }
                if self.config.record {
                    self.events
                        .push(PeerEvent::Record(LevelRecord::End { tick, final_hash }));
                }
                for row in &scores {
                    let t = self.run_scores.entry(row.player_id.clone()).or_default();
                    t.0 += row.kill_score;
                    t.1 += row.kills;
                }
                let last = self
                    .level
                    .as_ref()
                    .map_or(0, |(_, l)| l.payload.level_index);
                let eliminated = !more && last + 1 < self.config.levels;
                self.last_end = Some((level_epoch, tick, eliminated));
            }
        }
    }

    fn on_hello(&mut self, slot: Slot, hello: Hello, now: Duration) {
        let Hello {
            build,
            protocol_version,
            name,
            features,
            spectate,
            resume,
        } = hello;
        let Some(conn) = self.connections.get_mut(&slot) else {
            return;
        };
        if conn.admitted.is_some() {
            return;
        }
        if build != self.config.build_version || protocol_version != PEER_PROTOCOL_VERSION {
            let detail = format!(
                "the relay runs {}, the guest {build}",
                self.config.build_version
            );
            self.refuse(slot, RefusalReason::VersionMismatch, detail);
            return;
        }
        if self.config.input_delay != INPUT_DELAY_TICKS
            && !features.iter().any(|f| f == FEATURE_INPUT_DELAY)
        {
            let detail = "this relay's input delay needs the input-delay feature".to_owned();
            self.refuse(slot, RefusalReason::BadHandshake, detail);
            return;
        }
        let name = sanitize_display_name(&name);
        conn.features = features;
        conn.name.clone_from(&name);
        let resumes = resume.as_deref().and_then(|t| self.resumed_player(t));
        let entry = match (spectate, resumes) {
            (true, _) => Entry::Spectator { name },
            (false, Some(player)) => Entry::Resume {
                player,
                input_delay: self.config.input_delay,
            },
            // A token that resumes nothing (the player was removed): a
            // late joiner.
            (false, None) => Entry::Player {
                name,
                input_delay: self.config.input_delay,
            },
        };
        match self.relay.admit(slot, entry, now) {
            Ok(player) => {
                if let Some(c) = self.connections.get_mut(&slot) {
                    c.admitted = Some(player.clone());
                    let name = c.name.clone();
                    self.events.push(PeerEvent::Admitted(slot, player, name));
                }
            }
            Err(r) => {
                let (reason, detail) = match r {
                    Refusal::Full | Refusal::SpectatorsFull => {
                        (RefusalReason::SessionFull, "every place is taken")
                    }
                    Refusal::Started | Refusal::Ended => {
                        (RefusalReason::SessionStarted, "the session has started")
                    }
                    Refusal::NotInLevel | Refusal::NoAnchor => (
                        RefusalReason::SessionStarted,
                        "the relay cannot bring a joiner up to date now",
                    ),
                };
                self.refuse(slot, reason, detail.to_owned());
            }
        }
    }

    /// The player whose token `presented` is, while it has a place.
    fn resumed_player(&self, presented: &str) -> Option<PlayerId> {
        let secret = self.config.rejoin_secret.as_ref()?;
        self.relay
            .places()
            .find(|p| rejoin::verify(secret, p, presented))
            .cloned()
    }

    /// `player`'s rejoin token, when the relay takes rejoins.
    fn rejoin_token(&self, player: &PlayerId) -> Option<String> {
        rejoin::token(self.config.rejoin_secret.as_ref()?, player)
    }

    fn refuse(&mut self, slot: Slot, reason: RefusalReason, detail: String) {
        self.send(slot, HostMessage::JoinRefused { reason, detail });
        self.outbox.push(PeerOutput::Close(slot));
        self.connections.remove(&slot);
        self.events.push(PeerEvent::Refused(slot, reason));
    }

    /// Queues `msg` for `slot` in the form that connection reads.
    fn send(&mut self, slot: Slot, msg: HostMessage) {
        let format = self.format_of(slot);
        self.outbox.push(PeerOutput::Send(slot, msg, format));
    }

    /// The wire form `slot` took up.
    fn format_of(&self, slot: Slot) -> WireFormat {
        let compact = self
            .connections
            .get(&slot)
            .is_some_and(|c| c.features.iter().any(|f| f == FEATURE_COMPACT));
        if compact {
            WireFormat::Compact
        } else {
            WireFormat::Json
        }
    }

    /// Queues `msg` for every slot of `slots`: one broadcast per form.
    fn broadcast(&mut self, slots: Vec<Slot>, msg: HostMessage) {
        let (compact, json): (Vec<Slot>, Vec<Slot>) = slots
            .into_iter()
            .partition(|s| self.format_of(*s) == WireFormat::Compact);
        for (slots, format) in [(json, WireFormat::Json), (compact, WireFormat::Compact)] {
            if !slots.is_empty() {
                self.outbox
                    .push(PeerOutput::Broadcast(slots, msg.clone(), format));
            }
        }
    }

    /// Turns what the relay said into campfire messages.
    fn pump(&mut self) {
        for event in self.relay.drain_events() {
            if let RelayEvent::Desynced { slot, .. } = event {
                // A running guest cannot take a second session init: it
                // is closed, and may come back as a late joiner.
                self.outbox.push(PeerOutput::Close(slot));
            }
            self.events.push(PeerEvent::Relay(event));
        }
        for out in self.relay.drain_outbox() {
            match out {
                RelayOutput::To(slot, msg) => self.deliver(vec![slot], msg),
                RelayOutput::Broadcast(slots, msg) => self.deliver(slots, msg),
                RelayOutput::Close(slot) => self.outbox.push(PeerOutput::Close(slot)),
            }
        }
    }

    fn deliver(&mut self, slots: Vec<Slot>, msg: RelayMessage<InputSnapshot>) {
        match msg {
            RelayMessage::Authority {
                epoch,
                player,
                from_tick,
            } => {
                for slot in slots {
                    let you = self.player_of(slot) == Some(&player);
                    self.send(
                        slot,
                        HostMessage::RelayAuthority {
                            level_epoch: epoch,
                            player_id: player.clone(),
                            from_tick,
                            you,
                            levels: self.config.levels,
                            snapshot_interval: self.config.relay.snapshot_interval,
                        },
                    );
                }
            }
            RelayMessage::AskLevel {
                epoch,
                level_index,
                roster,
                input_delays,
            } => {
                let msg = HostMessage::RelayAskLevel {
                    level_epoch: epoch,
                    level_index,
                    roster,
                    input_delays: self.delays_for(&input_delays),
                    campaign_seed: self.config.campaign_seed,
                    levels: self.config.levels,
                    difficulty: self.config.difficulty,
                };
                self.broadcast(slots, msg);
            }
            RelayMessage::AskSnapshot { epoch, tick } => {
                let msg = HostMessage::RelayAskSnapshot {
                    level_epoch: epoch,
                    tick,
                };
                self.broadcast(slots, msg);
            }
            RelayMessage::LevelStart { epoch, .. } => {
                if self.config.record
                    && let Some((_, level)) = self.level.as_ref().filter(|(e, _)| *e == epoch)
                {
                    let begin = LevelRecord::Begin {
                        epoch,
                        level: Box::new(level.payload.clone()),
                        names: self.names(),
                        difficulty: self.config.difficulty,
                        build: self.config.build_version.clone(),
                    };
                    self.events.push(PeerEvent::Record(begin));
                }
                for slot in slots {
                    self.send_level_start(slot, epoch);
                }
            }
            RelayMessage::CatchUp { epoch, catch_up } => {
                for slot in slots {
                    self.send_catch_up(slot, epoch, &catch_up);
                }
            }
            RelayMessage::Frame(frame) => {
                let b = bundle(&frame);
                if self.config.record {
                    self.events
                        .push(PeerEvent::Record(LevelRecord::Bundle(b.clone())));
                }
                self.broadcast(slots, HostMessage::TickInputBundle(b));
            }
            RelayMessage::LevelEnd { .. } => {}
            RelayMessage::SessionEnd(end) => {
                let (level_epoch, final_tick, eliminated) =
                    self.last_end
                        .unwrap_or((self.relay.epoch(), self.relay.next_tick(), false));
                let reason = match end {
                    RelayEnd::Completed if eliminated => EndReason::TeamEliminated,
                    RelayEnd::Completed => EndReason::Completed,
                    RelayEnd::Empty | RelayEnd::Shutdown => EndReason::HostShutdown,
                };
                let msg = HostMessage::SessionEnd {
                    reason,
                    scores: self.scores(),
                    level_epoch,
                    final_tick,
                };
                self.broadcast(slots, msg);
            }
        }
    }

    /// The end-of-run table: every level ended so far.
    pub fn scores(&self) -> Vec<ScoreRow> {
        let names: BTreeMap<&PlayerId, &str> = self
            .connections
            .values()
            .filter_map(|c| Some((c.admitted.as_ref()?.as_ref()?, c.name.as_str())))
            .collect();
        self.run_scores
            .iter()
            .map(|(id, (kill_score, kills))| ScoreRow {
                player_id: id.clone(),
                name: names.get(id).map(|n| (*n).to_owned()).unwrap_or_default(),
                kill_score: *kill_score,
                kills: *kills,
                disconnected: !names.contains_key(id),
                link: Default::default(),
            })
            .collect()
    }

    fn names(&self) -> BTreeMap<PlayerId, String> {
        self.connections
            .values()
            .filter_map(|c| Some((c.admitted.as_ref()?.as_ref()?.clone(), c.name.clone())))
            .collect()
    }

    fn send_level_start(&mut self, slot: Slot, epoch: u32) {
        let Some((level_epoch, level)) = self.level.clone().filter(|(e, _)| *e == epoch) else {
            return;
        };
        let Some(conn) = self.connections.get(&slot) else {
            return;
        };
        let (had, player) = (conn.has_epoch, conn.admitted.clone().flatten());
        match player {
            Some(me) if had == 0 && level_epoch == 1 => {
                let p = &level.payload;
                let init = SessionInit {
                    roster: p.roster.clone(),
                    your_player_id: me.clone(),
                    tick_rate_hz: TICK_RATE_HZ,
                    fixed_dt: FIXED_DT,
                    input_delay_ticks: p
                        .input_delays
                        .get(&me)
                        .copied()
                        .unwrap_or(self.config.input_delay),
                    reconcile_interval_ticks: RECONCILE_INTERVAL_TICKS,
                    gameplay_seed: p.gameplay_seed,
                    difficulty: self.config.difficulty,
                    player_count: p.player_count,
                    player_names: self.names(),
                    input_delays: self.delays_for(&p.input_delays),
                    join: None,
                    rejoin_token: self.rejoin_token(&me),
                    spectator: false,
                };
                self.send(slot, HostMessage::SessionInit(init));
                let map = serde_json::to_string(&p.map).unwrap_or_default();
                let (chunks, end) = split(&map);
                for c in chunks {
                    self.send(slot, HostMessage::MapChunk(c));
                }
                self.send(slot, HostMessage::MapEnd(end));
            }
            Some(_) if had > 0 => {
                let payload = serde_json::to_string(&level.payload).unwrap_or_default();
                let (chunks, end) = split(&payload);
                self.send(
                    slot,
                    HostMessage::LevelTransitionInit {
                        level_epoch,
                        level_index: level.payload.level_index,
                    },
                );
                for chunk in chunks {
                    self.send(
                        slot,
                        HostMessage::LevelTransitionChunk { level_epoch, chunk },
                    );
                }
                self.send(slot, HostMessage::LevelTransitionEnd { level_epoch, end });
            }
            // A spectator, or a player new to the session after level 1:
            // the level's tick-0 state, as a late joiner gets it.
            _ => {
                let roster = level
                    .payload
                    .roster
                    .iter()
                    .map(|p| {
                        (
                            p.clone(),
                            level
                                .payload
                                .input_delays
                                .get(p)
                                .copied()
                                .unwrap_or(self.config.input_delay),
                        )
                    })
                    .collect();
                self.send_join(slot, level_epoch, 0, &roster, &level.state);
            }
        }
        if let Some(c) = self.connections.get_mut(&slot) {
            c.has_epoch = epoch;
        }
    }

    fn send_catch_up(&mut self, slot: Slot, epoch: u32, catch_up: &CatchUp<InputSnapshot>) {
        let Some((_, level)) = self.level.clone().filter(|(e, _)| *e == epoch) else {
            return;
        };
        let state = if catch_up.base.tick == 0 {
            level.state.clone()
        } else {
            String::from_utf8_lossy(&catch_up.base.payload).into_owned()
        };
        self.send_join(
            slot,
            epoch,
            catch_up.base.tick,
            &catch_up.base.roster,
            &state,
        );
        for frame in &catch_up.frames {
            self.send(slot, HostMessage::TickInputBundle(bundle(frame)));
        }
        if let Some(c) = self.connections.get_mut(&slot) {
            c.has_epoch = epoch;
        }
    }

    /// A session init with a join point at `tick`, then the map and the
    /// exact state in chunks.
    fn send_join(
        &mut self,
        slot: Slot,
        epoch: u32,
        tick: u64,
        roster: &BTreeMap<PlayerId, u64>,
        state: &str,
    ) {
        let Some((_, level)) = self.level.clone() else {
            return;
        };
        let Some(conn) = self.connections.get(&slot) else {
            return;
        };
        let me = conn.admitted.clone().flatten();
        let spectator = me.is_none();
        let me = me.unwrap_or_else(|| PlayerId::new(format!("spectator-{slot}")));
        let init = SessionInit {
            roster: roster.keys().cloned().collect(),
            your_player_id: me.clone(),
            tick_rate_hz: TICK_RATE_HZ,
            fixed_dt: FIXED_DT,
            input_delay_ticks: roster.get(&me).copied().unwrap_or(self.config.input_delay),
            reconcile_interval_ticks: RECONCILE_INTERVAL_TICKS,
            gameplay_seed: level.payload.gameplay_seed,
            difficulty: self.config.difficulty,
            player_count: level.payload.player_count,
            player_names: self.names(),
            input_delays: self.delays_for(roster),
            join: Some(JoinPoint {
                level_epoch: epoch,
                level_index: level.payload.level_index,
                tick,
            }),
            rejoin_token: if spectator {
                None
            } else {
                self.rejoin_token(&me)
            },
            spectator,
        };
        self.send(slot, HostMessage::SessionInit(init));
        let payload = JoinPayload {
            map: level.payload.map.clone(),
            state: state.to_owned(),
        };
        let text = serde_json::to_string(&payload).unwrap_or_default();
        let (chunks, end) = split(&text);
        for c in chunks {
            self.send(slot, HostMessage::MapChunk(c));
        }
        self.send(slot, HostMessage::MapEnd(end));
    }

    /// Delays go in the init only when they differ from the spec's fixed
    /// one (a guest without `input-delay` refuses them otherwise).
    fn delays_for(&self, delays: &BTreeMap<PlayerId, u64>) -> BTreeMap<PlayerId, u64> {
        if self.config.input_delay == INPUT_DELAY_TICKS {
            BTreeMap::new()
        } else {
            delays.clone()
        }
    }
}

/// A frame as the peer protocol's tick bundle.
fn bundle(frame: &Frame<InputSnapshot>) -> TickInputBundle {
    TickInputBundle {
        tick: frame.tick,
        dt: FIXED_DT,
        level_epoch: frame.epoch,
        inputs: frame.inputs.clone(),
        held_input_fallback: frame.held.clone(),
        roster_remove: (!frame.remove.is_empty()).then(|| frame.remove.clone()),
        roster_add: (!frame.add.is_empty()).then(|| {
            frame
                .add
                .iter()
                .map(|(p, a)| {
                    (
                        p.clone(),
                        RosterAdd {
                            input_delay: a.input_delay,
                            name: a.name.clone(),
                        },
                    )
                })
                .collect()
        }),
    }
}
