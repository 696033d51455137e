//! `netcode`'s join policy ([`JoinSlots`]) for the browser host
//! (`web/lib/browser-host.js`), on the page's millisecond clock: the same
//! rules the daemon follows for the answers it is connecting, for when the
//! next offer round may open, and for whether one should be open at all
//! (`netcode::host::rounds`).

use std::time::Duration;

use netcode::host::join_slots::{Expiry, JoinId, JoinPolicy, JoinSlots};
use netcode::host::rounds::{RoundPolicy, Seats};
use serde::{Deserialize, Serialize};

use crate::guest::millis;

/// The page's settings (every field optional; the policy's defaults
/// otherwise).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebJoinPolicy {
    /// How long a join may take in all, ms (the page's connect timeout).
    pub connect_deadline_ms: Option<f64>,
    /// Seats for guests (default 0: rounds only for spectators).
    pub guest_seats: Option<usize>,
    /// Guests the start waits for (default: every guest seat).
    pub start_when: Option<usize>,
    /// Joiners are admitted into a running session (default false).
    pub late_join: Option<bool>,
    /// Places for spectators (default 0).
    pub max_spectators: Option<usize>,
}

/// What [`WebJoinSlots::admit`] answers.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebAdmission {
    /// The new join's id.
    pub id: u64,
    /// The join dropped for it (close its connection), if any.
    pub evicted: Option<u64>,
}

/// A join that expired: close its connection.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebExpired {
    /// The join's id.
    pub id: u64,
    /// `no-ice-progress` or `not-opened`.
    pub why: &'static str,
}

/// The joins a browser host is connecting, and its round policy.
#[derive(Clone, Debug)]
pub struct WebJoinSlots {
    slots: JoinSlots,
    rounds: RoundPolicy,
    /// The latest time seen: time never goes backwards for the policy.
    now: Duration,
}

impl WebJoinSlots {
    /// The policy from the page's JSON settings (`{}` for the defaults).
    pub fn new(policy_json: &str) -> Result<Self, String> {
        let web: WebJoinPolicy =
            serde_json::from_str(policy_json).map_err(|e| format!("join policy settings: {e}"))?;
        let mut policy = JoinPolicy::default();
        if let Some(ms) = web.connect_deadline_ms {
            if !(ms.is_finite() && ms > 0.0) {
                return Err(format!(
                    "connectDeadlineMs must be a positive number, not {ms}"
                ));
            }
            policy.connect_deadline = millis(ms);
        }
        let guest_seats = web.guest_seats.unwrap_or(0);
        Ok(Self {
            slots: JoinSlots::new(policy),
            rounds: RoundPolicy {
                guest_seats,
                start_when: web.start_when.unwrap_or(guest_seats),
                late_join: web.late_join.unwrap_or(false),
                max_spectators: web.max_spectators.unwrap_or(0),
            },
            now: Duration::ZERO,
        })
    }

    fn advance_clock(&mut self, now_ms: f64) -> Duration {
        self.now = self.now.max(millis(now_ms));
        self.now
    }

    /// When the next round may open, ms (a seat being free).
    pub fn round_opens_at(&mut self, now_ms: f64) -> f64 {
        let now = self.advance_clock(now_ms);
        ms(self.slots.round_opens_at(now))
    }

    /// An answer arrived: its join id, and the join dropped for it.
    pub fn admit(&mut self, now_ms: f64) -> WebAdmission {
        let now = self.advance_clock(now_ms);
        let a = self.slots.admit(now);
        WebAdmission {
            id: a.id.0,
            evicted: a.evicted.map(|j| j.0),
        }
    }

    /// Join `id`'s ICE state reached connected; `false` if it is no longer
    /// in flight.
    pub fn ice_progress(&mut self, id: u64, now_ms: f64) -> bool {
        let now = self.advance_clock(now_ms);
        self.slots.ice_progress(JoinId(id), now)
    }

    /// Join `id` ended on its own; `false` if it had been dropped or had
    /// expired.
    pub fn finished(&mut self, id: u64) -> bool {
        self.slots.finished(JoinId(id))
    }

    /// The joins whose deadline passed: close them.
    pub fn expire(&mut self, now_ms: f64) -> Vec<WebExpired> {
        let now = self.advance_clock(now_ms);
        self.slots
            .expire(now)
            .into_iter()
            .map(|(id, why)| WebExpired {
                id: id.0,
                why: match why {
                    Expiry::NoIceProgress => "no-ice-progress",
                    Expiry::NotOpened => "not-opened",
                },
            })
            .collect()
    }

    /// When to call [`Self::expire`] next, ms; `None` with no join in flight.
    pub fn next_deadline(&self) -> Option<f64> {
        self.slots.next_deadline().map(ms)
    }

    /// Joins in flight.
    pub fn in_flight(&self) -> usize {
        self.slots.in_flight()
    }

    /// Whether a round should be open now, for these seats
    /// (`netcode::host::rounds`).
    pub fn wants_round(&self, seats: Seats) -> bool {
        self.rounds.wants_round(seats)
    }

    /// Whether rounds are served at all, started or not.
    pub fn takes_joiners(&self, started: bool) -> bool {
        self.rounds.takes_joiners(started)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grab_attack_on_the_pages_clock() {
        let mut j = WebJoinSlots::new(r#"{"connectDeadlineMs": 20000}"#).expect("policy");
        for t in [0.0, 10.0, 20.0, 30.0] {
            assert_eq!(j.round_opens_at(t), t);
            assert_eq!(j.admit(t).evicted, None);
        }
        // Four answers without ICE progress: the next round in 1 s, not 20.
        assert_eq!(j.round_opens_at(100.0), 1000.0);
        let a = j.admit(1000.0);
        assert_eq!(a.evicted, Some(1));
        assert!(j.ice_progress(a.id, 1050.0));
        assert_eq!(j.next_deadline(), Some(5010.0));
        let expired = j.expire(5030.0);
        assert_eq!(
            expired.iter().map(|e| (e.id, e.why)).collect::<Vec<_>>(),
            vec![
                (2, "no-ice-progress"),
                (3, "no-ice-progress"),
                (4, "no-ice-progress")
            ]
        );
        assert!(j.finished(a.id));
        assert_eq!(j.in_flight(), 0);
    }

    #[test]
    fn bad_settings_and_clocks_are_refused_or_clamped() {
        assert!(WebJoinSlots::new("nonsense").is_err());
        assert!(WebJoinSlots::new(r#"{"connectDeadlineMs": -1}"#).is_err());
        assert!(WebJoinSlots::new(r#"{"other": 1}"#).is_err());
        let mut j = WebJoinSlots::new("{}").expect("defaults");
        j.admit(5000.0);
        // Time never goes backwards; NaN is the origin, clamped.
        assert_eq!(j.round_opens_at(f64::NAN), 5000.0);
        assert!(!j.finished(99));
        assert!(!j.ice_progress(99, 1.0));
    }
}
