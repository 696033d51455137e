//! Setup (phase B): the roster is frozen, every admitted guest gets the
//! session init and the first map in chunks, and the level starts once all
//! acked or the setup timeout passed.

use std::collections::BTreeMap;
use std::time::Duration;

use game_api::LevelSpec;
use game_api::PlayerId;
use game_api::{Bot, Game, LevelSetup};
use protocol::chunk::split;
use protocol::name::sanitize_display_name;
use protocol::peer::{EndReason, FEATURE_INPUT_DELAY, Feature};
use protocol::peer::{HostMessage, SessionInit};
use protocol::tick::{FIXED_DT, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ};

use super::{HostEvent, HostSession, Phase};
use crate::delay;
use crate::rtt::RttEstimate;
use crate::stats::GuestSlot;

impl<E: Game> HostSession<E> {
    /// The host's own players (bots, then the host player) with their
    /// names: bots are "Bot 1", "Bot 2", ..., so every list marks them.
    pub(super) fn local_players(&self) -> Vec<(PlayerId, String)> {
        let host = self.config.host_player.as_ref().map(|h| &h.0);
        self.bots
            .iter()
            .map(|b| b.player_id().clone())
            .filter(|id| Some(id) != host)
            .enumerate()
            .map(|(i, id)| (id, format!("Bot {}", i + 1)))
            .chain(
                self.config
                    .host_player
                    .iter()
                    .map(|(id, name)| (id.clone(), sanitize_display_name(name))),
            )
            .collect()
    }

    /// Every player's input delay for a level with `roster`, fitted to the
    /// links ([`crate::delay`]) when the host offers [`FEATURE_INPUT_DELAY`]
    /// and every guest in the roster took it up; empty (the spec's fixed
    /// delay for everyone) otherwise, since each peer's engine must know
    /// every player's delay.
    pub(super) fn level_delays(&self, roster: &[PlayerId]) -> BTreeMap<PlayerId, u64> {
        let offered = self
            .config
            .features
            .iter()
            .any(|f| f == FEATURE_INPUT_DELAY);
        let guests: Vec<&super::seat_table::GuestSeat> = self
            .seats
            .iter()
            .filter(|s| s.player.as_ref().is_some_and(|p| roster.contains(p)))
            .collect();
        if !offered || guests.iter().any(|s| !s.features.has(Feature::InputDelay)) {
            return BTreeMap::new();
        }
        let links: BTreeMap<PlayerId, RttEstimate> = guests
            .iter()
            .filter_map(|s| s.player.clone())
            .map(|p| {
                let rtt = self.stats.rtt.get(&p).copied().unwrap_or_default();
                (p, rtt)
            })
            .collect();
        let local: Vec<PlayerId> = roster
            .iter()
            .filter(|p| !links.contains_key(*p))
            .cloned()
            .collect();
        delay::for_level(&links, &local)
    }

    /// Gives the level's delays to the input buffer and the host's bots.
    pub(super) fn start_level_inputs(&mut self, delays: BTreeMap<PlayerId, u64>) {
        self.inputs.start_level(delays);
        for bot in &mut self.bots {
            let d = self.inputs.delay(bot.player_id());
            bot.start_level(d);
        }
    }

    pub(super) fn begin_setup(&mut self, now: Duration) {
        let mut names: BTreeMap<PlayerId, String> = self.local_players().into_iter().collect();
        for seat in self.seats.iter().filter(|s| s.admitted && !s.spectator) {
            if let Some(p) = &seat.player {
                names.insert(p.clone(), seat.name.clone());
            }
        }
        let roster: Vec<PlayerId> = names.keys().cloned().collect();
        self.names = names;
        self.player_count = u32::try_from(roster.len()).unwrap_or(u32::MAX);
        if roster.is_empty() {
            self.end(EndReason::HostShutdown);
            return;
        }
        let LevelSpec { head, body: map } = self.config.plan.level(0, self.player_count);
        let delays = self.level_delays(&roster);
        let setup = LevelSetup {
            body: map.clone(),
            roster: roster.clone(),
            head: head.clone(),
            settings: self.settings(),
            player_count: self.player_count,
            carryovers: BTreeMap::new(),
            input_delays: delays.clone(),
        };
        let payload = serde_json::to_string(&map);
        let recorded = self.config.record_replay.then(|| setup.clone());
        let level = setup.clone();
        let (engine, payload) = match (E::new_level(setup), payload) {
            (Ok(e), Ok(p)) => (e, p),
            (Err(e), _) => return self.level_failed(format!("could not build level 1: {e}")),
            (_, Err(e)) => return self.level_failed(format!("could not encode level 1: {e}")),
        };
        self.engine = Some(engine);
        self.level = Some(level);
        self.level_epoch = 1;
        if let Some(setup) = recorded {
            self.record_level_start(setup);
        }
        self.start_level_inputs(delays);
        let (chunks, end) = split(&payload);
        // Spectators wait for the running level's state (see `spectators`).
        let players: Vec<(GuestSlot, PlayerId)> = self
            .seats
            .entries()
            .filter(|(_, seat)| !seat.spectator)
            .filter_map(|(slot, seat)| Some((slot, seat.player.clone()?)))
            .collect();
        for (slot, player) in players {
            let rejoin_token = self.rejoin_token(&player);
            let init = SessionInit {
                roster: roster.clone(),
                input_delay_ticks: self.inputs.delay(&player),
                your_player_id: player,
                tick_rate_hz: TICK_RATE_HZ,
                fixed_dt: FIXED_DT,
                reconcile_interval_ticks: RECONCILE_INTERVAL_TICKS,
                head: head.clone(),
                settings: self.settings(),
                player_count: self.player_count,
                player_names: self.names.clone(),
                input_delays: self.inputs.delays().clone(),
                join: None,
                rejoin_token,
                spectator: false,
            };
            self.send(slot, HostMessage::SessionInit(init));
            for c in &chunks {
                self.send(slot, HostMessage::MapChunk(c.clone()));
            }
            self.send(slot, HostMessage::MapEnd(end.clone()));
            self.tell_spectators(slot);
        }
        self.phase = Phase::Setup {
            deadline: now + self.config.setup_timeout,
        };
    }

    pub(super) fn level_failed(&mut self, why: String) {
        self.events.push(HostEvent::LevelFailed(why));
        self.end(EndReason::HostShutdown);
    }

    pub(super) fn start_running(&mut self, now: Duration) {
        // An admitted guest that never acked (setup failed, or it left) is
        // in the roster already sent: it is treated as disconnected, so it
        // gets neutral input and a synchronized removal after the grace.
        for seat in self.seats.iter_mut().filter(|s| s.admitted && !s.joining) {
            if !seat.setup_acked && seat.disconnected_at.is_none() {
                seat.disconnected_at = Some(now);
            }
        }
        self.phase = Phase::Running;
        self.clock = Some(lockstep::pacing::TickClock::start(TICK_RATE_HZ, now));
    }
}
