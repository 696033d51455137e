// GuestSession against a scripted host over fake data channels, with the
// snapshot view engine plugged in.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GuestSession } from '../lib/guest-session.js';
import { SnapshotViewEngine } from '../lib/snapshot-view.js';
import { split } from '../lib/chunk.js';
import { FIXED_DT, INPUT_DELAY_TICKS, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ } from '../lib/constants.js';
import { NEUTRAL_INPUT } from '../lib/input.js';

class FakeChannel {
  /** @param {string} label */
  constructor(label) {
    this.label = label;
    this.readyState = 'open';
    /** @type {any[]} */
    this.sent = [];
    /** @type {Record<string, ((ev: any) => void)[]>} */
    this.listeners = {};
  }
  send(/** @type {string} */ text) { this.sent.push(JSON.parse(text)); }
  addEventListener(/** @type {string} */ type, /** @type {(ev: any) => void} */ fn) { (this.listeners[type] ??= []).push(fn); }
  close() { this.readyState = 'closed'; for (const fn of this.listeners.close ?? []) fn({}); }
  /** The host sends a message on this channel. */
  deliver(/** @type {any} */ msg) { for (const fn of this.listeners.message ?? []) fn({ data: JSON.stringify(msg) }); }
}

/** A 5x5 room with the exit in a corner. */
const MAP = {
  width: 5, height: 5,
  tiles: [1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 4, 1, 1, 1, 1, 1, 1],
  spawns: [{ x: 1.5, y: 1.5 }, { x: 2.5, y: 1.5 }],
  enemies: [], mines: [], ammoPickups: [], keys: [], doors: [], exit: { x: 3, y: 3 },
  rooms: [{ x: 1, y: 1, w: 3, h: 3 }],
};

function setup(/** @type {any} */ sampleInput = () => NEUTRAL_INPUT) {
  const input = new FakeChannel('input');
  const rec = new FakeChannel('reconciliation');
  const engine = new SnapshotViewEngine();
  /** @type {[string, any][]} */
  const events = [];
  const session = new GuestSession({
    engine, sampleInput, buildVersion: 'b1', displayName: ' Ada\u0007 ',
    onEvent: (type, detail) => events.push([type, detail]),
  });
  session.attach({ input: /** @type {any} */ (input), reconciliation: /** @type {any} */ (rec) });
  return { input, rec, engine, session, events };
}

/** Runs the handshake and map transfer. */
function handshake(/** @type {ReturnType<typeof setup>} */ s, map = MAP) {
  s.rec.deliver({ type: 'host-hello', buildVersion: 'b1', protocolVersion: 1 });
  s.rec.deliver({
    type: 'session-init', roster: ['guest-1', 'host'], yourPlayerId: 'guest-1', tickRateHz: TICK_RATE_HZ,
    fixedDt: FIXED_DT, inputDelayTicks: INPUT_DELAY_TICKS, reconcileIntervalTicks: RECONCILE_INTERVAL_TICKS,
    gameplaySeed: 7, difficulty: 'hard', playerCount: 2, playerNames: { 'guest-1': 'Ada', host: '\u202eHost' },
  });
  const { chunks, end } = split(JSON.stringify(map));
  for (const c of chunks) s.rec.deliver({ type: 'map-chunk', ...c });
  s.rec.deliver({ type: 'map-end', ...end });
}

/** @param {number} tick @param {any} [extra] */
const bundle = (tick, extra = {}) => ({
  type: 'tick-input-bundle', tick, dt: FIXED_DT, levelEpoch: 1,
  inputs: { 'guest-1': { ...NEUTRAL_INPUT, moveForward: true }, host: NEUTRAL_INPUT }, heldInputFallback: [], ...extra,
});

test('handshake, setup ack, and the first input tagged for the delay and sanitized', () => {
  const s = setup(() => ({ ...NEUTRAL_INPUT, moveForward: true, escape: true, blur: true }));
  handshake(s);
  assert.deepEqual(s.rec.sent[0], { type: 'guest-hello', buildVersion: 'b1', protocolVersion: 1, displayName: 'Ada' });
  assert.deepEqual(s.rec.sent[1], { type: 'setup-ack' });
  assert.equal(s.session.phase, 'running');
  assert.equal(s.session.names.host, 'Host');
  const first = s.input.sent[0];
  assert.equal(first.type, 'tick-input');
  assert.equal(first.tick, INPUT_DELAY_TICKS);
  assert.equal(first.playerId, 'guest-1');
  assert.equal(first.input.moveForward, true);
  assert.equal(first.input.escape, false);
  assert.equal(first.input.blur, false);
  assert.deepEqual(s.engine.roster(), ['guest-1', 'host']);
});

test('bundles apply in order, wait for the snapshot of their tick, and stale ones are dropped', () => {
  const s = setup();
  handshake(s);
  for (let t = 0; t < 31; t++) s.input.deliver(bundle(t));
  // Tick 30 is a snapshot tick: bundle 30 waits for the snapshot.
  assert.equal(s.engine.tick(), 30);
  assert.ok(s.engine.players.get('guest-1').x > 1.5, 'moved forward (east)');
  s.input.deliver({ ...bundle(31), levelEpoch: 0 });
  assert.equal(s.session.stats.staleBundles, 1);
  const snap = {
    type: 'reconciliation-snapshot', levelEpoch: 1, tick: 30, rngState: 1,
    players: {
      'guest-1': { posX: 2.0, posY: 2.5, dirX: 1, dirY: 0, planeX: 0, planeY: 0.66, health: 80, swap: 0, ammo: { bullets: 5, rockets: 0, smg: 0, gas: 0 }, weaponIndex: 1, keysHeld: 0, ownedWeapons: [0, 1], alive: true, killScore: 0, kills: 0 },
      host: { posX: 2.5, posY: 1.5, dirX: 1, dirY: 0, planeX: 0, planeY: 0.66, health: 100, swap: 0, ammo: { bullets: 9, rockets: 0, smg: 0, gas: 0 }, weaponIndex: 1, keysHeld: 0, ownedWeapons: [0, 1], alive: true, killScore: 0, kills: 0 },
    },
    enemies: [], mines: [], lootDrops: [], pickupsCollected: [], keysCollected: [], gridVersion: 0, gridDelta: [{ x: 2, y: 2, value: 1 }],
  };
  s.rec.deliver(snap);
  assert.equal(s.engine.tick(), 31, 'bundle 30 applied after the snapshot');
  assert.equal(s.engine.players.get('guest-1').health, 80);
  assert.equal(s.engine.tileAt(2, 2), 1, 'grid delta applied');
  assert.equal(s.session.stats.snapshotsApplied, 1);
  assert.equal(s.session.stats.outOfSequence, 0);
  // One input per applied bundle, each tagged engine tick + delay.
  const ticks = s.input.sent.map((m) => m.tick);
  assert.deepEqual(ticks, Array.from({ length: 32 }, (_, i) => i + INPUT_DELAY_TICKS));
  // The view engine never reports hashes.
  assert.equal(s.rec.sent.filter((m) => m.type === 'hash-report').length, 0);
});

test('a roster removal, then the session end after the final tick', () => {
  const s = setup();
  handshake(s);
  s.input.deliver(bundle(0));
  s.input.deliver(bundle(1, { inputs: { 'guest-1': NEUTRAL_INPUT }, rosterRemove: ['host'] }));
  assert.deepEqual(s.engine.roster(), ['guest-1']);
  assert.ok(s.events.some(([t, d]) => t === 'roster-remove' && d.removed[0] === 'host'));
  s.rec.deliver({ type: 'session-end', reason: 'completed', scores: [{ playerId: 'guest-1', name: 'Ada', killScore: 3, kills: 1, disconnected: false }], levelEpoch: 1, finalTick: 3 });
  assert.equal(s.session.end, null, 'bundles up to the final tick are still due');
  s.input.deliver({ ...bundle(2), inputs: { 'guest-1': NEUTRAL_INPUT } });
  assert.deepEqual(s.session.end, { kind: 'ended', reason: 'completed', scores: [{ playerId: 'guest-1', name: 'Ada', killScore: 3, kills: 1, disconnected: false }], provisional: false });
});

test('a refusal and a corrupted map end the session with the reason', () => {
  const a = setup();
  a.rec.deliver({ type: 'host-hello', buildVersion: 'b2', protocolVersion: 1 });
  a.rec.deliver({ type: 'join-refused', reason: 'version-mismatch', detail: 'host runs b2' });
  assert.deepEqual(a.session.end, { kind: 'refused', reason: 'version-mismatch', detail: 'host runs b2', hostBuild: 'b2' });

  const b = setup();
  b.rec.deliver({ type: 'host-hello', buildVersion: 'b1', protocolVersion: 1 });
  b.rec.deliver({
    type: 'session-init', roster: ['guest-1'], yourPlayerId: 'guest-1', tickRateHz: TICK_RATE_HZ, fixedDt: FIXED_DT,
    inputDelayTicks: INPUT_DELAY_TICKS, reconcileIntervalTicks: RECONCILE_INTERVAL_TICKS, gameplaySeed: 1,
    difficulty: 'normal', playerCount: 1, playerNames: {},
  });
  const { chunks, end } = split(JSON.stringify(MAP));
  for (const c of chunks) b.rec.deliver({ type: 'map-chunk', ...c });
  b.rec.deliver({ type: 'map-end', ...end, checksum: '0000000000000000' });
  assert.equal(b.session.end?.kind, 'setup-failed');
  assert.match(b.session.end?.detail, /checksum mismatch/);
  assert.equal(b.rec.sent.filter((m) => m.type === 'setup-ack').length, 0);

  const c = setup();
  handshake(c, { ...MAP, tiles: MAP.tiles.slice(1) });
  assert.match(c.session.end?.detail, /tiles for 5x5/);
});
