// The join's one retry (web/lib/join-retry.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JOIN_ATTEMPTS, withOneRetry } from '../lib/join-retry.js';
import { LobbyError } from '../lib/lobby-error.js';

const timeout = () => new LobbyError(0, 'connect_timeout', "the host's data channels did not open within 20 s");

test('a join whose connection failed is tried once more, and the second try counts', async () => {
  const calls = [];
  const heard = [];
  const got = await withOneRetry(async (n) => {
    calls.push(n);
    if (n === 1) throw timeout();
    return 'connected';
  }, (e) => heard.push(/** @type {any} */ (e).code));
  assert.equal(got, 'connected');
  assert.deepEqual(calls, [1, 2]);
  assert.deepEqual(heard, ['connect_timeout']);
});

test('a second failure reaches the player, and there is no third try', async () => {
  let calls = 0;
  await assert.rejects(withOneRetry(async () => {
    calls++;
    throw timeout();
  }), (e) => /** @type {any} */ (e).code === 'connect_timeout');
  assert.equal(calls, JOIN_ATTEMPTS);
});

test("the lobby's refusals are answers, not retried", async () => {
  for (const code of ['no_such_session', 'rate_limited', 'session_ended', 'no_open_round']) {
    let calls = 0;
    await assert.rejects(withOneRetry(async () => {
      calls++;
      throw new LobbyError(404, code, code);
    }));
    assert.equal(calls, 1, code);
  }
});
