// Cross-build determinism: the bot campaign on the WebAssembly engine
// (web/tools/botmatch.mjs) and on the native engine (the botmatch example)
// agree on every summary field for several seeds and player counts.
// BOTMATCH_BIN is the native example's binary (scripts/test sets it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const TOOL = fileURLToPath(new URL('../tools/botmatch.mjs', import.meta.url));
const NATIVE = process.env.BOTMATCH_BIN;

/** @param {string} output */
const summaryOf = (output) => JSON.parse(output.trim().split('\n').at(-1) ?? '');

const CASES = [
  { seed: 7, players: 2, levels: 3 },
  { seed: 11, players: 1, levels: 2 },
  { seed: 3, players: 5, levels: 2 },
  { seed: 42, players: 3, levels: 2 },
];

test('BOTMATCH_BIN names the native botmatch example', () => {
  assert.ok(NATIVE, 'set BOTMATCH_BIN to target/debug/examples/botmatch (scripts/test does)');
});

for (const c of CASES) {
  test(`seed ${c.seed}, ${c.players} players, ${c.levels} levels: wasm and native agree`, { skip: !NATIVE }, () => {
    const args = ['--seed', String(c.seed), '--players', String(c.players), '--levels', String(c.levels)];
    const wasm = summaryOf(execFileSync(process.execPath, [TOOL, ...args], { encoding: 'utf8' }));
    const native = summaryOf(execFileSync(/** @type {string} */ (NATIVE), args, { encoding: 'utf8' }));
    for (const field of ['seed', 'players', 'levelsCompleted', 'ticks', 'worldHash']) {
      assert.deepEqual(wasm[field], native[field], `${field}: wasm ${wasm[field]} vs native ${native[field]}`);
    }
    assert.ok(wasm.ticks > 0 && wasm.ticksPerSecond > 0);
    assert.match(wasm.worldHash, /^[0-9a-f]{16}$/);
  });
}
