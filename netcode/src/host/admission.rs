//! Admission: connections, the version handshake (phase A), the hello
//! deadline, and seats.

use std::time::Duration;

use game_api::PlayerId;
use game_api::{Game, GameWire};
use protocol::name::distinct_name;
use protocol::peer::HostMessage;
use protocol::peer::admission::{self, Admission, Offer, Room, Seat};
use protocol::peer::{
    FEATURE_INPUT_DELAY, Feature, GuestHello, PEER_PROTOCOL_VERSION, RefusalReason,
};

use super::seat_table::GuestSeat;
use super::{HostEvent, HostOutput, HostSession, Phase};
use crate::link::ConnectionState;
use crate::rtt::{self, PING_GIVE_UP, PING_INTERVAL, RttEstimate, WARM_UP_LIMIT, WARM_UP_SAMPLES};
use crate::stats::GuestSlot;

impl<E: Game> HostSession<E> {
    /// Whether `name` (any case) is someone's in this session: the host's
    /// own players, every player in the game (also within its disconnect
    /// grace), every admitted connection, every spectator. A player the
    /// host let go frees its name: coming back, they play under it again.
    pub(super) fn name_in_use(&self, name: &str) -> bool {
        let same = |n: &String| n.to_lowercase() == name.to_lowercase();
        self.local_players().iter().any(|(_, n)| same(n))
            || self
                .roster()
                .iter()
                .filter_map(|p| self.names.get(p))
                .any(same)
            || self.spectator_names.values().any(same)
            || self
                .seats
                .iter()
                .any(|s| s.admitted && !s.closed && !s.removed && same(&s.name))
    }

    /// The seats of guests admitted to play and still connected
    /// (spectators aside), in arrival order.
    pub(super) fn guests_in(&self) -> impl Iterator<Item = (GuestSlot, &GuestSeat)> {
        self.seats
            .entries()
            .filter(|(_, s)| s.admitted && s.connected && !s.removed && !s.spectator)
    }

    /// Guests admitted to play and still connected (spectators aside).
    pub fn guests_present(&self) -> usize {
        self.guests_in().count()
    }

    /// Guests admitted to play (connected or not), spectators aside.
    pub(super) fn players_admitted(&self) -> usize {
        self.seats
            .iter()
            .filter(|s| s.admitted && !s.spectator)
            .count()
    }

    /// Seats taken: guests admitted to play and connected, plus connections
    /// still in their version handshake (each for at most the hello
    /// timeout). Spectators hold no seat.
    pub fn seats_taken(&self) -> usize {
        self.seats
            .iter()
            .filter(|s| s.connected && !s.removed && !s.closed && !s.spectator)
            .count()
    }

    /// The display names of the guests admitted and connected, in arrival
    /// order (who is in, before the roster exists).
    pub fn guest_names(&self) -> Vec<String> {
        self.guests_in().map(|(_, s)| s.name.clone()).collect()
    }

    /// Guest connections handed to the session so far.
    pub fn connections(&self) -> usize {
        self.seats.connections()
    }

    /// Seats the host keeps now: connections still heard from, and seats
    /// holding a player still in the roster. Spent seats (refused or gone
    /// connections, spectators that left, seats a rejoin took over) are let
    /// go, so this stays near the live count however many came and went.
    pub fn seats_kept(&self) -> usize {
        self.seats.kept()
    }

    /// A new connection at `now`: phase A starts with the host's hello,
    /// whatever the phase (a late one is refused when its reply arrives).
    pub fn add_guest(&mut self, now: Duration) -> GuestSlot {
        let slot = self
            .seats
            .add(GuestSeat::new(&self.config.guest_budget, now));
        self.send(
            slot,
            HostMessage::HostHello {
                build_version: self.config.build_version.clone(),
                protocol_version: PEER_PROTOCOL_VERSION,
                features: self.config.features.clone(),
                game: <E::Wire as GameWire>::NAME.map(str::to_owned),
            },
        );
        slot
    }

    /// Sends a ping to every guest in the session that took up
    /// [`Feature::Ping`] and is due one (one in flight at a time).
    pub(super) fn send_pings(&mut self, now: Duration) {
        for slot in self.seats.slots() {
            let Some(interval) = self.seats.get(slot).map(|s| self.ping_interval(s)) else {
                continue;
            };
            let Some(seat) = self.seats.get_mut(slot) else {
                continue;
            };
            if !seat.features.has(Feature::Ping)
                || !seat.admitted
                || !seat.connected
                || seat.removed
                || seat.closed
            {
                continue;
            }
            if seat.last_ping_at.is_some_and(|t| now < t + interval) {
                continue;
            }
            if seat
                .ping_in_flight
                .is_some_and(|(_, sent)| now < sent + PING_GIVE_UP)
            {
                continue;
            }
            seat.pings_sent = seat.pings_sent.wrapping_add(1);
            let id = seat.pings_sent;
            seat.ping_in_flight = Some((id, now));
            seat.last_ping_at = Some(now);
            let round_trip = seat
                .features
                .has(Feature::RoundTrip)
                .then(|| seat.player.as_ref().and_then(|p| self.stats.rtt.get(p)))
                .flatten()
                .and_then(RttEstimate::report)
                .filter(|r| rtt::worth_telling(r, seat.rtt_told.as_ref()));
            if round_trip.is_some() {
                seat.rtt_told = round_trip;
            }
            self.send(slot, HostMessage::Ping { id, round_trip });
        }
    }

    /// When the next ping is due (in the past: at once).
    pub(super) fn next_ping_due(&self) -> Option<Duration> {
        self.seats
            .iter()
            .filter(|s| s.features.has(Feature::Ping))
            .filter(|s| s.admitted && s.connected && !s.removed && !s.closed)
            .map(|s| {
                let next = s
                    .last_ping_at
                    .map_or(Duration::ZERO, |t| t + self.ping_interval(s));
                match s.ping_in_flight {
                    Some((_, sent)) => next.max(sent + PING_GIVE_UP),
                    None => next,
                }
            })
            .min()
    }

    /// Whether `seat`'s round trip is measured well enough to fit a delay
    /// to: [`WARM_UP_SAMPLES`] round trips (until then pings go back to
    /// back), or it does not take part in the measurement.
    pub(super) fn link_measured(&self, seat: &GuestSeat) -> bool {
        !seat.features.has(Feature::Ping)
            || seat
                .player
                .as_ref()
                .and_then(|p| self.stats.rtt.get(p))
                .is_some_and(|r| r.samples() >= WARM_UP_SAMPLES)
    }

    /// How long after its last ping `seat` is due the next one: back to
    /// back while its link is being measured.
    fn ping_interval(&self, seat: &GuestSeat) -> Duration {
        if self.link_measured(seat) {
            PING_INTERVAL
        } else {
            Duration::ZERO
        }
    }

    /// Whether every admitted guest's link is measured, or has had
    /// [`WARM_UP_LIMIT`] to be: the lobby waits for that before a level
    /// is fitted to the links (the delays go out with the session init).
    pub(super) fn links_measured(&self, now: Duration) -> bool {
        self.warm_up_ends().is_none_or(|end| now >= end)
    }

    /// When the last admitted guest still warming up stops being waited
    /// for (`None` when nobody is warming up).
    pub(super) fn warm_up_ends(&self) -> Option<Duration> {
        let fitting = self
            .config
            .features
            .iter()
            .any(|f| f == FEATURE_INPUT_DELAY);
        if !fitting {
            return None;
        }
        self.seats
            .iter()
            .filter(|s| s.admitted && s.connected && !s.removed && !s.closed)
            .filter(|s| !s.spectator && !self.link_measured(s))
            .filter_map(|s| s.admitted_at.map(|t| t + WARM_UP_LIMIT))
            .max()
    }

    /// A guest's pong: one round-trip sample when it answers the ping in
    /// flight (anything else is ignored).
    pub(super) fn on_pong(&mut self, slot: GuestSlot, id: u32, now: Duration) {
        let Some(seat) = self.seats.get_mut(slot) else {
            return;
        };
        let Some((expected, sent)) = seat.ping_in_flight else {
            return;
        };
        if id != expected {
            return;
        }
        seat.ping_in_flight = None;
        if let Some(player) = seat.player.clone() {
            let rtt = now.saturating_sub(sent);
            self.stats
                .rtt
                .entry(player.clone())
                .or_default()
                .sample(rtt);
            self.events.push(HostEvent::RoundTrip { player, rtt });
        }
    }

    /// The guests admitted and connected, in arrival order: display name
    /// and smoothed round trip (once measured).
    pub fn guest_links(&self) -> Vec<(String, Option<Duration>)> {
        self.seats
            .iter()
            .filter(|s| s.admitted && s.connected && !s.removed && !s.spectator)
            .map(|s| {
                let rtt = s
                    .player
                    .as_ref()
                    .and_then(|p| self.stats.rtt.get(p))
                    .and_then(|r| r.smoothed());
                (s.name.clone(), rtt)
            })
            .collect()
    }

    pub(super) fn next_hello_deadline(&self) -> Option<Duration> {
        self.seats
            .iter()
            .filter(|s| !s.closed)
            .filter_map(|s| s.awaiting_hello_since)
            .min()
            .map(|t| t + self.config.hello_timeout)
    }

    /// Refuses connections that stayed silent past the hello timeout, so a
    /// peer that never speaks cannot hold a seat.
    pub(super) fn expire_silent_connections(&mut self, now: Duration) {
        let timeout = self.config.hello_timeout;
        let silent: Vec<GuestSlot> = self
            .seats
            .entries()
            .filter(|(_, seat)| {
                !seat.closed
                    && seat
                        .awaiting_hello_since
                        .is_some_and(|t| now >= t + timeout)
            })
            .map(|(slot, _)| slot)
            .collect();
        for slot in silent {
            if let Some(seat) = self.seats.get_mut(slot) {
                seat.awaiting_hello_since = None;
            }
            self.refuse(
                slot,
                RefusalReason::BadHandshake,
                format!("no hello within {} ms", timeout.as_millis()),
            );
        }
    }

    pub(super) fn on_state(&mut self, slot: GuestSlot, state: ConnectionState, now: Duration) {
        let present = self.guests_present();
        let Some(seat) = self.seats.get_mut(slot) else {
            return;
        };
        match state {
            ConnectionState::Connected => {
                seat.connected = true;
                seat.disconnected_at = None;
            }
            ConnectionState::Disconnected | ConnectionState::Failed | ConnectionState::Closed => {
                if seat.connected {
                    self.events.push(HostEvent::GuestLost(slot, state));
                }
                seat.connected = false;
                // Disconnected may recover; failed and closed do not.
                seat.gone |= matches!(state, ConnectionState::Failed | ConnectionState::Closed);
                seat.awaiting_hello_since = None;
                if seat.disconnected_at.is_none() {
                    seat.disconnected_at = Some(now);
                }
                // Before the start (or before a late joiner entered the
                // level) nothing was shared yet, and a spectator holds
                // nothing: the seat is free again, and the connection is
                // closed.
                let in_lobby = matches!(self.phase, Phase::Lobby { .. });
                if (in_lobby || seat.joining || seat.spectator) && !seat.closed {
                    seat.admitted = false;
                    seat.joining = false;
                    seat.player = None;
                    seat.closed = true;
                    self.outbox.push(HostOutput::Close(slot));
                    if in_lobby && self.players_admitted() == 0 {
                        self.phase = Phase::Lobby { deadline: None };
                    }
                }
            }
        }
        self.report_guests_present(present);
    }

    /// Emits [`HostEvent::GuestsPresent`] if the count moved from `before`.
    pub(super) fn report_guests_present(&mut self, before: usize) {
        let now = self.guests_present();
        if now != before {
            self.events.push(HostEvent::GuestsPresent(now));
        }
    }

    /// Guest `slot` sent more than its budget: it is disconnected (as if
    /// its connection had closed: a seat freed in the lobby, the grace and
    /// removal in a level) and heard no more.
    pub(super) fn over_budget(&mut self, slot: GuestSlot, now: Duration) {
        self.stats.over_budget += 1;
        self.events.push(HostEvent::OverBudget(slot));
        self.on_state(slot, ConnectionState::Closed, now);
        if let Some(seat) = self.seats.get_mut(slot)
            && !seat.closed
        {
            seat.closed = true;
            self.outbox.push(HostOutput::Close(slot));
        }
    }

    pub(super) fn refuse(&mut self, slot: GuestSlot, reason: RefusalReason, detail: String) {
        self.stats.refusals.push((slot, reason));
        self.events.push(HostEvent::Refused(slot, reason));
        if let Some(seat) = self.seats.get_mut(slot) {
            seat.closed = true;
        }
        self.send(slot, HostMessage::JoinRefused { reason, detail });
        self.outbox.push(HostOutput::Close(slot));
    }

    /// What this host's room looks like to a hello (see
    /// [`admission::seat`]).
    fn room(&self) -> Room {
        let offers_delays = self
            .config
            .features
            .iter()
            .any(|f| f == FEATURE_INPUT_DELAY);
        let started = !matches!(self.phase, Phase::Lobby { .. });
        Room {
            started,
            ended: self.ended().is_some(),
            late_join: self.config.late_join,
            level_fits_delays: started && self.level_has_fitted_delays(),
            offers_delays,
            players: (self.guests_present(), self.config.max_guests),
            spectators: (self.spectators_present(), Some(self.config.max_spectators)),
        }
    }

    pub(super) fn on_hello(&mut self, slot: GuestSlot, hello: GuestHello, now: Duration) {
        let Some(seat) = self.seats.get_mut(slot) else {
            return;
        };
        if seat.admitted || seat.closed {
            return;
        }
        let hello_sent = seat.awaiting_hello_since.take();
        let offer = Offer {
            build: &self.config.build_version,
            features: &self.config.features,
            delay_needs_feature: false,
        };
        let admitted = admission::check_hello(&offer, hello).and_then(|a| {
            let old = match &a.ask {
                admission::Ask::Resume(token) => self.resume_target(token),
                _ => None,
            };
            let resumable = old.is_some() && !matches!(self.phase, Phase::Lobby { .. });
            admission::seat(&self.room(), &a, resumable).map(|seat| (a, seat, old))
        });
        match admitted {
            Err(r) => self.refuse(slot, r.reason, r.detail),
            Ok((a, Seat::Spectator, _)) => self.admit_spectator(slot, a, hello_sent, now),
            Ok((a, Seat::Resume, Some(old))) => {
                self.resume(slot, old, a.features, hello_sent, now);
            }
            Ok((a, _, _)) => self.admit_player(slot, a, hello_sent, now),
        }
    }

    /// Seats connection `slot` as a new player (late, once the session
    /// has started).
    fn admit_player(
        &mut self,
        slot: GuestSlot,
        a: Admission,
        hello_sent: Option<Duration>,
        now: Duration,
    ) {
        let late = !matches!(self.phase, Phase::Lobby { .. });
        let present = self.guests_present();
        let ping = a.features.has(Feature::Ping);
        // One name per person in a session: a second "Tester" plays as
        // "Tester (2)" (the setup's names tell every peer, the joiner too).
        let name = distinct_name(&a.name, |n| self.name_in_use(n));
        let Some(seat) = self.seats.get_mut(slot) else {
            return;
        };
        self.guests_admitted_ever += 1;
        let number = self.guests_admitted_ever;
        seat.admitted = true;
        seat.player = Some(PlayerId::new(format!("guest-{number}")));
        seat.name = name;
        seat.features = a.features;
        seat.admitted_at = Some(now);
        // A late joiner enters the level at the next tick (see `ticks`).
        seat.joining = late;
        // The hellos are the link's first round trip (a little long if the
        // guest was slow to answer, which only makes a delay safer).
        if let (true, Some(sent), Some(player)) = (ping, hello_sent, seat.player.clone()) {
            self.stats
                .rtt
                .entry(player)
                .or_default()
                .sample(now.saturating_sub(sent));
        }
        if let Phase::Lobby { deadline } = &mut self.phase
            && deadline.is_none()
        {
            *deadline = self.config.lobby_wait.map(|w| now + w);
        }
        self.report_guests_present(present);
    }

    pub(super) fn on_setup_ack(&mut self, slot: GuestSlot) {
        if let Some(seat) = self.seats.get_mut(slot)
            && matches!(self.phase, Phase::Setup { .. })
            && seat.admitted
        {
            seat.setup_acked = true;
        }
    }
}
