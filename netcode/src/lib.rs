//! campfire's netcode: the peer protocol's host and guest sessions (the
//! netcode spec) as pure state machines over any [`game_api::Game`]: the
//! sessions never look inside the game's inputs, snapshots or levels, and
//! name no game (the raycaster is only the game of this crate's tests).
//!
//! Nothing here does I/O, reads a clock, spawns a thread or needs an async
//! runtime, so the very same sessions run in `host-daemon` (tokio and
//! WebRTC), in a browser (WebAssembly) and in tests (a virtual clock). Time
//! enters as a [`std::time::Duration`] since an origin the caller chooses;
//! what a session wants done comes back as values: messages per peer,
//! events to log or count, the time it next needs a poll.
//!
//! # Layout
//!
//! - [`link`]: what a session hears from a peer connection.
//! - [`netgraph`]: what the netgraph overlay shows: messages and bytes each
//!   way, snapshots, held inputs, corrections.
//! - [`host`]: [`host::HostSession`], one module per job (admission, setup,
//!   ticks, audit, transition, end table, late join, rejoin, spectators,
//!   the waiting room, recording, the session report, join slots).
//! - [`guest`]: [`guest::GuestSession`], one handler per message kind (the
//!   handshake, bundles, snapshots, transitions), its tick clock, and the
//!   authority role in relay sessions.
//! - [`delay`]: input delays fitted to each link (re-exported from
//!   `lockstep`, which the relay shares).
//! - [`Features`](protocol::peer::Features): the hello features a connection took up.
//! - [`predict`]: the predicted view, the local player's pending inputs run
//!   ahead of the confirmed state.
//! - [`replay`]: replay files, written from a host's records and
//!   re-simulated to the recorded world hash.
//! - [`rtt`]: round-trip times from the unreliable channel's probes
//!   (re-exported from `lockstep`).
//! - [`stats`]: counters as plain values.
//! - [`sim`]: a host and guests over a simulated network on a virtual clock;
//!   its impairment model ([`sim::Impairment`]) is the daemon's simnet's too.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod guest;
pub mod host;
pub mod link;
pub mod netgraph;
pub mod predict;
pub mod replay;
pub mod sim;
pub mod stats;

/// Input delays fitted to each link: the rule lives in `lockstep`, which
/// the relay shares.
pub use lockstep::delay;
/// Round-trip times from the unreliable channel's probes (in `lockstep`,
/// shared with the relay).
pub use lockstep::rtt;
