//! Building, gathering, opening and closing one peer connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use ::webrtc::data_channel::DataChannel;
use ::webrtc::peer_connection::{
    PeerConnection, PeerConnectionBuilder, RTCConfigurationBuilder, RTCIceServer,
    SettingEngineBuilder,
};
use protocol::api::IceServer;
use rtc::ice::mdns::MulticastDnsMode;
use rtc::peer_connection::configuration::setting_engine::SctpMaxMessageSize;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, timeout_at};

use super::link::{Inner, WebRtcReceiver, WebRtcSender};
use super::sdp::rewrite_sdp_address;
use super::shared::{Handler, Shared};
use super::{SCTP_MAX_MESSAGE_SIZE, WebRtcError, WebRtcLink, WebRtcOptions};
use crate::transport::{ConnectionState, PeerEvent, PeerLink};

/// A peer connection that is closed when dropped, unless it already was.
pub(super) struct ClosingPc {
    pub(super) pc: Arc<dyn PeerConnection>,
    pub(super) shared: Arc<Shared>,
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

pub(super) fn to_rtc_ice_servers(servers: &[IceServer]) -> Vec<RTCIceServer> {
    servers
        .iter()
        .map(|s| RTCIceServer {
            urls: s.urls.clone(),
            username: s.username.clone().unwrap_or_default(),
            credential: s.credential.clone().unwrap_or_default(),
        })
        .collect()
}

pub(super) async fn build_one(
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
pub(super) async fn build_pc(
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
pub(super) async fn gathered_sdp(
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

/// Waits until every channel is open, the connection fails, or the deadline.
pub(super) async fn wait_open(
    shared: &Shared,
    connect_timeout: Duration,
) -> Result<(), WebRtcError> {
    let mut progress = shared.progress.subscribe();
    let deadline = Instant::now() + connect_timeout;
    match timeout_at(
        deadline,
        progress.wait_for(|p| p.failed || p.open.iter().all(|o| *o)),
    )
    .await
    {
        Ok(Ok(p)) if !p.failed => Ok(()),
        Ok(_) => Err(WebRtcError::ConnectFailed),
        Err(_) => Err(WebRtcError::ConnectTimeout(connect_timeout)),
    }
}

pub(super) fn make_link(
    guard: ClosingPc,
    dcs: [Arc<dyn DataChannel>; 3],
    events: mpsc::UnboundedReceiver<PeerEvent>,
    opts: &WebRtcOptions,
) -> WebRtcLink {
    // Every channel open means the connection is up, whatever order the
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

/// Closes the connection from this side: nothing more is reported, then the
/// crate closes the connection (its driver task and socket go).
pub(super) async fn close_pc(guard: &ClosingPc) {
    guard.shared.local_closed.store(true, Ordering::SeqCst);
    if let Err(e) = guard.pc.close().await {
        tracing::debug!(error = %e, "closing a peer connection");
    }
}
