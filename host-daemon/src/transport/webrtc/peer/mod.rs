//! One connection as the endpoint's run loop keeps it: its `str0m::Rtc`,
//! which channel is which, the sends waiting for room, the datagrams held
//! while the receive queue is full, silence detection and the close.
//!
//! `str0m` asks that every change to an `Rtc` (a datagram, a timeout, a
//! close) be followed by draining its output before the next one;
//! [`Peer::settle`] does that, and carries out the follow-ups the events
//! ask for one at a time. Writes are the exception: they only queue in
//! SCTP, so every waiting message with room is written before one drain,
//! and they share packets.
//!
//! # Layout
//!
//! - here: [`Peer`], what it holds, and [`Peer::settle`], the drain and
//!   follow-ups after every change.
//! - `receive`: datagrams in: handed to `str0m`, or held while the receive
//!   queue is full.
//! - `send`: sends waiting for room in their channel, written once it has
//!   some; each sender hears how its send ended.
//! - `timers`: when the connection wakes (`str0m`'s timeout, silence, the
//!   delayed report of a close) and what is due then.
//! - `close`: the close, this side's (flushed, then shut down) or the
//!   other side's, and a failed connection's end.
//! - `output`: `str0m`'s output: datagrams out, events handled.
//! - `outbox`: datagrams out once connected: joined, and held for the
//!   next write when the other side drew them.

mod close;
mod outbox;
mod output;
mod receive;
mod send;
mod timers;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use str0m::change::SdpPendingOffer;
use str0m::channel::ChannelId;
use str0m::crypto::Sha1HmacProvider;
use str0m::ice::StunMessage;
use str0m::net::{Protocol, Receive};
use str0m::{IceCreds, Input, Rtc};
use tokio::net::UdpSocket;
use tokio::sync::oneshot;

use super::shared::Shared;
use super::sources::Sources;
use super::{HELD_BYTES, WebRtcOptions};
use close::Closing;
use outbox::Outbox;
use send::WaitingSend;

/// Far enough ahead to mean "never".
const FAR: Duration = Duration::from_secs(86_400);

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
    /// On the run loop's list of connections to settle at the end of its
    /// turn (sends were queued).
    pub(super) touched: bool,
    /// Sends waiting for room, per channel.
    waiting: [VecDeque<WaitingSend>; 3],
    /// Messages written so far.
    written: u64,
    /// DTLS is up: its datagrams go through the outbox.
    connected: bool,
    /// DTLS datagrams on their way out.
    outbox: Outbox,
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
    /// The remote addresses its binding requests came from, which of them
    /// are proven, and the checks this side sent.
    pub(super) sources: Sources,
    /// This side's ICE password (its binding requests' integrity key).
    local_pwd: String,
    /// The other side's ICE username fragment, once its SDP is in.
    remote_ufrag: Option<String>,
    /// The address packets arrive at, as `str0m` knows it (the advertised
    /// candidate).
    local: SocketAddr,
    opts: Arc<WebRtcOptions>,
}

impl Peer {
    pub(super) fn new(
        rtc: Rtc,
        creds: IceCreds,
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
            touched: false,
            waiting: Default::default(),
            written: 0,
            connected: false,
            outbox: Outbox::default(),
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
            sources: Sources::new(),
            local_pwd: creds.pass,
            remote_ufrag: None,
            local,
            opts,
        }
    }

    /// The `Rtc`, for set-up calls (each must be followed by [`Self::settle`]).
    pub(super) fn rtc(&mut self) -> &mut Rtc {
        &mut self.rtc
    }

    /// Whether a STUN message is for this connection as `str0m` checks it
    /// (for a response: its transaction id is a check of ours and its
    /// MESSAGE-INTEGRITY holds).
    pub(super) fn accepts_stun(&self, now: Instant, source: SocketAddr, buf: &[u8]) -> bool {
        Receive::new(Protocol::Udp, source, self.local, buf)
            .is_ok_and(|r| self.rtc.accepts(&Input::Receive(now, r)))
    }

    /// Whether a binding request is this connection's own: it names this
    /// side's username fragment (the caller routed it by that) and the other
    /// side's, and its MESSAGE-INTEGRITY holds under this side's password.
    /// Checked here rather than by `str0m`, whose `accepts` waves through
    /// anything from the nominated address: a request forged from that
    /// address must not spend the connection's budget.
    pub(super) fn is_own_request(
        &self,
        msg: &StunMessage<'_>,
        hmac: &dyn Sha1HmacProvider,
    ) -> bool {
        let Some(remote) = self.remote_ufrag.as_deref() else {
            return false;
        };
        msg.split_username()
            .is_some_and(|(_, theirs)| theirs == remote)
            && msg.verify(self.local_pwd.as_bytes(), |key, payloads| {
                hmac.sha1_hmac(key, payloads)
            })
    }

    /// Learns the other side's username fragment from its SDP (offer or
    /// answer).
    pub(super) fn learn_remote_ufrag(&mut self, sdp: &str) {
        self.remote_ufrag = sdp
            .lines()
            .find_map(|l| l.trim_end().strip_prefix("a=ice-ufrag:"))
            .map(str::to_owned);
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

    /// Drains the output, then carries out follow-ups one at a time, each
    /// followed by a drain, until none is left; what it sent goes out.
    /// `routes` collects the addresses this connection sent to (the run
    /// loop routes their answers here).
    pub(super) fn settle(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
    ) {
        self.settle_and(socket, routes, now, false);
    }

    /// [`Self::settle`] after the other side's datagram or a timer: what
    /// that drew is held for this side's next write (at most
    /// [`outbox::HOLD`]) unless messages were written too.
    pub(super) fn settle_drawn(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
    ) {
        self.settle_and(socket, routes, now, true);
    }

    /// The settle, holding what was drawn when `may_hold`.
    fn settle_and(
        &mut self,
        socket: &UdpSocket,
        routes: &mut Vec<SocketAddr>,
        now: Instant,
        may_hold: bool,
    ) {
        let written = self.written;
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
        // Held only once every channel is open: the set-up's steps (SCTP's
        // handshake, the channels' opening) answer each other and would
        // each wait the hold.
        let hold = may_hold && written == self.written && !self.done && self.closing.is_none();
        if hold && self.shared.progress.borrow().open.iter().all(|o| *o) {
            self.outbox.hold(socket, now);
        } else {
            self.outbox.send(socket);
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
        self.write_all_waiting()
    }
}
