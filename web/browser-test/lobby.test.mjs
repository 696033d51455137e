// The lobby page lists a new public daemon session live (within 2 s, no
// reload), marks it "In progress" when the session starts, and a browser
// joins the running game from it (late join); another watches it (Watch:
// a spectator, no seat, keys cycle whose view is shown).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OUTPUT, Rig, chooseName, guestState, until } from './harness.mjs';

const SDP = 'v=0\r\no=- 4611 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sctp-port:5000\r\n';

const rig = new Rig();
after(() => rig.close());

test('the lobby page shows a new daemon session within 2 s, marks it In progress at the start, a browser joins the running game and another watches it', { timeout: 180_000 }, async () => {
  const url = await rig.lobby();
  const browser = await rig.browser();
  const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
  let navigations = 0;
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations += 1; });
  await page.goto(url + '/');
  await page.locator('body[data-live="true"]').waitFor({ timeout: 10_000 });
  assert.equal(await page.locator('#empty').isVisible(), true, 'the empty state shows first');

  const daemon = rig.daemon(['--name', 'Lobby test', '--bots', '1', '--start-when', '1', '--max-players', '4']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
  const printedAt = Date.now();
  const row = page.locator(`tr[data-code="${code}"]`);
  await row.waitFor({ timeout: 2_000 });
  const shownAfter = Date.now() - printedAt;
  assert.ok(shownAfter <= 2_000, `listed after ${shownAfter} ms`);

  // The entry's columns.
  const cells = await row.locator('th, td').allTextContents();
  assert.equal(cells[0], 'Lobby test');
  assert.equal(cells[2], '2/4 · 1 bot · starts at 3 players', 'the host, its bot, and the start rule');
  assert.equal(cells[3], 'normal');
  assert.equal(cells[4], 'generated');
  assert.match(cells[5], /daemon/);
  assert.equal(cells[6], 'just now');
  const href = await row.getByRole('link', { name: 'Join Lobby test' }).getAttribute('href');
  assert.equal(href, `/play?code=${code}`);
  const watchHref = await row.getByRole('link', { name: 'Watch Lobby test' }).getAttribute('href');
  assert.equal(watchHref, `/play?code=${code}&spectate=1`);

  // Filters: a full session of another build (published by this page's
  // own fetch) shows only with both filters off.
  const created = await page.evaluate(async (sdp) => {
    const res = await fetch('/session', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Old and full', hostName: 'Eve', players: 2, maxPlayers: 2, build: 'campfire-0.0.1', hostKind: 'player', offer: sdp }),
    });
    return res.status;
  }, SDP);
  assert.equal(created, 201);
  const other = page.locator('tr', { hasText: 'Old and full' });
  const byBuild = page.getByLabel(/compatible with my build/);
  const bySpace = page.getByLabel('not full');
  // The server applies the filters: wait for each answer (data-loaded moves on).
  const loaded = () => page.evaluate(() => document.body.dataset.loaded);
  const settled = async (/** @type {() => Promise<void>} */ act) => {
    const before = await loaded();
    await act();
    await until(async () => (await loaded()) !== before, 2_000, 'the filtered listing');
  };
  await settled(() => bySpace.check());
  assert.equal(await other.count(), 0);
  await settled(() => byBuild.uncheck());
  assert.equal(await other.count(), 0, 'full: hidden by "not full"');
  await settled(() => bySpace.uncheck());
  await other.waitFor({ timeout: 2_000 });
  assert.match((await other.locator('td').allTextContents()).join('|'), /Eve\|2\/2\|.*player/);
  assert.equal(await page.locator('#session-count').textContent(), '2 sessions');
  await settled(() => byBuild.check());
  assert.equal(await other.count(), 0, 'another build: hidden by the build filter');
  assert.equal(await page.locator('#session-count').textContent(), '1 session');
  assert.equal(await row.count(), 1);
  await page.screenshot({ path: join(OUTPUT, 'lobby-page.png'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(OUTPUT, 'lobby-page-phone.png'), fullPage: true });
  assert.equal(await row.getByRole('link', { name: 'Join Lobby test' }).isVisible(), true);

  // A bot guest joins; the session starts and stays listed, in progress.
  rig.botGuest(code, 'lobby-bot');
  await row.locator('.in-progress', { hasText: 'In progress' }).waitFor({ timeout: 30_000 });
  assert.equal(navigations, 1, 'the page never reloaded');
  await page.setViewportSize({ width: 1100, height: 700 });
  await page.screenshot({ path: join(OUTPUT, 'lobby-in-progress.png') });

  // A browser joins the running game from the lobby page: it gets the
  // level as it stands and plays on from there with the others.
  await row.getByRole('link', { name: 'Join Lobby test' }).click();
  await page.waitForURL(/\/play\?code=/, { timeout: 5_000 });
  // This browser never chose a name: the page asks before it joins.
  await chooseName(page, 'Lobby player');
  const joined = await until(async () => {
    const s = await guestState(page);
    return s.state === 'playing' && s.joinedAtTick !== null ? s : null;
  }, 30_000, 'the browser to join the running game');
  assert.ok(joined.joinedAtTick > 0, `joined at tick ${joined.joinedAtTick}`);
  assert.match(joined.me, /^guest-/);
  assert.ok(joined.roster.includes(joined.me), `roster ${joined.roster}`);
  assert.equal(joined.roster.length, 4, `host, bot, bot guest and the browser: ${joined.roster}`);
  assert.match(joined.said, /in progress/i);
  const later = await until(async () => {
    const s = await guestState(page);
    return s.tick >= joined.tick + 90 && s.snapshotTick > joined.joinedAtTick ? s : null;
  }, 15_000, 'three seconds of the running game');
  assert.equal(later.end, null);
  assert.equal(later.stats.snapshotMismatches, 0, 'the joiner runs the host\'s world exactly');
  assert.equal(later.stats.outOfSequence, 0);

  // Another browser watches from the lobby page: a spectator outside the
  // roster, shown the players' views in turn, on the host's world.
  const viewer = await browser.newPage({ viewport: { width: 1100, height: 700 } });
  await viewer.goto(url + '/');
  await viewer.locator(`tr[data-code="${code}"]`).getByRole('link', { name: 'Watch Lobby test' }).click();
  await viewer.waitForURL(/spectate=1/, { timeout: 5_000 });
  await chooseName(viewer, 'Viewer');
  const watching = await until(async () => {
    const s = await guestState(viewer);
    return s.state === 'watching' && s.tick > 0 ? s : null;
  }, 30_000, 'the spectator to see the running game');
  assert.equal(watching.spectator, true);
  assert.match(watching.me, /^spectator-/);
  assert.equal(watching.roster.length, 4, `the spectator is not in the roster: ${watching.roster}`);
  assert.ok(!watching.roster.includes(watching.me));
  assert.ok(watching.roster.includes(watching.watching), `watching ${watching.watching}`);
  assert.ok(watching.joinedAtTick > joined.joinedAtTick);
  assert.match(watching.said, /Watching the game/);
  await viewer.locator('#view').focus();
  const first = watching.watching;
  await viewer.keyboard.press('ArrowRight');
  const second = (await guestState(viewer)).watching;
  assert.notEqual(second, first, 'ArrowRight shows the next player');
  assert.equal(await viewer.locator('#hud-watching').isVisible(), true);
  await viewer.keyboard.press('Tab');
  assert.equal((await guestState(viewer)).mode, 'automap');
  // The player in the game hears who watches.
  await until(async () => ((await guestState(page)).spectators.length === 1 ? true : null), 10_000, 'the player to hear of the spectator');
  assert.match(await page.locator('#spectators').textContent() ?? '', /Watching: /);
  const watched = await until(async () => {
    const s = await guestState(viewer);
    return s.tick >= watching.tick + 90 && s.snapshotTick > watching.joinedAtTick ? s : null;
  }, 15_000, 'three seconds of watching');
  assert.equal(watched.end, null);
  assert.equal(watched.stats.snapshotMismatches, 0, 'the spectator runs the host\'s world exactly');
  await viewer.screenshot({ path: join(OUTPUT, 'spectator-automap.png') });
});

test('join by code validates what was typed', { timeout: 60_000 }, async () => {
  const browser = rig.browsers[0];
  const page = await browser.newPage();
  await page.goto(rig.url + '/');
  await page.getByLabel('Session code').fill('not a code');
  await page.getByRole('button', { name: 'Join by code' }).click();
  const alert = page.getByRole('alert');
  await alert.filter({ hasText: 'is not a session code' }).waitFor({ timeout: 2_000 });
  assert.equal(await page.getByLabel('Session code').getAttribute('aria-invalid'), 'true');
  // A well-formed code opens the game URL with it, upper-cased.
  await page.getByLabel('Session code').fill('abcd-efgh');
  await page.getByLabel('Session code').press('Enter');
  await page.waitForURL(/\/play\?code=ABCDEFGH$/, { timeout: 5_000 });
});
