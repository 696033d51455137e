//! Secret rooms: small regions of secret wall hidden behind a room's wall,
//! each with a pickup inside.

use crate::wire::map::{LootKind, MapPickup, MapPoint, RoomRect, Tile};

use super::{Builder, CELL};

impl Builder {
    /// Secret rooms beside some middle rooms, each with a pickup inside.
    pub(super) fn secrets(&mut self, rooms: &[RoomRect], cells: &[(u32, u32)]) -> Vec<MapPickup> {
        let mut pickups = Vec::new();
        let middle = rooms.len().saturating_sub(1);
        for (&room, &cell) in rooms.iter().zip(cells).take(middle).skip(1) {
            if self.rng.below(100) < 50
                && let Some(position) = self.secret_beside(room, cell)
            {
                let (kind, amount) = if self.rng.below(2) == 0 {
                    (LootKind::Health, 50)
                } else {
                    (LootKind::Bullets, 40)
                };
                pickups.push(MapPickup {
                    position,
                    kind,
                    amount,
                });
            }
        }
        pickups
    }

    /// Tries to hide a secret room (3 tiles along the wall, 2 deep) behind
    /// one wall of `r`, inside cell `cell`, with solid rock all around it;
    /// returns the centre of the secret room.
    fn secret_beside(&mut self, r: RoomRect, (col, row): (u32, u32)) -> Option<MapPoint> {
        let (cx0, cx1) = (1 + col * CELL, col * CELL + CELL);
        let (cy0, cy1) = (1 + row * CELL, row * CELL + CELL);
        let (x, y) = (i64::from(r.x), i64::from(r.y));
        let (right, bottom) = (x + i64::from(r.w), y + i64::from(r.h));
        // (connecting wall tile, region top-left, region size, rock box min, rock box max)
        type Cand = ((i64, i64), (i64, i64), (i64, i64), (i64, i64), (i64, i64));
        let candidates: [Cand; 4] = [
            (
                (right, y + 1),
                (right + 1, y),
                (2, 3),
                (right, y - 1),
                (right + 3, y + 3),
            ),
            (
                (x - 1, y + 1),
                (x - 3, y),
                (2, 3),
                (x - 4, y - 1),
                (x - 1, y + 3),
            ),
            (
                (x + 1, bottom),
                (x, bottom + 1),
                (3, 2),
                (x - 1, bottom),
                (x + 3, bottom + 3),
            ),
            (
                (x + 1, y - 1),
                (x, y - 3),
                (3, 2),
                (x - 1, y - 4),
                (x + 3, y - 1),
            ),
        ];
        let first = self.rng.below(4);
        for i in 0..4u32 {
            let Some(&(door, origin, size, lo, hi)) =
                candidates.get(usize::try_from((first + i) % 4).ok()?)
            else {
                continue;
            };
            let inside = lo.0 >= i64::from(cx0)
                && hi.0 <= i64::from(cx1)
                && lo.1 >= i64::from(cy0)
                && hi.1 <= i64::from(cy1);
            if !inside {
                continue;
            }
            let rock =
                (lo.1..=hi.1).all(|yy| (lo.0..=hi.0).all(|xx| self.get_i(xx, yy) == Tile::Wall));
            if !rock {
                continue;
            }
            self.set_i(door.0, door.1, Tile::Secret);
            for yy in origin.1..origin.1 + size.1 {
                for xx in origin.0..origin.0 + size.0 {
                    self.set_i(xx, yy, Tile::Secret);
                }
            }
            return Some(MapPoint {
                x: origin.0 as f64 + size.0 as f64 / 2.0,
                y: origin.1 as f64 + size.1 as f64 / 2.0,
            });
        }
        None
    }

    fn get_i(&self, x: i64, y: i64) -> Tile {
        match (u32::try_from(x), u32::try_from(y)) {
            (Ok(x), Ok(y)) => self.get(x, y),
            _ => Tile::Wall,
        }
    }

    fn set_i(&mut self, x: i64, y: i64, t: Tile) {
        if let (Ok(x), Ok(y)) = (u32::try_from(x), u32::try_from(y)) {
            self.set(x, y, t);
        }
    }
}
