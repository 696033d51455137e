//! The render view: what a browser needs to draw one tick of the world,
//! read from the engine's state (never from snapshots).
//!
//! The shape is the contract with `web/lib/render/`: positions in tile
//! units, one string per grid row (`#` wall, `.` floor, `D` closed door,
//! `S` secret wall, `E` exit), only what is still in the world (pickups not
//! yet taken, mines not yet blown).

use std::collections::BTreeMap;

use engine::enemy::Enemy;
use engine::weapon::{owned_list, weapon};
use engine::wire::map::{EnemyKind, LootKind, Tile};
use engine::wire::snapshot::AmmoPools;
use engine::{Engine, Game, RaycasterEngine};
use game_api::PlayerId;
use serde::Serialize;

/// One tick of the world as a renderer sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// The tick shown: ahead of `confirmed_tick` in a predicted view.
    pub tick: u64,
    /// The tick the shared (confirmed) simulation has reached.
    pub confirmed_tick: u64,
    /// The local player, if the session knows it yet.
    pub me: Option<String>,
    /// The live grid.
    pub grid: GridView,
    /// The exit tile.
    pub exit: TileView,
    /// Ticks left of the exit countdown, once it started.
    pub countdown_ticks: Option<u32>,
    /// Players in the world (departed ones are gone).
    pub players: Vec<PlayerView>,
    /// Every enemy of the level, dead ones with `alive: false`.
    pub enemies: Vec<EnemyView>,
    /// Pickups still lying in the world (map pickups, keys, loot drops).
    pub pickups: Vec<PickupView>,
    /// Mines still armed and spotted.
    pub mines: Vec<PointView>,
}

/// The live tile grid.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GridView {
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Bumped by every tile change (doors, secrets): renderers cache by it.
    pub version: u64,
    /// One string per row, one character per tile.
    pub rows: Vec<String>,
}

/// A tile position.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TileView {
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
}

/// A point in tile units.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PointView {
    /// Tile units.
    pub x: f64,
    /// Tile units.
    pub y: f64,
}

/// One player.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlayerView {
    /// Player id.
    pub id: String,
    /// Display name ("" when the session has none).
    pub name: String,
    /// Position (with the guest's correction smoothing applied).
    pub x: f64,
    /// Position.
    pub y: f64,
    /// Facing.
    pub dir_x: f64,
    /// Facing.
    pub dir_y: f64,
    /// Camera plane (field of view).
    pub plane_x: f64,
    /// Camera plane.
    pub plane_y: f64,
    /// Health.
    pub health: f64,
    /// Alive.
    pub alive: bool,
    /// Current weapon slot.
    pub weapon: u8,
    /// Current weapon's name.
    pub weapon_name: &'static str,
    /// Weapon slots this player owns, ascending (a gamepad's LB/RB step through them).
    pub owned_weapons: Vec<u8>,
    /// Ammo pools.
    pub ammo: AmmoPools,
    /// Keys held.
    pub keys: u32,
    /// Enemies killed.
    pub kills: u32,
    /// Kill score.
    pub score: u32,
}

/// One enemy.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnemyView {
    /// Archetype.
    pub kind: EnemyKind,
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
    /// Alive.
    pub alive: bool,
    /// Hit points left.
    pub hp: f64,
    /// Hit points at spawn.
    pub max_hp: f64,
    /// Has seen a player.
    pub aggroed: bool,
}

/// Something to pick up.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PickupView {
    /// What it gives.
    pub kind: LootKind,
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
}

/// The character a tile has in [`GridView`]'s rows (the page reads it back
/// through the generated `TILE_OF_CHAR`).
pub fn tile_char(tile: Tile) -> char {
    match tile {
        Tile::Floor => '.',
        Tile::Wall => '#',
        Tile::Door => 'D',
        Tile::Secret => 'S',
        Tile::Exit => 'E',
    }
}

impl View {
    /// The view of `engine`'s current tick. `names` labels players;
    /// `offset` gives a player's render correction still to smooth away
    /// (added to its position). For a predicted view, pass the engine run
    /// ahead and set [`View::confirmed_tick`] after.
    pub fn of(
        engine: &RaycasterEngine,
        me: Option<&PlayerId>,
        names: &BTreeMap<PlayerId, String>,
        offset: impl Fn(&PlayerId) -> (f64, f64),
    ) -> View {
        let state = engine.state();
        let map = engine.map();
        let grid = &state.grid;
        let rows = grid
            .tiles
            .chunks(grid.width.max(1) as usize)
            .map(|row| row.iter().copied().map(tile_char).collect())
            .collect();
        let players = state
            .players
            .iter()
            .map(|(id, p)| {
                let (dx, dy) = offset(id);
                PlayerView {
                    id: id.to_string(),
                    name: names.get(id).cloned().unwrap_or_default(),
                    x: p.pos.x + dx,
                    y: p.pos.y + dy,
                    dir_x: p.dir.x,
                    dir_y: p.dir.y,
                    plane_x: p.plane.x,
                    plane_y: p.plane.y,
                    health: p.health,
                    alive: p.alive,
                    weapon: p.weapon_index,
                    weapon_name: weapon(p.weapon_index).map_or("", |w| w.name),
                    owned_weapons: owned_list(p.owned),
                    ammo: p.ammo,
                    keys: p.keys_held,
                    kills: p.kills,
                    score: p.kill_score,
                }
            })
            .collect();
        let enemies = state
            .enemies
            .iter()
            .zip(&map.enemies)
            .map(|(e, def)| EnemyView {
                kind: def.kind,
                x: e.pos.x,
                y: e.pos.y,
                alive: e.alive,
                hp: e.hp,
                max_hp: Enemy::spawn(def, engine.difficulty(), state.player_count).hp,
                aggroed: e.aggroed,
            })
            .collect();
        let not_taken = |taken: &Vec<bool>, i: usize| !taken.get(i).copied().unwrap_or(false);
        let mut pickups: Vec<PickupView> = map
            .ammo_pickups
            .iter()
            .enumerate()
            .filter(|(i, _)| not_taken(&state.pickups_collected, *i))
            .map(|(_, p)| PickupView {
                kind: p.kind,
                x: p.position.x,
                y: p.position.y,
            })
            .collect();
        pickups.extend(
            map.keys
                .iter()
                .enumerate()
                .filter(|(i, _)| not_taken(&state.keys_collected, *i))
                .map(|(_, k)| PickupView {
                    kind: LootKind::Key,
                    x: k.position.x,
                    y: k.position.y,
                }),
        );
        pickups.extend(state.loot.iter().map(|d| PickupView {
            kind: d.kind,
            x: d.x,
            y: d.y,
        }));
        let mines = state
            .mines
            .iter()
            .zip(&map.mines)
            .filter(|(m, _)| m.alive && m.visible)
            .map(|(_, at)| PointView { x: at.x, y: at.y })
            .collect();
        View {
            tick: engine.tick(),
            confirmed_tick: engine.tick(),
            me: me.map(|id| id.to_string()),
            grid: GridView {
                width: grid.width,
                height: grid.height,
                version: grid.version,
                rows,
            },
            exit: TileView {
                x: map.exit.x,
                y: map.exit.y,
            },
            countdown_ticks: state.countdown,
            players,
            enemies,
            pickups,
            mines,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::wire::raycaster::{LevelSeed, Settings};
    use engine::{Difficulty, LevelSetup};

    /// The JSON the renderer (`web/lib/render/`, fixtures in
    /// `web/test-support/view-fixture.json`) reads, from a real level.
    #[test]
    fn the_view_of_a_generated_level_has_the_renderers_shape() {
        let roster = vec![PlayerId::new("guest-1"), PlayerId::new("host")];
        let engine = RaycasterEngine::new_level(LevelSetup {
            body: engine::level_gen::generate(7, 0, 2),
            roster: roster.clone(),
            head: LevelSeed { gameplay_seed: 7 },
            settings: Settings {
                difficulty: Difficulty::Normal,
            },
            player_count: 2,
            carryovers: BTreeMap::new(),
            input_delays: BTreeMap::new(),
        })
        .expect("a generated level builds");
        let names = BTreeMap::from([(roster[0].clone(), "Ada".to_owned())]);
        let view = View::of(&engine, Some(&roster[0]), &names, |_| (0.25, 0.0));
        let json = serde_json::to_value(&view).expect("serializes");
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(
            keys(&json),
            [
                "confirmedTick",
                "countdownTicks",
                "enemies",
                "exit",
                "grid",
                "me",
                "mines",
                "pickups",
                "players",
                "tick"
            ]
        );
        let grid = &json["grid"];
        let rows = grid["rows"].as_array().expect("rows");
        assert_eq!(rows.len() as u64, grid["height"].as_u64().expect("height"));
        let first = rows[0].as_str().expect("row");
        assert_eq!(first.len() as u64, grid["width"].as_u64().expect("width"));
        assert!(
            first.chars().all(|c| c == '#'),
            "the border is wall: {first}"
        );
        assert!(
            rows.iter()
                .flat_map(|r| r.as_str().unwrap_or("").chars())
                .all(|c| "#.DSE".contains(c))
        );
        let exit = &view.exit;
        assert_eq!(
            rows[exit.y as usize].as_str().unwrap_or("").as_bytes()[exit.x as usize],
            b'E'
        );
        let p = &json["players"][0];
        assert_eq!(
            keys(p),
            [
                "alive",
                "ammo",
                "dirX",
                "dirY",
                "health",
                "id",
                "keys",
                "kills",
                "name",
                "ownedWeapons",
                "planeX",
                "planeY",
                "score",
                "weapon",
                "weaponName",
                "x",
                "y"
            ]
        );
        assert_eq!(p["id"], "guest-1");
        assert_eq!(p["name"], "Ada");
        assert_eq!(keys(&p["ammo"]), ["bullets", "gas", "rockets", "smg"]);
        // Every player starts with the starting weapons.
        let starting = engine::weapon::owned_list(engine::weapon::STARTING_MASK);
        assert_eq!(p["ownedWeapons"], serde_json::json!(starting));
        let spawned = &engine.state().players[&roster[0]];
        assert_eq!(
            p["x"].as_f64(),
            Some(spawned.pos.x + 0.25),
            "the render offset is applied"
        );
        assert_eq!(json["players"][1]["name"], "");
        let enemy = &json["enemies"][0];
        assert_eq!(
            keys(enemy),
            ["aggroed", "alive", "hp", "kind", "maxHp", "x", "y"]
        );
        assert!(["grunt", "brute", "sniper"].contains(&enemy["kind"].as_str().unwrap_or("")));
        assert_eq!(enemy["hp"], enemy["maxHp"]);
        for pickup in json["pickups"].as_array().expect("pickups") {
            let kind = pickup["kind"].as_str().unwrap_or("");
            assert!(
                [
                    "health", "bullets", "rockets", "smg", "gas", "weapon", "key"
                ]
                .contains(&kind),
                "{kind}"
            );
        }
        assert_eq!(json["me"], "guest-1");
        assert_eq!(json["countdownTicks"], serde_json::Value::Null);
    }
}
