//! The arena and its rules: [`TagWorld`], tag's [`Game`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use game_api::rng::Mulberry32;
use game_api::{Game, LevelPlan, LevelSetup, LevelSpec, LevelStatus, PlayerId, PlayerScore};

use crate::bot::Chaser;
use crate::plan::Rounds;
use crate::wire::{Arena, Runner, Stick, Tag, TagCampaign};

/// Sixteenths of a tile: positions are integers, so every peer agrees.
pub const UNIT: i32 = 16;

/// How far a runner moves per tick on each axis, in sixteenths.
pub const SPEED: i32 = 3;

/// How close "it" must be to tag, in sixteenths on both axes.
pub const REACH: i32 = 12;

/// Ticks after a tag before the new "it" may tag.
pub const COOLDOWN_TICKS: u32 = 45;

/// The arena sizes a session may choose.
pub const ARENA_SIZES: std::ops::RangeInclusive<u16> = 8..=64;

/// Why tag refused a round, a snapshot or a saved state.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TagError {
    /// The roster is empty, unsorted or repeats a player.
    #[error("a round needs a sorted roster of distinct players")]
    BadRoster,
    /// The arena size is out of range.
    #[error("the arena must be {min} to {max} tiles, not {0}", min = ARENA_SIZES.start(), max = ARENA_SIZES.end())]
    BadArena(u16),
    /// A snapshot is not of this round's current tick or roster.
    #[error("snapshot of tick {snapshot} with {players} players, world at tick {world}")]
    SnapshotMismatch {
        /// The snapshot's tick.
        snapshot: u64,
        /// Its players.
        players: usize,
        /// The world's tick.
        world: u64,
    },
    /// A saved state could not be read or written.
    #[error("saved state: {0}")]
    State(String),
}

/// One round of tag.
#[derive(Clone, Debug)]
pub struct TagWorld {
    arena: Arena,
    side: i32,
    pillars: BTreeSet<(i32, i32)>,
    round_seed: u32,
    round_ticks: u64,
    carried: BTreeMap<PlayerId, u32>,
    /// Tags of players removed this round.
    departed: BTreeMap<PlayerId, u32>,
}

impl TagWorld {
    /// The arena as it stands.
    pub fn arena(&self) -> &Arena {
        &self.arena
    }

    /// The arena's side, in sixteenths.
    pub fn side(&self) -> i32 {
        self.side
    }

    /// Whether the tile under `(x, y)` (sixteenths) is open.
    fn open(&self, x: i32, y: i32) -> bool {
        (0..self.side).contains(&x)
            && (0..self.side).contains(&y)
            && !self.pillars.contains(&(x / UNIT, y / UNIT))
    }

    /// A free tile's centre for the `n`th spawn, drawn from the round seed.
    fn spawn(&self, n: u32) -> (i32, i32) {
        let tiles = self.side / UNIT;
        let mut rng = Mulberry32::new(self.round_seed ^ n.wrapping_mul(0x9E37_79B9));
        for _ in 0..256 {
            let tx = rng.below(tiles as u32) as i32;
            let ty = rng.below(tiles as u32) as i32;
            let (x, y) = (tx * UNIT + UNIT / 2, ty * UNIT + UNIT / 2);
            let taken = self.arena.runners.values().any(|r| (r.x, r.y) == (x, y));
            if self.open(x, y) && !taken {
                return (x, y);
            }
        }
        (UNIT / 2, UNIT / 2)
    }

    fn step(&mut self, id: &PlayerId, stick: Stick) {
        let Some(r) = self.arena.runners.get(id).copied() else {
            return;
        };
        let (nx, ny) = (
            r.x + i32::from(stick.dx) * SPEED,
            r.y + i32::from(stick.dy) * SPEED,
        );
        let x = if self.open(nx, r.y) { nx } else { r.x };
        let y = if self.open(x, ny) { ny } else { r.y };
        if let Some(r) = self.arena.runners.get_mut(id) {
            (r.x, r.y) = (x, y);
        }
    }

    /// "It" tags the first runner in reach (in roster order).
    fn tag(&mut self) {
        if self.arena.cooldown > 0 {
            self.arena.cooldown -= 1;
            return;
        }
        let Some(it) = self.arena.it.clone() else {
            return;
        };
        let Some(chaser) = self.arena.runners.get(&it).copied() else {
            return;
        };
        let caught = self.arena.runners.iter().find(|(id, r)| {
            **id != it && (r.x - chaser.x).abs() <= REACH && (r.y - chaser.y).abs() <= REACH
        });
        if let Some((caught, _)) = caught {
            let caught = caught.clone();
            if let Some(r) = self.arena.runners.get_mut(&it) {
                r.tags += 1;
            }
            self.arena.it = Some(caught);
            self.arena.cooldown = COOLDOWN_TICKS;
        }
    }

    fn hash_into(&self, h: &mut Fnv) {
        h.u64(self.arena.tick);
        h.bytes(
            self.arena
                .it
                .as_ref()
                .map_or("", PlayerId::as_str)
                .as_bytes(),
        );
        h.u64(u64::from(self.arena.cooldown));
        for (id, r) in &self.arena.runners {
            h.bytes(id.as_str().as_bytes());
            h.u64(r.x as u64);
            h.u64(r.y as u64);
            h.u64(u64::from(r.tags));
        }
        for (id, tags) in &self.departed {
            h.bytes(id.as_str().as_bytes());
            h.u64(u64::from(*tags));
        }
    }
}

/// FNV-1a, 64 bits: the world hash.
struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes.iter().chain([&0xFF]) {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01B3);
        }
    }

    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
}

impl Game for TagWorld {
    type Wire = Tag;
    type Bot = Chaser;
    type Error = TagError;

    fn default_plan() -> Arc<dyn LevelPlan<Tag>> {
        Arc::new(Rounds {
            seed: 1,
            rounds: 1,
            round_ticks: crate::plan::ROUND_TICKS,
        })
    }

    fn campaign_level(campaign: &TagCampaign, index: u32, player_count: u32) -> LevelSpec<Tag> {
        Rounds {
            seed: campaign.tag_seed,
            rounds: index + 1,
            round_ticks: campaign.round_ticks,
        }
        .level(index, player_count)
    }

    fn new_level(setup: LevelSetup<Tag>) -> Result<Self, TagError> {
        let tiles = setup.settings.arena_tiles;
        if !ARENA_SIZES.contains(&tiles) {
            return Err(TagError::BadArena(tiles));
        }
        let sorted = setup.roster.windows(2).all(|w| w[0] < w[1]);
        if setup.roster.is_empty() || !sorted {
            return Err(TagError::BadRoster);
        }
        let mut world = Self {
            arena: Arena::default(),
            side: i32::from(tiles) * UNIT,
            pillars: setup
                .body
                .0
                .iter()
                .map(|[x, y]| (i32::from(*x), i32::from(*y)))
                .collect(),
            round_seed: setup.head.round_seed,
            round_ticks: u64::from(setup.head.round_ticks),
            carried: setup.carryovers,
            departed: BTreeMap::new(),
        };
        for (n, id) in setup.roster.iter().enumerate() {
            let (x, y) = world.spawn(n as u32);
            world
                .arena
                .runners
                .insert(id.clone(), Runner { x, y, tags: 0 });
        }
        let first = setup.head.round_seed as usize % setup.roster.len();
        world.arena.it = setup.roster.get(first).cloned();
        world.arena.cooldown = COOLDOWN_TICKS;
        Ok(world)
    }

    fn advance(&mut self, inputs: &BTreeMap<PlayerId, Stick>, roster_remove: &[PlayerId]) {
        for id in roster_remove {
            if let Some(r) = self.arena.runners.remove(id) {
                self.departed.insert(id.clone(), r.tags);
            }
        }
        if self
            .arena
            .it
            .as_ref()
            .is_some_and(|it| !self.arena.runners.contains_key(it))
        {
            self.arena.it = self.arena.runners.keys().next().cloned();
        }
        let ids: Vec<PlayerId> = self.arena.runners.keys().cloned().collect();
        for id in &ids {
            let stick = inputs.get(id).map(<Tag as game_api::GameWire>::sanitize);
            self.step(id, stick.unwrap_or_default());
        }
        self.tag();
        self.arena.tick += 1;
    }

    fn add_player(&mut self, player: &PlayerId, _input_delay: u64) {
        if self.arena.runners.contains_key(player) {
            return;
        }
        let n = self.arena.runners.len() as u32 + self.arena.tick as u32;
        let (x, y) = self.spawn(n);
        self.arena
            .runners
            .insert(player.clone(), Runner { x, y, tags: 0 });
    }

    fn snapshot(&mut self) -> Arena {
        self.arena.clone()
    }

    fn apply_snapshot(&mut self, snapshot: &Arena) -> Result<(), TagError> {
        let same_roster = snapshot.runners.keys().eq(self.arena.runners.keys());
        let it_known = snapshot
            .it
            .as_ref()
            .is_none_or(|it| snapshot.runners.contains_key(it));
        let in_arena = snapshot.runners.values().all(|r| self.open(r.x, r.y));
        if snapshot.tick != self.arena.tick || !same_roster || !it_known || !in_arena {
            return Err(TagError::SnapshotMismatch {
                snapshot: snapshot.tick,
                players: snapshot.runners.len(),
                world: self.arena.tick,
            });
        }
        self.arena = snapshot.clone();
        Ok(())
    }

    fn world_hash(&self) -> u64 {
        let mut h = Fnv(0xCBF2_9CE4_8422_2325);
        self.hash_into(&mut h);
        h.0
    }

    fn save_exact(&self) -> Result<Vec<u8>, TagError> {
        serde_json::to_vec(&(&self.arena, &self.departed))
            .map_err(|e| TagError::State(e.to_string()))
    }

    fn load_exact(&mut self, bytes: &[u8]) -> Result<(), TagError> {
        let (arena, departed): (Arena, BTreeMap<PlayerId, u32>) =
            serde_json::from_slice(bytes).map_err(|e| TagError::State(e.to_string()))?;
        let it_known = arena
            .it
            .as_ref()
            .is_none_or(|it| arena.runners.contains_key(it));
        if !it_known || !arena.runners.values().all(|r| self.open(r.x, r.y)) {
            return Err(TagError::State(
                "a runner off the arena or an unknown it".into(),
            ));
        }
        (self.arena, self.departed) = (arena, departed);
        Ok(())
    }

    fn status(&self) -> LevelStatus {
        if self.arena.runners.is_empty() {
            LevelStatus::TeamEliminated
        } else if self.arena.tick >= self.round_ticks {
            LevelStatus::Complete
        } else {
            LevelStatus::Running
        }
    }

    fn tick(&self) -> u64 {
        self.arena.tick
    }

    fn roster(&self) -> Vec<PlayerId> {
        self.arena.runners.keys().cloned().collect()
    }

    fn carryovers(&self) -> BTreeMap<PlayerId, u32> {
        self.arena
            .runners
            .iter()
            .map(|(id, r)| {
                (
                    id.clone(),
                    self.carried.get(id).copied().unwrap_or(0) + r.tags,
                )
            })
            .collect()
    }

    fn scores(&self) -> BTreeMap<PlayerId, PlayerScore> {
        let tags = self.arena.runners.iter().map(|(id, r)| (id, r.tags));
        tags.chain(self.departed.iter().map(|(id, t)| (id, *t)))
            .map(|(id, tags)| {
                let score = PlayerScore {
                    kill_score: tags,
                    kills: tags,
                };
                (id.clone(), score)
            })
            .collect()
    }

    fn positions(&self) -> BTreeMap<PlayerId, (f64, f64)> {
        let tile = f64::from(UNIT);
        self.arena
            .runners
            .iter()
            .map(|(id, r)| (id.clone(), (f64::from(r.x) / tile, f64::from(r.y) / tile)))
            .collect()
    }

    fn scramble(&mut self, me: Option<&PlayerId>) -> Result<(), String> {
        let Some(r) = me.and_then(|me| self.arena.runners.get_mut(me)) else {
            return Err("no runner of this peer to move".into());
        };
        r.tags += 7;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Pillars, RoundHead, TagSettings};
    use game_api::Bot;

    fn round(players: &[&str], pillars: Vec<[u16; 2]>) -> TagWorld {
        TagWorld::new_level(LevelSetup {
            head: RoundHead {
                round_seed: 3,
                round_ticks: 50,
            },
            body: Pillars(pillars),
            settings: TagSettings::default(),
            roster: players.iter().map(|p| PlayerId::new(*p)).collect(),
            player_count: players.len() as u32,
            carryovers: BTreeMap::new(),
            input_delays: BTreeMap::new(),
        })
        .expect("a round")
    }

    fn place(w: &mut TagWorld, id: &str, x: i32, y: i32) {
        let r = w
            .arena
            .runners
            .get_mut(&PlayerId::new(id))
            .expect("a runner");
        (r.x, r.y) = (x, y);
    }

    #[test]
    fn it_tags_a_runner_in_reach_after_the_cooldown() {
        let mut w = round(&["a", "b"], vec![]);
        w.arena.it = Some(PlayerId::new("a"));
        place(&mut w, "a", 40, 40);
        place(&mut w, "b", 40 + REACH, 40);
        for _ in 0..COOLDOWN_TICKS {
            w.advance(&BTreeMap::new(), &[]);
        }
        assert_eq!(
            w.arena.it,
            Some(PlayerId::new("a")),
            "not during the cooldown"
        );
        w.advance(&BTreeMap::new(), &[]);
        assert_eq!(w.arena.it, Some(PlayerId::new("b")));
        assert_eq!(w.scores()[&PlayerId::new("a")].kill_score, 1);
        assert_eq!(w.arena.cooldown, COOLDOWN_TICKS);
    }

    #[test]
    fn pillars_and_walls_stop_a_runner_and_sticks_are_clamped() {
        let mut w = round(&["a"], vec![[3, 2]]);
        place(&mut w, "a", 2 * UNIT + UNIT - 1, 2 * UNIT + 8);
        let push = BTreeMap::from([(PlayerId::new("a"), Stick { dx: 100, dy: 0 })]);
        w.advance(&push, &[]);
        let a = w.arena.runners[&PlayerId::new("a")];
        assert_eq!(a.x, 2 * UNIT + UNIT - 1, "the pillar at (3, 2) blocks");
        place(&mut w, "a", 1, 1);
        let back = BTreeMap::from([(PlayerId::new("a"), Stick { dx: -1, dy: -1 })]);
        w.advance(&back, &[]);
        assert_eq!(
            (
                w.arena.runners[&PlayerId::new("a")].x,
                w.arena.runners[&PlayerId::new("a")].y
            ),
            (1, 1)
        );
    }

    #[test]
    fn bad_rounds_snapshots_and_states_are_errors_that_change_nothing() {
        let mut setup_roster = round(&["a", "b"], vec![]);
        let before = setup_roster.world_hash();
        let mut wrong = setup_roster.arena.clone();
        wrong.tick = 9;
        assert!(setup_roster.apply_snapshot(&wrong).is_err());
        let mut off = setup_roster.arena.clone();
        off.runners.values_mut().for_each(|r| r.x = -5);
        assert!(setup_roster.apply_snapshot(&off).is_err());
        assert!(setup_roster.load_exact(b"junk").is_err());
        assert_eq!(setup_roster.world_hash(), before);
        let unsorted = TagWorld::new_level(LevelSetup {
            head: RoundHead {
                round_seed: 1,
                round_ticks: 5,
            },
            body: Pillars::default(),
            settings: TagSettings { arena_tiles: 2 },
            roster: vec![PlayerId::new("a")],
            player_count: 1,
            carryovers: BTreeMap::new(),
            input_delays: BTreeMap::new(),
        });
        assert_eq!(unsorted.err(), Some(TagError::BadArena(2)));
    }

    #[test]
    fn a_saved_world_loads_into_a_fresh_round_and_hashes_equal() {
        let mut w = round(&["a", "b", "c"], vec![[4, 4]]);
        let mut bots: Vec<Chaser> = w.roster().into_iter().map(Chaser::new).collect();
        for _ in 0..40 {
            let inputs = bots
                .iter_mut()
                .map(|b| (b.player_id().clone(), b.decide(&w)))
                .collect();
            w.advance(&inputs, &[]);
        }
        w.advance(&BTreeMap::new(), &[PlayerId::new("b")]);
        let mut fresh = round(&["a", "b", "c"], vec![[4, 4]]);
        fresh
            .load_exact(&w.save_exact().expect("saves"))
            .expect("loads");
        assert_eq!(fresh.world_hash(), w.world_hash());
        assert_eq!(fresh.scores(), w.scores(), "the departed runner's tags too");
    }
}
