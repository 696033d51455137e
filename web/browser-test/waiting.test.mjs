// A guest waiting for the start sees who is in, the seats left and what
// the start waits for (the host's `waiting-room` message), and the page
// moves on to the game when the last player arrives.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OUTPUT, Rig, guestState, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

test('a waiting guest sees the players in, the seats left and how many more the start needs', { timeout: 120_000 }, async () => {
  const url = await rig.lobby();
  const daemon = rig.daemon(['--name', 'Waiting room', '--bots', '0', '--start-when', '2', '--max-players', '4', '--levels', '1']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
  const browser = await rig.browser();
  const page = await (await browser.newContext({ viewport: { width: 1100, height: 760 } })).newPage();
  page.on('pageerror', (e) => console.error(`[page] page error: ${e.message}`));
  await page.goto(`${url}/play?code=${code}&name=Ana`);
  const first = await until(async () => {
    const s = await guestState(page);
    return s.waitingRoom?.players.includes('Ana') ? s.waitingRoom : null;
  }, 30_000, 'the waiting room with Ana in it');
  assert.equal(first.guestsNeeded, 1);
  assert.equal(first.maxPlayers, 4);
  assert.ok(await page.locator('#waiting').isVisible());
  const shown = await page.locator('#waiting-roster li').allTextContents();
  assert.deepEqual(shown.slice(-1), ['Ana (you)'], 'the guest is marked as itself');
  assert.equal(shown.length, first.players.length);
  assert.match(await page.locator('#waiting-count').textContent() ?? '', new RegExp(`${first.players.length} of 4 players are in: ${4 - first.players.length} seats? left`));
  assert.equal(await page.locator('#waiting-start').textContent(), 'The game starts when 1 more player joins.');
  await page.screenshot({ path: join(OUTPUT, 'waiting-room.png') });

  rig.botGuest(code, 'rusty');
  await until(async () => (await guestState(page)).phase === 'running', 60_000, 'the start');
  assert.ok(!(await page.locator('#waiting').isVisible()), 'the waiting room is gone once the game runs');
});
