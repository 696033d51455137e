//! campfire's netcode host and guest sessions (the netcode spec), a
//! pluggable transport, an in-process simulated network, and the
//! `host-daemon simulate` scenario runner.
//!
//! # Layout
//!
//! - [`transport`]: the seam: [`transport::PeerSender`], [`transport::PeerReceiver`],
//!   connection-state events.
//! - [`simnet`]: the simulated network (latency, jitter, stall, disconnect,
//!   tamper), seeded and on `tokio::time`.
//! - [`host`]: [`host::HostSession`], the host as a state machine.
//! - [`guest`]: [`guest::GuestSession`], the guest as a state machine.
//! - [`pilot`]: [`pilot::DelayAwareBot`], the engine's bot corrected for the input delay.
//! - [`driver`]: the async drivers that run a session over a transport.
//! - [`simulate`]: one host, bot players and bot guests over the simulated
//!   network, summarized as one JSON line.
//! - [`wire`]: conversions between engine types and their wire forms.
//! - [`webrtc`]: the real transport: WebRTC data channels (`webrtc` 0.21.1),
//!   host offers and guest answers, non-trickle.
//! - [`signaling`]: [`signaling::LobbyClient`], the lobby server's HTTP API
//!   for hosts (sessions, offer rounds, answers) and joiners.
//! - [`hosting`]: `host-daemon host`: always-on bot-hosted sessions
//!   published through the lobby and played over WebRTC.
//! - [`joining`]: `host-daemon join`: a (bot) guest joining through the lobby.
//! - [`campaign`]: `--campaign DIR`, a folder of level maps.
//! - [`metrics`]: the daemon's Prometheus series and `--metrics-listen`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod campaign;
pub mod driver;
pub mod guest;
pub mod host;
pub mod hosting;
pub mod joining;
pub mod metrics;
pub mod pilot;
pub mod signaling;
pub mod simnet;
pub mod simulate;
pub mod transport;
pub mod webrtc;
pub mod wire;

/// The build identifier exchanged in the version handshake.
pub const BUILD_VERSION: &str = concat!("campfire-", env!("CARGO_PKG_VERSION"));
