//! Late join: a guest admitted after the roster froze enters the running
//! level at the start of the next tick, a `rosterAdd` every peer applies
//! at that tick (the mirror of a removal), and then gets the session init
//! with a join point and the world's exact state at the tick after it
//! ([`engine::wire::JoinPayload`]). From that tick on it hears every
//! bundle like any guest; bundles that outrun the state (they ride
//! another channel) wait on its side.
//!
//! A late joiner waits for its link to be measured, as the lobby does
//! (pings back to back, at most [`WARM_UP_LIMIT`]), and gets an input
//! delay fitted to it ([`crate::delay::fit`]) when it takes up
//! `input-delay`; the bundle that adds it carries that delay, since every
//! peer's engine needs it. A client without `input-delay` gets the spec's
//! fixed delay, and is refused when the level's delays are fitted (it
//! could not be told them).

use std::collections::BTreeMap;
use std::time::Duration;

use game_api::Game;
use game_api::PlayerId;
use protocol::chunk::split;
use protocol::peer::{Feature, JoinPoint, RosterAdd};
use protocol::peer::{HostMessage, JoinPayload, SessionInit};
use protocol::tick::{FIXED_DT, INPUT_DELAY_TICKS, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ};

use super::{HostEvent, HostOutput, HostSession};
use crate::delay;
use crate::rtt::WARM_UP_LIMIT;
use crate::stats::GuestSlot;

/// How a guest enters the running level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JoinKind {
    /// New to the roster: a late joiner.
    Fresh,
    /// Resuming a player already in the roster: a rejoiner.
    Resume,
    /// Watching, outside the roster: a spectator.
    Spectate,
}

/// A guest entering the running level at a tick.
#[derive(Debug)]
pub(super) struct Joiner {
    slot: GuestSlot,
    /// Its player (a spectator's id for a spectator).
    player: PlayerId,
    /// Its input delay, ticks.
    delay: u64,
    kind: JoinKind,
}

impl<E: Game> HostSession<E> {
    /// The `rosterAdd` of the tick that adds `joined` (`None`: nobody new).
    pub(super) fn roster_add(&self, joined: &[Joiner]) -> Option<BTreeMap<PlayerId, RosterAdd>> {
        let fresh: BTreeMap<PlayerId, RosterAdd> = joined
            .iter()
            .filter(|j| j.kind == JoinKind::Fresh)
            .map(|j| {
                let add = RosterAdd {
                    input_delay: j.delay,
                    name: self.names.get(&j.player).cloned().unwrap_or_default(),
                };
                (j.player.clone(), add)
            })
            .collect();
        (!fresh.is_empty()).then_some(fresh)
    }

    /// Whether some roster member's input delay is not the spec's.
    pub(super) fn level_has_fitted_delays(&self) -> bool {
        self.roster()
            .iter()
            .any(|p| self.inputs.delay(p) != INPUT_DELAY_TICKS)
    }

    /// Adds every late joiner still connected whose link is measured to
    /// the roster at the start of `tick` (before the engine advances), and
    /// takes in every rejoiner (already in it) and spectator (never in
    /// it); returns them with their slots, delays and kinds, sorted by
    /// player.
    pub(super) fn add_joiners(&mut self, tick: u64, now: Duration) -> Vec<Joiner> {
        let mut joined: Vec<Joiner> = self
            .seats
            .entries()
            .filter_map(|(slot, seat)| {
                let due = seat.joining && seat.admitted && seat.connected && !seat.closed;
                let measured = seat.spectator
                    || self.link_measured(seat)
                    || seat.admitted_at.is_some_and(|t| now >= t + WARM_UP_LIMIT);
                let player = seat.player.clone().filter(|_| due && measured)?;
                let kind = if seat.spectator {
                    JoinKind::Spectate
                } else if seat.resuming {
                    JoinKind::Resume
                } else {
                    JoinKind::Fresh
                };
                let delay = if kind != JoinKind::Fresh {
                    self.inputs.delay(&player)
                } else if seat.features.has(Feature::InputDelay) {
                    delay::fit(&self.stats.rtt.get(&player).copied().unwrap_or_default())
                } else {
                    INPUT_DELAY_TICKS
                };
                Some(Joiner {
                    slot,
                    player,
                    delay,
                    kind,
                })
            })
            .collect();
        joined.sort_by(|a, b| a.player.cmp(&b.player));
        let Some(engine) = self.engine.as_mut() else {
            return Vec::new();
        };
        for j in &joined {
            match j.kind {
                JoinKind::Fresh => {}
                JoinKind::Resume => {
                    self.inputs.resume(&j.player, tick);
                    continue;
                }
                JoinKind::Spectate => {
                    // It watches from the state after this tick.
                    self.stats.spectators_joined.push((
                        self.level_epoch,
                        tick + 1,
                        j.player.clone(),
                    ));
                    continue;
                }
            }
            let player = &j.player;
            engine.add_player(player, j.delay);
            self.inputs.join(player.clone(), tick, j.delay);
            let name = self.seats.get(j.slot).map(|s| s.name.clone());
            self.names.insert(player.clone(), name.unwrap_or_default());
            self.events.push(HostEvent::PlayerJoined(
                self.level_epoch,
                tick,
                player.clone(),
            ));
            self.stats
                .roster_added
                .push((self.level_epoch, tick, player.clone()));
        }
        joined
    }

    /// Sends each of `joined` the session init with its join point and the
    /// world as it is now (right after the tick that added them); from
    /// here on they hear the level like every guest.
    pub(super) fn send_join_states(&mut self, joined: &[Joiner]) {
        if joined.is_empty() {
            return;
        }
        let (Some(engine), Some(level)) = (self.engine.as_ref(), self.level.as_ref()) else {
            return;
        };
        let text = engine
            .save_exact()
            .map_err(|e| format!("saving the state: {e}"))
            .and_then(|state| {
                serde_json::to_string(&JoinPayload::<E::Wire>::new(level.body.clone(), &state))
                    .map_err(|e| format!("encoding the state: {e}"))
            });
        let text = match text {
            Ok(t) => t,
            Err(why) => return self.join_failed(joined, &why),
        };
        let roster = engine.roster();
        let point = JoinPoint {
            level_epoch: self.level_epoch,
            level_index: self.level_index,
            tick: engine.tick(),
            resumed: false,
        };
        // Fitted delays name exactly the roster (removed players dropped);
        // a joiner without `input-delay` gets none (all are the spec's).
        let delays: BTreeMap<PlayerId, u64> = roster
            .iter()
            .map(|p| (p.clone(), self.inputs.delay(p)))
            .collect();
        let (head, player_count) = (level.head.clone(), level.player_count);
        let (chunks, end) = split(&text);
        for Joiner {
            slot, player, kind, ..
        } in joined
        {
            let fitted = self
                .seats
                .get(*slot)
                .is_some_and(|s| s.features.has(Feature::InputDelay));
            let spectator = *kind == JoinKind::Spectate;
            let (rejoin_token, input_delay_ticks) = if spectator {
                (None, INPUT_DELAY_TICKS)
            } else {
                (self.rejoin_token(player), self.inputs.delay(player))
            };
            let init = SessionInit {
                roster: roster.clone(),
                your_player_id: player.clone(),
                tick_rate_hz: TICK_RATE_HZ,
                fixed_dt: FIXED_DT,
                input_delay_ticks,
                reconcile_interval_ticks: RECONCILE_INTERVAL_TICKS,
                head: head.clone(),
                settings: self.settings(),
                player_count,
                player_names: self.names.clone(),
                input_delays: if fitted {
                    delays.clone()
                } else {
                    BTreeMap::new()
                },
                join: Some(JoinPoint {
                    resumed: *kind == JoinKind::Resume,
                    ..point.clone()
                }),
                rejoin_token,
                spectator,
            };
            self.send(*slot, HostMessage::SessionInit(init));
            for c in &chunks {
                self.send(*slot, HostMessage::MapChunk(c.clone()));
            }
            self.send(*slot, HostMessage::MapEnd(end.clone()));
            if let Some(seat) = self.seats.get_mut(*slot) {
                seat.joining = false;
                seat.resuming = false;
            }
            self.tell_spectators(*slot);
        }
    }

    /// The joiners' state could not be sent: they leave the roster again
    /// at the next tick and their connections close.
    fn join_failed(&mut self, joined: &[Joiner], why: &str) {
        for Joiner {
            slot, player, kind, ..
        } in joined
        {
            if *kind == JoinKind::Spectate {
                self.drop_spectator(*slot);
                continue;
            }
            self.events
                .push(HostEvent::JoinFailed(player.clone(), why.to_owned()));
            self.remove_at_start.push(player.clone());
            let Some(seat) = self.seats.get_mut(*slot) else {
                continue;
            };
            seat.joining = false;
            seat.removed = true;
            if !seat.closed {
                seat.closed = true;
                self.outbox.push(HostOutput::Close(*slot));
            }
        }
    }
}
