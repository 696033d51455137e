//! When a connection wakes, and what is due then: `str0m`'s own timeout,
//! silence (reported disconnected, then failed), the delayed report of a
//! channel the other side closed, the deadline of a flush.

use std::net::SocketAddr;
use std::time::Instant;

use str0m::Input;
use tokio::net::UdpSocket;

use super::close::Closing;
use super::{FAR, Peer};
use crate::transport::ConnectionState;

impl Peer {
    /// When the run loop must wake this connection next.
    pub(in crate::transport::webrtc) fn next_wake(&self) -> Instant {
        let mut at = self.rtc_timeout;
        if let Some(heard) = self.last_heard
            && self.closing.is_none()
        {
            let next = if self.disconnected {
                heard + self.opts.ice_failed_timeout
            } else {
                heard + self.opts.ice_disconnected_timeout
            };
            at = at.min(next);
        }
        if let Some(t) = self.closed_report_at {
            at = at.min(t);
        }
        if let Some(Closing::Flushing(until)) = self.closing {
            at = at.min(until);
        }
        if let Some(t) = self.outbox.deadline() {
            at = at.min(t);
        }
        at
    }

    /// The other side was heard from: a silent connection is connected again.
    pub(super) fn heard(&mut self, now: Instant) {
        self.last_heard = Some(now);
        if self.disconnected {
            self.disconnected = false;
            self.shared.report(ConnectionState::Connected);
        }
    }

    /// A timer of this connection is due.
    pub(in crate::transport::webrtc) fn timeout(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
    ) {
        if now >= self.rtc_timeout {
            if let Err(e) = self.rtc.handle_input(Input::Timeout(now)) {
                tracing::debug!(error = %e, "timeout refused");
            }
            // The timeout was consumed; the drain sets the next one.
            self.rtc_timeout = now + FAR;
        }
        self.watch_silence(now);
        if let Some(at) = self.closed_report_at
            && now >= at
        {
            self.closed_report_at = None;
            self.closed_by_peer();
        }
        self.settle_drawn(socket, routes, now);
    }

    /// Reports a silent connection disconnected, and after longer failed.
    fn watch_silence(&mut self, now: Instant) {
        let Some(heard) = self.last_heard else { return };
        if self.closing.is_some() || self.done {
            return;
        }
        let silent = now.saturating_duration_since(heard);
        if silent >= self.opts.ice_failed_timeout {
            tracing::debug!(?silent, "peer silent: failed");
            self.fail(ConnectionState::Failed);
        } else if silent >= self.opts.ice_disconnected_timeout && !self.disconnected {
            self.disconnected = true;
            self.shared.report(ConnectionState::Disconnected);
        }
    }
}
