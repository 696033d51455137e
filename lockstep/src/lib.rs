//! campfire's game-agnostic lockstep pieces.
//!
//! Nothing here knows a game: inputs are any `I: Clone + Default` (the
//! default is the neutral input), level payloads and snapshots are opaque
//! bytes, world hashes are `u64`s. The crate depends on no engine, so the
//! relay built from it cannot run a game, only order what the peers send.
//! Like `netcode`, it does no I/O and reads no clock: time comes in as a
//! [`std::time::Duration`] since an origin the caller chooses.
//!
//! # Layout
//!
//! - [`budget`]: what one guest may send, shared with the host session.
//! - [`inputs`]: the input buffer and the held-input rules, shared by the
//!   host session (`netcode`) and the relay; [`runs`]: when a guest on
//!   input runs sends, shared by the guest session and the daemon's swarm.
//! - [`pacing`]: the fixed-rate tick clock, shared likewise.
//! - [`rtt`]: a link's round-trip estimate from probes, and
//!   [`delay`]: the input delay fitted to it; shared likewise.
//! - [`frame`]: one tick's merged inputs and roster events.
//! - [`log`]: the relay's input log, anchored on the latest verified
//!   snapshot and bounded.
//! - [`judge`]: desyncs judged by a majority of hash reports.
//! - [`relay`]: [`relay::Relay`], the relay session itself.
//! - [`rejoin`]: rejoin tokens, shared with the host session.
//! - [`peer`]: [`peer::PeerRelay`], the relay speaking campfire's peer
//!   protocol (to its guests it looks like a host).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod budget;
pub mod delay;
pub mod frame;
pub mod inputs;
pub mod judge;
pub mod log;
pub mod pacing;
pub mod peer;
pub mod rejoin;
pub mod relay;
pub mod rtt;
pub mod runs;
