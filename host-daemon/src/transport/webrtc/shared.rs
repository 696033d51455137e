//! What the crate's event handler, the channel pumps and the link handles
//! share, and the pumps themselves.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use ::webrtc::data_channel::{DataChannel, DataChannelEvent, RTCDataChannelInit};
use ::webrtc::peer_connection::{
    PeerConnectionEventHandler, RTCIceConnectionState, RTCIceGatheringState, RTCPeerConnectionState,
};
use protocol::peer::Channel;
use tokio::sync::{Semaphore, TryAcquireError, mpsc, watch};

use super::{LAST_WORDS, ONE_CHANNEL_CLOSED_GRACE, RECEIVE_QUEUE_MESSAGES};
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
    /// ICE found a working pair (the other side's checks arrived and were
    /// answered): the first sign that an answer is a real joiner.
    pub(super) ice_connected: bool,
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
    /// Messages queued without a permit of `room` once the link was
    /// ending (its last words), at most [`LAST_WORDS`]. Reading a message
    /// takes one of these back before it gives `room` a permit.
    pub(super) last_words: AtomicUsize,
    /// Messages dropped because the last words were used up (logged at
    /// powers of two).
    pub(super) past_last_words: AtomicU64,
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
            last_words: AtomicUsize::new(0),
            past_last_words: AtomicU64::new(0),
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
    /// connection closed), up to [`LAST_WORDS`] more are queued without
    /// waiting: the peer's last words (the session's end, say), which must
    /// come before the close is reported. Beyond those, and when nobody
    /// reads any more (the receiver is gone), messages are dropped: a peer
    /// that closes one channel and floods another is still capped.
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
                    _ = progress.wait_for(|p| p.failed) => self.take_last_word(channel),
                }
            }
            Err(TryAcquireError::Closed) => false,
        };
        if queued {
            let _ = self.events.send(PeerEvent::Message(channel, text));
        }
    }

    /// Room for one more message of an ending link, within [`LAST_WORDS`];
    /// counts and logs (at powers of two) a message dropped beyond them.
    fn take_last_word(&self, channel: Channel) -> bool {
        if self.room.is_closed() {
            return false;
        }
        let taken = self
            .last_words
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < LAST_WORDS).then_some(n + 1)
            })
            .is_ok();
        if !taken {
            let n = self.past_last_words.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    channel = channel.label(),
                    dropped = n,
                    "dropped messages from a peer whose link is ending: its queue and last words are full"
                );
            }
        }
        taken
    }

    /// The receiver read a message: its place in the queue is free again.
    pub(super) fn message_read(&self) {
        let last_word = self
            .last_words
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if !last_word {
            self.room.add_permits(1);
        }
    }

    /// Messages queued and not yet read.
    pub(super) fn queued(&self) -> usize {
        RECEIVE_QUEUE_MESSAGES.saturating_sub(self.room.available_permits())
            + self.last_words.load(Ordering::SeqCst)
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

    async fn on_ice_connection_state_change(&self, state: RTCIceConnectionState) {
        if matches!(
            state,
            RTCIceConnectionState::Connected | RTCIceConnectionState::Completed
        ) {
            self.shared.progress.send_modify(|p| p.ice_connected = true);
        }
    }

    async fn on_connection_state_change(&self, state: RTCPeerConnectionState) {
        tracing::debug!(%state, "peer connection state");
        match state {
            RTCPeerConnectionState::Connected => {
                self.shared.progress.send_modify(|p| p.ice_connected = true);
                self.shared.report(ConnectionState::Connected);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24: once a link is ending (here: one channel closed), its
    /// messages are queued without waiting, but only up to the last words;
    /// reading them gives back exactly what they took.
    #[tokio::test]
    async fn an_ending_link_queues_its_last_words_and_drops_the_rest() {
        let (shared, mut rx) = Shared::new();
        for _ in 0..RECEIVE_QUEUE_MESSAGES {
            shared.queue_message(Channel::Input, "m".into()).await;
        }
        shared.progress.send_modify(|p| p.failed = true);
        for _ in 0..10 * LAST_WORDS {
            shared.queue_message(Channel::Input, "m".into()).await;
        }
        let mut queued = 0;
        while rx.try_recv().is_ok() {
            queued += 1;
        }
        assert_eq!(queued, RECEIVE_QUEUE_MESSAGES + LAST_WORDS);
        assert_eq!(shared.queued(), queued);
        assert_eq!(
            shared.past_last_words.load(Ordering::Relaxed),
            9 * LAST_WORDS as u64
        );
        for _ in 0..queued {
            shared.message_read();
        }
        assert_eq!(shared.queued(), 0);
        assert_eq!(shared.room.available_permits(), RECEIVE_QUEUE_MESSAGES);
    }
}
