//! Setup on the guest side: the version handshake, the session init and
//! the first map in chunks; for a late joiner, the running level's map and
//! the world's exact state at its join tick instead (and the same for a
//! relay's in-place resync, see `resync`).

use std::collections::BTreeMap;

use game_api::{Bot, Game, GameWire, LevelSetup};
use protocol::chunk::{Chunk, ChunkEnd, Reassembler};
use protocol::peer::{Feature, GuestHello, JoinPoint, PEER_PROTOCOL_VERSION};
use protocol::peer::{GuestMessage, JoinPayload, SessionInit};
use protocol::tick::{FIXED_DT, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ};

use super::{GuestEnd, GuestEvent, GuestSession, Phase};
use crate::delay;

impl<E: Game> GuestSession<E> {
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
        let (taken, hello) = GuestHello::taking(
            &self.config.build_version,
            &self.config.display_name,
            offered,
            &self.config.features,
        );
        self.outbox.push(GuestMessage::GuestHello(GuestHello {
            resume: self.config.resume_token.clone(),
            spectate: self.config.spectate,
            ..hello
        }));
        self.features = taken;
        self.phase = Phase::AwaitInit;
    }

    pub(super) fn on_init(&mut self, init: SessionInit<E::Wire>) {
        let resync = self.is_resync_init(&init);
        if !matches!(self.phase, Phase::AwaitInit) && !resync {
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
        let took_up = self.features.has(Feature::InputDelay);
        if init.spectator != self.config.spectate {
            let why = if init.spectator {
                "the host admitted this guest to watch; it asked to play"
            } else {
                "the host gave this guest a player; it asked to watch"
            };
            self.end(GuestEnd::SetupFailed(why.into()));
            return;
        }
        if init.spectator && init.join.is_none() {
            self.end(GuestEnd::SetupFailed(
                "a spectator's init without a join point".into(),
            ));
            return;
        }
        if init.spectator {
            if let Err(e) = delay::check_delays(&init.input_delays, &init.roster, took_up) {
                self.end(GuestEnd::SetupFailed(e));
                return;
            }
            self.spectator = true;
        } else {
            let checked = if init.join.is_some() && !init.roster.contains(&init.your_player_id) {
                // A relay's joiner, entering with a later roster add.
                delay::check_joiner(
                    &init.input_delays,
                    &init.roster,
                    init.input_delay_ticks,
                    took_up,
                )
            } else {
                delay::check_level(
                    &init.input_delays,
                    &init.roster,
                    &init.your_player_id,
                    took_up,
                )
            };
            match checked {
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
        }
        self.rejoin_token.clone_from(&init.rejoin_token);
        if resync {
            self.resync_state_coming();
        } else {
            self.events.push(GuestEvent::Admitted {
                player: init.your_player_id.clone(),
                rejoin_token: init.rejoin_token.clone(),
            });
        }
        if let Some(join) = &init.join {
            if join.level_epoch == 0 {
                self.end(GuestEnd::SetupFailed("join point at level epoch 0".into()));
                return;
            }
            // The level's snapshots and bundles may arrive before its
            // state: they are held for it (see `on_bundle`).
            self.level_epoch = join.level_epoch;
        }
        // Bundles held before the init: only the level it starts keeps its.
        let epoch = init.join.as_ref().map_or(1, |j| j.level_epoch);
        self.backlog.retain(|b| b.level_epoch == epoch);
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
        if init.join.is_some() {
            match r.finish_parse::<JoinPayload<E::Wire>>(end) {
                Ok(payload) => self.finish_setup(*init, payload.body.clone(), Some(&payload)),
                Err(e) => self.end(GuestEnd::SetupFailed(format!("join transfer: {e}"))),
            }
            return;
        }
        match r.finish_parse::<<E::Wire as GameWire>::LevelBody>(end) {
            Ok(map) => self.finish_setup(*init, map, None),
            Err(e) => self.end(GuestEnd::SetupFailed(format!("map transfer: {e}"))),
        }
    }

    /// Builds the level from the init and the map; a late joiner then
    /// loads the world's exact state into it.
    fn finish_setup(
        &mut self,
        init: SessionInit<E::Wire>,
        map: <E::Wire as GameWire>::LevelBody,
        joined: Option<&JoinPayload<E::Wire>>,
    ) {
        let setup = LevelSetup {
            body: map,
            roster: init.roster.clone(),
            head: init.head,
            settings: init.settings.clone(),
            player_count: init.player_count,
            carryovers: BTreeMap::new(),
            input_delays: init.input_delays.clone(),
        };
        let built = E::new_level(setup).map_err(|e| format!("level rejected: {e}"));
        let built = match (built, joined, &init.join) {
            (Ok(mut engine), Some(payload), Some(point)) => {
                load_join_state(&mut engine, payload, point).map(|()| engine)
            }
            (built, _, _) => built,
        };
        match built {
            Ok(engine) => {
                let joined_at = init.join.as_ref().map(|j| (j.level_epoch, j.tick));
                if let Some((epoch, tick)) = joined_at {
                    // The exact state stands for the snapshot of its tick;
                    // bundles before it are already in it.
                    self.snapshot_hashes
                        .push((epoch, tick, engine.world_hash()));
                    self.backlog.retain(|b| b.tick >= tick);
                }
                self.engine = Some(engine);
                self.settings = Some(init.settings);
                if self.config.bot && !self.spectator {
                    let mut pilot = E::Bot::new(init.your_player_id.clone());
                    pilot.start_level(self.input_delay);
                    self.pilot = Some(pilot);
                }
                self.me = Some(init.your_player_id);
                self.names = init.player_names;
                self.level_epoch = joined_at.map_or(1, |j| j.0);
                self.level_index = init.join.as_ref().map_or(0, |j| j.level_index);
                self.joined_at = joined_at;
                self.resumed = init.join.as_ref().is_some_and(|j| j.resumed);
                self.phase = Phase::Running;
                self.outbox.push(GuestMessage::SetupAck);
                self.start_level_inputs();
                self.resync_rebuilt();
            }
            Err(e) => self.end(GuestEnd::SetupFailed(e)),
        }
    }
}

/// Loads a late joiner's state into the level just built and checks it is
/// at the join tick.
fn load_join_state<E: Game>(
    engine: &mut E,
    payload: &JoinPayload<E::Wire>,
    point: &JoinPoint,
) -> Result<(), String> {
    let bytes = payload
        .state_bytes()
        .map_err(|e| format!("join state is not base64: {e}"))?;
    engine
        .load_exact(&bytes)
        .map_err(|e| format!("join state rejected: {e}"))?;
    if engine.tick() != point.tick {
        return Err(format!(
            "join state is at tick {}, the join point at {}",
            engine.tick(),
            point.tick
        ));
    }
    Ok(())
}
