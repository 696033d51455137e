//! Starting a level: asking the authority for it, sending its payload to
//! every peer, and starting the tick clock once they loaded it.

use std::sync::Arc;
use std::time::Duration;

use super::{Phase, Relay, RelayEvent, RelayMessage, RelayOutput};
use crate::judge::HashJudge;
use crate::log::{InputLog, Snapshot};
use crate::pacing::TickClock;

impl<I: Clone + Default> Relay<I> {
    /// Asks the authority for the next level (epoch + 1) for everyone
    /// seated.
    pub(super) fn begin_level(&mut self, now: Duration) {
        self.epoch += 1;
        for id in std::mem::take(&mut self.arrivals).into_keys() {
            self.roster.insert(id);
        }
        self.log = None;
        self.asked_snapshot = None;
        self.judge = HashJudge::new(self.config.judge_window);
        for p in self.peers.values_mut() {
            p.receiving = false;
            p.loaded = false;
        }
        self.phase = Phase::Asking { since: now };
        let before = self.authority;
        // A new authority is asked as it is handed the role.
        self.elect();
        if self.authority == before {
            self.ask_level();
        }
    }

    pub(super) fn ask_level(&mut self) {
        let Some(authority) = self.authority else {
            return;
        };
        let roster = self
            .seated()
            .map(|(id, p)| (id.clone(), p.name.clone()))
            .collect();
        let input_delays = self.seated_delays();
        // The level is built with these: frozen until the next ask, though
        // the links' delays may be refitted meanwhile.
        self.level_delays.clone_from(&input_delays);
        self.outbox.push(RelayOutput::To(
            authority,
            RelayMessage::AskLevel {
                epoch: self.epoch,
                level_index: self.level_index,
                roster,
                input_delays,
            },
        ));
    }

    /// The level's payload came from the authority: send it to everyone.
    pub(super) fn level_payload(&mut self, payload: Arc<[u8]>, now: Duration) {
        self.inputs.start_level(self.level_delays.clone());
        self.level_players = self.level_delays.keys().cloned().collect();
        let start = Snapshot {
            epoch: self.epoch,
            tick: 0,
            roster: self.input_delays(),
            payload: payload.clone(),
        };
        self.stats.anchor_bytes_max = self.stats.anchor_bytes_max.max(payload.len());
        self.log = Some(InputLog::new(start, self.config.log_cap()));
        let to = self.connected();
        for s in &to {
            if let Some(p) = self.peers.get_mut(s) {
                p.receiving = true;
            }
        }
        self.broadcast(
            to,
            RelayMessage::LevelStart {
                epoch: self.epoch,
                payload,
            },
        );
        self.phase = Phase::Starting {
            deadline: now + self.config.answer_timeout,
        };
    }

    pub(super) fn start_running(&mut self, now: Duration) {
        self.phase = Phase::Running {
            clock: TickClock::start(self.config.tick_rate_hz, now),
        };
        self.events
            .push(RelayEvent::LevelStarted { epoch: self.epoch });
    }
}
