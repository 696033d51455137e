//! The line between campfire's network and the games it carries (issue
//! 47): what the peer protocol, the host and guest sessions and the relay
//! share with any game, and nothing of one game. Serde only: no I/O, no
//! clock, no game.
//!
//! # Layout
//!
//! - [`player`]: a player's identity within a session ([`PlayerId`]).
//! - [`tick`]: the tick constants every peer shares.
//! - [`hash`]: the world hash peers compare ([`WorldHash`]) and its text.
//! - [`digest`]: how a game computes it, over its state's `Serialize`.
//! - [`wire`]: what a game puts on the wire ([`GameWire`]).
//! - [`game`]: what the sessions drive ([`Game`]) and its [`Bot`]s.
//! - [`level`]: what a level is built from and where it stands.
//! - [`plan`]: which levels a session plays.
//! - [`score`]: what a player scored.
//! - [`rng`]: mulberry32, the spec's deterministic generator.
//! - `toy` (feature `toy`): the smallest game, for the network side's tests.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod digest;
pub mod game;
pub mod hash;
pub mod level;
pub mod plan;
pub mod player;
pub mod rng;
pub mod score;
pub mod tick;
#[cfg(feature = "toy")]
pub mod toy;
pub mod wire;

pub use game::{Bot, Game, IdleBot};
pub use hash::WorldHash;
pub use level::{LevelSetup, LevelStatus};
pub use plan::{LevelPlan, LevelSpec};
pub use player::PlayerId;
pub use score::PlayerScore;
pub use wire::{GameWire, Wire};
