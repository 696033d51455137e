//! Ticks on the guest side: bundles queued in order, applied oldest first
//! (a bounded catch-up per poll), hash reports, and this player's input.

use std::time::Duration;

use engine::{Engine, LevelStatus};
use protocol::input::{InputSnapshot, PlayerId, TickInput};
use protocol::peer::{GuestMessage, TickInputBundle, format_hash};
use protocol::tick::HASH_REPORT_INTERVAL_TICKS;

use super::{AppliedTick, GuestEvent, GuestFault, GuestSession, Phase};

/// Bundles applied per poll before yielding to the driver (the bounded
/// fast-forward loop).
const MAX_CATCH_UP_PER_POLL: usize = 256;

impl<E: Engine> GuestSession<E> {
    pub(super) fn on_bundle(&mut self, b: TickInputBundle, now: Duration) {
        if !matches!(self.phase, Phase::Running) {
            return;
        }
        if b.level_epoch != self.level_epoch {
            self.stats.stale_bundles += 1;
            if b.level_epoch > self.level_epoch && self.fell_behind_since.is_none() {
                self.fell_behind_since = Some(now);
            }
            return;
        }
        self.backlog.push_back(b);
    }

    pub(super) fn apply_backlog(&mut self, now: Duration) {
        self.clock_hint = now;
        for _ in 0..MAX_CATCH_UP_PER_POLL {
            if self.waiting_for_snapshot() {
                self.try_apply_snapshot(now);
                if self.waiting_for_snapshot() {
                    return;
                }
            }
            let Some(bundle) = self.backlog.pop_front() else {
                return;
            };
            self.apply_bundle(bundle);
        }
    }

    fn apply_bundle(&mut self, b: TickInputBundle) {
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        if b.tick != engine.tick() {
            self.stats.out_of_sequence += 1;
            self.events.push(GuestEvent::OutOfSequence {
                bundle: b.tick,
                engine: engine.tick(),
            });
            return;
        }
        let remove = b.roster_remove.clone().unwrap_or_default();
        let mut inputs = b.inputs;
        for id in engine.roster() {
            if !remove.contains(&id) && !inputs.contains_key(&id) {
                self.events.push(GuestEvent::MissingInput(id.clone()));
                inputs.insert(id, InputSnapshot::NEUTRAL);
            }
        }
        engine.advance(&inputs, &remove);
        let after = engine.tick();
        if let Some(GuestFault::CorruptAtTick(t)) = self.config.fault
            && t == after
            && self.level_epoch == 1
            && let Err(e) = corrupt(engine, self.me.as_ref())
        {
            self.events.push(GuestEvent::FaultFailed(e));
        }
        let report_tick = after % HASH_REPORT_INTERVAL_TICKS == 0;
        let hash = (report_tick || self.config.record_ticks).then(|| engine.world_hash());
        if engine.status() == LevelStatus::Complete && self.fell_behind_since.is_none() {
            // Waiting for the host's transition from now on.
            self.fell_behind_since = Some(self.clock_hint);
        }
        self.stats.bundles_applied += 1;
        if let (true, Some(hash)) = (self.config.record_ticks, hash) {
            self.applied.push(AppliedTick {
                epoch: self.level_epoch,
                tick: b.tick,
                hash,
                held: b.held_input_fallback,
                removed: remove,
                neutral: inputs
                    .iter()
                    .filter(|(_, i)| **i == InputSnapshot::NEUTRAL)
                    .map(|(id, _)| id.clone())
                    .collect(),
            });
        }
        if let (true, Some(hash)) = (report_tick, hash) {
            self.outbox.push(GuestMessage::HashReport {
                tick: after,
                level_epoch: self.level_epoch,
                hash: format_hash(hash),
            });
        }
        self.sample_input();
    }

    /// Samples this player's input for the engine's tick plus this
    /// player's input delay.
    pub(super) fn sample_input(&mut self) {
        let (Some(engine), Some(me)) = (&self.engine, &self.me) else {
            return;
        };
        if !matches!(
            engine.status(),
            LevelStatus::Running | LevelStatus::Countdown { .. }
        ) {
            return;
        }
        let input = match &mut self.pilot {
            Some(p) => p.decide(engine),
            None => self.local_input.clone(),
        };
        self.outbox.push(GuestMessage::TickInput(TickInput {
            tick: engine.tick() + self.input_delay,
            player_id: me.clone(),
            input: input.sanitized(),
        }));
    }
}

/// Scrambles the PRNG and this guest's own player (position and health),
/// through the engine's public surface.
fn corrupt<E: Engine>(engine: &mut E, me: Option<&PlayerId>) -> Result<(), String> {
    engine.set_rng_state(engine.rng_state() ^ 0xDEAD_BEEF);
    let mut snap = engine.snapshot();
    if let Some(p) = me.and_then(|id| snap.players.get_mut(id)) {
        p.pos_x += 0.2;
        p.health = (p.health - 17.0).max(1.0);
    }
    snap.grid_delta.clear();
    engine.apply_snapshot(&snap).map_err(|e| e.to_string())
}
