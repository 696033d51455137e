//! The live tile grid: walkability, collision, grid ray casts, and the two
//! mutations (opening a locked door, revealing a secret region by flood
//! fill). Every mutation bumps `version` and reports its tile deltas.

use crate::wire::map::{GameMap, Tile};
use crate::wire::snapshot::TileMutation;
use serde::{Deserialize, Serialize};

use crate::geom::Vec2;

/// The grid as the simulation sees it now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grid {
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Row-major tiles.
    pub tiles: Vec<Tile>,
    /// Bumped once per mutation event (`gridVersion`).
    pub version: u64,
}

impl Grid {
    /// The grid of a (validated) map.
    pub fn from_map(map: &GameMap) -> Self {
        Self {
            width: map.width,
            height: map.height,
            tiles: map.tiles.clone(),
            version: 0,
        }
    }

    fn index(&self, x: i64, y: i64) -> Option<usize> {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return None;
        }
        usize::try_from(y * i64::from(self.width) + x).ok()
    }

    /// The tile at a coordinate; outside the grid everything is wall.
    pub fn tile(&self, x: i64, y: i64) -> Tile {
        self.index(x, y)
            .and_then(|i| self.tiles.get(i).copied())
            .unwrap_or(Tile::Wall)
    }

    /// The tile under a point.
    pub fn tile_at(&self, p: Vec2) -> Tile {
        self.tile(cell(p.x), cell(p.y))
    }

    /// Whether a point is on a walkable tile.
    pub fn walkable_at(&self, p: Vec2) -> bool {
        self.tile_at(p).is_walkable()
    }

    /// Whether a box of half-size `r` around `p` touches only walkable tiles.
    pub fn box_free(&self, p: Vec2, r: f64) -> bool {
        let (x0, x1, y0, y1) = (cell(p.x - r), cell(p.x + r), cell(p.y - r), cell(p.y + r));
        (y0..=y1).all(|y| (x0..=x1).all(|x| self.tile(x, y).is_walkable()))
    }

    /// Moves a body of radius `r` by `delta`, one axis at a time so it slides
    /// along walls. Returns the new position.
    pub fn slide(&self, p: Vec2, delta: Vec2, r: f64) -> Vec2 {
        let mut out = p;
        let tx = Vec2::new(p.x + delta.x, p.y);
        if self.box_free(tx, r) {
            out.x = tx.x;
        }
        let ty = Vec2::new(out.x, p.y + delta.y);
        if self.box_free(ty, r) {
            out.y = ty.y;
        }
        out
    }

    /// Distance along the unit direction `d` from `o` to the first solid
    /// tile, capped at `max` (a DDA walk over grid lines).
    pub fn ray_distance(&self, o: Vec2, d: Vec2, max: f64) -> f64 {
        let (mut cx, mut cy) = (cell(o.x), cell(o.y));
        if !self.tile(cx, cy).is_walkable() {
            return 0.0;
        }
        let step_x: i64 = if d.x < 0.0 { -1 } else { 1 };
        let step_y: i64 = if d.y < 0.0 { -1 } else { 1 };
        let inv = |v: f64| {
            if v == 0.0 {
                f64::INFINITY
            } else {
                (1.0 / v).abs()
            }
        };
        let (dx, dy) = (inv(d.x), inv(d.y));
        let frac = |v: f64, c: i64, s: i64| {
            if s < 0 {
                v - c as f64
            } else {
                c as f64 + 1.0 - v
            }
        };
        let mut tx = if d.x == 0.0 {
            f64::INFINITY
        } else {
            frac(o.x, cx, step_x) * dx
        };
        let mut ty = if d.y == 0.0 {
            f64::INFINITY
        } else {
            frac(o.y, cy, step_y) * dy
        };
        loop {
            let t = if tx < ty {
                cx += step_x;
                let t = tx;
                tx += dx;
                t
            } else {
                cy += step_y;
                let t = ty;
                ty += dy;
                t
            };
            if t >= max {
                return max;
            }
            if !self.tile(cx, cy).is_walkable() {
                return t;
            }
        }
    }

    /// Whether nothing solid lies between two points.
    pub fn line_of_sight(&self, a: Vec2, b: Vec2) -> bool {
        let dist = a.distance(b);
        if dist == 0.0 {
            return true;
        }
        let d = b.minus(a).scale(1.0 / dist);
        self.ray_distance(a, d, dist) >= dist
    }

    /// Sets one tile, bumping the version; returns the delta.
    fn set(&mut self, x: i64, y: i64, value: Tile) -> Option<TileMutation> {
        let i = self.index(x, y)?;
        let slot = self.tiles.get_mut(i)?;
        *slot = value;
        Some(TileMutation {
            x: u32::try_from(x).ok()?,
            y: u32::try_from(y).ok()?,
            value,
        })
    }

    /// Overwrites one tile from a reconciliation delta; false when out of
    /// bounds. Does not bump the version (the snapshot carries it).
    pub fn apply_mutation(&mut self, m: &TileMutation) -> bool {
        self.set(i64::from(m.x), i64::from(m.y), m.value).is_some()
    }

    /// Opens a locked door into floor. Empty if the tile is not a door.
    pub fn open_door(&mut self, x: i64, y: i64) -> Vec<TileMutation> {
        if self.tile(x, y) != Tile::Door {
            return Vec::new();
        }
        let out: Vec<_> = self.set(x, y, Tile::Floor).into_iter().collect();
        self.version += 1;
        out
    }

    /// Reveals the 4-connected secret region containing `(x, y)` as floor,
    /// visiting neighbours in a fixed order. Empty if the tile is not secret.
    pub fn reveal_secret(&mut self, x: i64, y: i64) -> Vec<TileMutation> {
        if self.tile(x, y) != Tile::Secret {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut stack = vec![(x, y)];
        while let Some((cx, cy)) = stack.pop() {
            if self.tile(cx, cy) != Tile::Secret {
                continue;
            }
            out.extend(self.set(cx, cy, Tile::Floor));
            for (nx, ny) in [(cx + 1, cy), (cx - 1, cy), (cx, cy + 1), (cx, cy - 1)] {
                if self.tile(nx, ny) == Tile::Secret {
                    stack.push((nx, ny));
                }
            }
        }
        self.version += 1;
        out
    }
}

/// The grid cell containing a coordinate (floor, saturating).
pub fn cell(v: f64) -> i64 {
    libm::floor(v) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_room() -> Grid {
        let (w, h) = (6u32, 5u32);
        let mut tiles = vec![Tile::Wall; (w * h) as usize];
        for y in 1..4 {
            for x in 1..5 {
                tiles[(y * w + x) as usize] = Tile::Floor;
            }
        }
        Grid {
            width: w,
            height: h,
            tiles,
            version: 0,
        }
    }

    #[test]
    fn rays_stop_at_walls() {
        let g = open_room();
        let d = g.ray_distance(Vec2::new(1.5, 2.5), Vec2::new(1.0, 0.0), 100.0);
        assert!((d - 3.5).abs() < 1e-12, "{d}");
        assert!(g.line_of_sight(Vec2::new(1.5, 1.5), Vec2::new(4.5, 3.5)));
        assert!(!g.line_of_sight(Vec2::new(1.5, 1.5), Vec2::new(5.5, 1.5)));
    }

    #[test]
    fn slide_blocks_walls() {
        let g = open_room();
        let p = g.slide(Vec2::new(1.5, 1.5), Vec2::new(-1.0, 0.0), 0.2);
        assert_eq!(p.x, 1.5);
    }

    #[test]
    fn secret_flood_fill_reveals_the_region() {
        let mut g = open_room();
        for x in [2, 3] {
            g.tiles[(4 * 6 + x) as usize] = Tile::Secret;
        }
        let m = g.reveal_secret(2, 4);
        assert_eq!(m.len(), 2);
        assert_eq!(g.version, 1);
        assert_eq!(g.tile(3, 4), Tile::Floor);
        assert!(g.reveal_secret(2, 4).is_empty());
    }
}
