//! The deterministic level generator: (campaign seed, level index, max
//! players) to a playable [`GameMap`].
//!
//! Layout: the map is a grid of `CELL`-sized cells with one rectangular room
//! per cell. Rooms are chained in boustrophedon order (left to right, then
//! right to left on the next row...), each linked to the next by a one-tile
//! corridor, so the chain is a path and a door on a link gates everything
//! after it. The spawn is in the first room, the exit in the last. Keys for
//! a door are placed between the previous door and that door. Some rooms get
//! a 3x3 secret room behind one wall. Every candidate is checked with
//! [`check_playable`]; a failing one is regenerated from the next sub-seed.

use protocol::map::{
    EnemyKind, GameMap, LootKind, MapEnemy, MapKey, MapPickup, MapPoint, RoomRect, Tile, TilePos,
};

use crate::level_check::check_playable;
use crate::rng::Mulberry32;

/// Side of one room cell, tiles.
pub const CELL: u32 = 11;
/// Rows of cells.
const ROWS: u32 = 3;
/// Candidates tried before the fallback level.
const ATTEMPTS: u32 = 32;

/// Generates level `level` of the campaign `seed` for up to `max_players`.
pub fn generate(seed: u32, level: u32, max_players: u32) -> GameMap {
    for attempt in 0..ATTEMPTS {
        let mut mix = Mulberry32::new(
            seed ^ level.wrapping_mul(0x9E37_79B9) ^ attempt.wrapping_mul(0x85EB_CA6B),
        );
        let map = Builder::new(mix.next_u32(), level, max_players).build();
        if check_playable(&map).is_ok() {
            return map;
        }
    }
    fallback(max_players)
}

struct Builder {
    rng: Mulberry32,
    level: u32,
    max_players: u32,
    cols: u32,
    width: u32,
    height: u32,
    tiles: Vec<Tile>,
}

impl Builder {
    fn new(seed: u32, level: u32, max_players: u32) -> Self {
        let cols = 3 + level.min(4) / 2;
        let (width, height) = (cols * CELL + 2, ROWS * CELL + 2);
        let len = usize::try_from(width * height).unwrap_or(0);
        Self {
            rng: Mulberry32::new(seed),
            level,
            max_players: max_players.max(1),
            cols,
            width,
            height,
            tiles: vec![Tile::Wall; len],
        }
    }

    fn get(&self, x: u32, y: u32) -> Tile {
        if x >= self.width || y >= self.height {
            return Tile::Wall;
        }
        self.tiles
            .get(usize::try_from(y * self.width + x).unwrap_or(usize::MAX))
            .copied()
            .unwrap_or(Tile::Wall)
    }

    fn set(&mut self, x: u32, y: u32, t: Tile) {
        // Never touch the border ring.
        if x == 0 || y == 0 || x + 1 >= self.width || y + 1 >= self.height {
            return;
        }
        if let Some(slot) = self
            .tiles
            .get_mut(usize::try_from(y * self.width + x).unwrap_or(usize::MAX))
        {
            *slot = t;
        }
    }

    fn carve_h(&mut self, y: u32, x0: u32, x1: u32) {
        for x in x0.min(x1)..=x0.max(x1) {
            self.set(x, y, Tile::Floor);
        }
    }

    fn carve_v(&mut self, x: u32, y0: u32, y1: u32) {
        for y in y0.min(y1)..=y0.max(y1) {
            self.set(x, y, Tile::Floor);
        }
    }

    fn room_in_cell(&mut self, col: u32, row: u32) -> RoomRect {
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
    fn corridor(&mut self, a: RoomRect, ca: (u32, u32), b: RoomRect, cb: (u32, u32)) -> TilePos {
        let centre = |r: RoomRect| (r.x + r.w / 2, r.y + r.h / 2);
        let ((ax, ay), (bx, by)) = (centre(a), centre(b));
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
            let _ = (bx, by);
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

    fn point_in(&mut self, r: RoomRect) -> MapPoint {
        let x = r.x + self.rng.below(r.w);
        let y = r.y + self.rng.below(r.h);
        MapPoint {
            x: f64::from(x) + 0.5,
            y: f64::from(y) + 0.5,
        }
    }

    /// Tries to hide a 3x3 secret room beside `r` inside cell column `col`;
    /// returns the centre of the secret room.
    fn secret_beside(&mut self, r: RoomRect, col: u32) -> Option<MapPoint> {
        let cell_x0 = 1 + col * CELL;
        let cell_x1 = col * CELL + CELL;
        let right = r.x + r.w; // the wall column on the right
        let left = r.x.checked_sub(1)?; // the wall column on the left
        let candidates = [
            (right, right + 1, right + 4),
            (left, left.checked_sub(3)?, left.checked_sub(4)?),
        ];
        for (wall, region_x0, outer) in candidates {
            let (lo, hi) = (wall.min(outer), wall.max(outer));
            if lo < cell_x0 || hi > cell_x1 {
                continue;
            }
            let rows = r.y.checked_sub(1)?..=r.y + 3;
            let all_wall = rows
                .clone()
                .all(|y| (lo..=hi).all(|x| self.get(x, y) == Tile::Wall));
            if !all_wall {
                continue;
            }
            self.set(wall, r.y + 1, Tile::Secret);
            for y in r.y..r.y + 3 {
                for x in region_x0..region_x0 + 3 {
                    self.set(x, y, Tile::Secret);
                }
            }
            return Some(MapPoint {
                x: f64::from(region_x0) + 1.5,
                y: f64::from(r.y) + 1.5,
            });
        }
        None
    }

    fn build(mut self) -> GameMap {
        let mut cells = Vec::new();
        for row in 0..ROWS {
            let cols: Vec<u32> = if row % 2 == 0 {
                (0..self.cols).collect()
            } else {
                (0..self.cols).rev().collect()
            };
            cells.extend(cols.into_iter().map(|c| (c, row)));
        }
        let rooms: Vec<RoomRect> = cells
            .iter()
            .map(|&(c, r)| self.room_in_cell(c, r))
            .collect();
        let n = rooms.len();
        let mut links = vec![TilePos { x: 0, y: 0 }];
        for k in 1..n {
            let (a, b) = (rooms[k - 1], rooms[k]);
            links.push(self.corridor(a, cells[k - 1], b, cells[k]));
        }
        let mut pickups = Vec::new();
        for k in 1..n.saturating_sub(1) {
            if self.rng.below(100) < 35
                && let Some(at) = self.secret_beside(rooms[k], cells[k].0)
            {
                let kind = if self.rng.below(2) == 0 {
                    LootKind::Health
                } else {
                    LootKind::Bullets
                };
                pickups.push(MapPickup {
                    position: at,
                    kind,
                    amount: if kind == LootKind::Health { 50 } else { 40 },
                });
            }
        }
        // Doors on evenly spread links, keys between the previous door and this one.
        let door_count = (1 + self.level / 2)
            .min(3)
            .min(u32::try_from(n.saturating_sub(2)).unwrap_or(0));
        let mut doors = Vec::new();
        let mut keys = Vec::new();
        let mut prev_link = 0usize;
        for d in 0..door_count {
            let base =
                usize::try_from((d + 1) * u32::try_from(n - 1).unwrap_or(1) / (door_count + 1))
                    .unwrap_or(1);
            let link = (base + usize::try_from(self.rng.below(2)).unwrap_or(0))
                .clamp(prev_link + 1, n - 1);
            if link <= prev_link || link >= n {
                continue;
            }
            let room_pick = prev_link
                + usize::try_from(self.rng.below(u32::try_from(link - prev_link).unwrap_or(1)))
                    .unwrap_or(0);
            let at = self.point_in(rooms[room_pick]);
            let door = links[link];
            self.set(door.x, door.y, Tile::Door);
            keys.push(MapKey {
                position: at,
                door: u32::try_from(doors.len()).unwrap_or(0),
            });
            doors.push(door);
            prev_link = link;
        }
        let spawn_room = rooms[0];
        let (cx, cy) = (
            spawn_room.x + spawn_room.w / 2,
            spawn_room.y + spawn_room.h / 2,
        );
        let offsets: [(i64, i64); 9] = [
            (0, 0),
            (1, 0),
            (0, 1),
            (1, 1),
            (-1, 0),
            (0, -1),
            (-1, -1),
            (1, -1),
            (-1, 1),
        ];
        let spawns = offsets
            .iter()
            .take(usize::try_from(self.max_players.min(9)).unwrap_or(1))
            .map(|(dx, dy)| MapPoint {
                x: (i64::from(cx) + dx) as f64 + 0.5,
                y: (i64::from(cy) + dy) as f64 + 0.5,
            })
            .collect();
        let exit_room = rooms[n - 1];
        let exit = TilePos {
            x: exit_room.x + exit_room.w / 2,
            y: exit_room.y + exit_room.h / 2,
        };
        self.set(exit.x, exit.y, Tile::Exit);
        let mut enemies = Vec::new();
        for &room in rooms.iter().skip(1) {
            let count = 1 + self.rng.below(2 + self.level.min(4) / 2);
            for _ in 0..count {
                let roll = self.rng.below(100);
                let kind = match roll {
                    0..55 => EnemyKind::Grunt,
                    55..80 => EnemyKind::Brute,
                    _ => EnemyKind::Sniper,
                };
                let position = self.point_in(room);
                enemies.push(MapEnemy {
                    kind,
                    position,
                    home: room,
                });
            }
        }
        let mut mines = Vec::new();
        for _ in 0..self.level.min(3) {
            let k =
                2 + usize::try_from(self.rng.below(u32::try_from(n - 2).unwrap_or(1))).unwrap_or(0);
            let p = self.point_in(rooms[k.min(n - 1)]);
            mines.push(p);
        }
        let extra = self.max_players / 2;
        for k in 1..n {
            if self.rng.below(100) < 45 {
                let position = self.point_in(rooms[k]);
                let health = self.rng.below(3) == 0;
                let (kind, amount) = if health {
                    (LootKind::Health, 25)
                } else {
                    (LootKind::Bullets, 20)
                };
                pickups.push(MapPickup {
                    position,
                    kind,
                    amount,
                });
            }
        }
        for _ in 0..extra {
            let k =
                1 + usize::try_from(self.rng.below(u32::try_from(n - 1).unwrap_or(1))).unwrap_or(0);
            let position = self.point_in(rooms[k.min(n - 1)]);
            pickups.push(MapPickup {
                position,
                kind: LootKind::Bullets,
                amount: 20,
            });
        }
        GameMap {
            width: self.width,
            height: self.height,
            tiles: self.tiles,
            spawns,
            enemies,
            mines,
            ammo_pickups: pickups,
            keys,
            doors,
            exit,
            rooms,
        }
    }
}

/// A one-room level used only if every candidate failed its checks.
fn fallback(max_players: u32) -> GameMap {
    let (w, h) = (9u32, 7u32);
    let mut tiles = vec![Tile::Wall; usize::try_from(w * h).unwrap_or(0)];
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            if let Some(t) = tiles.get_mut(usize::try_from(y * w + x).unwrap_or(usize::MAX)) {
                *t = Tile::Floor;
            }
        }
    }
    if let Some(t) = tiles.get_mut(usize::try_from(3 * w + 7).unwrap_or(usize::MAX)) {
        *t = Tile::Exit;
    }
    let spawns = (0..max_players.clamp(1, 5))
        .map(|i| MapPoint {
            x: 1.5,
            y: f64::from(i) + 1.5,
        })
        .collect();
    GameMap {
        width: w,
        height: h,
        tiles,
        spawns,
        enemies: Vec::new(),
        mines: Vec::new(),
        ammo_pickups: Vec::new(),
        keys: Vec::new(),
        doors: Vec::new(),
        exit: TilePos { x: 7, y: 3 },
        rooms: vec![RoomRect {
            x: 1,
            y: 1,
            w: w - 2,
            h: h - 2,
        }],
    }
}
