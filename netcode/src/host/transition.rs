//! Level transitions: the next level's payload to every live guest, acks,
//! bounded resends, and dropping whoever never acks.

use game_api::GameWire;
use std::collections::BTreeSet;
use std::time::Duration;

use game_api::{Game, LevelSetup};
use protocol::chunk::split;
use protocol::peer::EndReason;
use protocol::peer::{HostMessage, TransitionPayload};
use protocol::tick::{TICK_RATE_HZ, TRANSITION_ACK_TIMEOUT_MS, TRANSITION_RETRY_LIMIT};

use super::{HostEvent, HostSession, Phase};
use crate::stats::GuestSlot;

/// A transition waiting for acks.
#[derive(Debug)]
pub(super) struct Transition<W: GameWire> {
    pub(super) pending: BTreeSet<GuestSlot>,
    attempt: u32,
    pub(super) deadline: Duration,
    messages: Vec<HostMessage<W>>,
}

impl<E: Game> HostSession<E> {
    pub(super) fn level_complete(&mut self, now: Duration) {
        self.stats.levels_completed += 1;
        if self.level_index + 1 >= self.level_count() {
            self.end(EndReason::Completed);
            return;
        }
        let Some(old) = self.engine.as_ref() else {
            return;
        };
        let roster = old.roster();
        let carryovers = old.carryovers();
        self.fold_level_scores();
        self.level_index += 1;
        let player_count = u32::try_from(roster.len()).unwrap_or(u32::MAX);
        // Refitted to the links as they are now.
        let delays = self.level_delays(&roster);
        let level = self.config.plan.level(self.level_index, player_count);
        let payload: TransitionPayload<E::Wire> = TransitionPayload {
            level_index: self.level_index,
            head: level.head,
            player_count,
            roster: roster.clone(),
            carryovers: carryovers.clone(),
            body: level.body,
            input_delays: delays.clone(),
        };
        let setup = LevelSetup {
            body: payload.body.clone(),
            roster,
            head: payload.head.clone(),
            settings: self.settings(),
            player_count,
            carryovers,
            input_delays: delays.clone(),
        };
        let text = serde_json::to_string(&payload);
        self.record_level_end();
        let recorded = self.config.record_replay.then(|| setup.clone());
        let level = setup.clone();
        let (engine, text) = match (E::new_level(setup), text) {
            (Ok(e), Ok(t)) => (e, t),
            (Err(e), _) => {
                return self.level_failed(format!("could not build the next level: {e}"));
            }
            (_, Err(e)) => {
                return self.level_failed(format!("could not encode the next level: {e}"));
            }
        };
        // The engine holds nothing else we need; the run table kept the scores.
        self.engine = Some(engine);
        self.level = Some(level);
        self.level_epoch += 1;
        if let Some(setup) = recorded {
            self.record_level_start(setup);
        }
        self.start_level_inputs(delays);
        self.audit.clear();
        let epoch = self.level_epoch;
        let (chunks, end) = split(&text);
        let mut messages = vec![HostMessage::LevelTransitionInit {
            level_epoch: epoch,
            level_index: self.level_index,
        }];
        messages.extend(
            chunks
                .into_iter()
                .map(|chunk| HostMessage::LevelTransitionChunk {
                    level_epoch: epoch,
                    chunk,
                }),
        );
        messages.push(HostMessage::LevelTransitionEnd {
            level_epoch: epoch,
            end,
        });
        let pending: BTreeSet<GuestSlot> = self.live_slots().into_iter().collect();
        for slot in &pending {
            for m in &messages {
                self.send(*slot, m.clone());
            }
        }
        self.phase = Phase::Transition(Transition {
            pending,
            attempt: 0,
            deadline: now + Duration::from_millis(TRANSITION_ACK_TIMEOUT_MS),
            messages,
        });
    }

    pub(super) fn on_transition_ack(&mut self, slot: GuestSlot, level_epoch: u32) {
        if let Phase::Transition(t) = &mut self.phase
            && level_epoch == self.level_epoch
        {
            t.pending.remove(&slot);
        }
    }

    pub(super) fn transition_deadline(&mut self, now: Duration) {
        let Phase::Transition(t) = &mut self.phase else {
            return;
        };
        let pending: Vec<GuestSlot> = t
            .pending
            .iter()
            .copied()
            .filter(|s| self.seats.get(*s).is_some_and(|seat| seat.connected))
            .collect();
        if !pending.is_empty() && t.attempt < TRANSITION_RETRY_LIMIT {
            t.attempt += 1;
            t.deadline = now + Duration::from_millis(TRANSITION_ACK_TIMEOUT_MS);
            let messages = t.messages.clone();
            self.stats.transition_resends += 1;
            for slot in pending {
                for m in &messages {
                    self.send(slot, m.clone());
                }
            }
            return;
        }
        // Proceed without whoever never acked: they leave at tick 0 of the
        // new level, a synchronized removal like any other.
        let never_acked: Vec<GuestSlot> = t.pending.iter().copied().collect();
        for slot in never_acked {
            let Some(seat) = self.seats.get(slot) else {
                continue;
            };
            if seat.spectator {
                self.drop_spectator(slot);
                continue;
            }
            if let Some(p) = seat.player.clone() {
                self.events.push(HostEvent::TransitionDropped(p.clone()));
                self.remove_at_start.push(p);
            }
        }
        self.phase = Phase::Running;
        self.clock = Some(lockstep::pacing::TickClock::start(TICK_RATE_HZ, now));
    }
}
