// Two browsers and one Rust bot guest in one daemon session: closing one
// browser tab makes the other browser see that player removed after the
// disconnect grace, while the session plays on.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { DISCONNECT_GRACE_MS } from '../lib/facts.js';
import { Rig, guestState, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

test('two browsers and a bot guest; a closed tab is removed after the grace', { timeout: 150_000 }, async () => {
  const url = await rig.lobby();
  const daemon = rig.daemon(['--name', 'Three guests', '--bots', '1', '--start-when', '3', '--max-players', '6', '--levels', '2']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);

  // Join one after the other, each once the previous one is connected (the
  // daemon opens the next offer round then); the session starts when the
  // third guest is in.
  const [b1, b2] = [await rig.browser(), await rig.browser()];
  const p1 = await b1.newPage();
  await p1.goto(`${url}/play?code=${code}&name=Ada`);
  await until(async () => (await guestState(p1)).phase === 'await-init', 30_000, 'browser 1 to pass the hello');
  const p2 = await b2.newPage();
  await p2.goto(`${url}/play?code=${code}&name=Grace`);
  await until(async () => (await guestState(p2)).phase === 'await-init', 30_000, 'browser 2 to pass the hello');
  const bot = rig.botGuest(code, 'rusty');

  const s1 = await until(async () => {
    const s = await guestState(p1);
    return s.state === 'playing' && s.tick > 10 ? s : null;
  }, 30_000, 'the session to start');
  const s2 = await guestState(p2);
  assert.equal(s1.roster.length, 5, `roster ${s1.roster}`);
  assert.deepEqual(s2.roster, s1.roster);
  assert.notEqual(s1.me, s2.me);
  await p1.locator('#roster', { hasText: 'Grace' }).waitFor({ timeout: 2_000 });
  await p1.locator('#roster', { hasText: 'rusty' }).waitFor({ timeout: 2_000 });

  // Close browser 2's tab.
  const closedAt = Date.now();
  await p2.close();
  const gone = await until(async () => {
    const s = await guestState(p1);
    return s.roster.includes(s2.me) ? null : s;
  }, DISCONNECT_GRACE_MS + 15_000, 'the closed tab\'s player to leave the roster');
  const after = Date.now() - closedAt;
  assert.ok(after >= DISCONNECT_GRACE_MS - 1_000, `removed after ${after} ms, before the grace`);
  assert.equal(gone.roster.length, 4);
  assert.equal(gone.end, null, 'the session plays on');
  // Listed on as left, after everyone in the game.
  await p1.locator(`#roster li[data-player="${s2.me}"][data-left]`, { hasText: 'Grace — left' }).waitFor({ timeout: 2_000 });
  assert.equal(await p1.locator('#roster li').last().textContent(), 'Grace — left');
  await p1.getByRole('status').filter({ hasText: 'Grace left the session' }).waitFor({ timeout: 2_000 });
  // News of another player fades: the status line says what it said before.
  await until(async () => {
    const text = await p1.locator('#status').textContent();
    return text && !text.includes('Grace left') ? text : null;
  }, 10_000, 'the line about Grace to fade');
  // The bot guest is still in the session.
  assert.equal(bot.child.exitCode, null);
});
