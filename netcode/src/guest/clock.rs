//! The guest's estimate of the host's tick clock (the `redundant-inputs`
//! feature, issue 15).
//!
//! The host sends the bundle of tick `T` as it runs tick `T`, 30 times a
//! second. Each bundle that arrives says: the host ran tick `T` at most the
//! one-way delay before now. The earliest-arriving bundles (the smallest
//! `arrival - T / 30 s` over a recent window) pin the host's clock to the
//! guest's with only the link's fastest one-way delay as error, and the
//! estimate runs on between bundles: a bundle held up behind a
//! retransmission stops nothing. The window follows slow drift between the
//! two machines' clocks.

use std::collections::VecDeque;
use std::time::Duration;

use protocol::tick::TICK_RATE_HZ;

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// Arrivals the estimate looks back over (about 4 s of bundles).
const WINDOW: usize = 128;

/// The host's tick clock as this guest sees it, for one level.
#[derive(Debug, Default)]
pub(super) struct HostClock {
    /// Recent `arrival × rate − tick × 1 s` in nanoseconds: when the host
    /// ran tick 0, in the guest's time, scaled by the tick rate.
    offsets: VecDeque<i128>,
    /// The smallest of `offsets`.
    earliest: Option<i128>,
}

impl HostClock {
    /// Forgets everything (a level starts again at tick 0).
    pub(super) fn reset(&mut self) {
        self.offsets.clear();
        self.earliest = None;
    }

    /// The bundle of `tick` arrived at `now`.
    pub(super) fn observe(&mut self, tick: u64, now: Duration) {
        let rate = i128::from(TICK_RATE_HZ);
        let offset = i128::try_from(now.as_nanos()).unwrap_or(i128::MAX) * rate
            - i128::from(tick) * NANOS_PER_SECOND;
        self.offsets.push_back(offset);
        if self.offsets.len() > WINDOW {
            self.offsets.pop_front();
        }
        self.earliest = self.offsets.iter().copied().min();
    }

    /// The tick the host is running at `now` as far as the fastest recent
    /// bundle says (`None` before the first bundle).
    pub(super) fn host_tick(&self, now: Duration) -> Option<u64> {
        let earliest = self.earliest?;
        let scaled = i128::try_from(now.as_nanos()).unwrap_or(i128::MAX) * i128::from(TICK_RATE_HZ);
        let tick = (scaled - earliest).div_euclid(NANOS_PER_SECOND);
        Some(u64::try_from(tick.max(0)).unwrap_or(u64::MAX))
    }

    /// How much later than the fastest recent bundle the recent bundles
    /// arrived on average, ms (`None` before the first bundle): the
    /// link's jitter as this guest sees it.
    pub(super) fn arrival_jitter_ms(&self) -> Option<f64> {
        let earliest = self.earliest?;
        let late: i128 = self.offsets.iter().map(|o| o - earliest).sum();
        let per_bundle = late as f64 / self.offsets.len().max(1) as f64;
        Some(per_bundle / f64::from(TICK_RATE_HZ) / 1e6)
    }

    /// When [`HostClock::host_tick`] reaches `tick` (`None` before the
    /// first bundle).
    pub(super) fn time_of(&self, tick: u64) -> Option<Duration> {
        let earliest = self.earliest?;
        let scaled = i128::from(tick) * NANOS_PER_SECOND + earliest;
        let nanos = (scaled + i128::from(TICK_RATE_HZ) - 1).div_euclid(i128::from(TICK_RATE_HZ));
        Some(Duration::from_nanos(
            u64::try_from(nanos.max(0)).unwrap_or(u64::MAX),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_fastest_bundle_sets_the_clock_and_it_runs_on_between_bundles() {
        let mut c = HostClock::default();
        assert_eq!(c.host_tick(ms(500)), None);
        // Tick 30 ran at 1 s (host time = guest time here); it arrived 80 ms
        // later, tick 31 only 50 ms later (less queueing).
        c.observe(30, ms(1_080));
        assert_eq!(c.host_tick(ms(1_080)), Some(30));
        c.observe(31, ms(1_083) + Duration::from_micros(333));
        // Now the host's tick 31 is pinned to 1,083.3 ms: tick 30 at 1,050 ms.
        assert_eq!(c.host_tick(ms(1_049)), Some(29));
        assert_eq!(c.host_tick(ms(1_051)), Some(30));
        // No bundle for a second: the estimate runs on.
        assert_eq!(c.host_tick(ms(2_051)), Some(60));
        let t = c.time_of(60).unwrap();
        assert_eq!(c.host_tick(t), Some(60));
        assert_eq!(c.host_tick(t - Duration::from_nanos(1)), Some(59));
        c.reset();
        assert_eq!(c.host_tick(ms(2_051)), None);
    }

    #[test]
    fn a_late_burst_does_not_move_the_clock_back() {
        let mut c = HostClock::default();
        for t in 0..30u64 {
            c.observe(t, ms(100) + Duration::from_nanos(t * 1_000_000_000 / 30));
        }
        let before = c.host_tick(ms(1_200));
        // Ticks 30-35 held up 200 ms behind a retransmission, then all at once.
        for t in 30..36u64 {
            c.observe(t, ms(1_300));
        }
        assert_eq!(c.host_tick(ms(1_200)), before);
    }

    #[test]
    fn the_window_forgets_an_old_fast_arrival() {
        let mut c = HostClock::default();
        c.observe(0, ms(10));
        for t in 1..=WINDOW as u64 {
            c.observe(t, ms(50) + Duration::from_nanos(t * 1_000_000_000 / 30));
        }
        // Tick 0's 10 ms has left the window: the clock now says tick 0 ran
        // at 50 ms.
        assert_eq!(c.time_of(0), Some(ms(50)));
        assert_eq!(c.host_tick(ms(83)), Some(0));
        assert_eq!(c.host_tick(ms(84)), Some(1));
    }
}
