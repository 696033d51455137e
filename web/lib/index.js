// campfire's browser library, one import for a game:
//   import { LobbyClient, GuestSession, SnapshotViewEngine } from '/web/lib/index.js';
// Plain ES modules, no runtime dependencies.

export * from './constants.js';
export { ChunkError, Reassembler, checksum, fnv1a64, split } from './chunk.js';
export { NEUTRAL_INPUT, MAX_MOUSE_DELTA_X, WEAPON_SLOT_COUNT, isNeutral, sanitizeInput } from './input.js';
export { DISPLAY_NAME_MAX_CHARS, displayNameOf, sanitizeDisplayName, sanitizeLabel } from './name.js';
export { CODE_ALPHABET, CODE_LEN, LobbyClient, LobbyError, gatheringComplete, normalizeCode } from './lobby-client.js';
export { GuestSession, mapProblem } from './guest-session.js';
export { SnapshotViewEngine, TILE } from './snapshot-view.js';
