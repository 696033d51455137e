//! Set-up shared by netcode's test binaries. Each binary declares
//! `mod support;` and uses the part it needs, so what it leaves is dead
//! code there (allowed below).
//!
//! # Layout
//!
//! - [`scenario`]: hosts, guests, links and network events for whole
//!   sessions over the simulated network, and the runs.
//! - [`checks`]: what a finished run shows: guests in lockstep with the
//!   host, how a guest ended, who it played.
//! - [`guest_by_hand`]: a guest session fed the host's messages by hand.
//! - [`host_by_hand`]: a host session fed guests' hellos by hand.
#![allow(dead_code)]

pub mod checks;
pub mod guest_by_hand;
pub mod host_by_hand;
pub mod scenario;

use engine::RaycasterEngine;
use engine::wire::Raycaster;

/// A finished run of the raycaster over the simulated network.
pub type Outcome = netcode::sim::Outcome<RaycasterEngine>;
/// A host session of the raycaster.
pub type HostSession = netcode::host::HostSession<RaycasterEngine>;
/// A guest session of the raycaster.
pub type GuestSession = netcode::guest::GuestSession<RaycasterEngine>;
/// A raycaster host's configuration.
pub type HostConfig = netcode::host::HostConfig<RaycasterEngine>;
/// What a raycaster host asks its driver to send.
pub type HostOutput = netcode::host::HostOutput<Raycaster>;
/// What a raycaster host reports.
pub type HostEvent = netcode::host::HostEvent<Raycaster>;
