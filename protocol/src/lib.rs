//! The peer protocol that hosts and guests speak over WebRTC data channels,
//! generic over the game it carries (a [`game_api::GameWire`]: the
//! raycaster's wire types live beside its engine, in `engine::wire`).
//! Serde only: no I/O, no async runtime, so any Rust client can use it.
//!
//! The lobby and signaling HTTP API lives in the `lobby-api` crate (all the
//! lobby server depends on); its modules are re-exported here so that peers
//! name one crate for both.
//!
//! # Layout
//!
//! - [`peer`]: peer protocol messages on the `input` and `reconciliation` channels.
//! - [`chunk`]: chunking and validated reassembly of large peer messages.
//! - [`delta`]: snapshots in a binary form, deflated against an earlier one.
//! - [`tick`]: the netcode tick constants shared by every peer.
//! - [`wire`]: peer messages as text, JSON or the compact form.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod chunk;
pub mod delta;
pub mod peer;
pub mod tick;
pub mod wire;

pub use lobby_api::{BUILD_VERSION, api, code, join, joining, lobby_order, name, sdp};
