//! `host-daemon relay`: the daemon serving relay sessions
//! ([`lockstep::peer::PeerRelay`]) through the same driver, lobby rounds
//! and transports as `host`. A relay runs no engine: its guests play, one
//! of them as the authority.

use std::net::IpAddr;
use std::time::Duration;

use game_api::GameWire;
use lockstep::peer::{LevelRecord, PeerEvent as RelayPeerEvent, PeerOutput, PeerRelay};
use lockstep::relay::{Origin, RelayEnd, RelayEvent, RelayPhase, RelayStats};
use netcode::host::HostOutput;
use netcode::replay::{REPLAY_FORMAT, ReplayEnd, ReplayHeader, ReplayRecord};
use netcode::stats::GuestSlot;
use serde::Serialize;

use crate::control::view::{PlayerKind, PlayerView, SessionFigures};
use crate::driver::{EventLog, Served, ServedProgress};
use crate::transport::{ConnectionState, PeerEvent};

/// A relay session served by the daemon: the relay and its slot count.
#[derive(Debug)]
pub struct RelaySession<W: GameWire> {
    relay: PeerRelay<W>,
    next_slot: GuestSlot,
    /// The guest count the metrics last heard.
    guests_counted: Option<usize>,
    /// Application bytes sent to every connection.
    bytes_sent: u64,
}

impl<W: GameWire> RelaySession<W> {
    /// Serves `relay`.
    pub fn new(relay: PeerRelay<W>) -> Self {
        Self {
            relay,
            next_slot: 0,
            guests_counted: None,
            bytes_sent: 0,
        }
    }

    /// The relay.
    pub fn relay(&self) -> &PeerRelay<W> {
        &self.relay
    }

    /// The operator's report of a finished (or running) session.
    pub fn report(&self) -> RelayReport {
        let core = self.relay.relay();
        let (log_frames, anchor_bytes) = core.log_size();
        RelayReport {
            end: core.ended(),
            levels: core.epoch(),
            connections: self.relay.connections_ever(),
            stats: ReportStats::from(core.stats()),
            log_frames,
            anchor_bytes,
            scores: self
                .relay
                .scores()
                .into_iter()
                .map(|r| (r.player_id.as_str().to_owned(), r.kill_score))
                .collect(),
        }
    }
}

/// The `relay-report` line.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RelayReport {
    /// How it ended (absent while running).
    #[serde(serialize_with = "end_name")]
    pub end: Option<RelayEnd>,
    /// Levels started.
    pub levels: u32,
    /// Connections handed to the relay.
    pub connections: usize,
    /// The relay's counters.
    pub stats: ReportStats,
    /// Frames in the log at the end.
    pub log_frames: usize,
    /// The log anchor's payload size at the end, bytes.
    pub anchor_bytes: usize,
    /// Kill score per player over the levels ended.
    pub scores: Vec<(String, u32)>,
}

fn end_name<S: serde::Serializer>(end: &Option<RelayEnd>, s: S) -> Result<S::Ok, S::Error> {
    end.map(relay_end_name).serialize(s)
}

/// How a relay session's end is spelled.
fn relay_end_name(end: RelayEnd) -> &'static str {
    match end {
        RelayEnd::Completed => "completed",
        RelayEnd::Empty => "empty",
        RelayEnd::Shutdown => "shutdown",
    }
}

impl RelayReport {
    /// How it ended, as the report spells it (`None` while running).
    pub fn end_name(&self) -> Option<String> {
        self.end.map(|e| relay_end_name(e).to_owned())
    }
}

/// [`RelayStats`] as the report spells it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportStats {
    frames: u64,
    held_inputs: u64,
    handovers: u64,
    desyncs: u64,
    catch_ups: u64,
    snapshots_verified: u64,
    log_frames_max: usize,
    anchor_bytes_max: usize,
    splits: u64,
}

impl From<&RelayStats> for ReportStats {
    fn from(s: &RelayStats) -> Self {
        Self {
            frames: s.frames,
            held_inputs: s.held_inputs,
            handovers: s.handovers,
            desyncs: s.desyncs,
            catch_ups: s.catch_ups,
            snapshots_verified: s.snapshots_verified,
            log_frames_max: s.log_frames_max,
            anchor_bytes_max: s.anchor_bytes_max,
            splits: s.splits,
        }
    }
}

impl<W: GameWire> Served for RelaySession<W> {
    type Wire = W;

    fn add_guest(&mut self, now: Duration, origin: Option<IpAddr>) -> GuestSlot {
        let slot = self.next_slot;
        self.next_slot += 1;
        self.relay.connected(slot, origin.map(origin_of), now);
        slot
    }

    fn on_event(&mut self, slot: GuestSlot, event: PeerEvent, now: Duration) {
        match event {
            PeerEvent::Message(_, payload) => self.relay.message(slot, &payload, now),
            // A transient loss may recover (the player keeps its place for
            // the grace); a failure or close is final.
            PeerEvent::State(ConnectionState::Connected) => self.relay.back(slot),
            PeerEvent::State(ConnectionState::Disconnected) => self.relay.lost(slot, now),
            PeerEvent::State(ConnectionState::Failed | ConnectionState::Closed) => {
                self.relay.closed(slot, now);
            }
        }
    }

    fn poll(&mut self, now: Duration) {
        self.relay.poll(now);
    }

    fn next_wakeup(&self) -> Option<Duration> {
        self.relay.next_wakeup()
    }

    fn shutdown(&mut self) {
        self.relay.shutdown();
    }

    fn is_over(&self) -> bool {
        self.relay.relay().ended().is_some()
    }

    fn progress(&self) -> ServedProgress {
        let core = self.relay.relay();
        ServedProgress {
            ticks: core.stats().frames,
            started: core.phase() != RelayPhase::Lobby,
            seats_taken: self.relay.seats_taken(),
            connections: self.relay.connections_ever(),
            spectators: self.relay.spectators(),
        }
    }

    fn count_sent(&mut self, _slot: GuestSlot, bytes: usize, _now: Duration) {
        self.bytes_sent += bytes as u64;
    }

    fn figures(&self, _now: Duration) -> SessionFigures {
        let core = self.relay.relay();
        let started = core.phase() != RelayPhase::Lobby;
        let roster = core.roster();
        let players = core
            .places()
            .map(|id| PlayerView {
                id: id.as_str().to_owned(),
                name: String::new(),
                kind: PlayerKind::Guest,
                present: roster.contains(id),
                rtt_ms: None,
                held_inputs: 0,
                desyncs: 0,
                bytes_sent: 0,
                messages_sent: 0,
                bytes_per_s: 0.0,
            })
            .collect();
        SessionFigures {
            started,
            level: if started { core.epoch().max(1) } else { 0 },
            ticks: core.stats().frames,
            players,
            spectators: self.relay.spectators(),
            bytes_sent: self.bytes_sent,
        }
    }

    fn drain(&mut self, log: &mut EventLog) -> Vec<HostOutput<W>> {
        for event in self.relay.drain_events() {
            if let (RelayPeerEvent::Record(record), Some(files)) = (&event, log.replays.as_mut()) {
                files.record(&replay_record(record));
                continue;
            }
            if let Some(m) = &log.metrics {
                match &event {
                    RelayPeerEvent::Relay(RelayEvent::Ticked { lateness_us, held }) => {
                        m.tick(*lateness_us);
                        m.held_inputs(*held);
                    }
                    RelayPeerEvent::Relay(RelayEvent::Desynced { .. }) => m.desync(),
                    _ => {}
                }
            }
            log_relay_event(&event, log);
        }
        let guests = self.relay.seats_taken();
        if let Some(m) = &log.metrics
            && self.guests_counted != Some(guests)
        {
            m.set_guests(guests);
            self.guests_counted = Some(guests);
        }
        self.relay
            .drain_outbox()
            .into_iter()
            .map(|out| match out {
                PeerOutput::Send(slot, msg, format) => HostOutput::Send(slot, msg, format),
                PeerOutput::Broadcast(slots, msg, format) => {
                    HostOutput::Broadcast(slots, msg, format)
                }
                PeerOutput::Close(slot) => HostOutput::Close(slot),
            })
            .collect()
    }
}

/// Where a guest connects from, as the relay weighs it: its IPv4 address,
/// or its IPv6 /56 (as the lobby groups clients).
fn origin_of(ip: IpAddr) -> Origin {
    match ip {
        IpAddr::V4(v4) => Origin(u64::from(u32::from(v4))),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => Origin(u64::from(u32::from(v4))),
            // The top 56 bits, tagged apart from every IPv4 address.
            None => Origin((1 << 60) | (u128::from(v6) >> 72) as u64),
        },
    }
}

/// A relayed level's record in the replay format of a host's: `host-daemon
/// replay` plays it.
fn replay_record<W: GameWire>(record: &LevelRecord<W>) -> ReplayRecord<W> {
    match record {
        LevelRecord::Begin {
            epoch,
            level,
            names,
            settings,
            build,
        } => ReplayRecord::Begin(Box::new(ReplayHeader {
            format: REPLAY_FORMAT,
            build: build.clone(),
            level_epoch: *epoch,
            level_index: level.level_index,
            head: level.head.clone(),
            settings: settings.clone(),
            player_count: level.player_count,
            roster: level.roster.clone(),
            names: names.clone(),
            carryovers: level.carryovers.clone(),
            input_delays: level.input_delays.clone(),
            body: level.body.clone(),
        })),
        LevelRecord::Bundle(b) => ReplayRecord::Bundle(b.clone()),
        LevelRecord::End { tick, final_hash } => ReplayRecord::End(ReplayEnd {
            ticks: *tick,
            final_world_hash: final_hash.clone(),
        }),
    }
}

fn log_relay_event<W: GameWire>(event: &RelayPeerEvent<W>, log: &mut EventLog) {
    match event {
        RelayPeerEvent::Admitted(slot, player, name) => match player {
            Some(player) => tracing::info!(slot, %player, name, "guest admitted"),
            None => tracing::info!(slot, name, "spectator admitted"),
        },
        RelayPeerEvent::Refused(slot, reason) => tracing::info!(slot, ?reason, "join refused"),
        RelayPeerEvent::OverBudget(slot) => tracing::warn!(
            slot,
            "guest sent more than its budget of messages or bytes: disconnected"
        ),
        RelayPeerEvent::Record(_) => {}
        RelayPeerEvent::BadMessage(slot, why) => {
            log.warn(|suppressed| tracing::warn!(slot, %why, suppressed, "bad guest message"));
        }
        RelayPeerEvent::Relay(e) => match e {
            RelayEvent::Arrived {
                epoch,
                tick,
                player,
            } => {
                tracing::info!(level_epoch = epoch, tick, %player, "player entered the level");
            }
            RelayEvent::Removed {
                epoch,
                tick,
                player,
            } => {
                tracing::info!(level_epoch = epoch, tick, %player, "player removed from the roster");
            }
            RelayEvent::AuthorityChanged {
                epoch,
                tick,
                player,
            } => {
                tracing::info!(level_epoch = epoch, tick, %player, "authority");
            }
            RelayEvent::LevelStarted { epoch } => {
                tracing::info!(level_epoch = epoch, "level started")
            }
            RelayEvent::LevelEnded { epoch, tick } => {
                tracing::info!(level_epoch = epoch, tick, "level ended");
            }
            RelayEvent::Desynced { slot, epoch, tick } => log.warn(|suppressed| {
                tracing::warn!(
                    slot,
                    level_epoch = epoch,
                    tick,
                    suppressed,
                    "desync: the guest's hash lost the vote"
                );
            }),
            RelayEvent::Ignored { slot, why } => {
                log.warn(|suppressed| tracing::warn!(slot, why, suppressed, "ignored"));
            }
            RelayEvent::Ended(end) => tracing::info!(?end, "relay session ended"),
            RelayEvent::Ticked { .. } => {}
            RelayEvent::SnapshotVerified { epoch, tick, bytes } => {
                tracing::info!(level_epoch = epoch, tick, bytes, "snapshot verified");
            }
            RelayEvent::SnapshotRejected { epoch, tick } => {
                tracing::warn!(
                    level_epoch = epoch,
                    tick,
                    "snapshot rejected: its hash lost the vote or won only a tie"
                );
            }
            RelayEvent::Split { epoch, tick } => {
                tracing::warn!(
                    level_epoch = epoch,
                    tick,
                    "world hashes split with no majority of addresses: nobody rebuilt"
                );
            }
            RelayEvent::Resynced { slot, from_tick } => {
                tracing::info!(slot, from_tick, "catch-up sent");
            }
        },
    }
}
