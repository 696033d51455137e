//! The game map as it travels over the wire (spec "Session setup" item 7) and
//! as it is stored on disk: a row-major tile grid plus the map-authored
//! entities whose array index is their identity in reconciliation snapshots.
//!
//! There is no `visited` field: it is all-false at generation time, so each
//! peer builds it locally. [`GameMap::validate`] is the gate a map must pass
//! before an engine accepts it; it names exactly what is wrong.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

/// Smallest accepted map side, in tiles.
pub const MIN_MAP_SIDE: u32 = 3;
/// Largest accepted map side, in tiles.
pub const MAX_MAP_SIDE: u32 = 512;

/// One grid cell. On the wire a tile is its numeric code (see [`Tile::code`]),
/// which keeps a 160x160 grid small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tile {
    /// Walkable floor (code 0).
    Floor,
    /// Solid wall (code 1).
    Wall,
    /// Locked door: solid until a player holding a key uses it (code 2).
    Door,
    /// Secret wall: solid until used; then its whole 4-connected secret
    /// region turns to floor (code 3).
    Secret,
    /// The level exit: walkable (code 4).
    Exit,
}

impl Tile {
    /// The numeric wire code.
    pub fn code(self) -> u8 {
        match self {
            Tile::Floor => 0,
            Tile::Wall => 1,
            Tile::Door => 2,
            Tile::Secret => 3,
            Tile::Exit => 4,
        }
    }

    /// The tile for a wire code, if it is one.
    pub fn from_code(code: u8) -> Option<Tile> {
        match code {
            0 => Some(Tile::Floor),
            1 => Some(Tile::Wall),
            2 => Some(Tile::Door),
            3 => Some(Tile::Secret),
            4 => Some(Tile::Exit),
            _ => None,
        }
    }

    /// Whether players and enemies can stand on it.
    pub fn is_walkable(self) -> bool {
        matches!(self, Tile::Floor | Tile::Exit)
    }
}

impl Serialize for Tile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.code())
    }
}

impl<'de> Deserialize<'de> for Tile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let code = u8::deserialize(d)?;
        Tile::from_code(code)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown tile code {code}")))
    }
}

/// A tile coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TilePos {
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
}

/// A point in tile units (the centre of tile (2, 3) is (2.5, 3.5)).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapPoint {
    /// Horizontal position.
    pub x: f64,
    /// Vertical position.
    pub y: f64,
}

/// An axis-aligned rectangle of tiles: columns `x..x+w`, rows `y..y+h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RoomRect {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width in tiles.
    pub w: u32,
    /// Height in tiles.
    pub h: u32,
}

impl RoomRect {
    /// Whether a point in tile units lies inside the rectangle.
    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= f64::from(self.x)
            && y >= f64::from(self.y)
            && x < f64::from(self.x) + f64::from(self.w)
            && y < f64::from(self.y) + f64::from(self.h)
    }
}

/// Enemy archetypes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EnemyKind {
    /// Ranged, average.
    Grunt,
    /// Melee, tough and fast.
    Brute,
    /// Ranged, long reach, accurate, fragile.
    Sniper,
}

/// A map-authored enemy; its array index is its identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MapEnemy {
    /// Archetype.
    pub kind: EnemyKind,
    /// Spawn position.
    pub position: MapPoint,
    /// The room it lives in: it roams inside it, and the exit is gated on
    /// the exit room's enemies through it.
    pub home: RoomRect,
}

/// What a pickup or a loot drop gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LootKind {
    /// Health points.
    Health,
    /// Bullets ammo pool.
    Bullets,
    /// Rockets ammo pool.
    Rockets,
    /// SMG ammo pool.
    Smg,
    /// Gas ammo pool.
    Gas,
    /// A weapon (`weaponIndex` says which).
    Weapon,
    /// One door key (multiplayer disconnect drops).
    Key,
}

/// A map-authored pickup (ammo or health); its array index is its identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MapPickup {
    /// Where it lies.
    pub position: MapPoint,
    /// What it gives: an ammo pool or health.
    pub kind: LootKind,
    /// How much.
    pub amount: u32,
}

/// A map-authored key; its array index is its identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MapKey {
    /// Where it lies.
    pub position: MapPoint,
    /// Index into [`GameMap::doors`] of the door it was placed for. Any key
    /// opens any door; this records the generator's guarantee.
    pub door: u32,
}

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

/// Which entity list a [`MapError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityList {
    /// `spawns`.
    Spawns,
    /// `enemies`.
    Enemies,
    /// `mines`.
    Mines,
    /// `ammoPickups`.
    AmmoPickups,
    /// `keys`.
    Keys,
}

impl std::fmt::Display for EntityList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EntityList::Spawns => "spawns",
            EntityList::Enemies => "enemies",
            EntityList::Mines => "mines",
            EntityList::AmmoPickups => "ammoPickups",
            EntityList::Keys => "keys",
        })
    }
}

/// What is wrong with a map.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum MapError {
    /// Width or height outside `MIN_MAP_SIDE..=MAX_MAP_SIDE`.
    #[error("map is {width}x{height}; each side must be between {MIN_MAP_SIDE} and {MAX_MAP_SIDE}")]
    BadDimensions {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
    },
    /// `tiles` does not hold `width * height` entries.
    #[error("map declares {width}x{height} = {expected} tiles but has {actual}")]
    DimensionMismatch {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// `width * height`.
        expected: u64,
        /// `tiles.len()`.
        actual: usize,
    },
    /// The outer ring of the grid must be solid.
    #[error("border tile ({x}, {y}) is not a wall")]
    OpenBorder {
        /// Column.
        x: u32,
        /// Row.
        y: u32,
    },
    /// A position is not a finite number.
    #[error("{list}[{index}] has a non-finite position")]
    NonFinitePosition {
        /// Which list.
        list: EntityList,
        /// Index in it.
        index: usize,
    },
    /// A position lies outside the grid.
    #[error("{list}[{index}] at ({x}, {y}) is outside the {width}x{height} grid")]
    OutOfBounds {
        /// Which list.
        list: EntityList,
        /// Index in it.
        index: usize,
        /// Position.
        x: f64,
        /// Position.
        y: f64,
        /// Grid width.
        width: u32,
        /// Grid height.
        height: u32,
    },
    /// An entity stands on a tile it cannot occupy.
    #[error("{list}[{index}] at ({x}, {y}) is inside a {tile:?} tile")]
    EntityInWall {
        /// Which list.
        list: EntityList,
        /// Index in it.
        index: usize,
        /// Position.
        x: f64,
        /// Position.
        y: f64,
        /// The tile it is on.
        tile: Tile,
    },
    /// No spawn point.
    #[error("map has no spawn point")]
    NoSpawn,
    /// The exit position is outside the grid or not an exit tile.
    #[error("exit ({x}, {y}) is not an exit tile inside the grid")]
    NoExit {
        /// Column.
        x: u32,
        /// Row.
        y: u32,
    },
    /// A `doors` entry is outside the grid or not a door tile.
    #[error("doors[{index}] at ({x}, {y}) is not a door tile inside the grid")]
    BadDoor {
        /// Index in `doors`.
        index: usize,
        /// Column.
        x: u32,
        /// Row.
        y: u32,
    },
    /// A key names a door that does not exist.
    #[error("keys[{index}] is for door {door} but the map has {doors} doors")]
    KeyDoorOutOfRange {
        /// Index in `keys`.
        index: usize,
        /// The door it names.
        door: u32,
        /// How many doors exist.
        doors: usize,
    },
    /// Fewer keys than doors: some door could never open.
    #[error("map has {doors} doors but only {keys} keys")]
    MissingKeys {
        /// Door count.
        doors: usize,
        /// Key count.
        keys: usize,
    },
    /// A room or an enemy's home rectangle leaves the grid or is empty.
    #[error("{what} rectangle {rect:?} is empty or leaves the grid")]
    BadRect {
        /// `rooms[i]` or `enemies[i].home`.
        what: String,
        /// The rectangle.
        rect: RoomRect,
    },
    /// A pickup gives nothing, or gives a weapon/key (pickups are ammo or health).
    #[error(
        "ammoPickups[{index}] is a {kind:?} pickup of {amount}; pickups give a positive amount of ammo or health"
    )]
    BadPickup {
        /// Index in `ammoPickups`.
        index: usize,
        /// Its kind.
        kind: LootKind,
        /// Its amount.
        amount: u32,
    },
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

    /// Checks every structural rule an engine relies on. Reachability is a
    /// gameplay property checked by the engine's level tools, not here.
    pub fn validate(&self) -> Result<(), MapError> {
        self.validate_grid()?;
        if self.spawns.is_empty() {
            return Err(MapError::NoSpawn);
        }
        let walkable = |t: Tile| t.is_walkable();
        self.validate_points(EntityList::Spawns, self.spawns.iter().copied(), walkable)?;
        self.validate_points(
            EntityList::Enemies,
            self.enemies.iter().map(|e| e.position),
            walkable,
        )?;
        self.validate_points(EntityList::Mines, self.mines.iter().copied(), walkable)?;
        self.validate_points(
            EntityList::Keys,
            self.keys.iter().map(|k| k.position),
            walkable,
        )?;
        // A pickup may wait inside a secret room that is still solid.
        self.validate_points(
            EntityList::AmmoPickups,
            self.ammo_pickups.iter().map(|p| p.position),
            |t| t.is_walkable() || t == Tile::Secret,
        )?;
        if self.tile(self.exit.x, self.exit.y) != Some(Tile::Exit) {
            return Err(MapError::NoExit {
                x: self.exit.x,
                y: self.exit.y,
            });
        }
        for (index, d) in self.doors.iter().enumerate() {
            if self.tile(d.x, d.y) != Some(Tile::Door) {
                return Err(MapError::BadDoor {
                    index,
                    x: d.x,
                    y: d.y,
                });
            }
        }
        for (index, k) in self.keys.iter().enumerate() {
            if usize::try_from(k.door).map_or(true, |d| d >= self.doors.len()) {
                return Err(MapError::KeyDoorOutOfRange {
                    index,
                    door: k.door,
                    doors: self.doors.len(),
                });
            }
        }
        if self.keys.len() < self.doors.len() {
            return Err(MapError::MissingKeys {
                doors: self.doors.len(),
                keys: self.keys.len(),
            });
        }
        for (i, r) in self.rooms.iter().enumerate() {
            self.validate_rect(format!("rooms[{i}]"), *r)?;
        }
        for (i, e) in self.enemies.iter().enumerate() {
            self.validate_rect(format!("enemies[{i}].home"), e.home)?;
        }
        for (index, p) in self.ammo_pickups.iter().enumerate() {
            if p.amount == 0 || matches!(p.kind, LootKind::Weapon | LootKind::Key) {
                return Err(MapError::BadPickup {
                    index,
                    kind: p.kind,
                    amount: p.amount,
                });
            }
        }
        Ok(())
    }

    fn validate_grid(&self) -> Result<(), MapError> {
        let (width, height) = (self.width, self.height);
        let side_ok = |s: u32| (MIN_MAP_SIDE..=MAX_MAP_SIDE).contains(&s);
        if !side_ok(width) || !side_ok(height) {
            return Err(MapError::BadDimensions { width, height });
        }
        let expected = u64::from(width) * u64::from(height);
        if u64::try_from(self.tiles.len()).ok() != Some(expected) {
            return Err(MapError::DimensionMismatch {
                width,
                height,
                expected,
                actual: self.tiles.len(),
            });
        }
        for x in 0..width {
            for y in [0, height - 1] {
                if self.tile(x, y) != Some(Tile::Wall) {
                    return Err(MapError::OpenBorder { x, y });
                }
            }
        }
        for y in 0..height {
            for x in [0, width - 1] {
                if self.tile(x, y) != Some(Tile::Wall) {
                    return Err(MapError::OpenBorder { x, y });
                }
            }
        }
        Ok(())
    }

    fn validate_points(
        &self,
        list: EntityList,
        points: impl Iterator<Item = MapPoint>,
        allowed: impl Fn(Tile) -> bool,
    ) -> Result<(), MapError> {
        for (index, p) in points.enumerate() {
            let (x, y) = (p.x, p.y);
            if !(x.is_finite() && y.is_finite()) {
                return Err(MapError::NonFinitePosition { list, index });
            }
            let Some(tile) = self.tile_at(x, y) else {
                return Err(MapError::OutOfBounds {
                    list,
                    index,
                    x,
                    y,
                    width: self.width,
                    height: self.height,
                });
            };
            if !allowed(tile) {
                return Err(MapError::EntityInWall {
                    list,
                    index,
                    x,
                    y,
                    tile,
                });
            }
        }
        Ok(())
    }

    fn validate_rect(&self, what: String, rect: RoomRect) -> Result<(), MapError> {
        let fits = rect.w > 0
            && rect.h > 0
            && u64::from(rect.x) + u64::from(rect.w) <= u64::from(self.width)
            && u64::from(rect.y) + u64::from(rect.h) <= u64::from(self.height);
        if fits {
            Ok(())
        } else {
            Err(MapError::BadRect { what, rect })
        }
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
