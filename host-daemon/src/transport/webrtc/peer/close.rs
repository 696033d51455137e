//! The close: this side's (what was sent flushed, bounded by
//! [`CLOSE_FLUSH_TIMEOUT`], then the channels closed and the association
//! shut down), the other side's (reported, then shut down), and the end of
//! a connection that failed.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::net::UdpSocket;
use tokio::sync::oneshot;

use super::Peer;
use super::send::answer;
use crate::transport::webrtc::CLOSE_FLUSH_TIMEOUT;
use crate::transport::webrtc::shared::CHANNELS;
use crate::transport::{ConnectionState, TransportError};

/// Where a close is.
pub(super) enum Closing {
    /// Waiting (until the instant) for what was sent to be acknowledged.
    Flushing(Instant),
    /// The channels are closed and the association is shutting down.
    ShuttingDown,
}

impl Peer {
    /// Closes one channel and leaves the others open (what a misbehaving
    /// peer may do; tests play one).
    pub(in crate::transport::webrtc) fn close_channel(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
        idx: usize,
    ) {
        if let Some(id) = self.channels[idx] {
            self.rtc.direct_api().close_data_channel(id);
            self.shared.progress.send_modify(|p| p.open[idx] = false);
            self.settle(socket, routes, now);
        }
    }

    /// This side closes: flush (bounded), close the channels, shut down.
    /// `reply` hears once it is closed.
    pub(in crate::transport::webrtc) fn close(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
        reply: Option<oneshot::Sender<()>>,
    ) {
        self.shared.local_closed.store(true, Ordering::SeqCst);
        if let Some(reply) = reply {
            self.close_waiters.push(reply);
        }
        if self.done {
            return;
        }
        if self.closing.is_none() {
            let connected = self.shared.progress.borrow().open.iter().any(|o| *o);
            let until = if connected {
                now + CLOSE_FLUSH_TIMEOUT
            } else {
                now
            };
            self.closing = Some(Closing::Flushing(until));
        }
        self.settle(socket, routes, now);
    }

    /// The other side closed the link: reported, and the association is
    /// shut down (nothing is left to flush towards a closed peer).
    pub(super) fn closed_by_peer(&mut self) {
        self.shared.progress.send_modify(|p| p.failed = true);
        self.shared.report(ConnectionState::Closed);
        self.refuse_waiting();
        if self.closing.is_none() {
            self.closing = Some(Closing::Flushing(Instant::now()));
        }
    }

    /// The connection is over, reported as `state`.
    pub(super) fn fail(&mut self, state: ConnectionState) {
        self.shared.progress.send_modify(|p| p.failed = true);
        self.shared.report(state);
        self.rtc.disconnect();
        self.finish();
    }

    /// Drops it: every waiter hears, the run loop removes it.
    pub(super) fn finish(&mut self) {
        self.done = true;
        self.shared.progress.send_modify(|p| {
            p.failed = true;
            p.open = [false; 3];
        });
        self.refuse_waiting();
        self.held.clear();
        self.held_bytes = 0;
    }

    /// Every waiting send hears that its channel is not open.
    pub(super) fn refuse_waiting(&mut self) {
        for (idx, queue) in self.waiting.iter_mut().enumerate() {
            for (_, reply) in queue.drain(..) {
                answer(
                    &self.shared,
                    idx,
                    reply,
                    Err(TransportError::NotOpen(CHANNELS[idx].label())),
                );
            }
        }
    }
}
