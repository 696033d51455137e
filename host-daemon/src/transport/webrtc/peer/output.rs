//! `str0m`'s output: datagrams go out on the endpoint's socket (their
//! destinations collected for routing), events are handled (connected,
//! channels opened and closed, messages received, the connection closed).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Instant;

use str0m::channel::ChannelId;
use str0m::ice::StunMessage;
use str0m::{Event, IceConnectionState, Output};
use tokio::net::UdpSocket;

use super::Peer;
use super::send::answer;
use crate::transport::webrtc::ONE_CHANNEL_CLOSED_GRACE;
use crate::transport::webrtc::is_stun;
use crate::transport::webrtc::shared::CHANNELS;
use crate::transport::{ConnectionState, TransportError};

impl Peer {
    /// Drains `str0m`'s output: datagrams go out, events are handled.
    pub(super) fn drain(&mut self, socket: &UdpSocket, routes: &mut Vec<SocketAddr>, now: Instant) {
        loop {
            match self.rtc.poll_output() {
                Ok(Output::Timeout(t)) => {
                    self.rtc_timeout = t;
                    return;
                }
                Ok(Output::Transmit(t)) => {
                    if !self.addrs.contains(&t.destination) && !routes.contains(&t.destination) {
                        routes.push(t.destination);
                    }
                    let stun = is_stun(&t.contents);
                    // A check of ours: its response proves the address.
                    if stun
                        && let Ok(m) = StunMessage::parse(&t.contents)
                        && m.is_binding_request()
                    {
                        self.sources.sent_check(m.trans_id(), t.destination);
                    }
                    if self.connected && !stun {
                        self.outbox.join(socket, t.destination, &t.contents);
                    } else {
                        // A full socket buffer drops the datagram, as the
                        // network may: SCTP and ICE retransmit.
                        let _ = socket.try_send_to(&t.contents, t.destination);
                    }
                }
                Ok(Output::Event(e)) => self.event(e, now),
                Err(e) => {
                    tracing::debug!(error = %e, "connection failed");
                    self.fail(ConnectionState::Failed);
                    return;
                }
            }
        }
    }

    /// The index of `str0m`'s channel `id`, if it is one of ours.
    fn index_of(&self, id: ChannelId) -> Option<usize> {
        self.channels.iter().position(|c| *c == Some(id))
    }

    /// Handles one event.
    fn event(&mut self, event: Event, now: Instant) {
        match event {
            Event::Connected => {
                self.connected = true;
                self.heard(now);
                self.shared.progress.send_modify(|p| p.ice_connected = true);
                self.shared.report(ConnectionState::Connected);
            }
            Event::IceConnectionStateChange(
                IceConnectionState::Connected | IceConnectionState::Completed,
            ) => {
                self.shared.progress.send_modify(|p| p.ice_connected = true);
            }
            Event::ChannelOpen(id, label) => {
                let idx = self.index_of(id).or_else(|| {
                    CHANNELS
                        .iter()
                        .position(|c| c.label() == label)
                        .filter(|i| self.channels[*i].is_none())
                });
                match idx {
                    Some(idx) => {
                        self.channels[idx] = Some(id);
                        self.shared.progress.send_modify(|p| p.open[idx] = true);
                    }
                    None => {
                        self.strangers_seen += 1;
                        if self.strangers_seen.is_power_of_two() {
                            tracing::warn!(%label, ignored = self.strangers_seen, "ignoring unexpected data channels");
                        }
                        self.strangers.push(id);
                    }
                }
            }
            Event::ChannelData(data) => {
                if let Some(idx) = self.index_of(data.id) {
                    self.shared.message(CHANNELS[idx], data.binary, data.data);
                }
            }
            Event::ChannelClose(id) => {
                let Some(idx) = self.index_of(id) else { return };
                self.shared.progress.send_modify(|p| p.open[idx] = false);
                if self.closing.is_some() {
                    return;
                }
                self.shared.ending.store(true, Ordering::SeqCst);
                for (_, reply) in self.waiting[idx].drain(..) {
                    let label = CHANNELS[idx].label();
                    answer(
                        &self.shared,
                        idx,
                        reply,
                        Err(TransportError::NotOpen(label)),
                    );
                }
                // Reported once every channel closed, so the others' last
                // messages come first, or after a short grace when only
                // some did.
                let all_closed = !self.shared.progress.borrow().open.iter().any(|o| *o);
                if all_closed {
                    self.closed_report_at = None;
                    self.closed_by_peer();
                } else if self.closed_report_at.is_none() {
                    self.closed_report_at = Some(now + ONE_CHANNEL_CLOSED_GRACE);
                }
            }
            Event::Closed => {
                self.shared.ending.store(true, Ordering::SeqCst);
                if self.closing.is_none() {
                    self.closed_by_peer();
                }
            }
            _ => {}
        }
    }
}
