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
//!
//! # Modules
//!
//! - `rooms`: the room chain (cells, rooms, corridors).
//! - `secrets`: secret rooms behind room walls.
//! - `placement`: spawns, doors and keys, enemies, mines, pickups.
//! - here: [`generate`], the builder's grid and the fallback level.

mod placement;
mod rooms;
mod secrets;

use crate::wire::map::{GameMap, MapPoint, RoomRect, Tile, TilePos};

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
