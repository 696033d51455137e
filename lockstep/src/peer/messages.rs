//! What a relay does with each message a guest sends: the hello (seat,
//! spectator, rejoin or refusal), inputs, hash reports and the authority's
//! answers.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use game_api::PlayerId;
use game_api::{GameWire, PlayerScore, WorldHash};
use protocol::name::distinct_name;
use protocol::peer::admission::{self, Ask, Offer, Room, Seat};
use protocol::peer::{
    FEATURE_INPUT_DELAY, Feature, GuestHello, GuestMessage, HostMessage, RefusalReason, ScoreRow,
};
use protocol::tick::INPUT_DELAY_TICKS;

use crate::relay::{Entry, Origin, Refusal, Slot};

use super::{LevelRecord, PeerEvent, PeerOutput, PeerRelay};

/// What a hello asked a connection to be.
#[derive(Clone, Debug)]
pub(super) enum Asked {
    /// A watcher, with its name.
    Spectator(String),
    /// A player of the level back with its token.
    Resume(PlayerId),
    /// A new player, with its name.
    Player(String),
}

impl<W: GameWire> PeerRelay<W> {
    pub(super) fn bad(&mut self, slot: Slot, why: String) {
        self.events.push(PeerEvent::BadMessage(slot, why));
    }

    pub(super) fn player_of(&self, slot: Slot) -> Option<&PlayerId> {
        self.connections.get(&slot)?.admitted.as_ref()?.as_ref()
    }

    pub(super) fn on_message(&mut self, slot: Slot, msg: GuestMessage<W>, now: Duration) {
        let epoch = self.relay.epoch();
        match msg {
            GuestMessage::GuestHello(hello) => self.on_hello(slot, hello, now),
            GuestMessage::SetupAck => {
                // For the level it was last sent, which a resync's ack can
                // trail (the relay may have moved on since).
                let sent = self.connections.get(&slot).map_or(0, |c| c.has_epoch);
                self.relay.loaded(slot, sent);
            }
            GuestMessage::LevelTransitionAck { level_epoch } => {
                self.relay.loaded(slot, level_epoch)
            }
            GuestMessage::Pong { id } => self.on_pong(slot, id, now),
            GuestMessage::TickInput(t) => {
                if self.player_of(slot) == Some(&t.player_id) {
                    self.relay.input(slot, epoch, t.tick, W::sanitize(&t.input));
                }
            }
            GuestMessage::TickInputs(batch) => {
                if self.player_of(slot) == Some(&batch.player_id) {
                    for (i, input) in batch.inputs.into_iter().enumerate() {
                        let tick = batch.first_tick + i as u64;
                        self.relay
                            .input(slot, batch.level_epoch, tick, W::sanitize(&input));
                    }
                }
            }
            GuestMessage::HashReport {
                tick,
                level_epoch,
                hash,
            } => match WorldHash::parse(&hash) {
                Some(h) => self.relay.hash(slot, level_epoch, tick, h.0),
                None => self.bad(slot, format!("hash {hash:?} is not hex")),
            },
            GuestMessage::RelayLevel { level_epoch, level } => {
                let asked = self.delays_for(self.relay.level_delays());
                if level.payload.input_delays != asked {
                    // An answer to an earlier ask, built for other delays.
                    self.bad(slot, "a level built for other input delays".into());
                    return;
                }
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
                    self.player_resyncs.clear();
                }
            }
            GuestMessage::RelaySnapshot {
                level_epoch,
                tick,
                hash,
                state,
            } => match WorldHash::parse(&hash) {
                Some(h) => {
                    self.relay
                        .snapshot(slot, level_epoch, tick, h.0, Arc::from(state.into_bytes()))
                }
                None => self.bad(slot, format!("hash {hash:?} is not hex")),
            },
            // A relay sends no snapshots: nothing to acknowledge.
            GuestMessage::SnapshotAck { .. } | GuestMessage::SnapshotAsk { .. } => {
                self.bad(slot, "a snapshot acknowledgement sent to a relay".into());
            }
            GuestMessage::RelayLevelEnd {
                level_epoch,
                tick,
                more,
                scores,
                final_hash,
            } => {
                if self.on_level_end(slot, level_epoch, tick, more, &scores, now)
                    && self.config.record
                {
                    self.events
                        .push(PeerEvent::Record(LevelRecord::End { tick, final_hash }));
                }
            }
        }
    }

    /// The authority says level `epoch` ended at `tick`, with the level's
    /// `scores`. Returns whether the relay took it.
    ///
    /// `more` is honoured only while the campaign has a level after this
    /// one (the relay's own count, not the index the authority put in its
    /// level): a `more` on the last level ends the session as completed
    /// and is reported as a bad message. The level still ends when its
    /// scores are bad: only the bad rows are dropped (see
    /// [`Self::add_level_scores`]): refusing the end would stall the run,
    /// as nothing asks the authority again.
    fn on_level_end(
        &mut self,
        slot: Slot,
        epoch: u32,
        tick: u64,
        more: bool,
        scores: &[ScoreRow],
        now: Duration,
    ) -> bool {
        // Read before the relay moves on to the next level.
        let players: BTreeSet<PlayerId> = self.relay.level_players().cloned().collect();
        let last = self.relay.level_index() + 1 >= self.config.levels;
        // The session's end (if this was the last level) goes out at the
        // next pump, with what is kept here.
        if !self.relay.level_end(slot, epoch, tick, more && !last, now) {
            return false;
        }
        if more && last {
            self.bad(slot, "another level after the campaign's last".into());
        }
        self.add_level_scores(slot, &players, scores);
        let eliminated = !more && !last;
        self.last_end = Some((epoch, tick, eliminated));
        true
    }

    /// Adds a level's `scores` to the run's, saturating. Only one row per
    /// player of the level (`players`) counts: a row for anyone else and
    /// any later row for a player already counted are dropped and
    /// reported as a bad message, so an authority can neither grow the
    /// table past the session's players nor count a player twice.
    fn add_level_scores(&mut self, slot: Slot, players: &BTreeSet<PlayerId>, scores: &[ScoreRow]) {
        let mut counted = BTreeSet::new();
        let mut dropped = 0;
        for row in scores {
            if !players.contains(&row.player_id) || !counted.insert(&row.player_id) {
                dropped += 1;
                continue;
            }
            let score = PlayerScore {
                kill_score: row.kill_score,
                kills: row.kills,
            };
            self.run_scores
                .entry(row.player_id.clone())
                .or_default()
                .add(score);
        }
        if dropped > 0 {
            let why = format!("{dropped} score rows for no player of the level, or repeated");
            self.bad(slot, why);
        }
    }

    pub(super) fn on_hello(&mut self, slot: Slot, hello: GuestHello, now: Duration) {
        let Some(conn) = self.connections.get(&slot) else {
            return;
        };
        if conn.admitted.is_some() || conn.warming.is_some() {
            return;
        }
        let offered = self.offered_features();
        let offer = Offer {
            build: &self.config.build_version,
            features: &offered,
            delay_needs_feature: self.fallback_delay() != INPUT_DELAY_TICKS,
        };
        let admitted = admission::check_hello(&offer, hello).and_then(|a| {
            let resumes = match &a.ask {
                Ask::Resume(token) => self.resumed_player(token),
                _ => None,
            };
            // The relay itself counts its places (per origin too) and
            // knows when a joiner cannot be brought up to date
            // (`Relay::admit`).
            let room = Room {
                late_join: true,
                level_fits_delays: self.level_has_fitted_delays(),
                offers_delays: offered.iter().any(|f| f == FEATURE_INPUT_DELAY),
                ..Room::default()
            };
            admission::seat(&room, &a, resumes.is_some()).map(|seat| (a, seat, resumes))
        });
        let (a, seat, resumes) = match admitted {
            Ok(admitted) => admitted,
            Err(r) => {
                self.refuse(slot, r.reason, r.detail);
                return;
            }
        };
        // One name per person in a session: a second "Tester" plays as
        // "Tester (2)".
        let name = distinct_name(&a.name, |n| self.name_in_use(n, slot));
        let Some(conn) = self.connections.get_mut(&slot) else {
            return;
        };
        if a.features.has(Feature::Ping) {
            // The hellos are the link's first round trip.
            conn.probe.sample(now.saturating_sub(conn.opened_at));
        }
        conn.features = a.features;
        conn.name.clone_from(&name);
        let asked = match (seat, resumes) {
            (Seat::Spectator, _) => Asked::Spectator(name),
            (Seat::Resume, Some(player)) => Asked::Resume(player),
            // A token that resumes nothing (the player was removed): a
            // late joiner.
            _ => Asked::Player(name),
        };
        if let (Asked::Player(name), Some(conn)) = (&asked, self.connections.get_mut(&slot))
            && self.config.input_delay.is_none()
            && conn.probe_warming()
        {
            // Its delay is fitted once its link is measured (see `probes`).
            conn.warming = Some((name.clone(), now));
            return;
        }
        self.take_in(slot, asked, now);
    }

    /// Whether `name` (any case) is held by another connection that was let
    /// in, or is waiting to be.
    fn name_in_use(&self, name: &str, except: Slot) -> bool {
        let name = name.to_lowercase();
        self.connections.iter().any(|(s, c)| {
            *s != except
                && (c.admitted.is_some() || c.warming.is_some())
                && c.name.to_lowercase() == name
        })
    }

    /// Hands connection `slot` to the relay as what its hello asked to be,
    /// with its link's delay as measured now.
    pub(super) fn take_in(&mut self, slot: Slot, asked: Asked, now: Duration) {
        let input_delay = self.link_delay(slot);
        let resuming = match &asked {
            Asked::Resume(player) => Some(player.clone()),
            _ => None,
        };
        let entry = match asked {
            Asked::Spectator(name) => Entry::Spectator { name },
            Asked::Resume(player) => Entry::Resume {
                player,
                input_delay,
            },
            Asked::Player(name) => Entry::Player { name, input_delay },
        };
        let origin = self
            .connections
            .get(&slot)
            .map_or(Origin::of_slot(slot), |c| c.origin);
        match self.relay.admit(slot, entry, origin, now) {
            Ok(player) => {
                // The token that resumed it is spent; its init carries
                // the next.
                if let (Some(resumed), Some(rejoins)) = (&resuming, &mut self.rejoins) {
                    rejoins.spend(resumed);
                }
                if let Some(c) = self.connections.get_mut(&slot) {
                    c.resumed = resuming.is_some();
                    c.admitted = Some(player.clone());
                    let name = c.name.clone();
                    self.events.push(PeerEvent::Admitted(slot, player, name));
                }
                self.refit_delays();
            }
            Err(r) => {
                let (reason, detail) = match r {
                    Refusal::Full | Refusal::SpectatorsFull => {
                        (RefusalReason::SessionFull, "every place is taken")
                    }
                    Refusal::OriginFull => (
                        RefusalReason::SessionFull,
                        "your address holds as many seats as one may",
                    ),
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
    pub(super) fn resumed_player(&self, presented: &str) -> Option<PlayerId> {
        self.rejoins
            .as_ref()?
            .holder(presented, self.relay.places())
            .cloned()
    }

    /// `player`'s current rejoin token, when the relay takes rejoins.
    pub(super) fn rejoin_token(&self, player: &PlayerId) -> Option<String> {
        self.rejoins.as_ref()?.token(player)
    }

    pub(super) fn refuse(&mut self, slot: Slot, reason: RefusalReason, detail: String) {
        self.send(slot, HostMessage::JoinRefused { reason, detail });
        self.outbox.push(PeerOutput::Close(slot));
        self.connections.remove(&slot);
        self.events.push(PeerEvent::Refused(slot, reason));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{PeerRelay, PeerRelayConfig};
    use game_api::toy::Toy;
    use protocol::peer::{
        FEATURE_INPUT_DELAY, FEATURE_PING, GuestHello, GuestMessage, PEER_PROTOCOL_VERSION,
    };
    use std::time::Duration;

    #[test]
    fn a_hello_takes_up_only_the_features_the_relay_offered() {
        // The spec's fixed delay: the relay offers neither pings nor delays.
        let config = PeerRelayConfig::<Toy> {
            input_delay: Some(protocol::tick::INPUT_DELAY_TICKS),
            ..PeerRelayConfig::default()
        };
        let build = config.build_version.clone();
        let mut relay = PeerRelay::new(config);
        relay.connected(0, None, Duration::ZERO);
        let hello = GuestMessage::<Toy>::GuestHello(GuestHello {
            build_version: build,
            protocol_version: PEER_PROTOCOL_VERSION,
            display_name: "Greedy".into(),
            features: [
                FEATURE_PING,
                FEATURE_INPUT_DELAY,
                "compact",
                "compact",
                "made-up",
            ]
            .map(str::to_owned)
            .to_vec(),
            spectate: false,
            resume: None,
        });
        relay.message(0, &hello.to_json().unwrap().into(), Duration::ZERO);
        assert_eq!(
            relay.connections[&0].features.names(),
            ["compact".to_owned()]
        );
    }
}
