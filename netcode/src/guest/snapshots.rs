//! Reconciliation on the guest side: the backlog of snapshots that outran
//! their bundles, applying one exactly at its tick, and the position
//! corrections renderers smooth away.

use game_api::GameWire;
use std::collections::BTreeMap;
use std::time::Duration;

use game_api::PlayerId;
use game_api::{Game, LevelStatus};
use protocol::peer::FEATURE_RELAY;
use protocol::peer::ReconciliationSnapshotMessage;
use protocol::tick::RECONCILE_INTERVAL_TICKS;

use super::{GuestEvent, GuestSession, RenderOffset};

/// Snapshots held while the bundles before them are still on their way.
const MAX_PENDING_SNAPSHOTS: usize = 64;

/// Snapshots by tick, waiting for the engine to reach their tick.
#[derive(Debug)]
pub(super) struct SnapshotBacklog<W: GameWire> {
    by_tick: BTreeMap<u64, ReconciliationSnapshotMessage<W>>,
}

impl<W: GameWire> SnapshotBacklog<W> {
    /// None held.
    pub(super) fn new() -> Self {
        Self {
            by_tick: BTreeMap::new(),
        }
    }

    /// Holds `s`; returns how many were discarded to stay bounded.
    fn hold(&mut self, s: ReconciliationSnapshotMessage<W>) -> u64 {
        let mut dropped = 0;
        if self.by_tick.len() >= MAX_PENDING_SNAPSHOTS {
            self.by_tick.pop_first();
            dropped += 1;
        }
        self.by_tick.insert(W::snapshot_tick(&s.snapshot), s);
        dropped
    }

    /// The snapshot for tick `t`, dropping older ones; returns it and how
    /// many were dropped.
    fn take(&mut self, t: u64) -> (Option<ReconciliationSnapshotMessage<W>>, u64) {
        let mut dropped = 0;
        while let Some(entry) = self.by_tick.first_entry() {
            if *entry.key() >= t {
                break;
            }
            entry.remove();
            dropped += 1;
        }
        (self.by_tick.remove(&t), dropped)
    }

    pub(super) fn clear(&mut self) {
        self.by_tick.clear();
    }
}

impl<E: Game> GuestSession<E> {
    pub(super) fn on_snapshot(&mut self, s: ReconciliationSnapshotMessage<E::Wire>) {
        if s.level_epoch != self.level_epoch {
            self.stats.snapshots_discarded += 1;
            return;
        }
        // Snapshots can outrun the bundles they follow (the other
        // channel): keep them by tick until the engine gets there.
        self.stats.snapshots_discarded += self.snapshots.hold(s);
    }

    /// At a snapshot tick the guest applies the host's snapshot before it
    /// advances further, so the correction lands on exactly the tick it
    /// reflects.
    /// A relay sends no reconciliation snapshots (it has no engine): in
    /// a relay session the guest never waits for one.
    pub(super) fn waiting_for_snapshot(&self) -> bool {
        if self.features.has(FEATURE_RELAY) {
            return false;
        }
        let Some(engine) = &self.engine else {
            return false;
        };
        let t = engine.tick();
        t > 0
            && t % RECONCILE_INTERVAL_TICKS == 0
            && !matches!(
                engine.status(),
                LevelStatus::Complete | LevelStatus::TeamEliminated
            )
            && self.snapshot_hashes.last().map(|s| (s.0, s.1)) != Some((self.level_epoch, t))
    }

    pub(super) fn try_apply_snapshot(&mut self, now: Duration) {
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        let t = engine.tick();
        let (msg, dropped) = self.snapshots.take(t);
        self.stats.snapshots_discarded += dropped;
        let Some(msg) = msg else {
            return;
        };
        let before = engine.positions();
        let hash_before = engine.world_hash();
        if let Err(e) = engine.apply_snapshot(&msg.snapshot) {
            self.events
                .push(GuestEvent::SnapshotRejected(e.to_string()));
            self.stats.snapshots_discarded += 1;
            return;
        }
        self.stats.snapshots_applied += 1;
        for (id, (nx, ny)) in engine.positions() {
            let Some((ox, oy)) = before.get(&id) else {
                continue;
            };
            let (dx, dy) = (ox - nx, oy - ny);
            let dist = (dx * dx + dy * dy).sqrt();
            if self.me.as_ref() == Some(&id) {
                self.meter.corrections.record(dist);
            }
            if dist == 0.0 {
                continue;
            }
            if dist >= E::SNAP_THRESHOLD {
                self.stats.hard_snaps += 1;
                self.render_offsets.remove(&id);
            } else {
                self.render_offsets
                    .insert(id, RenderOffset { dx, dy, at: now });
            }
        }
        let hash = engine.world_hash();
        if hash != hash_before {
            self.stats.snapshot_mismatches += 1;
        }
        self.snapshot_hashes.push((self.level_epoch, t, hash));
    }

    /// The render offset for `player` at `now`: the position correction
    /// still to be smoothed away (zero once the game's
    /// [`Game::CORRECTION_SMOOTH_MS`] has passed, and always zero for
    /// corrections at or above its snap threshold).
    pub fn render_offset(&self, player: &PlayerId, now: Duration) -> (f64, f64) {
        let Some(o) = self.render_offsets.get(player) else {
            return (0.0, 0.0);
        };
        let window = Duration::from_millis(E::CORRECTION_SMOOTH_MS);
        let elapsed = now.saturating_sub(o.at);
        if elapsed >= window {
            return (0.0, 0.0);
        }
        let left = 1.0 - elapsed.as_secs_f64() / window.as_secs_f64();
        (o.dx * left, o.dy * left)
    }

    /// The last smoothed correction recorded for `player`, if any.
    pub fn correction(&self, player: &PlayerId) -> Option<RenderOffset> {
        self.render_offsets.get(player).copied()
    }
}
