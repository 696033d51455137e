// campfire's browser library, one import for a game:
//   import { LobbyClient, loadCampfire, GuestDriver, BrowserHost } from '/web/lib/index.js';
// Plain ES modules, no runtime dependencies. The netcode and the engine run
// as WebAssembly (web/campfire.wasm): the same Rust code as the daemon.

export * from './facts.js';
export { displayNameOf } from './name.js';
export { LobbyClient, LobbyError } from './lobby-client.js';
export { gatheringComplete, takeEarlyMessages, withoutCandidates } from './webrtc.js';
export { Campfire, WasmError, WasmGuest, WasmHost, loadCampfire } from './wasm.js';
export { GuestDriver } from './guest-driver.js';
export { BrowserHost } from './browser-host.js';
