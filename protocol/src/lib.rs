//! The peer protocol that hosts and guests speak over WebRTC data channels,
//! and (for now) the raycaster's wire types it carries. Serde only: no I/O,
//! no async runtime, so any Rust client can use it.
//!
//! The lobby and signaling HTTP API lives in the `lobby-api` crate (all the
//! lobby server depends on); its modules are re-exported here so that peers
//! name one crate for both.
//!
//! # Layout
//!
//! - [`difficulty`]: the session's difficulty setting.
//! - [`input`]: per-tick player input (`InputSnapshot`).
//! - [`snapshot`]: the reconciliation snapshot and its parts.
//! - [`map`]: the game map as it travels over the wire and on disk.
//! - [`peer`]: peer protocol messages on the `input` and `reconciliation` channels.
//! - [`raycaster`]: the raycaster's wire type ([`raycaster::Raycaster`]),
//!   the game the envelope carries unless told otherwise.
//! - [`chunk`]: chunking and validated reassembly of large peer messages.
//! - [`tick`]: the netcode tick constants shared by every peer.
//! - [`wire`]: peer messages as text, JSON or the compact form.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod chunk;
pub mod difficulty;
pub mod input;
pub mod map;
pub mod peer;
pub mod raycaster;
pub mod snapshot;
pub mod tick;
pub mod wire;

pub use lobby_api::{BUILD_VERSION, api, code, join, lobby_order, name, sdp};
