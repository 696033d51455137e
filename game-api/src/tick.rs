//! The netcode tick constants every peer shares (spec §1, §2, §4, §5, §7),
//! whatever the game.
//!
//! These are the initial values of the spec's "open tuning parameters"; every
//! peer must use the same ones, which is why the host sends them at setup.

/// Simulation ticks per second.
pub const TICK_RATE_HZ: u32 = 30;

/// Seconds simulated by one tick (`1 / TICK_RATE_HZ`).
pub const FIXED_DT: f64 = 1.0 / 30.0;

/// Ticks between sampling an input and the tick it is applied at.
pub const INPUT_DELAY_TICKS: u64 = 3;

/// The smallest input delay a fitted delay may be (the `input-delay`
/// feature, issue 15): two ticks (67 ms), one more than a clean link's round
/// trip needs, as margin for a guest's scheduling (browser frames, garbage
/// collection, a busy machine).
pub const MIN_INPUT_DELAY_TICKS: u64 = 2;

/// The largest fitted input delay (400 ms): a link slower than this holds
/// inputs rather than making every key press wait longer still.
pub const MAX_INPUT_DELAY_TICKS: u64 = 12;

/// Ticks between two host reconciliation snapshots (once a second).
pub const RECONCILE_INTERVAL_TICKS: u64 = 30;

/// Ticks between two world-hash reports from a guest to the host (a
/// campfire choice: the spec leaves the interval open).
pub const HASH_REPORT_INTERVAL_TICKS: u64 = 10;

/// How long a peer whose transport dropped keeps its seat (neutral input)
/// before it is removed with a synchronized `rosterRemove`.
pub const DISCONNECT_GRACE_MS: u64 = 10_000;

/// How long the host waits for every guest to ack a level transition before
/// resending it to the guests still pending. Long enough for a 160x160 map to
/// cross a slow link in 16 KiB chunks with backpressure.
pub const TRANSITION_ACK_TIMEOUT_MS: u64 = 5_000;

/// Extra resends of a level transition to pending guests before the host
/// proceeds without them (so at most `1 + TRANSITION_RETRY_LIMIT` attempts).
pub const TRANSITION_RETRY_LIMIT: u32 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_dt_matches_tick_rate() {
        assert_eq!(FIXED_DT, 1.0 / f64::from(TICK_RATE_HZ));
        assert_eq!(RECONCILE_INTERVAL_TICKS, u64::from(TICK_RATE_HZ));
    }
}
