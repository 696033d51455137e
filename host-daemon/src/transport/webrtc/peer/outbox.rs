//! Datagrams out. Once the connection is up, `str0m` hands over every SCTP
//! packet as a DTLS record in a datagram of its own; the outbox joins the
//! records that go out together into one UDP datagram (DTLS allows several
//! records in one, RFC 6347 4.1.1), up to the size `str0m` aims its own
//! datagrams at. What the other side's datagrams or a timer drew (mostly
//! SCTP's lone acknowledgements) is held until this side writes next, or
//! [`HOLD`] at the most, and rides that write's datagram.
//!
//! STUN, and everything before the connection is up, goes out at once as
//! it came; nothing is held before every channel is open (the set-up's
//! steps answer each other, and each would wait the hold).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

/// The longest a connection's output waits for a write to ride with: a
/// little over one tick of a 30 Hz session, whose next message it then
/// joins. SCTP itself may delay an acknowledgement 200 ms (RFC 4960
/// 6.2); a retransmission due on a timer waits this much more at most.
pub(super) const HOLD: Duration = Duration::from_millis(40);

/// The largest joined datagram: the size `str0m` aims its own at.
const JOINED_MAX: usize = str0m::DATAGRAM_MTU_TARGET;

/// The most records joined in one datagram: `str0m`'s DTLS (dimpl 0.9)
/// drops a datagram of more than eight.
const JOINED_RECORDS: usize = 8;

/// DTLS records on their way out, joined per destination.
#[derive(Default)]
pub(super) struct Outbox {
    /// The records joined so far.
    joined: Vec<u8>,
    /// How many (each a datagram `str0m` made).
    records: usize,
    /// Where they go.
    to: Option<SocketAddr>,
    /// Held since then (drawn by the other side or a timer, waiting for a
    /// write); `None` while nothing is held.
    held_since: Option<Instant>,
}

impl Outbox {
    /// Adds one DTLS datagram for `to`: joined to what waits for the same
    /// destination when both fit in one datagram, else what waits goes
    /// first.
    pub(super) fn join(&mut self, socket: &UdpSocket, to: SocketAddr, record: &[u8]) {
        let fits = self.joined.len() + record.len() <= JOINED_MAX && self.records < JOINED_RECORDS;
        if self.to != Some(to) || !fits {
            self.send(socket);
        }
        self.to = Some(to);
        self.joined.extend_from_slice(record);
        self.records += 1;
    }

    /// Holds what waits (drawn at `now`), unless it has waited [`HOLD`]
    /// already: then it goes.
    pub(super) fn hold(&mut self, socket: &UdpSocket, now: Instant) {
        if self.joined.is_empty() {
            return;
        }
        let since = *self.held_since.get_or_insert(now);
        if now >= since + HOLD {
            self.send(socket);
        }
    }

    /// When what is held must go.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.held_since.map(|since| since + HOLD)
    }

    /// Sends what waits, as one datagram. A full socket buffer drops it,
    /// as the network may: SCTP retransmits.
    pub(super) fn send(&mut self, socket: &UdpSocket) {
        if let Some(to) = self.to
            && !self.joined.is_empty()
        {
            let _ = socket.try_send_to(&self.joined, to);
        }
        self.joined.clear();
        self.records = 0;
        self.held_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiving socket and what it got, read without waiting.
    async fn receiver() -> (UdpSocket, SocketAddr) {
        let s = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
        let a = s.local_addr().expect("addr");
        (s, a)
    }

    /// A sending socket, ready to write (`try_send_to` needs the reactor
    /// to have seen it writable, as the run loop's has).
    async fn sender() -> UdpSocket {
        let s = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
        s.writable().await.expect("writable");
        s
    }

    async fn datagrams(s: &UdpSocket) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4_096];
        // Loopback delivers before `send_to` returns; a short bounded wait
        // covers the scheduler.
        while let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_millis(50), s.recv(&mut buf)).await
        {
            got.push(buf[..n].to_vec());
        }
        got
    }

    #[tokio::test]
    async fn records_for_one_destination_go_as_one_datagram_up_to_the_limit() {
        let out = sender().await;
        let (a, a_addr) = receiver().await;
        let (b, b_addr) = receiver().await;
        let mut outbox = Outbox::default();
        outbox.join(&out, a_addr, b"one");
        outbox.join(&out, a_addr, b"two");
        // Another destination: what waits for the first goes first.
        outbox.join(&out, b_addr, b"three");
        outbox.send(&out);
        assert_eq!(datagrams(&a).await, vec![b"onetwo".to_vec()]);
        assert_eq!(datagrams(&b).await, vec![b"three".to_vec()]);
        // Two records that do not fit in one datagram go as two.
        let big = vec![7u8; JOINED_MAX - 10];
        outbox.join(&out, a_addr, &big);
        outbox.join(&out, a_addr, &[8u8; 11]);
        outbox.send(&out);
        assert_eq!(datagrams(&a).await, vec![big.clone(), vec![8u8; 11]]);
        // Nor more records than the other side's DTLS reads in one.
        for _ in 0..=JOINED_RECORDS {
            outbox.join(&out, a_addr, b"r");
        }
        outbox.send(&out);
        assert_eq!(
            datagrams(&a).await,
            vec![b"r".repeat(JOINED_RECORDS), b"r".to_vec()]
        );
    }

    #[tokio::test]
    async fn held_output_waits_for_the_next_write_or_the_hold() {
        let out = sender().await;
        let (a, a_addr) = receiver().await;
        let t0 = Instant::now();
        let mut outbox = Outbox::default();
        assert_eq!(outbox.deadline(), None);
        outbox.join(&out, a_addr, b"ack");
        outbox.hold(&out, t0);
        assert_eq!(outbox.deadline(), Some(t0 + HOLD));
        // More drawn output joins it; the deadline stays the first one's.
        outbox.join(&out, a_addr, b"ack2");
        outbox.hold(&out, t0 + HOLD / 2);
        assert_eq!(outbox.deadline(), Some(t0 + HOLD));
        assert!(datagrams(&a).await.is_empty(), "held");
        // A write's datagram takes them along.
        outbox.join(&out, a_addr, b"data");
        outbox.send(&out);
        assert_eq!(datagrams(&a).await, vec![b"ackack2data".to_vec()]);
        assert_eq!(outbox.deadline(), None);
        // With no write, it goes once the hold is over.
        outbox.join(&out, a_addr, b"late");
        outbox.hold(&out, t0);
        outbox.hold(&out, t0 + HOLD);
        assert_eq!(datagrams(&a).await, vec![b"late".to_vec()]);
        // Nothing waiting: holding holds nothing.
        outbox.hold(&out, t0);
        assert_eq!(outbox.deadline(), None);
    }
}
