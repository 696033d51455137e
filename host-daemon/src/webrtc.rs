//! A real WebRTC transport for the [`crate::transport`] seam, on the
//! `webrtc` crate (pinned at 0.21.1; see `docs/webrtc-notes.md`).
//!
//! One peer connection per guest, star topology. The host makes a
//! [`HostOffer`]: it builds the connection, creates the two channels
//! (`input`, `reconciliation`, reliable and ordered), gathers ICE completely
//! and exposes the offer SDP (non-trickle, ready to publish as a lobby
//! round). [`HostOffer::accept`] applies the joiner's answer and waits until
//! both channels are open. The guest makes a [`GuestAnswer`] from the offer,
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
//!   ends), which forwards messages into the receiver's queue and never
//!   blocks. The event handler holds no reference to the connection, only
//!   channels and flags, so nothing keeps a closed connection alive.
//! - `close()` flushes what was sent (bounded), closes both channels, then
//!   calls `pc.close()`, which stops the crate's driver task and releases
//!   the socket. A connection whose every handle is dropped without `close()`
//!   is closed from `Drop` (a dropped, unclosed connection would leak its
//!   driver task and socket).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use ::webrtc::data_channel::{DataChannel, DataChannelEvent, RTCDataChannelInit};
use ::webrtc::peer_connection::{
    PeerConnection, PeerConnectionBuilder, PeerConnectionEventHandler, RTCConfigurationBuilder,
    RTCIceGatheringState, RTCIceServer, RTCPeerConnectionState, RTCSessionDescription,
    SettingEngineBuilder,
};
use protocol::api::IceServer;
use protocol::peer::Channel;
use rtc::ice::mdns::MulticastDnsMode;
use rtc::peer_connection::configuration::setting_engine::SctpMaxMessageSize;
use thiserror::Error;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, timeout_at};

use crate::transport::{
    ConnectionState, PeerLink, PeerReceiver, PeerSender, TransportError, TransportEvent,
};

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

fn channel_index(channel: Channel) -> usize {
    match channel {
        Channel::Input => 0,
        Channel::Reconciliation => 1,
    }
}

const CHANNELS: [Channel; 2] = [Channel::Input, Channel::Reconciliation];

/// Set-up progress, written by the handler and the channel pumps.
#[derive(Clone, Copy, Debug, Default)]
struct Progress {
    gathered: bool,
    open: [bool; 2],
    failed: bool,
}

/// What the handler, the channel pumps and the handles share. Holds no
/// reference to the peer connection.
struct Shared {
    events: mpsc::UnboundedSender<TransportEvent>,
    /// The last state reported to the receiver.
    last_state: std::sync::Mutex<Option<ConnectionState>>,
    /// Set once this side started closing: nothing more is reported.
    local_closed: AtomicBool,
    progress: watch::Sender<Progress>,
    /// Channel pumps that ended.
    pumps_ended: AtomicUsize,
}

impl Shared {
    fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<TransportEvent>) {
        let (events, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            events,
            last_state: std::sync::Mutex::new(None),
            local_closed: AtomicBool::new(false),
            progress: watch::channel(Progress::default()).0,
            pumps_ended: AtomicUsize::new(0),
        });
        (shared, rx)
    }

    /// Reports a state change once (duplicates and anything after a
    /// terminal state are dropped).
    fn report(&self, state: ConnectionState) {
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
        let _ = self.events.send(TransportEvent::State(state));
    }

    fn is_open(&self, idx: usize) -> bool {
        self.progress.borrow().open[idx]
    }
}

/// The crate's event handler: runs on the connection's driver task, so it
/// only flips flags and pushes into unbounded channels.
struct Handler {
    shared: Arc<Shared>,
    incoming: mpsc::UnboundedSender<Arc<dyn DataChannel>>,
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
            RTCPeerConnectionState::Failed => {
                self.shared.progress.send_modify(|p| p.failed = true);
                self.shared.report(ConnectionState::Failed);
            }
            RTCPeerConnectionState::Closed => {
                self.shared.progress.send_modify(|p| p.failed = true);
                self.shared.report(ConnectionState::Closed);
            }
            _ => {}
        }
    }

    async fn on_data_channel(&self, data_channel: Arc<dyn DataChannel>) {
        let _ = self.incoming.send(data_channel);
    }
}

/// Drains one data channel until it ends, forwarding its messages.
fn spawn_pump(dc: Arc<dyn DataChannel>, channel: Channel, shared: Arc<Shared>) {
    let idx = channel_index(channel);
    tokio::spawn(async move {
        while let Some(ev) = dc.poll().await {
            match ev {
                DataChannelEvent::OnOpen => shared.progress.send_modify(|p| p.open[idx] = true),
                DataChannelEvent::OnMessage(msg) => match String::from_utf8(msg.data.to_vec()) {
                    Ok(text) => {
                        let _ = shared.events.send(TransportEvent::Message(channel, text));
                    }
                    Err(_) => {
                        tracing::warn!(channel = channel.label(), "dropped a non-UTF-8 message")
                    }
                },
                DataChannelEvent::OnClose => break,
                // Buffered-amount events, errors, closing: nothing to do, but
                // keep draining so the driver never holds events back.
                _ => {}
            }
        }
        drop(dc);
        shared.progress.send_modify(|p| {
            p.open[idx] = false;
            p.failed = true;
        });
        // The other side closed the channel (or the connection died): the
        // link is over. Reported once both channels ended, so the other
        // channel's last messages come first, or after a short grace when
        // only one did. Not reported when this side closed it.
        if shared.pumps_ended.fetch_add(1, Ordering::SeqCst) + 1 >= CHANNELS.len() {
            shared.report(ConnectionState::Closed);
        } else {
            tokio::time::sleep(ONE_CHANNEL_CLOSED_GRACE).await;
            shared.report(ConnectionState::Closed);
        }
    });
}

/// A peer connection that is closed when dropped, unless it already was.
struct ClosingPc {
    pc: Arc<dyn PeerConnection>,
    shared: Arc<Shared>,
}

impl Drop for ClosingPc {
    fn drop(&mut self) {
        if self.shared.local_closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let pc = self.pc.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    let _ = pc.close().await;
                });
            }
            Err(_) => tracing::warn!("a WebRTC connection was dropped outside a runtime unclosed"),
        }
    }
}

static PORT_CURSOR: AtomicUsize = AtomicUsize::new(0);

fn to_rtc_ice_servers(servers: &[IceServer]) -> Vec<RTCIceServer> {
    servers
        .iter()
        .map(|s| RTCIceServer {
            urls: s.urls.clone(),
            username: s.username.clone().unwrap_or_default(),
            credential: s.credential.clone().unwrap_or_default(),
        })
        .collect()
}

async fn build_one(
    opts: &WebRtcOptions,
    addr: SocketAddr,
    handler: Arc<Handler>,
) -> Result<Arc<dyn PeerConnection>, ::webrtc::error::Error> {
    let setting = SettingEngineBuilder::new()
        .with_multicast_dns_mode(MulticastDnsMode::Disabled)
        .with_sctp_max_message_size(SctpMaxMessageSize::Bounded(SCTP_MAX_MESSAGE_SIZE))
        .with_ice_timeouts(
            Some(opts.ice_disconnected_timeout),
            Some(opts.ice_failed_timeout),
            Some(opts.ice_keepalive_interval),
        )
        .build();
    let config = RTCConfigurationBuilder::new()
        .with_ice_servers(to_rtc_ice_servers(&opts.ice_servers))
        .build();
    let pc = PeerConnectionBuilder::new()
        .with_configuration(config)
        .with_setting_engine(setting)
        .with_handler(handler)
        .with_udp_addrs(vec![addr])
        .with_data_channel_send_buffer_limit(opts.send_buffer_limit.max(1))
        .build()
        .await?;
    Ok(Arc::new(pc))
}

/// Builds a peer connection bound as the options say.
async fn build_pc(
    opts: &WebRtcOptions,
    handler: Arc<Handler>,
) -> Result<Arc<dyn PeerConnection>, WebRtcError> {
    let Some(range) = opts.udp_ports.clone() else {
        return Ok(build_one(opts, SocketAddr::new(opts.bind_ip, 0), handler).await?);
    };
    let (first, last) = (*range.start(), *range.end());
    let len = usize::from(last.saturating_sub(first)) + 1;
    let start = PORT_CURSOR.fetch_add(1, Ordering::Relaxed) % len;
    for i in 0..len {
        // Bounded: one pass over the range.
        let port = first + u16::try_from((start + i) % len).unwrap_or(0);
        let addr = SocketAddr::new(opts.bind_ip, port);
        // Probe first, so a busy port costs a bind, not a connection build.
        if std::net::UdpSocket::bind(addr).is_err() {
            continue;
        }
        match build_one(opts, addr, handler.clone()).await {
            Ok(pc) => {
                PORT_CURSOR.store(start + i + 1, Ordering::Relaxed);
                return Ok(pc);
            }
            Err(e) => tracing::debug!(%addr, error = %e, "port taken, trying the next"),
        }
    }
    Err(WebRtcError::NoFreePort {
        ip: opts.bind_ip,
        first,
        last,
    })
}

/// Waits until gathering completes; returns the local SDP, rewritten for
/// [`WebRtcOptions::public_ip`].
async fn gathered_sdp(
    pc: &Arc<dyn PeerConnection>,
    shared: &Shared,
    opts: &WebRtcOptions,
) -> Result<String, WebRtcError> {
    let mut progress = shared.progress.subscribe();
    let deadline = Instant::now() + opts.gather_timeout;
    match timeout_at(deadline, progress.wait_for(|p| p.gathered)).await {
        Ok(Ok(_)) => {}
        Ok(Err(_)) => return Err(WebRtcError::ConnectFailed),
        Err(_) => return Err(WebRtcError::GatherTimeout(opts.gather_timeout)),
    }
    let desc = pc
        .local_description()
        .await
        .ok_or(WebRtcError::NoLocalDescription)?;
    Ok(match opts.public_ip {
        Some(public) => rewrite_sdp_address(&desc.sdp, opts.bind_ip, public),
        None => desc.sdp,
    })
}

/// Waits until both channels are open, the connection fails, or the deadline.
async fn wait_open(shared: &Shared, connect_timeout: Duration) -> Result<(), WebRtcError> {
    let mut progress = shared.progress.subscribe();
    let deadline = Instant::now() + connect_timeout;
    match timeout_at(
        deadline,
        progress.wait_for(|p| p.failed || (p.open[0] && p.open[1])),
    )
    .await
    {
        Ok(Ok(p)) if !p.failed => Ok(()),
        Ok(_) => Err(WebRtcError::ConnectFailed),
        Err(_) => Err(WebRtcError::ConnectTimeout(connect_timeout)),
    }
}

fn make_link(
    guard: ClosingPc,
    dcs: [Arc<dyn DataChannel>; 2],
    events: mpsc::UnboundedReceiver<TransportEvent>,
    opts: &WebRtcOptions,
) -> WebRtcLink {
    // Both channels open means the connection is up, whatever order the
    // handler's state change and the channel openings came in.
    guard.shared.report(ConnectionState::Connected);
    let (closed_tx, closed_rx) = watch::channel(false);
    let inner = Arc::new(Inner {
        shared: guard.shared.clone(),
        guard,
        dcs,
        max_message_bytes: opts.max_message_bytes,
        closing: AtomicBool::new(false),
        closed: closed_tx,
        close_done: watch::channel(false).0,
    });
    PeerLink {
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

/// The host's side of one connection before a joiner answered: the
/// connection exists, both channels are created, ICE gathering is complete.
pub struct HostOffer {
    guard: ClosingPc,
    dcs: [Arc<dyn DataChannel>; 2],
    events: mpsc::UnboundedReceiver<TransportEvent>,
    offer: String,
    opts: WebRtcOptions,
}

impl std::fmt::Debug for HostOffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOffer").finish_non_exhaustive()
    }
}

impl HostOffer {
    /// Builds a connection, creates the `input` and `reconciliation`
    /// channels (reliable, ordered) and gathers ICE completely.
    pub async fn new(opts: &WebRtcOptions) -> Result<Self, WebRtcError> {
        let (shared, events) = Shared::new();
        let (incoming, _) = mpsc::unbounded_channel();
        let handler = Arc::new(Handler {
            shared: shared.clone(),
            incoming,
        });
        let pc = build_pc(opts, handler).await?;
        let guard = ClosingPc { pc, shared };
        let mut dcs = Vec::with_capacity(2);
        for channel in CHANNELS {
            let init = RTCDataChannelInit {
                ordered: true,
                ..Default::default()
            };
            let dc = guard
                .pc
                .create_data_channel(channel.label(), Some(init))
                .await?;
            spawn_pump(dc.clone(), channel, guard.shared.clone());
            dcs.push(dc);
        }
        let offer = guard.pc.create_offer(None).await?;
        guard.pc.set_local_description(offer).await?;
        let offer = gathered_sdp(&guard.pc, &guard.shared, opts).await?;
        let dcs: [Arc<dyn DataChannel>; 2] = [dcs[0].clone(), dcs[1].clone()];
        Ok(HostOffer {
            guard,
            dcs,
            events,
            offer,
            opts: opts.clone(),
        })
    }

    /// The complete offer SDP, candidates included.
    pub fn offer_sdp(&self) -> &str {
        &self.offer
    }

    /// Applies the joiner's answer and waits until both channels are open.
    /// On failure the connection is closed.
    pub async fn accept(self, answer_sdp: &str) -> Result<WebRtcLink, WebRtcError> {
        let answer = RTCSessionDescription::answer(answer_sdp.to_owned())?;
        if let Err(e) = self.guard.pc.set_remote_description(answer).await {
            self.close().await;
            return Err(e.into());
        }
        if let Err(e) = wait_open(&self.guard.shared, self.opts.connect_timeout).await {
            self.close().await;
            return Err(e);
        }
        Ok(make_link(self.guard, self.dcs, self.events, &self.opts))
    }

    /// Gives the offer up (nobody answered): closes the connection.
    pub async fn close(self) {
        close_pc(&self.guard).await;
    }
}

/// The guest's side of one connection: the host's offer is applied, the
/// answer is complete.
pub struct GuestAnswer {
    guard: ClosingPc,
    incoming: mpsc::UnboundedReceiver<Arc<dyn DataChannel>>,
    events: mpsc::UnboundedReceiver<TransportEvent>,
    answer: String,
    opts: WebRtcOptions,
}

impl std::fmt::Debug for GuestAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestAnswer").finish_non_exhaustive()
    }
}

impl GuestAnswer {
    /// Builds a connection, applies the host's offer, and gathers the
    /// complete answer.
    pub async fn new(opts: &WebRtcOptions, offer_sdp: &str) -> Result<Self, WebRtcError> {
        let offer = RTCSessionDescription::offer(offer_sdp.to_owned())?;
        let (shared, events) = Shared::new();
        let (incoming_tx, incoming) = mpsc::unbounded_channel();
        let handler = Arc::new(Handler {
            shared: shared.clone(),
            incoming: incoming_tx,
        });
        let pc = build_pc(opts, handler).await?;
        let guard = ClosingPc { pc, shared };
        guard.pc.set_remote_description(offer).await?;
        let answer = guard.pc.create_answer(None).await?;
        guard.pc.set_local_description(answer).await?;
        let answer = gathered_sdp(&guard.pc, &guard.shared, opts).await?;
        Ok(GuestAnswer {
            guard,
            incoming,
            events,
            answer,
            opts: opts.clone(),
        })
    }

    /// The complete answer SDP, candidates included.
    pub fn answer_sdp(&self) -> &str {
        &self.answer
    }

    /// Waits (once the answer is published) for the host's two channels to
    /// arrive and open. On failure the connection is closed.
    pub async fn connect(mut self) -> Result<WebRtcLink, WebRtcError> {
        let deadline = Instant::now() + self.opts.connect_timeout;
        let mut found: [Option<Arc<dyn DataChannel>>; 2] = [None, None];
        let mut progress = self.guard.shared.progress.subscribe();
        while found.iter().any(Option::is_none) {
            let next = timeout_at(deadline, async {
                tokio::select! {
                    dc = self.incoming.recv() => dc,
                    _ = progress.wait_for(|p| p.failed) => None,
                }
            })
            .await;
            let dc = match next {
                Ok(Some(dc)) => dc,
                Ok(None) => {
                    close_pc(&self.guard).await;
                    return Err(WebRtcError::ConnectFailed);
                }
                Err(_) => {
                    close_pc(&self.guard).await;
                    return Err(WebRtcError::ConnectTimeout(self.opts.connect_timeout));
                }
            };
            let label = dc.label().await.unwrap_or_default();
            match CHANNELS.iter().find(|c| c.label() == label) {
                Some(&channel) if found[channel_index(channel)].is_none() => {
                    spawn_pump(dc.clone(), channel, self.guard.shared.clone());
                    found[channel_index(channel)] = Some(dc);
                }
                _ => {
                    tracing::warn!(%label, "ignoring an unexpected data channel");
                    let _ = dc.close().await;
                }
            }
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        let [Some(input), Some(recon)] = found else {
            close_pc(&self.guard).await;
            return Err(WebRtcError::ConnectTimeout(self.opts.connect_timeout));
        };
        if let Err(e) = wait_open(&self.guard.shared, remaining).await {
            close_pc(&self.guard).await;
            return Err(match e {
                WebRtcError::ConnectTimeout(_) => {
                    WebRtcError::ConnectTimeout(self.opts.connect_timeout)
                }
                e => e,
            });
        }
        Ok(make_link(
            self.guard,
            [input, recon],
            self.events,
            &self.opts,
        ))
    }

    /// Gives up: closes the connection.
    pub async fn close(self) {
        close_pc(&self.guard).await;
    }
}

async fn close_pc(guard: &ClosingPc) {
    guard.shared.local_closed.store(true, Ordering::SeqCst);
    if let Err(e) = guard.pc.close().await {
        tracing::debug!(error = %e, "closing a peer connection");
    }
}

/// What the sender and receiver share once connected.
struct Inner {
    shared: Arc<Shared>,
    guard: ClosingPc,
    dcs: [Arc<dyn DataChannel>; 2],
    max_message_bytes: usize,
    /// Set when this side's close started.
    closing: AtomicBool,
    /// Becomes true when this side's close started.
    closed: watch::Sender<bool>,
    /// Becomes true when this side's close finished.
    close_done: watch::Sender<bool>,
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
    inner: Arc<Inner>,
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

/// The receiving half of a WebRTC link.
pub struct WebRtcReceiver {
    events: mpsc::UnboundedReceiver<TransportEvent>,
    closed: watch::Receiver<bool>,
    inner: Arc<Inner>,
    done: bool,
}

impl std::fmt::Debug for WebRtcReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebRtcReceiver").finish_non_exhaustive()
    }
}

impl PeerReceiver for WebRtcReceiver {
    /// Messages and state changes; `None` once this side closed the link,
    /// or after a terminal state (`Closed`, `Failed`) was reported (the
    /// connection is then closed here too, releasing its socket).
    async fn recv(&mut self) -> Option<TransportEvent> {
        if self.done {
            return None;
        }
        let ev = tokio::select! {
            biased;
            ev = self.events.recv() => ev,
            _ = self.closed.wait_for(|c| *c) => None,
        };
        match ev {
            Some(TransportEvent::State(ConnectionState::Closed | ConnectionState::Failed)) => {
                self.done = true;
                self.inner.start_close();
            }
            None => self.done = true,
            Some(_) => {}
        }
        ev
    }
}

/// Rewrites the advertised address `from` to `to` in an SDP: the
/// connection address of every `a=candidate` line and the `c=` lines. Used
/// behind a 1:1 NAT, where the socket is bound to a private address but
/// peers must dial the public one (the crate's own NAT 1:1 setting is
/// stored but not applied in 0.21.1). With `from` unspecified (a wildcard
/// bind, as in a container whose own address is not known in advance),
/// every host candidate and every `c=` address is rewritten.
pub fn rewrite_sdp_address(sdp: &str, from: IpAddr, to: IpAddr) -> String {
    let (from_s, to_s) = (from.to_string(), to.to_string());
    let any = from.is_unspecified();
    let family = if to.is_ipv4() { "IP4" } else { "IP6" };
    let mut out = String::with_capacity(sdp.len() + 16);
    for line in sdp.split_inclusive('\n') {
        let body = line.trim_end_matches(['\r', '\n']);
        let ending = &line[body.len()..];
        if body.starts_with("a=candidate:") {
            let mut fields: Vec<&str> = body.split(' ').collect();
            let host = fields.get(7) == Some(&"host");
            if fields.get(4) == Some(&from_s.as_str()) || (any && host) {
                fields[4] = &to_s;
            }
            out.push_str(&fields.join(" "));
        } else if let Some(rest) = body.strip_prefix("c=IN ") {
            match rest.split_once(' ') {
                Some((_, addr)) if addr == from_s || any => {
                    out.push_str(&format!("c=IN {family} {to_s}"));
                }
                _ => out.push_str(body),
            }
        } else {
            out.push_str(body);
        }
        out.push_str(ending);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_candidates_and_connection_lines_only_for_the_bind_address() {
        let sdp = "v=0\r\nc=IN IP4 10.0.0.5\r\n\
            a=candidate:1 1 udp 2130706431 10.0.0.5 50000 typ host\r\n\
            a=candidate:2 1 udp 1694498815 9.9.9.9 50001 typ srflx raddr 10.0.0.5 rport 50000\r\n\
            a=sctp-port:5000\r\n";
        let out = rewrite_sdp_address(
            sdp,
            "10.0.0.5".parse().unwrap(),
            "203.0.113.7".parse().unwrap(),
        );
        assert_eq!(
            out,
            "v=0\r\nc=IN IP4 203.0.113.7\r\n\
            a=candidate:1 1 udp 2130706431 203.0.113.7 50000 typ host\r\n\
            a=candidate:2 1 udp 1694498815 9.9.9.9 50001 typ srflx raddr 10.0.0.5 rport 50000\r\n\
            a=sctp-port:5000\r\n"
        );
    }

    #[test]
    fn a_wildcard_bind_rewrites_every_host_candidate() {
        let sdp = "c=IN IP4 172.18.0.4\r\n\
            a=candidate:1 1 udp 2130706431 172.18.0.4 40000 typ host\r\n\
            a=candidate:2 1 udp 2130706431 10.1.0.9 40000 typ host\r\n\
            a=candidate:3 1 udp 1694498815 9.9.9.9 50001 typ srflx raddr 172.18.0.4 rport 40000\r\n";
        let out = rewrite_sdp_address(
            sdp,
            "0.0.0.0".parse().unwrap(),
            "203.0.113.7".parse().unwrap(),
        );
        assert_eq!(
            out,
            "c=IN IP4 203.0.113.7\r\n\
            a=candidate:1 1 udp 2130706431 203.0.113.7 40000 typ host\r\n\
            a=candidate:2 1 udp 2130706431 203.0.113.7 40000 typ host\r\n\
            a=candidate:3 1 udp 1694498815 9.9.9.9 50001 typ srflx raddr 172.18.0.4 rport 40000\r\n"
        );
    }
}
