//! Breadth-first search over the tile grid, shared by the bot (where to
//! walk next) and the level checks (what is reachable).

use std::collections::VecDeque;

use crate::wire::map::Tile;

use crate::grid::Grid;

/// A tile coordinate as the search sees it.
pub type Cell = (i64, i64);

/// Neighbour order is fixed (east, west, south, north) so paths are deterministic.
const STEPS: [Cell; 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];

fn index(grid: &Grid, (x, y): Cell) -> Option<usize> {
    if x < 0 || y < 0 || x >= i64::from(grid.width) || y >= i64::from(grid.height) {
        return None;
    }
    usize::try_from(y * i64::from(grid.width) + x).ok()
}

fn cell_of(grid: &Grid, i: usize) -> Cell {
    let w = usize::try_from(grid.width).unwrap_or(1).max(1);
    ((i % w) as i64, (i / w) as i64)
}

/// Every cell reachable from `start` through tiles `passable` accepts
/// (the start itself counts even if it is not passable).
pub fn reachable(grid: &Grid, start: Cell, passable: impl Fn(Tile) -> bool) -> Vec<bool> {
    let mut seen = vec![false; grid.tiles.len()];
    let Some(s) = index(grid, start) else {
        return seen;
    };
    let mut queue = VecDeque::from([s]);
    if let Some(f) = seen.get_mut(s) {
        *f = true;
    }
    while let Some(i) = queue.pop_front() {
        let (x, y) = cell_of(grid, i);
        for (dx, dy) in STEPS {
            let n = (x + dx, y + dy);
            let Some(j) = index(grid, n) else { continue };
            if seen.get(j).copied().unwrap_or(true) || !passable(grid.tile(n.0, n.1)) {
                continue;
            }
            if let Some(f) = seen.get_mut(j) {
                *f = true;
            }
            queue.push_back(j);
        }
    }
    seen
}

/// Whether `cell` is marked in a [`reachable`] result.
pub fn contains(grid: &Grid, seen: &[bool], cell: Cell) -> bool {
    index(grid, cell)
        .and_then(|i| seen.get(i).copied())
        .unwrap_or(false)
}

/// The shortest path from `start` to the nearest cell `is_goal` accepts,
/// through `passable` tiles; the first element is the step after `start`
/// (empty when `start` is a goal). `None` when no goal is reachable.
pub fn path_to(
    grid: &Grid,
    start: Cell,
    passable: impl Fn(Tile) -> bool,
    is_goal: impl Fn(Cell) -> bool,
) -> Option<Vec<Cell>> {
    let s = index(grid, start)?;
    if is_goal(start) {
        return Some(Vec::new());
    }
    let mut prev = vec![usize::MAX; grid.tiles.len()];
    *prev.get_mut(s)? = s;
    let mut queue = VecDeque::from([s]);
    while let Some(i) = queue.pop_front() {
        let (x, y) = cell_of(grid, i);
        for (dx, dy) in STEPS {
            let n = (x + dx, y + dy);
            let Some(j) = index(grid, n) else { continue };
            if prev.get(j).copied() != Some(usize::MAX) || !passable(grid.tile(n.0, n.1)) {
                continue;
            }
            *prev.get_mut(j)? = i;
            if is_goal(n) {
                let mut path = vec![n];
                let mut k = i;
                while k != s {
                    path.push(cell_of(grid, k));
                    k = *prev.get(k)?;
                }
                path.reverse();
                return Some(path);
            }
            queue.push_back(j);
        }
    }
    None
}
