//! The deterministic level generator: (campaign seed, level index, max
//! players) to a playable [`GameMap`].
//!
//! Layout: the map is a grid of `CELL`-sized cells with one rectangular room
//! per cell. Rooms are chained in boustrophedon order (left to right, then
//! right to left on the next row...), each linked to the next by a one-tile
//! corridor, so the chain is a path and a door on a link gates everything
//! after it. The spawn is in the first room, the exit in the last. Keys for
//! a door are placed between the previous door and that door. Some rooms get
//! a small secret room behind one wall. Every candidate is checked with
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

    fn point_in(&mut self, r: RoomRect) -> MapPoint {
        let x = r.x + self.rng.below(r.w);
        let y = r.y + self.rng.below(r.h);
        MapPoint {
            x: f64::from(x) + 0.5,
            y: f64::from(y) + 0.5,
        }
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

    /// Cells in chain order: left to right, then right to left, ...
    fn chain_cells(&self) -> Vec<(u32, u32)> {
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

    /// Secret rooms beside some middle rooms, each with a pickup inside.
    fn secrets(&mut self, rooms: &[RoomRect], cells: &[(u32, u32)]) -> Vec<MapPickup> {
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

    /// Locked doors on evenly spread links (`links[k]` joins room k-1 to
    /// room k), each door's key in a room between the previous door and it.
    fn doors_and_keys(
        &mut self,
        rooms: &[RoomRect],
        links: &[TilePos],
    ) -> (Vec<TilePos>, Vec<MapKey>) {
        let n = rooms.len();
        let n32 = u32::try_from(n).unwrap_or(0);
        let door_count = (1 + self.level / 2).min(3).min(n32.saturating_sub(2));
        let (mut doors, mut keys) = (Vec::new(), Vec::new());
        let mut prev_link = 0usize;
        for d in 0..door_count {
            let base =
                usize::try_from((d + 1) * n32.saturating_sub(1) / (door_count + 1)).unwrap_or(1);
            let jitter = usize::try_from(self.rng.below(2)).unwrap_or(0);
            let link = (base + jitter).clamp(prev_link + 1, n.saturating_sub(1));
            let (Some(&door), true) = (links.get(link), link > prev_link) else {
                continue;
            };
            let span = u32::try_from(link - prev_link).unwrap_or(1);
            let key_room = prev_link + usize::try_from(self.rng.below(span)).unwrap_or(0);
            let Some(&room) = rooms.get(key_room) else {
                continue;
            };
            let position = self.point_in(room);
            self.set(door.x, door.y, Tile::Door);
            keys.push(MapKey {
                position,
                door: u32::try_from(doors.len()).unwrap_or(0),
            });
            doors.push(door);
            prev_link = link;
        }
        (doors, keys)
    }

    /// Up to nine spawn points around the centre of the first room.
    fn spawns(&self, room: RoomRect) -> Vec<MapPoint> {
        let (cx, cy) = (
            i64::from(room.x + room.w / 2),
            i64::from(room.y + room.h / 2),
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
        offsets
            .iter()
            .take(usize::try_from(self.max_players.min(9)).unwrap_or(1))
            .map(|(dx, dy)| MapPoint {
                x: (cx + dx) as f64 + 0.5,
                y: (cy + dy) as f64 + 0.5,
            })
            .collect()
    }

    /// Enemies in every room but the first; more on later levels.
    fn enemies(&mut self, rooms: &[RoomRect]) -> Vec<MapEnemy> {
        let mut enemies = Vec::new();
        for &home in rooms.iter().skip(1) {
            let count = 1 + self.rng.below(2 + self.level.min(6) / 3);
            for _ in 0..count {
                let kind = match self.rng.below(100) {
                    0..55 => EnemyKind::Grunt,
                    55..80 => EnemyKind::Brute,
                    _ => EnemyKind::Sniper,
                };
                let position = self.point_in(home);
                enemies.push(MapEnemy {
                    kind,
                    position,
                    home,
                });
            }
        }
        enemies
    }

    /// `min(level, 3)` mines, never in the first two rooms.
    fn mines(&mut self, rooms: &[RoomRect]) -> Vec<MapPoint> {
        let candidates = u32::try_from(rooms.len().saturating_sub(2)).unwrap_or(0);
        let mut mines = Vec::new();
        for _ in 0..self.level.min(3) {
            let k = 2 + usize::try_from(self.rng.below(candidates)).unwrap_or(0);
            if let Some(&room) = rooms.get(k) {
                mines.push(self.point_in(room));
            }
        }
        mines
    }

    /// Health and bullets in about half the rooms, plus `maxPlayers / 2`
    /// extra bullet pickups.
    fn pickups(&mut self, rooms: &[RoomRect]) -> Vec<MapPickup> {
        let mut pickups = Vec::new();
        for &room in rooms.iter().skip(1) {
            if self.rng.below(100) < 45 {
                let position = self.point_in(room);
                let (kind, amount) = if self.rng.below(3) == 0 {
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
        let later_rooms = u32::try_from(rooms.len().saturating_sub(1)).unwrap_or(0);
        for _ in 0..self.max_players / 2 {
            let k = 1 + usize::try_from(self.rng.below(later_rooms)).unwrap_or(0);
            if let Some(&room) = rooms.get(k) {
                let position = self.point_in(room);
                pickups.push(MapPickup {
                    position,
                    kind: LootKind::Bullets,
                    amount: 20,
                });
            }
        }
        pickups
    }

    fn build(mut self) -> GameMap {
        let cells = self.chain_cells();
        let rooms: Vec<RoomRect> = cells
            .iter()
            .map(|&(c, r)| self.room_in_cell(c, r))
            .collect();
        let mut links = vec![TilePos { x: 0, y: 0 }];
        for (pair, cell_pair) in rooms.windows(2).zip(cells.windows(2)) {
            if let ([a, b], [ca, cb]) = (pair, cell_pair) {
                links.push(self.corridor(*a, *ca, *b, *cb));
            }
        }
        let mut pickups = self.secrets(&rooms, &cells);
        let (doors, keys) = self.doors_and_keys(&rooms, &links);
        let first = rooms.first().copied().unwrap_or(RoomRect {
            x: 1,
            y: 1,
            w: 1,
            h: 1,
        });
        let last = rooms.last().copied().unwrap_or(first);
        let spawns = self.spawns(first);
        let exit = TilePos {
            x: last.x + last.w / 2,
            y: last.y + last.h / 2,
        };
        self.set(exit.x, exit.y, Tile::Exit);
        let enemies = self.enemies(&rooms);
        let mines = self.mines(&rooms);
        pickups.extend(self.pickups(&rooms));
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
