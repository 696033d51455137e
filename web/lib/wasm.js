// The loader of campfire's WebAssembly module (web/campfire.wasm, built from
// the web-bindings crate by scripts/build-wasm): the engine and the netcode
// guest session the daemon runs, behind a small byte-buffer ABI.
//
// Strings cross as UTF-8: we ask the module for a buffer (cf_alloc), write
// into it, call, and free it. Every answering call leaves JSON or text in
// one result buffer (cf_result_ptr/len) and returns 0, or 1 when the answer
// is an error message, which is thrown here as a WasmError.
//
// Works in browsers (loadCampfire() fetches /web/campfire.wasm) and in Node
// (loadCampfire(bytes) with the file's contents).

import { CHANNELS, CONNECTION_STATES } from './facts.js';

/** Channel numbers of the ABI, by data channel label (the order of Channel::ALL). */
const CHANNEL = Object.freeze(Object.fromEntries(CHANNELS.map((label, n) => [label, n])));
/** Connection-state numbers of the ABI, by RTCPeerConnection state. */
const STATE = CONNECTION_STATES;

/** An error answer from the module. */
export class WasmError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'WasmError';
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The module's raw exports, with string helpers. */
class Abi {
  /** @param {WebAssembly.Instance} instance */
  constructor(instance) {
    this.x = /** @type {any} */ (instance.exports);
  }

  /** @returns {string} the last answer */
  result() {
    const ptr = this.x.cf_result_ptr();
    const len = this.x.cf_result_len();
    return decoder.decode(new Uint8Array(this.x.memory.buffer, ptr, len));
  }

  /**
   * The last answer, or a thrown WasmError.
   * @param {number} status
   */
  answer(status) {
    const text = this.result();
    if (status !== 0) throw new WasmError(text);
    return text;
  }

  /**
   * Calls `fn(ptr, len)` with `text` in module memory.
   * @template T
   * @param {string} text
   * @param {(ptr: number, len: number) => T} fn
   * @returns {T}
   */
  withText(text, fn) {
    return this.withBytes(encoder.encode(text), fn);
  }

  /**
   * Calls `fn(ptr, len)` with `bytes` in module memory.
   * @template T
   * @param {Uint8Array} bytes
   * @param {(ptr: number, len: number) => T} fn
   * @returns {T}
   */
  withBytes(bytes, fn) {
    const ptr = this.x.cf_alloc(bytes.length);
    new Uint8Array(this.x.memory.buffer, ptr, bytes.length).set(bytes);
    try {
      return fn(ptr, bytes.length);
    } finally {
      this.x.cf_free(ptr, bytes.length);
    }
  }

  /**
   * Calls `fn(binary, ptr, len)` with a data-channel message in module
   * memory: `binary` is 1 for bytes (an ArrayBuffer or a typed array), 0
   * for text.
   * @template T
   * @param {Message} data
   * @param {(binary: number, ptr: number, len: number) => T} fn
   * @returns {T}
   */
  withMessage(data, fn) {
    if (typeof data === 'string') return this.withText(data, (p, n) => fn(0, p, n));
    const bytes = ArrayBuffer.isView(data)
      ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      : new Uint8Array(data);
    return this.withBytes(bytes, (p, n) => fn(1, p, n));
  }
}

/**
 * A data-channel message: text, or a binary message's bytes (what a data
 * channel with `binaryType = 'arraybuffer'` hands over, or what output()
 * gives to send).
 * @typedef {string|ArrayBuffer|Uint8Array} Message
 */

/**
 * The messages an output() answer lists, their binary ones (lists of byte
 * values in the JSON) made Uint8Arrays, ready for RTCDataChannel.send.
 * @template {{send: {data: any}[]}} T
 * @param {T} out
 * @returns {T}
 */
function withBinaryMessages(out) {
  for (const m of out.send) {
    if (typeof m.data !== 'string') m.data = Uint8Array.from(m.data);
  }
  return out;
}

/**
 * The Rust guest session (netcode's GuestSession over the reference engine).
 * Feed it every data-channel message and connection change with the time,
 * then call output() and send what it returns.
 */
/** A replay being watched: the recorded level re-simulated tick by tick (web-bindings' replay_viewer). */
export class WasmReplayViewer {
  /**
   * @param {Abi} abi
   * @param {string} text a replay file's contents
   */
  constructor(abi, text) {
    this.abi = abi;
    const handle = abi.withText(String(text), (p, n) => abi.x.cf_viewer_new(p, n));
    if (handle === 0) throw new WasmError(abi.result());
    this.handle = handle;
  }

  /**
   * Runs up to `ticks` recorded ticks (at most 3,000 per call).
   * @param {number} ticks
   * @returns {ViewerStatus}
   */
  step(ticks) {
    return JSON.parse(this.abi.answer(this.abi.x.cf_viewer_step(this.handle, Math.max(0, Math.floor(ticks)))));
  }

  /**
   * Goes to `tick` (forward by running, backward by starting over).
   * @param {number} tick
   * @returns {ViewerStatus}
   */
  seek(tick) {
    return JSON.parse(this.abi.answer(this.abi.x.cf_viewer_seek(this.handle, tick)));
  }

  /**
   * The world now through `player`'s eyes (null: nobody's in particular).
   * @param {string|null} player
   */
  view(player) {
    return JSON.parse(this.abi.answer(this.abi.withText(player ?? '', (p, n) => this.abi.x.cf_viewer_view(this.handle, p, n))));
  }

  free() {
    this.abi.x.cf_viewer_drop(this.handle);
  }
}

/**
 * @typedef {Object} ViewerStatus
 * @property {number} tick the engine's tick now
 * @property {number} lastTick the tick after the last recorded bundle
 * @property {boolean} ended every recorded tick has run
 * @property {string[]} roster
 * @property {Record<string, string>} names
 * @property {string} build
 * @property {number} levelEpoch
 * @property {string} difficulty
 * @property {string|null} finalWorldHash at the end: the hash reached
 * @property {string|null} recordedWorldHash the file's end record's hash
 * @property {boolean|null} matches at the end: whether the recorded end was reproduced
 */

export class WasmGuest {
  /**
   * @param {Abi} abi
   * @param {{displayName?: string, buildVersion?: string, bot?: boolean, spectate?: boolean, resumeToken?: string}} config
   */
  constructor(abi, config) {
    this.abi = abi;
    const handle = abi.withText(JSON.stringify(config), (p, n) => abi.x.cf_guest_new(p, n));
    if (handle === 0) throw new WasmError(abi.result());
    this.handle = handle;
  }

  /**
   * A message arrived on a data channel.
   * @param {string} channel
   * @param {Message} data
   * @param {number} nowMs
   */
  onMessage(channel, data, nowMs) {
    const c = /** @type {Record<string, number>} */ (CHANNEL)[channel];
    if (c === undefined) throw new WasmError(`unknown data channel ${channel}`);
    this.abi.answer(this.abi.withMessage(data, (b, p, n) => this.abi.x.cf_guest_message(this.handle, c, b, p, n, nowMs)));
  }

  /**
   * The connection changed state (RTCPeerConnection.connectionState; states
   * other than the four the session knows are ignored).
   * @param {string} state
   * @param {number} nowMs
   */
  onState(state, nowMs) {
    const s = /** @type {Record<string, number>} */ (STATE)[state];
    if (s === undefined) return;
    this.abi.answer(this.abi.x.cf_guest_state(this.handle, s, nowMs));
  }

  /** @param {number} nowMs */
  poll(nowMs) {
    this.abi.answer(this.abi.x.cf_guest_poll(this.handle, nowMs));
  }

  /** @param {object} input an InputSnapshot (sanitized by the session) */
  setInput(input) {
    this.abi.answer(this.abi.withText(JSON.stringify(input), (p, n) => this.abi.x.cf_guest_set_input(this.handle, p, n)));
  }

  /** @returns {{send: {channel: string, data: string|Uint8Array}[], events: string[], wakeAtMs: number|null, backlog: boolean}} */
  output() {
    return withBinaryMessages(JSON.parse(this.abi.answer(this.abi.x.cf_guest_output(this.handle))));
  }

  /** @returns {any} the session's status (phase, me, levelEpoch, tick, roster, names, stats, end, …) */
  status() {
    return JSON.parse(this.abi.answer(this.abi.x.cf_guest_status(this.handle)));
  }

  /**
   * The world to draw (see web/lib/render/), or null before setup.
   * @param {number} nowMs
   */
  view(nowMs) {
    return JSON.parse(this.abi.answer(this.abi.x.cf_guest_view(this.handle, nowMs)));
  }

  /**
   * What the netgraph shows that the session knows (netcode::netgraph::GuestNetgraph).
   * @param {number} nowMs
   * @returns {any}
   */
  netgraph(nowMs) {
    return JSON.parse(this.abi.answer(this.abi.x.cf_guest_netgraph(this.handle, nowMs)));
  }

  /** Releases the session. */
  drop() {
    this.abi.x.cf_guest_drop(this.handle);
    this.handle = 0;
  }
}

/**
 * The Rust host session (netcode's HostSession over the reference engine):
 * the daemon's host, for a browser host's worker. Hand it each guest
 * connection (addGuest), feed it every message and connection change with
 * the time, poll it, then send what output() returns.
 */
export class WasmHost {
  /**
   * @param {Abi} abi
   * @param {{seed: number, levels: number, displayName?: string, buildVersion?: string, bot?: boolean, difficulty?: string, startWhen?: number|null}} config
   */
  constructor(abi, config) {
    this.abi = abi;
    const handle = abi.withText(JSON.stringify(config), (p, n) => abi.x.cf_host_new(p, n));
    if (handle === 0) throw new WasmError(abi.result());
    this.handle = handle;
  }

  /**
   * A new guest connection (its channels are open).
   * @param {number} nowMs
   * @returns {number} the guest's slot
   */
  addGuest(nowMs) {
    return Number(this.abi.answer(this.abi.x.cf_host_add_guest(this.handle, nowMs)));
  }

  /**
   * A message from guest `slot` arrived on a data channel.
   * @param {number} slot
   * @param {string} channel
   * @param {Message} data
   * @param {number} nowMs
   */
  onMessage(slot, channel, data, nowMs) {
    const c = /** @type {Record<string, number>} */ (CHANNEL)[channel];
    if (c === undefined) throw new WasmError(`unknown data channel ${channel}`);
    this.abi.answer(this.abi.withMessage(data, (b, p, n) => this.abi.x.cf_host_message(this.handle, slot, c, b, p, n, nowMs)));
  }

  /**
   * Guest `slot`'s connection changed state (states other than the four
   * the session knows are ignored).
   * @param {number} slot
   * @param {string} state
   * @param {number} nowMs
   */
  onState(slot, state, nowMs) {
    const s = /** @type {Record<string, number>} */ (STATE)[state];
    if (s === undefined) return;
    this.abi.answer(this.abi.x.cf_host_state(this.handle, slot, s, nowMs));
  }

  /** @param {number} nowMs */
  poll(nowMs) {
    this.abi.answer(this.abi.x.cf_host_poll(this.handle, nowMs));
  }

  /**
   * Starts the level now with whoever is in.
   * @param {number} nowMs
   */
  start(nowMs) {
    this.abi.answer(this.abi.x.cf_host_start(this.handle, nowMs));
  }

  /** Ends the session now: every guest gets host-shutdown. */
  shutdown() {
    this.abi.answer(this.abi.x.cf_host_shutdown(this.handle));
  }

  /** @param {object} input the host player's InputSnapshot */
  setInput(input) {
    this.abi.answer(this.abi.withText(JSON.stringify(input), (p, n) => this.abi.x.cf_host_set_input(this.handle, p, n)));
  }

  /** @returns {{send: {slots: number[], channel: string, data: string|Uint8Array}[], close: number[], events: string[], wakeAtMs: number|null}} */
  output() {
    return withBinaryMessages(JSON.parse(this.abi.answer(this.abi.x.cf_host_output(this.handle))));
  }

  /** @returns {any} phase, me, levelEpoch, levelCount, tick, roster, names, guestsPresent, seatsTaken, connections, ticks, end */
  status() {
    return JSON.parse(this.abi.answer(this.abi.x.cf_host_status(this.handle)));
  }

  /**
   * Every guest's link, as the netgraph shows it (netcode::netgraph::HostNetgraph).
   * @param {number} nowMs
   * @returns {any}
   */
  netgraph(nowMs) {
    return JSON.parse(this.abi.answer(this.abi.x.cf_host_netgraph(this.handle, nowMs)));
  }

  /** @returns {any} the operator's report (levelsCompleted, ticks, endReason, players with hashReports and desyncs) */
  report() {
    return JSON.parse(this.abi.answer(this.abi.x.cf_host_report(this.handle)));
  }

  /** @returns {any} the world as the host's player sees it, or null before setup */
  view() {
    return JSON.parse(this.abi.answer(this.abi.x.cf_host_view(this.handle)));
  }

  /** Releases the session. */
  drop() {
    this.abi.x.cf_host_drop(this.handle);
    this.handle = 0;
  }
}

/**
 * netcode's hosting machine for a browser host (netcode::host::hosting, the
 * daemon's round loop): it says when to make and publish an offer, poll
 * its answer, connect an answer, give a join up and update the lobby's
 * `players`; the page does it and reports back. Times are the page's
 * milliseconds.
 */
export class WasmHosting {
  /**
   * @param {Abi} abi
   * @param {{connectDeadlineMs?: number, guestSeats?: number, startWhen?: number, lateJoin?: boolean, maxSpectators?: number, localPlayers?: number, publishedPlayers?: number}} settings
   */
  constructor(abi, settings) {
    this.abi = abi;
    const handle = abi.withText(JSON.stringify(settings), (p, n) => abi.x.cf_hosting_new(p, n));
    if (handle === 0) throw new WasmError(abi.result());
    this.handle = handle;
  }

  /**
   * The first commands.
   * @param {number} nowMs
   * @returns {any[]}
   */
  start(nowMs) {
    return JSON.parse(this.abi.answer(this.abi.x.cf_hosting_start(this.handle, nowMs)));
  }

  /**
   * Reports how a command went, or news (`seats`, `iceProgress`,
   * `joinEnded`, `clock`); answers the commands that follow.
   * @param {object} event
   * @param {number} nowMs
   * @returns {any[]}
   */
  on(event, nowMs) {
    return JSON.parse(this.abi.answer(this.abi.withText(JSON.stringify(event),
      (p, n) => this.abi.x.cf_hosting_on(this.handle, p, n, nowMs))));
  }

  /**
   * When to report `{event: 'clock'}` if nothing else happens.
   * @param {number} nowMs
   * @returns {number|null}
   */
  nextWake(nowMs) {
    return JSON.parse(this.abi.answer(this.abi.x.cf_hosting_next_wake(this.handle, nowMs)));
  }

  /** Releases the machine. */
  drop() {
    this.abi.x.cf_hosting_drop(this.handle);
    this.handle = 0;
  }
}

/**
 * Joining a session by code (lobby_api::joining, the daemon's joining
 * machine): it says each step (readSession, pause, answer, connect, joined,
 * fail), the page does it and reports how it went. Times are the page's
 * milliseconds.
 */
export class WasmJoining {
  /**
   * @param {Abi} abi
   * @param {{code: string, spectate?: boolean, build?: string}} request
   * @param {number} nowMs
   */
  constructor(abi, request, nowMs) {
    this.abi = abi;
    const handle = abi.withText(JSON.stringify(request), (p, n) => abi.x.cf_joining_new(p, n, nowMs));
    if (handle === 0) throw new WasmError(abi.result());
    this.handle = handle;
  }

  /** @returns {any} the first step */
  start() {
    return JSON.parse(this.abi.answer(this.abi.x.cf_joining_start(this.handle)));
  }

  /**
   * Reports how a step went; answers the next step.
   * @param {object} event `{event: 'session', ...view}`, `{event: 'refused', code?, retryAfterMs?}`,
   *   `{event: 'paused'}`, `{event: 'answered'}`, `{event: 'connectFailed'}` or `{event: 'connected'}`
   * @param {number} nowMs
   * @returns {any}
   */
  on(event, nowMs) {
    return JSON.parse(this.abi.answer(this.abi.withText(JSON.stringify(event),
      (p, n) => this.abi.x.cf_joining_on(this.handle, p, n, nowMs))));
  }

  /** Releases the joiner. */
  drop() {
    this.abi.x.cf_joining_drop(this.handle);
    this.handle = 0;
  }
}

/** The loaded module: facts, sanitizers, guests, hosts, hosting and joining machines, and the bot campaign. */
export class Campfire {
  /** @param {WebAssembly.Instance} instance */
  constructor(instance) {
    this.abi = new Abi(instance);
    /** The shared protocol constants of this build (protocol crate). */
    this.facts = JSON.parse(this.abi.answer(this.abi.x.cf_facts()));
  }

  /**
   * An input as the shared stream may carry it.
   * @param {object} input
   */
  sanitizeInput(input) {
    return JSON.parse(this.abi.answer(this.abi.withText(JSON.stringify(input), (p, n) => this.abi.x.cf_sanitize_input(p, n))));
  }

  /**
   * A display name as every peer shows it.
   * @param {string} raw
   */
  sanitizeName(raw) {
    return this.abi.answer(this.abi.withText(String(raw), (p, n) => this.abi.x.cf_sanitize_name(p, n)));
  }

  /**
   * A typed session code in its canonical form, or null when it is none.
   * @param {string} typed
   * @returns {string|null}
   */
  parseCode(typed) {
    const status = this.abi.withText(String(typed), (p, n) => this.abi.x.cf_parse_code(p, n));
    return status === 0 ? this.abi.result() : null;
  }

  /** @param {{displayName?: string, buildVersion?: string, bot?: boolean, spectate?: boolean, resumeToken?: string}} config */
  guest(config) {
    return new WasmGuest(this.abi, config);
  }

  /** @param {{seed: number, levels: number, displayName?: string, buildVersion?: string, bot?: boolean, difficulty?: string, startWhen?: number|null}} config */
  host(config) {
    return new WasmHost(this.abi, config);
  }

  /**
   * A browser host's hosting machine.
   * @param {{connectDeadlineMs?: number, guestSeats?: number, startWhen?: number, lateJoin?: boolean, maxSpectators?: number, localPlayers?: number, publishedPlayers?: number}} [settings]
   */
  hosting(settings = {}) {
    return new WasmHosting(this.abi, settings);
  }

  /**
   * A joiner of the session `request.code` names (as typed).
   * @param {{code: string, spectate?: boolean, build?: string}} request
   * @param {number} nowMs
   */
  joining(request, nowMs) {
    return new WasmJoining(this.abi, request, nowMs);
  }

  /**
   * Runs an all-bot campaign (engine::campaign) to the end.
   * @param {{seed?: number, players?: number, levels?: number, difficulty?: string, maxTicks?: number}} spec
   * @returns {{levels: object[], summary: {seed: number, players: number, levelsCompleted: number, ticks: number, worldHash: string}}}
   */
  botmatch(spec) {
    return JSON.parse(this.abi.answer(this.abi.withText(JSON.stringify(spec), (p, n) => this.abi.x.cf_botmatch(p, n))));
  }

  /**
   * Re-simulates a replay file (`host-daemon host --record DIR` writes them)
   * on the daemon's engine, as `host-daemon replay FILE` does; the answer
   * is that command's JSON line. `matches` is false when the ticks do not
   * lead to the recorded end, null when the file has no end record.
   * Throws a WasmError (naming the line) for text that is not a replay of
   * this build's format.
   * @param {string} text the file's contents
   * @returns {{type: 'replay', build: string, levelEpoch: number, levelIndex: number, roster: string[], ticks: number, finalWorldHash: string, recordedWorldHash: string|null, matches: boolean|null}}
   */
  replay(text) {
    return JSON.parse(this.abi.answer(this.abi.withText(String(text), (p, n) => this.abi.x.cf_replay(p, n))));
  }

  /**
   * Opens a replay file's text for watching. Throws a WasmError naming the
   * line for text that is not a replay of this build's format.
   * @param {string} text
   */
  replayViewer(text) {
    return new WasmReplayViewer(this.abi, text);
  }
}

/** @type {Promise<WebAssembly.Module>|null} the fetched module, compiled once per page or worker */
let fetched = null;

/**
 * Loads the module: from `source` bytes (Node, tests), or by fetching
 * `/web/campfire.wasm` (browsers; served as application/wasm). A page
 * fetches and compiles the file once; each call gets its own instance.
 * @param {BufferSource} [source]
 * @returns {Promise<Campfire>}
 */
export async function loadCampfire(source) {
  if (source) return new Campfire((await WebAssembly.instantiate(source, {})).instance);
  fetched ??= WebAssembly.compileStreaming(fetch(new URL('../campfire.wasm', import.meta.url)));
  const module = await fetched.catch((e) => {
    fetched = null; // a failed fetch is tried again by the next call
    throw e;
  });
  return new Campfire(await WebAssembly.instantiate(module, {}));
}
