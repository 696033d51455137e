//! One connection as the endpoint's run loop keeps it: its `str0m::Rtc`,
//! which channel is which, the sends waiting for room, the datagrams held
//! while the receive queue is full, silence detection and the close.
//!
//! `str0m` asks that every change to an `Rtc` (a datagram, a timeout, a
//! write, a close) be followed by draining its output before the next
//! one; [`Peer::settle`] does that, and carries out the follow-ups the
//! events ask for one at a time.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use str0m::change::SdpPendingOffer;
use str0m::channel::ChannelId;
use str0m::net::{Protocol, Receive};
use str0m::{Event, IceConnectionState, Input, Output, Rtc};
use tokio::net::UdpSocket;
use tokio::sync::oneshot;

use super::shared::{CHANNELS, SendReply, Shared};
use super::{CLOSE_FLUSH_TIMEOUT, HELD_BYTES, ONE_CHANNEL_CLOSED_GRACE, WebRtcOptions};
use crate::transport::{ConnectionState, TransportError};

/// A send that waits for room in its channel.
type WaitingSend = (String, SendReply);

/// Far enough ahead to mean "never".
const FAR: Duration = Duration::from_secs(86_400);

/// Where a close is.
enum Closing {
    /// Waiting (until the instant) for what was sent to be acknowledged.
    Flushing(Instant),
    /// The channels are closed and the association is shutting down.
    ShuttingDown,
}

/// One connection in the run loop.
pub(super) struct Peer {
    rtc: Rtc,
    pub(super) shared: Arc<Shared>,
    /// `str0m`'s channel ids, by channel index.
    channels: [Option<ChannelId>; 3],
    /// Channels the other side opened that are not ours, to close.
    strangers: Vec<ChannelId>,
    /// Channels the other side opened that were not ours (logged at powers
    /// of two).
    strangers_seen: u64,
    /// The offer waiting for its answer (host side).
    pub(super) pending_offer: Option<SdpPendingOffer>,
    /// `str0m`'s next timeout.
    rtc_timeout: Instant,
    /// The instant the run loop's timer set holds for this connection.
    pub(super) registered: Option<Instant>,
    /// Sends waiting for room, per channel.
    waiting: [VecDeque<WaitingSend>; 3],
    /// DTLS datagrams held while the receive queue is full.
    held: VecDeque<(Instant, SocketAddr, Vec<u8>)>,
    /// Their bytes.
    held_bytes: usize,
    /// Datagrams dropped because the held ones were too many (logged at
    /// powers of two).
    dropped_datagrams: u64,
    /// When the other side was last heard from; `None` before it ever was.
    last_heard: Option<Instant>,
    /// Reported disconnected (silent), not heard from since.
    disconnected: bool,
    /// The other side closed a channel: the link is reported closed then.
    closed_report_at: Option<Instant>,
    closing: Option<Closing>,
    /// Waiting for this side's close to finish (the run loop answers them
    /// once the connection is gone from it).
    pub(super) close_waiters: Vec<oneshot::Sender<()>>,
    /// Over: the run loop drops it.
    done: bool,
    /// Addresses the run loop routes to this connection.
    pub(super) addrs: Vec<SocketAddr>,
    /// The address packets arrive at, as `str0m` knows it (the advertised
    /// candidate).
    local: SocketAddr,
    opts: Arc<WebRtcOptions>,
}

impl Peer {
    pub(super) fn new(
        rtc: Rtc,
        shared: Arc<Shared>,
        channels: [Option<ChannelId>; 3],
        local: SocketAddr,
        opts: Arc<WebRtcOptions>,
    ) -> Self {
        Peer {
            rtc,
            shared,
            channels,
            strangers: Vec::new(),
            strangers_seen: 0,
            pending_offer: None,
            rtc_timeout: Instant::now() + FAR,
            registered: None,
            waiting: Default::default(),
            held: VecDeque::new(),
            held_bytes: 0,
            dropped_datagrams: 0,
            last_heard: None,
            disconnected: false,
            closed_report_at: None,
            closing: None,
            close_waiters: Vec::new(),
            done: false,
            addrs: Vec::new(),
            local,
            opts,
        }
    }

    /// The `Rtc`, for set-up calls (each must be followed by [`Self::settle`]).
    pub(super) fn rtc(&mut self) -> &mut Rtc {
        &mut self.rtc
    }

    /// Whether a STUN binding request is this connection's own: it names
    /// both username fragments (the other side's once the answer is in) and
    /// its MESSAGE-INTEGRITY holds, as `str0m` checks it.
    pub(super) fn accepts_stun(&self, now: Instant, source: SocketAddr, buf: &[u8]) -> bool {
        Receive::new(Protocol::Udp, source, self.local, buf)
            .is_ok_and(|r| self.rtc.accepts(&Input::Receive(now, r)))
    }

    /// The other side is known: a guest-side connection always, a host-side
    /// one once the joiner's answer is applied. Before that, this side's
    /// offer (and so its ICE password) may be public in the lobby, and a
    /// binding request that passes the checks proves nothing.
    pub(super) fn is_answered(&self) -> bool {
        self.pending_offer.is_none()
    }

    /// Over: the run loop drops it.
    pub(super) fn is_done(&self) -> bool {
        self.done
    }

    /// When the run loop must wake this connection next.
    pub(super) fn next_wake(&self) -> Instant {
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
        at
    }

    /// A datagram from `source`, routed here.
    pub(super) fn receive(
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
        self.settle(socket, routes, now);
    }

    /// Hands one datagram to `str0m` (a change: [`Self::settle`] follows).
    fn feed(&mut self, now: Instant, source: SocketAddr, buf: &[u8]) {
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

    fn heard(&mut self, now: Instant) {
        self.last_heard = Some(now);
        if self.disconnected {
            self.disconnected = false;
            self.shared.report(ConnectionState::Connected);
        }
    }

    /// A timer of this connection is due.
    pub(super) fn timeout(
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
        self.settle(socket, routes, now);
    }

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

    /// The other side closed the link: reported, and the association is
    /// shut down (nothing is left to flush towards a closed peer).
    fn closed_by_peer(&mut self) {
        self.shared.progress.send_modify(|p| p.failed = true);
        self.shared.report(ConnectionState::Closed);
        self.refuse_waiting();
        if self.closing.is_none() {
            self.closing = Some(Closing::Flushing(Instant::now()));
        }
    }

    /// The connection is over, reported as `state`.
    fn fail(&mut self, state: ConnectionState) {
        self.shared.progress.send_modify(|p| p.failed = true);
        self.shared.report(state);
        self.rtc.disconnect();
        self.finish();
    }

    /// Drops it: every waiter hears, the run loop removes it.
    fn finish(&mut self) {
        self.done = true;
        self.shared.progress.send_modify(|p| {
            p.failed = true;
            p.open = [false; 3];
        });
        self.refuse_waiting();
        self.held.clear();
        self.held_bytes = 0;
    }

    fn refuse_waiting(&mut self) {
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

    /// Sends `text` on channel `idx` once it has room; `reply` hears how
    /// it went.
    pub(super) fn send(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
        idx: usize,
        text: String,
        reply: SendReply,
    ) {
        let label = CHANNELS[idx].label();
        if self.closing.is_some() || self.done || !self.shared.is_open(idx) {
            answer(
                &self.shared,
                idx,
                reply,
                Err(TransportError::NotOpen(label)),
            );
            return;
        }
        if text.len() > self.opts.max_message_bytes {
            tracing::error!(
                channel = label,
                bytes = text.len(),
                max = self.opts.max_message_bytes,
                "refusing a message larger than the data channel's limit"
            );
            answer(
                &self.shared,
                idx,
                reply,
                Err(TransportError::NotOpen(label)),
            );
            return;
        }
        self.waiting[idx].push_back((text, reply));
        self.settle(socket, routes, now);
    }

    /// Closes one channel and leaves the others open (what a misbehaving
    /// peer may do; tests play one).
    pub(super) fn close_channel(
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
    pub(super) fn close(
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

    /// The receive queue has room again: held datagrams go on.
    pub(super) fn resume(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
    ) {
        self.settle(socket, routes, now);
    }

    /// Drains the output, then carries out follow-ups one at a time, each
    /// followed by a drain, until none is left. `routes` collects the
    /// addresses this connection sent to (the run loop routes their
    /// answers here).
    pub(super) fn settle(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
    ) {
        self.drain(socket, routes, now);
        // Bounded: each step takes something from a bounded queue.
        for _ in 0..(HELD_BYTES / 64 + 1_024) {
            if self.done || !self.step(now) {
                break;
            }
            self.drain(socket, routes, now);
        }
        if !self.done && !self.rtc.is_alive() {
            self.finish();
        }
    }

    /// One follow-up change, if any can be made now.
    fn step(&mut self, now: Instant) -> bool {
        if let Some(id) = self.strangers.pop() {
            self.rtc.direct_api().close_data_channel(id);
            return true;
        }
        match self.closing {
            Some(Closing::Flushing(until)) => {
                let failed = self.shared.progress.borrow().failed;
                if now >= until || failed || self.flushed() {
                    self.closing = Some(Closing::ShuttingDown);
                    self.refuse_waiting();
                    for id in self.channels.into_iter().flatten() {
                        if self.rtc.channel(id).is_some() {
                            self.rtc.direct_api().close_data_channel(id);
                        }
                    }
                    if let Err(e) = self.rtc.close() {
                        tracing::debug!(error = %e, "closing a connection");
                        self.rtc.disconnect();
                    }
                    return true;
                }
            }
            Some(Closing::ShuttingDown) => return false,
            None => {}
        }
        if !self.held.is_empty() && self.shared.takes_datagram() {
            if let Some((_, source, buf)) = self.held.pop_front() {
                self.held_bytes -= buf.len();
                self.feed(now, source, &buf);
            }
            return true;
        }
        if !self.held.is_empty() {
            self.shared.holding.store(true, Ordering::SeqCst);
            // Room may have come between the check and the flag.
            if self.shared.takes_datagram() {
                return self.step(now);
            }
        }
        for idx in 0..CHANNELS.len() {
            if self.waiting[idx].is_empty() {
                continue;
            }
            if self.write_waiting(idx) {
                return true;
            }
        }
        false
    }

    /// Writes the oldest waiting send of channel `idx` if it has room.
    fn write_waiting(&mut self, idx: usize) -> bool {
        let limit = self.opts.send_buffer_limit;
        let label = CHANNELS[idx].label();
        let Some(mut channel) = self.channels[idx].and_then(|id| self.rtc.channel(id)) else {
            for (_, reply) in self.waiting[idx].drain(..) {
                answer(
                    &self.shared,
                    idx,
                    reply,
                    Err(TransportError::NotOpen(label)),
                );
            }
            return false;
        };
        if channel.buffered_amount() > limit {
            return false;
        }
        let Some((text, _)) = self.waiting[idx].front() else {
            return false;
        };
        let result = channel.write(false, text.as_bytes());
        match result {
            Ok(false) => false,
            Ok(true) => {
                if let Some((_, reply)) = self.waiting[idx].pop_front() {
                    answer(&self.shared, idx, reply, Ok(()));
                }
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, channel = label, "a write was refused");
                if let Some((_, reply)) = self.waiting[idx].pop_front() {
                    answer(
                        &self.shared,
                        idx,
                        reply,
                        Err(TransportError::NotOpen(label)),
                    );
                }
                true
            }
        }
    }

    /// Nothing this side sent is unacknowledged.
    fn flushed(&mut self) -> bool {
        if self.waiting.iter().any(|w| !w.is_empty()) {
            return false;
        }
        let ids = self.channels;
        ids.into_iter().flatten().all(|id| {
            self.rtc
                .channel(id)
                .is_none_or(|mut c| c.buffered_amount() == 0)
        })
    }

    /// Drains `str0m`'s output: datagrams go out, events are handled.
    fn drain(&mut self, socket: &UdpSocket, routes: &mut Vec<SocketAddr>, now: Instant) {
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
                    // A full socket buffer drops the datagram, as the
                    // network may: SCTP and ICE retransmit.
                    let _ = socket.try_send_to(&t.contents, t.destination);
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

    fn index_of(&self, id: ChannelId) -> Option<usize> {
        self.channels.iter().position(|c| *c == Some(id))
    }

    fn event(&mut self, event: Event, now: Instant) {
        match event {
            Event::Connected => {
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
                    self.shared.message(CHANNELS[idx], data.data);
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

/// Tells how a send on channel `idx` ended: to the sender waiting for it,
/// or (a fired send) by taking it off the connection's count.
pub(super) fn answer(
    shared: &Shared,
    idx: usize,
    reply: SendReply,
    result: Result<(), TransportError>,
) {
    match reply {
        SendReply::Wait(tx) => {
            let _ = tx.send(result);
        }
        SendReply::Fired => {
            shared.fired[idx].fetch_sub(1, Ordering::SeqCst);
        }
    }
}
