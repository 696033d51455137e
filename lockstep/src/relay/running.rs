//! The running level: ticks and their frames, what the peers send (inputs
//! and hashes), the authority's answers, and the hash verdicts.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use game_api::PlayerId;

use super::{AskedSnapshot, Phase, Relay, RelayEnd, RelayEvent, RelayMessage, RelayOutput, Slot};
use crate::frame::Frame;
use crate::inputs::Placement;
use crate::judge::{Filed, Judgment};
use crate::log::Snapshot;

impl<I: Clone + Default> Relay<I> {
    /// Player `slot`'s input for `tick` of level `epoch`. Returns where it
    /// went (`None`: not a player of this level, or another level).
    pub fn input(&mut self, slot: Slot, epoch: u32, tick: u64, input: I) -> Option<Placement> {
        if epoch != self.epoch
            || !matches!(self.phase, Phase::Running { .. } | Phase::Starting { .. })
        {
            return None;
        }
        let player = self
            .peers
            .get(&slot)
            .filter(|p| p.connected)?
            .player()?
            .clone();
        if !self.roster.contains(&player) && !self.arrivals.contains_key(&player) {
            return None;
        }
        let now_tick = self.next_tick();
        Some(self.inputs.insert(player, tick, input, now_tick))
    }

    /// Connection `slot`'s world hash after `tick` ticks of level `epoch`.
    pub fn hash(&mut self, slot: Slot, epoch: u32, tick: u64, hash: u64) {
        if epoch != self.epoch {
            return;
        }
        let Some(peer) = self.peers.get(&slot) else {
            return;
        };
        if !peer.loaded {
            return;
        }
        match self.judge.report(slot, tick, hash, self.next_tick()) {
            Filed::Differs => self.desynced(slot, tick),
            Filed::Pending | Filed::Agrees | Filed::Ignored => {}
        }
    }

    /// The authority's payload for level `epoch`.
    /// Returns whether it was taken (from the authority, when asked).
    pub fn level(&mut self, slot: Slot, epoch: u32, payload: Arc<[u8]>, now: Duration) -> bool {
        if !self.check_authority(slot, epoch) {
            return false;
        }
        if !matches!(self.phase, Phase::Asking { .. }) {
            self.ignored(slot, "a level payload nobody asked for");
            return false;
        }
        self.level_payload(payload, now);
        true
    }

    /// The authority's world at `tick` of level `epoch`, and its hash.
    pub fn snapshot(&mut self, slot: Slot, epoch: u32, tick: u64, hash: u64, payload: Arc<[u8]>) {
        if !self.check_authority(slot, epoch) {
            return;
        }
        let Some(asked) = self
            .asked_snapshot
            .as_mut()
            .filter(|a| a.tick == tick && a.answer.is_none())
        else {
            self.ignored(slot, "a snapshot nobody asked for");
            return;
        };
        let snapshot = Snapshot {
            epoch,
            tick,
            roster: asked.roster.clone(),
            payload,
        };
        match self.judge.verdict(tick) {
            Some((v, majority)) => {
                self.asked_snapshot = None;
                self.settle_snapshot(hash, v, majority, snapshot);
            }
            None => asked.answer = Some((hash, snapshot)),
        }
    }

    /// The authority says level `epoch` ended at `tick`; `more` when
    /// another level follows.
    /// Returns whether it was taken (from the authority, for a tick sent).
    pub fn level_end(
        &mut self,
        slot: Slot,
        epoch: u32,
        tick: u64,
        more: bool,
        now: Duration,
    ) -> bool {
        if !self.check_authority(slot, epoch) {
            return false;
        }
        if !matches!(self.phase, Phase::Running { .. }) || tick > self.next_tick() {
            self.ignored(slot, "a level end for a tick not yet sent");
            return false;
        }
        if let Some(log) = &mut self.log {
            log.truncate_after(tick);
        }
        let to = self.receivers();
        self.broadcast(to, RelayMessage::LevelEnd { epoch, tick });
        self.events.push(RelayEvent::LevelEnded { epoch, tick });
        if more {
            self.level_index += 1;
            self.begin_level(now);
        } else {
            self.end(RelayEnd::Completed);
        }
        true
    }

    fn check_authority(&mut self, slot: Slot, epoch: u32) -> bool {
        if self.authority != Some(slot) {
            self.ignored(
                slot,
                "an authority message from a peer that is not the authority",
            );
            return false;
        }
        if epoch != self.epoch {
            self.ignored(slot, "an authority message for another level");
            return false;
        }
        true
    }

    fn ignored(&mut self, slot: Slot, why: &'static str) {
        self.events.push(RelayEvent::Ignored { slot, why });
    }

    pub(super) fn run_due_ticks(&mut self, now: Duration) {
        loop {
            let Phase::Running { clock } = &mut self.phase else {
                return;
            };
            let Some(lateness_us) = clock.take_due() else {
                return;
            };
            let held_before = self.stats.held_inputs;
            self.run_tick(now);
            self.events.push(RelayEvent::Ticked {
                lateness_us,
                held: self.stats.held_inputs - held_before,
            });
        }
    }

    fn run_tick(&mut self, now: Duration) {
        let Some(tick) = self.log.as_ref().map(|l| l.next_tick()) else {
            return;
        };
        let epoch = self.epoch;
        let mut remove: Vec<PlayerId> = Vec::new();
        for id in self.graces_expired(now) {
            if self.arrivals.remove(&id).is_some() {
                continue;
            }
            if self.roster.remove(&id) {
                remove.push(id);
            }
        }
        remove.sort();
        let add = std::mem::take(&mut self.arrivals);
        for (id, arrival) in &add {
            self.roster.insert(id.clone());
            self.level_players.insert(id.clone());
            self.inputs.join(id.clone(), tick, arrival.input_delay);
            self.events.push(RelayEvent::Arrived {
                epoch,
                tick,
                player: id.clone(),
            });
        }
        for id in &remove {
            self.events.push(RelayEvent::Removed {
                epoch,
                tick,
                player: id.clone(),
            });
        }
        let waiting: BTreeSet<PlayerId> = self
            .peers
            .values()
            .filter(|p| !p.connected || !p.loaded)
            .filter_map(|p| p.player().cloned())
            .collect();
        let roster = self.frame_roster();
        let mut taken = self.inputs.take(tick, &roster, &waiting);
        self.stats.held_inputs += taken.held.len() as u64;
        let inputs = roster
            .iter()
            .map(|id| taken.inputs.remove(id).unwrap_or_default())
            .collect();
        let frame = Arc::new(Frame {
            epoch,
            tick,
            roster,
            inputs,
            held: taken.held,
            add,
            remove,
        });
        if let Some(log) = &mut self.log {
            log.push(frame.clone());
            self.stats.log_frames_max = self.stats.log_frames_max.max(log.len());
        }
        self.stats.frames += 1;
        let to = self.receivers();
        self.broadcast(to, RelayMessage::Frame(frame));
        self.elect();
        let next = tick + 1;
        let interval = self.config.snapshot_interval.max(1);
        if next % interval == 0
            && let Some(authority) = self.authority
        {
            self.asked_snapshot = Some(AskedSnapshot {
                tick: next,
                roster: self.input_delays(),
                answer: None,
            });
            self.outbox.push(RelayOutput::To(
                authority,
                RelayMessage::AskSnapshot { epoch, tick: next },
            ));
        }
        let voters = self.voters();
        for judgment in self.judge.judge(next, &voters) {
            self.judged(judgment);
        }
    }

    /// The roster as frames share it: the previous frame's while the
    /// roster is the same, else a new one.
    fn frame_roster(&mut self) -> Arc<[PlayerId]> {
        if !self.frame_roster.iter().eq(self.roster.iter()) {
            self.frame_roster = self.roster.iter().cloned().collect();
        }
        self.frame_roster.clone()
    }

    /// Players that vote, best-ranked first (the authority, then by
    /// seniority), each with its origin.
    fn voters(&self) -> Vec<(Slot, u64)> {
        let mut v: Vec<(bool, u64, Slot, u64)> = self
            .peers
            .iter()
            .filter(|(_, p)| p.connected && p.loaded)
            .filter(|(_, p)| p.player().is_some_and(|id| self.roster.contains(id)))
            .map(|(s, p)| (Some(*s) != self.authority, p.seniority, *s, p.origin.0))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, _, s, o)| (s, o)).collect()
    }

    fn judged(&mut self, judgment: Judgment) {
        // A majority of the voting origins, not a tie won by rank.
        let majority = 2 * judgment.agreed > judgment.voting;
        let answered = self
            .asked_snapshot
            .as_ref()
            .is_some_and(|a| a.tick == judgment.tick && a.answer.is_some());
        if answered
            && let Some((claimed, snapshot)) = self.asked_snapshot.take().and_then(|a| a.answer)
        {
            self.settle_snapshot(claimed, judgment.hash, majority, snapshot);
        }
        // Without a majority of origins nobody can tell who is astray: a
        // split changes nothing (nobody is rebuilt, nothing anchored), so a
        // stranger cannot have honest players rebuilt by splitting a vote.
        if !majority {
            self.stats.splits += 1;
            self.events.push(RelayEvent::Split {
                epoch: self.epoch,
                tick: judgment.tick,
            });
            return;
        }
        for slot in judgment.dissenters {
            self.desynced(slot, judgment.tick);
        }
    }

    fn settle_snapshot(&mut self, claimed: u64, verdict: u64, majority: bool, snapshot: Snapshot) {
        let (epoch, tick, bytes) = (snapshot.epoch, snapshot.tick, snapshot.payload.len());
        // Only a majority of origins may anchor what rebuilds the others.
        if claimed != verdict || !majority {
            self.events
                .push(RelayEvent::SnapshotRejected { epoch, tick });
            return;
        }
        if let Some(log) = &mut self.log
            && log.anchor_at(snapshot)
        {
            self.stats.snapshots_verified += 1;
            self.stats.anchor_bytes_max = self.stats.anchor_bytes_max.max(bytes);
            self.events
                .push(RelayEvent::SnapshotVerified { epoch, tick, bytes });
        }
    }

    /// `slot`'s hash for `tick` lost: if it was the authority, authority
    /// passes on; it is rebuilt from the log.
    fn desynced(&mut self, slot: Slot, tick: u64) {
        let Some(peer) = self.peers.get_mut(&slot) else {
            return;
        };
        if !peer.loaded {
            return;
        }
        peer.loaded = false;
        self.stats.desyncs += 1;
        self.events.push(RelayEvent::Desynced {
            slot,
            epoch: self.epoch,
            tick,
        });
        if self.authority == Some(slot) {
            self.elect();
        }
        let player = self.peers.get(&slot).and_then(|p| p.player().cloned());
        if self.send_catch_up(slot)
            && let Some(player) = player
        {
            self.inputs.resume(&player, self.next_tick());
        }
    }

    /// Every player's input delay this level (the shared buffer's view).
    pub fn input_delays(&self) -> BTreeMap<PlayerId, u64> {
        self.roster
            .iter()
            .map(|p| (p.clone(), self.inputs.delay(p)))
            .collect()
    }
}
