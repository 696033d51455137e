// The Players list's departures (web/lib/departures.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Departures } from '../lib/departures.js';

const names = { a: 'Ana', b: 'Tester', c: 'Tester', d: 'Bo' };
const shown = (/** @type {{id: string, left: boolean}[]} */ rows) => rows.map((r) => (r.left ? `${r.id} left` : r.id));

test('a player the roster lost stays listed as left, after everyone in the game', () => {
  const d = new Departures();
  assert.deepEqual(shown(d.follow(['a', 'b', 'd'], names)), ['a', 'b', 'd']);
  assert.deepEqual(shown(d.follow(['a', 'd'], names)), ['a', 'd', 'b left']);
  // Still left on the next change, however the roster moves on.
  assert.deepEqual(shown(d.follow(['d'], names)), ['d', 'b left', 'a left']);
});

test('a rejoin as the same player takes its row back', () => {
  const d = new Departures();
  d.follow(['a', 'b'], names);
  d.follow(['a'], names);
  assert.deepEqual(shown(d.follow(['a', 'b'], names)), ['a', 'b']);
});

test('a new player under a departed name takes that row back; other names do not', () => {
  const d = new Departures();
  d.follow(['a', 'b'], names);
  d.follow(['a'], names);
  assert.deepEqual(shown(d.follow(['a', 'd'], names)), ['a', 'd', 'b left'], 'Bo is someone else');
  assert.deepEqual(shown(d.follow(['a', 'd', 'c'], names)), ['a', 'd', 'c'], 'Tester is back under a new id');
});

test('a player without a name takes back no one', () => {
  const d = new Departures();
  const nameless = { a: 'Ana', b: '', c: '' };
  d.follow(['a', 'b'], nameless);
  d.follow(['a'], nameless);
  assert.deepEqual(shown(d.follow(['a', 'c'], nameless)), ['a', 'c', 'b left']);
});
