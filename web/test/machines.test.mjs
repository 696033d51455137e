// The joining and hosting machines in the wasm build against the scripts
// their native builds run (lobby-api/tests/joining_scripts.rs,
// web-bindings/tests/hosting_scripts.rs): the browser and the daemon join
// and host by the same rules, step for step.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WasmError, loadCampfire } from '../lib/wasm.js';

const read = (/** @type {string} */ path) => readFileSync(fileURLToPath(new URL(path, import.meta.url)));
const campfire = await loadCampfire(read('../campfire.wasm'));
const joining = JSON.parse(read('../../lobby-api/tests/fixtures/joining-scripts.json').toString());
const hosting = JSON.parse(read('../../web-bindings/tests/fixtures/hosting-scripts.json').toString());

/**
 * Runs one script's turns through `machine`: each event must answer the
 * turn's step or commands (`answer`), or throw the turn's error.
 * @param {{on: (event: object, at: number) => any}} machine
 * @param {any[]} turns
 * @param {string} answer the field holding the expected answer
 * @param {(turn: any, n: number) => void} [after] more checks after a turn
 */
function play(machine, turns, answer, after = () => {}) {
  turns.forEach((turn, n) => {
    if (turn.error != null) {
      assert.throws(() => machine.on(turn.event, turn.at),
        (e) => e instanceof WasmError && e.message === turn.error, `turn ${n}`);
    } else {
      assert.deepEqual(machine.on(turn.event, turn.at), turn[answer], `turn ${n}`);
    }
    after(turn, n);
  });
}

test('the scripts cover the rules', () => {
  assert.ok(joining.scripts.length >= 10);
  assert.ok(hosting.scripts.length >= 7);
});

for (const script of joining.scripts) {
  test(`wasm joining: ${script.name}`, () => {
    const machine = campfire.joining({ code: script.typed, spectate: script.spectate, build: joining.build }, 0);
    try {
      assert.deepEqual(machine.start(), script.start, 'the first step');
      play(machine, script.turns, 'step');
    } finally {
      machine.drop();
    }
  });
}

for (const script of hosting.scripts) {
  test(`wasm hosting: ${script.name}`, () => {
    const machine = campfire.hosting(script.settings);
    try {
      assert.deepEqual(machine.start(0), script.start, 'the first commands');
      play(machine, script.turns, 'commands', (turn, n) => {
        if ('wake' in turn) assert.equal(machine.nextWake(turn.at), turn.wake, `turn ${n}'s wake-up`);
      });
    } finally {
      machine.drop();
    }
  });
}

test('bad requests and settings are WasmErrors; a dropped machine answers none', () => {
  assert.throws(() => campfire.joining(/** @type {any} */ ({ code: 'ABCDEFGH', other: 1 }), 0), WasmError);
  assert.throws(() => campfire.hosting(/** @type {any} */ ({ connectDeadlineMs: -5 })), WasmError);
  assert.throws(() => campfire.hosting(/** @type {any} */ ({ guestSeats: -1 })), WasmError);
  const machine = campfire.hosting({});
  machine.drop();
  assert.throws(() => machine.nextWake(0), WasmError);
});
