//! Recording replays: the host's side of [`crate::replay`]. With
//! `record_replay` set, a level's start, every tick's bundle (in
//! [`super::ticks`]) and its end go out as [`HostEvent::Replay`].

use game_api::{Game, LevelSetup};

use super::{HostEvent, HostSession};
use crate::replay::{REPLAY_FORMAT, ReplayEnd, ReplayHeader, ReplayRecord};

impl<E: Game> HostSession<E> {
    /// A level was built from `setup` and the level epoch set: its header.
    pub(super) fn record_level_start(&mut self, setup: LevelSetup<E::Wire>) {
        let header = ReplayHeader {
            format: REPLAY_FORMAT,
            build: self.config.build_version.clone(),
            level_epoch: self.level_epoch,
            level_index: self.level_index,
            head: setup.head,
            settings: setup.settings,
            player_count: setup.player_count,
            names: setup
                .roster
                .iter()
                .filter_map(|p| Some((p.clone(), self.names.get(p)?.clone())))
                .collect(),
            roster: setup.roster,
            carryovers: setup.carryovers,
            input_delays: setup.input_delays,
            body: setup.body,
        };
        self.recording = true;
        self.events
            .push(HostEvent::Replay(ReplayRecord::Begin(Box::new(header))));
    }

    /// The level being recorded stopped (completed, or the session ended):
    /// its end record, once.
    pub(super) fn record_level_end(&mut self) {
        if !std::mem::take(&mut self.recording) {
            return;
        }
        let Some(engine) = self.engine.as_ref() else {
            return;
        };
        let end = ReplayEnd {
            ticks: engine.tick(),
            final_world_hash: game_api::WorldHash(engine.world_hash()).to_string(),
        };
        self.events.push(HostEvent::Replay(ReplayRecord::End(end)));
    }
}
