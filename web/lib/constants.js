// The netcode constants every peer shares (protocol/src/tick.rs, peer.rs,
// chunk.rs). The host sends the tick constants at setup; a guest whose
// values differ refuses the session rather than desync.

/** Simulation ticks per second. */
export const TICK_RATE_HZ = 30;
/** Seconds simulated by one tick. */
export const FIXED_DT = 1 / 30;
/** Ticks between sampling an input and the tick it applies at. */
export const INPUT_DELAY_TICKS = 3;
/** Ticks between two host reconciliation snapshots. */
export const RECONCILE_INTERVAL_TICKS = 30;
/** Ticks of the exit countdown before a level is complete. */
export const COUNTDOWN_TICKS = 150;
/** How long a lost peer keeps its seat before a synchronized removal. */
export const DISCONNECT_GRACE_MS = 10_000;
/** Position corrections at or above this many tiles snap in rendering too. */
export const SNAP_THRESHOLD_TILES = 0.5;
/** Rendering window over which a small correction decays to zero. */
export const CORRECTION_SMOOTH_MS = 150;
/** Version of the peer protocol; peers with another version refuse each other. */
export const PEER_PROTOCOL_VERSION = 1;
/** Largest chunk payload in bytes (UTF-8). */
export const CHUNK_SIZE_BYTES = 16 * 1024;
/** Largest reassembled payload accepted by default. */
export const MAX_PAYLOAD_BYTES = 8 * 1024 * 1024;
/** Ticks between two world-hash reports (only engines that can hash send them). */
export const HASH_REPORT_INTERVAL_TICKS = 10;
/**
 * The data channels' labels, in the order the host creates them: `input` and
 * `reconciliation` (reliable, ordered), `input-unreliable` (issue 15's round-trip
 * probes and redundant inputs).
 */
export const CHANNELS = /** @type {const} */ (['input', 'reconciliation', 'input-unreliable']);
/** The channels created unordered, with no retransmissions. */
export const UNRELIABLE_CHANNELS = /** @type {const} */ (['input-unreliable']);
/**
 * The SCTP stream id of `input-unreliable`: both sides create it themselves
 * (`negotiated: true`), as they must for its options to hold on both sides.
 */
export const UNRELIABLE_CHANNEL_ID = 8;
