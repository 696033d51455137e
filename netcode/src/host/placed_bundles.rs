//! Placed bundles (the `placed-bundles` hello feature, issue 48): a tick
//! bundle goes without its players' ids to a connection that took the
//! feature up and was last sent a whole bundle with the same players;
//! whole to the rest (and whenever a player is added or removed).

use std::collections::BTreeMap;

use game_api::{Game, PlayerId};
use protocol::peer::{Feature, HostMessage, TickInputBundle};

use super::HostSession;
use crate::stats::GuestSlot;

/// The players of the last whole bundle each connection was sent.
#[derive(Debug, Default)]
pub(super) struct BundleIds(BTreeMap<GuestSlot, Vec<PlayerId>>);

impl<E: Game> HostSession<E> {
    /// A whole tick bundle names its players: the connections it goes to
    /// can be sent the next ones by place.
    pub(super) fn note_bundle_ids(&mut self, slots: &[GuestSlot], msg: &HostMessage<E::Wire>) {
        if let HostMessage::TickInputBundle(b) = msg {
            let ids: Vec<PlayerId> = b.inputs.keys().cloned().collect();
            for slot in slots {
                self.bundle_ids.0.insert(*slot, ids.clone());
            }
        }
    }

    /// Sends this tick's bundle: by place to the connections that took up
    /// placed bundles and were last sent one with the same players, whole
    /// to the rest.
    pub(super) fn send_bundle(&mut self, bundle: TickInputBundle<E::Wire>) {
        let live = self.live_slots();
        self.bundle_ids.0.retain(|slot, _| live.contains(slot));
        let placed = bundle.placed();
        let (by_place, whole): (Vec<GuestSlot>, Vec<GuestSlot>) = live.into_iter().partition(|s| {
            placed.is_some()
                && self
                    .seats
                    .get(*s)
                    .is_some_and(|seat| seat.features.has(Feature::PlacedBundles))
                && self
                    .bundle_ids
                    .0
                    .get(s)
                    .is_some_and(|ids| ids.iter().eq(bundle.inputs.keys()))
        });
        if let (Some(placed), false) = (placed, by_place.is_empty()) {
            self.broadcast_to(by_place, HostMessage::PlacedBundle(placed));
        }
        if !whole.is_empty() {
            self.broadcast_to(whole, HostMessage::TickInputBundle(bundle));
        }
    }
}
