//! The one shared PRNG stream of the raycaster: mulberry32, the spec's
//! generator, which lives in `game-api` so that other games and the
//! simulated network draw from the same code.

pub use game_api::rng::Mulberry32;
