// The real game in the browser: a browser guest (the Rust guest session and
// engine in WebAssembly, its player driven by the engine's bot) and a Rust
// bot guest play a whole level against host-daemon. The daemon's session
// report shows the browser player sending hash reports with zero desyncs.
// Screenshots of the first-person view and the automap go to test-output/.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OUTPUT, Rig, guestState, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

test('a browser guest and a bot guest play a level to the end with zero desyncs', { timeout: 240_000 }, async () => {
  const url = await rig.lobby();
  const daemon = rig.daemon(['--name', 'Wasm night', '--bots', '0', '--start-when', '2', '--levels', '1']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);

  const browser = await rig.browser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on('console', (m) => { if (process.env.CAMPFIRE_TEST_LOG) console.error(`[page] ${m.text()}`); });
  await page.goto(`${url}/play?code=${code}&name=Wasm&bot=1`);
  await until(async () => (await guestState(page)).phase === 'await-init', 30_000, 'the browser to pass the hello');
  const bot = rig.botGuest(code, 'rusty');

  const playing = await until(async () => {
    const s = await guestState(page);
    return s.state === 'playing' && s.tick > 60 ? s : null;
  }, 60_000, 'the level to run');
  assert.equal(playing.roster.length, 3, `roster ${playing.roster}`);
  await page.screenshot({ path: join(OUTPUT, 'play-first-person.png') });
  await page.locator('#view').focus();
  await page.keyboard.press('Tab');
  await until(async () => (await guestState(page)).mode === 'automap', 2_000, 'the automap');
  // Two frames drawn in automap mode: the screenshot shows the map.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.screenshot({ path: join(OUTPUT, 'play-automap.png') });
  await page.keyboard.press('Tab');

  const ended = await until(async () => {
    const s = await guestState(page);
    return s.end ? s : null;
  }, 180_000, 'the level to be completed');
  assert.deepEqual([ended.end.kind, ended.end.reason, ended.end.provisional], ['ended', 'completed', false]);
  assert.ok(ended.stats.hashReports > 0);
  assert.equal(ended.stats.outOfSequence, 0);

  // The end-of-run table fits a laptop's screen, and Play again takes the
  // player to the daemon's next session.
  await page.setViewportSize({ width: 1280, height: 720 });
  const box = await page.locator('#results').boundingBox();
  assert.ok(box && box.y >= 0 && box.x >= 0 && box.y + box.height <= 720 && box.x + box.width <= 1280,
    `the end-of-run table inside 1280x720: ${JSON.stringify(box)}`);
  assert.match(await page.locator('#results-rows').textContent() ?? '', /Wasm \(you\)/);
  await page.screenshot({ path: join(OUTPUT, 'play-end-1280x720.png') });
  const [, next] = await daemon.waitLine(/^session (\S+)/, 30_000, 1);
  assert.notEqual(next, code);
  await page.getByRole('button', { name: 'Play again' }).click();
  await page.waitForURL(new RegExp(`code=${next}`), { timeout: 20_000 });

  const [line] = await daemon.waitLine(/^\{"type":"session-report".*$/, 30_000);
  const report = JSON.parse(line);
  assert.equal(report.code, code);
  assert.equal(report.endReason, 'completed');
  assert.equal(report.levelsCompleted, 1);
  const mine = report.players.find((/** @type {any} */ p) => p.playerId === ended.me);
  assert.ok(mine, `the browser's player ${ended.me} is in the report: ${line}`);
  assert.equal(mine.kind, 'guest');
  assert.equal(mine.name, 'Wasm');
  assert.ok(mine.hashReports > 0, `hash reports from the browser: ${line}`);
  assert.equal(mine.desyncs, 0, line);
  const rusty = report.players.find((/** @type {any} */ p) => p.name === 'rusty');
  assert.ok(rusty && rusty.hashReports > 0 && rusty.desyncs === 0, line);
  assert.equal(report.players.find((/** @type {any} */ p) => p.kind === 'host')?.hashReports, 0);
  await bot.exited;
});
