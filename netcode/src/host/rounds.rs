//! When a host keeps an offer round open in the lobby: the seat policy and
//! the lobby timings every host follows, the daemon's round loop and the
//! browser host's alike (the browser asks the module).
//!
//! Before the start the lobby fills up to the seats the start waits for;
//! after it, with late join, every guest seat takes joiners; without, none
//! does. Spectators hold no seat: a round stays open for them while their
//! places are not all taken, also once the seats are full or the session
//! has started.

/// How long one answer long-poll waits (the lobby caps it).
pub const ANSWER_POLL_MS: u64 = 20_000;

/// How often a host refreshes its session's TTL besides its answer polls.
pub const REFRESH_EVERY_MS: u64 = 20_000;

/// Pause after a failed lobby call, or a failed offer, before trying again.
pub const RETRY_PAUSE_MS: u64 = 1_000;

/// What of a session the round policy looks at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seats {
    /// The session has started.
    pub started: bool,
    /// Guest seats taken (joiners connected or admitted).
    pub taken: usize,
    /// Spectators watching.
    pub spectators: usize,
}

/// A host's seats, as its round loop sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundPolicy {
    /// Seats for guests (every player but the host's own and its bots).
    pub guest_seats: usize,
    /// Guests the start waits for (at most `guest_seats` count).
    pub start_when: usize,
    /// Joiners are admitted into a running session.
    pub late_join: bool,
    /// Places for spectators.
    pub max_spectators: usize,
}

impl RoundPolicy {
    /// Guest seats open to joiners now.
    pub fn seats_wanted(&self, started: bool) -> usize {
        match (started, self.late_join) {
            (false, _) => self.guest_seats.min(self.start_when),
            (true, true) => self.guest_seats,
            (true, false) => 0,
        }
    }

    /// Whether rounds are served at all: before the start, with late join,
    /// or for spectators.
    pub fn takes_joiners(&self, started: bool) -> bool {
        !started || self.late_join || self.max_spectators > 0
    }

    /// Whether a round should be open now: a seat or a spectator place is
    /// free.
    pub fn wants_round(&self, seats: Seats) -> bool {
        seats.taken < self.seats_wanted(seats.started) || seats.spectators < self.max_spectators
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(late_join: bool, max_spectators: usize) -> RoundPolicy {
        RoundPolicy {
            guest_seats: 3,
            start_when: 2,
            late_join,
            max_spectators,
        }
    }

    fn seats(started: bool, taken: usize, spectators: usize) -> Seats {
        Seats {
            started,
            taken,
            spectators,
        }
    }

    #[test]
    fn the_lobby_fills_to_the_start_then_late_joiners_take_every_seat() {
        let p = policy(true, 0);
        assert!(p.wants_round(seats(false, 1, 0)));
        assert!(
            !p.wants_round(seats(false, 2, 0)),
            "the start waits for two"
        );
        assert!(
            p.wants_round(seats(true, 2, 0)),
            "late join opens the third"
        );
        assert!(!p.wants_round(seats(true, 3, 0)));
        assert!(p.takes_joiners(true));
    }

    #[test]
    fn without_late_join_only_spectators_get_rounds_after_the_start() {
        let closed = policy(false, 0);
        assert!(!closed.takes_joiners(true));
        assert!(!closed.wants_round(seats(true, 0, 0)));
        let watched = policy(false, 2);
        assert!(watched.takes_joiners(true));
        assert!(watched.wants_round(seats(true, 3, 1)));
        assert!(!watched.wants_round(seats(true, 3, 2)));
        assert!(
            watched.wants_round(seats(false, 2, 1)),
            "full seats, a free place"
        );
    }
}
