//! How a joiner takes a round: the policy every campfire client follows
//! (`host-daemon join` and the browser's lobby client; the browser reads it
//! from the generated `web/lib/facts.js`).
//!
//! A host publishes its next round shortly after the previous joiner
//! connected, so a session with room and no open round is looked at again
//! every [`RETRY_PAUSE_MS`]: for up to [`ROUND_WAIT_MS`] while it is listed,
//! and for up to [`UNLISTED_ROUND_WAIT_MS`] when it is not (a private
//! session between rounds looks just like a started one, which hosts
//! unlist). A round another joiner won first is retried with the next one,
//! at most [`MAX_LOST_ROUNDS`] times, within the same wait. A connection
//! that failed is tried again on a fresh round, at most [`CONNECT_RETRIES`]
//! times. [`crate::joining`] is the state machine that follows these rules.

/// How long a joiner keeps trying for a round of a listed session.
pub const ROUND_WAIT_MS: u64 = 30_000;

/// How long a joiner waits for a round of an unlisted session with room.
pub const UNLISTED_ROUND_WAIT_MS: u64 = 5_000;

/// Pause between two looks at the session, or after a lost round.
pub const RETRY_PAUSE_MS: u64 = 250;

/// Most rounds a joiner may lose to others before it gives up.
pub const MAX_LOST_ROUNDS: u32 = 60;

/// Extra tries after a connection to the host that failed (ICE gathering,
/// or channels that did not open in time), each on a fresh round.
pub const CONNECT_RETRIES: u32 = 2;
