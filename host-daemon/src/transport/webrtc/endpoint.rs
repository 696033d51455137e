//! The endpoint: one UDP socket, one run loop, every connection.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use protocol::peer::Channel;
use str0m::change::{SdpAnswer, SdpOffer};
use str0m::channel::{ChannelConfig, Reliability};
use str0m::ice::StunMessage;
use str0m::{Candidate, IceCreds, Rtc, RtcConfig};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot};

use super::peer::Peer;
use super::shared::{CHANNELS, Command, ConnId, Opened, SendReply, Shared, channel_index};
use super::{MAX_DATAGRAM_BYTES, SCTP_MAX_MESSAGE_SIZE, WebRtcError, WebRtcOptions};
use crate::transport::{PeerEvent, TransportError};

/// One UDP socket serving every WebRTC connection of a process, and the
/// task that runs them. Cloning is cheap; the socket and the task live as
/// long as a clone or a connection does.
#[derive(Clone)]
pub struct Endpoint {
    pub(super) commands: mpsc::UnboundedSender<Command>,
    local: SocketAddr,
    advertised: SocketAddr,
    pub(super) opts: Arc<WebRtcOptions>,
    connections: Arc<AtomicUsize>,
    routed: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("local", &self.local)
            .field("advertised", &self.advertised)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Binds the socket (`bind_ip`:`udp_port`) and starts the run loop on
    /// the current runtime.
    pub async fn bind(opts: &WebRtcOptions) -> Result<Endpoint, WebRtcError> {
        let addr = SocketAddr::new(opts.bind_ip, opts.udp_port);
        let socket = UdpSocket::bind(addr)
            .await
            .map_err(|source| WebRtcError::Bind { addr, source })?;
        let local = socket
            .local_addr()
            .map_err(|source| WebRtcError::Bind { addr, source })?;
        let advertised = SocketAddr::new(
            opts.public_ip.unwrap_or(local.ip()),
            opts.public_port.unwrap_or(local.port()),
        );
        if Candidate::host(advertised, "udp").is_err() {
            return Err(WebRtcError::BadCandidate(advertised));
        }
        let provider = Arc::new(str0m::crypto::from_feature_flags());
        let cert = provider.dtls_provider.generate_certificate();
        let mut config = Rtc::builder()
            .set_crypto_provider(provider)
            .set_sctp_max_message_size(SCTP_MAX_MESSAGE_SIZE)
            .set_sctp_max_buffered_amount(3 * opts.send_buffer_limit + opts.max_message_bytes);
        if let Some(cert) = cert {
            // One certificate for every connection: one key generation,
            // one fingerprint.
            config = config.set_dtls_cert(cert);
        }
        let keepalive = opts.ice_keepalive_interval.max(Duration::from_millis(50));
        config.set_initial_stun_rto(keepalive.min(Duration::from_millis(250)));
        config.set_max_stun_rto(keepalive);
        let (commands, rx) = mpsc::unbounded_channel();
        let connections = Arc::new(AtomicUsize::new(0));
        let routed = Arc::new(AtomicUsize::new(0));
        let opts = Arc::new(opts.clone());
        let run = RunLoop {
            socket,
            advertised,
            config,
            opts: opts.clone(),
            commands: commands.downgrade(),
            rx,
            peers: HashMap::new(),
            by_addr: HashMap::new(),
            by_ufrag: HashMap::new(),
            ufrags: HashMap::new(),
            timers: BTreeSet::new(),
            next_id: 0,
            connections: connections.clone(),
            routed: routed.clone(),
            routes: Vec::new(),
        };
        tokio::spawn(run.run());
        Ok(Endpoint {
            commands,
            local,
            advertised,
            opts,
            connections,
            routed,
        })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The address peers are told (the only candidate).
    pub fn advertised_addr(&self) -> SocketAddr {
        self.advertised
    }

    /// Connections the run loop holds (set up, open or closing).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Remote addresses the run loop routes datagrams from (to one
    /// connection each).
    pub fn routed_addresses(&self) -> usize {
        self.routed.load(Ordering::Relaxed)
    }

    /// The options it was bound with.
    pub fn options(&self) -> &WebRtcOptions {
        &self.opts
    }

    /// Asks the run loop something and waits for the answer.
    pub(super) async fn ask<T>(
        &self,
        command: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.commands.send(command(tx)).ok()?;
        rx.await.ok()
    }
}

/// The run loop's state: the socket, every connection, the routes to them
/// and their timers.
struct RunLoop {
    socket: UdpSocket,
    advertised: SocketAddr,
    config: RtcConfig,
    opts: Arc<WebRtcOptions>,
    /// For the connections' shared state (weak, so the loop ends once
    /// every handle is gone).
    commands: mpsc::WeakUnboundedSender<Command>,
    rx: mpsc::UnboundedReceiver<Command>,
    peers: HashMap<ConnId, Peer>,
    /// Datagrams from an address go to this connection.
    by_addr: HashMap<SocketAddr, ConnId>,
    /// STUN requests naming this local username fragment go to this
    /// connection.
    by_ufrag: HashMap<String, ConnId>,
    ufrags: HashMap<ConnId, String>,
    /// Every connection's next wake, ordered.
    timers: BTreeSet<(Instant, ConnId)>,
    next_id: u64,
    connections: Arc<AtomicUsize>,
    /// How many addresses `by_addr` holds.
    routed: Arc<AtomicUsize>,
    /// Scratch: addresses a connection just sent to.
    routes: Vec<SocketAddr>,
}

/// At most this many addresses route to one connection. Only the other
/// side's proven checks and the addresses its own `Rtc` sends to are
/// learned, and a peer has a handful of candidates; the bound keeps a
/// joiner whose answer lists thousands from growing the table.
const ROUTES_PER_CONNECTION: usize = 16;

/// Commands, or datagrams, the run loop handles in one turn before it
/// looks at the others and at its timers.
const BATCH: usize = 32;

/// RFC 7983: a first byte of 0-3 is STUN.
fn is_stun(buf: &[u8]) -> bool {
    buf.first().is_some_and(|b| *b < 4)
}

impl RunLoop {
    async fn run(mut self) {
        let mut buf = vec![0u8; MAX_DATAGRAM_BYTES];
        loop {
            let wake = self.timers.first().map(|(t, _)| *t);
            tokio::select! {
                biased;
                command = self.rx.recv() => match command {
                    Some(c) => {
                        self.command(c);
                        // More waiting are taken in one go (bounded, so
                        // datagrams and timers still get their turn).
                        for _ in 1..BATCH {
                            let Ok(c) = self.rx.try_recv() else { break };
                            self.command(c);
                        }
                    }
                    None => break,
                },
                received = self.socket.recv_from(&mut buf) => match received {
                    Ok((n, source)) => {
                        self.datagram(source, &buf[..n]);
                        for _ in 1..BATCH {
                            let Ok((n, source)) = self.socket.try_recv_from(&mut buf) else {
                                break;
                            };
                            self.datagram(source, &buf[..n]);
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "UDP receive"),
                },
                _ = sleep_until(wake), if wake.is_some() => {}
            }
            self.expire(Instant::now());
        }
        tracing::debug!(local = %self.advertised, "WebRTC endpoint stopped");
    }

    fn new_shared(&mut self) -> Option<(Arc<Shared>, mpsc::UnboundedReceiver<PeerEvent>)> {
        let commands = self.commands.upgrade()?;
        let id = ConnId(self.next_id);
        self.next_id += 1;
        let (shared, events) = Shared::new(id, commands);
        Some((Arc::new(shared), events))
    }

    /// A new `Rtc` with the endpoint's candidate and fresh ICE credentials.
    fn new_rtc(&self) -> (Rtc, String) {
        let creds = IceCreds::new();
        let ufrag = creds.ufrag.clone();
        let mut rtc = self
            .config
            .clone()
            .set_local_ice_credentials(creds)
            .build(Instant::now());
        if let Ok(c) = Candidate::host(self.advertised, "udp") {
            rtc.add_local_candidate(c);
        }
        (rtc, ufrag)
    }

    fn command(&mut self, command: Command) {
        let now = Instant::now();
        match command {
            Command::Offer(reply) => {
                let _ = reply.send(self.offer(now));
            }
            Command::Answer(offer, reply) => {
                let _ = reply.send(self.answer(now, &offer));
            }
            Command::ApplyAnswer(id, answer, reply) => {
                let result = match SdpAnswer::from_sdp_string(&answer) {
                    Err(e) => Err(WebRtcError::Sdp(e.to_string())),
                    Ok(answer) => self
                        .with_peer(id, now, |p, _, _| match p.pending_offer.take() {
                            None => Err(WebRtcError::Sdp("no offer waits for an answer".into())),
                            Some(pending) => p
                                .rtc()
                                .sdp_api()
                                .accept_answer(pending, answer)
                                .map_err(|e| WebRtcError::Sdp(e.to_string())),
                        })
                        .unwrap_or(Err(WebRtcError::ConnectFailed)),
                };
                let _ = reply.send(result);
            }
            Command::Send(id, idx, text, reply) => {
                match self.peers.get_mut(&id) {
                    Some(p) => p.send(&self.socket, &mut self.routes, now, idx, text, reply),
                    None => {
                        if let SendReply::Wait(tx) = reply {
                            let _ = tx.send(Err(TransportError::NotOpen(CHANNELS[idx].label())));
                        }
                    }
                }
                self.after(id);
            }
            Command::CloseChannel(id, idx) => {
                if let Some(p) = self.peers.get_mut(&id) {
                    p.close_channel(&self.socket, &mut self.routes, now, idx);
                }
                self.after(id);
            }
            Command::Close(id, reply) => match self.peers.get_mut(&id) {
                Some(p) => {
                    p.close(&self.socket, &mut self.routes, now, reply);
                    self.after(id);
                }
                None => {
                    if let Some(r) = reply {
                        let _ = r.send(());
                    }
                }
            },
            Command::Resume(id) => {
                if let Some(p) = self.peers.get_mut(&id) {
                    p.resume(&self.socket, &mut self.routes, now);
                }
                self.after(id);
            }
        }
    }

    /// Runs `f` on a connection (its `Rtc` changed: it settles after).
    fn with_peer<T>(
        &mut self,
        id: ConnId,
        now: Instant,
        f: impl FnOnce(&mut Peer, &UdpSocket, Instant) -> T,
    ) -> Option<T> {
        let p = self.peers.get_mut(&id)?;
        let out = f(p, &self.socket, now);
        p.settle(&self.socket, &mut self.routes, now);
        self.after(id);
        Some(out)
    }

    fn offer(&mut self, now: Instant) -> Result<Opened, WebRtcError> {
        let (shared, events) = self.new_shared().ok_or(WebRtcError::EndpointGone)?;
        let (mut rtc, ufrag) = self.new_rtc();
        let mut sdp = rtc.sdp_api();
        let mut channels = [None; 3];
        for channel in CHANNELS {
            channels[channel_index(channel)] =
                Some(sdp.add_channel_with_config(channel_config(channel)));
        }
        let Some((offer, pending)) = sdp.apply() else {
            return Err(WebRtcError::Sdp("nothing to offer".into()));
        };
        let mut peer = Peer::new(
            rtc,
            shared.clone(),
            channels,
            self.advertised,
            self.opts.clone(),
        );
        peer.pending_offer = Some(pending);
        self.insert(shared.id, ufrag, peer, now);
        Ok(Opened {
            shared,
            events,
            sdp: offer.to_sdp_string(),
        })
    }

    fn answer(&mut self, now: Instant, offer: &str) -> Result<Opened, WebRtcError> {
        let offer =
            SdpOffer::from_sdp_string(offer).map_err(|e| WebRtcError::Sdp(e.to_string()))?;
        let (shared, events) = self.new_shared().ok_or(WebRtcError::EndpointGone)?;
        let (mut rtc, ufrag) = self.new_rtc();
        let mut channels = [None; 3];
        // The negotiated channel: both sides create it.
        for channel in CHANNELS.into_iter().filter(|c| c.negotiated_id().is_some()) {
            channels[channel_index(channel)] = Some(
                rtc.direct_api()
                    .create_data_channel(channel_config(channel)),
            );
        }
        let answer = rtc
            .sdp_api()
            .accept_offer(offer)
            .map_err(|e| WebRtcError::Sdp(e.to_string()))?;
        let peer = Peer::new(
            rtc,
            shared.clone(),
            channels,
            self.advertised,
            self.opts.clone(),
        );
        self.insert(shared.id, ufrag, peer, now);
        Ok(Opened {
            shared,
            events,
            sdp: answer.to_sdp_string(),
        })
    }

    fn insert(&mut self, id: ConnId, ufrag: String, mut peer: Peer, now: Instant) {
        peer.settle(&self.socket, &mut self.routes, now);
        self.by_ufrag.insert(ufrag.clone(), id);
        self.ufrags.insert(id, ufrag);
        self.peers.insert(id, peer);
        self.connections.store(self.peers.len(), Ordering::Relaxed);
        self.after(id);
    }

    /// After a connection changed: routes for the addresses it sent to,
    /// its timer, or its removal once it is over.
    fn after(&mut self, id: ConnId) {
        let Some(p) = self.peers.get_mut(&id) else {
            self.routes.clear();
            return;
        };
        for addr in self.routes.drain(..) {
            route(&mut self.by_addr, p, id, addr, false);
        }
        self.routed.store(self.by_addr.len(), Ordering::Relaxed);
        if let Some(old) = p.registered.take() {
            self.timers.remove(&(old, id));
        }
        if p.is_done() {
            self.remove(id);
            return;
        }
        let wake = p.next_wake();
        p.registered = Some(wake);
        self.timers.insert((wake, id));
    }

    fn remove(&mut self, id: ConnId) {
        let Some(mut p) = self.peers.remove(&id) else {
            return;
        };
        for addr in &p.addrs {
            if self.by_addr.get(addr) == Some(&id) {
                self.by_addr.remove(addr);
            }
        }
        if let Some(old) = p.registered {
            self.timers.remove(&(old, id));
        }
        if let Some(ufrag) = self.ufrags.remove(&id) {
            self.by_ufrag.remove(&ufrag);
        }
        self.connections.store(self.peers.len(), Ordering::Relaxed);
        self.routed.store(self.by_addr.len(), Ordering::Relaxed);
        // Closed and gone: whoever waits for the close hears now.
        for w in p.close_waiters.drain(..) {
            let _ = w.send(());
        }
    }

    /// Routes a datagram: STUN requests by the username fragment they
    /// name, everything else by source address. Unroutable ones are
    /// dropped, and so are binding requests that name a connection but
    /// fail its checks (the fragments are public in offers).
    fn datagram(&mut self, source: SocketAddr, buf: &[u8]) {
        let stun = is_stun(buf);
        let by_ufrag = stun
            .then(|| StunMessage::parse(buf).ok())
            .flatten()
            .filter(|m| m.is_binding_request())
            .and_then(|m| {
                m.split_username()
                    .and_then(|(local, _)| self.by_ufrag.get(local).copied())
            });
        let Some(id) = by_ufrag.or_else(|| self.by_addr.get(&source).copied()) else {
            return;
        };
        let now = Instant::now();
        let Some(p) = self.peers.get_mut(&id) else {
            return;
        };
        if by_ufrag.is_some() {
            if !p.accepts_stun(now, source, buf) {
                tracing::trace!(%source, "a binding request failed its checks");
                return;
            }
            if p.is_answered() {
                // The other side proved itself from this address: route it
                // here (a peer that rejoined from the same address gets its
                // new connection), newest last.
                route(&mut self.by_addr, p, id, source, true);
            }
        }
        p.receive(&self.socket, &mut self.routes, now, source, buf, stun);
        self.after(id);
    }

    /// Wakes every connection whose timer is due.
    fn expire(&mut self, now: Instant) {
        while let Some(&(at, id)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            if let Some(p) = self.peers.get_mut(&id) {
                p.registered = None;
                p.timeout(&self.socket, &mut self.routes, now);
            }
            self.after(id);
        }
    }
}

/// Routes `addr` to connection `id` (`p`), unless another connection has it
/// and `take_over` is false. The connection's newest addresses are last;
/// past [`ROUTES_PER_CONNECTION`] its oldest one is forgotten.
fn route(
    by_addr: &mut HashMap<SocketAddr, ConnId>,
    p: &mut Peer,
    id: ConnId,
    addr: SocketAddr,
    take_over: bool,
) {
    match by_addr.get(&addr) {
        Some(owner) if *owner != id && !take_over => return,
        Some(owner) if *owner == id && p.addrs.last() == Some(&addr) => return,
        _ => {}
    }
    p.addrs.retain(|a| *a != addr);
    if p.addrs.len() >= ROUTES_PER_CONNECTION {
        let oldest = p.addrs.remove(0);
        if by_addr.get(&oldest) == Some(&id) {
            by_addr.remove(&oldest);
        }
    }
    by_addr.insert(addr, id);
    p.addrs.push(addr);
}

async fn sleep_until(wake: Option<Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

/// How `channel` is created: the spec's two reliable and ordered, in band
/// (the host creates them, the guest accepts them); the unreliable one
/// unordered, never retransmitted, negotiated (both sides create it).
fn channel_config(channel: Channel) -> ChannelConfig {
    ChannelConfig {
        label: channel.label().to_owned(),
        ordered: channel.reliable(),
        reliability: if channel.reliable() {
            Reliability::Reliable
        } else {
            Reliability::MaxRetransmits { retransmits: 0 }
        },
        negotiated: channel.negotiated_id(),
        protocol: String::new(),
    }
}
