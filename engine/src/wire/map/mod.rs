//! The game map as it travels over the wire (spec "Session setup" item 7) and
//! as it is stored on disk: a row-major tile grid plus the map-authored
//! entities whose array index is their identity in reconciliation snapshots.
//!
//! There is no `visited` field: it is all-false at generation time, so each
//! peer builds it locally. [`GameMap::validate`] is the gate a map must pass
//! before an engine accepts it; it names exactly what is wrong.
//!
//! # Layout
//!
//! - `tile`: tile kinds and their wire codes, coordinates, points, room
//!   rectangles.
//! - `entities`: the map-authored enemies, pickups and keys.
//! - `validation`: [`GameMap::validate`] and [`MapError`].
//! - here: [`GameMap`] itself, its side limits and tile lookups.

use serde::{Deserialize, Serialize};

mod entities;
mod tile;
mod validation;

pub use entities::{EnemyKind, LootKind, MapEnemy, MapKey, MapPickup};
pub use tile::{MapPoint, RoomRect, Tile, TilePos};
pub use validation::{EntityList, MapError};

/// Smallest accepted map side, in tiles.
pub const MIN_MAP_SIDE: u32 = 3;
/// Largest accepted map side, in tiles.
pub const MAX_MAP_SIDE: u32 = 512;

/// A whole level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GameMap {
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Row-major tiles, `width * height` of them.
    pub tiles: Vec<Tile>,
    /// Player spawn points, one per player slot (players past the end reuse
    /// them round-robin).
    pub spawns: Vec<MapPoint>,
    /// Enemies (index-aligned with snapshot `enemies`).
    pub enemies: Vec<MapEnemy>,
    /// Mines (index-aligned with snapshot `mines`).
    pub mines: Vec<MapPoint>,
    /// Ammo and health pickups (`pickupsCollected` indexes them).
    pub ammo_pickups: Vec<MapPickup>,
    /// Keys (`keysCollected` indexes them).
    pub keys: Vec<MapKey>,
    /// Locked door tiles.
    pub doors: Vec<TilePos>,
    /// The exit tile.
    pub exit: TilePos,
    /// Room rectangles (the first holds the spawns, the exit lies in one).
    pub rooms: Vec<RoomRect>,
}

impl GameMap {
    /// The tile at a coordinate, or `None` outside the grid.
    pub fn tile(&self, x: u32, y: u32) -> Option<Tile> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let index = usize::try_from(u64::from(y) * u64::from(self.width) + u64::from(x)).ok()?;
        self.tiles.get(index).copied()
    }

    /// The tile under a point in tile units, or `None` outside the grid.
    pub fn tile_at(&self, x: f64, y: f64) -> Option<Tile> {
        if !(x.is_finite() && y.is_finite()) || x < 0.0 || y < 0.0 {
            return None;
        }
        if x >= f64::from(self.width) || y >= f64::from(self.height) {
            return None;
        }
        // In range and non-negative, so the truncating casts are exact floors.
        self.tile(x as u32, y as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 5x5 room: walls around a 3x3 floor with the exit in the middle.
    fn tiny() -> GameMap {
        let mut tiles = vec![Tile::Wall; 25];
        for y in 1..4 {
            for x in 1..4 {
                tiles[y * 5 + x] = Tile::Floor;
            }
        }
        tiles[2 * 5 + 3] = Tile::Exit;
        GameMap {
            width: 5,
            height: 5,
            tiles,
            spawns: vec![MapPoint { x: 1.5, y: 1.5 }],
            enemies: vec![],
            mines: vec![],
            ammo_pickups: vec![],
            keys: vec![],
            doors: vec![],
            exit: TilePos { x: 3, y: 2 },
            rooms: vec![RoomRect {
                x: 1,
                y: 1,
                w: 3,
                h: 3,
            }],
        }
    }

    #[test]
    fn valid_map_passes_and_round_trips() {
        let map = tiny();
        assert_eq!(map.validate(), Ok(()));
        let json = serde_json::to_string(&map).unwrap();
        assert!(json.contains("\"ammoPickups\""));
        let back: GameMap = serde_json::from_str(&json).unwrap();
        assert_eq!(back, map);
    }

    #[test]
    fn errors_name_the_problem() {
        let mut m = tiny();
        m.tiles.pop();
        assert!(matches!(
            m.validate(),
            Err(MapError::DimensionMismatch { actual: 24, .. })
        ));
        let mut m = tiny();
        m.spawns.clear();
        assert_eq!(m.validate(), Err(MapError::NoSpawn));
        let mut m = tiny();
        m.spawns[0] = MapPoint { x: 0.5, y: 0.5 };
        assert!(matches!(
            m.validate(),
            Err(MapError::EntityInWall {
                list: EntityList::Spawns,
                index: 0,
                ..
            })
        ));
        let mut m = tiny();
        m.mines.push(MapPoint { x: 9.0, y: 1.0 });
        assert!(matches!(
            m.validate(),
            Err(MapError::OutOfBounds {
                list: EntityList::Mines,
                ..
            })
        ));
        let mut m = tiny();
        m.exit = TilePos { x: 1, y: 1 };
        assert!(matches!(m.validate(), Err(MapError::NoExit { .. })));
        let mut m = tiny();
        m.spawns[0].x = f64::NAN;
        assert!(matches!(
            m.validate(),
            Err(MapError::NonFinitePosition { .. })
        ));
        let mut m = tiny();
        m.width = 100_000;
        assert!(matches!(m.validate(), Err(MapError::BadDimensions { .. })));
        let msg = MapError::NoSpawn.to_string();
        assert!(msg.contains("spawn"));
    }

    #[test]
    fn unknown_tile_code_is_a_parse_error() {
        let json = serde_json::to_string(&tiny())
            .unwrap()
            .replacen("[1,1,1", "[9,1,1", 1);
        assert!(serde_json::from_str::<GameMap>(&json).is_err());
    }
}
