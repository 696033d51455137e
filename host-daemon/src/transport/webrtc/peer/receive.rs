//! Datagrams in: each handed to `str0m`, or, while the receive queue is
//! full, DTLS datagrams held (up to [`HELD_BYTES`], beyond that dropped for
//! the sender to retransmit) until it has room again.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Instant;

use str0m::Input;
use str0m::net::{Protocol, Receive};
use tokio::net::UdpSocket;

use super::Peer;
use crate::transport::webrtc::HELD_BYTES;

impl Peer {
    /// A datagram from `source`, routed here.
    pub(in crate::transport::webrtc) fn receive(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
        source: SocketAddr,
        buf: &[u8],
        stun: bool,
    ) {
        self.heard(now);
        if !stun && (!self.held.is_empty() || !self.shared.takes_datagram()) {
            self.hold(now, source, buf);
        } else {
            self.feed(now, source, buf);
        }
        self.settle_drawn(socket, routes, now);
    }

    /// Hands one datagram to `str0m` (a change: [`Self::settle`] follows).
    pub(super) fn feed(&mut self, now: Instant, source: SocketAddr, buf: &[u8]) {
        let Ok(receive) = Receive::new(Protocol::Udp, source, self.local, buf) else {
            return;
        };
        if let Err(e) = self.rtc.handle_input(Input::Receive(now, receive)) {
            tracing::debug!(error = %e, %source, "a datagram was refused");
        }
    }

    /// Keeps a DTLS datagram for when the receive queue has room again, or
    /// drops it (the sender retransmits) when too many are held.
    fn hold(&mut self, now: Instant, source: SocketAddr, buf: &[u8]) {
        if self.held_bytes + buf.len() <= HELD_BYTES {
            self.held_bytes += buf.len();
            self.held.push_back((now, source, buf.to_vec()));
        } else {
            self.dropped_datagrams += 1;
            if self.dropped_datagrams.is_power_of_two() {
                tracing::debug!(
                    dropped = self.dropped_datagrams,
                    "dropped datagrams from a peer whose receive queue is full"
                );
            }
        }
        self.shared.holding.store(true, Ordering::SeqCst);
    }

    /// The receive queue has room again: held datagrams go on.
    pub(in crate::transport::webrtc) fn resume(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
    ) {
        self.settle(socket, routes, now);
    }
}
