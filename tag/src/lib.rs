//! Tag: the second game campfire's netcode carries (issue 47), small on
//! purpose. Runners move on a square arena with pillars; whoever is "it"
//! tags the nearest runner in reach, who becomes it after a short
//! cooldown. A round lasts a fixed number of ticks; a runner's score is
//! the tags it made.
//!
//! It proves the game boundary: the sessions, the relay and the replay
//! drive it through [`game_api::Game`] alone, and nothing in netcode,
//! lockstep or protocol names it. Positions and rules are integers and
//! spawns draw from mulberry32, so every peer (native or WebAssembly)
//! computes the same world.
//!
//! # Layout
//!
//! - [`wire`]: what tag's peers send each other ([`wire::Tag`]).
//! - [`world`]: the arena and its rules ([`world::TagWorld`]).
//! - [`game`]: the arena as the [`game_api::Game`] the sessions drive.
//! - [`bot`]: the computer runner ([`bot::Chaser`]).
//! - [`plan`]: rounds generated from a seed ([`plan::Rounds`]).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bot;
pub mod game;
pub mod plan;
pub mod wire;
pub mod world;

pub use world::{TagError, TagWorld};
