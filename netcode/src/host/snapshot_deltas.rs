//! Delta snapshots (the `delta-snapshots` hello feature, issue 48): the
//! host keeps the binary forms ([`protocol::delta`]) of its last few
//! snapshots and, per guest, the newest one that guest acknowledged. Each
//! snapshot goes to such a guest as a delta against that one, or whole
//! when it acknowledged none still kept; guests with the same base share
//! one encoding. A guest that could not read a delta asks for it whole,
//! once per snapshot.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use game_api::game::Snapshot;
use game_api::{Game, GameWire};
use protocol::delta;
use protocol::peer::{
    DELTA_BASES, Feature, HostMessage, ReconciliationSnapshotMessage, SnapshotDelta,
};

use super::HostSession;
use crate::stats::GuestSlot;

/// What the host keeps for delta snapshots.
#[derive(Debug, Default)]
pub(super) struct DeltaBases {
    /// `(epoch, tick, binary form)` of the last [`DELTA_BASES`] snapshots.
    recent: VecDeque<(u32, u64, Arc<Vec<u8>>)>,
    /// The newest snapshot each guest acknowledged.
    acked: BTreeMap<GuestSlot, (u32, u64)>,
    /// The last snapshot each guest was sent whole on its ask.
    resent: BTreeMap<GuestSlot, (u32, u64)>,
}

impl DeltaBases {
    fn binary(&self, epoch: u32, tick: u64) -> Option<Arc<Vec<u8>>> {
        self.recent
            .iter()
            .find(|(e, t, _)| (*e, *t) == (epoch, tick))
            .map(|(_, _, b)| Arc::clone(b))
    }
}

impl<E: Game> HostSession<E> {
    /// Sends this tick's snapshot: whole to guests without the feature, as
    /// a delta to the others.
    pub(super) fn send_snapshot(&mut self, snapshot: Snapshot<E>) {
        let epoch = self.level_epoch;
        let tick = <E::Wire as GameWire>::snapshot_tick(&snapshot);
        let (delta_slots, whole_slots): (Vec<GuestSlot>, Vec<GuestSlot>) =
            self.live_slots().into_iter().partition(|s| {
                self.seats
                    .get(*s)
                    .is_some_and(|seat| seat.features.has(Feature::DeltaSnapshots))
            });
        let binary = if delta_slots.is_empty() {
            None
        } else {
            delta::to_binary(&snapshot).ok().map(Arc::new)
        };
        let Some(binary) = binary else {
            let msg = ReconciliationSnapshotMessage {
                level_epoch: epoch,
                snapshot,
            };
            self.broadcast_to(self.live_slots(), HostMessage::ReconciliationSnapshot(msg));
            return;
        };
        let whole = HostMessage::ReconciliationSnapshot(ReconciliationSnapshotMessage {
            level_epoch: epoch,
            snapshot,
        });
        if !whole_slots.is_empty() {
            self.broadcast_to(whole_slots, whole.clone());
        }
        let d = &mut self.deltas;
        d.acked.retain(|slot, _| delta_slots.contains(slot));
        d.resent.retain(|slot, _| delta_slots.contains(slot));
        let mut by_base: BTreeMap<Option<u64>, Vec<GuestSlot>> = BTreeMap::new();
        for slot in delta_slots {
            let base = d
                .acked
                .get(&slot)
                .filter(|(e, t)| *e == epoch && *t < tick && d.binary(*e, *t).is_some())
                .map(|(_, t)| *t);
            by_base.entry(base).or_default().push(slot);
        }
        let mut messages = Vec::new();
        for (base_tick, slots) in by_base {
            let base = base_tick.and_then(|t| d.binary(epoch, t));
            let Ok(delta) = delta::encode(&binary, base.as_deref().map(Vec::as_slice)) else {
                // The compressor failed: these guests get it whole.
                messages.push((slots, whole.clone()));
                continue;
            };
            messages.push((
                slots,
                HostMessage::SnapshotDelta(SnapshotDelta {
                    level_epoch: epoch,
                    tick,
                    base_tick,
                    delta,
                }),
            ));
        }
        d.recent.push_back((epoch, tick, binary));
        while d.recent.len() > DELTA_BASES {
            d.recent.pop_front();
        }
        for (slots, msg) in messages {
            self.broadcast_to(slots, msg);
        }
    }

    /// Guest `slot` holds the snapshot of `(epoch, tick)` as a base.
    pub(super) fn on_snapshot_ack(&mut self, slot: GuestSlot, epoch: u32, tick: u64) {
        let newer = self
            .deltas
            .acked
            .get(&slot)
            .is_none_or(|&(e, t)| (epoch, tick) > (e, t));
        if newer && self.deltas.binary(epoch, tick).is_some() {
            self.deltas.acked.insert(slot, (epoch, tick));
        }
    }

    /// Guest `slot` could not read the delta of `(epoch, tick)`: it gets
    /// that snapshot whole, once, while the host still keeps it.
    pub(super) fn on_snapshot_ask(&mut self, slot: GuestSlot, epoch: u32, tick: u64) {
        if self.deltas.resent.get(&slot) == Some(&(epoch, tick)) {
            return;
        }
        let Some(binary) = self.deltas.binary(epoch, tick) else {
            return;
        };
        self.deltas.resent.insert(slot, (epoch, tick));
        self.deltas.acked.remove(&slot);
        let Ok(delta) = delta::encode(&binary, None) else {
            return;
        };
        self.send(
            slot,
            HostMessage::SnapshotDelta(SnapshotDelta {
                level_epoch: epoch,
                tick,
                base_tick: None,
                delta,
            }),
        );
    }
}
