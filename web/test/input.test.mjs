import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_MOUSE_DELTA_X, NEUTRAL_INPUT, WEAPON_SLOT_COUNT, isNeutral, sanitizeInput } from '../lib/input.js';

test('local signals never survive sanitizing; real input does', () => {
  const clean = sanitizeInput({
    escape: true, blur: true, pointerUnlock: true, click: true, fire: true, moveForward: true,
    mouseDeltaX: Number.NaN, weaponSelect: WEAPON_SLOT_COUNT,
  });
  assert.equal(clean.escape, false);
  assert.equal(clean.blur, false);
  assert.equal(clean.pointerUnlock, false);
  assert.equal(clean.click, false);
  assert.equal(clean.fire, true);
  assert.equal(clean.moveForward, true);
  assert.equal(clean.mouseDeltaX, 0);
  assert.equal(clean.weaponSelect, null);
});

test('values are clamped, coerced, and unknown fields dropped', () => {
  assert.equal(sanitizeInput({ mouseDeltaX: 1e12 }).mouseDeltaX, MAX_MOUSE_DELTA_X);
  assert.equal(sanitizeInput({ mouseDeltaX: -1e12 }).mouseDeltaX, -MAX_MOUSE_DELTA_X);
  assert.equal(sanitizeInput({ mouseDeltaX: 12.5 }).mouseDeltaX, 12.5);
  assert.equal(sanitizeInput({ weaponSelect: 2 }).weaponSelect, 2);
  assert.equal(sanitizeInput({ weaponSelect: 1.5 }).weaponSelect, null);
  assert.equal(sanitizeInput({ weaponSelect: -1 }).weaponSelect, null);
  // @ts-ignore: what a careless game might pass.
  const odd = sanitizeInput({ fire: 'yes', cheat: 'IDDQD' });
  assert.equal(odd.fire, false);
  assert.equal('cheat' in odd, false);
  assert.deepEqual(Object.keys(odd).sort(), Object.keys(NEUTRAL_INPUT).sort());
  assert.ok(isNeutral(sanitizeInput(undefined)));
});

test('sanitizing is idempotent', () => {
  for (let i = 0; i < 200; i++) {
    const raw = {
      moveForward: i % 2 === 0, fire: i % 3 === 0, escape: i % 5 === 0, click: true,
      mouseDeltaX: (i - 100) * 97.3, weaponSelect: (i % 9) - 1,
    };
    const once = sanitizeInput(raw);
    assert.deepEqual(sanitizeInput(once), once);
  }
});
