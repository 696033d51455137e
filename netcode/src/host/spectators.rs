//! Spectators: connections that watch and never play. A hello with
//! `spectate` is admitted at any phase (capped by
//! [`super::HostConfig::max_spectators`], apart from the guest seats) as a
//! spectator id outside the roster (`spectator-1`, ...). It holds no
//! seat, its inputs are ignored, and it gets the running level's exact
//! state like a late joiner at the next tick (before the start: at the
//! first tick), with `spectator` set in its session init and no roster
//! add. From then on it hears bundles, snapshots and transitions like any
//! guest and sends hash reports, which the audit counts under its id.
//!
//! Guests that take up `spectators` hear the list of who watches
//! ([`HostMessage::Spectators`]) whenever it changes. A spectator that
//! disconnects is gone at once (it has nothing to come back to).
//!
//! A spectator must take up `input-delay` when the host offers it: the
//! level's delays are fitted to the players' links, and a spectator's
//! engine must know them.

use std::time::Duration;

use game_api::Game;
use game_api::PlayerId;
use protocol::name::distinct_name;
use protocol::peer::Feature;
use protocol::peer::HostMessage;
use protocol::peer::admission::Admission;
use protocol::wire::WireFormat;

use super::{HostEvent, HostOutput, HostSession};
use crate::stats::GuestSlot;

impl<E: Game> HostSession<E> {
    /// Spectators admitted and connected.
    pub fn spectators_present(&self) -> usize {
        self.seats
            .iter()
            .filter(|s| s.spectator && s.admitted && s.connected && !s.closed)
            .count()
    }

    /// The display names of the spectators watching, in arrival order.
    pub fn spectator_names(&self) -> Vec<String> {
        self.seats
            .iter()
            .filter(|s| s.spectator && s.admitted && s.connected && !s.closed)
            .map(|s| s.name.clone())
            .collect()
    }

    /// Admits connection `slot` to watch, once its hello met the
    /// spectators' rules (`protocol::peer::admission::seat`: the session
    /// is not over, a spectator place is free, it takes the input delays
    /// the host fits).
    pub(super) fn admit_spectator(
        &mut self,
        slot: GuestSlot,
        a: Admission,
        hello_sent: Option<Duration>,
        now: Duration,
    ) {
        self.spectators_admitted_ever += 1;
        let id = PlayerId::new(format!("spectator-{}", self.spectators_admitted_ever));
        let name = distinct_name(&a.name, |n| self.name_in_use(n));
        if let (true, Some(sent)) = (a.features.has(Feature::Ping), hello_sent) {
            self.stats
                .rtt
                .entry(id.clone())
                .or_default()
                .sample(now.saturating_sub(sent));
        }
        self.spectator_names.insert(id.clone(), name.clone());
        let Some(seat) = self.seats.get_mut(slot) else {
            return;
        };
        seat.admitted = true;
        seat.spectator = true;
        seat.player = Some(id.clone());
        seat.name = name;
        seat.features = a.features;
        seat.admitted_at = Some(now);
        // Its state goes out at the next tick of a running level.
        seat.joining = true;
        self.events.push(HostEvent::SpectatorAdmitted(slot, id));
    }

    /// Spectator `slot` is dropped: its connection closes.
    pub(super) fn drop_spectator(&mut self, slot: GuestSlot) {
        let Some(seat) = self.seats.get_mut(slot) else {
            return;
        };
        seat.admitted = false;
        seat.joining = false;
        seat.connected = false;
        if !seat.closed {
            seat.closed = true;
            self.outbox.push(HostOutput::Close(slot));
        }
    }

    /// Guests that hear the spectator list: live, and took it up.
    fn listening_slots(&self) -> Vec<GuestSlot> {
        self.live_slots()
            .into_iter()
            .filter(|s| {
                self.seats
                    .get(*s)
                    .is_some_and(|seat| seat.features.has(Feature::Spectators))
            })
            .collect()
    }

    /// Tells every listening guest who watches, if that changed since the
    /// last time.
    pub(super) fn announce_spectators(&mut self) {
        let names = self.spectator_names();
        if names == self.spectators_announced {
            return;
        }
        self.spectators_announced.clone_from(&names);
        let slots = self.listening_slots();
        if !slots.is_empty() {
            let msg = HostMessage::Spectators { names };
            self.outbox
                .push(HostOutput::Broadcast(slots, msg, WireFormat::Json));
        }
    }

    /// Tells guest `slot` (just given a level's state) who watches, when
    /// it listens and anyone does.
    pub(super) fn tell_spectators(&mut self, slot: GuestSlot) {
        let names = self.spectators_announced.clone();
        let listens = self
            .seats
            .get(slot)
            .is_some_and(|seat| seat.features.has(Feature::Spectators));
        if !names.is_empty() && listens {
            self.send(slot, HostMessage::Spectators { names });
        }
    }
}
