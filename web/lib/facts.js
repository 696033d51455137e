// @ts-check
// GENERATED from web-bindings/src/facts.rs; do not edit. The protocol facts
// every peer shares, for the pages (the WebAssembly module answers the same
// list). Regenerate: CAMPFIRE_WRITE_FACTS=1 cargo test -p web-bindings --test facts_module

/** This build's identifier (the lobby's `build`). */
export const BUILD_VERSION = "campfire-0.1.0";

/** Simulation ticks per second. */
export const TICK_RATE_HZ = 30;

/** Seconds simulated by one tick. */
export const FIXED_DT = 0.03333333333333333;

/** Ticks between sampling an input and the tick it applies at. */
export const INPUT_DELAY_TICKS = 3;

/** Ticks between two host reconciliation snapshots. */
export const RECONCILE_INTERVAL_TICKS = 30;

/** Ticks of the exit countdown before a level is complete. */
export const COUNTDOWN_TICKS = 150;

/** How long a lost peer keeps its seat before a synchronized removal. */
export const DISCONNECT_GRACE_MS = 10000;

/** Position corrections at or above this many tiles snap in rendering too. */
export const SNAP_THRESHOLD_TILES = 0.5;

/** Rendering window over which a small correction decays to zero. */
export const CORRECTION_SMOOTH_MS = 150;

/** Version of the peer protocol; peers with another version refuse each other. */
export const PEER_PROTOCOL_VERSION = 1;

/** Largest chunk payload in bytes (UTF-8). */
export const CHUNK_SIZE_BYTES = 16384;

/** Largest reassembled payload accepted by default. */
export const MAX_PAYLOAD_BYTES = 8388608;

/** Ticks between two world-hash reports. */
export const HASH_REPORT_INTERVAL_TICKS = 10;

/** Largest mouse movement one tick's input may carry. */
export const MAX_MOUSE_DELTA_X = 4096.0;

/** Weapon slots (selected by the digits 1 to this). */
export const WEAPON_SLOT_COUNT = 6;

/** Longest display name, in characters (code points). */
export const DISPLAY_NAME_MAX_CHARS = 32;

/** Longest session name the lobby keeps, in characters (code points). */
export const SESSION_NAME_MAX_CHARS = 64;

/** The all-neutral input. */
export const NEUTRAL_INPUT = Object.freeze({"moveForward":false,"moveBack":false,"strafeLeft":false,"strafeRight":false,"turnLeft":false,"turnRight":false,"mouseDeltaX":0.0,"fire":false,"use":false,"weaponSelect":null,"escape":false,"blur":false,"pointerUnlock":false,"click":false});

/** The data channels' labels, in the order the host creates them (the ABI's channel numbers). */
export const CHANNELS = Object.freeze(["input","reconciliation","input-unreliable"]);

/** The channels created unordered, with no retransmissions. */
export const UNRELIABLE_CHANNELS = Object.freeze(["input-unreliable"]);

/** The SCTP stream id both sides give the negotiated unreliable channel. */
export const UNRELIABLE_CHANNEL_ID = 8;

/** The ABI's connection-state numbers, by RTCPeerConnection state. */
export const CONNECTION_STATES = Object.freeze({"closed":3,"connected":0,"disconnected":1,"failed":2});

/** The symbols of a session code, in canonical (upper) case. */
export const CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/** Symbols in a session code. */
export const CODE_LEN = 8;

/** Characters a typed code may carry between its symbols. */
export const CODE_SEPARATORS = "- ";

/** How long a host's answer long-poll waits (netcode::host::rounds). */
export const HOST_ANSWER_POLL_MS = 20000;

/** How often a host refreshes its session's TTL besides its answer polls. */
export const HOST_REFRESH_EVERY_MS = 20000;

/** Tile codes, by name (the protocol's `Tile`). */
export const TILE = Object.freeze({"DOOR":2,"EXIT":4,"FLOOR":0,"SECRET":3,"WALL":1});

/** Tile codes, by their character in a view's grid rows. */
export const TILE_OF_CHAR = Object.freeze({"#":1,".":0,"D":2,"E":4,"S":3});
