//! Wire types shared by every campfire component: the lobby/signaling HTTP
//! API and the peer protocol that hosts and guests speak over WebRTC data
//! channels. Serde only: no I/O, no async runtime, so any Rust client can use
//! it (the `openapi` feature adds `utoipa` schemas for the server's docs).
//!
//! # Layout
//!
//! - [`api`]: request and response bodies of the HTTP API, lobby entries,
//!   lobby events, the error body and its codes.
//! - [`code`]: session codes (alphabet without look-alikes, parsing).
//! - [`lobby_order`]: the lobby order and the position text that names a
//!   place in it (entries' `position`, pages' `nextCursor`).
//! - [`difficulty`]: the session's difficulty setting.
//! - [`name`]: display-name sanitizing (control characters stripped, length capped).
//! - [`sdp`]: the cheap plausibility check for SDP offers and answers.
//! - [`input`]: per-tick player input (`InputSnapshot`).
//! - [`join`]: how a joiner takes a round (waits, pauses, lost rounds).
//! - [`snapshot`]: the reconciliation snapshot and its parts.
//! - [`map`]: the game map as it travels over the wire and on disk.
//! - [`peer`]: peer protocol messages on the `input` and `reconciliation` channels.
//! - [`chunk`]: chunking and validated reassembly of large peer messages.
//! - [`tick`]: the netcode tick constants shared by every peer.
//! - [`wire`]: peer messages as text, JSON or the compact form.
//! - [`BUILD_VERSION`]: the build identifier of the version handshake and the lobby.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod api;
pub mod chunk;
pub mod code;
pub mod difficulty;
pub mod input;
pub mod join;
pub mod lobby_order;
pub mod map;
pub mod name;
pub mod peer;
pub mod sdp;
pub mod snapshot;
pub mod tick;
pub mod wire;

/// The build identifier: peers exchange it in the version handshake, the
/// lobby lists it per session and the lobby page compares it with its own.
/// Every crate of the workspace shares one version, so the lobby-server and
/// host-daemon binaries of one build always agree.
pub const BUILD_VERSION: &str = concat!("campfire-", env!("CARGO_PKG_VERSION"));
