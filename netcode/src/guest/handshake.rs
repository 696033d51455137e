//! Setup on the guest side: the version handshake, the session init and
//! the first map in chunks.

use std::collections::BTreeMap;

use engine::{Engine, LevelSetup};
use protocol::chunk::{Chunk, ChunkEnd, Reassembler};
use protocol::map::GameMap;
use protocol::peer::{FEATURE_INPUT_DELAY, GuestMessage, PEER_PROTOCOL_VERSION, SessionInit};
use protocol::tick::{FIXED_DT, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ};

use super::{GuestEnd, GuestEvent, GuestSession, Phase};
use crate::delay;
use crate::features::Features;
use crate::pilot::DelayAwareBot;

impl<E: Engine> GuestSession<E> {
    pub(super) fn on_host_hello(
        &mut self,
        build_version: String,
        protocol_version: u32,
        offered: &[String],
    ) {
        if !matches!(self.phase, Phase::AwaitHello) {
            return;
        }
        if build_version != self.config.build_version || protocol_version != PEER_PROTOCOL_VERSION {
            // The host decides; its refusal names both builds.
            self.events
                .push(GuestEvent::HostBuildDiffers(build_version));
        }
        let taken = Features::agreed(offered, &self.config.features);
        self.outbox.push(GuestMessage::GuestHello {
            build_version: self.config.build_version.clone(),
            protocol_version: PEER_PROTOCOL_VERSION,
            display_name: self.config.display_name.clone(),
            features: taken.names().to_vec(),
        });
        self.features = taken;
        self.phase = Phase::AwaitInit;
    }

    pub(super) fn on_init(&mut self, init: SessionInit) {
        if !matches!(self.phase, Phase::AwaitInit) {
            return;
        }
        if init.tick_rate_hz != TICK_RATE_HZ
            || init.fixed_dt != FIXED_DT
            || init.reconcile_interval_ticks != RECONCILE_INTERVAL_TICKS
        {
            self.end(GuestEnd::SetupFailed(
                "tick constants differ from this build's".into(),
            ));
            return;
        }
        let took_up = self.features.has(FEATURE_INPUT_DELAY);
        match delay::check_level(
            &init.input_delays,
            &init.roster,
            &init.your_player_id,
            took_up,
        ) {
            Ok(d) if d == init.input_delay_ticks => self.input_delay = d,
            Ok(d) => {
                self.end(GuestEnd::SetupFailed(format!(
                    "input delay {} differs from this player's {d} in the delays",
                    init.input_delay_ticks
                )));
                return;
            }
            Err(e) => {
                self.end(GuestEnd::SetupFailed(e));
                return;
            }
        }
        self.phase = Phase::Map(Box::new(init), Reassembler::default());
    }

    pub(super) fn on_map_chunk(&mut self, chunk: &Chunk) {
        if let Phase::Map(_, r) = &mut self.phase
            && let Err(e) = r.push(chunk)
        {
            self.end(GuestEnd::SetupFailed(format!("map transfer: {e}")));
        }
    }

    pub(super) fn on_map_end(&mut self, end: &ChunkEnd) {
        let phase = std::mem::replace(&mut self.phase, Phase::AwaitInit);
        let Phase::Map(init, r) = phase else {
            self.phase = phase;
            return;
        };
        match r.finish_parse::<GameMap>(end) {
            Ok(map) => self.finish_setup(*init, map),
            Err(e) => self.end(GuestEnd::SetupFailed(format!("map transfer: {e}"))),
        }
    }

    fn finish_setup(&mut self, init: SessionInit, map: GameMap) {
        let setup = LevelSetup {
            map,
            roster: init.roster.clone(),
            seed: init.gameplay_seed,
            difficulty: init.difficulty,
            player_count: init.player_count,
            carryovers: BTreeMap::new(),
            input_delays: init.input_delays.clone(),
        };
        match E::new_level(setup) {
            Ok(engine) => {
                self.engine = Some(engine);
                if self.config.bot {
                    let mut pilot = DelayAwareBot::new(init.your_player_id.clone());
                    pilot.start_level(self.input_delay);
                    self.pilot = Some(pilot);
                }
                self.me = Some(init.your_player_id);
                self.names = init.player_names;
                self.level_epoch = 1;
                self.phase = Phase::Running;
                self.outbox.push(GuestMessage::SetupAck);
                self.start_level_inputs();
            }
            Err(e) => self.end(GuestEnd::SetupFailed(format!("level rejected: {e}"))),
        }
    }
}
