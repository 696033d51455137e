//! campfire's authoritative game simulation: a pure, deterministic co-op
//! raycaster world, its level generator and its bots.
//!
//! # Layout
//!
//! - [`engine`]: the raycaster's [`LevelSetup`] and [`EngineError`], and [`Engine`], what its own tools need beyond [`Game`] (the interface the sessions drive, from `game-api`).
//! - [`state`]: [`state::SimState`], all simulation state (what the world hash covers).
//! - [`world`]: the reference engine [`RaycasterEngine`] and the per-tick system order.
//! - [`raycaster`]: [`Game`] and [`Engine`] over it (tick, snapshots, transfers, bots).
//! - [`reconcile`]: building and applying `ReconciliationSnapshot`s.
//! - [`player`]: per-player state, camera vectors, movement.
//! - [`enemy`]: enemy archetypes and state; [`ai`]: their per-tick behaviour.
//! - [`combat`]: hitscan fire, lag-compensated hit tests, damage and kills.
//! - [`loot`]: kill drops, disconnect drops, pickup rules.
//! - [`mine`]: a mine's state; [`mine_system`]: mines spotted, armed and detonating each tick.
//! - [`weapon`]: the weapon table and ammo pools.
//! - [`grid`]: the live tile grid, collision, ray casts, doors and secrets.
//! - [`pathing`]: breadth-first search on the grid.
//! - [`rules`]: balance constants and [`DifficultyScaling`] (how [`Difficulty`] scales enemies).
//! - [`rng`]: the mulberry32 stream; [`hash`]: the FNV-1a world hash; [`geom`]: vectors.
//! - [`level_gen`]: the deterministic level generator; [`level_check`]: playability checks;
//!   [`map_io`]: maps to and from JSON.
//! - [`plan`]: the raycaster's level plans (a generated campaign, fixed maps).
//! - [`bot`]: the bot controller; [`pilot`]: the bot the sessions run ([`DelayAwareBot`]); [`campaign`]: an offline all-bot campaign (`botmatch`).
//! - [`sync_test`]: the save/re-simulate/compare harness.
//! - [`wire`]: the raycaster's wire types (input, snapshot, map, difficulty) and its [`wire::Raycaster`] game wire.
//! - [`transfer`]: the exact state transfer (the whole world at a tick, compact), for late joiners, rejoiners and spectators.
//!
//! # Determinism
//!
//! One mulberry32 stream lives in the world state and is the only source of
//! randomness; systems run in the fixed order documented in [`world`]; time
//! advances by the fixed `FIXED_DT`; every collection is a `Vec` or a
//! `BTreeMap` (no hash-map iteration anywhere); and every transcendental
//! function (sine, cosine, arctangent, square root, floor) comes from the
//! pure-Rust `libm` crate, never from the platform's math library, so two
//! builds of this crate agree bit for bit on every platform. A test scans
//! the sources to keep it that way. There is no clock, no I/O and no global
//! state in this crate.
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use engine::wire::raycaster::{LevelSeed, Settings};
//! use engine::{BotController, Difficulty, Game, LevelSetup, LevelStatus, RaycasterEngine};
//! use game_api::PlayerId;
//!
//! let roster = vec![PlayerId::new("alice"), PlayerId::new("bob")];
//! let setup = LevelSetup {
//!     head: LevelSeed { gameplay_seed: 7 },
//!     body: engine::level_gen::generate(42, 0, 2),
//!     settings: Settings { difficulty: Difficulty::Normal },
//!     roster: roster.clone(),
//!     player_count: 2,
//!     carryovers: BTreeMap::new(),
//!     input_delays: BTreeMap::new(),
//! };
//! let mut world = RaycasterEngine::new_level(setup)?;
//! let bots: Vec<_> = roster.into_iter().map(BotController::new).collect();
//! while world.status() != LevelStatus::Complete && world.tick() < 6_000 {
//!     let inputs = bots.iter().map(|b| (b.player_id().clone(), b.decide(&world))).collect();
//!     world.advance(&inputs, &[]);
//! }
//! let snapshot = world.snapshot(); // what a host sends every RECONCILE_INTERVAL_TICKS
//! assert_eq!(snapshot.tick, world.tick());
//! # Ok::<(), engine::EngineError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod ai;
pub mod bot;
pub mod campaign;
pub mod combat;
pub mod enemy;
pub mod engine;
pub mod geom;
pub mod grid;
pub mod hash;
pub mod level_check;
pub mod level_gen;
pub mod loot;
pub mod map_io;
pub mod mine;
pub mod mine_system;
pub mod pathing;
pub mod pilot;
pub mod plan;
pub mod player;
pub mod raycaster;
pub mod reconcile;
pub mod rng;
pub mod rules;
pub mod state;
pub mod sync_test;
pub mod transfer;
pub mod weapon;
pub mod wire;
pub mod world;

pub use bot::BotController;
pub use engine::{Bot, Engine, EngineError, IdleBot, LevelSetup, LevelStatus};
pub use game_api::Game;
pub use pilot::DelayAwareBot;
pub use rules::{Difficulty, DifficultyScaling};
pub use world::RaycasterEngine;
