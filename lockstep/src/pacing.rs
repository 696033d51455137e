//! Tick pacing: a fixed-step accumulator on the caller's clock. The host
//! session and the relay pace their ticks with it.

use std::time::Duration;

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// A fixed-rate tick clock: how many ticks are due at a given time, and
/// when the next one is.
#[derive(Clone, Copy, Debug)]
pub struct TickClock {
    rate_hz: u32,
    /// The last time the clock was advanced.
    last: Duration,
    /// Accumulated nanoseconds × the tick rate.
    acc: u128,
}

impl TickClock {
    /// A clock ticking `rate_hz` times a second, its first tick due one
    /// period after `now`.
    pub fn start(rate_hz: u32, now: Duration) -> Self {
        Self {
            rate_hz: rate_hz.max(1),
            last: now,
            acc: 0,
        }
    }

    /// When the next tick is due.
    pub fn next_due(&self) -> Duration {
        let missing =
            (NANOS_PER_SECOND.saturating_sub(self.acc)).div_ceil(u128::from(self.rate_hz));
        self.last + Duration::from_nanos(u64::try_from(missing).unwrap_or(u64::MAX))
    }

    /// Advances the clock to `now` (time never runs backwards: an earlier
    /// `now` adds nothing).
    pub fn advance(&mut self, now: Duration) {
        self.acc += now.saturating_sub(self.last).as_nanos() * u128::from(self.rate_hz);
        self.last = self.last.max(now);
    }

    /// Takes one due tick, if one is due: how late it runs, microseconds.
    pub fn take_due(&mut self) -> Option<u64> {
        if self.acc < NANOS_PER_SECOND {
            return None;
        }
        self.acc -= NANOS_PER_SECOND;
        Some(u64::try_from(self.acc / u128::from(self.rate_hz) / 1000).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_come_at_the_rate_and_late_ones_say_how_late() {
        let mut c = TickClock::start(60, Duration::ZERO);
        assert_eq!(c.next_due(), Duration::from_nanos(16_666_667));
        c.advance(Duration::from_millis(16));
        assert_eq!(c.take_due(), None);
        c.advance(Duration::from_millis(50));
        assert_eq!(c.take_due(), Some(33_333));
        assert_eq!(c.take_due(), Some(16_666));
        assert_eq!(c.take_due(), Some(0));
        assert_eq!(c.take_due(), None);
        c.advance(Duration::from_millis(10));
        assert_eq!(c.take_due(), None, "time running backwards adds nothing");
    }

    #[test]
    fn polled_when_due_it_keeps_the_rate() {
        let mut c = TickClock::start(30, Duration::from_millis(120));
        let mut ticks = 0;
        while c.next_due() < Duration::from_secs(3) {
            c.advance(c.next_due());
            while c.take_due().is_some() {
                ticks += 1;
            }
        }
        assert_eq!(ticks, 86);
    }
}
