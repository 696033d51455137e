//! The bot controller: one player's view of the world to that player's
//! input, every tick. Stateless and deterministic: the same world gives the
//! same input (no randomness, no clock).
//!
//! Priorities: fight the nearest visible enemy (aim with the mouse delta,
//! fire); otherwise walk (breadth-first search over the live grid) to, in
//! order, a door when holding a key (and use it), a key, ammo when low, the
//! exit; on the exit with the exit room not clear, hunt that room's enemies;
//! with nowhere to go, follow a teammate.

use crate::wire::input::{InputSnapshot, MAX_MOUSE_DELTA_X};
use crate::wire::map::{LootKind, Tile};
use game_api::PlayerId;

use crate::geom::Vec2;
use crate::grid::cell;
use crate::pathing::{Cell, path_to};
use crate::player::Player;
use crate::rules::MOUSE_SENSITIVITY;
use crate::weapon::{self, KNIFE, PISTOL, SHOTGUN, SMG};
use crate::world::RaycasterEngine;

/// How far a bot looks for enemies to fight, tiles.
const ENGAGE_RANGE: f64 = 9.0;
/// Bullets below which a bot detours for ammo.
const LOW_AMMO: u32 = 10;
/// Health below which a bot detours for health.
const LOW_HEALTH: f64 = 70.0;
/// Longest detour (in tiles) a bot takes for an item it does not need.
const DETOUR_STEPS: usize = 10;

/// A bot driving one player.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BotController {
    id: PlayerId,
}

fn centre((x, y): Cell) -> Vec2 {
    Vec2::new(x as f64 + 0.5, y as f64 + 0.5)
}

fn cell_of(p: Vec2) -> Cell {
    (cell(p.x), cell(p.y))
}

/// The mouse delta that turns `me` to face `at` this tick.
fn aim(me: &Player, at: Vec2) -> (f64, f64) {
    let angle = me.dir.angle_to(at.minus(me.pos));
    (
        (angle / MOUSE_SENSITIVITY).clamp(-MAX_MOUSE_DELTA_X, MAX_MOUSE_DELTA_X),
        angle,
    )
}

impl BotController {
    /// A bot for player `id`.
    pub fn new(id: PlayerId) -> Self {
        Self { id }
    }

    /// The player this bot drives.
    pub fn player_id(&self) -> &PlayerId {
        &self.id
    }

    /// This tick's input.
    pub fn decide(&self, engine: &RaycasterEngine) -> InputSnapshot {
        let Some(me) = engine.state().players.get(&self.id) else {
            return InputSnapshot::NEUTRAL;
        };
        if !me.alive {
            return InputSnapshot::NEUTRAL;
        }
        if let Some(input) = self.fight(engine, me) {
            return input;
        }
        self.navigate(engine, me)
    }

    fn fight(&self, engine: &RaycasterEngine, me: &Player) -> Option<InputSnapshot> {
        let s = engine.state();
        let mut best: Option<(f64, Vec2)> = None;
        for e in s.enemies.iter().filter(|e| e.alive) {
            let d = e.pos.distance(me.pos);
            if d <= ENGAGE_RANGE
                && best.is_none_or(|b| d < b.0)
                && s.grid.line_of_sight(me.pos, e.pos)
            {
                best = Some((d, e.pos));
            }
        }
        let (dist, at) = best?;
        let (mouse, _) = aim(me, at);
        let slot = pick_weapon(me, dist);
        let melee = slot == KNIFE;
        Some(InputSnapshot {
            mouse_delta_x: mouse,
            fire: true,
            weapon_select: (slot != me.weapon_index).then_some(slot),
            move_forward: melee && dist > 0.8,
            move_back: !melee && dist < 1.5,
            ..InputSnapshot::NEUTRAL
        })
    }

    fn navigate(&self, engine: &RaycasterEngine, me: &Player) -> InputSnapshot {
        let s = engine.state();
        let map = engine.map();
        let grid = &s.grid;
        let here = cell_of(me.pos);
        let walk = |t: Tile| t.is_walkable();
        let exit: Cell = (i64::from(map.exit.x), i64::from(map.exit.y));

        // 1. Holding a key: go next to a door and use it.
        if me.keys_held > 0 {
            let next_to_door = |c: Cell| door_beside(engine, c).is_some();
            if let Some(door) = door_beside(engine, here) {
                let (mouse, _) = aim(me, centre(door));
                return InputSnapshot {
                    mouse_delta_x: mouse,
                    use_: true,
                    move_forward: true,
                    ..InputSnapshot::NEUTRAL
                };
            }
            if let Some(path) = path_to(grid, here, walk, next_to_door) {
                return walk_along(me, &path);
            }
        }
        // 2. Nearby useful items: health when hurt, weapons not owned, ammo.
        let wanted = wanted_items(engine, me);
        if let Some(input) = go_to_items(me, grid, here, &wanted, DETOUR_STEPS) {
            return input;
        }
        // 3. Keys on the floor.
        let keys: Vec<Vec2> = map
            .keys
            .iter()
            .zip(&s.keys_collected)
            .filter(|(_, taken)| !**taken)
            .map(|(k, _)| Vec2::new(k.position.x, k.position.y))
            .chain(
                s.loot
                    .iter()
                    .filter(|d| d.kind == LootKind::Key)
                    .map(|d| Vec2::new(d.x, d.y)),
            )
            .collect();
        if let Some(input) = go_to_items(me, grid, here, &keys, usize::MAX) {
            return input;
        }
        // 4. Low on ammo: the nearest bullets.
        if me.ammo.bullets < LOW_AMMO && me.ammo.smg == 0 {
            let ammo: Vec<Vec2> = map
                .ammo_pickups
                .iter()
                .zip(&s.pickups_collected)
                .filter(|(p, taken)| !**taken && p.kind == LootKind::Bullets)
                .map(|(p, _)| Vec2::new(p.position.x, p.position.y))
                .filter(|at| grid.walkable_at(*at))
                .chain(
                    s.loot
                        .iter()
                        .filter(|d| matches!(d.kind, LootKind::Bullets | LootKind::Smg))
                        .map(|d| Vec2::new(d.x, d.y)),
                )
                .collect();
            if let Some(input) = go_to_items(me, grid, here, &ammo, usize::MAX) {
                return input;
            }
        }
        // 5. The exit; on it, wait for the countdown or hunt the exit room.
        if here == exit {
            if s.countdown.is_some() || !engine.exit_room_has_alive_enemy() {
                return walk_to(me, centre(exit));
            }
            let (ex, ey) = (f64::from(map.exit.x) + 0.5, f64::from(map.exit.y) + 0.5);
            let targets: Vec<Cell> = map
                .enemies
                .iter()
                .zip(&s.enemies)
                .filter(|(def, e)| e.alive && def.home.contains(ex, ey))
                .map(|(_, e)| cell_of(e.pos))
                .collect();
            if let Some(path) = path_to(grid, here, walk, |c| targets.contains(&c)) {
                return walk_along(me, &path);
            }
        }
        if let Some(path) = path_to(grid, here, walk, |c| c == exit) {
            return walk_along(me, &path);
        }
        // 6. Nowhere to go: follow the first teammate who is somewhere else.
        let mates: Vec<Cell> = s
            .players
            .iter()
            .filter(|(id, p)| **id != self.id && p.alive)
            .map(|(_, p)| cell_of(p.pos))
            .filter(|c| *c != here)
            .collect();
        match path_to(grid, here, walk, |c| mates.contains(&c)) {
            Some(path) => walk_along(me, &path),
            None => InputSnapshot {
                turn_right: true,
                ..InputSnapshot::NEUTRAL
            },
        }
    }
}

/// Cells of items worth a short detour: health when hurt, weapons the
/// player lacks, ammo for pools that are not full.
fn wanted_items(engine: &RaycasterEngine, me: &Player) -> Vec<Vec2> {
    let s = engine.state();
    let hurt = me.health < LOW_HEALTH;
    let wants = |kind: LootKind, weapon_index: Option<u8>| match kind {
        LootKind::Health => hurt,
        LootKind::Weapon => weapon_index.is_some_and(|w| !weapon::owns(me.owned, w)),
        LootKind::Key => false,
        ammo => weapon::AmmoPool::for_loot(ammo).is_some_and(|pool| {
            let cap = crate::rules::AMMO_CAPS
                .get(pool.index())
                .copied()
                .unwrap_or(0);
            pool.get(&me.ammo) < cap / 2
        }),
    };
    let pickups = engine
        .map()
        .ammo_pickups
        .iter()
        .zip(&s.pickups_collected)
        .filter(|(p, taken)| {
            !**taken
                && s.grid.walkable_at(Vec2::new(p.position.x, p.position.y))
                && wants(p.kind, None)
        })
        .map(|(p, _)| Vec2::new(p.position.x, p.position.y));
    let drops = s
        .loot
        .iter()
        .filter(|d| wants(d.kind, d.weapon_index))
        .map(|d| Vec2::new(d.x, d.y));
    pickups.chain(drops).collect()
}

/// Walks toward the nearest of `items` within `max_steps` tiles of path;
/// in the item's own cell, walks onto its exact position.
fn go_to_items(
    me: &Player,
    grid: &crate::grid::Grid,
    here: Cell,
    items: &[Vec2],
    max_steps: usize,
) -> Option<InputSnapshot> {
    if let Some(at) = items.iter().find(|at| cell_of(**at) == here) {
        return Some(walk_to(me, *at));
    }
    let cells: Vec<Cell> = items.iter().map(|at| cell_of(*at)).collect();
    let path = path_to(grid, here, Tile::is_walkable, |c| cells.contains(&c))?;
    (path.len() <= max_steps).then(|| walk_along(me, &path))
}

/// A locked door next to `c`, if any.
fn door_beside(engine: &RaycasterEngine, (x, y): Cell) -> Option<Cell> {
    let grid = &engine.state().grid;
    [(1, 0), (-1, 0), (0, 1), (0, -1)]
        .iter()
        .map(|(dx, dy)| (x + dx, y + dy))
        .find(|&(nx, ny)| grid.tile(nx, ny) == Tile::Door)
}

fn walk_to(me: &Player, at: Vec2) -> InputSnapshot {
    if me.pos.distance(at) < 0.1 {
        return InputSnapshot::NEUTRAL;
    }
    let (mouse, _) = aim(me, at);
    InputSnapshot {
        mouse_delta_x: mouse,
        move_forward: true,
        ..InputSnapshot::NEUTRAL
    }
}

fn walk_along(me: &Player, path: &[Cell]) -> InputSnapshot {
    match path.first() {
        Some(next) => walk_to(me, centre(*next)),
        None => InputSnapshot::NEUTRAL,
    }
}

/// The weapon to hold at a given range.
fn pick_weapon(me: &Player, dist: f64) -> u8 {
    let has = |slot| weapon::owns(me.owned, slot);
    if has(SMG) && me.ammo.smg > 0 {
        SMG
    } else if dist < 4.0 && me.ammo.bullets >= 2 {
        SHOTGUN
    } else if me.ammo.bullets >= 1 {
        PISTOL
    } else {
        KNIFE
    }
}
