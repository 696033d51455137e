//! Where the map's entities go: spawns, locked doors and their keys,
//! enemies, mines and pickups.

use crate::wire::map::{
    EnemyKind, LootKind, MapEnemy, MapKey, MapPickup, MapPoint, RoomRect, Tile, TilePos,
};

use super::Builder;

impl Builder {
    fn point_in(&mut self, r: RoomRect) -> MapPoint {
        let x = r.x + self.rng.below(r.w);
        let y = r.y + self.rng.below(r.h);
        MapPoint {
            x: f64::from(x) + 0.5,
            y: f64::from(y) + 0.5,
        }
    }

    /// Locked doors on evenly spread links (`links[k]` joins room k-1 to
    /// room k), each door's key in a room between the previous door and it.
    pub(super) fn doors_and_keys(
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
    pub(super) fn spawns(&self, room: RoomRect) -> Vec<MapPoint> {
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
    pub(super) fn enemies(&mut self, rooms: &[RoomRect]) -> Vec<MapEnemy> {
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
    pub(super) fn mines(&mut self, rooms: &[RoomRect]) -> Vec<MapPoint> {
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
    pub(super) fn pickups(&mut self, rooms: &[RoomRect]) -> Vec<MapPickup> {
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
}
