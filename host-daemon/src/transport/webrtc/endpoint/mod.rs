//! The endpoint: one UDP socket, one run loop, every connection.
//!
//! # Layout
//!
//! - here: [`Endpoint`], the handle: binding the socket, starting the run
//!   loop, asking it things.
//! - `run_loop`: the run loop's state and its turns: commands from the
//!   handles, datagrams from the socket, the connections' timers.
//! - `negotiation`: a new connection from an offer this side makes or
//!   from the other side's offer (its `Rtc`, channels and SDP).
//! - `routing`: which connection a datagram goes to (binding requests by
//!   username fragment, responses by transaction id, the rest by source
//!   address), and the table of connections, routes, checks and timers
//!   kept as connections change, come and go.

mod negotiation;
mod routing;
mod run_loop;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use str0m::{Candidate, Rtc};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot};

use super::shared::Command;
use super::{SCTP_MAX_MESSAGE_SIZE, WebRtcError, WebRtcOptions};
use run_loop::RunLoop;

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
        let hmac = provider.sha1_hmac_provider;
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
            by_check: HashMap::new(),
            hmac,
            timers: BTreeSet::new(),
            next_id: 0,
            connections: connections.clone(),
            routed: routed.clone(),
            routes: Vec::new(),
            touched: Vec::new(),
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
