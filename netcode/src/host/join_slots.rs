//! Joins in flight: the answers a host is connecting, and when it may open
//! the next offer round. One policy for every host (the daemon natively,
//! the browser host through WebAssembly), with time as a value.
//!
//! The lobby gives an open round to the first answer, and anyone may read a
//! round, so a stranger can grab rounds with answers that are valid SDP but
//! never connect. The policy keeps such an answer from holding anything
//! for long:
//!
//! - A new answer always gets a slot. When all
//!   [`JoinPolicy::max_in_flight`] are taken, the oldest join that has shown
//!   no ICE progress is dropped for it (a join that has is never dropped
//!   for a newcomer).
//! - A join must show ICE progress (its connection's ICE state reaches
//!   connected: the joiner's checks arrived and were answered) within
//!   [`JoinPolicy::ice_deadline`], and open its channels within
//!   [`JoinPolicy::open_deadline`] of that and within
//!   [`JoinPolicy::connect_deadline`] of its answer; otherwise it expires.
//! - Joins in flight never stop rounds while a seat is free: a round opens
//!   at once while a slot is free, and otherwise as soon as a join may be
//!   dropped for the next answer, which is [`JoinPolicy::min_hold`] after
//!   the oldest join without ICE progress came in (so each answer gets that
//!   long to show progress, and a burst of answers cannot push out a real
//!   joiner before its checks arrive), or when a join expires.

use std::time::Duration;

/// The join policy's numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinPolicy {
    /// Joins being connected at once (one more only when every one of them
    /// has shown ICE progress).
    pub max_in_flight: usize,
    /// How long a join has to show ICE progress after its answer.
    pub ice_deadline: Duration,
    /// How long a join has to open its channels once ICE progressed.
    pub open_deadline: Duration,
    /// How long a join has to open its channels after its answer, at most.
    pub connect_deadline: Duration,
    /// How long a join without ICE progress is safe from being dropped for
    /// a newer answer.
    pub min_hold: Duration,
}

impl Default for JoinPolicy {
    /// Four joins at once; 5 s to ICE progress (a loopback or LAN join
    /// shows it within milliseconds, a relayed one within about a second),
    /// 10 s from there to open channels (DTLS and SCTP over a lossy link
    /// ride out several retransmissions), 20 s in all; 1 s safe from
    /// eviction.
    fn default() -> Self {
        Self {
            max_in_flight: 4,
            ice_deadline: Duration::from_secs(5),
            open_deadline: Duration::from_secs(10),
            connect_deadline: Duration::from_secs(20),
            min_hold: Duration::from_secs(1),
        }
    }
}

/// One join in flight, as the host's driver names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JoinId(pub u64);

/// What [`JoinSlots::admit`] decided for a new answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    /// The new join: connect it.
    pub id: JoinId,
    /// A join dropped to make room for it: close its connection.
    pub evicted: Option<JoinId>,
}

/// Why a join expired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// No ICE progress within [`JoinPolicy::ice_deadline`].
    NoIceProgress,
    /// ICE progressed, but the channels did not open in time.
    NotOpened,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    id: JoinId,
    admitted: Duration,
    ice: Option<Duration>,
}

impl Slot {
    fn deadline(&self, p: &JoinPolicy) -> (Duration, Expiry) {
        let overall = self.admitted.saturating_add(p.connect_deadline);
        match self.ice {
            None => (
                overall.min(self.admitted.saturating_add(p.ice_deadline)),
                Expiry::NoIceProgress,
            ),
            Some(at) => (
                overall.min(at.saturating_add(p.open_deadline)),
                Expiry::NotOpened,
            ),
        }
    }
}

/// The joins a host is connecting (see the module documentation).
#[derive(Clone, Debug)]
pub struct JoinSlots {
    policy: JoinPolicy,
    /// In admission order.
    slots: Vec<Slot>,
    next_id: u64,
}

impl JoinSlots {
    /// No joins in flight.
    pub fn new(policy: JoinPolicy) -> Self {
        Self {
            policy: JoinPolicy {
                max_in_flight: policy.max_in_flight.max(1),
                ..policy
            },
            slots: Vec::new(),
            next_id: 1,
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &JoinPolicy {
        &self.policy
    }

    /// Joins in flight.
    pub fn in_flight(&self) -> usize {
        self.slots.len()
    }

    /// Whether `id` is still in flight.
    pub fn contains(&self, id: JoinId) -> bool {
        self.slots.iter().any(|s| s.id == id)
    }

    /// When the next round may open, given a seat is free: `now` while a
    /// slot is free or a join may be dropped for the next answer, else the
    /// first time one may be (or one expires). Never later than the
    /// earliest expiry, so joins in flight delay a round, never stop it.
    pub fn round_opens_at(&self, now: Duration) -> Duration {
        if self.slots.len() < self.policy.max_in_flight {
            return now;
        }
        let droppable = self
            .slots
            .iter()
            .filter(|s| s.ice.is_none())
            .map(|s| s.admitted.saturating_add(self.policy.min_hold))
            .min();
        let expiry = self.next_deadline();
        let at = match (droppable, expiry) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(now),
        };
        at.max(now)
    }

    /// A round's answer arrived at `now`: it gets a slot, which may drop
    /// the oldest join without ICE progress when all are taken. A join
    /// still within [`JoinPolicy::min_hold`] of its answer is never
    /// dropped: when every join is progressed or that young (one showed
    /// progress between the round opening and this answer), the new one
    /// goes over the cap, and the next round waits for a slot.
    pub fn admit(&mut self, now: Duration) -> Admission {
        let mut evicted = None;
        let min_hold = self.policy.min_hold;
        if self.slots.len() >= self.policy.max_in_flight
            && let Some(i) = self
                .slots
                .iter()
                .position(|s| s.ice.is_none() && s.admitted.saturating_add(min_hold) <= now)
        {
            evicted = Some(self.slots.remove(i).id);
        }
        let id = JoinId(self.next_id);
        self.next_id += 1;
        self.slots.push(Slot {
            id,
            admitted: now,
            ice: None,
        });
        Admission { id, evicted }
    }

    /// Join `id`'s ICE progressed at `now` (its ICE state reached
    /// connected). `false` for a join no longer in flight.
    pub fn ice_progress(&mut self, id: JoinId, now: Duration) -> bool {
        match self.slots.iter_mut().find(|s| s.id == id) {
            Some(slot) => {
                slot.ice.get_or_insert(now);
                true
            }
            None => false,
        }
    }

    /// Join `id` ended (its channels opened, or it failed): its slot is
    /// free. `false` for a join no longer in flight (dropped or expired).
    pub fn finished(&mut self, id: JoinId) -> bool {
        let before = self.slots.len();
        self.slots.retain(|s| s.id != id);
        self.slots.len() < before
    }

    /// Removes and returns the joins whose deadline passed by `now`: close
    /// their connections.
    pub fn expire(&mut self, now: Duration) -> Vec<(JoinId, Expiry)> {
        let policy = self.policy;
        let mut expired = Vec::new();
        self.slots.retain(|s| {
            let (at, why) = s.deadline(&policy);
            if at <= now {
                expired.push((s.id, why));
                false
            } else {
                true
            }
        });
        expired
    }

    /// The earliest deadline of a join in flight: call [`Self::expire`]
    /// then.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.slots.iter().map(|s| s.deadline(&self.policy).0).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    fn slots() -> JoinSlots {
        JoinSlots::new(JoinPolicy::default())
    }

    #[test]
    fn a_round_opens_at_once_while_a_slot_is_free() {
        let mut j = slots();
        for i in 0..3 {
            assert_eq!(j.round_opens_at(s(i as f64)), s(i as f64));
            assert_eq!(j.admit(s(i as f64)).evicted, None);
        }
        assert_eq!(j.round_opens_at(s(3.0)), s(3.0));
    }

    #[test]
    fn four_junk_answers_delay_the_next_round_by_the_hold_not_the_connect_timeout() {
        let mut j = slots();
        for _ in 0..4 {
            j.admit(s(0.0));
        }
        // The old policy: no round for 20 s. Now: one second.
        assert_eq!(j.round_opens_at(s(0.1)), s(1.0));
        assert_eq!(j.round_opens_at(s(1.5)), s(1.5));
    }

    #[test]
    fn a_new_answer_drops_the_oldest_join_without_ice_progress() {
        let mut j = slots();
        let a = j.admit(s(0.0)).id;
        let b = j.admit(s(0.1)).id;
        let c = j.admit(s(0.2)).id;
        let d = j.admit(s(0.3)).id;
        assert!(j.ice_progress(a, s(0.4)));
        let e = j.admit(s(1.2));
        assert_eq!(
            e.evicted,
            Some(b),
            "a showed progress; b is the oldest without"
        );
        assert!(j.contains(a) && !j.contains(b) && j.contains(c) && j.contains(d));
        assert_eq!(j.in_flight(), 4);
    }

    #[test]
    fn a_join_within_its_hold_is_never_dropped_even_when_the_round_opened_for_an_older_one() {
        let mut j = slots();
        let a = j.admit(s(0.0)).id;
        let b = j.admit(s(0.5)).id;
        let c = j.admit(s(0.7)).id;
        let d = j.admit(s(0.9)).id;
        // The round opens at 1.0 because a may be dropped then; a shows
        // progress just before the answer comes in.
        assert_eq!(j.round_opens_at(s(0.95)), s(1.0));
        assert!(j.ice_progress(a, s(1.005)));
        let e = j.admit(s(1.01));
        assert_eq!(e.evicted, None, "b, c and d are still within their hold");
        assert!([a, b, c, d, e.id].iter().all(|id| j.contains(*id)));
        assert_eq!(j.in_flight(), 5);
        // The next round waits until b may be dropped.
        assert_eq!(j.round_opens_at(s(1.02)), s(1.5));
        assert_eq!(j.admit(s(1.5)).evicted, Some(b));
    }

    #[test]
    fn joins_that_progressed_are_never_dropped_for_a_newcomer() {
        let mut j = slots();
        let ids: Vec<_> = (0..4).map(|_| j.admit(s(0.0)).id).collect();
        for id in &ids {
            j.ice_progress(*id, s(0.2));
        }
        // Full of progressing joins: the round waits for the first expiry
        // (10 s to open after ICE), not forever.
        assert_eq!(j.round_opens_at(s(0.5)), s(10.2));
        let e = j.admit(s(0.5));
        assert_eq!(e.evicted, None);
        assert_eq!(j.in_flight(), 5);
        assert!(ids.iter().all(|id| j.contains(*id)));
    }

    #[test]
    fn a_join_without_ice_progress_expires_at_the_ice_deadline() {
        let mut j = slots();
        let a = j.admit(s(0.0)).id;
        let b = j.admit(s(1.0)).id;
        j.ice_progress(b, s(1.1));
        assert_eq!(j.next_deadline(), Some(s(5.0)));
        assert!(j.expire(s(4.999)).is_empty());
        assert_eq!(j.expire(s(5.0)), vec![(a, Expiry::NoIceProgress)]);
        assert_eq!(j.next_deadline(), Some(s(11.1)));
        assert_eq!(j.expire(s(11.1)), vec![(b, Expiry::NotOpened)]);
        assert_eq!(j.in_flight(), 0);
        assert_eq!(j.next_deadline(), None);
    }

    #[test]
    fn the_connect_deadline_bounds_a_join_that_progressed_late() {
        let mut j = slots();
        let a = j.admit(s(0.0)).id;
        j.ice_progress(a, s(4.9));
        // 4.9 + 10 would be 14.9; the whole connect is capped at 20 s from
        // the answer only when that comes first.
        assert_eq!(j.next_deadline(), Some(s(14.9)));
        let policy = JoinPolicy {
            connect_deadline: s(8.0),
            ..JoinPolicy::default()
        };
        let mut j = JoinSlots::new(policy);
        let a = j.admit(s(0.0)).id;
        j.ice_progress(a, s(4.0));
        assert_eq!(j.next_deadline(), Some(s(8.0)));
    }

    #[test]
    fn finished_and_unknown_joins() {
        let mut j = slots();
        let a = j.admit(s(0.0)).id;
        assert!(j.finished(a));
        assert!(!j.finished(a));
        assert!(!j.ice_progress(a, s(1.0)));
        assert!(!j.ice_progress(JoinId(999), s(1.0)));
        assert_eq!(j.in_flight(), 0);
    }

    /// The attack of issue 24 on a virtual clock: a grabber answers every
    /// round 10 ms after it opens, with answers that never connect; a real
    /// joiner answers one round in the middle, shows ICE progress 50 ms
    /// later and opens its channels 300 ms after that. The real join is
    /// never dropped, and no round ever waits more than the hold.
    #[test]
    fn a_grabber_answering_every_round_never_drops_a_real_joiner() {
        let mut j = slots();
        let mut now = s(0.0);
        let mut real: Option<(JoinId, Duration)> = None;
        let mut real_done = false;
        let mut longest_wait = Duration::ZERO;
        for round in 0..200 {
            if let Some((id, at)) = real
                && !real_done
                && now >= at + s(0.35)
            {
                assert!(j.finished(id), "the real join was dropped before it opened");
                real_done = true;
            }
            for (id, _) in j.expire(now) {
                assert!(real.is_none_or(|(r, _)| r != id), "the real join expired");
            }
            let opens = j.round_opens_at(now);
            longest_wait = longest_wait.max(opens - now);
            now = opens + s(0.01);
            let admitted = j.admit(now);
            if let Some((r, _)) = real
                && !real_done
            {
                assert_ne!(
                    admitted.evicted,
                    Some(r),
                    "round {round}: the real join was dropped"
                );
            }
            if round == 57 {
                real = Some((admitted.id, now));
                j.ice_progress(admitted.id, now + s(0.05));
            }
            assert!(j.in_flight() <= 4);
        }
        assert!(real_done, "the real join never finished");
        assert!(longest_wait <= s(1.0), "a round waited {longest_wait:?}");
    }
}
