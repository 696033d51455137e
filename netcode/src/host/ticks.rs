//! Tick pacing (a fixed-step accumulator on the caller's clock) and the
//! tick itself: local inputs, removals, the bundle, hashes and snapshots.

use crate::replay::ReplayRecord;
use std::collections::BTreeSet;
use std::time::Duration;

use game_api::GameWire;
use game_api::PlayerId;
use game_api::game::Input;
use game_api::{Bot, Game, LevelStatus};
use protocol::peer::TickInput;
use protocol::peer::{EndReason, Feature, REDUNDANT_INPUTS};
use protocol::peer::{TickInputBundle, TickInputs};
use protocol::tick::{
    DISCONNECT_GRACE_MS, FIXED_DT, HASH_REPORT_INTERVAL_TICKS, RECONCILE_INTERVAL_TICKS,
};

use super::audit::Verdict;
use super::{HostEvent, HostSession, Phase};
use crate::stats::{GuestSlot, STEADY_AFTER_TICKS};
use lockstep::inputs::Placement;
use lockstep::pacing::TickClock;

impl<E: Game> HostSession<E> {
    pub(super) fn next_tick_due(&self) -> Option<Duration> {
        self.clock.map(|c| c.next_due())
    }

    pub(super) fn run_due_ticks(&mut self, now: Duration) {
        let Some(clock) = self.clock.as_mut() else {
            return;
        };
        clock.advance(now);
        while let Some(late_us) = self.clock.as_mut().and_then(TickClock::take_due) {
            self.stats.tick_lateness_us.record(late_us);
            if self.stats.ticks >= STEADY_AFTER_TICKS {
                self.stats.tick_lateness_steady_us.record(late_us);
            }
            self.run_tick(now, late_us);
            if !matches!(self.phase, Phase::Running) {
                return;
            }
        }
    }

    fn sample_local_inputs(&mut self, tick: u64) {
        let Some(engine) = &self.engine else { return };
        let mut sampled = Vec::new();
        for bot in &mut self.bots {
            sampled.push((bot.player_id().clone(), bot.decide(engine)));
        }
        if let (Some((id, _)), false) = (&self.config.host_player, self.config.host_bot) {
            sampled.push((id.clone(), self.local_input.clone()));
        }
        for (id, input) in sampled {
            let at = tick + self.inputs.delay(&id);
            self.inputs.insert(id, at, E::Wire::sanitize(&input), tick);
        }
    }

    fn grace_expired(&self, now: Duration) -> Vec<PlayerId> {
        let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
        self.seats
            .iter()
            .filter(|s| s.admitted && !s.removed)
            .filter(|s| s.disconnected_at.is_some_and(|d| now >= d + grace))
            .filter_map(|s| s.player.clone())
            .collect()
    }

    /// Who leaves the roster at the start of this tick.
    fn removals(&mut self, now: Duration) -> Vec<PlayerId> {
        let mut remove: Vec<PlayerId> = std::mem::take(&mut self.remove_at_start);
        for p in self.grace_expired(now) {
            if !remove.contains(&p) {
                remove.push(p);
            }
        }
        let roster = self.roster();
        remove.retain(|p| roster.contains(p));
        remove.sort();
        for seat in self.seats.iter_mut() {
            if seat.player.as_ref().is_some_and(|p| remove.contains(p)) {
                seat.removed = true;
            }
        }
        remove
    }

    fn run_tick(&mut self, now: Duration, lateness_us: u64) {
        let Some(tick) = self.engine.as_ref().map(|e| e.tick()) else {
            return;
        };
        self.sample_local_inputs(tick);
        let remove = self.removals(now);
        let joined = self.add_joiners(tick, now);
        let in_grace: BTreeSet<PlayerId> = self
            .seats
            .iter()
            .filter(|s| (s.disconnected_at.is_some() || s.joining) && !s.removed)
            .filter_map(|s| s.player.clone())
            .collect();
        let playing: Vec<PlayerId> = self
            .roster()
            .into_iter()
            .filter(|p| !remove.contains(p))
            .collect();
        let taken = self.inputs.take(tick, &playing, &in_grace);
        let held = taken.held.len() as u64;
        for p in &taken.held {
            self.stats.count_held(p);
        }
        self.events.push(HostEvent::Ticked {
            lateness_us,
            held_inputs: held,
        });
        for p in &remove {
            self.events
                .push(HostEvent::PlayerRemoved(self.level_epoch, tick, p.clone()));
            self.stats
                .roster_removed
                .push((self.level_epoch, tick, p.clone()));
        }
        let bundle = TickInputBundle {
            tick,
            dt: FIXED_DT,
            level_epoch: self.level_epoch,
            inputs: taken.inputs,
            held_input_fallback: taken.held,
            roster_remove: (!remove.is_empty()).then(|| remove.clone()),
            roster_add: self.roster_add(&joined),
        };
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        engine.advance(&bundle.inputs, &remove);
        let after = engine.tick();
        if self.config.record_replay {
            self.events
                .push(HostEvent::Replay(ReplayRecord::Bundle(bundle.clone())));
        }
        // Hashing the world is not free: only on report ticks (and every
        // tick when a test records them).
        let report_tick = after % HASH_REPORT_INTERVAL_TICKS == 0;
        let hash = (report_tick || self.config.record_hashes).then(|| engine.world_hash());
        let status = engine.status();
        let snapshot = (after % RECONCILE_INTERVAL_TICKS == 0).then(|| engine.snapshot());
        self.send_bundle(bundle);
        self.stats.ticks += 1;
        if let Some(hash) = hash {
            if self.config.record_hashes {
                self.hash_log.push((self.level_epoch, after, hash));
            }
            if report_tick {
                self.audit.record(self.level_epoch, after, hash);
            }
        }
        if let Some(snapshot) = snapshot {
            self.stats.snapshots += 1;
            self.send_snapshot(snapshot);
        }
        self.send_join_states(&joined);
        match status {
            LevelStatus::Complete => self.level_complete(now),
            LevelStatus::TeamEliminated => self.end(EndReason::TeamEliminated),
            LevelStatus::Running | LevelStatus::Countdown { .. } => {
                if self.config.max_ticks_per_level.is_some_and(|m| after >= m) {
                    self.end(EndReason::HostShutdown);
                }
            }
        }
    }

    /// The player whose inputs guest `slot` may send now: admitted, not
    /// removed, not a spectator, and the session in a phase that takes inputs (setup counts:
    /// a guest samples its first input as it acks).
    fn input_sender(&self, slot: GuestSlot) -> Option<PlayerId> {
        let seat = self.seats.get(slot)?;
        let taking = matches!(
            self.phase,
            Phase::Setup { .. } | Phase::Running | Phase::Transition(_)
        );
        (taking && !seat.removed && !seat.spectator && self.engine.is_some())
            .then(|| seat.player.clone())
            .flatten()
    }

    pub(super) fn on_input(&mut self, slot: GuestSlot, input: TickInput<E::Wire>) {
        if self.input_sender(slot).as_ref() == Some(&input.player_id) {
            self.file_input(input.player_id, input.tick, &input.input, false);
        }
    }

    /// A batch of redundant inputs: each new one is filed, copies of what
    /// arrived before are dropped. A guest on input runs sends batches only
    /// on a change, a few copies and keep-alives.
    pub(super) fn on_inputs(&mut self, slot: GuestSlot, batch: TickInputs<E::Wire>) {
        let Some(features) = self.seats.get(slot).map(|s| &s.features) else {
            return;
        };
        let runs = features.has(Feature::InputRuns);
        if !features.has(Feature::RedundantInputs)
            || batch.level_epoch != self.level_epoch
            || self.input_sender(slot).as_ref() != Some(&batch.player_id)
        {
            return;
        }
        if batch.inputs.len() > REDUNDANT_INPUTS {
            self.stats.bad_messages += 1;
            self.events.push(HostEvent::BadMessage(
                slot,
                format!("{} inputs in one tick-inputs", batch.inputs.len()),
            ));
            return;
        }
        for (tick, input) in (batch.first_tick..).zip(&batch.inputs) {
            self.file_input(batch.player_id.clone(), tick, input, runs);
        }
        self.on_folded_reports(slot, &batch);
    }

    /// The reports a batch carries (`folded-reports`), each taken once:
    /// the guest sends a few copies.
    fn on_folded_reports(&mut self, slot: GuestSlot, batch: &TickInputs<E::Wire>) {
        let Some(seat) = self.seats.get(slot) else {
            return;
        };
        if !seat.features.has(Feature::FoldedReports) {
            return;
        }
        let epoch = batch.level_epoch;
        if let Some(report) = &batch.hash_report {
            let seen = seat
                .last_report
                .is_some_and(|(e, t, _)| (e, t) >= (epoch, report.tick));
            if !seen {
                self.on_hash_report(slot, report.tick, epoch, &report.hash);
            }
        }
        if let Some(tick) = batch.snapshot_ack {
            self.on_snapshot_ack(slot, epoch, tick);
        }
    }

    /// Files one input of `player` for `tick`; `runs`: it comes from a
    /// guest on input runs.
    fn file_input(&mut self, player: PlayerId, tick: u64, input: &Input<E>, runs: bool) {
        let Some(now_tick) = self.engine.as_ref().map(|e| e.tick()) else {
            return;
        };
        let input = E::Wire::sanitize(input);
        let placement = if runs {
            self.inputs
                .insert_run(player.clone(), tick, input, now_tick)
        } else {
            self.inputs.insert(player.clone(), tick, input, now_tick)
        };
        match placement {
            Placement::Stale | Placement::TooFarAhead | Placement::Confirmed => return,
            Placement::Late => self.stats.late_inputs += 1,
            Placement::LateHeld => {
                // The tick was played with its previous input, assumed
                // unchanged: the same as a held one, found out late.
                self.stats.late_inputs += 1;
                self.stats.count_held(&player);
            }
            Placement::Buffered => {}
        }
        let lead =
            i64::try_from(tick).unwrap_or(i64::MAX) - i64::try_from(now_tick).unwrap_or(i64::MAX);
        let entry = self
            .stats
            .input_lead
            .entry(player)
            .or_insert((0, 0, i64::MAX));
        entry.0 += 1;
        entry.1 = entry.1.saturating_add(lead);
        entry.2 = entry.2.min(lead);
    }

    pub(super) fn on_hash_report(&mut self, slot: GuestSlot, tick: u64, epoch: u32, hash: &str) {
        let Some(seat) = self.seats.get_mut(slot) else {
            return;
        };
        let Some(player) = seat.player.clone() else {
            return;
        };
        let verdict = self.audit.judge(epoch, tick, hash, &mut seat.last_report);
        match verdict {
            Verdict::Unknown => {}
            Verdict::Match => *self.stats.hash_matches.entry(player).or_default() += 1,
            Verdict::Mismatch { persistent } => {
                *self.stats.desyncs.entry(player.clone()).or_default() += 1;
                if persistent {
                    *self
                        .stats
                        .persistent_desyncs
                        .entry(player.clone())
                        .or_default() += 1;
                }
                self.events.push(HostEvent::Desync {
                    player,
                    level_epoch: epoch,
                    tick,
                    persistent,
                });
            }
        }
    }
}
