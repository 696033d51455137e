// The pure parts of the player's controls, settings and sound: stored
// settings are checked field by field, rebinding moves a key, a gamepad
// snapshot reads as actions, and two views give the sounds between them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  actionsByKey, defaultSettings, loadSettings, normalizeSettings, rebind, saveSettings, SETTINGS_KEY,
} from '../lib/settings.js';
import { BUTTON, PadEdges, readPad } from '../lib/gamepad.js';
import { soundsBetween } from '../lib/view-sounds.js';
import { placeSound } from '../lib/sound.js';

/** A Storage for node. */
class MemoryStorage {
  constructor() { /** @type {Map<string, string>} */ this.m = new Map(); }
  /** @param {string} k */ getItem(k) { return this.m.get(k) ?? null; }
  /** @param {string} k @param {string} v */ setItem(k, v) { this.m.set(k, String(v)); }
}

test('settings: saved and loaded; junk, reserved keys and doubled keys fall back', () => {
  const storage = /** @type {any} */ (new MemoryStorage());
  assert.deepEqual(loadSettings(storage), defaultSettings());
  const s = defaultSettings();
  s.sensitivity = 2.5;
  s.invert = true;
  s.bindings = rebind(s.bindings, 'fire', 'KeyJ');
  saveSettings(s, storage);
  const back = loadSettings(storage);
  assert.equal(back.sensitivity, 2.5);
  assert.equal(back.invert, true);
  assert.deepEqual(back.bindings.fire, ['KeyJ']);
  assert.equal(actionsByKey(back.bindings).get('KeyJ'), 'fire');
  assert.equal(actionsByKey(back.bindings).get('Space'), undefined);

  storage.setItem(SETTINGS_KEY, '{not json');
  assert.deepEqual(loadSettings(storage), defaultSettings());
  const odd = normalizeSettings({
    sensitivity: 99, volume: -1, invert: 'yes', viewScale: 0.6,
    bindings: { fire: ['Escape', 'Digit1', 'KeyW', 7], moveForward: 'KeyW' },
  });
  assert.equal(odd.sensitivity, 1);
  assert.equal(odd.volume, 0.8);
  assert.equal(odd.invert, false);
  assert.equal(odd.viewScale, 1, 'only the offered view qualities');
  // Escape and digits are the page's; W stays with its first action (walk forward).
  assert.deepEqual(odd.bindings.fire, []);
  assert.deepEqual(odd.bindings.moveForward, ['KeyW', 'ArrowUp']);
});

test('rebinding takes the key from any other action', () => {
  const b = rebind(defaultSettings().bindings, 'use', 'KeyW');
  assert.deepEqual(b.use, ['KeyW']);
  assert.deepEqual(b.moveForward, ['ArrowUp']);
});

test('a gamepad in the standard mapping reads as actions; buttons report going down once', () => {
  const buttons = Array.from({ length: 17 }, () => ({ pressed: false, value: 0 }));
  const still = readPad({ axes: [0.1, -0.2, 0.15, 0], buttons });
  assert.equal(still.held.size, 0, 'inside the dead zone');
  assert.equal(still.turn, 0);
  buttons[BUTTON.rt] = { pressed: false, value: 0.9 };
  buttons[BUTTON.a] = { pressed: true, value: 1 };
  const moving = readPad({ axes: [-0.9, -1, 1, 0], buttons });
  assert.deepEqual([...moving.held].sort(), ['fire', 'moveForward', 'strafeLeft', 'use']);
  assert.equal(moving.turn, 1);
  const edges = new PadEdges();
  assert.deepEqual([...edges.pressed(new Set([BUTTON.y]))], [BUTTON.y]);
  assert.deepEqual([...edges.pressed(new Set([BUTTON.y]))], []);
});

/**
 * @param {number} tick
 * @param {any} [player]
 * @param {any[]} [enemies]
 * @param {string[]} [rows]
 */
function view(tick, player = {}, enemies = [], rows = ['#D#']) {
  return {
    tick,
    players: [{ id: 'p1', x: 1, y: 1, planeX: 0, planeY: 0.66, weapon: 1, weaponName: 'pistol',
      ammo: { bullets: 10 }, keys: 0, health: 100, alive: true, ...player }],
    enemies,
    grid: { version: rows.join('').includes('D') ? 1 : 2, rows },
  };
}

test('sounds between two ticks: shots, hits, deaths, alerts, doors, keys; none for a repeated tick', () => {
  const grunt = { kind: 'grunt', x: 3, y: 1, alive: true, hp: 30, aggroed: false };
  const a = view(10, {}, [grunt]);
  const b = view(11, { ammo: { bullets: 9 }, keys: 1 }, [{ ...grunt, hp: 20, aggroed: true }], ['#.#']);
  const names = soundsBetween(a, b).map((e) => e.name).sort();
  assert.deepEqual(names, ['door', 'enemy-alert', 'enemy-hit', 'key', 'shot-pistol']);
  assert.deepEqual(soundsBetween(a, view(10, { ammo: { bullets: 9 } })), [], 'the same tick again');
  assert.deepEqual(soundsBetween(a, view(13, { ammo: { bullets: 9 } })), [], 'a jump');
  const dead = soundsBetween(view(11, { health: 5 }, [grunt]), view(12, { alive: false, health: 0 }, [{ ...grunt, alive: false }]));
  assert.deepEqual(dead.map((e) => e.name).sort(), ['enemy-death', 'player-down']);
});

test('a sound is placed by where it is: right of the view pans right, far is quiet, out of hearing is silent', () => {
  const me = { x: 0, y: 0, planeX: 0, planeY: 1 };
  assert.ok(placeSound(me, 0, 5).pan > 0.5);
  assert.ok(placeSound(me, 0, -5).pan < -0.5);
  assert.ok(Math.abs(placeSound(me, 5, 0).pan) < 1e-9);
  assert.ok(placeSound(me, 1, 0).gain > placeSound(me, 10, 0).gain);
  assert.equal(placeSound(me, 100, 0).gain, 0);
  assert.deepEqual(placeSound(null, 100, 0), { pan: 0, gain: 1 });
});
