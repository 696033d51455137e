//! Tiles and positions on the grid: the tile kinds with their wire codes,
//! tile coordinates, points in tile units and room rectangles.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
