// The joining machine in the wasm build against the scripted lobby answers
// that lobby-api/tests/joining_scripts.rs runs through the native build:
// the browser and the daemon join by the same rules, step for step.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WasmError, loadCampfire } from '../lib/wasm.js';

const campfire = await loadCampfire(readFileSync(fileURLToPath(new URL('../campfire.wasm', import.meta.url))));
const doc = JSON.parse(readFileSync(fileURLToPath(new URL('../../lobby-api/tests/fixtures/joining-scripts.json', import.meta.url)), 'utf8'));

test('the scripts cover the joining rules', () => {
  assert.ok(doc.scripts.length >= 10);
});

for (const script of doc.scripts) {
  test(`wasm joining: ${script.name}`, () => {
    const joining = campfire.joining({ code: script.typed, spectate: script.spectate, build: doc.build }, 0);
    try {
      assert.deepEqual(joining.start(), script.start, 'the first step');
      script.turns.forEach((turn, n) => {
        if (turn.error != null) {
          assert.throws(() => joining.on(turn.event, turn.at),
            (e) => e instanceof WasmError && e.message === turn.error, `turn ${n}`);
        } else {
          assert.deepEqual(joining.on(turn.event, turn.at), turn.step, `turn ${n}`);
        }
      });
    } finally {
      joining.drop();
    }
  });
}

test('a bad request is a WasmError', () => {
  assert.throws(() => campfire.joining(/** @type {any} */ ({ code: 'ABCDEFGH', other: 1 }), 0), WasmError);
});
