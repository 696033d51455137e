//! Admission and departures: players, spectators and rejoins coming in,
//! connections dropping, graces running out.

use std::time::Duration;

use game_api::PlayerId;

use super::{
    Entry, Origin, Peer, Phase, Refusal, Relay, RelayEvent, RelayMessage, RelayOutput, Role, Slot,
};
use crate::frame::Arrival;

impl<I: Clone + Default> Relay<I> {
    /// Lets connection `slot`, from `origin`, in as `entry` at `now`: the
    /// player's id, or `None` for a spectator. A connection admitted into a running level
    /// is sent a catch-up at once; a new player enters the roster at the
    /// next tick.
    ///
    /// # Errors
    ///
    /// Why it was refused (nothing changed).
    pub fn admit(
        &mut self,
        slot: Slot,
        entry: Entry,
        origin: Origin,
        now: Duration,
    ) -> Result<Option<PlayerId>, Refusal> {
        if self.ended().is_some() {
            return Err(Refusal::Ended);
        }
        if self.peers.contains_key(&slot) {
            self.leave(slot, now);
            self.peers.remove(&slot);
        }
        let in_level = !matches!(self.phase, Phase::Lobby { .. });
        let running = matches!(self.phase, Phase::Running { .. } | Phase::Starting { .. });
        if running && self.log.as_ref().and_then(|l| l.catch_up()).is_none() {
            return Err(Refusal::NoAnchor);
        }
        let (role, name, input_delay) = match entry {
            Entry::Player { name, input_delay } => {
                if in_level && !self.config.late_join {
                    return Err(Refusal::Started);
                }
                if self.players_present() >= self.config.max_players {
                    return Err(Refusal::Full);
                }
                if self.seats_of(origin) >= self.config.max_seats_per_origin {
                    return Err(Refusal::OriginFull);
                }
                let id = PlayerId::new(format!("player-{}", self.next_player_number));
                self.next_player_number += 1;
                if in_level {
                    self.arrivals.insert(
                        id.clone(),
                        Arrival {
                            input_delay,
                            name: name.clone(),
                        },
                    );
                } else {
                    self.roster.insert(id.clone());
                }
                (Role::Player(id), name, input_delay)
            }
            Entry::Spectator { name } => {
                let watching = self
                    .peers
                    .values()
                    .filter(|p| p.connected && p.role == Role::Spectator)
                    .count();
                if watching >= self.config.max_spectators {
                    return Err(Refusal::SpectatorsFull);
                }
                (Role::Spectator, name, 0)
            }
            Entry::Resume {
                player,
                input_delay,
            } => {
                if !self.roster.contains(&player) && !self.arrivals.contains_key(&player) {
                    return Err(Refusal::NotInLevel);
                }
                let old = self
                    .peers
                    .iter()
                    .find(|(_, p)| p.player() == Some(&player))
                    .map(|(s, p)| (*s, p.name.clone(), p.seniority, p.origin));
                // Back from another address: that address's seats are
                // capped too.
                if old.as_ref().is_some_and(|o| o.3 != origin)
                    && self.seats_of(origin) >= self.config.max_seats_per_origin
                {
                    return Err(Refusal::OriginFull);
                }
                let name = match old {
                    Some((old_slot, name, _, _)) => {
                        if self.peers.get(&old_slot).is_some_and(|p| p.connected) {
                            self.outbox.push(RelayOutput::Close(old_slot));
                        }
                        self.peers.remove(&old_slot);
                        if self.authority == Some(old_slot) {
                            self.authority = None;
                        }
                        name
                    }
                    None => String::new(),
                };
                if let Phase::Running { .. } = self.phase {
                    self.inputs.resume(&player, self.next_tick());
                }
                (Role::Player(player), name, input_delay)
            }
        };
        let player = match &role {
            Role::Player(p) => Some(p.clone()),
            Role::Spectator => None,
        };
        if let Phase::Lobby { first_at } = &mut self.phase
            && player.is_some()
        {
            first_at.get_or_insert(now);
        }
        self.peers.insert(
            slot,
            Peer {
                role,
                name,
                seniority: self.next_seniority,
                connected: true,
                disconnected_at: None,
                input_delay,
                receiving: false,
                loaded: false,
                origin,
            },
        );
        self.next_seniority += 1;
        if running {
            self.send_catch_up(slot);
        }
        if let Some(p) = self.authority() {
            let msg = RelayMessage::Authority {
                epoch: self.epoch,
                player: p.clone(),
                from_tick: self.next_tick(),
            };
            self.outbox.push(RelayOutput::To(slot, msg));
        }
        if in_level {
            self.elect();
        }
        Ok(player)
    }

    /// Sends `slot` the log's anchor and the frames since; it receives
    /// frames from now on and must say it loaded them.
    pub(super) fn send_catch_up(&mut self, slot: Slot) -> bool {
        let Some(catch_up) = self.log.as_ref().and_then(|l| l.catch_up()) else {
            return false;
        };
        let from_tick = catch_up.base.tick;
        self.outbox.push(RelayOutput::To(
            slot,
            RelayMessage::CatchUp {
                epoch: self.epoch,
                catch_up,
            },
        ));
        if let Some(p) = self.peers.get_mut(&slot) {
            p.receiving = true;
            p.loaded = false;
        }
        self.judge.forget(slot);
        self.stats.catch_ups += 1;
        self.events.push(RelayEvent::Resynced { slot, from_tick });
        true
    }

    /// Connection `slot` says it loaded level `epoch` (its start or a
    /// catch-up): it votes from now on and may be the authority.
    pub fn loaded(&mut self, slot: Slot, epoch: u32) {
        if epoch != self.epoch {
            return;
        }
        if let Some(p) = self.peers.get_mut(&slot)
            && p.receiving
        {
            p.loaded = true;
        }
        if self.authority.is_none() {
            self.elect();
        }
    }

    /// Connection `slot` dropped at `now`. A player keeps its place for
    /// the grace (neutral input); a spectator is gone. An authority hands
    /// over at once.
    pub fn leave(&mut self, slot: Slot, now: Duration) {
        let Some(p) = self.peers.get_mut(&slot) else {
            return;
        };
        if !p.connected {
            return;
        }
        p.connected = false;
        p.disconnected_at = Some(now);
        if p.role == Role::Spectator {
            self.peers.remove(&slot);
        } else if matches!(self.phase, Phase::Lobby { .. }) {
            // Nothing started: the seat is free again.
            if let Some(id) = self.peers.remove(&slot).and_then(|p| p.player().cloned()) {
                self.roster.remove(&id);
            }
        }
        self.judge.forget(slot);
        if self.authority == Some(slot) {
            if matches!(self.phase, Phase::Lobby { .. }) {
                self.authority = None;
            } else {
                self.elect();
            }
        }
    }

    /// Connection `slot`, lost for a moment, is back within its grace: it
    /// is a player again as before (authority, once passed on, stays
    /// where it went).
    pub fn back(&mut self, slot: Slot) {
        if let Some(p) = self.peers.get_mut(&slot)
            && !p.connected
        {
            p.connected = true;
            p.disconnected_at = None;
        }
    }

    /// Players whose grace ran out at `now`, forgotten (their places are
    /// freed: removed from the roster at the next tick while running).
    pub(super) fn graces_expired(&mut self, now: Duration) -> Vec<PlayerId> {
        let grace = self.config.grace;
        let gone: Vec<Slot> = self
            .peers
            .iter()
            .filter(|(_, p)| p.disconnected_at.is_some_and(|d| now >= d + grace))
            .map(|(s, _)| *s)
            .collect();
        let mut players = Vec::new();
        for s in gone {
            if let Some(id) = self.peers.remove(&s).and_then(|p| p.player().cloned()) {
                players.push(id);
            }
        }
        players
    }

    /// Between levels, an expired grace simply frees the seat.
    pub(super) fn expire_graces_between_ticks(&mut self, now: Duration) {
        for id in self.graces_expired(now) {
            self.roster.remove(&id);
            self.arrivals.remove(&id);
        }
    }
}
