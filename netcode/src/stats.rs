//! Session statistics as plain values: what the daemon maps to its
//! Prometheus series, what `simulate` summarizes, what tests assert on.

use std::collections::BTreeMap;

use game_api::PlayerId;
use protocol::peer::RefusalReason;

use crate::netgraph::Flow;
use crate::rtt::RttEstimate;

/// Index of a guest connection, in arrival order.
pub type GuestSlot = usize;

/// Ticks after which [`HostStats::tick_lateness_steady_us`] records (2 s).
pub const STEADY_AFTER_TICKS: u64 = 60;

/// The host's counters.
#[derive(Clone, Debug, Default)]
pub struct HostStats {
    /// Ticks simulated, all levels.
    pub ticks: u64,
    /// Levels whose countdown ran out.
    pub levels_completed: u32,
    /// Held-input fallbacks used (player-ticks).
    pub held_inputs: u64,
    /// Held-input fallbacks per player (a lagging connection shows here).
    pub held_per_player: BTreeMap<PlayerId, u64>,
    /// Reconciliation snapshots taken.
    pub snapshots: u64,
    /// Players removed after the disconnect grace or a missed transition,
    /// as `(level epoch, tick, player)`.
    pub roster_removed: Vec<(u32, u64, PlayerId)>,
    /// Players who joined a running level (late joiners), as `(level
    /// epoch, tick, player)`.
    pub roster_added: Vec<(u32, u64, PlayerId)>,
    /// Spectators given a running level's state, as `(level epoch, tick
    /// of that state, spectator id)`.
    pub spectators_joined: Vec<(u32, u64, PlayerId)>,
    /// Times each player was resumed by a fresh connection (rejoins).
    pub rejoins: BTreeMap<PlayerId, u32>,
    /// Hash reports that disagreed with the host, per player.
    pub desyncs: BTreeMap<PlayerId, u32>,
    /// Mismatches that a reconciliation snapshot sent between two reports
    /// did not clear, per player (should stay zero).
    pub persistent_desyncs: BTreeMap<PlayerId, u32>,
    /// Hash reports that agreed, per player.
    pub hash_matches: BTreeMap<PlayerId, u32>,
    /// Guest inputs that arrived after their tick was finalized.
    pub late_inputs: u64,
    /// Per guest player: how many ticks ahead of the host's current tick
    /// its inputs arrived (negative: late), as `(count, sum, min)`. With
    /// `INPUT_DELAY_TICKS = 3` a healthy link shows about 3-4.
    pub input_lead: BTreeMap<PlayerId, (u64, i64, i64)>,
    /// Transition resends.
    pub transition_resends: u32,
    /// How late each tick ran after its due time, microseconds.
    pub tick_lateness_us: LatenessHistogram,
    /// The same, from the session's tick [`STEADY_AFTER_TICKS`] on (after
    /// setup, map generation and transfer, which load the first seconds).
    pub tick_lateness_steady_us: LatenessHistogram,
    /// Joins refused, with the reason.
    pub refusals: Vec<(GuestSlot, RefusalReason)>,
    /// Guest messages that did not parse.
    pub bad_messages: u64,
    /// Guests disconnected for sending more than their budget.
    pub over_budget: u64,
    /// Round trip per guest player that takes up `ping` (issue 15).
    pub rtt: BTreeMap<PlayerId, RttEstimate>,
    /// Messages and application bytes sent to each player's connections
    /// (spectators included), as the driver counted them
    /// ([`crate::host::HostSession::count_sent`]).
    pub sent: BTreeMap<PlayerId, Flow>,
}

impl HostStats {
    /// Counts one held-input fallback of `player`.
    pub(crate) fn count_held(&mut self, player: &PlayerId) {
        self.held_inputs += 1;
        *self.held_per_player.entry(player.clone()).or_default() += 1;
    }
}

/// The guest's counters.
#[derive(Clone, Debug, Default)]
pub struct GuestStats {
    /// Bundles applied.
    pub bundles_applied: u64,
    /// Bundles discarded for a stale or future level epoch.
    pub stale_bundles: u64,
    /// Snapshots applied.
    pub snapshots_applied: u64,
    /// Snapshots discarded (wrong epoch, too late, rejected).
    pub snapshots_discarded: u64,
    /// Corrections at or above the snap threshold.
    pub hard_snaps: u64,
    /// Snapshots that changed this guest's world hash at their tick: the
    /// guest had drifted from the host (its own desync count).
    pub snapshot_mismatches: u64,
    /// Level transitions applied.
    pub transitions: u32,
    /// Transition payloads that failed reassembly or validation.
    pub transition_failures: u32,
    /// Bundles that referenced a tick other than the next one.
    pub out_of_sequence: u64,
    /// Host messages that did not parse.
    pub bad_messages: u64,
    /// In-place rebuilds by a relay after this guest desynced.
    pub resyncs: u64,
    /// World hash reports made, sent alone or folded into the inputs
    /// (`folded-reports`: each counted once, not per copy).
    pub hash_reports: u64,
}

/// A bounded-memory histogram of tick lateness in microseconds.
#[derive(Clone, Debug)]
pub struct LatenessHistogram(hdrhistogram::Histogram<u64>);

impl Default for LatenessHistogram {
    fn default() -> Self {
        // 1 µs to 60 s at 3 significant digits: a few tens of KB.
        Self(
            hdrhistogram::Histogram::new_with_bounds(1, 60_000_000, 3)
                .expect("constant histogram bounds are valid"),
        )
    }
}

impl LatenessHistogram {
    /// Records one tick's lateness (saturating at the top bound).
    pub fn record(&mut self, us: u64) {
        self.0.saturating_record(us.max(1));
    }

    /// Ticks recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at percentile `p` (0-100), 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.value_at_percentile(p)
        }
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &LatenessHistogram) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.0.add(&other.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_histogram_is_bounded_and_reports_percentiles() {
        let mut h = LatenessHistogram::default();
        assert_eq!(h.percentile(99.0), 0);
        for us in 1..=1000 {
            h.record(us);
        }
        h.record(u64::MAX);
        assert_eq!(h.len(), 1001);
        let p50 = h.percentile(50.0);
        assert!((495..=505).contains(&p50), "{p50}");
        assert!(
            h.percentile(100.0) >= 59_000_000,
            "saturates at the top bound"
        );
    }
}
