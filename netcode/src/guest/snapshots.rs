//! Reconciliation on the guest side: the backlog of snapshots that outran
//! their bundles, applying one exactly at its tick, and the position
//! corrections renderers smooth away.

use game_api::GameWire;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use game_api::game::Snapshot;
use protocol::delta;
use protocol::peer::{DELTA_BASES, GuestMessage, SnapshotDelta};

use game_api::PlayerId;
use game_api::{Game, LevelStatus};
use protocol::peer::Feature;
use protocol::peer::ReconciliationSnapshotMessage;
use protocol::tick::RECONCILE_INTERVAL_TICKS;

use super::{GuestEvent, GuestSession, RenderOffset};

/// Snapshots held while the bundles before them are still on their way.
const MAX_PENDING_SNAPSHOTS: usize = 64;

/// Snapshots by tick, waiting for the engine to reach their tick; and the
/// binary forms of the last few received, the bases of delta snapshots.
#[derive(Debug)]
pub(super) struct SnapshotBacklog<W: GameWire> {
    by_tick: BTreeMap<u64, ReconciliationSnapshotMessage<W>>,
    /// `(epoch, tick, binary form)`, newest last.
    bases: VecDeque<(u32, u64, Vec<u8>)>,
    /// The last snapshot asked for whole (once each).
    asked: Option<(u32, u64)>,
}

impl<W: GameWire> SnapshotBacklog<W> {
    /// None held.
    pub(super) fn new() -> Self {
        Self {
            by_tick: BTreeMap::new(),
            bases: VecDeque::new(),
            asked: None,
        }
    }

    fn base(&self, epoch: u32, tick: u64) -> Option<&[u8]> {
        self.bases
            .iter()
            .find(|(e, t, _)| (*e, *t) == (epoch, tick))
            .map(|(_, _, b)| b.as_slice())
    }

    fn keep_base(&mut self, epoch: u32, tick: u64, binary: Vec<u8>) {
        self.bases.push_back((epoch, tick, binary));
        while self.bases.len() > DELTA_BASES {
            self.bases.pop_front();
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
    /// A delta snapshot: read against the base it names (one this guest
    /// kept), acknowledged, then held like any snapshot. One it cannot read
    /// is asked for whole, once.
    pub(super) fn on_snapshot_delta(&mut self, d: SnapshotDelta) {
        if d.level_epoch != self.level_epoch {
            self.stats.snapshots_discarded += 1;
            return;
        }
        let read = match d.base_tick {
            Some(t) => self
                .snapshots
                .base(d.level_epoch, t)
                .ok_or_else(|| format!("its base, tick {t}, is not kept here"))
                .and_then(|base| delta::decode(&d.delta, Some(base)).map_err(|e| e.to_string())),
            None => delta::decode(&d.delta, None).map_err(|e| e.to_string()),
        }
        .and_then(|binary| {
            let snapshot: Snapshot<E> = delta::from_binary(&binary).map_err(|e| e.to_string())?;
            if <E::Wire as GameWire>::snapshot_tick(&snapshot) == d.tick {
                Ok((binary, snapshot))
            } else {
                Err("it reads as another tick's snapshot".to_owned())
            }
        });
        match read {
            Ok((binary, snapshot)) => {
                self.snapshots.keep_base(d.level_epoch, d.tick, binary);
                self.ack_snapshot(d.level_epoch, d.tick);
                self.on_snapshot(ReconciliationSnapshotMessage {
                    level_epoch: d.level_epoch,
                    snapshot,
                });
            }
            Err(e) => {
                self.stats.snapshots_discarded += 1;
                self.events.push(GuestEvent::SnapshotRejected(format!(
                    "the delta snapshot of tick {}: {e}",
                    d.tick
                )));
                if self.snapshots.asked != Some((d.level_epoch, d.tick)) {
                    self.snapshots.asked = Some((d.level_epoch, d.tick));
                    self.outbox.push(GuestMessage::SnapshotAsk {
                        level_epoch: d.level_epoch,
                        tick: d.tick,
                    });
                }
            }
        }
    }

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
        if self.features.has(Feature::Relay) {
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
