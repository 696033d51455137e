//! The impairment model of a simulated link, one for every simulator: the
//! virtual-time [`super::Network`] here and the daemon's real-time simnet
//! both ask it what happens to each message, so one [`LinkConfig`] and
//! seed make the same network in both.
//!
//! Every direction of every channel is its own stream of draws (numbered
//! by `super::network::stream`), so what one channel
//! carries never shifts another channel's draws. A message's fate is its
//! delay (the latency, a jitter draw uniform in `0..=jitter` at microsecond
//! resolution, and the retransmission delay when its first transmission is
//! lost) and whether it was lost. The loss draw is made only on a lossy
//! link, so a lossless link keeps its jitter draws whatever its
//! retransmission delay.

use std::sync::Arc;
use std::time::Duration;

use game_api::rng::Mulberry32;
use protocol::peer::Channel;
use protocol::wire::Payload;

/// Rewrites a message in flight: `(channel, message) -> message`.
pub type Tamper = Arc<dyn Fn(Channel, &Payload) -> Payload + Send + Sync>;

/// A [`Tamper`] that rewrites text messages with `f` and lets binary ones
/// by (a test that edits JSON need not know the compact forms).
pub fn on_text(f: impl Fn(Channel, &str) -> String + Send + Sync + 'static) -> Tamper {
    Arc::new(move |channel, payload| match payload {
        Payload::Text(text) => Payload::Text(f(channel, text)),
        Payload::Binary(_) => payload.clone(),
    })
}

/// One link's behaviour.
#[derive(Clone, Default)]
pub struct LinkConfig {
    /// One-way base latency.
    pub latency: Duration,
    /// Extra one-way delay drawn uniformly from `0..=jitter` per message
    /// (never reordering a reliable channel).
    pub jitter: Duration,
    /// Seed of the jitter and loss draws.
    pub seed: u64,
    /// Probability (0 to 1) that a message's first transmission is lost.
    /// On a reliable channel it still arrives, `retransmit` later, and
    /// everything sent after it on that channel waits behind it, as on an
    /// SCTP data channel; on [`Channel::Unreliable`] it never arrives.
    pub loss: f64,
    /// The extra delay of a lost message (the retransmission).
    pub retransmit: Duration,
    /// Applied to host-to-guest messages.
    pub tamper_down: Option<Tamper>,
    /// Applied to guest-to-host messages.
    pub tamper_up: Option<Tamper>,
}

impl std::fmt::Debug for LinkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkConfig")
            .field("latency", &self.latency)
            .field("jitter", &self.jitter)
            .field("seed", &self.seed)
            .field("loss", &self.loss)
            .field("retransmit", &self.retransmit)
            .finish_non_exhaustive()
    }
}

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
    fn draws_repeat_by_seed_and_stream_and_stay_in_bounds() {
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
