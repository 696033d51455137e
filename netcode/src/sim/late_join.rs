//! A late join measured on the simulated network: how long a joiner takes
//! from its connection to the live tick, and what its state weighs.

use std::time::Duration;

use game_api::Game;
use protocol::tick::FIXED_DT;

use super::{NetAction, NetEvent, Outcome, Scenario, Sim};
use crate::guest::GuestConfig;
use crate::sim::LinkConfig;

/// What [`measure_late_join`] saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LateJoinFigures {
    /// The tick the joiner entered the level at.
    pub join_tick: Option<u64>,
    /// From its connection to the first moment its engine was live: no
    /// further behind the host than its link's one-way delay (latency plus
    /// jitter) and one tick.
    pub catch_up: Option<Duration>,
    /// The exact state's size at the join tick, as transferred (before
    /// base64).
    pub state_bytes: Option<usize>,
    /// Everything the host had sent the joiner by the time it was live
    /// (hello, pings, init, map and state, the bundles it caught up with).
    pub bytes_to_joiner: u64,
}

/// Plays `scenario` with one more guest, `joiner` over `link`, connecting
/// once the host has simulated `at_tick` ticks, and measures its join.
pub fn measure_late_join<E: Game>(
    mut scenario: Scenario<E>,
    joiner: GuestConfig,
    link: LinkConfig,
    at_tick: u64,
) -> (LateJoinFigures, Outcome<E>) {
    let one_way = link.latency + link.jitter;
    let lag_ticks = one_way.as_secs_f64().div_euclid(FIXED_DT) as u64 + 2;
    let n = scenario.guests.len();
    scenario.events.push(NetEvent {
        at_tick,
        action: NetAction::LateJoin(joiner, link),
    });
    let mut sim = Sim::<E>::new(scenario);
    let mut figures = LateJoinFigures::default();
    let mut connected_at = None;
    while sim.step() {
        if connected_at.is_none() && sim.guest(n).is_some() {
            connected_at = Some(sim.now());
        }
        if figures.join_tick.is_none()
            && let Some(added) = sim.host().stats().roster_added.first()
        {
            figures.join_tick = Some(added.1);
            figures.state_bytes = sim
                .host()
                .engine()
                .and_then(|e| e.save_exact().ok())
                .map(|s| s.len());
        }
        let host_tick = sim.host().engine().map(Game::tick);
        let joiner_tick = sim.guest(n).and_then(|g| g.engine()).map(Game::tick);
        if let (None, Some(start), Some(h), Some(j)) =
            (figures.catch_up, connected_at, host_tick, joiner_tick)
            && j + lag_ticks >= h
        {
            figures.catch_up = Some(sim.now().saturating_sub(start));
            figures.bytes_to_joiner = sim.bytes_to_guest(n);
        }
    }
    (figures, sim.finish())
}
