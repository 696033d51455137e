//! Which remote addresses one connection serves, and how much: what a
//! spoofed source address can cost the daemon, and the address it names.
//!
//! A binding request that names a connection and passes its checks proves
//! only that its sender holds the connection's credentials (a joiner has
//! its own), not that it sits at the source address: UDP sources are
//! forged at will. Every request handed to `str0m` makes it reply to the
//! source, learn the source as a candidate and send checks there, so a
//! joiner spraying requests from thousands of forged sources used to cost
//! the whole daemon its ticks and turn it into a reflector. Here:
//!
//! - At most [`MAX_SOURCES`] distinct addresses per connection ever have
//!   their binding requests handed on; requests from any other source are
//!   dropped unanswered, before their integrity is even checked.
//! - An address is *proven* once it answered a check this side sent to it
//!   (a success response carrying the check's transaction id: 96 random
//!   bits that only whoever receives at that address sees). Until then at
//!   most [`UNPROVEN_REQUESTS`] of its requests are handed on.
//! - Every request draws on the connection's budget
//!   ([`REQUESTS_PER_SECOND`], bursts of [`REQUEST_BURST`]): ICE's own
//!   consent checks need about one a second.
//! - The checks this side sent, the last [`CHECKS_KEPT`] by transaction
//!   id, let the endpoint route a response to its connection whatever its
//!   address table says, and tell whether it came from where the check went.
//!
//! The endpoint moves an address's datagrams to a connection only once the
//! address is proven for it (see `endpoint::routing`), so a forged source
//! cannot take over another guest's route either.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::num::NonZeroU32;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use str0m::ice::TransId;

/// Distinct remote addresses whose binding requests one connection hands
/// to `str0m`, ever. A peer has a handful of candidates (host, server
/// reflexive, a relay or two, per address family).
pub const MAX_SOURCES: usize = 8;

/// Binding requests handed on from one address before it is proven. A
/// real peer's address is proven by the first check this side sends back,
/// within a round trip; a browser retransmits an unanswered check a few
/// times.
pub const UNPROVEN_REQUESTS: u32 = 10;

/// A connection's steady budget of binding requests, per second.
pub const REQUESTS_PER_SECOND: u32 = 10;

/// A connection's burst of binding requests (a browser checking every
/// candidate pair at once at the start).
pub const REQUEST_BURST: u32 = 40;

/// Checks this side sent, remembered per connection by transaction id
/// (`str0m` paces a check every 50 ms and retransmits one up to 9 times:
/// this keeps a few seconds of them, for a slow or relayed peer's
/// responses).
pub const CHECKS_KEPT: usize = 64;

/// One remote address a connection heard binding requests from.
#[derive(Debug)]
struct Source {
    addr: SocketAddr,
    /// Requests handed on while unproven.
    unproven_requests: u32,
    proven: bool,
}

/// What became of a binding request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to `str0m`.
    Pass,
    /// A new source beyond [`MAX_SOURCES`].
    TooManySources,
    /// An unproven source past [`UNPROVEN_REQUESTS`].
    Unproven,
    /// The connection's budget is spent for now.
    OverBudget,
}

/// The remote addresses of one connection and the checks it sent.
pub struct Sources {
    seen: Vec<Source>,
    budget: DefaultDirectRateLimiter,
    /// Checks this side sent and where, oldest first.
    checks: VecDeque<(TransId, SocketAddr)>,
    /// Checks remembered since the endpoint last looked (for its
    /// transaction-id table).
    new_checks: Vec<TransId>,
    /// Checks forgotten since then.
    forgotten_checks: Vec<TransId>,
    /// Requests dropped (logged at powers of two).
    dropped: u64,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("seen", &self.seen)
            .field("checks", &self.checks.len())
            .field("dropped", &self.dropped)
            .finish_non_exhaustive()
    }
}

impl Default for Sources {
    fn default() -> Self {
        Self::new()
    }
}

impl Sources {
    /// No source seen, a full budget.
    pub fn new() -> Self {
        let per_second = NonZeroU32::new(REQUESTS_PER_SECOND).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(REQUEST_BURST).unwrap_or(NonZeroU32::MIN);
        Sources {
            seen: Vec::new(),
            budget: RateLimiter::direct(Quota::per_second(per_second).allow_burst(burst)),
            checks: VecDeque::new(),
            new_checks: Vec::new(),
            forgotten_checks: Vec::new(),
            dropped: 0,
        }
    }

    /// Whether a binding request from `addr` could be handed on: the
    /// address is known, or there is room for one more. Cheap, so it runs
    /// before the request's integrity check.
    pub fn admits(&self, addr: SocketAddr) -> bool {
        self.seen.len() < MAX_SOURCES || self.seen.iter().any(|s| s.addr == addr)
    }

    /// Charges a binding request from `addr` (its integrity checked) and
    /// says whether to hand it on. A refused request changes nothing but
    /// the count of drops.
    pub fn request(&mut self, addr: SocketAddr) -> Verdict {
        let verdict = self.judge(addr);
        if verdict != Verdict::Pass {
            self.dropped += 1;
            if self.dropped.is_power_of_two() {
                tracing::debug!(dropped = self.dropped, ?verdict, source = %addr,
                    "dropped binding requests of a connection");
            }
        }
        verdict
    }

    fn judge(&mut self, addr: SocketAddr) -> Verdict {
        let index = match self.seen.iter().position(|s| s.addr == addr) {
            Some(i) => i,
            None if self.seen.len() >= MAX_SOURCES => return Verdict::TooManySources,
            None => {
                self.seen.push(Source {
                    addr,
                    unproven_requests: 0,
                    proven: false,
                });
                self.seen.len() - 1
            }
        };
        let source = &self.seen[index];
        if !source.proven && source.unproven_requests >= UNPROVEN_REQUESTS {
            return Verdict::Unproven;
        }
        if self.budget.check().is_err() {
            return Verdict::OverBudget;
        }
        let source = &mut self.seen[index];
        if !source.proven {
            source.unproven_requests += 1;
        }
        Verdict::Pass
    }

    /// Notes a check this side sent to `addr` (a retransmission keeps its
    /// transaction id and is noted once).
    pub fn sent_check(&mut self, id: TransId, addr: SocketAddr) {
        if self.checks.iter().any(|(t, _)| *t == id) {
            return;
        }
        if self.checks.len() >= CHECKS_KEPT
            && let Some((old, _)) = self.checks.pop_front()
        {
            self.forgotten_checks.push(old);
        }
        self.checks.push_back((id, addr));
        self.new_checks.push(id);
    }

    /// Where this side sent the check `id`, if it remembers it.
    pub fn check_sent_to(&self, id: TransId) -> Option<SocketAddr> {
        self.checks
            .iter()
            .find_map(|(t, a)| (*t == id).then_some(*a))
    }

    /// `addr` answered one of this side's checks: it is proven.
    pub fn prove(&mut self, addr: SocketAddr) {
        if let Some(s) = self.seen.iter_mut().find(|s| s.addr == addr) {
            s.proven = true;
        } else if self.seen.len() < MAX_SOURCES {
            // Proven without a request of its own (this side checked a
            // candidate from the other side's SDP): it counts as a source.
            self.seen.push(Source {
                addr,
                unproven_requests: 0,
                proven: true,
            });
        }
    }

    /// Checks remembered and forgotten since the last call, for the
    /// endpoint's transaction-id table.
    pub fn take_check_changes(&mut self) -> (Vec<TransId>, Vec<TransId>) {
        (
            std::mem::take(&mut self.new_checks),
            std::mem::take(&mut self.forgotten_checks),
        )
    }

    /// Every check remembered (when the connection goes).
    pub fn remembered_checks(&self) -> impl Iterator<Item = TransId> + '_ {
        self.checks.iter().map(|(t, _)| *t)
    }
}

/// The other side's SDP with at most [`MAX_SOURCES`] of its candidates,
/// so the stack checks a handful of addresses however many a joiner lists:
/// UDP candidates with an address first (the only ones this side can
/// check; a browser lists TCP and `.local` names too), in the order given.
pub fn few_candidates(sdp: &str) -> std::borrow::Cow<'_, str> {
    let is_candidate = |l: &str| l.starts_with("a=candidate:");
    if sdp.lines().filter(|l| is_candidate(l)).count() <= MAX_SOURCES {
        return std::borrow::Cow::Borrowed(sdp);
    }
    let checkable = |l: &str| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(2).is_some_and(|p| p.eq_ignore_ascii_case("udp"))
            && f.get(4).is_some_and(|a| !a.ends_with(".local"))
    };
    let lines: Vec<&str> = sdp.split_inclusive('\n').collect();
    let mut keep: Vec<bool> = lines.iter().map(|l| !is_candidate(l)).collect();
    let mut kept = 0;
    for pass_checkable in [true, false] {
        for (i, l) in lines.iter().enumerate() {
            if kept < MAX_SOURCES && is_candidate(l) && !keep[i] && checkable(l) == pass_checkable {
                keep[i] = true;
                kept += 1;
            }
        }
    }
    let out: String = lines
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(l, _)| *l)
        .collect();
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn a_connection_serves_a_handful_of_sources_and_drops_the_rest_unanswered() {
        let mut s = Sources::new();
        for port in 1..=MAX_SOURCES as u16 {
            assert!(s.admits(addr(port)));
            assert_eq!(s.request(addr(port)), Verdict::Pass);
        }
        assert!(!s.admits(addr(9_999)), "a ninth source is not even checked");
        assert_eq!(s.request(addr(9_999)), Verdict::TooManySources);
        assert!(s.admits(addr(1)), "known sources still are");
    }

    #[test]
    fn an_unproven_source_gets_a_few_replies_and_a_proven_one_the_budget() {
        let mut s = Sources::new();
        for _ in 0..UNPROVEN_REQUESTS {
            assert_eq!(s.request(addr(1)), Verdict::Pass);
        }
        assert_eq!(s.request(addr(1)), Verdict::Unproven);
        s.prove(addr(1));
        assert_eq!(s.request(addr(1)), Verdict::Pass, "proven, it passes again");
        // The rest of the burst, then the budget is spent.
        let mut passed = UNPROVEN_REQUESTS + 1;
        while s.request(addr(1)) == Verdict::Pass {
            passed += 1;
            assert!(passed <= REQUEST_BURST, "the burst is bounded");
        }
        assert_eq!(passed, REQUEST_BURST);
        assert_eq!(s.request(addr(1)), Verdict::OverBudget);
    }

    #[test]
    fn checks_are_remembered_by_transaction_id_and_the_oldest_forgotten() {
        let mut s = Sources::new();
        let ids: Vec<TransId> = (0..CHECKS_KEPT + 2).map(|_| TransId::new()).collect();
        s.sent_check(ids[0], addr(7));
        s.sent_check(ids[0], addr(7));
        assert_eq!(s.check_sent_to(ids[0]), Some(addr(7)));
        let (new, gone) = s.take_check_changes();
        assert_eq!(
            (new.len(), gone.len()),
            (1, 0),
            "a retransmission is one check"
        );
        for id in &ids[1..] {
            s.sent_check(*id, addr(8));
        }
        let (new, gone) = s.take_check_changes();
        assert_eq!(new.len(), CHECKS_KEPT + 1);
        assert_eq!(gone, vec![ids[0], ids[1]]);
        assert_eq!(s.check_sent_to(ids[0]), None);
        assert_eq!(s.remembered_checks().count(), CHECKS_KEPT);
    }

    #[test]
    fn an_sdp_keeps_a_handful_of_candidates_checkable_ones_first() {
        let mut sdp = String::from("v=0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n");
        sdp.push_str("a=candidate:t 1 tcp 1 127.0.0.1 9 typ host tcptype passive\r\n");
        sdp.push_str("a=candidate:m 1 udp 1 abcd.local 9 typ host\r\n");
        for port in 0..20 {
            sdp.push_str(&format!(
                "a=candidate:{port} 1 udp 1 127.0.0.1 {port} typ host\r\n"
            ));
        }
        sdp.push_str("a=end-of-candidates\r\n");
        let few = few_candidates(&sdp);
        assert_eq!(few.matches("a=candidate:").count(), MAX_SOURCES);
        assert!(few.contains("a=candidate:0 ") && few.contains("a=candidate:7 "));
        assert!(!few.contains("a=candidate:8 "));
        assert!(
            !few.contains(" tcp ") && !few.contains(".local"),
            "UDP candidates with an address come first"
        );
        assert!(few.starts_with("v=0\r\n") && few.ends_with("a=end-of-candidates\r\n"));
        let short = "v=0\r\na=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\n";
        assert!(matches!(
            few_candidates(short),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn an_address_proven_by_a_check_counts_as_a_source() {
        let mut s = Sources::new();
        s.prove(addr(5));
        for _ in 0..=UNPROVEN_REQUESTS {
            assert_eq!(s.request(addr(5)), Verdict::Pass);
        }
        for port in 10..10 + MAX_SOURCES as u16 - 1 {
            assert_eq!(s.request(addr(port)), Verdict::Pass);
        }
        assert_eq!(s.request(addr(99)), Verdict::TooManySources);
    }
}
