//! What a session hears from one peer connection: messages and connection
//! state changes. Transports (WebRTC, the simulators) translate their own
//! events into these.

use protocol::peer::Channel;
pub use protocol::wire::Payload;

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

/// One event from a peer connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerEvent {
    /// A message on a channel, text or binary.
    Message(Channel, Payload),
    /// The connection's state changed.
    State(ConnectionState),
}
