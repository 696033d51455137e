//! Round-trip probes and fitted input delays on a relay, as a host does
//! them: each guest that took up `ping` is pinged on the unreliable
//! channel (back to back until [`WARM_UP_SAMPLES`] round trips are in,
//! then every [`PING_INTERVAL`]; one in flight, given up after
//! [`PING_GIVE_UP`]), the hellos counting as the first round trip. Each
//! player's delay is fitted to its link by [`crate::delay::fit`] and
//! handed to the relay, which applies it from the next level on. As on a
//! host, a new player is taken in once its link is measured, or after
//! [`WARM_UP_LIMIT`]: a session's start and a late joiner's delay then
//! come from several round trips, not from the hellos alone.
//!
//! Fitted delays are all or nothing, as on a host: every peer's engine
//! must know every player's delay, so while any connection has not taken
//! up `input-delay` every player gets the spec's fixed delay, and such a
//! connection cannot join a level that is running on fitted delays.

use std::time::Duration;

use game_api::GameWire;
use protocol::peer::{Feature, HostMessage, RoundTripReport};
use protocol::tick::INPUT_DELAY_TICKS;

use crate::delay;
use crate::relay::Slot;
use crate::rtt::{self, PING_GIVE_UP, PING_INTERVAL, RttEstimate, WARM_UP_LIMIT, WARM_UP_SAMPLES};

use super::messages::Asked;
use super::{Connection, PeerRelay};

/// One link's probes and round-trip estimate.
#[derive(Clone, Debug, Default)]
pub(super) struct Probe {
    rtt: RttEstimate,
    /// The ping awaiting its pong: its id and when it went.
    in_flight: Option<(u32, Duration)>,
    last_at: Option<Duration>,
    sent: u32,
    /// The round trip the pings last told the guest (`round-trip`).
    told: Option<RoundTripReport>,
}

impl Probe {
    /// When the next ping is due (in the past: at once).
    fn next_due(&self) -> Duration {
        let interval = if self.rtt.samples() < WARM_UP_SAMPLES {
            Duration::ZERO
        } else {
            PING_INTERVAL
        };
        let next = self.last_at.map_or(Duration::ZERO, |t| t + interval);
        match self.in_flight {
            Some((_, sent)) => next.max(sent + PING_GIVE_UP),
            None => next,
        }
    }

    /// A ping's id if one is due at `now` (it is then in flight).
    fn ping(&mut self, now: Duration) -> Option<u32> {
        if now < self.next_due() {
            return None;
        }
        self.sent = self.sent.wrapping_add(1);
        self.in_flight = Some((self.sent, now));
        self.last_at = Some(now);
        Some(self.sent)
    }

    /// A pong: whether it answered the ping in flight (and was measured).
    fn pong(&mut self, id: u32, now: Duration) -> bool {
        match self.in_flight {
            Some((expected, sent)) if expected == id => {
                self.in_flight = None;
                self.rtt.sample(now.saturating_sub(sent));
                true
            }
            _ => false,
        }
    }

    /// One measured round trip (the hellos).
    pub(super) fn sample(&mut self, rtt: Duration) {
        self.rtt.sample(rtt);
    }

    /// Whether enough round trips are in to fit a delay.
    fn warm(&self) -> bool {
        self.rtt.samples() >= WARM_UP_SAMPLES
    }
}

impl Connection {
    /// Whether its hello took up `feature`.
    pub(super) fn took_up(&self, feature: Feature) -> bool {
        self.features.has(feature)
    }

    /// Whether the relay probes this connection now.
    fn probed(&self) -> bool {
        (self.admitted.is_some() || self.warming.is_some()) && self.took_up(Feature::Ping)
    }

    /// Whether its link is still being measured (it took up `ping` and
    /// fewer than [`WARM_UP_SAMPLES`] round trips are in).
    pub(super) fn probe_warming(&self) -> bool {
        self.took_up(Feature::Ping) && !self.probe.warm()
    }
}

impl<W: GameWire> PeerRelay<W> {
    /// Whether this relay fits delays to links (no fixed delay set).
    pub(super) fn fits_delays(&self) -> bool {
        self.config.input_delay.is_none()
    }

    /// The delay a player without a fitted one gets.
    pub(super) fn fallback_delay(&self) -> u64 {
        self.config.input_delay.unwrap_or(INPUT_DELAY_TICKS)
    }

    /// Whether every connection (admitted or saying hello, `also`
    /// included) takes fitted delays.
    fn all_take_fitted(&self, also: Slot) -> bool {
        self.connections
            .iter()
            .filter(|(s, c)| c.admitted.is_some() || **s == also)
            .all(|(_, c)| c.took_up(Feature::InputDelay))
    }

    /// The input delay `slot`'s player gets at its next level (or as it
    /// enters the running one).
    pub(super) fn link_delay(&self, slot: Slot) -> u64 {
        match self.connections.get(&slot) {
            Some(c) if self.fits_delays() && self.all_take_fitted(slot) => delay::fit(&c.probe.rtt),
            _ => self.fallback_delay(),
        }
    }

    /// Hands every player's current delay to the relay.
    pub(super) fn refit_delays(&mut self) {
        if !self.fits_delays() {
            return;
        }
        // Every admitted connection counts alike: one answer for all.
        let fitted = self
            .connections
            .values()
            .filter(|c| c.admitted.is_some())
            .all(|c| c.took_up(Feature::InputDelay));
        let delays: Vec<(Slot, u64)> = self
            .connections
            .iter()
            .filter(|(_, c)| matches!(c.admitted, Some(Some(_))))
            .map(|(s, c)| {
                let d = if fitted {
                    delay::fit(&c.probe.rtt)
                } else {
                    self.fallback_delay()
                };
                (*s, d)
            })
            .collect();
        for (slot, d) in delays {
            self.relay.set_input_delay(slot, d);
        }
    }

    /// Whether the level being built or running, or a player entering
    /// it, has any delay but the spec's (a guest without `input-delay`
    /// cannot join it).
    pub(super) fn level_has_fitted_delays(&self) -> bool {
        let asked = self.relay.level_delays().values().copied();
        let placed = self
            .relay
            .places()
            .filter_map(|p| self.relay.player_delay(p));
        asked.chain(placed).any(|d| d != INPUT_DELAY_TICKS)
    }

    /// Pings every probed connection that is due one.
    pub(super) fn send_pings(&mut self, now: Duration) {
        if !self.fits_delays() {
            return;
        }
        let mut due = Vec::new();
        for (slot, c) in &mut self.connections {
            if c.probed()
                && let Some(id) = c.probe.ping(now)
            {
                let round_trip = c
                    .took_up(Feature::RoundTrip)
                    .then(|| c.probe.rtt.report())
                    .flatten()
                    .filter(|r| rtt::worth_telling(r, c.probe.told.as_ref()));
                if round_trip.is_some() {
                    c.probe.told = round_trip;
                }
                due.push((*slot, id, round_trip));
            }
        }
        for (slot, id, round_trip) in due {
            self.send(slot, HostMessage::Ping { id, round_trip });
        }
    }

    /// When the next ping is due.
    pub(super) fn next_ping_due(&self) -> Option<Duration> {
        if !self.fits_delays() {
            return None;
        }
        self.connections
            .values()
            .filter(|c| c.probed())
            .map(|c| c.probe.next_due())
            .min()
    }

    /// `slot` answered ping `id` at `now`.
    pub(super) fn on_pong(&mut self, slot: Slot, id: u32, now: Duration) {
        let measured = self
            .connections
            .get_mut(&slot)
            .is_some_and(|c| c.probe.pong(id, now));
        if measured {
            self.refit_delays();
            self.admit_warmed(now);
        }
    }

    /// Admits the players whose links are measured, or whose warm-up
    /// took [`WARM_UP_LIMIT`] (a link that slow gets a large delay).
    pub(super) fn admit_warmed(&mut self, now: Duration) {
        let ready: Vec<(Slot, String)> = self
            .connections
            .iter()
            .filter_map(|(slot, c)| {
                let (name, since) = c.warming.as_ref()?;
                (c.probe.warm() || now >= *since + WARM_UP_LIMIT).then(|| (*slot, name.clone()))
            })
            .collect();
        for (slot, name) in ready {
            if let Some(c) = self.connections.get_mut(&slot) {
                c.warming = None;
            }
            self.take_in(slot, Asked::Player(name), now);
        }
    }

    /// When a warming connection is admitted at the latest.
    pub(super) fn next_warm_up_limit(&self) -> Option<Duration> {
        self.connections
            .values()
            .filter_map(|c| c.warming.as_ref().map(|(_, since)| *since + WARM_UP_LIMIT))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pings_go_back_to_back_until_warm_then_every_interval() {
        let mut p = Probe::default();
        let ms = Duration::from_millis;
        let mut now = ms(0);
        for _ in 0..WARM_UP_SAMPLES {
            let id = p.ping(now).expect("due at once while warming up");
            assert_eq!(p.ping(now), None, "one in flight");
            now += ms(40);
            assert!(p.pong(id, now));
        }
        assert_eq!(p.ping(now), None, "warm: the next waits an interval");
        assert_eq!(p.next_due(), now - ms(40) + PING_INTERVAL);
        assert_eq!(p.rtt.smoothed(), Some(ms(40)));
        let id = p.ping(p.next_due()).expect("due after the interval");
        assert!(!p.pong(id + 1, now), "a pong for another ping is ignored");
        let lost_at = p.next_due();
        assert!(p.ping(lost_at).is_some(), "a lost ping is given up");
    }
}
