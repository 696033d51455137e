//! What a relay sends: the relay core's messages turned into the peer
//! protocol's (tick bundles, level starts, catch-ups, joins, the end),
//! each in the wire form its guest took up.

use std::collections::BTreeMap;

use game_api::GameWire;
use game_api::PlayerId;
use protocol::chunk::split;
use protocol::peer::{
    EndReason, Feature, HostMessage, JoinPayload, JoinPoint, RosterAdd, ScoreRow, SessionInit,
    TickInputBundle,
};
use protocol::tick::{FIXED_DT, INPUT_DELAY_TICKS, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ};
use protocol::wire::WireFormat;

use crate::frame::Frame;
use crate::log::CatchUp;
use crate::relay::{RelayEnd, RelayEvent, RelayMessage, RelayOutput, Slot};

use super::{LevelRecord, PeerEvent, PeerOutput, PeerRelay};

impl<W: GameWire> PeerRelay<W> {
    /// Queues `msg` for `slot` in the form that connection reads.
    pub(super) fn send(&mut self, slot: Slot, msg: HostMessage<W>) {
        let format = self.format_of(slot);
        self.outbox.push(PeerOutput::Send(slot, msg, format));
    }

    /// The wire form `slot` took up.
    pub(super) fn format_of(&self, slot: Slot) -> WireFormat {
        self.connections
            .get(&slot)
            .map_or(WireFormat::Json, |c| c.features.wire_format())
    }

    /// Queues `msg` for every slot of `slots`: one broadcast per form.
    pub(super) fn broadcast(&mut self, slots: Vec<Slot>, msg: HostMessage<W>) {
        for (format, slots) in WireFormat::split(slots, |s| self.format_of(*s)) {
            self.outbox
                .push(PeerOutput::Broadcast(slots, msg.clone(), format));
        }
    }

    /// Turns what the relay said into campfire messages.
    pub(super) fn pump(&mut self) {
        let mut desynced = Vec::new();
        for event in self.relay.drain_events() {
            if let RelayEvent::Desynced { slot, .. } = event {
                desynced.push(slot);
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
        for slot in desynced {
            // A guest with `resync` was just rebuilt in place (its catch-up
            // went out above). One without it cannot take a second session
            // init, and neither can be rebuilt while the log has no anchor:
            // it is closed, and may come back with its rejoin token.
            if !self.resyncing.remove(&slot) {
                self.outbox.push(PeerOutput::Close(slot));
            }
        }
        self.resyncing.clear();
    }

    pub(super) fn deliver(&mut self, slots: Vec<Slot>, msg: RelayMessage<W::Input>) {
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
                    campaign: self.config.campaign.clone(),
                    levels: self.config.levels,
                    settings: self.config.settings.clone(),
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
                        settings: self.config.settings.clone(),
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
            .map(|(id, score)| ScoreRow {
                player_id: id.clone(),
                name: names.get(id).map(|n| (*n).to_owned()).unwrap_or_default(),
                kill_score: score.kill_score,
                kills: score.kills,
                disconnected: !names.contains_key(id),
                link: Default::default(),
            })
            .collect()
    }

    pub(super) fn names(&self) -> BTreeMap<PlayerId, String> {
        self.connections
            .values()
            .filter_map(|c| Some((c.admitted.as_ref()?.as_ref()?.clone(), c.name.clone())))
            .collect()
    }

    pub(super) fn send_level_start(&mut self, slot: Slot, epoch: u32) {
        let Some((level_epoch, level)) = self.level.clone().filter(|(e, _)| *e == epoch) else {
            return;
        };
        let Some(conn) = self.connections.get(&slot) else {
            return;
        };
        let (had, player) = (conn.has_epoch, conn.admitted.clone().flatten());
        let in_roster = player
            .as_ref()
            .is_some_and(|me| level.payload.roster.contains(me));
        match player {
            // In the first level's roster from the start.
            Some(me) if had == 0 && level_epoch == 1 && in_roster => {
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
                        .unwrap_or(self.fallback_delay()),
                    reconcile_interval_ticks: RECONCILE_INTERVAL_TICKS,
                    head: p.head.clone(),
                    settings: self.config.settings.clone(),
                    player_count: p.player_count,
                    player_names: self.names(),
                    input_delays: self.delays_for(&p.input_delays),
                    join: None,
                    rejoin_token: self.rejoin_token(&me),
                    spectator: false,
                };
                self.send(slot, HostMessage::SessionInit(init));
                let map = serde_json::to_string(&p.body).unwrap_or_default();
                let (chunks, end) = split(&map);
                for c in chunks {
                    self.send(slot, HostMessage::MapChunk(c));
                }
                self.send(slot, HostMessage::MapEnd(end));
            }
            // Anyone who had the previous level, spectators included.
            _ if had > 0 => {
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
            // A new spectator, a player new to the session after level 1,
            // or one admitted while level 1 was being built (not in its
            // roster; it enters with a roster add): the level's tick-0
            // state, as a late joiner gets it.
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
                                .unwrap_or(self.fallback_delay()),
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

    pub(super) fn send_catch_up(&mut self, slot: Slot, epoch: u32, catch_up: &CatchUp<W::Input>) {
        let Some((_, level)) = self.level.clone().filter(|(e, _)| *e == epoch) else {
            return;
        };
        let state = if catch_up.base.tick == 0 {
            level.state.clone()
        } else {
            String::from_utf8_lossy(&catch_up.base.payload).into_owned()
        };
        let Some(conn) = self.connections.get_mut(&slot) else {
            return;
        };
        let running = conn.has_epoch == epoch;
        let player = conn.admitted.clone().flatten();
        let resyncs = match &player {
            Some(p) => self.player_resyncs.get(p).copied().unwrap_or(0),
            None => conn.resyncs,
        };
        let in_place = running && conn.took_up(Feature::Resync) && resyncs < MAX_RESYNCS;
        if running && !in_place {
            // It cannot take a second session init, or has been rebuilt
            // too often (each catch-up is the whole log): `pump` closes it.
            return;
        }
        if in_place {
            conn.resyncs += 1;
            if let Some(p) = player {
                *self.player_resyncs.entry(p).or_default() += 1;
            }
            // A running guest of this level: the marker on the input
            // channel tells it where the bundle stream restarts.
            self.send(
                slot,
                HostMessage::Resync {
                    level_epoch: epoch,
                    tick: catch_up.base.tick,
                },
            );
            self.resyncing.insert(slot);
        }
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
    pub(super) fn send_join(
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
        let resumed = conn.resumed;
        let spectator = me.is_none();
        let me = me.unwrap_or_else(|| PlayerId::new(format!("spectator-{slot}")));
        let init = SessionInit {
            roster: roster.keys().cloned().collect(),
            your_player_id: me.clone(),
            tick_rate_hz: TICK_RATE_HZ,
            fixed_dt: FIXED_DT,
            input_delay_ticks: roster
                .get(&me)
                .copied()
                .or_else(|| self.relay.player_delay(&me))
                .unwrap_or(self.fallback_delay()),
            reconcile_interval_ticks: RECONCILE_INTERVAL_TICKS,
            head: level.payload.head.clone(),
            settings: self.config.settings.clone(),
            player_count: level.payload.player_count,
            player_names: self.names(),
            input_delays: self.delays_for(roster),
            join: Some(JoinPoint {
                level_epoch: epoch,
                level_index: level.payload.level_index,
                tick,
                resumed,
            }),
            rejoin_token: if spectator {
                None
            } else {
                self.rejoin_token(&me)
            },
            spectator,
        };
        self.send(slot, HostMessage::SessionInit(init));
        let payload = JoinPayload::<W> {
            body: level.payload.body.clone(),
            state: state.to_owned(),
        };
        let text = serde_json::to_string(&payload).unwrap_or_default();
        let (chunks, end) = split(&text);
        for c in chunks {
            self.send(slot, HostMessage::MapChunk(c));
        }
        self.send(slot, HostMessage::MapEnd(end));
    }

    /// Delays go in the init only when one differs from the spec's fixed
    /// one (a guest without `input-delay` refuses them otherwise, and
    /// none is admitted while a level runs on them).
    pub(super) fn delays_for(&self, delays: &BTreeMap<PlayerId, u64>) -> BTreeMap<PlayerId, u64> {
        if delays.values().all(|d| *d == INPUT_DELAY_TICKS) {
            BTreeMap::new()
        } else {
            delays.clone()
        }
    }
}

/// In-place rebuilds one connection gets; a connection that desyncs again
/// after them is closed (it may rejoin with its token). Each rebuild sends
/// the whole log, so a peer that keeps losing the vote, by fault or on
/// purpose, cannot make the relay send it over and over.
pub const MAX_RESYNCS: u32 = 3;

/// A frame as the peer protocol's tick bundle.
fn bundle<W: GameWire>(frame: &Frame<W::Input>) -> TickInputBundle<W> {
    TickInputBundle {
        tick: frame.tick,
        dt: FIXED_DT,
        level_epoch: frame.epoch,
        inputs: frame
            .inputs()
            .map(|(id, input)| (id.clone(), input.clone()))
            .collect(),
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
