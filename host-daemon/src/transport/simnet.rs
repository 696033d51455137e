//! An in-process simulated network implementing the transport seam, on
//! tokio's clock: the real-time twin of `netcode::sim` (which runs on a
//! virtual clock without drivers). It exercises the drivers, and serves
//! `simulate --realtime` and the capacity benchmark.
//!
//! [`link`] makes one host-guest connection: two endpoints and a
//! [`LinkControl`]. Every direction of every channel has its own delivery
//! task that delays each message by the link's latency plus a seeded jitter
//! draw, but never delivers a message before its predecessor on the same
//! channel (reliable, ordered), except on [`Channel::Unreliable`], where a
//! lost message is dropped and one may overtake another. A stall pauses delivery in both directions
//! and then releases everything in order, as a backgrounded tab or an SCTP
//! retransmit looks. A disconnect drops whatever is in flight and reports
//! [`ConnectionState::Disconnected`] to both ends. An optional tamper hook
//! rewrites messages in flight (tests use it to corrupt chunks or forge
//! inputs). Everything runs on `tokio::time`, so paused-time tests control
//! it, and every random draw comes from the seed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use protocol::peer::Channel;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep_until};

use crate::transport::{
    ConnectionState, PeerEvent, PeerLink, PeerReceiver, PeerSender, TransportError,
};

/// Messages a channel buffers before `send` waits (the high-water mark).
pub const CHANNEL_BUFFER_MESSAGES: usize = 64;

/// Links are configured as in `netcode`'s virtual-time simulator.
pub use netcode::sim::{LinkConfig, Tamper};

/// The sending half of a simulated endpoint.
#[derive(Clone, Debug)]
pub struct SimSender {
    queues: [mpsc::Sender<Item>; 3],
    closing: Arc<AtomicBool>,
    cut: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
}

/// The receiving half of a simulated endpoint.
#[derive(Debug)]
pub struct SimReceiver {
    events: mpsc::UnboundedReceiver<PeerEvent>,
}

/// A simulated endpoint.
pub type SimEndpoint = PeerLink<SimSender, SimReceiver>;

/// Fault injection on a live link.
#[derive(Clone, Debug)]
pub struct LinkControl {
    cut: Arc<AtomicBool>,
    stall_until: Arc<watch::Sender<Instant>>,
    host_events: mpsc::UnboundedSender<PeerEvent>,
    guest_events: mpsc::UnboundedSender<PeerEvent>,
    host_bytes: Arc<AtomicU64>,
}

impl LinkControl {
    /// Pauses delivery both ways for `duration` from now; what was sent
    /// meanwhile is then delivered in order.
    pub fn stall(&self, duration: Duration) {
        self.stall_until.send_replace(Instant::now() + duration);
    }

    /// Cuts the link: in-flight messages are lost, sends fail, both ends see
    /// [`ConnectionState::Disconnected`].
    pub fn disconnect(&self) {
        if !self.cut.swap(true, Ordering::SeqCst) {
            let ev = PeerEvent::State(ConnectionState::Disconnected);
            let _ = self.host_events.send(ev.clone());
            let _ = self.guest_events.send(ev);
        }
    }

    /// Bytes the host end has sent so far.
    pub fn host_bytes_sent(&self) -> u64 {
        self.host_bytes.load(Ordering::Relaxed)
    }

    /// Whether the link has been cut or closed.
    pub fn is_cut(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }
}

/// What travels through a delivery pipe.
#[derive(Debug)]
enum Item {
    Message(Instant, String),
    /// Graceful close: deliver everything before it, then report `Closed`
    /// once every channel has flushed.
    Close,
}

fn channel_index(channel: Channel) -> usize {
    match channel {
        Channel::Input => 0,
        Channel::Reconciliation => 1,
        Channel::Unreliable => 2,
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Pipe {
    latency: Duration,
    jitter: Duration,
    loss: f64,
    retransmit: Duration,
    rng: u64,
    channel: Channel,
    cut: Arc<AtomicBool>,
    stall_until: watch::Receiver<Instant>,
    tamper: Option<Tamper>,
    out: mpsc::UnboundedSender<PeerEvent>,
    flushed: Arc<std::sync::atomic::AtomicUsize>,
}

impl Pipe {
    async fn run(mut self, mut rx: mpsc::Receiver<Item>) {
        let mut last = Instant::now();
        while let Some(item) = rx.recv().await {
            let (sent_at, text) = match item {
                Item::Message(at, text) => (at, text),
                Item::Close => {
                    if self.flushed.fetch_add(1, Ordering::SeqCst) + 1 == Channel::ALL.len()
                        && !self.cut.swap(true, Ordering::SeqCst)
                    {
                        let _ = self.out.send(PeerEvent::State(ConnectionState::Closed));
                    }
                    continue;
                }
            };
            if self.cut.load(Ordering::SeqCst) {
                continue;
            }
            let jitter_ns = u64::try_from(self.jitter.as_nanos()).unwrap_or(u64::MAX);
            let extra = if jitter_ns == 0 {
                0
            } else {
                splitmix(&mut self.rng) % (jitter_ns + 1)
            };
            // Drawn only on lossy links, so lossless runs keep their jitter draws.
            let lost =
                self.loss > 0.0 && (splitmix(&mut self.rng) as f64 / u64::MAX as f64) < self.loss;
            if !self.channel.reliable() {
                if !lost {
                    let due = sent_at + self.latency + Duration::from_nanos(extra);
                    tokio::spawn(self.deliver_alone(due, text));
                }
                continue;
            }
            let resend = if lost {
                self.retransmit
            } else {
                Duration::ZERO
            };
            let due = (sent_at + self.latency + resend + Duration::from_nanos(extra)).max(last);
            sleep_until(due).await;
            loop {
                let until = *self.stall_until.borrow();
                if Instant::now() >= until {
                    break;
                }
                sleep_until(until).await;
            }
            last = Instant::now();
            if self.cut.load(Ordering::SeqCst) {
                continue;
            }
            let text = match &self.tamper {
                Some(t) => t(self.channel, &text),
                None => text,
            };
            if self
                .out
                .send(PeerEvent::Message(self.channel, text))
                .is_err()
            {
                return;
            }
        }
    }
}

impl Pipe {
    /// Delivers one message of the unreliable channel at `due` (after any
    /// stall), whatever comes before or after it.
    fn deliver_alone(&self, due: Instant, text: String) -> impl Future<Output = ()> + use<> {
        let (cut, mut stall_until, tamper, out, channel) = (
            self.cut.clone(),
            self.stall_until.clone(),
            self.tamper.clone(),
            self.out.clone(),
            self.channel,
        );
        async move {
            sleep_until(due).await;
            loop {
                let until = *stall_until.borrow_and_update();
                if Instant::now() >= until {
                    break;
                }
                sleep_until(until).await;
            }
            if cut.load(Ordering::SeqCst) {
                return;
            }
            let text = match &tamper {
                Some(t) => t(channel, &text),
                None => text,
            };
            let _ = out.send(PeerEvent::Message(channel, text));
        }
    }
}

/// Makes one host-guest link: `(host end, guest end, control)`. Both ends
/// start with a [`ConnectionState::Connected`] event. Must run inside a
/// tokio runtime (it spawns the delivery tasks).
pub fn link(config: LinkConfig) -> (SimEndpoint, SimEndpoint, LinkControl) {
    let cut = Arc::new(AtomicBool::new(false));
    let (stall_tx, stall_rx) = watch::channel(Instant::now());
    let (host_ev_tx, host_ev_rx) = mpsc::unbounded_channel();
    let (guest_ev_tx, guest_ev_rx) = mpsc::unbounded_channel();
    let _ = host_ev_tx.send(PeerEvent::State(ConnectionState::Connected));
    let _ = guest_ev_tx.send(PeerEvent::State(ConnectionState::Connected));
    let mut seed = config.seed;
    let mut make_queues = |out: &mpsc::UnboundedSender<PeerEvent>, tamper: &Option<Tamper>| {
        let flushed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        Channel::ALL.map(|channel| {
            let (tx, rx) = mpsc::channel(CHANNEL_BUFFER_MESSAGES);
            let pipe = Pipe {
                latency: config.latency,
                jitter: config.jitter,
                loss: config.loss,
                retransmit: config.retransmit,
                rng: splitmix(&mut seed),
                channel,
                cut: cut.clone(),
                stall_until: stall_rx.clone(),
                tamper: tamper.clone(),
                out: out.clone(),
                flushed: flushed.clone(),
            };
            tokio::spawn(pipe.run(rx));
            tx
        })
    };
    let down = make_queues(&guest_ev_tx, &config.tamper_down);
    let up = make_queues(&host_ev_tx, &config.tamper_up);
    let host_bytes = Arc::new(AtomicU64::new(0));
    let host = PeerLink {
        sender: SimSender {
            queues: down,
            closing: Arc::new(AtomicBool::new(false)),
            cut: cut.clone(),
            bytes: host_bytes.clone(),
        },
        receiver: SimReceiver { events: host_ev_rx },
    };
    let guest = PeerLink {
        sender: SimSender {
            queues: up,
            closing: Arc::new(AtomicBool::new(false)),
            cut: cut.clone(),
            bytes: Arc::new(AtomicU64::new(0)),
        },
        receiver: SimReceiver {
            events: guest_ev_rx,
        },
    };
    let control = LinkControl {
        cut,
        stall_until: Arc::new(stall_tx),
        host_events: host_ev_tx,
        guest_events: guest_ev_tx,
        host_bytes,
    };
    (host, guest, control)
}

impl PeerSender for SimSender {
    async fn send(&self, channel: Channel, text: String) -> Result<(), TransportError> {
        if self.cut.load(Ordering::SeqCst) || self.closing.load(Ordering::SeqCst) {
            return Err(TransportError::NotOpen(channel.label()));
        }
        self.bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
        self.queues[channel_index(channel)]
            .send(Item::Message(Instant::now(), text))
            .await
            .map_err(|_| TransportError::NotOpen(channel.label()))
    }

    fn close(&self) {
        if self.closing.swap(true, Ordering::SeqCst) || self.cut.load(Ordering::SeqCst) {
            return;
        }
        // Graceful: what was sent before is still delivered, then `Closed`.
        for q in &self.queues {
            if q.try_send(Item::Close).is_err() {
                let q = q.clone();
                tokio::spawn(async move {
                    let _ = q.send(Item::Close).await;
                });
            }
        }
    }
}

impl PeerReceiver for SimReceiver {
    async fn recv(&mut self) -> Option<PeerEvent> {
        self.events.recv().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn next_message(r: &mut SimReceiver) -> (Instant, String) {
        loop {
            match r.recv().await {
                Some(PeerEvent::Message(_, t)) => return (Instant::now(), t),
                Some(_) => continue,
                None => panic!("link closed"),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_never_reorders_and_latency_applies() {
        let (host, mut guest, _c) = link(LinkConfig {
            latency: Duration::from_millis(50),
            jitter: Duration::from_millis(200),
            seed: 9,
            ..LinkConfig::default()
        });
        let start = Instant::now();
        for i in 0..40 {
            host.sender
                .send(Channel::Input, i.to_string())
                .await
                .unwrap();
        }
        for i in 0..40 {
            let (at, t) = next_message(&mut guest.receiver).await;
            assert_eq!(t, i.to_string());
            assert!(at - start >= Duration::from_millis(50));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn lost_messages_arrive_a_retransmission_late_in_order_and_bytes_are_counted() {
        let (host, mut guest, control) = link(LinkConfig {
            latency: Duration::from_millis(20),
            loss: 0.1,
            retransmit: Duration::from_millis(300),
            seed: 4,
            ..LinkConfig::default()
        });
        let start = Instant::now();
        for i in 0..60 {
            host.sender
                .send(Channel::Input, format!("{i:03}"))
                .await
                .unwrap();
        }
        assert_eq!(control.host_bytes_sent(), 180);
        let mut last = start;
        for i in 0..60 {
            let (at, t) = next_message(&mut guest.receiver).await;
            assert_eq!(t, format!("{i:03}"));
            assert!(at >= last);
            last = at;
        }
        // At least one of 60 was lost and retransmitted (seeded).
        assert!(
            last - start >= Duration::from_millis(320),
            "{:?}",
            last - start
        );
    }

    #[tokio::test(start_paused = true)]
    async fn stall_holds_then_releases_in_order_and_disconnect_reports() {
        let (host, mut guest, c) = link(LinkConfig::default());
        c.stall(Duration::from_millis(500));
        let start = Instant::now();
        for i in 0..5 {
            host.sender
                .send(Channel::Reconciliation, i.to_string())
                .await
                .unwrap();
        }
        for i in 0..5 {
            let (at, t) = next_message(&mut guest.receiver).await;
            assert_eq!(t, i.to_string());
            assert!(at - start >= Duration::from_millis(500));
        }
        c.disconnect();
        assert!(host.sender.send(Channel::Input, "x".into()).await.is_err());
        assert_eq!(
            guest.receiver.recv().await,
            Some(PeerEvent::State(ConnectionState::Disconnected))
        );
    }
}
