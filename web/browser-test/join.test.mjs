// A browser joins a daemon-hosted session from the lobby page, receives the
// map, moves its player with the keyboard, and keeps ticking while hidden.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OUTPUT, Rig, guestState, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

test('a browser joins from the lobby page, moves, and keeps ticking while hidden', { timeout: 120_000 }, async () => {
  const url = await rig.lobby();
  const daemon = rig.daemon(['--name', 'Bot night', '--bots', '1', '--start-when', '1', '--levels', '2']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);

  const browser = await rig.browser();
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  const page = await context.newPage();
  page.on('console', (m) => { if (process.env.CAMPFIRE_TEST_LOG) console.error(`[page] ${m.text()}`); });
  await page.goto(url + '/');
  await page.getByLabel('Your name').fill('Ada');
  await page.getByLabel('Your name').press('Tab');
  const row = page.locator(`tr[data-code="${code}"]`);
  await row.waitFor({ timeout: 5_000 });
  await row.getByRole('link', { name: /^Join/ }).click();
  await page.waitForURL(/\/play\?code=/, { timeout: 5_000 });

  // Setup completes and the session starts (one guest was all it waited for).
  const playing = await until(async () => {
    const s = await guestState(page);
    return s.state === 'playing' && s.pos && s.snapshotTick !== null ? s : null;
  }, 30_000, 'the session to start and a first snapshot');
  assert.equal(playing.phase, 'running');
  assert.match(playing.me, /^guest-/);
  assert.ok(playing.roster.includes(playing.me));
  assert.ok(playing.roster.length >= 2, `roster ${playing.roster}`);
  await page.locator('#roster', { hasText: 'Ada (you)' }).waitFor({ timeout: 2_000 });

  // Forward for one second moves the player, as the host's snapshots confirm
  // (the guest's engine is corrected by each snapshot it applies).
  const before = await until(async () => {
    const s = await guestState(page);
    return s.snapshotTick > playing.snapshotTick ? s : null;
  }, 5_000, 'a fresh snapshot');
  await page.locator('#view').focus();
  // The first view that shows the move, watched on every animation frame:
  // a predicted one, ahead of the shared simulation it was run from.
  const firstMove = page.evaluate((from) => new Promise((resolve) => {
    const check = () => {
      const s = /** @type {any} */ (window).campfire.state();
      if (s.pos && Math.hypot(s.pos.x - from.x, s.pos.y - from.y) > 0.01) resolve(s);
      else requestAnimationFrame(check);
    };
    check();
  }), before.pos);
  await page.keyboard.down('ArrowUp');
  const shown = await firstMove;
  assert.ok(shown.viewTick > shown.confirmedTick,
    `the move first showed in a predicted view: tick ${shown.viewTick}, confirmed ${shown.confirmedTick}`);
  await new Promise((r) => setTimeout(r, 1000));
  await page.keyboard.up('ArrowUp');
  const moved = await until(async () => {
    const s = await guestState(page);
    if (s.snapshotTick < before.snapshotTick + 60) return null;
    return s;
  }, 6_000, 'two more snapshots');
  const dist = Math.hypot(moved.pos.x - before.pos.x, moved.pos.y - before.pos.y);
  assert.ok(dist > 0.5, `the player moved only ${dist} tiles (from ${JSON.stringify(before.pos)} to ${JSON.stringify(moved.pos)})`);
  assert.equal(moved.stats.snapshotMismatches, 0);
  assert.equal(moved.end, null);
  await page.screenshot({ path: join(OUTPUT, 'guest-page.png') });

  // Escape opens the local "Leave session?" prompt; the session ticks on,
  // and staying returns to the game.
  await page.keyboard.press('Escape');
  const prompt = page.getByRole('dialog', { name: 'Leave session?' });
  await prompt.waitFor({ timeout: 2_000 });
  const atPrompt = await guestState(page);
  await until(async () => (await guestState(page)).tick >= atPrompt.tick + 30, 3_000, 'ticks while the prompt is open');
  await page.getByRole('button', { name: 'Stay' }).click();
  await prompt.waitFor({ state: 'hidden', timeout: 2_000 });
  assert.equal((await guestState(page)).phase, 'running');

  // Hide the tab. Headless Chromium under Playwright keeps every page
  // "visible" (a second tab, a minimized window and Playwright's
  // backgrounding flags removed were all tried), so the test does to the page
  // what hiding does: visibility turns hidden, requestAnimationFrame stops,
  // and timers are throttled to once a second. The session must keep pace
  // anyway, because bundles are applied from the data channel's events.
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
    window.requestAnimationFrame = () => 0;
    const setTimeoutNow = window.setTimeout.bind(window);
    const setIntervalNow = window.setInterval.bind(window);
    // @ts-ignore: the throttled timers keep the signatures.
    window.setTimeout = (fn, ms, ...rest) => setTimeoutNow(fn, Math.max(Number(ms) || 0, 1000), ...rest);
    // @ts-ignore
    window.setInterval = (fn, ms, ...rest) => setIntervalNow(fn, Math.max(Number(ms) || 0, 1000), ...rest);
    document.dispatchEvent(new Event('visibilitychange'));
  });
  const hidden = await until(async () => {
    const s = await guestState(page);
    return s.visibility === 'hidden' ? s : null;
  }, 5_000, 'the guest tab to be hidden');
  const later = await until(async () => {
    const s = await guestState(page);
    return s.tick >= hidden.tick + 60 ? s : null;
  }, 3_500, 'sixty ticks (two seconds) while hidden');
  assert.equal(later.visibility, 'hidden');
  assert.equal(later.end, null);
  assert.equal(later.stats.outOfSequence, 0);
});
