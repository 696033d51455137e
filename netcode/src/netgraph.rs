//! The netgraph's figures (seed 001: "a feature, not a nicety"): what a
//! connection carried over the last moments, counted by the session that
//! sent or received it, so the browser's overlay, `join`'s JSON line, the
//! session report and tests all read the same numbers.
//!
//! A [`Flow`] counts messages and their bytes in one direction; its rates
//! cover the last [`RATE_WINDOW`]. Bytes are application bytes (the text
//! a data channel carries); [`wire_bytes`] adds an estimate of what
//! DTLS, SCTP, UDP and IPv4 add to each message.

use std::collections::VecDeque;
use std::time::Duration;

use protocol::peer::RoundTripReport;
use serde::Serialize;

/// The window a rate is taken over: long enough that one snapshot a
/// second does not make the figure jump, short enough to follow a change.
pub const RATE_WINDOW: Duration = Duration::from_secs(2);

/// Messages a [`Flow`] remembers for its rates at most (a flood cannot grow
/// it; past this the rates undercount, the totals stay exact).
const MAX_RECENT: usize = 4096;

/// Bytes each data-channel message costs on the wire beyond its own, when
/// it travels alone in a packet: IPv4 (20) + UDP (8) + a DTLS 1.2 record
/// header (13) + AES-GCM's explicit nonce and tag (24) + SCTP's common
/// header (12) + a DATA chunk header (16). Acknowledgements and padding to
/// four bytes are not counted, so the estimate is a little low.
pub const WIRE_OVERHEAD_BYTES: u64 = 93;

/// `bytes` of `messages` messages, as the wire carries them (an estimate:
/// see [`WIRE_OVERHEAD_BYTES`]).
pub fn wire_bytes(bytes: f64, messages: f64) -> f64 {
    bytes + messages * WIRE_OVERHEAD_BYTES as f64
}

/// Messages in one direction: totals, and what the last [`RATE_WINDOW`]
/// held.
#[derive(Clone, Debug, Default)]
pub struct Flow {
    recent: VecDeque<(Duration, u64)>,
    first: Option<Duration>,
    messages: u64,
    bytes: u64,
    last: Option<u64>,
}

impl Flow {
    /// A message of `bytes` bytes went by at `now`.
    pub fn record(&mut self, now: Duration, bytes: usize) {
        let bytes = bytes as u64;
        self.first.get_or_insert(now);
        self.messages += 1;
        self.bytes += bytes;
        self.last = Some(bytes);
        self.recent.push_back((now, bytes));
        self.forget_before(now);
        if self.recent.len() > MAX_RECENT {
            self.recent.pop_front();
        }
    }

    fn forget_before(&mut self, now: Duration) {
        let Some(since) = now.checked_sub(RATE_WINDOW) else {
            return;
        };
        while self.recent.front().is_some_and(|(at, _)| *at <= since) {
            self.recent.pop_front();
        }
    }

    /// Messages so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Bytes so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The size of the latest message.
    pub fn last_bytes(&self) -> Option<u64> {
        self.last
    }

    /// The rates at `now`: over the last [`RATE_WINDOW`], or over the time
    /// since the first message when that is shorter (at least a tick's
    /// worth, so one message does not read as a flood).
    pub fn reading(&self, now: Duration) -> FlowReading {
        let since = now.checked_sub(RATE_WINDOW);
        let (messages, bytes) = self
            .recent
            .iter()
            .filter(|(at, _)| since.is_none_or(|s| *at > s) && *at <= now)
            .fold((0u64, 0u64), |(m, b), (_, size)| (m + 1, b + size));
        let span = self
            .first
            .map_or(RATE_WINDOW, |first| now.saturating_sub(first))
            .clamp(Duration::from_millis(100), RATE_WINDOW)
            .as_secs_f64();
        let (messages_per_s, bytes_per_s) = (messages as f64 / span, bytes as f64 / span);
        FlowReading {
            bytes_per_s,
            wire_bytes_per_s: wire_bytes(bytes_per_s, messages_per_s),
            messages_per_s,
            bytes: self.bytes,
            messages: self.messages,
        }
    }
}

/// One direction of a connection, as the netgraph shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowReading {
    /// Application bytes per second.
    pub bytes_per_s: f64,
    /// The same with the estimated per-message overhead of the wire
    /// ([`WIRE_OVERHEAD_BYTES`]).
    pub wire_bytes_per_s: f64,
    /// Messages per second.
    pub messages_per_s: f64,
    /// Application bytes so far.
    pub bytes: u64,
    /// Messages so far.
    pub messages: u64,
}

/// How far the host's snapshots moved this guest's own player, the
/// netgraph's prediction error.
#[derive(Clone, Debug, Default)]
pub struct Corrections {
    last: Option<f64>,
    count: u64,
    largest: f64,
}

impl Corrections {
    /// A snapshot moved the player by `distance` (0 when prediction was
    /// right).
    pub fn record(&mut self, distance: f64) {
        self.last = Some(distance);
        if distance > 0.0 {
            self.count += 1;
        }
        self.largest = self.largest.max(distance);
    }

    /// The last correction, if a snapshot was applied.
    pub fn last(&self) -> Option<f64> {
        self.last
    }

    /// Snapshots that moved the player at all.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest correction so far.
    pub fn largest(&self) -> f64 {
        self.largest
    }
}

/// What a guest session counts for its netgraph.
#[derive(Clone, Debug, Default)]
pub struct GuestMeter {
    /// Every message from the host.
    pub down: Flow,
    /// Every message to the host, as its driver sent it.
    pub up: Flow,
    /// The reconciliation snapshots among `down`.
    pub snapshots: Flow,
    /// Ticks the host played this guest's player on its held input (each
    /// recorded with size 0).
    pub held: Flow,
    /// How far the snapshots moved this guest's player.
    pub corrections: Corrections,
    /// The round trip the host last said it measures to this guest
    /// (`round-trip`).
    pub round_trip: Option<RoundTripReport>,
}

impl GuestMeter {
    /// The totals so far.
    pub fn totals(&self) -> GuestTotals {
        GuestTotals {
            bytes_down: self.down.bytes(),
            messages_down: self.down.messages(),
            bytes_up: self.up.bytes(),
            messages_up: self.up.messages(),
            snapshots: self.snapshots.messages(),
            snapshot_bytes: self.snapshots.bytes(),
            corrections: self.corrections.count(),
            largest_correction: self.corrections.largest(),
        }
    }
}

/// What crossed a guest's link in all, and what the snapshots corrected:
/// the netgraph's figures for a whole run (`join`'s JSON line).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuestTotals {
    /// Application bytes from the host.
    pub bytes_down: u64,
    /// Messages from the host.
    pub messages_down: u64,
    /// Application bytes to the host.
    pub bytes_up: u64,
    /// Messages to the host.
    pub messages_up: u64,
    /// Reconciliation snapshots received.
    pub snapshots: u64,
    /// Their bytes (part of `bytes_down`).
    pub snapshot_bytes: u64,
    /// Snapshots that moved this guest's player at all.
    pub corrections: u64,
    /// The largest such move, in the game's position units.
    pub largest_correction: f64,
}

/// A guest's netgraph: everything the overlay shows that the session
/// knows (the page adds frames per second and the transport's round trip).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuestNetgraph {
    /// The tick this guest's world is at.
    pub tick: u64,
    /// The tick the host is running, as the bundles' arrivals say (`None`
    /// before the first bundle).
    pub host_tick: Option<u64>,
    /// The round trip the host measures to this guest, ms (`None` until
    /// it said: a host without `round-trip`, or before the first pong).
    pub rtt_ms: Option<f64>,
    /// Its variation, ms.
    pub rtt_jitter_ms: Option<f64>,
    /// This player's input delay, ticks.
    pub input_delay: u64,
    /// How much later than the fastest recent one a bundle arrives on
    /// average, ms: the link's jitter as this guest sees it.
    pub arrival_jitter_ms: Option<f64>,
    /// From the host.
    pub down: FlowReading,
    /// To the host.
    pub up: FlowReading,
    /// Reconciliation snapshots per second.
    pub snapshots_per_s: f64,
    /// Snapshots received.
    pub snapshots: u64,
    /// The latest snapshot's size, bytes.
    pub snapshot_bytes: Option<u64>,
    /// Ticks the host played this player on its held input.
    pub held_inputs: u64,
    /// The same per second, lately.
    pub held_per_s: f64,
    /// How far the latest snapshot moved this player, in the game's
    /// position units (`None` before the first).
    pub correction: Option<f64>,
    /// The largest correction so far.
    pub largest_correction: f64,
    /// Snapshots that moved this player at all.
    pub corrections: u64,
    /// A correction at or past this shows on screen
    /// ([`game_api::Game::VISIBLE_CORRECTION`]; `None`: the game does not
    /// say).
    pub correction_visible_at: Option<f64>,
    /// Snapshots that found this guest's world off the host's.
    pub desyncs: u64,
}

/// One guest's link, as the host's netgraph shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkNetgraph {
    /// The player (or spectator) id.
    pub player: String,
    /// Its display name.
    pub name: String,
    /// The smoothed round trip, ms (`None` until measured).
    pub rtt_ms: Option<f64>,
    /// The round trip's variation, ms.
    pub rtt_jitter_ms: Option<f64>,
    /// Its input delay, ticks.
    pub input_delay: u64,
    /// What the host sent it.
    pub down: FlowReading,
    /// Ticks played on its held input.
    pub held_inputs: u64,
    /// Hash reports from it that disagreed with the host.
    pub desyncs: u32,
}

/// A host's netgraph: the session's clock and every guest's link.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostNetgraph {
    /// The tick the host's world is at.
    pub tick: u64,
    /// Reconciliation snapshots taken.
    pub snapshots: u64,
    /// One line per connected guest and spectator.
    pub links: Vec<LinkNetgraph>,
}

#[cfg(test)]
mod tests;
