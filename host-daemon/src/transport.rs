//! The transport seam: what a session needs from one peer connection.
//!
//! A connection is two reliable, ordered channels (`input`,
//! `reconciliation`) plus connection-state events. It comes as a
//! [`PeerSender`] (cloneable; `send` waits while the channel's buffer is
//! full, which is the backpressure every chunked transfer relies on) and a
//! [`PeerReceiver`] (messages and state changes, in order per channel).
//! Sessions never see anything else, so a WebRTC data-channel pair and the
//! [`crate::simnet`] fake plug in the same way.

use std::future::Future;

use protocol::peer::Channel;
use thiserror::Error;

/// A connection's state, as the transport reports it (WebRTC's
/// `connectionState` values that matter to the netcode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionState {
    /// Up (initially, or recovered).
    Connected,
    /// Lost, possibly transiently.
    Disconnected,
    /// Lost for good.
    Failed,
    /// Closed on purpose by the other side.
    Closed,
}

/// What a receiver yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportEvent {
    /// A text message on a channel.
    Message(Channel, String),
    /// The connection's state changed.
    State(ConnectionState),
}

/// Why a send failed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TransportError {
    /// The channel is not open (closed, failed or disconnected).
    #[error("the {0} channel is not open")]
    NotOpen(&'static str),
}

/// The sending half of a peer connection.
pub trait PeerSender: Clone + Send + Sync + 'static {
    /// Sends one message; waits while the channel's buffer is above its
    /// high-water mark; fails cleanly on a channel that is not open.
    fn send(
        &self,
        channel: Channel,
        text: String,
    ) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Closes the connection; the other side sees [`ConnectionState::Closed`].
    fn close(&self);
}

/// The receiving half of a peer connection.
pub trait PeerReceiver: Send + 'static {
    /// The next event; `None` once the transport is gone for good.
    fn recv(&mut self) -> impl Future<Output = Option<TransportEvent>> + Send;
}

/// One peer connection, both halves.
#[derive(Debug)]
pub struct PeerLink<S, R> {
    /// Sending half.
    pub sender: S,
    /// Receiving half.
    pub receiver: R,
}
