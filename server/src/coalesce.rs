//! Host updates paced per session on the lobby feed: at most one update of
//! a session goes out per interval; updates in between are held and merged,
//! so the latest state wins and a burst of host updates costs every
//! subscriber one event per interval, not one per update.
//!
//! The first update after a quiet interval goes out at once (an honest host
//! updating now and then is not delayed); the next ones wait until the
//! interval since it has passed. A session that leaves the listing hands
//! back its held update, to go out before the change that ended it, so an
//! update is never lost nor overtaken by the removal. Time comes in as a
//! value, so the rule is tested without a clock.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

/// Per-session pacing of updates, generic over the session key `K` and the
/// change `C` (merged by the caller's function when one is held already).
pub struct UpdateCoalescer<K, C> {
    interval: Duration,
    sessions: HashMap<K, Paced<C>>,
    /// Held updates by when they fall due.
    due: BTreeSet<(Instant, K)>,
}

/// One session's pacing.
struct Paced<C> {
    /// When its last update went out.
    sent_at: Instant,
    /// An update waiting for `sent_at + interval`, merged with later ones.
    held: Option<C>,
}

impl<K: Hash + Ord + Clone, C> UpdateCoalescer<K, C> {
    /// Pacing with `interval` between two updates of a session (zero: none).
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            sessions: HashMap::new(),
            due: BTreeSet::new(),
        }
    }

    /// An update of `key` at `now`. Returned, to send at once, when the
    /// session's last update went out at least an interval ago; otherwise
    /// held (merged into the one held already, `merge(held, update)`), and
    /// `None`.
    pub fn update(
        &mut self,
        key: K,
        change: C,
        now: Instant,
        merge: impl FnOnce(C, C) -> C,
    ) -> Option<C> {
        if self.interval.is_zero() {
            return Some(change);
        }
        match self.sessions.get_mut(&key) {
            Some(paced) if now < paced.sent_at + self.interval => {
                paced.held = Some(match paced.held.take() {
                    Some(held) => merge(held, change),
                    None => {
                        self.due.insert((paced.sent_at + self.interval, key));
                        change
                    }
                });
                None
            }
            Some(paced) => {
                // Quiet for an interval: nothing can be held (it would have
                // fallen due), but take no chances with ordering.
                let held = paced.held.take();
                if held.is_some() {
                    self.due.remove(&(paced.sent_at + self.interval, key));
                }
                paced.sent_at = now;
                match held {
                    Some(held) => Some(merge(held, change)),
                    None => Some(change),
                }
            }
            None => {
                self.sessions.insert(
                    key,
                    Paced {
                        sent_at: now,
                        held: None,
                    },
                );
                Some(change)
            }
        }
    }

    /// Forgets `key` (its session left the listing); returns its held
    /// update, which must go out before the change that ended the session.
    pub fn end(&mut self, key: &K) -> Option<C> {
        let paced = self.sessions.remove(key)?;
        if paced.held.is_some() {
            self.due
                .remove(&(paced.sent_at + self.interval, key.clone()));
        }
        paced.held
    }

    /// The held updates due at `now`, earliest first; each of their
    /// sessions' pacing starts again at `now`.
    pub fn take_due(&mut self, now: Instant) -> Vec<C> {
        let mut out = Vec::new();
        while let Some((at, _)) = self.due.first() {
            if *at > now {
                break;
            }
            let Some((_, key)) = self.due.pop_first() else {
                break;
            };
            if let Some(paced) = self.sessions.get_mut(&key) {
                if let Some(held) = paced.held.take() {
                    paced.sent_at = now;
                    out.push(held);
                }
            }
        }
        out
    }

    /// When the earliest held update falls due.
    pub fn next_due(&self) -> Option<Instant> {
        self.due.first().map(|(at, _)| *at)
    }

    /// Sessions being paced (each listed session updated at least once).
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Changes in these tests: the states a session went through, merged
    /// by keeping the first and the last.
    fn merge(a: (u32, u32), b: (u32, u32)) -> (u32, u32) {
        (a.0, b.1)
    }

    #[test]
    fn a_burst_goes_out_as_its_first_update_and_then_its_latest_state() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut c = UpdateCoalescer::new(Duration::from_millis(1000));
        assert_eq!(c.update("s", (0, 1), ms(0), merge), Some((0, 1)));
        for i in 1..100u32 {
            assert_eq!(c.update("s", (i, i + 1), ms(u64::from(i) * 5), merge), None);
        }
        assert_eq!(c.next_due(), Some(ms(1000)));
        assert!(c.take_due(ms(999)).is_empty(), "not before the interval");
        assert_eq!(
            c.take_due(ms(1000)),
            vec![(1, 100)],
            "one, merged: the latest wins"
        );
        assert_eq!(c.next_due(), None);
        // The pacing restarts at the release.
        assert_eq!(c.update("s", (100, 101), ms(1500), merge), None);
        assert_eq!(c.take_due(ms(2000)), vec![(100, 101)]);
        // After a quiet interval an update goes out at once.
        assert_eq!(c.update("s", (101, 102), ms(3000), merge), Some((101, 102)));
    }

    #[test]
    fn sessions_are_paced_apart_and_an_ending_session_hands_back_its_held_update() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut c = UpdateCoalescer::new(Duration::from_millis(1000));
        assert!(c.update("a", (0, 1), ms(0), merge).is_some());
        assert!(c.update("b", (0, 1), ms(400), merge).is_some());
        assert!(c.update("a", (1, 2), ms(500), merge).is_none());
        assert!(c.update("b", (1, 2), ms(600), merge).is_none());
        assert_eq!(
            c.end(&"a"),
            Some((1, 2)),
            "the held update, before the removal"
        );
        assert_eq!(c.end(&"a"), None);
        assert_eq!(c.next_due(), Some(ms(1400)), "only b is still held");
        assert_eq!(c.take_due(ms(5000)), vec![(1, 2)]);
        assert_eq!(c.sessions(), 1);
    }

    #[test]
    fn a_zero_interval_holds_nothing() {
        let mut c = UpdateCoalescer::new(Duration::ZERO);
        let now = Instant::now();
        for i in 0..10u32 {
            assert_eq!(c.update("s", (i, i), now, merge), Some((i, i)));
        }
        assert_eq!((c.next_due(), c.sessions()), (None, 0));
    }
}
