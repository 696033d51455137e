//! An in-process simulated network implementing the transport seam, on
//! tokio's clock: the real-time twin of `netcode::sim` (which runs on a
//! virtual clock without drivers). It exercises the drivers, and serves
//! `simulate --realtime` and the capacity benchmark.
//!
//! [`link`] makes one host-guest connection: two endpoints and a
//! [`LinkControl`]. Every direction of every channel has its own delivery
//! task that delays each message as `netcode::sim::Impairment` draws it
//! (the virtual-time simulator's model, stream for stream, so one seed is
//! one network in both), but never delivers a message before its
//! predecessor on the same channel (reliable, ordered), except on
//! [`Channel::Unreliable`], where a lost message is dropped and one may
//! overtake another. A stall pauses delivery in both directions and then
//! releases everything in order, as a backgrounded tab or an SCTP
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
    ConnectionState, Payload, PeerEvent, PeerLink, PeerReceiver, PeerSender, TransportError,
};

/// Messages a channel buffers before `send` waits (the high-water mark).
pub const CHANNEL_BUFFER_MESSAGES: usize = 64;

use netcode::sim::{End, Fate, Impairment, stream};
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
    Message(Instant, Payload),
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

struct Pipe {
    /// This direction and channel's draws (`netcode`'s model).
    draws: Impairment,
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
            let Fate { delay, lost } = self.draws.draw();
            if !self.channel.reliable() {
                if !lost {
                    tokio::spawn(self.deliver_alone(sent_at + delay, text));
                }
                continue;
            }
            let due = (sent_at + delay).max(last);
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
    fn deliver_alone(&self, due: Instant, text: Payload) -> impl Future<Output = ()> + use<> {
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
    let make_queues = |to: End, out: &mpsc::UnboundedSender<PeerEvent>, tamper: &Option<Tamper>| {
        let flushed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        Channel::ALL.map(|channel| {
            let (tx, rx) = mpsc::channel(CHANNEL_BUFFER_MESSAGES);
            let pipe = Pipe {
                draws: Impairment::new(&config, stream(to, channel)),
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
    let down = make_queues(End::Guest, &guest_ev_tx, &config.tamper_down);
    let up = make_queues(End::Host, &host_ev_tx, &config.tamper_up);
    let host_bytes = Arc::new(AtomicU64::new(0));
    let host = PeerLink {
        sender: SimSender {
            queues: down,
            closing: Arc::new(AtomicBool::new(false)),
            cut: cut.clone(),
            bytes: host_bytes.clone(),
        },
        receiver: SimReceiver { events: host_ev_rx },
        origin: None,
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
        origin: None,
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
    async fn send(&self, channel: Channel, text: Payload) -> Result<(), TransportError> {
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

    async fn next_message(r: &mut SimReceiver) -> (Instant, Payload) {
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
                .send(Channel::Input, i.to_string().into())
                .await
                .unwrap();
        }
        for i in 0..40 {
            let (at, t) = next_message(&mut guest.receiver).await;
            assert_eq!(t, Payload::from(i.to_string()));
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
                .send(Channel::Input, format!("{i:03}").into())
                .await
                .unwrap();
        }
        assert_eq!(control.host_bytes_sent(), 180);
        let mut last = start;
        for i in 0..60 {
            let (at, t) = next_message(&mut guest.receiver).await;
            assert_eq!(t, Payload::from(format!("{i:03}")));
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
    async fn one_seed_is_one_network_here_and_in_the_virtual_time_simulator() {
        let config = LinkConfig {
            latency: Duration::from_millis(25),
            jitter: Duration::from_millis(30),
            loss: 0.15,
            retransmit: Duration::from_millis(200),
            seed: 12,
            ..LinkConfig::default()
        };
        for channel in [Channel::Input, Channel::Unreliable] {
            // The virtual-time simulator: when each message arrives (to the
            // millisecond: tokio's timer resolution).
            let mut net = netcode::sim::Network::default();
            let l = net.add_link(config.clone());
            for i in 0..50 {
                net.send(l, End::Host, channel, i.to_string().into(), Duration::ZERO);
            }
            let mut virtual_arrivals = Vec::new();
            while let Some(due) = net.next_due() {
                if let Some(d) = net.pop_due(due)
                    && let PeerEvent::Message(_, text) = d.event
                {
                    // tokio's timers fire on whole milliseconds.
                    let ms = due.as_micros().div_ceil(1000) as u64;
                    virtual_arrivals.push((Duration::from_millis(ms), text));
                }
            }
            // The same link in real time (paused: exact).
            let (host, mut guest, _c) = link(config.clone());
            let start = Instant::now();
            for i in 0..50 {
                host.sender
                    .send(channel, i.to_string().into())
                    .await
                    .unwrap();
            }
            let mut real_arrivals = Vec::new();
            for _ in 0..virtual_arrivals.len() {
                let (at, text) = next_message(&mut guest.receiver).await;
                real_arrivals.push((at - start, text));
            }
            let more =
                tokio::time::timeout(Duration::from_secs(5), next_message(&mut guest.receiver));
            assert!(more.await.is_err(), "the same messages were lost");
            if channel == Channel::Unreliable {
                // Several arrive at one instant; their order there is free.
                virtual_arrivals.sort();
                real_arrivals.sort();
            }
            assert_eq!(real_arrivals, virtual_arrivals, "{channel:?}");
            assert!(virtual_arrivals.len() < 50 || channel.reliable());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn stall_holds_then_releases_in_order_and_disconnect_reports() {
        let (host, mut guest, c) = link(LinkConfig::default());
        c.stall(Duration::from_millis(500));
        let start = Instant::now();
        for i in 0..5 {
            host.sender
                .send(Channel::Reconciliation, i.to_string().into())
                .await
                .unwrap();
        }
        for i in 0..5 {
            let (at, t) = next_message(&mut guest.receiver).await;
            assert_eq!(t, Payload::from(i.to_string()));
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
