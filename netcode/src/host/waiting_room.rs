//! The waiting room: before the start, guests that take up
//! `waiting-room` hear who is in (the host's own players, then guests by
//! arrival), how many players the session takes and how many more guests
//! the start waits for ([`HostMessage::WaitingRoom`]), whenever that
//! changes and once on arrival. Nothing is sent from the start on: the
//! session init's roster takes over.

use game_api::Game;
use protocol::peer::Feature;
use protocol::peer::HostMessage;
use protocol::wire::WireFormat;

use super::{HostOutput, HostSession, Phase};
use crate::stats::GuestSlot;

impl<E: Game> HostSession<E> {
    /// The waiting room as it stands, the same for every guest (`you`
    /// unset).
    fn waiting_room(&self) -> HostMessage<E::Wire> {
        let local = self.local_players();
        let mut players: Vec<String> = local.iter().map(|(_, name)| name.clone()).collect();
        players.extend(self.guest_names());
        let max_players = self
            .config
            .max_guests
            .and_then(|g| u32::try_from(g + local.len()).ok());
        // A start that waits for more guests than a u32 counts waits for
        // the host's Start (the browser host without `startWhen`).
        let guests_needed = u32::try_from(self.config.expected_guests)
            .ok()
            .filter(|n| *n != u32::MAX)
            .map(|n| n.saturating_sub(u32::try_from(self.players_admitted()).unwrap_or(u32::MAX)));
        HostMessage::WaitingRoom {
            players,
            max_players,
            guests_needed,
            you: None,
        }
    }

    /// Where each guest in stands in the room's `players`: after the
    /// host's own, by arrival.
    fn room_places(&self) -> Vec<(GuestSlot, u32)> {
        let first = self.local_players().len();
        self.guests_in()
            .enumerate()
            .filter_map(|(i, (slot, _))| Some((slot, u32::try_from(first + i).ok()?)))
            .collect()
    }

    /// Tells listening guests the waiting room, if it changed since they
    /// last heard it or they never did; nothing once the session started.
    /// Each hears the room with its own place in it (`you`).
    pub(super) fn announce_waiting_room(&mut self) {
        if !matches!(self.phase, Phase::Lobby { .. }) {
            return;
        }
        let listening: Vec<GuestSlot> = self
            .live_slots()
            .into_iter()
            .filter(|s| {
                self.seats
                    .get(*s)
                    .is_some_and(|seat| seat.features.has(Feature::WaitingRoom))
            })
            .collect();
        let room = self.waiting_room();
        let to: Vec<GuestSlot> = match &self.waiting_room_announced {
            Some((heard, by)) if *heard == room => listening
                .iter()
                .copied()
                .filter(|s| !by.contains(s))
                .collect(),
            _ => listening.clone(),
        };
        self.waiting_room_announced = Some((room.clone(), listening));
        if to.is_empty() {
            return;
        }
        let places = self.room_places();
        for slot in to {
            let mut own = room.clone();
            if let HostMessage::WaitingRoom { you, .. } = &mut own {
                *you = places.iter().find(|(s, _)| *s == slot).map(|(_, i)| *i);
            }
            self.outbox
                .push(HostOutput::Send(slot, own, WireFormat::Json));
        }
    }
}
