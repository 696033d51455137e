//! What the crate's event handler, the channel pumps and the link handles
//! share, and the pumps themselves.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use ::webrtc::data_channel::{DataChannel, DataChannelEvent, RTCDataChannelInit};
use ::webrtc::peer_connection::{
    PeerConnectionEventHandler, RTCIceGatheringState, RTCPeerConnectionState,
};
use protocol::peer::Channel;
use tokio::sync::{Semaphore, TryAcquireError, mpsc, watch};

use super::{ONE_CHANNEL_CLOSED_GRACE, RECEIVE_QUEUE_MESSAGES};
use crate::transport::{ConnectionState, PeerEvent};

pub(super) fn channel_index(channel: Channel) -> usize {
    match channel {
        Channel::Input => 0,
        Channel::Reconciliation => 1,
        Channel::Unreliable => 2,
    }
}

pub(super) const CHANNELS: [Channel; 3] = Channel::ALL;

/// How `channel` is created: the spec's two reliable and ordered, in band
/// (the host creates them, the guest accepts them); the unreliable one
/// unordered, never retransmitted, negotiated (both sides create it).
pub(super) fn channel_init(channel: Channel) -> RTCDataChannelInit {
    RTCDataChannelInit {
        ordered: channel.reliable(),
        max_retransmits: (!channel.reliable()).then_some(0),
        negotiated: channel.negotiated_id(),
        ..Default::default()
    }
}

/// Set-up progress, written by the handler and the channel pumps.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Progress {
    pub(super) gathered: bool,
    pub(super) open: [bool; 3],
    pub(super) failed: bool,
}

/// What the handler, the channel pumps and the handles share. Holds no
/// reference to the peer connection.
pub(super) struct Shared {
    /// Messages and state changes, in order. The channel itself is
    /// unbounded so state changes never wait; messages are bounded by
    /// `room`.
    pub(super) events: mpsc::UnboundedSender<PeerEvent>,
    /// One permit per message the queue may still take: a pump takes one
    /// before queueing a message, the receiver gives it back on reading it
    /// (and closes it when dropped, so pumps stop waiting).
    pub(super) room: Semaphore,
    /// Messages dropped for not being UTF-8 (logged at powers of two).
    pub(super) non_utf8: AtomicU64,
    /// The last state reported to the receiver.
    pub(super) last_state: std::sync::Mutex<Option<ConnectionState>>,
    /// Set once this side started closing: nothing more is reported.
    pub(super) local_closed: AtomicBool,
    pub(super) progress: watch::Sender<Progress>,
    /// Channel pumps that ended.
    pub(super) pumps_ended: AtomicUsize,
}

impl Shared {
    pub(super) fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<PeerEvent>) {
        let (events, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            events,
            room: Semaphore::new(RECEIVE_QUEUE_MESSAGES),
            non_utf8: AtomicU64::new(0),
            last_state: std::sync::Mutex::new(None),
            local_closed: AtomicBool::new(false),
            progress: watch::channel(Progress::default()).0,
            pumps_ended: AtomicUsize::new(0),
        });
        (shared, rx)
    }

    /// Reports a state change once (duplicates and anything after a
    /// terminal state are dropped).
    pub(super) fn report(&self, state: ConnectionState) {
        if self.local_closed.load(Ordering::SeqCst) {
            return;
        }
        let mut last = self.last_state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(
            *last,
            Some(ConnectionState::Closed) | Some(ConnectionState::Failed)
        ) || *last == Some(state)
        {
            return;
        }
        *last = Some(state);
        let _ = self.events.send(PeerEvent::State(state));
    }

    pub(super) fn is_open(&self, idx: usize) -> bool {
        self.progress.borrow().open[idx]
    }

    /// Queues a received message once the queue has room. Waits while it
    /// is full (the crate then holds further deliveries back, which closes
    /// SCTP's receive window). Once the link is ending (a channel or the
    /// connection closed), the rest is queued without waiting: it is the
    /// peer's last words (the session's end, say), which must come before
    /// the close is reported, and nothing new follows them. Dropped only
    /// when nobody reads any more (the receiver is gone).
    async fn queue_message(&self, channel: Channel, text: String) {
        let queued = match self.room.try_acquire() {
            Ok(permit) => {
                permit.forget();
                true
            }
            // Full: wait for room, or for the link to end.
            Err(TryAcquireError::NoPermits) => {
                let mut progress = self.progress.subscribe();
                tokio::select! {
                    biased;
                    permit = self.room.acquire() => permit.map(|p| p.forget()).is_ok(),
                    _ = progress.wait_for(|p| p.failed) => !self.room.is_closed(),
                }
            }
            Err(TryAcquireError::Closed) => false,
        };
        if queued {
            let _ = self.events.send(PeerEvent::Message(channel, text));
        }
    }

    /// Counts a message that was not UTF-8; logs the 1st, 2nd, 4th, 8th…
    fn dropped_non_utf8(&self, channel: Channel) {
        let n = self.non_utf8.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(
                channel = channel.label(),
                dropped = n,
                "dropped non-UTF-8 messages from this peer"
            );
        }
    }
}

/// The crate's event handler: runs on the connection's driver task, so it
/// only flips flags and pushes into unbounded channels.
pub(super) struct Handler {
    pub(super) shared: Arc<Shared>,
    pub(super) incoming: mpsc::UnboundedSender<Arc<dyn DataChannel>>,
}

#[async_trait::async_trait]
impl PeerConnectionEventHandler for Handler {
    async fn on_ice_gathering_state_change(&self, state: RTCIceGatheringState) {
        if state == RTCIceGatheringState::Complete {
            self.shared.progress.send_modify(|p| p.gathered = true);
        }
    }

    async fn on_connection_state_change(&self, state: RTCPeerConnectionState) {
        tracing::debug!(%state, "peer connection state");
        match state {
            RTCPeerConnectionState::Connected => self.shared.report(ConnectionState::Connected),
            RTCPeerConnectionState::Disconnected => {
                self.shared.report(ConnectionState::Disconnected)
            }
            RTCPeerConnectionState::Failed => self.report_terminal(ConnectionState::Failed),
            RTCPeerConnectionState::Closed => self.report_terminal(ConnectionState::Closed),
            _ => {}
        }
    }

    async fn on_data_channel(&self, data_channel: Arc<dyn DataChannel>) {
        let _ = self.incoming.send(data_channel);
    }
}

impl Handler {
    /// A terminal state of the connection. Set-up waits stop at once, but
    /// the receiver hears of it only after both channel pumps ended (or a
    /// short grace): the handler and the pumps are separate tasks, and a
    /// message the peer sent just before closing (the session's end, say)
    /// must not be overtaken by the close and dropped.
    fn report_terminal(&self, state: ConnectionState) {
        self.shared.progress.send_modify(|p| p.failed = true);
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let mut progress = shared.progress.subscribe();
            let pumps_done =
                progress.wait_for(|_| shared.pumps_ended.load(Ordering::SeqCst) >= CHANNELS.len());
            let _ = tokio::time::timeout(ONE_CHANNEL_CLOSED_GRACE, pumps_done).await;
            shared.report(state);
        });
    }
}

/// Drains one data channel until it ends, forwarding its messages.
pub(super) fn spawn_pump(dc: Arc<dyn DataChannel>, channel: Channel, shared: Arc<Shared>) {
    let idx = channel_index(channel);
    tokio::spawn(async move {
        while let Some(ev) = dc.poll().await {
            match ev {
                DataChannelEvent::OnOpen => shared.progress.send_modify(|p| p.open[idx] = true),
                DataChannelEvent::OnMessage(msg) => match String::from_utf8(msg.data.to_vec()) {
                    Ok(text) => shared.queue_message(channel, text).await,
                    Err(_) => shared.dropped_non_utf8(channel),
                },
                DataChannelEvent::OnClose => break,
                // Buffered-amount events, errors, closing: nothing to do, but
                // keep draining so the driver never holds events back.
                _ => {}
            }
        }
        drop(dc);
        // Counted before the progress change, which wakes whoever waits
        // for both pumps to end.
        let ended = shared.pumps_ended.fetch_add(1, Ordering::SeqCst) + 1;
        shared.progress.send_modify(|p| {
            p.open[idx] = false;
            p.failed = true;
        });
        // The other side closed the channel (or the connection died): the
        // link is over. Reported once every channel ended, so the other
        // channels' last messages come first, or after a short grace when
        // only one did. Not reported when this side closed it.
        if ended >= CHANNELS.len() {
            shared.report(ConnectionState::Closed);
        } else {
            tokio::time::sleep(ONE_CHANNEL_CLOSED_GRACE).await;
            shared.report(ConnectionState::Closed);
        }
    });
}
