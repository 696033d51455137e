//! campfire's host daemon: `netcode`'s host and guest sessions driven over
//! real transports, always-on bot hosts published through the lobby, bot
//! guests, and the `simulate` command.
//!
//! # Layout
//!
//! - [`commands`]: one module per command (`host`, `relay`, `join`, `swarm`,
//!   `simulate`, `replay`), each owning its clap flags and its `run`;
//!   `main.rs` only dispatches.
//! - [`transport`]: the seam ([`transport::PeerSender`],
//!   [`transport::PeerReceiver`]) and its two implementations, real WebRTC
//!   data channels ([`transport::webrtc`]) and an in-process network on
//!   tokio's clock ([`transport::simnet`]).
//! - [`driver`]: the async loops that run a session over a transport:
//!   time, bounded queues, logs and metrics for the session's events.
//! - [`lobby_client`]: [`lobby_client::LobbyClient`], the lobby server's HTTP
//!   API for publishing sessions (entries, offer rounds, answers) and for
//!   joiners.
//! - [`serving`]: always-on sessions served through the lobby, host
//!   sessions (`host`) or relay sessions (`relay`): their lobby entries,
//!   offer rounds and joins; [`stdout`]: its `session CODE` and
//!   `session-report` lines.
//! - [`relaying`]: the relay session (`relay`) that [`serving`] serves
//!   through the same driver, rounds and transports as a host session, no
//!   engine.
//! - [`joining`]: a (bot) guest joining through the lobby (`join`).
//! - [`swarm`]: many light guests in one process, no engine (`swarm`, the
//!   load tool that pushes one daemon to a thousand guests).
//! - [`realtime`]: `netcode::sim` scenarios played through the drivers in
//!   real time (`simulate --realtime`, the capacity benchmark).
//! - [`game`]: `--game`, the games the daemon can serve (the raycaster,
//!   tag) and how a session's rules become another game's.
//! - [`campaign`]: `--campaign DIR`, a folder of level maps.
//! - [`replay_files`]: `host --record DIR`, one replay file per level;
//!   `replay FILE` re-simulates one.
//! - [`metrics`]: the daemon's Prometheus series and `--metrics-listen`.
//! - [`control`]: `--control-listen`, the testers' control API (sessions
//!   live, open one now, end one, reports and replays) and its dashboard.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod campaign;
pub mod commands;
pub mod control;
pub mod driver;
pub mod game;
pub mod joining;
pub mod lobby_client;
pub mod metrics;
pub mod realtime;
pub mod relaying;
pub mod replay_files;
pub mod serving;
pub mod stdout;
pub mod swarm;
pub mod transport;
