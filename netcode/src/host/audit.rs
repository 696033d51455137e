//! The desync audit: the host's own world hashes on report ticks, compared
//! with what each guest reports.

use std::collections::BTreeMap;

use game_api::WorldHash;
use protocol::tick::RECONCILE_INTERVAL_TICKS;

/// Host hashes kept for comparing guests' reports, ticks.
const HASH_HISTORY_TICKS: u64 = 900;

/// What one report says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The host has no hash for that tick (too old, or not a report tick).
    Unknown,
    /// Equal to the host's.
    Match,
    /// Different; `persistent` when the guest's previous report differed
    /// too and a snapshot sent between the two should have repaired it.
    Mismatch {
        /// Survived a snapshot.
        persistent: bool,
    },
}

/// Host hashes by `(level epoch, tick)`.
#[derive(Debug, Default)]
pub struct HashAudit {
    hashes: BTreeMap<(u32, u64), u64>,
}

/// A guest's last report: `(epoch, tick, mismatched)`.
pub type LastReport = Option<(u32, u64, bool)>;

impl HashAudit {
    /// Records the host's hash after `tick` of `epoch`, forgetting old ones.
    pub fn record(&mut self, epoch: u32, tick: u64, hash: u64) {
        self.hashes.insert((epoch, tick), hash);
        let horizon = tick.saturating_sub(HASH_HISTORY_TICKS);
        self.hashes.retain(|(e, t), _| *e == epoch && *t >= horizon);
    }

    /// Judges a guest's report, updating its `last` report.
    pub fn judge(&self, epoch: u32, tick: u64, hash: &str, last: &mut LastReport) -> Verdict {
        let Some(ours) = self.hashes.get(&(epoch, tick)) else {
            return Verdict::Unknown;
        };
        let matched = WorldHash(*ours).to_string() == hash;
        let previous = last.replace((epoch, tick, !matched));
        if matched {
            return Verdict::Match;
        }
        let persistent = matches!(previous, Some((e, t, true))
            if e == epoch && t < tick && snapshot_between(t, tick));
        Verdict::Mismatch { persistent }
    }

    /// Forgets everything (a new level).
    pub fn clear(&mut self) {
        self.hashes.clear();
    }
}

/// Whether a reconciliation snapshot tick lies strictly between two ticks.
fn snapshot_between(earlier: u64, later: u64) -> bool {
    let next_snapshot = (earlier / RECONCILE_INTERVAL_TICKS + 1) * RECONCILE_INTERVAL_TICKS;
    next_snapshot < later
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_lies_between_reports_only_when_strictly_inside() {
        let n = RECONCILE_INTERVAL_TICKS;
        assert!(snapshot_between(n - 1, n + 1));
        assert!(snapshot_between(0, 2 * n));
        assert!(
            !snapshot_between(n, n + 1),
            "the snapshot at the first report"
        );
        assert!(
            !snapshot_between(n - 2, n),
            "the snapshot at the second report"
        );
        assert!(!snapshot_between(n + 1, 2 * n - 1));
    }

    #[test]
    fn a_mismatch_persists_only_across_a_snapshot() {
        let mut a = HashAudit::default();
        let n = RECONCILE_INTERVAL_TICKS;
        for t in [10, 20, n + 10] {
            a.record(1, t, t);
        }
        let mut last = None;
        assert_eq!(a.judge(1, 5, "x", &mut last), Verdict::Unknown);
        assert_eq!(
            a.judge(1, 10, &WorldHash(10).to_string(), &mut last),
            Verdict::Match
        );
        assert_eq!(
            a.judge(1, 20, "0", &mut last),
            Verdict::Mismatch { persistent: false }
        );
        assert_eq!(
            a.judge(1, n + 10, "0", &mut last),
            Verdict::Mismatch { persistent: true }
        );
    }
}
