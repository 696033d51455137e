//! What one guest may send a host or a relay: a budget of messages and
//! bytes per second (two token buckets on the session's clock), so a guest
//! that floods is disconnected instead of costing the host without bound.
//! The same budget in the daemon's hosts and relays and in the browser
//! host's worker.
//!
//! A guest in good standing sends about 65 messages a second (its input
//! on the reliable channel and again on the unreliable one at 30 Hz,
//! pongs, hash reports, acks), each well under a kilobyte; the budget is
//! several times that, and its bursts ride out a backlog of several
//! seconds that a stalled link delivers at once.

use std::time::Duration;

/// How much one guest may send.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GuestBudgetPolicy {
    /// Messages a second, sustained.
    pub messages_per_sec: f64,
    /// Messages at once (the bucket's size).
    pub message_burst: f64,
    /// Bytes a second, sustained.
    pub bytes_per_sec: f64,
    /// Bytes at once (the bucket's size; at least one largest message).
    pub byte_burst: f64,
}

impl Default for GuestBudgetPolicy {
    /// 300 messages and 128 KiB a second; bursts of 1,500 messages and
    /// 1 MiB.
    fn default() -> Self {
        Self {
            messages_per_sec: 300.0,
            message_burst: 1_500.0,
            bytes_per_sec: 128.0 * 1024.0,
            byte_burst: 1024.0 * 1024.0,
        }
    }
}

/// One guest's remaining budget.
#[derive(Clone, Copy, Debug)]
pub struct GuestBudget {
    messages: f64,
    bytes: f64,
    at: Duration,
}

impl GuestBudget {
    /// A full budget at `now`.
    pub fn new(policy: &GuestBudgetPolicy, now: Duration) -> Self {
        Self {
            messages: policy.message_burst,
            bytes: policy.byte_burst,
            at: now,
        }
    }

    /// Charges one message of `bytes` at `now`; `false` when it is over the
    /// budget (nothing is charged then).
    pub fn charge(&mut self, policy: &GuestBudgetPolicy, bytes: usize, now: Duration) -> bool {
        let elapsed = now.saturating_sub(self.at).as_secs_f64();
        self.at = self.at.max(now);
        self.messages =
            (self.messages + elapsed * policy.messages_per_sec).min(policy.message_burst);
        self.bytes = (self.bytes + elapsed * policy.bytes_per_sec).min(policy.byte_burst);
        let cost = bytes as f64;
        if self.messages < 1.0 || self.bytes < cost {
            return false;
        }
        self.messages -= 1.0;
        self.bytes -= cost;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn a_guest_in_good_standing_never_runs_out() {
        let p = GuestBudgetPolicy::default();
        let mut b = GuestBudget::new(&p, ms(0));
        // Ten minutes at 30 Hz, two 300-byte inputs a tick, a pong and a
        // hash report a second.
        for tick in 0..(30 * 600u64) {
            let now = ms(tick * 1000 / 30);
            assert!(
                b.charge(&p, 300, now) && b.charge(&p, 300, now),
                "tick {tick}"
            );
            if tick % 30 == 0 {
                assert!(b.charge(&p, 80, now) && b.charge(&p, 120, now));
            }
        }
    }

    #[test]
    fn a_stalled_link_delivering_its_backlog_at_once_is_within_the_burst() {
        let p = GuestBudgetPolicy::default();
        let mut b = GuestBudget::new(&p, ms(0));
        // Five seconds of 65 messages a second, all at one instant.
        for i in 0..(5 * 65) {
            assert!(b.charge(&p, 300, ms(5_000)), "message {i}");
        }
    }

    #[test]
    fn a_flood_runs_out_within_a_bounded_count_and_refills_with_time() {
        let p = GuestBudgetPolicy::default();
        let mut b = GuestBudget::new(&p, ms(0));
        let accepted = (0..100_000).take_while(|_| b.charge(&p, 10, ms(0))).count();
        assert_eq!(accepted, 1_500);
        assert!(!b.charge(&p, 10, ms(0)));
        // A tenth of a second later: 30 more messages.
        let more = (0..100).take_while(|_| b.charge(&p, 10, ms(100))).count();
        assert_eq!(more, 30);
    }

    #[test]
    fn bytes_run_out_before_messages_for_large_ones() {
        let p = GuestBudgetPolicy::default();
        let mut b = GuestBudget::new(&p, ms(0));
        let accepted = (0..1_000)
            .take_while(|_| b.charge(&p, 64 * 1024, ms(0)))
            .count();
        assert_eq!(accepted, 16);
        // Time never runs backwards for the budget.
        assert!(!b.charge(&p, 64 * 1024, Duration::ZERO));
    }
}
