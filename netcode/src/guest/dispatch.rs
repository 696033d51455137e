//! What comes in from the host: connection state changes and messages,
//! each message routed to the module that handles its kind.

use std::time::Duration;

use game_api::{Game, GameWire};
use protocol::peer::{GuestMessage, HostMessage};

use super::{GuestEnd, GuestEvent, GuestSession, WaitingRoom, authority};
use crate::link::{ConnectionState, PeerEvent};

impl<E: Game> GuestSession<E> {
    /// Feeds one event from the host at time `now`.
    pub fn on_event(&mut self, event: PeerEvent, now: Duration) {
        if self.ended().is_some() {
            return;
        }
        match event {
            PeerEvent::State(ConnectionState::Connected) => self.host_lost_at = None,
            PeerEvent::State(_) => {
                if self.host_lost_at.is_none() {
                    self.host_lost_at = Some(now);
                }
            }
            PeerEvent::Message(_, payload) => match HostMessage::decode_payload(&payload) {
                Ok(msg) => {
                    self.meter.down.record(now, payload.len());
                    if matches!(
                        msg,
                        HostMessage::ReconciliationSnapshot(_) | HostMessage::SnapshotDelta(_)
                    ) {
                        self.meter.snapshots.record(now, payload.len());
                    }
                    self.on_message(msg, now);
                }
                Err(e) => {
                    self.meter.down.record(now, payload.len());
                    self.stats.bad_messages += 1;
                    self.events.push(GuestEvent::BadMessage(e.to_string()));
                }
            },
        }
    }

    fn on_message(&mut self, msg: HostMessage<E::Wire>, now: Duration) {
        match msg {
            HostMessage::HostHello {
                build_version,
                protocol_version,
                features,
                game,
            } => {
                if game.as_deref() == <E::Wire as GameWire>::NAME {
                    self.on_host_hello(build_version, protocol_version, &features);
                } else {
                    let name = |g: Option<&str>| {
                        g.map_or_else(|| "the spec's game".to_owned(), |g| format!("\"{g}\""))
                    };
                    self.end(GuestEnd::SetupFailed(format!(
                        "the session plays {}, this guest plays {}",
                        name(game.as_deref()),
                        name(<E::Wire as GameWire>::NAME)
                    )));
                }
            }
            // Answered at once, whatever the phase: the host measures the
            // round trip of the input channel.
            HostMessage::Ping { id, round_trip } => {
                self.outbox.push(GuestMessage::Pong { id });
                if round_trip.is_some() {
                    self.meter.round_trip = round_trip;
                }
            }
            HostMessage::JoinRefused { reason, detail } => {
                self.end(GuestEnd::Refused(reason, detail));
            }
            HostMessage::SessionInit(init) => self.on_init(init),
            HostMessage::MapChunk(chunk) => self.on_map_chunk(&chunk),
            HostMessage::MapEnd(end) => self.on_map_end(&end),
            HostMessage::TickInputBundle(b) => {
                self.bundle_ids.clear();
                self.bundle_ids.extend(b.inputs.keys().cloned());
                self.on_bundle(b, now);
            }
            HostMessage::PlacedBundle(p) => {
                let tick = p.tick;
                match p.named(&self.bundle_ids) {
                    Some(b) => self.on_bundle(b, now),
                    None => {
                        self.stats.bad_messages += 1;
                        self.events.push(GuestEvent::BadMessage(format!(
                            "the bundle of tick {tick} has other players than the last whole one"
                        )));
                    }
                }
            }
            HostMessage::ReconciliationSnapshot(s) => self.on_snapshot(s),
            HostMessage::SnapshotDelta(d) => self.on_snapshot_delta(d),
            HostMessage::LevelTransitionInit { level_epoch, .. } => {
                self.on_transition_init(level_epoch);
            }
            HostMessage::LevelTransitionChunk { level_epoch, chunk } => {
                self.on_transition_chunk(level_epoch, &chunk, now);
            }
            HostMessage::LevelTransitionEnd { level_epoch, end } => {
                self.on_transition_end(level_epoch, &end, now);
            }
            HostMessage::Spectators { names } => self.spectators = names,
            HostMessage::WaitingRoom {
                players,
                max_players,
                guests_needed,
                you,
            } => {
                self.waiting_room = Some(WaitingRoom {
                    players,
                    max_players,
                    guests_needed,
                    you,
                });
            }
            HostMessage::RelayAuthority {
                you,
                levels,
                snapshot_interval,
                ..
            } => self.on_relay_authority(you, levels, snapshot_interval),
            HostMessage::RelayAskLevel {
                level_epoch,
                level_index,
                roster,
                input_delays,
                campaign,
                levels,
                settings,
            } => self.on_relay_ask_level(authority::LevelAsk {
                epoch: level_epoch,
                level_index,
                roster,
                input_delays,
                campaign,
                levels,
                settings,
            }),
            HostMessage::RelayAskSnapshot { level_epoch, tick } => {
                self.on_relay_ask_snapshot(level_epoch, tick);
            }
            HostMessage::Resync { level_epoch, tick } => self.on_resync_marker(level_epoch, tick),
            HostMessage::SessionEnd {
                reason,
                scores,
                level_epoch,
                final_tick,
            } => {
                // Ends once the engine reached the host's final tick (the
                // bundles before it may still be on their way).
                self.final_scores = scores;
                self.ending = Some((reason, level_epoch, final_tick));
            }
        }
    }
}
