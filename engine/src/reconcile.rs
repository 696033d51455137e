//! Building a [`ReconciliationSnapshot`] from the world and snapping the
//! world to one. Validation runs first and rejects the whole snapshot, so a
//! bad snapshot never leaves the world half-applied.
//!
//! A snapshot carries the spec's fields plus the [`ResidualState`] (every
//! other field of [`SimState`]), so applying one restores everything the
//! world hash covers: a peer that drifted anywhere, in an AI timer or the
//! lag-compensation history as much as in a position, hashes equal to the
//! host right after it. A snapshot without the residual (from a peer that
//! does not send it) restores the spec's fields only.

use std::collections::BTreeSet;

use crate::wire::input::WEAPON_SLOT_COUNT;
use crate::wire::map::GameMap;
use crate::wire::map::LootKind;
use crate::wire::snapshot::{
    EnemyResidual, PlayerResidual, ReconciliationSnapshot, ResidualState, TileMutation,
};
use protocol::tick::MAX_INPUT_DELAY_TICKS;

use crate::engine::EngineError;
use crate::geom::Vec2;
use crate::state::SimState;
use crate::weapon;
use crate::world::RaycasterEngine;

/// The snapshot of a state on `map`, with the given grid delta.
pub fn build(s: &SimState, map: &GameMap, grid_delta: Vec<TileMutation>) -> ReconciliationSnapshot {
    let indices = |flags: &[bool]| {
        (0u32..)
            .zip(flags)
            .filter(|(_, f)| **f)
            .map(|(i, _)| i)
            .collect()
    };
    ReconciliationSnapshot {
        tick: s.tick,
        rng_state: s.rng.state(),
        players: s
            .players
            .iter()
            .map(|(id, p)| (id.clone(), p.to_snapshot()))
            .collect(),
        enemies: (0u32..)
            .zip(&s.enemies)
            .map(|(i, e)| e.to_snapshot(i))
            .collect(),
        mines: (0u32..)
            .zip(&s.mines)
            .map(|(i, m)| m.to_snapshot(i))
            .collect(),
        loot_drops: s.loot.clone(),
        pickups_collected: indices(&s.pickups_collected),
        keys_collected: indices(&s.keys_collected),
        grid_version: s.grid.version,
        grid_delta,
        residual: Some(Box::new(residual(s, map))),
    }
}

fn xy(v: Vec2) -> [f64; 2] {
    [v.x, v.y]
}

fn residual(s: &SimState, map: &GameMap) -> ResidualState {
    ResidualState {
        level_time: s.level_time,
        countdown: s.countdown,
        outcome: s.outcome,
        difficulty: s.difficulty,
        player_count: s.player_count,
        multiplayer: s.multiplayer,
        departed: s.departed.clone(),
        players: s
            .players
            .iter()
            .map(|(id, p)| {
                let r = PlayerResidual {
                    fire_cooldown: p.fire_cooldown,
                    distance: p.distance,
                };
                (id.clone(), r)
            })
            .collect(),
        enemies: s
            .enemies
            .iter()
            .map(|e| EnemyResidual {
                attack_cooldown: e.attack_cooldown,
                roam: e.roam.map(xy),
                last_seen: e.last_seen.map(xy),
                drop_seq: e.drop_seq,
            })
            .collect(),
        mine_fuses: s.mines.iter().map(|m| m.fuse).collect(),
        enemy_history: s
            .enemy_history
            .iter()
            .map(|frame| frame.iter().copied().map(xy).collect())
            .collect(),
        changed_tiles: changed_tiles(s, map),
    }
}

/// Every tile of the live grid that differs from the map as loaded.
fn changed_tiles(s: &SimState, map: &GameMap) -> Vec<TileMutation> {
    let width = s.grid.width.max(1);
    (0u32..)
        .zip(s.grid.tiles.iter().zip(&map.tiles))
        .filter(|(_, (live, loaded))| live != loaded)
        .map(|(i, (live, _))| TileMutation {
            x: i % width,
            y: i / width,
            value: *live,
        })
        .collect()
}

fn bad(field: impl Into<String>, detail: impl Into<String>) -> EngineError {
    EngineError::BadSnapshot {
        field: field.into(),
        detail: detail.into(),
    }
}

fn finite(field: &str, values: &[f64]) -> Result<(), EngineError> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(bad(field, "not a finite number"))
    }
}

fn index_in(field: &str, index: u32, len: usize) -> Result<usize, EngineError> {
    usize::try_from(index)
        .ok()
        .filter(|i| *i < len)
        .ok_or_else(|| bad(field, format!("index {index} out of range (length {len})")))
}

/// Checks a snapshot against the engine without changing anything.
pub fn validate(
    engine: &RaycasterEngine,
    snap: &ReconciliationSnapshot,
) -> Result<(), EngineError> {
    let s = &engine.state;
    if snap.tick != s.tick {
        return Err(EngineError::TickMismatch {
            snapshot: snap.tick,
            engine: s.tick,
        });
    }
    let ours: BTreeSet<_> = s.players.keys().collect();
    let theirs: BTreeSet<_> = snap.players.keys().collect();
    if ours != theirs {
        return Err(EngineError::RosterMismatch(format!(
            "engine has {ours:?}, snapshot has {theirs:?}"
        )));
    }
    for (id, p) in &snap.players {
        let field = format!("players.{id}");
        finite(
            &field,
            &[
                p.pos_x, p.pos_y, p.dir_x, p.dir_y, p.plane_x, p.plane_y, p.health, p.swap,
            ],
        )?;
        if p.weapon_index >= WEAPON_SLOT_COUNT || weapon::mask_of(&p.owned_weapons).is_none() {
            return Err(bad(field, "weapon slot out of range"));
        }
    }
    for e in &snap.enemies {
        index_in("enemies", e.index, s.enemies.len())?;
        finite("enemies", &[e.x, e.y, e.hp])?;
    }
    for m in &snap.mines {
        index_in("mines", m.index, s.mines.len())?;
    }
    for d in &snap.loot_drops {
        finite("lootDrops", &[d.x, d.y])?;
        let weapon_ok = d.weapon_index.is_none_or(|w| w < WEAPON_SLOT_COUNT);
        if !weapon_ok || (d.kind == LootKind::Weapon && d.weapon_index.is_none()) {
            return Err(bad(
                "lootDrops",
                format!("drop {} has a bad weapon slot", d.id),
            ));
        }
    }
    for i in &snap.pickups_collected {
        index_in("pickupsCollected", *i, s.pickups_collected.len())?;
    }
    for i in &snap.keys_collected {
        index_in("keysCollected", *i, s.keys_collected.len())?;
    }
    for m in &snap.grid_delta {
        if m.x >= s.grid.width || m.y >= s.grid.height {
            return Err(bad(
                "gridDelta",
                format!("tile ({}, {}) outside the grid", m.x, m.y),
            ));
        }
    }
    if let Some(r) = &snap.residual {
        validate_residual(s, r)?;
    }
    Ok(())
}

fn validate_residual(s: &SimState, r: &ResidualState) -> Result<(), EngineError> {
    finite("residual.levelTime", &[r.level_time])?;
    if r.player_count == 0 {
        return Err(bad("residual.playerCount", "must be at least 1"));
    }
    if !r.players.keys().eq(s.players.keys()) {
        return Err(bad("residual.players", "players differ from the roster"));
    }
    for p in r.players.values() {
        finite("residual.players", &[p.fire_cooldown, p.distance])?;
    }
    if r.enemies.len() != s.enemies.len() {
        return Err(bad("residual.enemies", "length differs from the map's"));
    }
    for e in &r.enemies {
        let points = e.roam.iter().chain(&e.last_seen).flatten().copied();
        let values: Vec<f64> = points.chain([e.attack_cooldown]).collect();
        finite("residual.enemies", &values)?;
    }
    if r.mine_fuses.len() != s.mines.len() {
        return Err(bad("residual.mineFuses", "length differs from the map's"));
    }
    finite(
        "residual.mineFuses",
        &r.mine_fuses.iter().flatten().copied().collect::<Vec<_>>(),
    )?;
    let frames = usize::try_from(MAX_INPUT_DELAY_TICKS + 1).unwrap_or(usize::MAX);
    if r.enemy_history.len() > frames || r.enemy_history.iter().any(|f| f.len() != s.enemies.len())
    {
        return Err(bad("residual.enemyHistory", "wrong shape"));
    }
    let points: Vec<f64> = r
        .enemy_history
        .iter()
        .flatten()
        .flatten()
        .copied()
        .collect();
    finite("residual.enemyHistory", &points)?;
    if r.changed_tiles
        .iter()
        .any(|m| m.x >= s.grid.width || m.y >= s.grid.height)
    {
        return Err(bad("residual.changedTiles", "tile outside the grid"));
    }
    Ok(())
}

/// Snaps every reconciled field. The snapshot must have passed [`validate`].
pub fn apply(engine: &mut RaycasterEngine, snap: &ReconciliationSnapshot) {
    let s = &mut engine.state;
    s.rng = crate::rng::Mulberry32::from_state(snap.rng_state);
    for (id, ps) in &snap.players {
        if let Some(p) = s.players.get_mut(id) {
            p.apply_snapshot(ps, weapon::mask_of(&ps.owned_weapons).unwrap_or(p.owned));
        }
    }
    for es in &snap.enemies {
        let Some(e) = usize::try_from(es.index)
            .ok()
            .and_then(|i| s.enemies.get_mut(i))
        else {
            continue;
        };
        let at = Vec2::new(es.x, es.y);
        if e.pos != at {
            // The rewind history of a moved enemy is stale: pin it to the
            // corrected position.
            for frame in s.enemy_history.iter_mut() {
                if let Some(slot) = usize::try_from(es.index)
                    .ok()
                    .and_then(|i| frame.get_mut(i))
                {
                    *slot = at;
                }
            }
        }
        e.pos = at;
        e.hp = es.hp;
        e.alive = es.alive;
        e.aggroed = es.aggroed;
    }
    for ms in &snap.mines {
        if let Some(m) = usize::try_from(ms.index)
            .ok()
            .and_then(|i| s.mines.get_mut(i))
        {
            m.alive = ms.alive;
            m.visible = ms.visible;
            if !m.alive {
                m.fuse = None;
            }
        }
    }
    s.loot = snap.loot_drops.clone();
    set_flags(&mut s.pickups_collected, &snap.pickups_collected);
    set_flags(&mut s.keys_collected, &snap.keys_collected);
    for m in &snap.grid_delta {
        if s.grid.tile(i64::from(m.x), i64::from(m.y)) != m.value && s.grid.apply_mutation(m) {
            engine.grid_log.push(*m);
        }
    }
    s.grid.version = snap.grid_version;
    if let Some(r) = &snap.residual {
        apply_residual(engine, r);
    }
}

fn point(p: [f64; 2]) -> Vec2 {
    Vec2::new(p[0], p[1])
}

/// Restores the rest of the state. Validated by [`validate_residual`].
fn apply_residual(engine: &mut RaycasterEngine, r: &ResidualState) {
    let tiles = engine.map().tiles.clone();
    let s = &mut engine.state;
    s.level_time = r.level_time;
    s.countdown = r.countdown;
    s.outcome = r.outcome;
    s.difficulty = r.difficulty;
    s.player_count = r.player_count;
    s.multiplayer = r.multiplayer;
    s.departed = r.departed.clone();
    for (id, pr) in &r.players {
        if let Some(p) = s.players.get_mut(id) {
            p.fire_cooldown = pr.fire_cooldown;
            p.distance = pr.distance;
        }
    }
    for (e, er) in s.enemies.iter_mut().zip(&r.enemies) {
        e.attack_cooldown = er.attack_cooldown;
        e.roam = er.roam.map(point);
        e.last_seen = er.last_seen.map(point);
        e.drop_seq = er.drop_seq;
    }
    for (m, fuse) in s.mines.iter_mut().zip(&r.mine_fuses) {
        m.fuse = *fuse;
    }
    s.enemy_history = r
        .enemy_history
        .iter()
        .map(|frame| frame.iter().copied().map(point).collect())
        .collect();
    s.grid.tiles = tiles;
    for m in &r.changed_tiles {
        s.grid.apply_mutation(m);
    }
}

fn set_flags(flags: &mut [bool], on: &[u32]) {
    flags.iter_mut().for_each(|f| *f = false);
    for i in on {
        if let Some(f) = usize::try_from(*i).ok().and_then(|i| flags.get_mut(i)) {
            *f = true;
        }
    }
}
