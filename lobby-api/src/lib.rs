//! The lobby and signaling HTTP API of campfire, as the lobby server, the
//! daemon's lobby client, the load tool and the browser's lobby client
//! speak it: everything the server needs of the wire and nothing of the
//! peer protocol or the game. Serde only: no I/O, no async runtime (the
//! `openapi` feature adds `utoipa` schemas for the server's docs).
//!
//! # Layout
//!
//! - [`api`]: request and response bodies of the HTTP API, lobby entries,
//!   lobby events, the error body and its codes.
//! - [`code`]: session codes (alphabet without look-alikes, parsing).
//! - [`lobby_order`]: the lobby order and the position text that names a
//!   place in it (entries' `position`, pages' `nextCursor`).
//! - [`name`]: display-name sanitizing (control characters stripped, length capped).
//! - [`sdp`]: the cheap plausibility check for SDP offers and answers.
//! - [`join`]: how a joiner takes a round (waits, pauses, lost rounds).
//! - [`joining`]: joining by code as a state machine with no I/O, which
//!   the daemon and the browser (through wasm) both drive.
//! - [`BUILD_VERSION`]: the build identifier of the version handshake and the lobby.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod api;
pub mod code;
pub mod join;
pub mod joining;
pub mod lobby_order;
pub mod name;
pub mod sdp;

/// The build identifier: peers exchange it in the version handshake, the
/// lobby lists it per session and the lobby page compares it with its own.
/// Every crate of the workspace shares one version, so the lobby-server and
/// host-daemon binaries of one build always agree.
pub const BUILD_VERSION: &str = concat!("campfire-", env!("CARGO_PKG_VERSION"));
