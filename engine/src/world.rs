//! The reference engine, [`RaycasterEngine`]: the simulation state and the
//! fixed order its systems run in each tick.
//!
//! # System order (part of the determinism contract)
//!
//! 1. Roster removals (inventory drops as loot, score kept).
//! 2. Players, in roster order: timers, weapon select, turn and walk, `use`,
//!    fire (one stream draw per pellet).
//! 3. Pickups, keys and loot drops, players in roster order, items in index order.
//! 4. Mines, in index order.
//! 5. Enemies, in index order (roam picks, attack rolls, cooldown jitter).
//! 6. Deaths (held keys drop where the player fell).
//! 7. Enemy position history for lag compensation (multiplayer only).
//! 8. Team elimination, then the exit gate and countdown.
//! 9. `levelTime += FIXED_DT`, `tick += 1`.

use crate::wire::raycaster::{LevelSeed, Settings};
use std::collections::{BTreeMap, VecDeque};

use crate::wire::input::InputSnapshot;
use crate::wire::map::{GameMap, Tile};
use crate::wire::snapshot::{LevelOutcome, PlayerScore, TileMutation};
use game_api::PlayerId;
use protocol::tick::{FIXED_DT, INPUT_DELAY_TICKS, MAX_INPUT_DELAY_TICKS};
use serde::{Deserialize, Serialize};

use crate::ai;
use crate::combat;
use crate::enemy::Enemy;
use crate::engine::{EngineError, LevelSetup};
use crate::geom::Vec2;
use crate::grid::{Grid, cell};
use crate::loot::{self, add_ammo, add_health};
use crate::mine::Mine;
use crate::mine_system;
use crate::player::Player;
use crate::rng::Mulberry32;
use crate::rules::{COUNTDOWN_TICKS, PICKUP_RADIUS, USE_REACH};
use crate::state::SimState;
use crate::weapon::{self, AmmoPool, SWAP_TIME};

/// The state plus bookkeeping that is not simulation (the grid mutation log
/// that feeds `gridDelta`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SavedWorld {
    state: SimState,
    grid_log: Vec<TileMutation>,
    snapshot_cursor: usize,
}

/// The reference engine.
#[derive(Clone, Debug)]
pub struct RaycasterEngine {
    map: GameMap,
    /// Each player's input delay: how many ticks its shots rewind targets.
    input_delays: BTreeMap<PlayerId, u64>,
    pub(crate) state: SimState,
    pub(crate) grid_log: Vec<TileMutation>,
    pub(crate) snapshot_cursor: usize,
}

impl RaycasterEngine {
    /// The level's map as loaded (the grid's live tiles are in [`SimState::grid`]).
    pub fn map(&self) -> &GameMap {
        &self.map
    }

    /// Read access to the whole simulation state (bots, tests, renderers).
    pub fn state(&self) -> &SimState {
        &self.state
    }

    pub(crate) fn all_scores(&self) -> BTreeMap<PlayerId, PlayerScore> {
        let mut out = self.state.departed.clone();
        for (id, p) in &self.state.players {
            out.insert(
                id.clone(),
                PlayerScore {
                    kill_score: p.kill_score,
                    kills: p.kills,
                },
            );
        }
        out
    }

    /// A late joiner: see [`game_api::Game::add_player`]. The spawn point cycles
    /// on from the level's first players (everyone ever in the level).
    fn join_player(&mut self, id: &PlayerId) {
        if self.state.players.contains_key(id) || self.map.spawns.is_empty() {
            return;
        }
        let seats = self.state.players.len() + self.state.departed.len();
        let spawn = &self.map.spawns[seats % self.map.spawns.len()];
        let mut player = Player::spawn(Vec2::new(spawn.x, spawn.y), None);
        if let Some(score) = self.state.departed.remove(id) {
            player.kill_score = score.kill_score;
            player.kills = score.kills;
        }
        self.state.players.insert(id.clone(), player);
    }

    fn remove_player(&mut self, id: &PlayerId) {
        let Some(p) = self.state.players.remove(id) else {
            return;
        };
        self.state.loot.extend(loot::disconnect_drops(id, &p));
        self.state.departed.insert(
            id.clone(),
            PlayerScore {
                kill_score: p.kill_score,
                kills: p.kills,
            },
        );
    }

    fn players_act(&mut self, inputs: &BTreeMap<PlayerId, InputSnapshot>) {
        let ids: Vec<PlayerId> = self.state.players.keys().cloned().collect();
        for id in &ids {
            let input = inputs
                .get(id)
                .map_or(InputSnapshot::NEUTRAL, InputSnapshot::sanitized);
            let grid = &self.state.grid;
            let Some(p) = self.state.players.get_mut(id) else {
                continue;
            };
            if !p.alive {
                continue;
            }
            p.fire_cooldown = (p.fire_cooldown - FIXED_DT).max(0.0);
            p.swap = (p.swap - FIXED_DT).max(0.0);
            if let Some(slot) = input.weapon_select
                && slot != p.weapon_index
                && weapon::owns(p.owned, slot)
            {
                p.weapon_index = slot;
                p.swap = SWAP_TIME;
            }
            p.steer(&input, grid, FIXED_DT);
            if input.use_ {
                self.use_in_front(id);
            }
            if input.fire {
                let rewind = self.rewind_ticks(id);
                combat::fire(&mut self.state, &self.map, id, rewind);
            }
        }
    }

    /// Opens a door (spending a key) or reveals a secret in front of a player.
    fn use_in_front(&mut self, id: &PlayerId) {
        let Some(p) = self.state.players.get_mut(id) else {
            return;
        };
        for reach in USE_REACH {
            let probe = p.pos.plus(p.dir.scale(reach));
            let (x, y) = (cell(probe.x), cell(probe.y));
            let changed = match self.state.grid.tile(x, y) {
                Tile::Door if p.keys_held > 0 => {
                    p.keys_held -= 1;
                    self.state.grid.open_door(x, y)
                }
                Tile::Secret => self.state.grid.reveal_secret(x, y),
                Tile::Floor | Tile::Exit => continue,
                _ => Vec::new(),
            };
            self.grid_log.extend(changed);
            return;
        }
    }

    fn collect_items(&mut self) {
        let multiplayer = self.state.multiplayer;
        let SimState {
            players,
            grid,
            pickups_collected,
            keys_collected,
            loot,
            ..
        } = &mut self.state;
        for p in players.values_mut().filter(|p| p.alive) {
            for (i, pk) in self.map.ammo_pickups.iter().enumerate() {
                let at = Vec2::new(pk.position.x, pk.position.y);
                let Some(taken) = pickups_collected.get_mut(i) else {
                    continue;
                };
                if *taken || !grid.walkable_at(at) || p.pos.distance(at) > PICKUP_RADIUS {
                    continue;
                }
                *taken = match AmmoPool::for_loot(pk.kind) {
                    Some(pool) => add_ammo(p, pool, pk.amount),
                    None => add_health(p, pk.amount),
                };
            }
            for (i, k) in self.map.keys.iter().enumerate() {
                let Some(taken) = keys_collected.get_mut(i) else {
                    continue;
                };
                if !*taken && p.pos.distance(Vec2::new(k.position.x, k.position.y)) <= PICKUP_RADIUS
                {
                    *taken = true;
                    p.keys_held = p.keys_held.saturating_add(1);
                }
            }
            loot.retain(|d| {
                let near = p.pos.distance(Vec2::new(d.x, d.y)) <= PICKUP_RADIUS;
                !(near && loot::pick_up(p, d, multiplayer))
            });
        }
    }

    /// Players at or below zero health die and spectate. Their keys drop
    /// where they fell: keys are level-scoped and one exists per door, so a
    /// key vanishing with a dead player could lock the team out.
    fn resolve_deaths(&mut self) {
        for (id, p) in self.state.players.iter_mut() {
            if p.alive && p.health <= 0.0 {
                p.alive = false;
                p.health = 0.0;
                p.swap = 0.0;
                p.fire_cooldown = 0.0;
                self.state.loot.extend(loot::death_drops(id, p));
                p.keys_held = 0;
            }
        }
    }

    /// How many ticks `player`'s shots rewind their targets: its input
    /// delay, at most [`MAX_INPUT_DELAY_TICKS`].
    fn rewind_ticks(&self, player: &PlayerId) -> u64 {
        self.input_delays
            .get(player)
            .copied()
            .unwrap_or(INPUT_DELAY_TICKS)
            .min(MAX_INPUT_DELAY_TICKS)
    }

    fn record_history(&mut self) {
        if !self.state.multiplayer {
            return;
        }
        let frame = self.state.enemies.iter().map(|e| e.pos).collect();
        self.state.enemy_history.push_back(frame);
        // Deep enough for the longest rewind of any player this level.
        let deepest = self
            .state
            .players
            .keys()
            .map(|id| self.rewind_ticks(id))
            .max()
            .unwrap_or(INPUT_DELAY_TICKS);
        let cap = usize::try_from(deepest + 1).unwrap_or(usize::MAX);
        while self.state.enemy_history.len() > cap {
            self.state.enemy_history.pop_front();
        }
    }

    /// Whether a living enemy calls the exit's room home.
    pub fn exit_room_has_alive_enemy(&self) -> bool {
        let (ex, ey) = (
            f64::from(self.map.exit.x) + 0.5,
            f64::from(self.map.exit.y) + 0.5,
        );
        self.map
            .enemies
            .iter()
            .zip(&self.state.enemies)
            .any(|(def, e)| e.alive && def.home.contains(ex, ey))
    }

    fn check_level_end(&mut self) {
        if !self.state.players.values().any(|p| p.alive) {
            self.state.outcome = Some(LevelOutcome::TeamEliminated);
            return;
        }
        if let Some(left) = self.state.countdown.as_mut() {
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.state.outcome = Some(LevelOutcome::Complete);
            }
            return;
        }
        let exit = (i64::from(self.map.exit.x), i64::from(self.map.exit.y));
        let on_exit = self
            .state
            .players
            .values()
            .any(|p| p.alive && (cell(p.pos.x), cell(p.pos.y)) == exit);
        if on_exit && !self.exit_room_has_alive_enemy() {
            self.state.countdown = Some(COUNTDOWN_TICKS);
        }
    }

    /// A level's first tick from its setup (`Game::new_level`).
    pub(crate) fn start(setup: LevelSetup) -> Result<Self, EngineError> {
        let LevelSetup {
            head: LevelSeed {
                gameplay_seed: seed,
            },
            body: map,
            settings: Settings { difficulty },
            roster,
            player_count,
            carryovers,
            input_delays,
        } = setup;
        map.validate()?;
        if roster.is_empty() || roster.windows(2).any(|w| w[0] >= w[1]) {
            return Err(EngineError::BadRoster);
        }
        let player_count = player_count.max(1);
        let players = roster
            .iter()
            .zip(map.spawns.iter().cycle())
            .map(|(id, s)| {
                (
                    id.clone(),
                    Player::spawn(Vec2::new(s.x, s.y), carryovers.get(id)),
                )
            })
            .collect();
        let state = SimState {
            tick: 0,
            level_time: 0.0,
            rng: Mulberry32::new(seed),
            difficulty,
            player_count,
            multiplayer: roster.len() > 1,
            grid: Grid::from_map(&map),
            players,
            departed: BTreeMap::new(),
            enemies: map
                .enemies
                .iter()
                .map(|e| Enemy::spawn(e, difficulty, player_count))
                .collect(),
            enemy_history: VecDeque::new(),
            mines: vec![
                Mine {
                    alive: true,
                    visible: false,
                    fuse: None
                };
                map.mines.len()
            ],
            pickups_collected: vec![false; map.ammo_pickups.len()],
            keys_collected: vec![false; map.keys.len()],
            loot: Vec::new(),
            countdown: None,
            outcome: None,
        };
        Ok(Self {
            map,
            input_delays,
            state,
            grid_log: Vec::new(),
            snapshot_cursor: 0,
        })
    }

    /// One tick: the systems in the order this module's header gives
    /// (`Game::advance`).
    pub(crate) fn step(
        &mut self,
        inputs: &BTreeMap<PlayerId, InputSnapshot>,
        roster_remove: &[PlayerId],
    ) {
        if self.state.outcome.is_some() {
            return;
        }
        for id in roster_remove {
            self.remove_player(id);
        }
        self.players_act(inputs);
        self.collect_items();
        mine_system::update(&mut self.state, &self.map, FIXED_DT);
        ai::update(&mut self.state, &self.map, FIXED_DT);
        self.resolve_deaths();
        self.record_history();
        self.check_level_end();
        self.state.level_time += FIXED_DT;
        self.state.tick += 1;
    }

    /// Adds a player mid-level with its input delay (`Game::add_player`).
    pub(crate) fn admit(&mut self, player: &PlayerId, input_delay: u64) {
        if !self.state.players.contains_key(player) {
            self.input_delays.insert(player.clone(), input_delay);
        }
        self.join_player(player);
    }

    pub(crate) fn saved(&self) -> SavedWorld {
        SavedWorld {
            state: self.state.clone(),
            grid_log: self.grid_log.clone(),
            snapshot_cursor: self.snapshot_cursor,
        }
    }

    /// Replaces the world with `saved` when it fits this level's map;
    /// otherwise changes nothing.
    pub(crate) fn restore(&mut self, saved: SavedWorld) -> Result<(), EngineError> {
        self.check_saved(&saved)?;
        self.state = saved.state;
        self.grid_log = saved.grid_log;
        self.snapshot_cursor = saved.snapshot_cursor;
        Ok(())
    }

    fn check_saved(&self, w: &SavedWorld) -> Result<(), EngineError> {
        let s = &w.state;
        let bad = |what: &str| Err(EngineError::BadState(what.to_string()));
        if s.grid.width != self.map.width
            || s.grid.height != self.map.height
            || s.grid.tiles.len() != self.map.tiles.len()
        {
            return bad("grid dimensions differ from the level's map");
        }
        if s.enemies.len() != self.map.enemies.len() || s.mines.len() != self.map.mines.len() {
            return bad("enemy or mine count differs from the level's map");
        }
        if s.pickups_collected.len() != self.map.ammo_pickups.len()
            || s.keys_collected.len() != self.map.keys.len()
        {
            return bad("pickup or key count differs from the level's map");
        }
        if w.snapshot_cursor > w.grid_log.len() {
            return bad("snapshot cursor past the end of the grid log");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::LevelStatus;
    use crate::level_gen::generate;
    use crate::rules::Difficulty;
    use crate::weapon::PISTOL;
    use game_api::Game;

    fn level(players: u32) -> RaycasterEngine {
        let setup = LevelSetup {
            body: generate(9, 0, players),
            roster: (0..players)
                .map(|i| PlayerId::new(format!("p{i}")))
                .collect(),
            head: LevelSeed { gameplay_seed: 3 },
            settings: Settings {
                difficulty: Difficulty::Normal,
            },
            player_count: players,
            carryovers: BTreeMap::new(),
            input_delays: BTreeMap::new(),
        };
        RaycasterEngine::new_level(setup).expect("valid level")
    }

    fn fire_only(e: &RaycasterEngine) -> BTreeMap<PlayerId, InputSnapshot> {
        e.roster()
            .into_iter()
            .map(|id| {
                let fire = id.as_str() == "p0";
                (
                    id,
                    InputSnapshot {
                        fire,
                        ..InputSnapshot::NEUTRAL
                    },
                )
            })
            .collect()
    }

    /// Enemy 0 was in p0's sights `INPUT_DELAY_TICKS` ago but has since
    /// stepped aside: does p0's shot land?
    fn shot_lands(players: u32) -> bool {
        let mut e = level(players);
        let p0 = e.state.players.values().next().expect("p0").clone();
        assert_eq!(p0.weapon_index, PISTOL);
        let aimed = p0.pos.plus(p0.dir.scale(1.2));
        let aside = p0.pos.plus(Vec2::new(0.0, 1.0));
        let frames = usize::try_from(INPUT_DELAY_TICKS + 1).unwrap_or(4);
        let n = e.state.enemies.len();
        e.state.enemy_history = (0..frames)
            .map(|_| vec![Vec2::new(-50.0, -50.0); n])
            .collect();
        for frame in e.state.enemy_history.iter_mut() {
            frame[0] = aimed;
        }
        e.state.enemies[0].pos = aside;
        let hp = e.state.enemies[0].hp;
        let inputs = fire_only(&e);
        e.advance(&inputs, &[]);
        e.state.enemies[0].hp < hp
    }

    /// Enemy 0 was in p0's sights exactly `ago` ticks before this one (and
    /// nowhere near at any other time); p0's input delay is `delay`.
    fn shot_from_ticks_ago_lands(ago: usize, delay: u64) -> bool {
        let mut e = level(2);
        e.input_delays = BTreeMap::from([(PlayerId::new("p0"), delay)]);
        let p0 = e.state.players.values().next().expect("p0").clone();
        let aimed = p0.pos.plus(p0.dir.scale(1.2));
        let aside = p0.pos.plus(Vec2::new(0.0, 1.0));
        let n = e.state.enemies.len();
        // End-of-tick frames, oldest first; the newest is one tick ago.
        let frames = 8;
        e.state.enemy_history = (0..frames)
            .map(|_| vec![Vec2::new(-50.0, -50.0); n])
            .collect();
        e.state.enemy_history[frames - ago][0] = aimed;
        e.state.enemies[0].pos = aside;
        let hp = e.state.enemies[0].hp;
        let inputs = fire_only(&e);
        e.advance(&inputs, &[]);
        e.state.enemies[0].hp < hp
    }

    #[test]
    fn each_shooter_rewinds_targets_by_its_own_input_delay() {
        assert!(shot_from_ticks_ago_lands(2, 1));
        assert!(!shot_from_ticks_ago_lands(4, 1));
        assert!(shot_from_ticks_ago_lands(6, 5));
        assert!(!shot_from_ticks_ago_lands(2, 5));
    }

    #[test]
    fn multiplayer_hit_tests_rewind_the_target() {
        assert!(shot_lands(2), "multiplayer: the rewound position is hit");
        assert!(!shot_lands(1), "single player: live positions only");
    }

    #[test]
    fn exit_waits_for_a_clear_room_then_counts_down() {
        let mut e = level(1);
        let exit = Vec2::new(f64::from(e.map.exit.x) + 0.5, f64::from(e.map.exit.y) + 0.5);
        let id = PlayerId::new("p0");
        let neutral = BTreeMap::from([(id.clone(), InputSnapshot::NEUTRAL)]);
        e.state.players.get_mut(&id).expect("p0").pos = exit;
        e.state.players.get_mut(&id).expect("p0").health = 1e9;
        assert!(e.exit_room_has_alive_enemy());
        e.advance(&neutral, &[]);
        assert_eq!(
            e.status(),
            LevelStatus::Running,
            "a live enemy in the exit room blocks the exit"
        );
        for en in e.state.enemies.iter_mut() {
            en.alive = false;
        }
        e.advance(&neutral, &[]);
        assert_eq!(
            e.status(),
            LevelStatus::Countdown {
                ticks_left: COUNTDOWN_TICKS
            }
        );
        for _ in 1..COUNTDOWN_TICKS {
            e.advance(&neutral, &[]);
        }
        assert_eq!(e.status(), LevelStatus::Countdown { ticks_left: 1 });
        e.advance(&neutral, &[]);
        assert_eq!(e.status(), LevelStatus::Complete);
    }

    #[test]
    fn using_a_secret_wall_reveals_it_and_records_deltas() {
        let mut e = level(1);
        let grid = &e.state.grid;
        let steps = [(1i64, 0i64), (-1, 0), (0, 1), (0, -1)];
        let found = (0..i64::from(grid.height))
            .flat_map(|y| (0..i64::from(grid.width)).map(move |x| (x, y)))
            .filter(|&(x, y)| grid.tile(x, y) == Tile::Secret)
            .find_map(|(x, y)| {
                steps
                    .iter()
                    .find(|(dx, dy)| grid.tile(x - dx, y - dy) == Tile::Floor)
                    .map(|&d| ((x, y), d))
            });
        let ((x, y), (dx, dy)) = found.expect("level 0 of campaign 9 has a secret room");
        let id = PlayerId::new("p0");
        let p = e.state.players.get_mut(&id).expect("p0");
        p.pos = Vec2::new((x - dx) as f64 + 0.5, (y - dy) as f64 + 0.5);
        p.dir = Vec2::new(dx as f64, dy as f64);
        let version = e.state.grid.version;
        let input = BTreeMap::from([(
            id,
            InputSnapshot {
                use_: true,
                ..InputSnapshot::NEUTRAL
            },
        )]);
        e.advance(&input, &[]);
        assert_eq!(e.state.grid.version, version + 1);
        assert_eq!(e.state.grid.tile(x, y), Tile::Floor);
        let delta = e.snapshot().grid_delta;
        assert!(
            delta.len() >= 7,
            "the whole secret region is revealed: {delta:?}"
        );
        assert!(delta.iter().all(|m| m.value == Tile::Floor));
        assert!(e.snapshot().grid_delta.is_empty(), "a delta is sent once");
    }
}
