//! Player hitscan fire with PRNG spread, lag-compensated hit tests, damage
//! and kills (credit and loot).
//!
//! Lag compensation (spec §2): in a multiplayer level the hit test projects
//! enemies at their positions the shooter's input delay ago (the spec's
//! `INPUT_DELAY_TICKS`, or the delay fitted to its link), from the history
//! ring; only the target is rewound, never the shooter, and damage lands on
//! the live enemy.

use crate::wire::map::GameMap;
use game_api::PlayerId;

use crate::enemy::stats;
use crate::geom::Vec2;
use crate::loot;
use crate::rules::ENEMY_HIT_RADIUS;
use crate::state::SimState;
use crate::weapon;

/// Fires `shooter`'s current weapon if it can fire: spends ammo, sets the
/// cooldown, and resolves one hitscan ray per pellet (one stream draw
/// each), hit-testing enemies where they were `rewind` ticks ago.
pub fn fire(state: &mut SimState, map: &GameMap, shooter: &PlayerId, rewind: u64) {
    let Some(p) = state.players.get_mut(shooter) else {
        return;
    };
    if !p.alive || p.fire_cooldown > 0.0 || p.swap > 0.0 {
        return;
    }
    let Some(w) = weapon::weapon(p.weapon_index) else {
        return;
    };
    if let Some((pool, cost)) = w.ammo {
        let rounds = pool.get_mut(&mut p.ammo);
        if *rounds < cost {
            return;
        }
        *rounds -= cost;
    }
    p.fire_cooldown = w.cooldown;
    let (origin, dir) = (p.pos, p.dir);
    for _ in 0..w.pellets {
        let angle = w.spread * state.rng.next_signed();
        let d = if angle == 0.0 { dir } else { dir.rotate(angle) };
        let wall = state.grid.ray_distance(origin, d, w.range);
        let (impact, hit) = match nearest_on_ray(state, origin, d, wall, rewind) {
            Some((index, t)) => (origin.plus(d.scale(t)), Some(index)),
            None => (origin.plus(d.scale(wall)), None),
        };
        if let Some(index) = hit {
            damage_enemy(state, map, index, w.damage, Some(shooter));
        }
        if w.splash > 0.0 {
            for index in 0..state.enemies.len() {
                let near = state
                    .enemies
                    .get(index)
                    .is_some_and(|e| e.alive && e.pos.distance(impact) <= w.splash);
                if near && Some(index) != hit {
                    damage_enemy(state, map, index, w.damage * 0.5, Some(shooter));
                }
            }
        }
    }
}

/// Where the hit test sees enemy `index`: in multiplayer, where it was at
/// the end of the tick `rewind` ticks before the one running (the history's
/// oldest frame when the level is younger than that).
fn hit_test_position(state: &SimState, index: usize, rewind: u64) -> Option<Vec2> {
    let live = state.enemies.get(index)?.pos;
    if !state.multiplayer {
        return Some(live);
    }
    let rewind = usize::try_from(rewind).unwrap_or(usize::MAX);
    let frame = state
        .enemy_history
        .len()
        .saturating_sub(rewind.saturating_add(1));
    Some(
        state
            .enemy_history
            .get(frame)
            .and_then(|frame| frame.get(index).copied())
            .unwrap_or(live),
    )
}

/// The closest live enemy whose hit circle the ray enters before `max`
/// (ties go to the lower index), with the distance along the ray.
fn nearest_on_ray(
    state: &SimState,
    origin: Vec2,
    d: Vec2,
    max: f64,
    rewind: u64,
) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    let r2 = ENEMY_HIT_RADIUS * ENEMY_HIT_RADIUS;
    for (index, e) in state.enemies.iter().enumerate() {
        if !e.alive {
            continue;
        }
        let Some(at) = hit_test_position(state, index, rewind) else {
            continue;
        };
        let rel = at.minus(origin);
        let t = rel.dot(d);
        if t < 0.0 || t > max {
            continue;
        }
        let perp2 = rel.length_sq() - t * t;
        if perp2 <= r2 && best.is_none_or(|(_, bt)| t < bt) {
            best = Some((index, t));
        }
    }
    best
}

/// Damages a live enemy; at zero it dies, the shooter (if any) gets the
/// kill, and its loot drops.
pub fn damage_enemy(
    state: &mut SimState,
    map: &GameMap,
    index: usize,
    amount: f64,
    credit: Option<&PlayerId>,
) {
    let Some(e) = state.enemies.get_mut(index) else {
        return;
    };
    if !e.alive {
        return;
    }
    e.hp -= amount;
    e.aggroed = true;
    if e.hp > 0.0 {
        return;
    }
    e.hp = 0.0;
    e.alive = false;
    let drops = loot::kill_drops(index, &mut e.drop_seq, e.pos, &mut state.rng);
    state.loot.extend(drops);
    let score = map
        .enemies
        .get(index)
        .map_or(0, |def| stats(def.kind).score);
    if let Some(p) = credit.and_then(|id| state.players.get_mut(id)) {
        p.kills += 1;
        p.kill_score = p.kill_score.saturating_add(score);
    }
}
