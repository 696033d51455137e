//! A real WebRTC transport for the [`crate::transport`] seam, on the
//! sans-IO `str0m` stack: every connection of a process on **one UDP
//! socket** (see "One UDP socket per daemon (issue 27)" in
//! `docs/decisions.md`).
//!
//! An [`Endpoint`] owns the socket and one task, its run loop, which owns
//! every connection's state (a `str0m::Rtc`): it reads datagrams and routes
//! them to their connection (STUN requests by the ICE username fragment,
//! responses by the transaction id of the check they answer, everything
//! else by source address), runs each connection's timers from
//! one ordered set, and carries out what the handles ask (offers, answers,
//! sends, closes) as commands. There is no task, socket or buffer per
//! connection besides what `str0m` keeps.
//!
//! One peer connection per guest, star topology. The serving side (a host
//! or a relay) makes an [`OpenOffer`]: the channels (`input`,
//! `reconciliation`, reliable and ordered; `input-unreliable`, unordered
//! with no retransmissions, negotiated) and the complete offer SDP
//! (non-trickle: the endpoint's one host candidate is in it).
//! [`OpenOffer::accept`] applies the joiner's answer and waits until every
//! channel is open. The guest makes a [`GuestAnswer`] from the offer,
//! publishes its answer, and [`GuestAnswer::connect`] waits for the offer's
//! channels to open. Both end in a [`WebRtcLink`], a [`PeerLink`] of
//! [`WebRtcSender`] and [`WebRtcReceiver`].
//!
//! How it behaves, and why:
//!
//! - The only candidate is the endpoint's address: the bound one, or
//!   [`WebRtcOptions::public_ip`] / [`WebRtcOptions::public_port`] behind a
//!   NAT or a port mapping (packets arriving on the socket are handed to
//!   `str0m` as addressed to the advertised address). No interface is ever
//!   enumerated, and there is no multicast DNS.
//! - Two endpoints that each have one socket cannot carry two connections
//!   between them (DTLS has no connection id, so the address pair is the
//!   only key): a process that connects to the same peer more than once
//!   (a bot that rejoins, a swarm of guests) gives each connection its own
//!   endpoint.
//! - `send` waits while a channel has more than
//!   [`WebRtcOptions::send_buffer_limit`] bytes unacknowledged. A message
//!   larger than [`WebRtcOptions::max_message_bytes`] is refused (callers
//!   chunk at 16 KiB).
//! - Received messages wait in the receiver's queue. Once it holds
//!   [`RECEIVE_QUEUE_MESSAGES`], the loop stops handing that connection's
//!   DTLS datagrams to `str0m` and holds them (up to [`HELD_BYTES`], more
//!   than a well-behaved sender can have in flight: SCTP's window; beyond
//!   that they are dropped and the sender retransmits), so SCTP
//!   acknowledges nothing more and the sender stops once its window is
//!   full. When the queue has room the held datagrams go on in order. A
//!   flooding peer is slowed, not buffered without bound, and nothing is
//!   lost. One datagram can complete several
//!   messages ([`MAX_MESSAGES_PER_DATAGRAM`]), and one that fills a gap
//!   releases what SCTP held back out of order behind it (at most its
//!   receive window, [`SCTP_RECEIVE_WINDOW_BYTES`]): the queue's hard bound
//!   is [`RECEIVE_QUEUE_MESSAGES`] plus those. Once the link is ending (a channel or
//!   the connection closed by the other side) up to [`LAST_WORDS`] more
//!   messages are taken: the peer's last words, which come before the
//!   close is reported.
//! - Only proven peers are served (`sources`): a connection hands the
//!   binding requests of at most a handful of source addresses to `str0m`,
//!   each a few times until the address answers a check of the
//!   connection's own, all within a per-connection budget; an address's
//!   datagrams move to a connection only once proven for it. A joiner who
//!   forges source addresses costs the socket next to nothing, reflects
//!   next to nothing, and cannot take another guest's route. The other
//!   side's SDP is cut to that handful of candidates.
//! - Silence: a connection that heard nothing for
//!   [`WebRtcOptions::ice_disconnected_timeout`] is reported
//!   [`ConnectionState::Disconnected`](crate::transport::ConnectionState),
//!   and after [`WebRtcOptions::ice_failed_timeout`]
//!   [`Failed`](crate::transport::ConnectionState) and dropped. ICE
//!   keep-alives go out at least every
//!   [`WebRtcOptions::ice_keepalive_interval`].
//! - `close()` flushes what was sent (bounded), closes the channels, then
//!   shuts the association down. A connection whose every handle is dropped
//!   without `close()` is closed the same way.

mod conn;
mod endpoint;
mod link;
mod peer;
mod setup;
mod shared;
mod sources;

pub use endpoint::Endpoint;
pub use link::{WebRtcReceiver, WebRtcSender};
pub use setup::{AnsweredOffer, GuestAnswer, OpenOffer};

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use thiserror::Error;

use crate::transport::PeerLink;

/// Messages received on one connection and not yet read, above which the
/// endpoint stops reading that connection's datagrams.
pub const RECEIVE_QUEUE_MESSAGES: usize = 256;

/// Messages one datagram can complete, at most: the endpoint reads
/// datagrams of up to [`MAX_DATAGRAM_BYTES`], and an SCTP DATA chunk takes
/// at least 20 of them. The receive queue's hard bound is
/// [`RECEIVE_QUEUE_MESSAGES`] plus this.
pub const MAX_MESSAGES_PER_DATAGRAM: usize = MAX_DATAGRAM_BYTES / 20;

/// SCTP's receive window in `str0m` (its fixed 1 MiB receive budget): at
/// most this much data waits out of order for a gap to fill, and is
/// released at once when it does.
pub const SCTP_RECEIVE_WINDOW_BYTES: usize = 1 << 20;

/// Messages taken beyond [`RECEIVE_QUEUE_MESSAGES`] once a connection is
/// ending (a channel or the connection closed by the other side), at most:
/// the peer's last words.
pub const LAST_WORDS: usize = 256;

/// Bytes of DTLS datagrams held, per connection, while its receive queue
/// is full: twice SCTP's receive window, which is all a sender that keeps
/// to the protocol can have unacknowledged (plus its retransmissions).
/// Beyond this datagrams are dropped (and retransmitted by the sender).
pub const HELD_BYTES: usize = 2 * SCTP_RECEIVE_WINDOW_BYTES;

/// The largest datagram the endpoint reads (WebRTC peers keep theirs under
/// about 1,200 bytes; anything longer is cut short and fails to decrypt).
pub const MAX_DATAGRAM_BYTES: usize = 2_048;

/// The SCTP max-message-size this side advertises. The negotiated limit is
/// the smaller of both sides' values.
pub const SCTP_MAX_MESSAGE_SIZE: u32 = 262_144;

/// Largest message [`link::WebRtcSender`]'s `send` accepts by default: the size
/// every peer accepts when it advertises nothing (RFC 8841's 64 KiB).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 65_536;

/// How long `close()` waits for unacknowledged data to drain before it
/// closes anyway. SCTP's retransmission timer is at least 1 s and doubles
/// per loss, so a lost last packet (the session's end, say) needs 1 s, a
/// lost retransmission 3 s: 10 s rides out three losses in a row. A failed
/// connection stops waiting at once.
const CLOSE_FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a link whose one channel was closed by the other side waits
/// for the other channels before it reports it closed.
const ONE_CHANNEL_CLOSED_GRACE: Duration = Duration::from_millis(500);

/// RFC 7983: a datagram whose first byte is 0-3 is STUN.
fn is_stun(buf: &[u8]) -> bool {
    buf.first().is_some_and(|b| *b < 4)
}

/// Options of an endpoint and its connections.
#[derive(Clone, Debug)]
pub struct WebRtcOptions {
    /// The address the endpoint's UDP socket binds. Default `127.0.0.1`.
    /// A wildcard (`0.0.0.0`) needs [`Self::public_ip`]: the advertised
    /// candidate must be a concrete address.
    pub bind_ip: IpAddr,
    /// The UDP port the socket binds; 0 for an ephemeral one.
    pub udp_port: u16,
    /// The address to advertise instead of `bind_ip` (1:1 NAT, e.g. a cloud
    /// host's public IP, or a node's address in front of a container).
    pub public_ip: Option<IpAddr>,
    /// The port to advertise instead of the bound one (a port mapping, e.g.
    /// a container's published port or a Service's node port).
    pub public_port: Option<u16>,
    /// How long the channels may take to open once the answer is applied
    /// (or, for a guest, once the answer is published).
    pub connect_timeout: Duration,
    /// Per-channel unacknowledged bytes above which `send` waits.
    pub send_buffer_limit: usize,
    /// The largest message `send` accepts.
    pub max_message_bytes: usize,
    /// Silence after which the connection is reported
    /// [`ConnectionState::Disconnected`](crate::transport::ConnectionState).
    pub ice_disconnected_timeout: Duration,
    /// Silence after which it is reported
    /// [`ConnectionState::Failed`](crate::transport::ConnectionState) and
    /// dropped.
    pub ice_failed_timeout: Duration,
    /// ICE keep-alives go out at least this often.
    pub ice_keepalive_interval: Duration,
}

impl Default for WebRtcOptions {
    fn default() -> Self {
        Self {
            bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            udp_port: 0,
            public_ip: None,
            public_port: None,
            connect_timeout: Duration::from_secs(20),
            send_buffer_limit: 1 << 20,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            ice_disconnected_timeout: Duration::from_secs(5),
            ice_failed_timeout: Duration::from_secs(25),
            ice_keepalive_interval: Duration::from_secs(2),
        }
    }
}

/// Why an endpoint or a connection could not be set up.
#[derive(Debug, Error)]
pub enum WebRtcError {
    /// The UDP socket could not be bound.
    #[error("cannot bind UDP {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The advertised address is not one a candidate can carry (a
    /// wildcard without `public_ip`, a multicast address, ...).
    #[error("cannot advertise {0} as a candidate (a wildcard bind needs --public-ip)")]
    BadCandidate(SocketAddr),
    /// The other side's SDP was refused.
    #[error("the SDP was refused: {0}")]
    Sdp(String),
    /// The channels did not open in time (ICE found no working pair, or DTLS failed).
    #[error("the data channels did not open within {0:?} (ICE or DTLS failure)")]
    ConnectTimeout(Duration),
    /// The connection failed or closed before its channels opened.
    #[error("the connection failed before its data channels opened")]
    ConnectFailed,
    /// The endpoint's run loop is gone (its runtime shut down).
    #[error("the WebRTC endpoint is gone")]
    EndpointGone,
}

/// A connected peer link over WebRTC.
pub type WebRtcLink = PeerLink<WebRtcSender, WebRtcReceiver>;
