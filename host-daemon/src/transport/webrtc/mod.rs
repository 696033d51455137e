//! A real WebRTC transport for the [`crate::transport`] seam, on the
//! `webrtc` crate (pinned at 0.21.1; see "WebRTC transport and signaling
//! client" in `docs/decisions.md`).
//!
//! One peer connection per guest, star topology. The host makes a
//! [`HostOffer`]: it builds the connection, creates the channels (`input`,
//! `reconciliation`, reliable and ordered; `input-unreliable`, unordered
//! with no retransmissions), gathers ICE completely and exposes the offer
//! SDP (non-trickle, ready to publish as a lobby round).
//! [`HostOffer::accept`] applies the joiner's answer and waits until every
//! channel is open. The guest makes a [`GuestAnswer`] from the offer,
//! publishes its complete answer, and [`GuestAnswer::connect`] waits for the
//! host's channels to arrive and open. Both end in a [`WebRtcLink`], a
//! [`PeerLink`] of [`WebRtcSender`] and [`WebRtcReceiver`].
//!
//! How the crate is used, and why:
//!
//! - Multicast DNS is always disabled (with it on, the crate opens a
//!   multicast socket on 5353, which fails inside network namespaces and
//!   leaks `.local` names into the SDP).
//! - Host candidates are exactly the UDP sockets bound: one socket on
//!   [`WebRtcOptions::bind_ip`] per connection (an ephemeral port, or one from
//!   [`WebRtcOptions::udp_ports`]).
//! - Sends use the crate's send-buffer limit (a per-channel
//!   buffered-amount threshold): `send` waits while a channel has more than
//!   [`WebRtcOptions::send_buffer_limit`] bytes unacknowledged. A message
//!   larger than [`WebRtcOptions::max_message_bytes`] is refused (callers
//!   chunk at 16 KiB).
//! - Every data channel is drained by its own task (`dc.poll()` until it
//!   ends), which forwards messages into the receiver's queue. The queue
//!   holds at most [`RECEIVE_QUEUE_MESSAGES`] messages per connection; when
//!   it is full the task waits, the crate stops delivering, and SCTP's
//!   receive window closes on the sender (a flooding peer is slowed, not
//!   buffered without bound, and nothing is dropped). Once the link is
//!   ending (a channel or the connection closed) the pumps stop waiting:
//!   up to [`LAST_WORDS`] more messages are queued, the rest dropped. The
//!   event handler holds no reference to the connection, only channels and
//!   flags, so nothing keeps a closed connection alive.
//! - `close()` flushes what was sent (bounded), closes the channels, then
//!   calls `pc.close()`, which stops the crate's driver task and releases
//!   the socket. A connection whose every handle is dropped without `close()`
//!   is closed from `Drop` (a dropped, unclosed connection would leak its
//!   driver task and socket).

mod connection;
mod link;
mod sdp;
mod setup;
mod shared;

pub use link::{WebRtcReceiver, WebRtcSender};
pub use sdp::rewrite_sdp_address;
pub use setup::{AnsweredOffer, GuestAnswer, HostOffer};

use std::net::{IpAddr, Ipv4Addr};
use std::ops::RangeInclusive;
use std::time::Duration;

use protocol::api::IceServer;
use thiserror::Error;

use crate::transport::PeerLink;

/// Messages received on one connection and not yet read, at most.
pub const RECEIVE_QUEUE_MESSAGES: usize = 256;

/// Messages queued beyond [`RECEIVE_QUEUE_MESSAGES`] once a connection is
/// ending (a channel or the connection closed), at most: the peer's last
/// words, queued without waiting; the rest is dropped.
pub const LAST_WORDS: usize = 256;

/// The SCTP max-message-size this side advertises (the crate's hard cap).
/// The negotiated limit is the smaller of both sides' values.
pub const SCTP_MAX_MESSAGE_SIZE: u32 = 262_144;

/// Largest message [`WebRtcSender::send`] accepts by default: the size
/// every peer accepts when it advertises nothing (RFC 8841's 64 KiB).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 65_536;

/// How long `close()` waits for unacknowledged data to drain before it
/// closes anyway. SCTP's retransmission timer is at least 1 s (`rtc-sctp`
/// RTO_MIN) and doubles per loss, so a lost last packet (the session's end,
/// say) needs 1 s, a lost retransmission 3 s: 10 s rides out three losses
/// in a row. A failed connection stops waiting at once.
const CLOSE_FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a link whose one channel was closed by the other side waits
/// for the other channel before it reports [`ConnectionState::Closed`].
const ONE_CHANNEL_CLOSED_GRACE: Duration = Duration::from_millis(500);

/// Options of one peer connection.
#[derive(Clone, Debug)]
pub struct WebRtcOptions {
    /// The address the connection's UDP socket binds, which is also its only
    /// host candidate. Default `127.0.0.1`. A concrete address is strongly
    /// preferred; a wildcard makes the crate bind one socket per non-loopback
    /// interface.
    pub bind_ip: IpAddr,
    /// UDP ports to bind from (one per connection, the first free one from a
    /// rotating start); `None` for an ephemeral port.
    pub udp_ports: Option<RangeInclusive<u16>>,
    /// STUN/TURN servers (from the lobby's `iceServers`, or configured).
    /// Empty in tests.
    pub ice_servers: Vec<IceServer>,
    /// The address to advertise instead of `bind_ip` (1:1 NAT, e.g. a cloud
    /// host's public IP). Applied by rewriting the local SDP; see
    /// [`rewrite_sdp_address`]. Needs a concrete `bind_ip` (the address
    /// that is rewritten).
    pub public_ip: Option<IpAddr>,
    /// How long ICE gathering may take (no STUN/TURN: about a millisecond).
    pub gather_timeout: Duration,
    /// How long the channels may take to open once the answer is applied
    /// (or, for a guest, once the answer is published).
    pub connect_timeout: Duration,
    /// Per-channel unacknowledged bytes above which `send` waits.
    pub send_buffer_limit: usize,
    /// The largest message `send` accepts.
    pub max_message_bytes: usize,
    /// Silence after which the connection is reported
    /// [`ConnectionState::Disconnected`] (the crate's default: 5 s).
    pub ice_disconnected_timeout: Duration,
    /// Silence after which it is reported [`ConnectionState::Failed`] and
    /// closed (the crate's default: 25 s).
    pub ice_failed_timeout: Duration,
    /// How often ICE keep-alives are sent (the crate's default: 2 s).
    pub ice_keepalive_interval: Duration,
}

impl Default for WebRtcOptions {
    fn default() -> Self {
        Self {
            bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            udp_ports: None,
            ice_servers: Vec::new(),
            public_ip: None,
            gather_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(20),
            send_buffer_limit: 1 << 20,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            ice_disconnected_timeout: Duration::from_secs(5),
            ice_failed_timeout: Duration::from_secs(25),
            ice_keepalive_interval: Duration::from_secs(2),
        }
    }
}

/// Why a connection could not be set up.
#[derive(Debug, Error)]
pub enum WebRtcError {
    /// The `webrtc` crate refused a call (bad SDP, closed connection, ...).
    #[error("webrtc: {0}")]
    Rtc(#[from] ::webrtc::error::Error),
    /// No port of the configured range could be bound.
    #[error("no UDP port free on {ip} in {first}-{last}")]
    NoFreePort {
        /// The bind address.
        ip: IpAddr,
        /// First port of the range.
        first: u16,
        /// Last port of the range.
        last: u16,
    },
    /// ICE gathering did not complete in time (an unreachable STUN/TURN server?).
    #[error("ICE gathering did not complete within {0:?}")]
    GatherTimeout(Duration),
    /// The channels did not open in time (ICE found no working pair, or DTLS failed).
    #[error("the data channels did not open within {0:?} (ICE or DTLS failure)")]
    ConnectTimeout(Duration),
    /// The connection failed or closed before its channels opened.
    #[error("the connection failed before its data channels opened")]
    ConnectFailed,
    /// The connection has no local description after gathering.
    #[error("no local description after ICE gathering")]
    NoLocalDescription,
}

/// A connected peer link over WebRTC.
pub type WebRtcLink = PeerLink<WebRtcSender, WebRtcReceiver>;
