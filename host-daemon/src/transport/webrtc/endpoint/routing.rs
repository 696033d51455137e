//! Which connection a datagram goes to: STUN binding requests by the
//! local username fragment they name (within what the connection's
//! `Sources` allow), binding responses by the transaction id of the check
//! they answer, everything else by source address (the addresses each
//! connection proved or sent to, a bounded few). And
//! the table behind it, kept as connections come, change and go: their
//! routes, their timers, their removal once over.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Instant;

use str0m::ice::StunMessage;

use super::run_loop::RunLoop;
use crate::transport::webrtc::is_stun;
use crate::transport::webrtc::peer::Peer;
use crate::transport::webrtc::shared::ConnId;
use crate::transport::webrtc::sources::Verdict;

/// At most this many addresses route to one connection. Only the other
/// side's proven checks and the addresses its own `Rtc` sends to are
/// learned, and a peer has a handful of candidates; the bound keeps a
/// joiner whose answer lists thousands from growing the table.
const ROUTES_PER_CONNECTION: usize = 16;

impl RunLoop {
    /// Adds a new connection (settled), its username fragment routed to it.
    pub(super) fn insert(&mut self, id: ConnId, ufrag: String, mut peer: Peer, now: Instant) {
        peer.settle(&self.socket, &mut self.routes, now);
        self.by_ufrag.insert(ufrag.clone(), id);
        self.ufrags.insert(id, ufrag);
        self.peers.insert(id, peer);
        self.connections.store(self.peers.len(), Ordering::Relaxed);
        self.after(id);
    }

    /// After a connection changed: routes for the addresses it sent to,
    /// its timer, or its removal once it is over.
    pub(super) fn after(&mut self, id: ConnId) {
        let Some(p) = self.peers.get_mut(&id) else {
            self.routes.clear();
            return;
        };
        for addr in self.routes.drain(..) {
            route(&mut self.by_addr, p, id, addr, false);
        }
        self.routed.store(self.by_addr.len(), Ordering::Relaxed);
        let (sent, forgotten) = p.sources.take_check_changes();
        for t in sent {
            if !forgotten.contains(&t) {
                self.by_check.insert(t, id);
            }
        }
        for t in forgotten {
            if self.by_check.get(&t) == Some(&id) {
                self.by_check.remove(&t);
            }
        }
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

    /// Drops a connection that is over, with its routes and timer.
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
        for t in p.sources.remembered_checks() {
            if self.by_check.get(&t) == Some(&id) {
                self.by_check.remove(&t);
            }
        }
        self.connections.store(self.peers.len(), Ordering::Relaxed);
        self.routed.store(self.by_addr.len(), Ordering::Relaxed);
        // Closed and gone: whoever waits for the close hears now.
        for w in p.close_waiters.drain(..) {
            let _ = w.send(());
        }
    }

    /// Routes a datagram: binding requests by the username fragment they
    /// name, binding responses by the transaction id of the check they
    /// answer, everything else by source address. What a connection's
    /// [`Sources`](crate::transport::webrtc::sources::Sources) refuses, and
    /// whatever is unroutable, is dropped unanswered.
    pub(super) fn datagram(&mut self, source: SocketAddr, buf: &[u8]) {
        let stun = is_stun(buf);
        let message = stun.then(|| StunMessage::parse(buf).ok()).flatten();
        let now = Instant::now();
        match message {
            Some(m) if m.is_binding_request() => self.binding_request(now, source, buf, &m),
            Some(m) if m.is_successful_binding_response() || m.is_failed_binding_response() => {
                self.binding_response(now, source, buf, &m);
            }
            _ => {
                let Some(id) = self.by_addr.get(&source).copied() else {
                    return;
                };
                if let Some(p) = self.peers.get_mut(&id) {
                    p.receive(&self.socket, &mut self.routes, now, source, buf, stun);
                    self.after(id);
                }
            }
        }
    }

    /// A binding request: handed to the connection whose username fragment
    /// it names, once the answer is in, if it passes that connection's
    /// checks and its [`Sources`](crate::transport::webrtc::sources::Sources)
    /// let it through. It moves no route: only a proven address does.
    fn binding_request(&mut self, now: Instant, source: SocketAddr, buf: &[u8], m: &StunMessage) {
        let Some(id) = m
            .split_username()
            .and_then(|(local, _)| self.by_ufrag.get(local).copied())
        else {
            return;
        };
        let Some(p) = self.peers.get_mut(&id) else {
            return;
        };
        // Before the answer this side's offer, password and all, may be
        // public in the lobby, and `str0m` could only queue the request:
        // the joiner retransmits once the answer is in.
        if !p.is_answered() || !p.sources.admits(source) {
            return;
        }
        if !p.is_own_request(m, self.hmac) {
            tracing::trace!(%source, "a binding request failed its checks");
            return;
        }
        if p.sources.request(source) != Verdict::Pass {
            return;
        }
        p.receive(&self.socket, &mut self.routes, now, source, buf, true);
        self.after(id);
    }

    /// A binding response: handed to the connection that sent the check it
    /// answers, if it comes from where the check went. A success response
    /// that connection accepts proves the address: it routes there from
    /// now on, taken over from any other connection (a peer that rejoined
    /// from the same address gets its new connection).
    fn binding_response(&mut self, now: Instant, source: SocketAddr, buf: &[u8], m: &StunMessage) {
        let Some(id) = self.by_check.get(&m.trans_id()).copied() else {
            return;
        };
        let Some(p) = self.peers.get_mut(&id) else {
            return;
        };
        if p.sources.check_sent_to(m.trans_id()) != Some(source) {
            return;
        }
        if m.is_successful_binding_response() && p.accepts_stun(now, source, buf) {
            p.sources.prove(source);
            p.shared.set_remote(source);
            route(&mut self.by_addr, p, id, source, true);
        }
        p.receive(&self.socket, &mut self.routes, now, source, buf, true);
        self.after(id);
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
