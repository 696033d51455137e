// Who is in a lobby entry (issue 46): a daemon session says how many of its
// seats bots hold, and a relay session what its start waits for, in the
// API and on the lobby page.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Rig } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

test('the lobby says how many bots a session holds and what its start waits for', { timeout: 120_000 }, async () => {
  const url = await rig.lobby();
  const daemon = rig.daemon(['--name', 'Bot night', '--bots', '2', '--start-when', '1', '--levels', '1']);
  const relay = rig.relay(['--name', 'Relay room', '--start-when', '2', '--levels', '1']);
  const [, botCode] = await daemon.waitLine(/^session (\S+)/, 60_000);
  const [, relayCode] = await relay.waitLine(/^session (\S+)/, 60_000);

  const lobby = await (await fetch(`${url}/lobby`)).json();
  const bots = lobby.sessions.find((/** @type {any} */ s) => s.code === botCode);
  const room = lobby.sessions.find((/** @type {any} */ s) => s.code === relayCode);
  // The daemon's own player and two bots; it starts with one guest more.
  assert.deepEqual([bots.players, bots.bots, bots.startAt], [3, 2, 4]);
  assert.deepEqual([room.players, room.bots, room.startAt], [0, 0, 2]);

  const browser = await rig.browser();
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  await page.goto(`${url}/`);
  const players = (/** @type {string} */ code) => page.locator(`tr[data-code="${code}"] td[data-label="Players"]`);
  await players(botCode).waitFor({ timeout: 10_000 });
  assert.equal(await players(botCode).textContent(), '3/8 · 2 bots · starts at 4 players');
  assert.equal(await players(relayCode).textContent(), '0/8 · starts at 2 players');
});
