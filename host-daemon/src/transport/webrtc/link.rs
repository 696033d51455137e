//! The connected link's sending and receiving halves.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use protocol::peer::Channel;
use tokio::sync::{mpsc, watch};

use super::WebRtcLink;
use super::conn::Conn;
use super::shared::{Command, SendReply, channel_index};
use crate::transport::{
    ConnectionState, Payload, PeerEvent, PeerLink, PeerReceiver, PeerSender, TransportError,
};

/// What the sender and receiver share once connected.
pub(super) struct Inner {
    pub(super) conn: Conn,
    pub(super) max_message_bytes: usize,
    /// Set when this side's close started.
    pub(super) closing: AtomicBool,
    /// Becomes true when this side's close started.
    pub(super) closed: watch::Sender<bool>,
}

impl Inner {
    /// Starts a graceful close; returns at once.
    fn start_close(&self) {
        if !self.closing.swap(true, Ordering::SeqCst) {
            self.closed.send_replace(true);
            self.conn.start_close();
        }
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
    /// Closes gracefully and waits (bounded) until the connection is
    /// closed and gone from its endpoint. Idempotent.
    pub async fn close_and_wait(&self) {
        self.inner.closing.store(true, Ordering::SeqCst);
        self.inner.closed.send_replace(true);
        self.inner.conn.close_and_wait().await;
    }

    /// Closes one data channel and leaves the others open: what a
    /// misbehaving peer may do (tests use it to play one).
    pub async fn close_channel(&self, channel: Channel) {
        let conn = &self.inner.conn;
        let _ = conn.endpoint.commands.send(Command::CloseChannel(
            conn.shared.id,
            channel_index(channel),
        ));
    }
}

impl PeerSender for WebRtcSender {
    async fn send(&self, channel: Channel, text: Payload) -> Result<(), TransportError> {
        let idx = channel_index(channel);
        let label = channel.label();
        let conn = &self.inner.conn;
        if self.inner.closing.load(Ordering::SeqCst) || !conn.shared.is_open(idx) {
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
        let id = conn.shared.id;
        // Nothing of ours is waiting in the run loop: go on at once (the
        // usual case, a message a tick). Otherwise the reply comes once
        // the message is written, after waiting while the channel's
        // unacknowledged bytes are above the limit: the back-pressure.
        let fired = &conn.shared.fired[idx];
        if fired.load(Ordering::SeqCst) == 0 {
            fired.fetch_add(1, Ordering::SeqCst);
            let command = Command::Send(id, idx, text, SendReply::Fired);
            if conn.endpoint.commands.send(command).is_err() {
                fired.fetch_sub(1, Ordering::SeqCst);
                return Err(TransportError::NotOpen(label));
            }
            return Ok(());
        }
        conn.endpoint
            .ask(|r| Command::Send(id, idx, text, SendReply::Wait(r)))
            .await
            .unwrap_or(Err(TransportError::NotOpen(label)))
    }

    fn close(&self) {
        self.inner.start_close();
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
    /// [`super::RECEIVE_QUEUE_MESSAGES`] plus
    /// [`super::MAX_MESSAGES_PER_DATAGRAM`] while the link is up, and
    /// [`super::LAST_WORDS`] more once it is ending.
    pub fn queued_messages(&self) -> usize {
        self.inner.conn.shared.queued()
    }
}

impl Drop for WebRtcReceiver {
    /// Nobody reads any more: messages are dropped, nothing is held.
    fn drop(&mut self) {
        let shared = &self.inner.conn.shared;
        shared.receiver_gone.store(true, Ordering::SeqCst);
        let _ = shared.commands.send(Command::Resume(shared.id));
    }
}

impl PeerReceiver for WebRtcReceiver {
    /// Messages and state changes; `None` once this side closed the link,
    /// or after a terminal state (`Closed`, `Failed`) was reported (the
    /// connection is then closed here too).
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
            Some(PeerEvent::Message(..)) => self.inner.conn.shared.message_read(),
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

/// The connected link over `conn`, reading `events`.
pub(super) fn make_link(conn: Conn, events: mpsc::UnboundedReceiver<PeerEvent>) -> WebRtcLink {
    let (closed, closed_rx) = watch::channel(false);
    let max_message_bytes = conn.endpoint.opts.max_message_bytes;
    let inner = Arc::new(Inner {
        conn,
        max_message_bytes,
        closing: AtomicBool::new(false),
        closed,
    });
    let origin = inner.conn.shared.remote().map(|a| a.ip());
    PeerLink {
        origin,
        sender: WebRtcSender {
            inner: inner.clone(),
        },
        receiver: WebRtcReceiver {
            events,
            closed: closed_rx,
            inner,
            done: false,
        },
    }
}
