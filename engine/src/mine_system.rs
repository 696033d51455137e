//! The mine system: mines are spotted when a player comes near, armed when
//! one steps close, and detonate after a short fuse, hurting players and
//! enemies in reach.

use crate::wire::map::GameMap;

use crate::combat;
use crate::geom::Vec2;
use crate::rules::{
    MINE_BLAST_RADIUS, MINE_ENEMY_DAMAGE, MINE_FUSE, MINE_PLAYER_DAMAGE, MINE_SPOT_RADIUS,
    MINE_TRIGGER_RADIUS,
};
use crate::state::SimState;

/// Runs every mine for one tick, in index order.
pub fn update(state: &mut SimState, map: &GameMap, dt: f64) {
    for index in 0..state.mines.len() {
        let Some(def) = map.mines.get(index) else {
            continue;
        };
        let at = Vec2::new(def.x, def.y);
        let Some(mine) = state.mines.get_mut(index) else {
            continue;
        };
        if !mine.alive {
            continue;
        }
        for p in state.players.values().filter(|p| p.alive) {
            let d = p.pos.distance(at);
            mine.visible |= d <= MINE_SPOT_RADIUS;
            if d <= MINE_TRIGGER_RADIUS && mine.fuse.is_none() {
                mine.fuse = Some(MINE_FUSE);
            }
        }
        let Some(fuse) = mine.fuse.as_mut() else {
            continue;
        };
        *fuse -= dt;
        if *fuse > 0.0 {
            continue;
        }
        mine.alive = false;
        mine.fuse = None;
        for p in state.players.values_mut().filter(|p| p.alive) {
            if p.pos.distance(at) <= MINE_BLAST_RADIUS {
                p.health -= MINE_PLAYER_DAMAGE;
            }
        }
        for e in 0..state.enemies.len() {
            if state
                .enemies
                .get(e)
                .is_some_and(|en| en.alive && en.pos.distance(at) <= MINE_BLAST_RADIUS)
            {
                combat::damage_enemy(state, map, e, MINE_ENEMY_DAMAGE, None);
            }
        }
    }
}
