//! The guest as a relay session's authority (issue 26): a relay runs no
//! engine, so one peer builds each level, keeps its exact state at the
//! relay's snapshot ticks, and says when the level ends. Only a guest
//! that took up [`Feature::Relay`] does any of it.

use std::collections::BTreeMap;

use game_api::PlayerId;
use game_api::{Game, GameWire, LevelSetup, LevelStatus};
use protocol::peer::{Feature, ScoreRow, state_to_base64};
use protocol::peer::{GuestMessage, RelayLevel, TransitionPayload};

use super::GuestSession;

/// The most players a relay may ask a level for (a bound on the work a
/// relay can ask of its authority).
pub const MAX_RELAY_ROSTER: usize = 32;

/// What the relay asked this guest to build.
#[derive(Debug)]
pub(super) struct LevelAsk<W: GameWire> {
    pub epoch: u32,
    pub level_index: u32,
    pub roster: BTreeMap<PlayerId, String>,
    pub input_delays: BTreeMap<PlayerId, u64>,
    pub campaign: W::Campaign,
    /// Levels in the campaign.
    pub levels: u32,
    pub settings: W::Settings,
}

/// This guest's authority duties, while it has them.
#[derive(Debug, Default)]
pub(super) struct Authority {
    /// The relay named this guest its authority.
    pub active: bool,
    /// Levels in the campaign.
    pub levels: u32,
    /// Ticks between snapshots.
    pub snapshot_interval: u64,
    /// The exact state kept at the latest snapshot tick: `(epoch, tick,
    /// hash, state)`.
    pub kept: Option<(u32, u64, u64, Vec<u8>)>,
    /// A snapshot asked for and not yet answered: `(epoch, tick)`.
    pub asked: Option<(u32, u64)>,
    /// The level epoch whose end was reported.
    pub ended: Option<u32>,
}

impl<E: Game> GuestSession<E> {
    /// Whether this guest serves relay sessions.
    fn serves_relay(&self) -> bool {
        self.features.has(Feature::Relay)
    }

    pub(super) fn on_relay_authority(&mut self, you: bool, levels: u32, snapshot_interval: u64) {
        if !self.serves_relay() {
            return;
        }
        self.authority.active = you;
        self.authority.levels = levels;
        self.authority.snapshot_interval = snapshot_interval.max(1);
        self.authority_duties();
    }

    /// Builds the level asked for and answers with it (any guest the
    /// relay asks: only its authority is asked).
    pub(super) fn on_relay_ask_level(&mut self, ask: LevelAsk<E::Wire>) {
        if !self.serves_relay() {
            return;
        }
        if ask.roster.is_empty()
            || ask.roster.len() > MAX_RELAY_ROSTER
            || ask.level_index >= ask.levels
        {
            self.events.push(super::GuestEvent::RelayAskRefused(format!(
                "relay asked for level {} of {} with {} players",
                ask.level_index,
                ask.levels,
                ask.roster.len()
            )));
            return;
        }
        let players: Vec<PlayerId> = ask.roster.keys().cloned().collect();
        let player_count = u32::try_from(players.len()).unwrap_or(u32::MAX);
        let carryovers: BTreeMap<_, _> = self
            .engine
            .as_ref()
            .map(|e| e.carryovers())
            .unwrap_or_default()
            .into_iter()
            .filter(|(p, _)| ask.roster.contains_key(p))
            .collect();
        let level = E::campaign_level(&ask.campaign, ask.level_index, player_count);
        let payload: TransitionPayload<E::Wire> = TransitionPayload {
            level_index: ask.level_index,
            head: level.head,
            roster: players.clone(),
            player_count,
            carryovers: carryovers.clone(),
            body: level.body,
            input_delays: ask.input_delays.clone(),
        };
        let setup = LevelSetup {
            body: payload.body.clone(),
            roster: players,
            head: payload.head.clone(),
            settings: ask.settings,
            player_count,
            carryovers,
            input_delays: ask.input_delays,
        };
        let state = E::new_level(setup).and_then(|e| e.save_exact());
        match state {
            Ok(state) => self.outbox.push(GuestMessage::RelayLevel {
                level_epoch: ask.epoch,
                level: Box::new(RelayLevel::new(payload, &state)),
            }),
            Err(e) => self.events.push(super::GuestEvent::RelayAskRefused(format!(
                "relay level: {e}"
            ))),
        }
    }

    pub(super) fn on_relay_ask_snapshot(&mut self, epoch: u32, tick: u64) {
        if self.serves_relay() {
            self.authority.asked = Some((epoch, tick));
            self.authority_duties();
        }
    }

    /// After each applied bundle (and on becoming the authority): keep the
    /// state at a snapshot tick, answer an ask, report the level's end.
    pub(super) fn authority_duties(&mut self) {
        if !self.serves_relay() {
            return;
        }
        let epoch = self.level_epoch;
        let Some(engine) = self.engine.as_ref() else {
            return;
        };
        let tick = engine.tick();
        if tick > 0
            && tick % self.authority.snapshot_interval.max(1) == 0
            && self
                .authority
                .kept
                .as_ref()
                .is_none_or(|k| (k.0, k.1) != (epoch, tick))
            && let Ok(state) = engine.save_exact()
        {
            self.authority.kept = Some((epoch, tick, engine.world_hash(), state));
        }
        if !self.authority.active {
            return;
        }
        if let (Some(asked), Some((e, t, hash, state))) =
            (self.authority.asked, &self.authority.kept)
            && asked == (*e, *t)
        {
            self.outbox.push(GuestMessage::RelaySnapshot {
                level_epoch: *e,
                tick: *t,
                hash: game_api::WorldHash(*hash).to_string(),
                state: state_to_base64(state),
            });
            self.authority.asked = None;
        }
        let status = engine.status();
        let over = matches!(status, LevelStatus::Complete | LevelStatus::TeamEliminated);
        if over && self.authority.ended != Some(epoch) {
            self.authority.ended = Some(epoch);
            let more =
                status == LevelStatus::Complete && self.level_index + 1 < self.authority.levels;
            let scores = engine
                .scores()
                .into_iter()
                .map(|(id, s)| ScoreRow {
                    name: self.names.get(&id).cloned().unwrap_or_default(),
                    player_id: id,
                    kill_score: s.kill_score,
                    kills: s.kills,
                    disconnected: false,
                    link: Default::default(),
                })
                .collect();
            self.outbox.push(GuestMessage::RelayLevelEnd {
                level_epoch: epoch,
                tick,
                more,
                scores,
                final_hash: game_api::WorldHash(engine.world_hash()).to_string(),
            });
        }
    }
}
