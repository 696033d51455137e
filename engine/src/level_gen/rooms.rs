//! The room chain: one room per cell, the cells in boustrophedon order,
//! and the corridor that links each room to the next.

use crate::wire::map::{RoomRect, TilePos};

use super::{Builder, CELL, ROWS};

impl Builder {
    pub(super) fn room_in_cell(&mut self, col: u32, row: u32) -> RoomRect {
        let w = 4 + self.rng.below(5);
        let h = 4 + self.rng.below(5);
        let ox = 1 + self.rng.below(CELL - 1 - w);
        let oy = 1 + self.rng.below(CELL - 1 - h);
        let rect = RoomRect {
            x: 1 + col * CELL + ox,
            y: 1 + row * CELL + oy,
            w,
            h,
        };
        for y in rect.y..rect.y + rect.h {
            self.carve_h(y, rect.x, rect.x + rect.w - 1);
        }
        rect
    }

    /// Carves the corridor from room `a` (cell `ca`) to its chain successor
    /// `b` (cell `cb`, a direct neighbour) and returns the corridor tile just
    /// outside `a`, where a door can go.
    pub(super) fn corridor(
        &mut self,
        a: RoomRect,
        ca: (u32, u32),
        b: RoomRect,
        cb: (u32, u32),
    ) -> TilePos {
        let centre = |r: RoomRect| (r.x + r.w / 2, r.y + r.h / 2);
        let (ax, ay) = centre(a);
        if ca.1 == cb.1 {
            let (l, r, a_is_left) = if ca.0 < cb.0 {
                (a, b, true)
            } else {
                (b, a, false)
            };
            let (ly, ry) = (centre(l).1, centre(r).1);
            let xm = 1 + ca.0.max(cb.0) * CELL;
            self.carve_h(ly, l.x + l.w, xm);
            self.carve_v(xm, ly, ry);
            self.carve_h(ry, xm, r.x - 1);
            if a_is_left {
                TilePos {
                    x: a.x + a.w,
                    y: ay,
                }
            } else {
                TilePos { x: a.x - 1, y: ay }
            }
        } else {
            let (t, bm, a_is_top) = if ca.1 < cb.1 {
                (a, b, true)
            } else {
                (b, a, false)
            };
            let (tx, bmx) = (centre(t).0, centre(bm).0);
            let ym = 1 + ca.1.max(cb.1) * CELL;
            self.carve_v(tx, t.y + t.h, ym);
            self.carve_h(ym, tx, bmx);
            self.carve_v(bmx, ym, bm.y - 1);
            if a_is_top {
                TilePos {
                    x: ax,
                    y: a.y + a.h,
                }
            } else {
                TilePos { x: ax, y: a.y - 1 }
            }
        }
    }

    /// Cells in chain order: left to right, then right to left, ...
    pub(super) fn chain_cells(&self) -> Vec<(u32, u32)> {
        let mut cells = Vec::new();
        for row in 0..ROWS {
            let cols: Vec<u32> = if row % 2 == 0 {
                (0..self.cols).collect()
            } else {
                (0..self.cols).rev().collect()
            };
            cells.extend(cols.into_iter().map(|c| (c, row)));
        }
        cells
    }
}
