//! What the guest's netgraph shows, from the session's own counts.

use std::time::Duration;

use game_api::Game;

use super::GuestSession;
use crate::netgraph::{GuestMeter, GuestNetgraph};

impl<E: Game> GuestSession<E> {
    /// The driver sent a message of `bytes` bytes to the host at `now`
    /// (the session hands messages out; only the driver knows their
    /// encoded size).
    pub fn count_sent(&mut self, bytes: usize, now: Duration) {
        self.meter.up.record(now, bytes);
    }

    /// The counts behind the netgraph.
    pub fn meter(&self) -> &GuestMeter {
        &self.meter
    }

    /// The netgraph at `now`.
    pub fn netgraph(&self, now: Duration) -> GuestNetgraph {
        let m = &self.meter;
        let snapshots = m.snapshots.reading(now);
        let held = m.held.reading(now);
        GuestNetgraph {
            tick: self.engine.as_ref().map_or(0, Game::tick),
            host_tick: self.clock.host_tick(now),
            rtt_ms: m.round_trip.map(|r| micros_to_ms(r.rtt_us)),
            rtt_jitter_ms: m.round_trip.map(|r| micros_to_ms(r.jitter_us)),
            input_delay: self.input_delay,
            arrival_jitter_ms: self.clock.arrival_jitter_ms(),
            down: m.down.reading(now),
            up: m.up.reading(now),
            snapshots_per_s: snapshots.messages_per_s,
            snapshots: snapshots.messages,
            snapshot_bytes: m.snapshots.last_bytes(),
            held_inputs: held.messages,
            held_per_s: held.messages_per_s,
            correction: m.corrections.last(),
            largest_correction: m.corrections.largest(),
            corrections: m.corrections.count(),
            correction_visible_at: E::VISIBLE_CORRECTION
                .is_finite()
                .then_some(E::VISIBLE_CORRECTION),
            desyncs: self.stats.snapshot_mismatches,
        }
    }
}

/// Microseconds as milliseconds (a round trip: far inside f64's exact range).
fn micros_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}
