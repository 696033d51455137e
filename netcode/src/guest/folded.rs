//! Reports carried by the input messages (`folded-reports`): a guest that
//! sends redundant inputs puts its newest world hash report and snapshot
//! acknowledgement in its next [`FOLDED_COPIES`] `tick-inputs` instead of
//! in messages of their own. The input channel is unreliable, hence the
//! copies; the host takes each once.

use game_api::{Game, WorldHash};
use protocol::peer::{FOLDED_COPIES, Feature, FoldedHash, GuestMessage};

use super::GuestSession;

/// What the next input messages carry.
#[derive(Clone, Debug, Default)]
pub(super) struct Folded {
    hash: Option<Carried<FoldedHash>>,
    snapshot_ack: Option<Carried<u64>>,
}

/// One folded item: its level, and the copies still to send.
#[derive(Clone, Debug)]
struct Carried<T> {
    level_epoch: u32,
    value: T,
    left: u8,
}

impl<T: Clone> Carried<T> {
    fn new(level_epoch: u32, value: T) -> Self {
        Self {
            level_epoch,
            value,
            left: FOLDED_COPIES,
        }
    }

    /// A copy for an input message of `level_epoch`, if one is still due.
    fn take(slot: &mut Option<Self>, level_epoch: u32) -> Option<T> {
        let carried = slot.as_mut()?;
        if carried.level_epoch != level_epoch {
            // A level came and went: this one's report is of no use.
            *slot = None;
            return None;
        }
        let value = carried.value.clone();
        carried.left = carried.left.saturating_sub(1);
        if carried.left == 0 {
            *slot = None;
        }
        Some(value)
    }
}

impl Folded {
    /// The copies the next input message of `level_epoch` carries.
    pub(super) fn take(&mut self, level_epoch: u32) -> (Option<FoldedHash>, Option<u64>) {
        (
            Carried::take(&mut self.hash, level_epoch),
            Carried::take(&mut self.snapshot_ack, level_epoch),
        )
    }
}

impl<E: Game> GuestSession<E> {
    /// Whether reports ride the input messages: the host took the feature
    /// up and this guest is a player sending redundant inputs (a spectator
    /// sends none).
    fn folds_reports(&self) -> bool {
        self.features.has(Feature::FoldedReports)
            && self.redundant_inputs()
            && self.me.is_some()
            && !self.spectator
    }

    /// Reports the world hash after advancing to `tick`.
    pub(super) fn report_hash(&mut self, tick: u64, hash: u64) {
        let hash = WorldHash(hash).to_string();
        self.stats.hash_reports += 1;
        if self.folds_reports() {
            self.folded.hash = Some(Carried::new(self.level_epoch, FoldedHash { tick, hash }));
        } else {
            self.outbox.push(GuestMessage::HashReport {
                tick,
                level_epoch: self.level_epoch,
                hash,
            });
        }
    }

    /// Acknowledges the snapshot of `(level_epoch, tick)` as a base.
    pub(super) fn ack_snapshot(&mut self, level_epoch: u32, tick: u64) {
        if self.folds_reports() {
            self.folded.snapshot_ack = Some(Carried::new(level_epoch, tick));
        } else {
            self.outbox
                .push(GuestMessage::SnapshotAck { level_epoch, tick });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_goes_with_the_next_copies_of_its_level_only() {
        let mut f = Folded::default();
        assert_eq!(f.take(1), (None, None));
        f.snapshot_ack = Some(Carried::new(1, 30));
        for _ in 0..FOLDED_COPIES {
            assert_eq!(f.take(1), (None, Some(30)));
        }
        assert_eq!(f.take(1), (None, None), "sent its copies");
        f.snapshot_ack = Some(Carried::new(1, 60));
        assert_eq!(f.take(2), (None, None), "another level's is dropped");
        assert_eq!(f.take(1), (None, None));
    }
}
