//! What a connection's handles and the endpoint's run loop share: the
//! commands the handles send the loop, the receive queue and its
//! accounting, set-up progress, and state reports.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use protocol::peer::Channel;
use tokio::sync::{mpsc, oneshot, watch};

use super::{LAST_WORDS, RECEIVE_QUEUE_MESSAGES, WebRtcError};
use crate::transport::{ConnectionState, Payload, PeerEvent, TransportError};

/// A connection's id in its endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct ConnId(pub(super) u64);

/// A new connection, as the run loop hands it to its handles.
pub(super) struct Opened {
    pub(super) shared: Arc<Shared>,
    pub(super) events: mpsc::UnboundedReceiver<PeerEvent>,
    /// The offer (host side) or the answer (guest side).
    pub(super) sdp: String,
}

/// What the handles ask of the run loop.
pub(super) enum Command {
    /// A new connection with the three channels and an offer.
    Offer(oneshot::Sender<Result<Opened, WebRtcError>>),
    /// A new connection answering `offer`.
    Answer(String, oneshot::Sender<Result<Opened, WebRtcError>>),
    /// The joiner's answer to a connection's offer.
    ApplyAnswer(ConnId, String, oneshot::Sender<Result<(), WebRtcError>>),
    /// A message on a channel (by index); the reply comes once it is
    /// written (after waiting for room).
    Send(ConnId, usize, Payload, SendReply),
    /// Close one channel (by index), leave the others.
    CloseChannel(ConnId, usize),
    /// Close the connection; the reply (if any) comes once it is closed.
    Close(ConnId, Option<oneshot::Sender<()>>),
    /// The receive queue has room again.
    Resume(ConnId),
}

/// Who hears how a send ended.
pub(super) enum SendReply {
    /// A sender waiting until it is written (the back-pressure).
    Wait(oneshot::Sender<Result<(), TransportError>>),
    /// Nobody: the sender went on at once and counted it in
    /// [`Shared::fired`]; the count goes down once it is written or refused.
    Fired,
}

/// The three channels, by index.
pub(super) const CHANNELS: [Channel; 3] = Channel::ALL;

/// A channel's index in [`CHANNELS`].
pub(super) fn channel_index(channel: Channel) -> usize {
    match channel {
        Channel::Input => 0,
        Channel::Reconciliation => 1,
        Channel::Unreliable => 2,
    }
}

/// Whether the loop hands a connection's next DTLS datagram to `str0m`,
/// given the messages queued and not read, and whether the link is ending
/// (then its last words are taken too). A datagram refused here is held
/// or dropped, and SCTP does not acknowledge what it carried.
pub(super) fn takes_datagram(queued: usize, ending: bool) -> bool {
    let cap = if ending {
        RECEIVE_QUEUE_MESSAGES + LAST_WORDS
    } else {
        RECEIVE_QUEUE_MESSAGES
    };
    queued < cap
}

/// Set-up progress, written by the run loop.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Progress {
    /// ICE found a working pair (the other side's checks arrived and were
    /// answered): the first sign that an answer is a real joiner.
    pub(super) ice_connected: bool,
    /// Which channels are open.
    pub(super) open: [bool; 3],
    /// The connection failed or closed.
    pub(super) failed: bool,
}

/// What the handles and the run loop share about one connection.
pub(super) struct Shared {
    /// The connection's id in its endpoint.
    pub(super) id: ConnId,
    /// The endpoint's commands (the receiver asks it to resume reading).
    pub(super) commands: mpsc::UnboundedSender<Command>,
    /// Messages and state changes, in order. Unbounded so state changes
    /// never wait; messages are bounded by [`takes_datagram`].
    pub(super) events: mpsc::UnboundedSender<PeerEvent>,
    /// Messages queued and not yet read.
    pub(super) queued: AtomicUsize,
    /// The other side closed a channel or the connection: last words only.
    pub(super) ending: AtomicBool,
    /// The loop holds datagrams until the queue has room.
    pub(super) holding: AtomicBool,
    /// The receiver is gone: messages are dropped, nothing waits.
    pub(super) receiver_gone: AtomicBool,
    /// Messages dropped for not being UTF-8 (logged at powers of two).
    pub(super) non_utf8: AtomicU64,
    /// Per channel, sends handed to the run loop without waiting and not
    /// yet written or refused. A sender goes on at once only while this is
    /// zero, so at most one message per channel is ahead of the
    /// back-pressure.
    pub(super) fired: [AtomicUsize; 3],
    /// The last state reported to the receiver.
    last_state: Mutex<Option<ConnectionState>>,
    /// Set once this side started closing: nothing more is reported.
    pub(super) local_closed: AtomicBool,
    pub(super) progress: watch::Sender<Progress>,
    /// The other side's newest proven address.
    remote: Mutex<Option<SocketAddr>>,
}

impl Shared {
    /// The other side's newest proven address (it answered a check).
    pub(super) fn set_remote(&self, addr: SocketAddr) {
        if let Ok(mut r) = self.remote.lock() {
            *r = Some(addr);
        }
    }

    /// The other side's newest proven address, if any.
    pub(super) fn remote(&self) -> Option<SocketAddr> {
        self.remote.lock().ok().and_then(|r| *r)
    }

    pub(super) fn new(
        id: ConnId,
        commands: mpsc::UnboundedSender<Command>,
    ) -> (Self, mpsc::UnboundedReceiver<PeerEvent>) {
        let (events, rx) = mpsc::unbounded_channel();
        let shared = Shared {
            id,
            commands,
            events,
            queued: AtomicUsize::new(0),
            ending: AtomicBool::new(false),
            holding: AtomicBool::new(false),
            receiver_gone: AtomicBool::new(false),
            non_utf8: AtomicU64::new(0),
            fired: Default::default(),
            last_state: Mutex::new(None),
            local_closed: AtomicBool::new(false),
            progress: watch::channel(Progress::default()).0,
            remote: Mutex::new(None),
        };
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

    /// Whether the loop may hand this connection's next DTLS datagram on.
    pub(super) fn takes_datagram(&self) -> bool {
        self.receiver_gone.load(Ordering::Relaxed)
            || takes_datagram(
                self.queued.load(Ordering::SeqCst),
                self.ending.load(Ordering::Relaxed),
            )
    }

    /// Queues a message the other side sent, `binary` or text (the loop
    /// calls this).
    pub(super) fn message(&self, channel: Channel, binary: bool, data: Vec<u8>) {
        if self.receiver_gone.load(Ordering::Relaxed) {
            return;
        }
        let payload = if binary {
            Ok(Payload::Binary(data))
        } else {
            String::from_utf8(data).map(Payload::Text)
        };
        match payload {
            Ok(payload) => {
                self.queued.fetch_add(1, Ordering::SeqCst);
                if self
                    .events
                    .send(PeerEvent::Message(channel, payload))
                    .is_err()
                {
                    self.queued.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(_) => {
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
    }

    /// The receiver read a message: its place in the queue is free again,
    /// and a loop holding datagrams for want of room is asked to go on.
    pub(super) fn message_read(&self) {
        let before = self.queued.fetch_sub(1, Ordering::SeqCst);
        if self.holding.load(Ordering::SeqCst)
            && before <= RECEIVE_QUEUE_MESSAGES
            && self.holding.swap(false, Ordering::SeqCst)
        {
            let _ = self.commands.send(Command::Resume(self.id));
        }
    }

    /// Messages queued and not yet read.
    pub(super) fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24, on the one-socket endpoint: a live link takes datagrams
    /// until its queue is full; an ending one takes its last words on top,
    /// and no more.
    #[test]
    fn an_ending_link_takes_its_last_words_and_no_more() {
        assert!(takes_datagram(0, false));
        assert!(takes_datagram(RECEIVE_QUEUE_MESSAGES - 1, false));
        assert!(!takes_datagram(RECEIVE_QUEUE_MESSAGES, false));
        assert!(takes_datagram(RECEIVE_QUEUE_MESSAGES, true));
        assert!(takes_datagram(
            RECEIVE_QUEUE_MESSAGES + LAST_WORDS - 1,
            true
        ));
        assert!(!takes_datagram(RECEIVE_QUEUE_MESSAGES + LAST_WORDS, true));
    }

    /// Reading a message gives its place back, and a holding loop is asked
    /// to go on exactly once.
    #[test]
    fn reading_frees_room_and_wakes_a_holding_loop_once() {
        let (commands, mut woken) = mpsc::unbounded_channel();
        let (shared, mut rx) = Shared::new(ConnId(7), commands);
        for _ in 0..RECEIVE_QUEUE_MESSAGES {
            shared.message(Channel::Input, false, b"m".to_vec());
        }
        assert!(!shared.takes_datagram());
        shared.holding.store(true, Ordering::SeqCst);
        for _ in 0..3 {
            assert!(rx.try_recv().is_ok());
            shared.message_read();
        }
        assert_eq!(shared.queued(), RECEIVE_QUEUE_MESSAGES - 3);
        assert!(shared.takes_datagram());
        assert!(matches!(woken.try_recv(), Ok(Command::Resume(ConnId(7)))));
        assert!(woken.try_recv().is_err(), "woken once");
        // Not UTF-8: dropped, not queued; the same bytes as a binary
        // message are the session's to judge.
        shared.message(Channel::Input, false, vec![0xff, 0xfe]);
        assert_eq!(shared.queued(), RECEIVE_QUEUE_MESSAGES - 3);
        shared.message(Channel::Input, true, vec![0xff, 0xfe]);
        assert_eq!(shared.queued(), RECEIVE_QUEUE_MESSAGES - 2);
    }
}
