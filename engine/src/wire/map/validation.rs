//! The structural rules a map must pass before an engine accepts it, and
//! [`MapError`], which names the first one broken.

use thiserror::Error;

use super::{GameMap, LootKind, MAX_MAP_SIDE, MIN_MAP_SIDE, MapPoint, RoomRect, Tile};

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
