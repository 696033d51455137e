// The guest side of the peer protocol (docs: design/peer-protocol.md; the
// Rust twin is host-daemon/src/guest.rs) over the two RTCDataChannels the
// host opens, `input` and `reconciliation`.
//
// The session owns the protocol: version handshake, setup, validated map
// transfer, bundles applied strictly in order (event driven: it advances
// when a bundle arrives, never on its own timer, so a hidden tab keeps
// pace), snapshots applied at exactly the tick they reflect, level
// transitions, roster removals, session end and host loss. A game plugs its
// simulation in as a GuestEngine and its input as a sampler; every sampled
// input is sanitized here (spec §6) before it leaves.

import {
  DISCONNECT_GRACE_MS, FIXED_DT, HASH_REPORT_INTERVAL_TICKS, INPUT_DELAY_TICKS,
  PEER_PROTOCOL_VERSION, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ,
} from './constants.js';
import { Reassembler } from './chunk.js';
import { NEUTRAL_INPUT, sanitizeInput } from './input.js';
import { sanitizeDisplayName } from './name.js';

/**
 * What a level starts from.
 * @typedef {Object} LevelSetup
 * @property {Object} map the GameMap (validated for shape)
 * @property {string[]} roster sorted player ids
 * @property {string} you this guest's player id
 * @property {number} seed the level's gameplay seed
 * @property {string} difficulty host-authoritative, frozen for the session
 * @property {number} playerCount for elite scaling
 * @property {Record<string, Object>} carryovers per-player carryovers (empty on level 1)
 * @property {number} levelIndex 0 for the first level
 */

/**
 * The seam a game's simulation plugs into. A full engine advances exactly
 * like the host's and can report world hashes; a view-only engine (see
 * snapshot-view.js) may omit `hash`.
 * @typedef {Object} GuestEngine
 * @property {(setup: LevelSetup) => void} startLevel builds a fresh level (throws if it cannot)
 * @property {() => number} tick the engine tick (the next bundle's tick)
 * @property {() => string[]} roster current roster ids
 * @property {(bundle: {tick: number, dt: number, inputs: Record<string, import('./input.js').InputSnapshot>, rosterRemove: string[]}) => void} advance one tick
 * @property {(snapshot: Object) => void} applySnapshot snaps every field at once
 * @property {() => string} [hash] world hash, 16 lowercase hex digits
 * @property {() => boolean} [levelOver] the level is complete or lost (no snapshot to wait for)
 */

/** Bundles applied per turn before yielding (the bounded fast-forward loop). */
const MAX_CATCH_UP_PER_TURN = 256;
/** Snapshots held while the bundles before them are still on their way. */
const MAX_PENDING_SNAPSHOTS = 64;
/** Smallest and largest accepted map side, in tiles. */
const MIN_MAP_SIDE = 3;
const MAX_MAP_SIDE = 512;

/**
 * How a session ended.
 * @typedef {{kind: 'ended', reason: string, scores: Object[], provisional: boolean}
 *   | {kind: 'refused', reason: string, detail: string, hostBuild: string|null}
 *   | {kind: 'setup-failed', detail: string}} GuestEnd
 */

/**
 * Checks a received map's shape before an engine sees it.
 * @param {any} map
 * @returns {string|null} what is wrong, or null
 */
export function mapProblem(map) {
  if (!map || typeof map !== 'object') return 'the map is not an object';
  const { width, height, tiles } = map;
  if (!Number.isInteger(width) || !Number.isInteger(height)
    || width < MIN_MAP_SIDE || height < MIN_MAP_SIDE || width > MAX_MAP_SIDE || height > MAX_MAP_SIDE) {
    return `the map is ${width}x${height}; each side must be between ${MIN_MAP_SIDE} and ${MAX_MAP_SIDE}`;
  }
  if (!Array.isArray(tiles) || tiles.length !== width * height) {
    return `the map has ${Array.isArray(tiles) ? tiles.length : 'no'} tiles for ${width}x${height}`;
  }
  if (!tiles.every((t) => Number.isInteger(t) && t >= 0 && t <= 4)) return 'the map has an unknown tile code';
  if (!Array.isArray(map.spawns) || map.spawns.length === 0) return 'the map has no spawn point';
  return null;
}

/** The guest's netcode session. */
export class GuestSession {
  /**
   * @param {Object} options
   * @param {GuestEngine} options.engine the game's simulation
   * @param {() => Partial<import('./input.js').InputSnapshot>} [options.sampleInput] the local input now (sanitized here)
   * @param {string} options.buildVersion this client's build (must equal the host's)
   * @param {string} [options.displayName] as typed ('' for none)
   * @param {(type: string, detail: any) => void} [options.onEvent] progress and lifecycle events
   */
  constructor(options) {
    this.engine = options.engine;
    this.sampleInput = options.sampleInput ?? (() => NEUTRAL_INPUT);
    this.buildVersion = options.buildVersion;
    this.displayName = sanitizeDisplayName(options.displayName ?? '');
    this.onEvent = options.onEvent ?? (() => {});
    /** @type {'await-hello'|'await-init'|'map'|'running'|'ended'} */
    this.phase = 'await-hello';
    /** @type {GuestEnd|null} */
    this.end = null;
    /** @type {string|null} */
    this.me = null;
    /** @type {Record<string, string>} */
    this.names = {};
    /** @type {string|null} */
    this.hostBuild = null;
    this.difficulty = 'normal';
    this.levelEpoch = 0;
    /** @type {Object[]} */
    this.backlog = [];
    /** @type {Map<number, Object>} */
    this.pendingSnapshots = new Map();
    this.lastSnapshotTick = -1;
    /** @type {Object|null} */
    this.init = null;
    /** @type {Reassembler|null} */
    this.mapParts = null;
    /** @type {{epoch: number, index: number, parts: Reassembler}|null} */
    this.transition = null;
    /** @type {{reason: string, epoch: number, finalTick: number}|null} */
    this.ending = null;
    /** @type {Object[]} */
    this.finalScores = [];
    this.stats = {
      bundlesApplied: 0, staleBundles: 0, snapshotsApplied: 0, snapshotsDiscarded: 0,
      outOfSequence: 0, heldInputTicks: 0, inputsSent: 0, transitions: 0, transitionFailures: 0,
    };
    /** @type {Record<string, RTCDataChannel>|null} */
    this.channels = null;
    this.hostLostTimer = null;
    this.drainScheduled = false;
  }

  /**
   * Starts speaking the protocol over the host's two channels.
   * @param {{input: RTCDataChannel, reconciliation: RTCDataChannel}} channels
   */
  attach(channels) {
    this.channels = channels;
    for (const dc of [channels.input, channels.reconciliation]) {
      dc.addEventListener('message', (ev) => this.receive(typeof ev.data === 'string' ? ev.data : ''));
      dc.addEventListener('close', () => this.hostLost());
    }
  }

  /** Leaves the session from this side (closes the channels). */
  leave() {
    this.finish({ kind: 'ended', reason: 'left', scores: this.finalScores, provisional: true });
    for (const dc of Object.values(this.channels ?? {})) dc.close();
  }

  /**
   * @param {'input'|'reconciliation'} channel
   * @param {Object} msg
   */
  send(channel, msg) {
    const dc = this.channels?.[channel];
    if (dc && dc.readyState === 'open') dc.send(JSON.stringify(msg));
  }

  /** @param {GuestEnd} end */
  finish(end) {
    if (this.end) return;
    this.end = end;
    this.phase = 'ended';
    clearTimeout(this.hostLostTimer);
    this.onEvent('ended', end);
  }

  /** The channels closed: the host is gone unless it comes back within the grace. */
  hostLost() {
    if (this.end || this.hostLostTimer) return;
    this.onEvent('host-lost', { graceMs: DISCONNECT_GRACE_MS });
    this.hostLostTimer = setTimeout(() => {
      if (this.ending) this.finish({ kind: 'ended', reason: this.ending.reason, scores: this.finalScores, provisional: false });
      else this.finish({ kind: 'ended', reason: 'host-disconnected', scores: this.finalScores, provisional: true });
    }, DISCONNECT_GRACE_MS);
  }

  /**
   * Handles one message text from the host (either channel).
   * @param {string} text
   */
  receive(text) {
    if (this.end) return;
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      console.warn('campfire: unparsable host message');
      return;
    }
    if (!msg || typeof msg.type !== 'string') return;
    switch (msg.type) {
      case 'host-hello': return this.onHello(msg);
      case 'join-refused':
        return this.finish({ kind: 'refused', reason: String(msg.reason), detail: String(msg.detail ?? ''), hostBuild: this.hostBuild });
      case 'session-init': return this.onInit(msg);
      case 'map-chunk': return this.onMapChunk(msg);
      case 'map-end': return this.onMapEnd(msg);
      case 'tick-input-bundle': return this.onBundle(msg);
      case 'reconciliation-snapshot': return this.onSnapshot(msg);
      case 'level-transition-init': return this.onTransitionInit(msg);
      case 'level-transition-chunk': return this.onTransitionChunk(msg);
      case 'level-transition-end': return this.onTransitionEnd(msg);
      case 'session-end':
        this.finalScores = Array.isArray(msg.scores) ? msg.scores : [];
        this.ending = { reason: String(msg.reason), epoch: msg.levelEpoch, finalTick: msg.finalTick };
        return this.drain();
      default:
        console.warn(`campfire: unknown host message ${msg.type}`);
    }
  }

  /** @param {any} msg */
  onHello(msg) {
    if (this.phase !== 'await-hello') return;
    this.hostBuild = String(msg.buildVersion ?? '');
    this.onEvent('hello', { hostBuild: this.hostBuild, protocolVersion: msg.protocolVersion });
    // The host decides: it refuses a mismatch with a reason we then show.
    this.send('reconciliation', {
      type: 'guest-hello',
      buildVersion: this.buildVersion,
      protocolVersion: PEER_PROTOCOL_VERSION,
      displayName: this.displayName,
    });
    this.phase = 'await-init';
  }

  /** @param {any} msg */
  onInit(msg) {
    if (this.phase !== 'await-init') return;
    if (msg.tickRateHz !== TICK_RATE_HZ || msg.fixedDt !== FIXED_DT
      || msg.inputDelayTicks !== INPUT_DELAY_TICKS || msg.reconcileIntervalTicks !== RECONCILE_INTERVAL_TICKS) {
      this.finish({ kind: 'setup-failed', detail: "the host's tick constants differ from this client's" });
      return;
    }
    this.init = msg;
    this.mapParts = new Reassembler();
    this.phase = 'map';
    this.onEvent('init', msg);
  }

  /** @param {any} msg */
  onMapChunk(msg) {
    if (this.phase !== 'map' || !this.mapParts) return;
    try {
      this.mapParts.push(msg);
      this.onEvent('map-progress', { chunks: this.mapParts.received });
    } catch (e) {
      this.finish({ kind: 'setup-failed', detail: `map transfer: ${e.message}` });
    }
  }

  /** @param {any} msg */
  onMapEnd(msg) {
    if (this.phase !== 'map' || !this.mapParts || !this.init) return;
    const init = this.init;
    let map;
    try {
      map = this.mapParts.finishParse(msg);
    } catch (e) {
      this.finish({ kind: 'setup-failed', detail: `map transfer: ${e.message}` });
      return;
    }
    const problem = mapProblem(map);
    if (problem) {
      this.finish({ kind: 'setup-failed', detail: `map rejected: ${problem}` });
      return;
    }
    try {
      this.engine.startLevel({
        map, roster: init.roster, you: init.yourPlayerId, seed: init.gameplaySeed,
        difficulty: init.difficulty, playerCount: init.playerCount, carryovers: {}, levelIndex: 0,
      });
    } catch (e) {
      this.finish({ kind: 'setup-failed', detail: `level rejected: ${e.message}` });
      return;
    }
    this.me = init.yourPlayerId;
    this.names = {};
    for (const [id, name] of Object.entries(init.playerNames ?? {})) this.names[id] = sanitizeDisplayName(name);
    this.difficulty = init.difficulty;
    this.levelEpoch = 1;
    this.mapParts = null;
    this.phase = 'running';
    this.send('reconciliation', { type: 'setup-ack' });
    this.onEvent('ready', { map, you: this.me, names: this.names, difficulty: this.difficulty });
    this.sampleAndSend();
  }

  /** @param {any} bundle */
  onBundle(bundle) {
    if (this.phase !== 'running') return;
    if (bundle.levelEpoch !== this.levelEpoch) {
      this.stats.staleBundles += 1;
      return;
    }
    this.backlog.push(bundle);
    this.drain();
  }

  /** @param {any} msg */
  onSnapshot(msg) {
    if (this.phase !== 'running' || msg.levelEpoch !== this.levelEpoch) {
      this.stats.snapshotsDiscarded += 1;
      return;
    }
    // Snapshots can outrun the bundles before them (the other channel):
    // keep them by tick until the engine gets there.
    if (this.pendingSnapshots.size >= MAX_PENDING_SNAPSHOTS) {
      const oldest = Math.min(...this.pendingSnapshots.keys());
      this.pendingSnapshots.delete(oldest);
      this.stats.snapshotsDiscarded += 1;
    }
    this.pendingSnapshots.set(msg.tick, msg);
    this.drain();
  }

  /** At a snapshot tick the engine waits for that snapshot before advancing. */
  waitingForSnapshot() {
    const t = this.engine.tick();
    return t > 0 && t % RECONCILE_INTERVAL_TICKS === 0 && this.lastSnapshotTick !== t
      && !(this.engine.levelOver?.() ?? false);
  }

  tryApplySnapshot() {
    const t = this.engine.tick();
    for (const tick of [...this.pendingSnapshots.keys()]) {
      if (tick < t) {
        this.pendingSnapshots.delete(tick);
        this.stats.snapshotsDiscarded += 1;
      }
    }
    const msg = this.pendingSnapshots.get(t);
    if (!msg) return;
    this.pendingSnapshots.delete(t);
    this.engine.applySnapshot(msg);
    this.lastSnapshotTick = t;
    this.stats.snapshotsApplied += 1;
    this.onEvent('snapshot', msg);
  }

  /** Applies what can be applied, oldest first, in bounded turns. */
  drain() {
    if (this.end) return;
    for (let i = 0; i < MAX_CATCH_UP_PER_TURN; i++) {
      if (this.waitingForSnapshot()) {
        this.tryApplySnapshot();
        if (this.waitingForSnapshot()) break;
      }
      const bundle = this.backlog.shift();
      if (!bundle) break;
      this.applyBundle(bundle);
      if (this.end) return;
    }
    if (this.ending && (this.ending.epoch !== this.levelEpoch || this.engine.tick() >= this.ending.finalTick)) {
      this.finish({ kind: 'ended', reason: this.ending.reason, scores: this.finalScores, provisional: false });
      return;
    }
    if (this.backlog.length > 0 && !this.waitingForSnapshot() && !this.drainScheduled) {
      this.drainScheduled = true;
      setTimeout(() => { this.drainScheduled = false; this.drain(); }, 0);
    }
  }

  /** @param {any} b */
  applyBundle(b) {
    if (b.tick !== this.engine.tick()) {
      this.stats.outOfSequence += 1;
      console.warn(`campfire: bundle ${b.tick} out of sequence (engine at ${this.engine.tick()})`);
      return;
    }
    const remove = Array.isArray(b.rosterRemove) ? b.rosterRemove : [];
    /** @type {Record<string, any>} */
    const inputs = {};
    for (const id of this.engine.roster()) {
      if (remove.includes(id)) continue;
      const given = b.inputs?.[id];
      if (!given) console.warn(`campfire: bundle ${b.tick} lacks ${id}'s input`);
      inputs[id] = given ? sanitizeInput(given) : { ...NEUTRAL_INPUT };
    }
    this.engine.advance({ tick: b.tick, dt: b.dt, inputs, rosterRemove: remove });
    this.stats.bundlesApplied += 1;
    if (Array.isArray(b.heldInputFallback) && this.me && b.heldInputFallback.includes(this.me)) {
      this.stats.heldInputTicks += 1;
    }
    const after = this.engine.tick();
    if (remove.length > 0) this.onEvent('roster-remove', { tick: b.tick, removed: remove });
    if (this.engine.hash && after % HASH_REPORT_INTERVAL_TICKS === 0) {
      this.send('reconciliation', { type: 'hash-report', tick: after, levelEpoch: this.levelEpoch, hash: this.engine.hash() });
    }
    this.onEvent('tick', { tick: after, held: b.heldInputFallback ?? [] });
    this.sampleAndSend();
  }

  /** Samples the local input, sanitizes it, tags it for the input delay. */
  sampleAndSend() {
    if (this.end || !this.me || this.engine.levelOver?.()) return;
    const input = sanitizeInput(this.sampleInput());
    this.send('input', {
      type: 'tick-input',
      tick: this.engine.tick() + INPUT_DELAY_TICKS,
      playerId: this.me,
      input,
    });
    this.stats.inputsSent += 1;
  }

  /** @param {any} msg */
  onTransitionInit(msg) {
    if (this.phase !== 'running') return;
    if (msg.levelEpoch > this.levelEpoch) {
      this.transition = { epoch: msg.levelEpoch, index: msg.levelIndex, parts: new Reassembler() };
      this.onEvent('transition', { levelIndex: msg.levelIndex });
    } else if (msg.levelEpoch === this.levelEpoch) {
      // A resend after our ack crossed it: ack again.
      this.send('reconciliation', { type: 'level-transition-ack', levelEpoch: msg.levelEpoch });
    }
  }

  /** @param {any} msg */
  onTransitionChunk(msg) {
    if (!this.transition || this.transition.epoch !== msg.levelEpoch) return;
    try {
      this.transition.parts.push(msg);
    } catch (e) {
      this.transitionFailed(e.message);
    }
  }

  /** @param {any} msg */
  onTransitionEnd(msg) {
    const t = this.transition;
    if (!t || t.epoch !== msg.levelEpoch) return;
    this.transition = null;
    let payload;
    try {
      payload = t.parts.finishParse(msg);
    } catch (e) {
      this.transitionFailed(e.message);
      return;
    }
    const problem = mapProblem(payload.map);
    if (problem) return this.transitionFailed(`map rejected: ${problem}`);
    if (!this.me || !Array.isArray(payload.roster) || !payload.roster.includes(this.me)) {
      return this.transitionFailed('the new roster does not include this player');
    }
    // Old-level bundles still queued belong to the level we are leaving.
    this.drain();
    try {
      this.engine.startLevel({
        map: payload.map, roster: payload.roster, you: this.me, seed: payload.gameplaySeed,
        difficulty: this.difficulty, playerCount: payload.playerCount,
        carryovers: payload.carryovers ?? {}, levelIndex: payload.levelIndex,
      });
    } catch (e) {
      return this.transitionFailed(`level rejected: ${e.message}`);
    }
    this.levelEpoch = t.epoch;
    this.backlog = [];
    this.pendingSnapshots.clear();
    this.lastSnapshotTick = -1;
    this.stats.transitions += 1;
    this.send('reconciliation', { type: 'level-transition-ack', levelEpoch: t.epoch });
    this.onEvent('level', { levelIndex: payload.levelIndex, map: payload.map });
    this.sampleAndSend();
  }

  /** @param {string} why */
  transitionFailed(why) {
    console.warn(`campfire: level transition payload rejected (${why}); waiting for a resend`);
    this.transition = null;
    this.stats.transitionFailures += 1;
  }
}
