//! The simulated network: links between the host and each guest, with
//! latency, seeded jitter, loss, stalls, cuts and tampering, all on a
//! virtual clock. Each direction of the reliable channels delivers
//! everything in order; [`Channel::Unreliable`] drops what is lost and lets
//! a message overtake another.

use std::collections::BTreeMap;
use std::time::Duration;

use protocol::peer::Channel;

use super::impairment::{Fate, Impairment, LinkConfig};
use crate::link::{ConnectionState, Payload, PeerEvent};

/// Which end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum End {
    /// The host's end.
    Host,
    /// The guest's end.
    Guest,
}

/// A delivery: to which end of which link, what.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// Link index.
    pub link: usize,
    /// Receiving end.
    pub to: End,
    /// What arrives.
    pub event: PeerEvent,
}

/// The stream number of messages arriving at `to` on `channel`.
pub fn stream(to: End, channel: Channel) -> u32 {
    let end = match to {
        End::Host => 0,
        End::Guest => 1,
    };
    let index = Channel::ALL.iter().position(|c| *c == channel).unwrap_or(0);
    end * Channel::ALL.len() as u32 + index as u32
}

struct Link {
    config: LinkConfig,
    /// The draws of each stream ([`stream`] of the receiving end and channel).
    draws: Vec<Impairment>,
    /// Latest due time per (receiving end, channel): order is kept.
    last_due: BTreeMap<(End, u8), Duration>,
    stalled_until: Duration,
    /// Bytes sent from each end (message text, every transmission counted once).
    bytes_sent: [u64; 2],
    /// Cut, or closed by the sending end: nothing more goes through.
    closed_by: [bool; 2],
    cut: bool,
}

fn idx(end: End) -> usize {
    match end {
        End::Host => 0,
        End::Guest => 1,
    }
}

fn channel_key(c: Channel) -> u8 {
    match c {
        Channel::Input => 0,
        Channel::Reconciliation => 1,
        Channel::Unreliable => 2,
    }
}

/// Every link and everything in flight.
#[derive(Default)]
pub struct Network {
    links: Vec<Link>,
    in_flight: BTreeMap<(Duration, u64), Delivery>,
    seq: u64,
}

impl Network {
    /// Adds a link; returns its index.
    pub fn add_link(&mut self, config: LinkConfig) -> usize {
        self.links.push(Link {
            draws: (0..2 * Channel::ALL.len() as u32)
                .map(|s| Impairment::new(&config, s))
                .collect(),
            config,
            last_due: BTreeMap::new(),
            stalled_until: Duration::ZERO,
            bytes_sent: [0; 2],
            closed_by: [false; 2],
            cut: false,
        });
        self.links.len() - 1
    }

    fn schedule(&mut self, due: Duration, d: Delivery) {
        self.seq += 1;
        self.in_flight.insert((due, self.seq), d);
    }

    /// Sends `payload` on `channel` from the `from` end of `link` at `now`.
    pub fn send(
        &mut self,
        link: usize,
        from: End,
        channel: Channel,
        payload: Payload,
        now: Duration,
    ) {
        let Some(l) = self.links.get_mut(link) else {
            return;
        };
        if l.cut || l.closed_by.iter().any(|c| *c) {
            return;
        }
        let to = if from == End::Host {
            End::Guest
        } else {
            End::Host
        };
        let tamper = match from {
            End::Host => l.config.tamper_down.clone(),
            End::Guest => l.config.tamper_up.clone(),
        };
        let payload = match tamper {
            Some(t) => t(channel, &payload),
            None => payload,
        };
        let Some(Fate { delay, lost }) = l
            .draws
            .get_mut(stream(to, channel) as usize)
            .map(Impairment::draw)
        else {
            return;
        };
        l.bytes_sent[idx(from)] += payload.len() as u64;
        let earliest = (now + delay).max(l.stalled_until);
        let due = if channel.reliable() {
            let key = (to, channel_key(channel));
            let due = earliest.max(l.last_due.get(&key).copied().unwrap_or_default());
            l.last_due.insert(key, due);
            due
        } else if lost {
            return;
        } else {
            earliest
        };
        let event = PeerEvent::Message(channel, payload);
        self.schedule(due, Delivery { link, to, event });
    }

    /// The `from` end closes the link: the other end sees `Closed` after
    /// everything already sent.
    pub fn close(&mut self, link: usize, from: End, now: Duration) {
        let Some(l) = self.links.get_mut(link) else {
            return;
        };
        if l.cut || l.closed_by.iter().any(|c| *c) {
            return;
        }
        l.closed_by[idx(from)] = true;
        let to = if from == End::Host {
            End::Guest
        } else {
            End::Host
        };
        let after = l
            .last_due
            .iter()
            .filter(|((end, _), _)| *end == to)
            .map(|(_, d)| *d)
            .max()
            .unwrap_or_default();
        let due = (now + l.config.latency).max(after).max(l.stalled_until);
        let event = PeerEvent::State(ConnectionState::Closed);
        self.schedule(due, Delivery { link, to, event });
    }

    /// Cuts the link: what is in flight is lost, both ends see
    /// `Disconnected` at once.
    pub fn cut(&mut self, link: usize, now: Duration) {
        let Some(l) = self.links.get_mut(link) else {
            return;
        };
        if l.cut {
            return;
        }
        l.cut = true;
        self.in_flight.retain(|_, d| d.link != link);
        for to in [End::Host, End::Guest] {
            let event = PeerEvent::State(ConnectionState::Disconnected);
            self.schedule(now, Delivery { link, to, event });
        }
    }

    /// Pauses the link both ways until `now + d`; what is in flight or sent
    /// meanwhile arrives after, in order.
    pub fn stall(&mut self, link: usize, d: Duration, now: Duration) {
        let Some(l) = self.links.get_mut(link) else {
            return;
        };
        let until = now + d;
        l.stalled_until = l.stalled_until.max(until);
        let held: Vec<(Duration, u64)> = self
            .in_flight
            .iter()
            .filter(|(_, d)| d.link == link)
            .map(|(k, _)| *k)
            .collect();
        for key in held {
            if let Some(d) = self.in_flight.remove(&key) {
                self.in_flight.insert((key.0.max(until), key.1), d);
            }
        }
        for due in l.last_due.values_mut() {
            *due = (*due).max(until);
        }
    }

    /// Bytes sent so far from the `from` end of `link`.
    pub fn bytes_sent(&self, link: usize, from: End) -> u64 {
        self.links.get(link).map_or(0, |l| l.bytes_sent[idx(from)])
    }

    /// When the next delivery is due.
    pub fn next_due(&self) -> Option<Duration> {
        self.in_flight.keys().next().map(|k| k.0)
    }

    /// Takes the next delivery due at or before `now`.
    pub fn pop_due(&mut self, now: Duration) -> Option<Delivery> {
        let entry = self.in_flight.first_entry()?;
        if entry.key().0 > now {
            return None;
        }
        Some(entry.remove())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrivals(config: LinkConfig, messages: usize) -> Vec<(Duration, String)> {
        arrivals_on(Channel::Input, config, messages)
    }

    fn arrivals_on(
        channel: Channel,
        config: LinkConfig,
        messages: usize,
    ) -> Vec<(Duration, String)> {
        let mut net = Network::default();
        let link = net.add_link(config);
        for i in 0..messages {
            let now = Duration::from_millis(10 * i as u64);
            net.send(link, End::Host, channel, i.to_string().into(), now);
        }
        let mut out = Vec::new();
        while let Some(due) = net.next_due() {
            let d = net.pop_due(due).expect("a delivery is due");
            if let PeerEvent::Message(_, Payload::Text(text)) = d.event {
                out.push((due, text));
            }
        }
        out
    }

    #[test]
    fn a_lost_message_arrives_one_retransmission_late_and_later_ones_wait_behind_it() {
        let config = LinkConfig {
            latency: Duration::from_millis(50),
            loss: 0.1,
            retransmit: Duration::from_millis(300),
            seed: 7,
            ..LinkConfig::default()
        };
        let got = arrivals(config, 400);
        // Reliable and ordered: everything arrives, in order.
        let texts: Vec<String> = got.iter().map(|(_, t)| t.clone()).collect();
        let expected: Vec<String> = (0..400).map(|i| i.to_string()).collect();
        assert_eq!(texts, expected);
        // About a tenth were retransmitted (each 300 ms late), and nothing
        // arrives before a message sent ahead of it.
        let late = got
            .iter()
            .enumerate()
            .filter(|(i, (due, _))| *due >= Duration::from_millis(10 * *i as u64 + 350))
            .count();
        assert!((20..=120).contains(&late), "{late} late of 400");
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
        let mut net = Network::default();
        let link = net.add_link(LinkConfig::default());
        net.send(
            link,
            End::Host,
            Channel::Input,
            "12345".into(),
            Duration::ZERO,
        );
        assert_eq!(net.bytes_sent(link, End::Host), 5);
        assert_eq!(net.bytes_sent(link, End::Guest), 0);
    }

    #[test]
    fn the_unreliable_channel_drops_lost_messages_and_lets_others_overtake() {
        let config = LinkConfig {
            latency: Duration::from_millis(50),
            jitter: Duration::from_millis(40),
            loss: 0.1,
            retransmit: Duration::from_millis(300),
            seed: 7,
            ..LinkConfig::default()
        };
        let got = arrivals_on(Channel::Unreliable, config, 400);
        // About a tenth never arrive; none arrives late for a retransmission.
        assert!((340..=380).contains(&got.len()), "{} of 400", got.len());
        assert!(got.iter().all(|(due, text)| {
            let sent = Duration::from_millis(10 * text.parse::<u64>().unwrap());
            *due <= sent + Duration::from_millis(90)
        }));
        // 40 ms of jitter against 10 ms between sends: some overtake.
        let order: Vec<u64> = got.iter().map(|(_, t)| t.parse().unwrap()).collect();
        assert!(order.windows(2).any(|w| w[0] > w[1]), "never reordered");
    }

    #[test]
    fn every_end_and_channel_is_its_own_stream() {
        let mut seen: Vec<u32> = Vec::new();
        for to in [End::Host, End::Guest] {
            for c in Channel::ALL {
                seen.push(stream(to, c));
            }
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 2 * Channel::ALL.len());
    }

    #[test]
    fn a_lossless_link_keeps_its_jitter_draws() {
        let base = LinkConfig {
            latency: Duration::from_millis(20),
            jitter: Duration::from_millis(15),
            seed: 3,
            ..LinkConfig::default()
        };
        let with_retransmit = LinkConfig {
            retransmit: Duration::from_millis(500),
            ..base.clone()
        };
        assert_eq!(arrivals(base, 50), arrivals(with_retransmit, 50));
    }
}
