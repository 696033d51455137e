//! The end-of-run table (scores and link health per player) and the end
//! of the session.

use std::collections::BTreeSet;

use game_api::Game;
use game_api::PlayerId;
use protocol::peer::HostMessage;
use protocol::peer::{EndReason, LinkHealth, ScoreRow};

use super::{HostEvent, HostOutput, HostSession, Phase};

impl<E: Game> HostSession<E> {
    /// The end-of-run table so far (levels finished plus the current one).
    pub fn scores(&self) -> Vec<ScoreRow> {
        let mut totals = self.run_scores.clone();
        if let Some(e) = &self.engine {
            for (id, s) in e.scores() {
                totals.entry(id).or_default().add(s);
            }
        }
        let removed: BTreeSet<&PlayerId> = self
            .stats
            .roster_removed
            .iter()
            .map(|(_, _, p)| p)
            .collect();
        let count = |m: &std::collections::BTreeMap<PlayerId, u32>, id: &PlayerId| {
            m.get(id).copied().unwrap_or(0)
        };
        totals
            .into_iter()
            .map(|(id, score)| ScoreRow {
                name: self.names.get(&id).cloned().unwrap_or_default(),
                disconnected: removed.contains(&id),
                link: LinkHealth {
                    desyncs: count(&self.stats.desyncs, &id),
                    persistent_desyncs: count(&self.stats.persistent_desyncs, &id),
                    held_inputs: self.stats.held_per_player.get(&id).copied().unwrap_or(0),
                },
                player_id: id,
                kill_score: score.kill_score,
                kills: score.kills,
            })
            .collect()
    }

    /// Adds the finished level's scores to the run's.
    pub(super) fn fold_level_scores(&mut self) {
        if let Some(e) = &self.engine {
            for (id, s) in e.scores() {
                self.run_scores.entry(id).or_default().add(s);
            }
        }
    }

    /// Sends the end table to every live guest, closes every connection.
    pub(super) fn end(&mut self, reason: EndReason) {
        self.record_level_end();
        let scores = self.scores();
        let final_tick = self.engine.as_ref().map(|e| e.tick()).unwrap_or(0);
        let level_epoch = self.level_epoch;
        for slot in self.seats.slots() {
            let live = self
                .seats
                .get(slot)
                .is_some_and(|seat| seat.admitted && !seat.removed && seat.connected);
            if live {
                self.send(
                    slot,
                    HostMessage::SessionEnd {
                        reason,
                        scores: scores.clone(),
                        level_epoch,
                        final_tick,
                    },
                );
            }
            self.outbox.push(HostOutput::Close(slot));
        }
        self.phase = Phase::Ended(reason);
        self.events.push(HostEvent::GuestsPresent(0));
        self.events.push(HostEvent::Ended(reason));
    }
}
