//! Playability checks for a map beyond structural validation: every spawn
//! connects, the exit is reachable from the spawn by collecting keys and
//! opening doors, and each door's key is reachable without passing that door.

use crate::wire::map::{GameMap, Tile};
use thiserror::Error;

use crate::grid::{Grid, cell};
use crate::pathing::{Cell, contains, reachable};

/// Why a structurally valid map cannot be played through.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum PlayabilityError {
    /// The map failed [`GameMap::validate`].
    #[error("invalid map: {0}")]
    Invalid(#[from] crate::wire::map::MapError),
    /// A spawn is cut off from the first spawn.
    #[error("spawn {0} is not connected to spawn 0")]
    SpawnIsolated(usize),
    /// The exit cannot be reached even using every reachable key.
    #[error("the exit cannot be reached from the spawn")]
    ExitUnreachable,
    /// No key for this door can be reached while the door is shut.
    #[error("no key for door {0} is reachable without passing through it")]
    KeyBehindDoor(usize),
}

fn spawn_cell(map: &GameMap, i: usize) -> Option<Cell> {
    map.spawns.get(i).map(|s| (cell(s.x), cell(s.y)))
}

/// Runs every check.
pub fn check_playable(map: &GameMap) -> Result<(), PlayabilityError> {
    map.validate()?;
    let base = Grid::from_map(map);
    let start = spawn_cell(map, 0).ok_or(PlayabilityError::ExitUnreachable)?;
    let open = reachable(&base, start, Tile::is_walkable);
    for i in 1..map.spawns.len() {
        if spawn_cell(map, i).is_none_or(|c| !contains(&base, &open, c)) {
            return Err(PlayabilityError::SpawnIsolated(i));
        }
    }
    if !solve(map, start) {
        return Err(PlayabilityError::ExitUnreachable);
    }
    for d in 0..map.doors.len() {
        // Every other door open, this one shut: one of its keys must be in reach.
        let mut grid = base.clone();
        for (o, other) in map.doors.iter().enumerate() {
            if o != d {
                grid.open_door(i64::from(other.x), i64::from(other.y));
            }
        }
        let seen = reachable(&grid, start, Tile::is_walkable);
        let key_ok = map
            .keys
            .iter()
            .filter(|k| usize::try_from(k.door).ok() == Some(d))
            .any(|k| contains(&grid, &seen, (cell(k.position.x), cell(k.position.y))));
        if !key_ok {
            return Err(PlayabilityError::KeyBehindDoor(d));
        }
    }
    Ok(())
}

/// Plays the key-and-door progression: collect every key in reach, open the
/// lowest-index door next to the reached area while keys remain, repeat.
fn solve(map: &GameMap, start: Cell) -> bool {
    let mut grid = Grid::from_map(map);
    let mut taken = vec![false; map.keys.len()];
    let mut keys = 0usize;
    let exit = (i64::from(map.exit.x), i64::from(map.exit.y));
    loop {
        let seen = reachable(&grid, start, Tile::is_walkable);
        if contains(&grid, &seen, exit) {
            return true;
        }
        for (k, key) in map.keys.iter().enumerate() {
            let here = (cell(key.position.x), cell(key.position.y));
            if let Some(t) = taken.get_mut(k)
                && !*t
                && contains(&grid, &seen, here)
            {
                *t = true;
                keys += 1;
            }
        }
        let next = map.doors.iter().find(|d| {
            let (x, y) = (i64::from(d.x), i64::from(d.y));
            grid.tile(x, y) == Tile::Door
                && [(1, 0), (-1, 0), (0, 1), (0, -1)]
                    .iter()
                    .any(|(dx, dy)| contains(&grid, &seen, (x + dx, y + dy)))
        });
        match next {
            Some(d) if keys > 0 => {
                keys -= 1;
                grid.open_door(i64::from(d.x), i64::from(d.y));
            }
            _ => return false,
        }
    }
}
