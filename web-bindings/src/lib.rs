//! campfire in the browser: the engine and `netcode`'s sessions compiled to
//! WebAssembly (`web/campfire.wasm`, built by `scripts/build-wasm`), so a
//! player's browser runs exactly the code the daemon runs.
//!
//! # Layout
//!
//! - [`guest`]: [`guest::WebGuest`], the guest session with a plain-data
//!   interface (messages and time in, messages, status and view out).
//! - [`host`]: [`host::WebHost`], the host session (the daemon's host code in
//!   the player's tab) with the same plain-data interface, for a worker.
//! - [`hosting`]: [`hosting::WebHosting`], `netcode`'s hosting machine for
//!   the browser host's offer rounds (the daemon's, on the page's clock).
//! - [`joining`]: [`joining::WebJoining`], joining a session by code: the
//!   daemon's joining machine, driven by the page's lobby client.
//! - [`view`]: the render view of one tick, the contract with `web/lib/render/`.
//! - [`facts`]: the shared protocol constants and the input and name sanitizers.
//! - [`campaign`]: the offline bot campaign for the cross-build determinism test.
//! - [`replay`]: verifying a replay file, as `host-daemon replay` does.
//! - [`replay_viewer`]: watching a replay in the page: the recorded level
//!   re-simulated tick by tick, any player's view, play, pause, speed, seek.
//! - [`abi`]: the raw exports (`cf_*`) over a byte-buffer ABI, read by
//!   `web/lib/wasm.js`; the only module with `unsafe`.
//!
//! Why raw exports and not `wasm-bindgen`: every value that crosses is
//! already JSON or text (peer messages are JSON on the wire), so the glue
//! is a dozen functions; raw exports need no second tool pinned to the
//! crate's version, keep the module reproducible from the workspace alone,
//! and keep the loader a short, readable file (see `docs/decisions.md`).
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
pub mod campaign;
pub mod facts;
pub mod guest;
pub mod host;
pub mod hosting;
pub mod joining;
pub mod replay;
pub mod replay_viewer;
pub mod view;
