//! The transport seam: what a session needs from one peer connection.
//!
//! A connection is two reliable, ordered channels (`input`,
//! `reconciliation`), one unordered channel that never retransmits
//! (`input-unreliable`), plus connection-state events. It comes as a
//! [`PeerSender`] (cloneable; `send` waits while the channel's buffer is
//! full, which is the backpressure every chunked transfer relies on) and a
//! [`PeerReceiver`] (messages and state changes, in order per reliable
//! channel, as
//! `netcode`'s [`PeerEvent`]s). Drivers never see anything else, so a WebRTC
//! data-channel pair ([`webrtc`]) and the in-process fake ([`simnet`]) plug
//! in the same way.

pub mod simnet;
pub mod webrtc;

use std::future::Future;

pub use netcode::link::{ConnectionState, Payload, PeerEvent};

use protocol::peer::Channel;
use thiserror::Error;

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
    /// high-water mark; fails cleanly on a channel that is not open. A
    /// transport may return before the message is written when nothing of
    /// this sender's waits (one message ahead of the back-pressure at
    /// most); a later failure of that message is then not reported.
    fn send(
        &self,
        channel: Channel,
        payload: Payload,
    ) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Closes the connection; the other side sees [`ConnectionState::Closed`].
    fn close(&self);
}

/// The receiving half of a peer connection.
pub trait PeerReceiver: Send + 'static {
    /// The next event; `None` once the transport is gone for good.
    fn recv(&mut self) -> impl Future<Output = Option<PeerEvent>> + Send;
}

/// One peer connection, both halves.
#[derive(Debug)]
pub struct PeerLink<S, R> {
    /// Sending half.
    pub sender: S,
    /// Receiving half.
    pub receiver: R,
    /// The other side's address, where the transport proved one (a
    /// relay caps and weighs each address's seats by it).
    pub origin: Option<std::net::IpAddr>,
}
