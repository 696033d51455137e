//! Round-trip time per guest, from `ping`/`pong` on the unreliable channel
//! the redundant inputs ride (issue 15): smoothed as TCP does (RFC 6298: SRTT with gain 1/8, RTTVAR
//! with gain 1/4), so one slow sample moves the estimate a little and the
//! variation is the jitter an input delay must cover.

use std::time::Duration;

use protocol::peer::RoundTripReport;

/// How often a host or relay probes each guest that takes up the `ping`
/// feature.
pub const PING_INTERVAL: Duration = Duration::from_secs(1);

/// Round trips measured back to back after a guest is admitted (the hello
/// exchange counts as the first), so a delay can be fitted before the
/// first level even when the session starts at once.
pub const WARM_UP_SAMPLES: u32 = 5;

/// How long a lobby whose guests are all in waits for their warm-up before
/// it starts anyway (a link that slow gets a large delay either way).
pub const WARM_UP_LIMIT: Duration = Duration::from_secs(2);

/// A ping unanswered this long is given up and a new one goes out: the
/// probes ride the unreliable channel, so a lost ping or pong is never
/// answered (a pong arriving later is ignored). Longer than any round trip
/// a delay can be fitted to.
pub const PING_GIVE_UP: Duration = Duration::from_secs(1);

/// Round trips [`RttEstimate::recent_max`] looks back over (about 16 s
/// at one ping a second).
pub const RECENT_SAMPLES: usize = 16;

/// How far the estimate moves before a ping tells the guest again
/// (`round-trip`): a sixteenth of the round trip last told, and never less
/// than 100 µs, so a steady link costs no bytes after the first pings.
pub const TELL_AGAIN_FRACTION: u32 = 16;

/// The smallest move worth telling, microseconds.
pub const TELL_AGAIN_MIN_US: u64 = 100;

/// Whether `now` differs enough from what the guest was `told` to send it.
pub fn worth_telling(now: &RoundTripReport, told: Option<&RoundTripReport>) -> bool {
    let Some(told) = told else {
        return true;
    };
    let step = (told.rtt_us / u64::from(TELL_AGAIN_FRACTION)).max(TELL_AGAIN_MIN_US);
    now.rtt_us.abs_diff(told.rtt_us) >= step || now.jitter_us.abs_diff(told.jitter_us) >= step
}

/// One link's round-trip estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RttEstimate {
    srtt: Option<Duration>,
    rttvar: Duration,
    min: Option<Duration>,
    samples: u32,
    /// The last [`RECENT_SAMPLES`] round trips, a ring indexed by `samples`.
    recent: [Duration; RECENT_SAMPLES],
}

impl RttEstimate {
    /// Folds in one measured round trip.
    pub fn sample(&mut self, rtt: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let delta = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + delta) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
        self.min = Some(self.min.map_or(rtt, |m| m.min(rtt)));
        self.recent[self.samples as usize % RECENT_SAMPLES] = rtt;
        self.samples = self.samples.saturating_add(1);
    }

    /// The slowest of the last [`RECENT_SAMPLES`] round trips: on a lossy
    /// link, one that waited for a retransmission (in-order delivery holds
    /// everything behind a lost message), which the smoothed figures
    /// forget within a few samples.
    pub fn recent_max(&self) -> Option<Duration> {
        self.recent
            .iter()
            .copied()
            .max()
            .filter(|_| self.samples > 0)
    }

    /// The smoothed round trip, once measured.
    pub fn smoothed(&self) -> Option<Duration> {
        self.srtt
    }

    /// The round-trip variation (mean deviation): the link's jitter.
    pub fn variation(&self) -> Duration {
        self.rttvar
    }

    /// The fastest round trip seen.
    pub fn min(&self) -> Option<Duration> {
        self.min
    }

    /// How many round trips were measured.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// What a ping tells the guest of this estimate (`None` before the
    /// first round trip).
    pub fn report(&self) -> Option<RoundTripReport> {
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.srtt.map(|srtt| RoundTripReport {
            rtt_us: micros(srtt),
            jitter_us: micros(self.rttvar),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_sample_sets_the_estimate_and_later_ones_move_it_by_an_eighth() {
        let mut e = RttEstimate::default();
        assert_eq!(e.smoothed(), None);
        e.sample(Duration::from_millis(100));
        assert_eq!(e.smoothed(), Some(Duration::from_millis(100)));
        assert_eq!(e.variation(), Duration::from_millis(50));
        e.sample(Duration::from_millis(180));
        assert_eq!(e.smoothed(), Some(Duration::from_millis(110)));
        // (3 × 50 + 80) / 4
        assert_eq!(e.variation(), Duration::from_micros(57_500));
        assert_eq!(e.min(), Some(Duration::from_millis(100)));
        assert_eq!(e.samples(), 2);
        assert_eq!(e.recent_max(), Some(Duration::from_millis(180)));
    }

    #[test]
    fn the_report_a_ping_carries_is_the_estimate_in_microseconds() {
        let mut e = RttEstimate::default();
        assert_eq!(e.report(), None);
        e.sample(Duration::from_micros(1_500));
        e.sample(Duration::from_micros(2_300));
        assert_eq!(
            e.report(),
            Some(RoundTripReport {
                // (7 × 1500 + 2300) / 8 and (3 × 750 + 800) / 4
                rtt_us: 1_600,
                jitter_us: 762,
            })
        );
    }

    #[test]
    fn a_guest_is_told_again_only_when_the_estimate_moved() {
        let r = |rtt_us, jitter_us| RoundTripReport { rtt_us, jitter_us };
        assert!(worth_telling(&r(1_000, 100), None), "the first is told");
        let told = r(16_000, 2_000);
        assert!(!worth_telling(&r(16_900, 2_000), Some(&told)));
        assert!(worth_telling(&r(17_000, 2_000), Some(&told)), "a sixteenth");
        assert!(worth_telling(&r(16_000, 1_000), Some(&told)), "the jitter");
        // A fast link: 100 µs at least.
        let near = r(400, 50);
        assert!(!worth_telling(&r(480, 120), Some(&near)));
        assert!(worth_telling(&r(500, 50), Some(&near)));
    }

    #[test]
    fn the_recent_maximum_forgets_a_spike_after_the_window() {
        let mut e = RttEstimate::default();
        assert_eq!(e.recent_max(), None);
        e.sample(Duration::from_millis(400));
        for _ in 0..RECENT_SAMPLES - 1 {
            e.sample(Duration::from_millis(150));
        }
        assert_eq!(e.recent_max(), Some(Duration::from_millis(400)));
        e.sample(Duration::from_millis(150));
        assert_eq!(e.recent_max(), Some(Duration::from_millis(150)));
    }

    #[test]
    fn a_steady_link_converges_with_its_variation_shrinking() {
        let mut e = RttEstimate::default();
        for i in 0..200 {
            // 150 ms ± 10 ms
            e.sample(Duration::from_millis(if i % 2 == 0 { 140 } else { 160 }));
        }
        let srtt = e.smoothed().unwrap();
        assert!(
            srtt.abs_diff(Duration::from_millis(150)) < Duration::from_millis(5),
            "{srtt:?}"
        );
        assert!(
            e.variation() <= Duration::from_millis(20),
            "{:?}",
            e.variation()
        );
        assert_eq!(e.min(), Some(Duration::from_millis(140)));
    }
}
