//! The impairment model of a simulated link, one for every simulator: the
//! virtual-time [`super::Network`] here and the daemon's real-time simnet
//! both ask it what happens to each message, so one [`LinkConfig`] and
//! seed make the same network in both.
//!
//! Every direction of every channel is its own stream of draws (stream
//! [`stream`] of the receiving end and the channel), so what one channel
//! carries never shifts another channel's draws. A message's fate is its
//! delay (the latency, a jitter draw uniform in `0..=jitter` at microsecond
//! resolution, and the retransmission delay when its first transmission is
//! lost) and whether it was lost. The loss draw is made only on a lossy
//! link, so a lossless link keeps its jitter draws whatever its
//! retransmission delay.

use std::time::Duration;

use engine::rng::Mulberry32;
use protocol::peer::Channel;

use super::network::{End, LinkConfig};

/// What happens to one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fate {
    /// From sending to arrival, before any ordering wait or stall.
    pub delay: Duration,
    /// Its first transmission was lost: a reliable channel delivers it
    /// `retransmit` late (included in `delay`); the unreliable channel
    /// never delivers it.
    pub lost: bool,
}

/// The stream number of messages arriving at `to` on `channel`.
pub fn stream(to: End, channel: Channel) -> u32 {
    let end = match to {
        End::Host => 0,
        End::Guest => 1,
    };
    let index = Channel::ALL.iter().position(|c| *c == channel).unwrap_or(0);
    end * Channel::ALL.len() as u32 + index as u32
}

/// One stream's draws.
#[derive(Clone, Debug)]
pub struct Impairment {
    latency: Duration,
    jitter_us: u64,
    loss: f64,
    retransmit: Duration,
    rng: Mulberry32,
}

impl Impairment {
    /// The draws of stream `stream` of a link configured by `config`.
    pub fn new(config: &LinkConfig, stream: u32) -> Self {
        let folded = (config.seed ^ (config.seed >> 32)) as u32;
        Impairment {
            latency: config.latency,
            jitter_us: u64::try_from(config.jitter.as_micros()).unwrap_or(u64::MAX),
            loss: config.loss,
            retransmit: config.retransmit,
            rng: Mulberry32::new(folded ^ stream.wrapping_mul(0x9E37_79B9)),
        }
    }

    /// The fate of the stream's next message.
    pub fn draw(&mut self) -> Fate {
        let jitter = if self.jitter_us == 0 {
            0
        } else {
            u64::from(self.rng.next_u32()) % (self.jitter_us + 1)
        };
        let lost =
            self.loss > 0.0 && f64::from(self.rng.next_u32()) / f64::from(u32::MAX) < self.loss;
        let resend = if lost {
            self.retransmit
        } else {
            Duration::ZERO
        };
        Fate {
            delay: self.latency + resend + Duration::from_micros(jitter),
            lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_distinct_and_draws_repeat_by_seed() {
        let mut seen: Vec<u32> = Vec::new();
        for to in [End::Host, End::Guest] {
            for c in Channel::ALL {
                seen.push(stream(to, c));
            }
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 2 * Channel::ALL.len());
        let config = LinkConfig {
            latency: Duration::from_millis(30),
            jitter: Duration::from_millis(20),
            loss: 0.2,
            retransmit: Duration::from_millis(200),
            seed: 5,
            ..LinkConfig::default()
        };
        let fates = |s: u32| {
            let mut i = Impairment::new(&config, s);
            (0..200).map(|_| i.draw()).collect::<Vec<_>>()
        };
        assert_eq!(fates(0), fates(0));
        assert_ne!(fates(0), fates(1));
        let all = fates(3);
        assert!(all.iter().all(|f| f.delay >= config.latency
            && f.delay <= config.latency + config.jitter + config.retransmit));
        let lost = all.iter().filter(|f| f.lost).count();
        assert!((15..=70).contains(&lost), "{lost} of 200 lost");
        assert!(
            all.iter()
                .filter(|f| f.lost)
                .all(|f| f.delay >= config.latency + config.retransmit)
        );
    }
}
