//! The connected link's sending and receiving halves.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ::webrtc::data_channel::DataChannel;
use protocol::peer::Channel;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::CLOSE_FLUSH_TIMEOUT;
use super::connection::ClosingPc;
use super::shared::{Shared, channel_index};
use crate::transport::{ConnectionState, PeerEvent, PeerReceiver, PeerSender, TransportError};

/// What the sender and receiver share once connected.
pub(super) struct Inner {
    pub(super) shared: Arc<Shared>,
    pub(super) guard: ClosingPc,
    pub(super) dcs: [Arc<dyn DataChannel>; 3],
    pub(super) max_message_bytes: usize,
    /// Set when this side's close started.
    pub(super) closing: AtomicBool,
    /// Becomes true when this side's close started.
    pub(super) closed: watch::Sender<bool>,
    /// Becomes true when this side's close finished.
    pub(super) close_done: watch::Sender<bool>,
}

impl Inner {
    /// Starts a graceful close in the background; returns at once.
    fn start_close(self: &Arc<Self>) -> Option<tokio::task::JoinHandle<()>> {
        if self.closing.swap(true, Ordering::SeqCst) {
            return None;
        }
        self.closed.send_replace(true);
        let inner = self.clone();
        Some(tokio::spawn(async move { inner.close_now().await }))
    }

    async fn close_now(&self) {
        // Flush: wait (bounded) until what was sent is acknowledged, so the
        // other side gets everything before it sees the channels close.
        let deadline = Instant::now() + CLOSE_FLUSH_TIMEOUT;
        for dc in &self.dcs {
            while Instant::now() < deadline
                && !self.shared.progress.borrow().failed
                && dc.outstanding_bytes().await.unwrap_or(0) > 0
            {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        self.shared.local_closed.store(true, Ordering::SeqCst);
        for dc in &self.dcs {
            let _ = dc.close().await;
        }
        // Give the stream resets a moment to leave before the association goes.
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Err(e) = self.guard.pc.close().await {
            tracing::debug!(error = %e, "closing a peer connection");
        }
        self.close_done.send_replace(true);
    }
}

/// The sending half of a WebRTC link.
#[derive(Clone)]
pub struct WebRtcSender {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for WebRtcSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebRtcSender").finish_non_exhaustive()
    }
}

impl WebRtcSender {
    /// Closes gracefully and waits until the connection is closed (its
    /// driver task stopped, its socket released). Idempotent.
    pub async fn close_and_wait(&self) {
        match self.inner.start_close() {
            Some(handle) => {
                let _ = handle.await;
            }
            None => {
                // Another close is under way: wait for it (it is bounded),
                // and close directly should it not finish.
                let mut done = self.inner.close_done.subscribe();
                let bound = CLOSE_FLUSH_TIMEOUT + Duration::from_secs(5);
                if !matches!(
                    tokio::time::timeout(bound, done.wait_for(|d| *d)).await,
                    Ok(Ok(_))
                ) {
                    let _ = self.inner.guard.pc.close().await;
                }
            }
        }
    }
}

impl PeerSender for WebRtcSender {
    async fn send(&self, channel: Channel, text: String) -> Result<(), TransportError> {
        let idx = channel_index(channel);
        let label = channel.label();
        if self.inner.closing.load(Ordering::SeqCst) || !self.inner.shared.is_open(idx) {
            return Err(TransportError::NotOpen(label));
        }
        if text.len() > self.inner.max_message_bytes {
            tracing::error!(
                channel = label,
                bytes = text.len(),
                max = self.inner.max_message_bytes,
                "refusing a message larger than the data channel's limit"
            );
            return Err(TransportError::NotOpen(label));
        }
        // Waits while the channel's unacknowledged bytes are above the
        // send-buffer limit (the crate's back-pressure).
        self.inner.dcs[idx]
            .send_text(&text)
            .await
            .map_err(|_| TransportError::NotOpen(label))
    }

    fn close(&self) {
        self.inner.start_close();
    }
}

impl WebRtcSender {
    /// Closes one data channel and leaves the others open: what a
    /// misbehaving peer may do (tests use it to play one).
    pub async fn close_channel(&self, channel: Channel) {
        let _ = self.inner.dcs[channel_index(channel)].close().await;
    }
}

/// The receiving half of a WebRTC link.
pub struct WebRtcReceiver {
    pub(super) events: mpsc::UnboundedReceiver<PeerEvent>,
    pub(super) closed: watch::Receiver<bool>,
    pub(super) inner: Arc<Inner>,
    pub(super) done: bool,
}

impl std::fmt::Debug for WebRtcReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebRtcReceiver").finish_non_exhaustive()
    }
}

impl WebRtcReceiver {
    /// Messages received and not yet read: at most
    /// [`super::RECEIVE_QUEUE_MESSAGES`] while the link is up, and
    /// [`super::LAST_WORDS`] more once it is ending.
    pub fn queued_messages(&self) -> usize {
        self.inner.shared.queued()
    }
}

impl Drop for WebRtcReceiver {
    /// Nobody reads any more: channel pumps waiting for room stop waiting.
    fn drop(&mut self) {
        self.inner.shared.room.close();
    }
}

impl PeerReceiver for WebRtcReceiver {
    /// Messages and state changes; `None` once this side closed the link,
    /// or after a terminal state (`Closed`, `Failed`) was reported (the
    /// connection is then closed here too, releasing its socket).
    async fn recv(&mut self) -> Option<PeerEvent> {
        if self.done {
            return None;
        }
        let ev = tokio::select! {
            biased;
            ev = self.events.recv() => ev,
            _ = self.closed.wait_for(|c| *c) => None,
        };
        match ev {
            Some(PeerEvent::Message(..)) => self.inner.shared.message_read(),
            Some(PeerEvent::State(ConnectionState::Closed | ConnectionState::Failed)) => {
                self.done = true;
                self.inner.start_close();
            }
            None => self.done = true,
            Some(_) => {}
        }
        ev
    }
}
