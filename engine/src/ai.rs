//! Enemy behaviour, one enemy at a time in index order: find the nearest
//! visible living player (aggro), chase and attack it (melee always lands in
//! reach; ranged rolls aim spread), else walk to where one was last seen,
//! else roam to PRNG-picked points inside the home room. Attack cooldowns
//! are jittered from the shared stream.

use crate::wire::map::GameMap;

use crate::enemy::{EnemyStats, stats};
use crate::geom::Vec2;
use crate::grid::Grid;
use crate::rules::{
    Difficulty, DifficultyScaling, ENEMY_RADIUS, ENEMY_SIGHT, PLAYER_HIT_RADIUS, ROAM_SPEED_FACTOR,
};
use crate::state::SimState;

/// Runs every living enemy for one tick.
pub fn update(state: &mut SimState, map: &GameMap, dt: f64) {
    for index in 0..state.enemies.len() {
        let Some(def) = map.enemies.get(index) else {
            continue;
        };
        let st = stats(def.kind);
        let Some(e) = state.enemies.get(index) else {
            continue;
        };
        if !e.alive {
            continue;
        }
        let here = e.pos;
        let target = nearest_visible_player(state, here);
        match target {
            Some(target) => engage(state, index, &st, target, dt),
            None => wander(state, index, def.home, &st, dt),
        }
    }
}

/// The nearest living player in sight: (roster position, position, distance).
fn nearest_visible_player(state: &SimState, from: Vec2) -> Option<(usize, Vec2, f64)> {
    let mut best: Option<(usize, Vec2, f64)> = None;
    for (slot, p) in state.players.values().enumerate() {
        if !p.alive {
            continue;
        }
        let d = p.pos.distance(from);
        if d <= ENEMY_SIGHT && best.is_none_or(|b| d < b.2) && state.grid.line_of_sight(from, p.pos)
        {
            best = Some((slot, p.pos, d));
        }
    }
    best
}

fn step_toward(grid: &Grid, from: Vec2, to: Vec2, speed: f64, dt: f64) -> Vec2 {
    let delta = to.minus(from);
    let len = delta.length();
    if len < 1e-9 {
        return from;
    }
    let step = (speed * dt).min(len);
    grid.slide(from, delta.scale(step / len), ENEMY_RADIUS)
}

fn engage(
    state: &mut SimState,
    index: usize,
    st: &EnemyStats,
    target: (usize, Vec2, f64),
    dt: f64,
) {
    let (slot, at, dist) = target;
    let difficulty: Difficulty = state.difficulty;
    let grid = &state.grid;
    let Some(e) = state.enemies.get_mut(index) else {
        return;
    };
    e.aggroed = true;
    e.last_seen = Some(at);
    e.roam = None;
    let keep = if st.melee {
        0.7
    } else {
        (st.range * 0.6).max(1.5)
    };
    if dist > keep {
        e.pos = step_toward(grid, e.pos, at, st.speed, dt);
    }
    e.attack_cooldown = (e.attack_cooldown - dt).max(0.0);
    if e.attack_cooldown > 0.0 || dist > st.range {
        return;
    }
    let hit = if st.melee {
        true
    } else {
        let spread =
            difficulty.enemy_aim_spread_deg() * st.spread_factor * core::f64::consts::PI / 180.0;
        let err = spread * state.rng.next_signed();
        (err * dist).abs() <= PLAYER_HIT_RADIUS
    };
    e.attack_cooldown = st.cooldown * (0.75 + 0.5 * state.rng.next_f64());
    if hit && let Some(p) = state.players.values_mut().nth(slot) {
        p.health -= st.damage * difficulty.enemy_damage();
    }
}

fn wander(
    state: &mut SimState,
    index: usize,
    home: crate::wire::map::RoomRect,
    st: &EnemyStats,
    dt: f64,
) {
    let grid = &state.grid;
    let Some(e) = state.enemies.get_mut(index) else {
        return;
    };
    e.attack_cooldown = (e.attack_cooldown - dt).max(0.0);
    if let Some(seen) = e.last_seen {
        let before = e.pos;
        e.pos = step_toward(grid, e.pos, seen, st.speed, dt);
        // Arrived, or blocked by a wall: give up the trail.
        if e.pos.distance(seen) < 0.3 || e.pos == before {
            e.last_seen = None;
        }
        return;
    }
    let arrived = e.roam.is_none_or(|r| e.pos.distance(r) < 0.3);
    if arrived {
        let x = f64::from(home.x) + state.rng.next_f64() * f64::from(home.w);
        let y = f64::from(home.y) + state.rng.next_f64() * f64::from(home.h);
        let pick = Vec2::new(x, y);
        e.roam = grid.walkable_at(pick).then_some(pick);
    }
    if let Some(r) = e.roam {
        let before = e.pos;
        e.pos = step_toward(grid, e.pos, r, st.speed * ROAM_SPEED_FACTOR, dt);
        if e.pos == before {
            e.roam = None;
        }
    }
}
