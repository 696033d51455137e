//! What [`run_served`](super::run_served) drives: a [`Served`] session (the
//! daemon's host session, or a relay), and where it stands
//! ([`ServedProgress`]).

use std::net::IpAddr;
use std::time::Duration;

use game_api::{Game, GameWire};
use netcode::host::{HostEvent, HostOutput, HostSession, PlayerKind as ReportKind};
use netcode::netgraph::Flow;
use netcode::stats::GuestSlot;

use super::events::{EventLog, log_host_event};
use crate::control::view::{PlayerKind, PlayerView, SessionFigures};
use crate::transport::PeerEvent;

/// Where a served session (host or relay) stands, for whoever publishes
/// it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServedProgress {
    /// Ticks run, all levels.
    pub ticks: u64,
    /// Whether the session left its lobby (no more guests are admitted).
    pub started: bool,
    /// Seats taken: guests admitted and connected, plus connections still
    /// in their version handshake.
    pub seats_taken: usize,
    /// Guest connections handed to the session so far.
    pub connections: usize,
    /// Spectators admitted and connected (they hold no seat).
    pub spectators: usize,
}

/// A session the daemon serves to guests over its transports: a host
/// session of any game ([`HostSession`]) or a relay ([`crate::relaying`]).
/// [`run_served`](super::run_served) drives either.
pub trait Served: Send + 'static {
    /// The wire of the game it serves.
    type Wire: GameWire;
    /// A new guest connection at `now`, from `origin` where the transport
    /// knows it: its slot.
    fn add_guest(&mut self, now: Duration, origin: Option<IpAddr>) -> GuestSlot;
    /// Feeds one event from guest `slot`.
    fn on_event(&mut self, slot: GuestSlot, event: PeerEvent, now: Duration);
    /// Runs whatever is due.
    fn poll(&mut self, now: Duration);
    /// When it next needs a poll.
    fn next_wakeup(&self) -> Option<Duration>;
    /// Ends the session now.
    fn shutdown(&mut self);
    /// Whether the session is over.
    fn is_over(&self) -> bool;
    /// Where it stands.
    fn progress(&self) -> ServedProgress;
    /// Takes what to send, logging and counting what happened.
    fn drain(&mut self, log: &mut EventLog) -> Vec<HostOutput<Self::Wire>>;
    /// Counts a message of `bytes` bytes sent at `now` on connection
    /// `slot`.
    fn count_sent(&mut self, slot: GuestSlot, bytes: usize, now: Duration);
    /// Its figures at `now`, for the control API.
    fn figures(&self, now: Duration) -> SessionFigures;
}

impl<G> Served for HostSession<G>
where
    G: Game + 'static,
    HostSession<G>: Send,
{
    type Wire = G::Wire;

    fn add_guest(&mut self, now: Duration, _origin: Option<IpAddr>) -> GuestSlot {
        HostSession::add_guest(self, now)
    }

    fn on_event(&mut self, slot: GuestSlot, event: PeerEvent, now: Duration) {
        HostSession::on_event(self, slot, event, now);
    }

    fn poll(&mut self, now: Duration) {
        HostSession::poll(self, now);
    }

    fn next_wakeup(&self) -> Option<Duration> {
        HostSession::next_wakeup(self)
    }

    fn shutdown(&mut self) {
        HostSession::shutdown(self);
    }

    fn is_over(&self) -> bool {
        self.ended().is_some()
    }

    fn progress(&self) -> ServedProgress {
        ServedProgress {
            ticks: self.stats().ticks,
            started: self.started(),
            seats_taken: self.seats_taken(),
            connections: self.connections(),
            spectators: self.spectators_present(),
        }
    }

    fn count_sent(&mut self, slot: GuestSlot, bytes: usize, now: Duration) {
        HostSession::count_sent(self, slot, bytes, now);
    }

    fn figures(&self, now: Duration) -> SessionFigures {
        // Not `report()`: live figures need no world hash.
        let stats = self.stats();
        let roster = self.roster();
        let players: Vec<PlayerView> = self
            .player_reports()
            .into_iter()
            .map(|p| PlayerView {
                present: roster.contains(&p.player_id),
                id: p.player_id.as_str().to_owned(),
                name: p.name,
                kind: match p.kind {
                    ReportKind::Host => PlayerKind::HostPlayer,
                    ReportKind::Bot => PlayerKind::Bot,
                    ReportKind::Guest => PlayerKind::Guest,
                },
                rtt_ms: p.rtt_ms,
                held_inputs: p.held_inputs,
                desyncs: p.desyncs,
                bytes_per_s: stats
                    .sent
                    .get(&p.player_id)
                    .map_or(0.0, |f| f.reading(now).bytes_per_s),
                bytes_sent: p.bytes_sent,
                messages_sent: p.messages_sent,
            })
            .collect();
        SessionFigures {
            started: self.started(),
            level: if self.started() {
                (stats.levels_completed + 1).min(self.level_count())
            } else {
                0
            },
            ticks: stats.ticks,
            spectators: self.spectators_present(),
            bytes_sent: stats.sent.values().map(Flow::bytes).sum(),
            players,
        }
    }

    fn drain(&mut self, log: &mut EventLog) -> Vec<HostOutput<G::Wire>> {
        for event in self.drain_events() {
            if let (HostEvent::Replay(record), Some(files)) = (&event, log.replays.as_mut()) {
                files.record(record);
            }
            log_host_event(&event, &mut log.warnings, log.metrics.as_ref());
        }
        self.drain_outbox()
    }
}
