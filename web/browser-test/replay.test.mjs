// Watching a replay in the browser (issue 25): a replay file picked on
// /play plays in the first-person view, at a chosen speed, through a
// chosen player's eyes, and ends saying it reproduced the recorded end;
// /play?replay=URL&tick=N loads one from a URL and stops at tick N (a
// desync warning names its tick). The file is the one web/test/replay.test.mjs
// checks against the native `host-daemon replay`.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BROWSER_IP, OUTPUT, Rig, guestState, until } from './harness.mjs';

const FIXTURE = 'test/fixtures/short-level.replay';
const TEXT = readFileSync(FIXTURE, 'utf8');
const END = JSON.parse(TEXT.trim().split('\n').pop() ?? '{}').end;

const rig = new Rig();
/** @type {import('node:http').Server|null} */
let files = null;
after(() => {
  files?.close();
  return rig.close();
});

test('a picked replay file plays to its recorded end at 8x, through a chosen player\'s eyes', { timeout: 120_000 }, async () => {
  const url = await rig.lobby();
  const browser = await rig.browser();
  const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
  await page.goto(`${url}/play`);
  await page.locator('#replay-file').setInputFiles(FIXTURE);
  const started = await until(async () => {
    const s = await guestState(page);
    return s.replay ? s : null;
  }, 10_000, 'the replay to start');
  assert.equal(started.state, 'replay');
  assert.equal(started.replay.lastTick, END.ticks);
  assert.ok(started.replay.roster.length >= 2, `roster ${started.replay.roster}`);
  await page.locator('#replay-speed').selectOption('8');
  const other = started.replay.roster[1];
  await page.locator('#replay-player').selectOption(other);
  const watching = await guestState(page);
  assert.equal(watching.replay.player, other);
  assert.equal(watching.replay.speed, 8);
  // The Player menu and the Players list name every player alike: as the
  // session did (the watched one marked).
  const menu = await page.locator('#replay-player option').allTextContents();
  const listed = (await page.locator('#roster li').allTextContents())
    .map((t) => t.replace(/ — (down|left)$/, '').replace(/ \(watching\)$/, ''));
  assert.deepEqual(listed.slice(0, menu.length), menu);
  assert.match(await page.locator(`#roster li[data-player="${other}"]`).textContent() ?? '', / \(watching\)/);
  const ended = await until(async () => {
    const s = await guestState(page);
    return s.replay.ended ? s : null;
  }, 30_000, 'the replay to end');
  assert.equal(ended.replay.tick, END.ticks);
  assert.equal(ended.replay.matches, true);
  assert.equal(ended.replay.finalWorldHash, END.finalWorldHash);
  assert.match(ended.said, /reproduced/);
  assert.equal(await page.locator('#replay-toggle').textContent(), 'Play again');
  assert.ok(ended.pos, 'the chosen player is drawn');
  await page.screenshot({ path: join(OUTPUT, 'replay-end.png') });
});

test('/play?replay=URL&tick=N stops at tick N; Play goes on from there', { timeout: 120_000 }, async () => {
  // The file from another origin, as a tester's link to a recording.
  // Served on the browser namespace's own address: loopback would be a
  // more private address space than the page's, which Chromium refuses.
  files = createServer((_req, res) => {
    res.writeHead(200, { 'access-control-allow-origin': '*', 'content-type': 'text/plain' });
    res.end(TEXT);
  });
  await new Promise((resolve) => files?.listen(0, BROWSER_IP, () => resolve(null)));
  const address = /** @type {import('node:net').AddressInfo} */ (files.address());
  const url = await rig.lobby();
  const browser = await rig.browser();
  const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
  const fileUrl = `http://${BROWSER_IP}:${address.port}/short-level.replay`;
  await page.goto(`${url}/play?replay=${encodeURIComponent(fileUrl)}&tick=120`);
  const stopped = await until(async () => {
    const s = await guestState(page);
    if (s.error) throw new Error(`the page failed: ${s.error}`);
    return s.replay ? s : null;
  }, 10_000, 'the replay to load');
  assert.equal(stopped.replay.tick, 120);
  assert.equal(stopped.replay.playing, false);
  assert.match(stopped.said, /stopped at tick 120/);
  // Still there ten frames later (a playing replay moves a tick a frame
  // or more): paused.
  await page.evaluate(() => new Promise((r) => {
    let left = 10;
    const frame = () => (--left > 0 ? requestAnimationFrame(frame) : r(null));
    requestAnimationFrame(frame);
  }));
  assert.equal((await guestState(page)).replay.tick, 120);
  await page.locator('#replay-toggle').click();
  const going = await until(async () => {
    const s = await guestState(page);
    return s.replay.tick > 130 ? s : null;
  }, 10_000, 'the replay to play on');
  assert.equal(going.replay.playing, true);
  await page.locator('#replay-tick').fill('60');
  await page.locator('#replay-go').click();
  const back = await guestState(page);
  assert.equal(back.replay.tick, 60, 'going back re-simulates from the start');
  assert.equal(back.replay.playing, false);
});
