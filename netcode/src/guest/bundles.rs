//! Ticks on the guest side: bundles queued in order, applied oldest first
//! (a bounded catch-up per poll), hash reports, and this player's input.

use std::time::Duration;

use game_api::GameWire;
use game_api::game::Input;
use game_api::{Bot, Game, LevelStatus};
use protocol::name::sanitize_display_name;
use protocol::peer::TickInput;
use protocol::peer::{Feature, REDUNDANT_INPUTS};
use protocol::peer::{GuestMessage, TickInputBundle, TickInputs};
use protocol::tick::HASH_REPORT_INTERVAL_TICKS;

use super::{AppliedTick, GuestEnd, GuestEvent, GuestFault, GuestSession, Phase};

/// Bundles applied per poll before yielding to the driver (the bounded
/// fast-forward loop).
const MAX_CATCH_UP_PER_POLL: usize = 256;

/// Bundles a late joiner holds while its state is still on the way (three
/// minutes of ticks, more than a relay's longest catch-up); a transfer
/// slower than that fails the join.
const MAX_HELD_WHILE_JOINING: usize = super::resync::MAX_HELD_WHILE_RESYNCING;

impl<E: Game> GuestSession<E> {
    pub(super) fn on_bundle(&mut self, b: TickInputBundle<E::Wire>, now: Duration) {
        if matches!(self.phase, Phase::AwaitInit) {
            // Bundles ride another channel than the session init and can
            // overtake it (a late joiner's catch-up frames, sent right
            // behind its init): held, bounded, and sorted out by the init.
            if self.backlog.len() >= MAX_HELD_WHILE_JOINING {
                self.end(GuestEnd::SetupFailed(
                    "the session init took too long to arrive".into(),
                ));
                return;
            }
            self.backlog.push_back(b);
            return;
        }
        if self.joining() {
            // The level's bundles can outrun its state (another channel).
            if b.level_epoch == self.level_epoch {
                if self.backlog.len() >= MAX_HELD_WHILE_JOINING {
                    self.end(GuestEnd::SetupFailed(
                        "the join state took too long to arrive".into(),
                    ));
                    return;
                }
                self.backlog.push_back(b);
            }
            return;
        }
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
        if self.resync_holds() {
            self.hold_for_resync(b);
            return;
        }
        if self.redundant_inputs() {
            self.clock.observe(b.tick, now);
        }
        self.backlog.push_back(b);
    }

    pub(super) fn apply_backlog(&mut self, now: Duration) {
        self.clock_hint = now;
        if !matches!(self.phase, Phase::Running) || self.resync_holds() {
            // A late joiner's held bundles wait for its state, a resync's
            // for its other half.
            return;
        }
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

    fn apply_bundle(&mut self, b: TickInputBundle<E::Wire>) {
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        if crate::replay::level_over(engine) {
            // The level is over where every peer's engine says so; a
            // relay's bundles can run past it until its authority reports.
            return;
        }
        if b.tick != engine.tick() {
            let expected = engine.tick();
            self.stats.out_of_sequence += 1;
            self.events.push(GuestEvent::OutOfSequence {
                bundle: b.tick,
                engine: expected,
            });
            if b.tick > expected {
                // The channel is ordered and reliable: the missing tick is
                // not coming, and no later bundle can be applied. Say so
                // rather than stall until the link closes.
                self.end(GuestEnd::Failed(format!(
                    "the host's tick {expected} never arrived (tick {} came next)",
                    b.tick
                )));
            }
            return;
        }
        for (joiner, add) in b.roster_add.iter().flatten() {
            engine.add_player(joiner, add.input_delay);
            self.names
                .insert(joiner.clone(), sanitize_display_name(&add.name));
        }
        let remove = b.roster_remove.clone().unwrap_or_default();
        let mut inputs = b.inputs;
        for id in engine.roster() {
            if !remove.contains(&id) && !inputs.contains_key(&id) {
                self.events.push(GuestEvent::MissingInput(id.clone()));
                inputs.insert(id, Input::<E>::default());
            }
        }
        engine.advance(&inputs, &remove);
        let after = engine.tick();
        self.pending.confirm(after);
        if let Some(GuestFault::CorruptAtTick(t)) = self.config.fault
            && t == after
            && self.level_epoch == 1
        {
            // Once: a guest rebuilt in place passes this tick again.
            self.config.fault = None;
            if let Err(e) = engine.scramble(self.me.as_ref()) {
                self.events.push(GuestEvent::FaultFailed(e));
            }
        }
        let report_tick = after % HASH_REPORT_INTERVAL_TICKS == 0;
        let hash = (report_tick || self.config.record_ticks).then(|| engine.world_hash());
        if engine.status() == LevelStatus::Complete && self.fell_behind_since.is_none() {
            // Waiting for the host's transition from now on.
            self.fell_behind_since = Some(self.clock_hint);
        }
        self.stats.bundles_applied += 1;
        if self
            .me
            .as_ref()
            .is_some_and(|me| b.held_input_fallback.contains(me))
        {
            self.meter.held.record(self.clock_hint, 0);
        }
        if let (true, Some(hash)) = (self.config.record_ticks, hash) {
            self.applied.push(AppliedTick {
                epoch: self.level_epoch,
                tick: b.tick,
                hash,
                held: b.held_input_fallback,
                removed: remove.clone(),
                neutral: inputs
                    .iter()
                    .filter(|(_, i)| **i == Input::<E>::default())
                    .map(|(id, _)| id.clone())
                    .collect(),
            });
        }
        if let (true, Some(hash)) = (report_tick, hash) {
            self.report_hash(after, hash);
        }
        inputs.retain(|id, _| !remove.contains(id));
        self.known_inputs = inputs;
        if !self.redundant_inputs() {
            self.sample_input();
        }
        self.authority_duties();
    }

    /// Whether inputs go redundantly on the guest's own clock.
    pub(super) fn redundant_inputs(&self) -> bool {
        self.features.has(Feature::RedundantInputs)
    }

    /// A level starts: nothing sampled yet, the host's clock unknown.
    pub(super) fn start_level_inputs(&mut self) {
        self.clock.reset();
        self.last_tagged = None;
        self.recent_inputs.clear();
        self.runs.reset();
        self.pending.clear();
        self.known_inputs.clear();
        self.sample_input();
    }

    /// Whether the level takes this player's input (running or counting
    /// down, with a player to play).
    fn level_takes_input(&self) -> bool {
        self.me.is_some()
            && !self.spectator
            && self.engine.as_ref().is_some_and(|e| {
                matches!(
                    e.status(),
                    LevelStatus::Running | LevelStatus::Countdown { .. }
                )
            })
    }

    /// This player's input now (the pilot's or the local one), while the
    /// level takes inputs.
    fn decide(&mut self) -> Option<Input<E>> {
        if !self.level_takes_input() {
            return None;
        }
        let engine = self.engine.as_ref()?;
        let input = match &mut self.pilot {
            Some(p) => p.decide(engine),
            None => self.local_input.clone(),
        };
        Some(E::Wire::sanitize(&input))
    }

    /// Samples this player's input for the engine's tick plus this
    /// player's input delay (the spec's rule, after each bundle; with
    /// redundant inputs only at the start of a level).
    pub(super) fn sample_input(&mut self) {
        let Some(tick) = self.engine.as_ref().map(|e| e.tick() + self.input_delay) else {
            return;
        };
        if self.redundant_inputs() {
            self.send_redundant(tick, tick);
            return;
        }
        let (Some(input), Some(me)) = (self.decide(), self.me.clone()) else {
            return;
        };
        self.pending.push(tick, input.clone());
        self.outbox.push(GuestMessage::TickInput(TickInput {
            tick,
            player_id: me,
            input,
        }));
    }

    /// Redundant inputs: samples for every tick the host clock has made
    /// due, up to the host's tick now plus one plus the input delay (one
    /// per tick; after a pause only the ticks still ahead of the host).
    pub(super) fn sample_on_clock(&mut self, now: Duration) {
        if !self.redundant_inputs() || !matches!(self.phase, Phase::Running) {
            return;
        }
        let Some(host_tick) = self.clock.host_tick(now) else {
            return;
        };
        let target = host_tick + 1 + self.input_delay;
        let first = self.last_tagged.map_or(0, |t| t + 1).max(host_tick + 1);
        if first <= target {
            self.send_redundant(first, target);
        }
    }

    /// When [`GuestSession::sample_on_clock`] next has a tick to sample.
    pub(super) fn next_sample_due(&self) -> Option<Duration> {
        if !self.redundant_inputs()
            || !matches!(self.phase, Phase::Running)
            || self.host_lost_at.is_some()
            || !self.level_takes_input()
        {
            return None;
        }
        let last = self.last_tagged?;
        // Due once host_tick + 1 + delay passes `last`.
        self.clock.time_of(last.saturating_sub(self.input_delay))
    }

    /// Samples ticks `first..=last` and sends them with the ones before
    /// (consecutive ticks only, at most `REDUNDANT_INPUTS`); on input runs
    /// only when `InputRuns::due` says.
    fn send_redundant(&mut self, first: u64, last: u64) {
        if self.last_tagged.is_some_and(|t| first != t + 1) {
            self.recent_inputs.clear();
            self.runs.reset();
        }
        let mut changed = false;
        for tick in first..=last {
            let Some(input) = self.decide() else {
                return;
            };
            changed |= self
                .recent_inputs
                .back()
                .is_none_or(|(_, before)| *before != input);
            self.pending.push(tick, input.clone());
            self.recent_inputs.push_back((tick, input));
            self.last_tagged = Some(tick);
            if self.recent_inputs.len() > REDUNDANT_INPUTS {
                self.recent_inputs.pop_front();
            }
        }
        let (Some(me), Some((first_tick, _))) = (self.me.clone(), self.recent_inputs.front())
        else {
            return;
        };
        let first_tick = *first_tick;
        if self.features.has(Feature::InputRuns) && !self.runs.due(changed, last) {
            return;
        }
        let (hash_report, snapshot_ack) = self.folded.take(self.level_epoch);
        self.outbox.push(GuestMessage::TickInputs(TickInputs {
            player_id: me,
            level_epoch: self.level_epoch,
            first_tick,
            inputs: self.recent_inputs.iter().map(|(_, i)| i.clone()).collect(),
            hash_report,
            snapshot_ack,
        }));
    }
}
