import { test } from 'node:test';
import assert from 'node:assert/strict';
import { displayNameOf } from '../lib/name.js';

test('a player who chose no name gets the id-based fallback', () => {
  assert.equal(displayNameOf('guest-2', ''), 'Guest-2');
  assert.equal(displayNameOf('host', undefined), 'Host');
  assert.equal(displayNameOf('guest-1', 'Ada'), 'Ada');
  assert.equal(displayNameOf('spectator-3', ''), 'spectator-3');
});
