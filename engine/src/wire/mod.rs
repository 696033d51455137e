//! The raycaster's wire: what its peers send each other inside campfire's
//! peer envelope (`protocol::peer`, generic over a [`game_api::GameWire`]),
//! and the envelope's messages named for the raycaster.
//!
//! # Layout
//!
//! - [`input`]: per-tick player input ([`input::InputSnapshot`]).
//! - [`snapshot`]: the reconciliation snapshot, its parts and the carry-over.
//! - [`map`]: the game map as it travels over the wire and on disk.
//! - [`difficulty`]: the session's difficulty setting.
//! - [`raycaster`]: [`Raycaster`], the raycaster's [`game_api::GameWire`]:
//!   its settings, level head, campaign and compact input.
//! - here: the envelope's messages for the raycaster (`HostMessage` is
//!   `protocol::peer::HostMessage<Raycaster>`, and so on).

pub mod difficulty;
pub mod input;
pub mod map;
pub mod raycaster;
pub mod snapshot;

pub use raycaster::Raycaster;

/// A message from the host to a guest, in the raycaster.
pub type HostMessage = protocol::peer::HostMessage<Raycaster>;
/// A message from a guest to the host, in the raycaster.
pub type GuestMessage = protocol::peer::GuestMessage<Raycaster>;
/// The first message of a session, in the raycaster.
pub type SessionInit = protocol::peer::SessionInit<Raycaster>;
/// A level transition's payload, in the raycaster.
pub type TransitionPayload = protocol::peer::TransitionPayload<Raycaster>;
/// A late joiner's level and exact state, in the raycaster.
pub type JoinPayload = protocol::peer::JoinPayload<Raycaster>;
/// A relay authority's level, in the raycaster.
pub type RelayLevel = protocol::peer::RelayLevel<Raycaster>;
/// One player's input for one tick, in the raycaster.
pub type TickInput = protocol::peer::TickInput<Raycaster>;
/// One player's recent inputs, in the raycaster.
pub type TickInputs = protocol::peer::TickInputs<Raycaster>;
/// Every player's input for one tick, in the raycaster.
pub type TickInputBundle = protocol::peer::TickInputBundle<Raycaster>;
/// The periodic reconciliation snapshot's message, in the raycaster.
pub type ReconciliationSnapshotMessage = protocol::peer::ReconciliationSnapshotMessage<Raycaster>;
