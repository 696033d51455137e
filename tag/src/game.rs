//! [`TagWorld`] as the [`Game`] the sessions drive: building a round,
//! advancing it, its snapshots, hash, exact state and scores.

use std::collections::BTreeMap;
use std::sync::Arc;

use game_api::digest::hash_value;
use game_api::{
    Game, GameWire, LevelPlan, LevelSetup, LevelSpec, LevelStatus, PlayerId, PlayerScore,
};

use crate::bot::Chaser;
use crate::plan::{ROUND_TICKS, Rounds};
use crate::wire::{Arena, Runner, Stick, Tag, TagCampaign};
use crate::world::{ARENA_SIZES, COOLDOWN_TICKS, MAX_RUNNERS, TagError, TagWorld, UNIT};

/// What [`Game::save_exact`] writes: the arena, the departed runners'
/// tags and the tags carried from the rounds before.
type Saved = (Arena, BTreeMap<PlayerId, u32>, BTreeMap<PlayerId, u32>);

impl Game for TagWorld {
    type Wire = Tag;
    type Bot = Chaser;
    type Error = TagError;

    fn default_plan() -> Arc<dyn LevelPlan<Tag>> {
        Arc::new(Rounds {
            seed: 1,
            rounds: 1,
            round_ticks: ROUND_TICKS,
        })
    }

    fn campaign_level(campaign: &TagCampaign, index: u32, player_count: u32) -> LevelSpec<Tag> {
        Rounds {
            seed: campaign.tag_seed,
            rounds: index.saturating_add(1),
            round_ticks: campaign.round_ticks,
        }
        .level(index, player_count)
    }

    fn new_level(setup: LevelSetup<Tag>) -> Result<Self, TagError> {
        let tiles = setup.settings.arena_tiles;
        if !ARENA_SIZES.contains(&tiles) {
            return Err(TagError::BadArena(tiles));
        }
        if setup.head.round_ticks == 0 {
            return Err(TagError::NoRound);
        }
        let sorted = setup.roster.windows(2).all(|w| w[0] < w[1]);
        if setup.roster.is_empty() || setup.roster.len() > MAX_RUNNERS || !sorted {
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
        self.remove(roster_remove);
        let ids: Vec<PlayerId> = self.arena.runners.keys().cloned().collect();
        for id in &ids {
            let stick = inputs.get(id).map(Tag::sanitize).unwrap_or_default();
            self.step(id, stick);
        }
        self.tag();
        self.arena.tick = self.arena.tick.saturating_add(1);
    }

    fn add_player(&mut self, player: &PlayerId, _input_delay: u64) {
        self.join(player);
    }

    fn snapshot(&mut self) -> Arena {
        self.arena.clone()
    }

    fn apply_snapshot(&mut self, snapshot: &Arena) -> Result<(), TagError> {
        let same_roster = snapshot.runners.keys().eq(self.arena.runners.keys());
        if snapshot.tick != self.arena.tick || !same_roster {
            return Err(TagError::SnapshotMismatch {
                snapshot: snapshot.tick,
                players: snapshot.runners.len(),
                world: self.arena.tick,
                runners: self.arena.runners.len(),
            });
        }
        self.check(snapshot, &self.departed)?;
        self.arena = snapshot.clone();
        Ok(())
    }

    fn world_hash(&self) -> u64 {
        hash_value(&(&self.arena, &self.departed, &self.carried))
    }

    fn save_exact(&self) -> Result<Vec<u8>, TagError> {
        serde_json::to_vec(&(&self.arena, &self.departed, &self.carried))
            .map_err(|e| TagError::State(e.to_string()))
    }

    fn load_exact(&mut self, bytes: &[u8]) -> Result<(), TagError> {
        let (arena, departed, carried): Saved =
            serde_json::from_slice(bytes).map_err(|e| TagError::State(e.to_string()))?;
        self.check(&arena, &departed)?;
        if carried.len() > MAX_RUNNERS * 2 {
            return Err(TagError::Invalid("too many carried tallies".into()));
        }
        (self.arena, self.departed, self.carried) = (arena, departed, carried);
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
        self.totals()
    }

    fn scores(&self) -> BTreeMap<PlayerId, PlayerScore> {
        let running = self.arena.runners.iter().map(|(id, r)| (id, r.tags));
        self.departed
            .iter()
            .map(|(id, t)| (id, *t))
            .chain(running)
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
        r.tags = r.tags.saturating_add(7);
        Ok(())
    }
}
