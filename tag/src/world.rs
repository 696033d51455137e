//! The arena and its rules: [`TagWorld`]. Positions, moves, reach and
//! scores are integers; spawns draw from mulberry32 (exact IEEE
//! arithmetic), so every peer, native or WebAssembly, computes the same
//! world. Its [`game_api::Game`] implementation is [`crate::game`].

use std::collections::{BTreeMap, BTreeSet};

use game_api::PlayerId;
use game_api::rng::Mulberry32;

use crate::wire::{Arena, Runner, Stick};

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

/// Most runners in one round, and most departed ones kept (a bound on what
/// a snapshot or a saved state may carry).
pub const MAX_RUNNERS: usize = 64;

/// Why tag refused a round, a snapshot or a saved state.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TagError {
    /// The roster is empty, unsorted, repeats a player or is too large.
    #[error("a round needs a sorted roster of 1 to {MAX_RUNNERS} distinct players")]
    BadRoster,
    /// The arena size is out of range.
    #[error("the arena must be {min} to {max} tiles, not {0}", min = ARENA_SIZES.start(), max = ARENA_SIZES.end())]
    BadArena(u16),
    /// A round of no ticks.
    #[error("a round must last at least one tick")]
    NoRound,
    /// A snapshot is not of this round's current tick or roster.
    #[error(
        "snapshot of tick {snapshot} with {players} runners, world at tick {world} with {runners}"
    )]
    SnapshotMismatch {
        /// The snapshot's tick.
        snapshot: u64,
        /// Its runners.
        players: usize,
        /// The world's tick.
        world: u64,
        /// The world's runners.
        runners: usize,
    },
    /// A snapshot or saved state holds an arena no round can reach.
    #[error("not an arena of this round: {0}")]
    Invalid(String),
    /// A saved state could not be read or written.
    #[error("saved state: {0}")]
    State(String),
}

/// One round of tag.
#[derive(Clone, Debug)]
pub struct TagWorld {
    pub(crate) arena: Arena,
    pub(crate) side: i32,
    pub(crate) pillars: BTreeSet<(i32, i32)>,
    pub(crate) round_seed: u32,
    pub(crate) round_ticks: u64,
    /// Tags each runner made in the rounds before.
    pub(crate) carried: BTreeMap<PlayerId, u32>,
    /// Tags of players removed this round.
    pub(crate) departed: BTreeMap<PlayerId, u32>,
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
    pub(crate) fn open(&self, x: i32, y: i32) -> bool {
        (0..self.side).contains(&x)
            && (0..self.side).contains(&y)
            && !self.pillars.contains(&(x / UNIT, y / UNIT))
    }

    /// A free tile's centre for the `n`th spawn, drawn from the round seed.
    pub(crate) fn spawn(&self, n: u32) -> (i32, i32) {
        let tiles = (self.side / UNIT).unsigned_abs();
        let mut rng = Mulberry32::new(self.round_seed ^ n.wrapping_mul(0x9E37_79B9));
        for _ in 0..256 {
            let tx = rng.below(tiles) as i32;
            let ty = rng.below(tiles) as i32;
            let (x, y) = (tx * UNIT + UNIT / 2, ty * UNIT + UNIT / 2);
            let taken = self.arena.runners.values().any(|r| (r.x, r.y) == (x, y));
            if self.open(x, y) && !taken {
                return (x, y);
            }
        }
        (UNIT / 2, UNIT / 2)
    }

    /// Moves one runner by its stick, axis by axis, stopping at walls and
    /// pillars.
    pub(crate) fn step(&mut self, id: &PlayerId, stick: Stick) {
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

    /// "It" tags the first runner in reach (in roster order), once the
    /// cooldown is over.
    pub(crate) fn tag(&mut self) {
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
                r.tags = r.tags.saturating_add(1);
            }
            self.arena.it = Some(caught);
            self.arena.cooldown = COOLDOWN_TICKS;
        }
    }

    /// Whether `arena` (with `departed`) is one a round of this level can
    /// reach: bounded, "it" one of the runners while there are any, every
    /// runner on open ground, nobody both running and departed.
    pub(crate) fn check(
        &self,
        arena: &Arena,
        departed: &BTreeMap<PlayerId, u32>,
    ) -> Result<(), TagError> {
        let invalid = |why: &str| Err(TagError::Invalid(why.to_owned()));
        if arena.runners.len() > MAX_RUNNERS || departed.len() > MAX_RUNNERS {
            return invalid("too many runners");
        }
        let it_runs = arena.it.as_ref().map(|it| arena.runners.contains_key(it));
        if it_runs != (!arena.runners.is_empty()).then_some(true) {
            return invalid("\"it\" must be one of the runners while there are any");
        }
        if arena.cooldown > COOLDOWN_TICKS {
            return invalid("a cooldown longer than a tag's");
        }
        if !arena.runners.values().all(|r| self.open(r.x, r.y)) {
            return invalid("a runner off open ground");
        }
        if departed.keys().any(|id| arena.runners.contains_key(id)) {
            return invalid("a runner who also departed");
        }
        Ok(())
    }

    /// Every runner's tags this round plus the rounds before.
    pub(crate) fn totals(&self) -> BTreeMap<PlayerId, u32> {
        self.arena
            .runners
            .iter()
            .map(|(id, r)| {
                let before = self.carried.get(id).copied().unwrap_or(0);
                (id.clone(), before.saturating_add(r.tags))
            })
            .collect()
    }

    /// Adds a runner at the current tick (a late joiner); one who departed
    /// this round gets its tags back.
    pub(crate) fn join(&mut self, player: &PlayerId) {
        if self.arena.runners.contains_key(player) || self.arena.runners.len() >= MAX_RUNNERS {
            return;
        }
        let n = (self.arena.runners.len() as u32).wrapping_add(self.arena.tick as u32);
        let (x, y) = self.spawn(n);
        let tags = self.departed.remove(player).unwrap_or(0);
        self.arena
            .runners
            .insert(player.clone(), Runner { x, y, tags });
        if self.arena.it.is_none() {
            self.arena.it = Some(player.clone());
        }
    }

    /// Removes runners at the start of a tick; "it" passes to the first
    /// runner left when it was one of them.
    pub(crate) fn remove(&mut self, players: &[PlayerId]) {
        for id in players {
            if let Some(r) = self.arena.runners.remove(id) {
                self.departed.insert(id.clone(), r.tags);
            }
        }
        let it_gone = self
            .arena
            .it
            .as_ref()
            .is_none_or(|it| !self.arena.runners.contains_key(it));
        if it_gone {
            self.arena.it = self.arena.runners.keys().next().cloned();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bot::Chaser;
    use crate::wire::{Pillars, RoundHead, TagSettings};
    use game_api::{Bot, Game, LevelSetup};

    fn round(players: &[&str], pillars: Vec<[u16; 2]>) -> TagWorld {
        let carried = players.iter().map(|p| (PlayerId::new(*p), 2)).collect();
        TagWorld::new_level(LevelSetup {
            head: RoundHead {
                round_seed: 3,
                round_ticks: 50,
            },
            body: Pillars(pillars),
            settings: TagSettings::default(),
            roster: players.iter().map(|p| PlayerId::new(*p)).collect(),
            player_count: players.len() as u32,
            carryovers: carried,
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
        let mut w = round(&["a", "b"], vec![]);
        let before = (w.world_hash(), w.save_exact().expect("saves"));
        let mut wrong = w.arena.clone();
        wrong.tick = 9;
        assert!(matches!(
            w.apply_snapshot(&wrong),
            Err(TagError::SnapshotMismatch { .. })
        ));
        let mut off = w.arena.clone();
        off.runners.values_mut().for_each(|r| r.x = -5);
        assert!(matches!(w.apply_snapshot(&off), Err(TagError::Invalid(_))));
        let mut nobody_it = w.arena.clone();
        nobody_it.it = None;
        assert!(matches!(
            w.apply_snapshot(&nobody_it),
            Err(TagError::Invalid(_))
        ));
        let mut long_cooldown = w.arena.clone();
        long_cooldown.cooldown = COOLDOWN_TICKS + 1;
        assert!(matches!(
            w.apply_snapshot(&long_cooldown),
            Err(TagError::Invalid(_))
        ));
        assert!(matches!(w.load_exact(b"junk"), Err(TagError::State(_))));
        let mut crowd = w.arena.clone();
        for i in 0..=MAX_RUNNERS {
            crowd.runners.insert(
                PlayerId::new(format!("p{i:03}")),
                Runner {
                    x: 8,
                    y: 8,
                    tags: 0,
                },
            );
        }
        let crowd = serde_json::to_vec(&(
            &crowd,
            BTreeMap::<PlayerId, u32>::new(),
            BTreeMap::<PlayerId, u32>::new(),
        ))
        .expect("encodes");
        assert!(matches!(w.load_exact(&crowd), Err(TagError::Invalid(_))));
        assert_eq!((w.world_hash(), w.save_exact().expect("saves")), before);
        let setup = |tiles, round_ticks| LevelSetup {
            head: RoundHead {
                round_seed: 1,
                round_ticks,
            },
            body: Pillars::default(),
            settings: TagSettings { arena_tiles: tiles },
            roster: vec![PlayerId::new("a")],
            player_count: 1,
            carryovers: BTreeMap::new(),
            input_delays: BTreeMap::new(),
        };
        assert_eq!(
            TagWorld::new_level(setup(2, 5)).err(),
            Some(TagError::BadArena(2))
        );
        assert_eq!(
            TagWorld::new_level(setup(20, 0)).err(),
            Some(TagError::NoRound)
        );
    }

    #[test]
    fn tallies_saturate_and_a_returning_runner_gets_its_tags_back() {
        let mut w = round(&["a", "b"], vec![]);
        w.arena
            .runners
            .get_mut(&PlayerId::new("a"))
            .expect("a")
            .tags = u32::MAX;
        w.carried.insert(PlayerId::new("a"), 5);
        assert_eq!(w.carryovers()[&PlayerId::new("a")], u32::MAX);
        w.scramble(Some(&PlayerId::new("a"))).expect("scrambles");
        w.arena
            .runners
            .get_mut(&PlayerId::new("b"))
            .expect("b")
            .tags = 3;
        w.advance(&BTreeMap::new(), &[PlayerId::new("b")]);
        assert_eq!(
            w.scores()[&PlayerId::new("b")].kill_score,
            3,
            "the leaver's tags stay"
        );
        w.add_player(&PlayerId::new("b"), 3);
        assert_eq!(
            w.arena.runners[&PlayerId::new("b")].tags,
            3,
            "and come back with it"
        );
        assert_eq!(w.scores()[&PlayerId::new("b")].kill_score, 3);
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
