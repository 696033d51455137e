//! Level transitions on the guest side: the payload in chunks, the new
//! level built from it, the ack, and waiting for a resend on failure.

use std::time::Duration;

use game_api::{Bot, Game, LevelSetup};
use protocol::chunk::{Chunk, ChunkEnd, Reassembler};
use protocol::peer::Feature;
use protocol::peer::{GuestMessage, TransitionPayload};

use super::{GuestEvent, GuestSession};
use crate::delay;

impl<E: Game> GuestSession<E> {
    pub(super) fn on_transition_init(&mut self, level_epoch: u32) {
        if level_epoch > self.level_epoch {
            self.transition = Some((level_epoch, Reassembler::default()));
        } else if level_epoch == self.level_epoch {
            // A resend after our ack crossed it: ack again.
            self.outbox
                .push(GuestMessage::LevelTransitionAck { level_epoch });
        }
    }

    pub(super) fn on_transition_chunk(&mut self, level_epoch: u32, chunk: &Chunk, now: Duration) {
        if let Some((epoch, r)) = &mut self.transition
            && *epoch == level_epoch
            && let Err(e) = r.push(chunk)
        {
            self.transition_failed(e.to_string(), now);
        }
    }

    pub(super) fn on_transition_end(&mut self, level_epoch: u32, end: &ChunkEnd, now: Duration) {
        let Some((epoch, r)) = self.transition.take() else {
            return;
        };
        if epoch != level_epoch {
            self.transition = Some((epoch, r));
            return;
        }
        match r.finish_parse::<TransitionPayload<E::Wire>>(end) {
            Ok(p) => self.apply_transition(epoch, p, now),
            Err(e) => self.transition_failed(e.to_string(), now),
        }
    }

    fn transition_failed(&mut self, why: String, now: Duration) {
        self.events.push(GuestEvent::TransitionRejected(why));
        self.transition = None;
        self.stats.transition_failures += 1;
        if self.fell_behind_since.is_none() {
            self.fell_behind_since = Some(now);
        }
    }

    fn apply_transition(&mut self, epoch: u32, p: TransitionPayload<E::Wire>, now: Duration) {
        // Old-level bundles still queued belong to a level we are leaving.
        self.apply_backlog(now);
        let Some(me) = self.me.clone() else { return };
        if !self.spectator && !p.roster.contains(&me) {
            self.transition_failed("the new roster does not include this player".into(), now);
            return;
        }
        let Some(settings) = self.settings.clone() else {
            return;
        };
        let took_up = self.features.has(Feature::InputDelay);
        let checked = if self.spectator {
            delay::check_delays(&p.input_delays, &p.roster, took_up).map(|()| self.input_delay)
        } else {
            delay::check_level(&p.input_delays, &p.roster, &me, took_up)
        };
        let my_delay = match checked {
            Ok(d) => d,
            Err(e) => {
                self.transition_failed(e, now);
                return;
            }
        };
        let level_index = p.level_index;
        let setup = LevelSetup {
            body: p.body,
            roster: p.roster,
            head: p.head,
            settings,
            player_count: p.player_count,
            carryovers: p.carryovers,
            input_delays: p.input_delays,
        };
        match E::new_level(setup) {
            Ok(engine) => {
                self.engine = Some(engine);
                self.level_epoch = epoch;
                self.level_index = level_index;
                self.input_delay = my_delay;
                self.backlog.clear();
                self.snapshots.clear();
                self.fell_behind_since = None;
                self.render_offsets.clear();
                if let Some(p) = &mut self.pilot {
                    p.start_level(my_delay);
                }
                self.stats.transitions += 1;
                self.outbox
                    .push(GuestMessage::LevelTransitionAck { level_epoch: epoch });
                self.start_level_inputs();
            }
            Err(e) => self.transition_failed(format!("level rejected: {e}"), now),
        }
    }
}
