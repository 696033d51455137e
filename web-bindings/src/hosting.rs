//! `netcode`'s hosting machine ([`Hosting`]) for the browser host
//! (`web/lib/browser-host.js`), with JSON in and out on the page's
//! millisecond clock: the same rounds, join policy and `players` updates
//! as the daemon's round loop.

use std::time::Duration;

use netcode::host::hosting::{Hosting, HostingEvent};
use netcode::host::join_slots::JoinPolicy;
use netcode::host::rounds::RoundPolicy;
use serde::Deserialize;

use crate::guest::millis;

/// The page's settings (every field optional; the policies' defaults
/// otherwise).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebHostingSettings {
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
    /// Players the host brings itself (default 1: the host's own).
    pub local_players: Option<u32>,
    /// The `players` count the lobby entry was created with.
    pub published_players: Option<u32>,
}

/// A browser host's rounds.
#[derive(Clone, Debug)]
pub struct WebHosting {
    hosting: Hosting,
    /// The latest time seen: time never goes backwards for the machine.
    now: Duration,
}

impl WebHosting {
    /// The machine from the page's JSON settings (`{}` for the defaults).
    pub fn new(settings_json: &str) -> Result<Self, String> {
        let web: WebHostingSettings =
            serde_json::from_str(settings_json).map_err(|e| format!("hosting settings: {e}"))?;
        let mut joins = JoinPolicy::default();
        if let Some(ms) = web.connect_deadline_ms {
            if !(ms.is_finite() && ms > 0.0) {
                return Err(format!(
                    "connectDeadlineMs must be a positive number, not {ms}"
                ));
            }
            joins.connect_deadline = millis(ms);
        }
        let guest_seats = web.guest_seats.unwrap_or(0);
        let rounds = RoundPolicy {
            guest_seats,
            start_when: web.start_when.unwrap_or(guest_seats),
            late_join: web.late_join.unwrap_or(false),
            max_spectators: web.max_spectators.unwrap_or(0),
        };
        Ok(Self {
            hosting: Hosting::new(
                rounds,
                joins,
                web.local_players.unwrap_or(1),
                web.published_players,
            ),
            now: Duration::ZERO,
        })
    }

    fn advance_clock(&mut self, now_ms: f64) -> Duration {
        self.now = self.now.max(millis(now_ms));
        self.now
    }

    /// The first commands (JSON array).
    pub fn start(&mut self, now_ms: f64) -> Result<String, String> {
        let now = self.advance_clock(now_ms);
        serde_json::to_string(&self.hosting.start(now)).map_err(|e| e.to_string())
    }

    /// Takes the page's report (a JSON [`HostingEvent`]) and answers the
    /// commands (JSON array); an unreadable or out-of-turn report is an
    /// error and changes nothing.
    pub fn on(&mut self, event_json: &str, now_ms: f64) -> Result<String, String> {
        let event: HostingEvent =
            serde_json::from_str(event_json).map_err(|e| format!("hosting event: {e}"))?;
        let now = self.now.max(millis(now_ms));
        let commands = self.hosting.on(event, now).map_err(|e| e.to_string())?;
        self.now = now;
        serde_json::to_string(&commands).map_err(|e| e.to_string())
    }

    /// When to report a `clock` event if nothing else happens, ms; `None`
    /// when nothing is waited for.
    pub fn next_wake(&self, now_ms: f64) -> Option<f64> {
        let now = self.now.max(millis(now_ms));
        self.hosting
            .next_wake(now)
            .map(|d| d.as_secs_f64() * 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(h: &mut WebHosting, event: &str, now: f64) -> String {
        h.on(event, now).expect("in turn")
    }

    #[test]
    fn the_grab_attack_on_the_pages_clock() {
        let mut h =
            WebHosting::new(r#"{"connectDeadlineMs": 20000, "guestSeats": 3, "lateJoin": true}"#)
                .expect("settings");
        assert_eq!(h.start(0.0).expect("json"), r#"[{"command":"makeOffer"}]"#);
        for (round, t) in [(1, 0.0), (2, 10.0), (3, 20.0), (4, 30.0)] {
            on(&mut h, r#"{"event":"offerMade"}"#, t);
            on(
                &mut h,
                &format!(r#"{{"event":"roundPublished","round":{round}}}"#),
                t,
            );
            let cmds = on(
                &mut h,
                &format!(r#"{{"event":"answered","round":{round}}}"#),
                t,
            );
            assert!(
                cmds.starts_with(&format!(r#"[{{"command":"connect","join":{round}}}"#)),
                "{cmds}"
            );
        }
        // Four answers without ICE progress: the next round in 1 s, not 20.
        assert_eq!(h.next_wake(100.0), Some(1000.0));
        assert_eq!(
            on(&mut h, r#"{"event":"clock"}"#, 1000.0),
            r#"[{"command":"makeOffer"}]"#
        );
        on(&mut h, r#"{"event":"offerMade"}"#, 1000.0);
        on(&mut h, r#"{"event":"roundPublished","round":5}"#, 1000.0);
        assert_eq!(
            on(&mut h, r#"{"event":"answered","round":5}"#, 1000.0),
            r#"[{"command":"dropJoin","join":1,"why":"evicted"},{"command":"connect","join":5}]"#
        );
        // Join 2 may be dropped for a newer answer from 1010 ms: the next
        // round opens.
        assert_eq!(
            on(&mut h, r#"{"event":"iceProgress","join":5}"#, 1050.0),
            r#"[{"command":"makeOffer"}]"#
        );
        on(&mut h, r#"{"event":"offerFailed"}"#, 1050.0);
        // Joins 2-4 showed no ICE progress within 5 s of their answers.
        let expired = on(&mut h, r#"{"event":"clock"}"#, 5030.0);
        for join in [2, 3, 4] {
            assert!(
                expired.contains(&format!(
                    r#"{{"command":"dropJoin","join":{join},"why":"noIceProgress"}}"#
                )),
                "{expired}"
            );
        }
    }

    #[test]
    fn bad_settings_reports_and_clocks_are_refused_or_clamped() {
        assert!(WebHosting::new("nonsense").is_err());
        assert!(WebHosting::new(r#"{"connectDeadlineMs": -1}"#).is_err());
        assert!(WebHosting::new(r#"{"other": 1}"#).is_err());
        let mut h =
            WebHosting::new(r#"{"guestSeats": 1, "publishedPlayers": 1}"#).expect("settings");
        h.start(5000.0).expect("json");
        assert!(h.on("{}", 0.0).unwrap_err().starts_with("hosting event:"));
        assert!(
            h.on(r#"{"event":"noRound"}"#, 0.0)
                .unwrap_err()
                .contains("cannot take")
        );
        // Time never goes backwards; NaN is the origin, clamped.
        assert_eq!(on(&mut h, r#"{"event":"offerFailed"}"#, f64::NAN), "[]");
        assert_eq!(h.next_wake(0.0), Some(6000.0));
        // A time past any clock is clamped, not a panic.
        assert_eq!(
            on(&mut h, r#"{"event":"clock"}"#, 1e300),
            r#"[{"command":"makeOffer"}]"#
        );
    }
}
