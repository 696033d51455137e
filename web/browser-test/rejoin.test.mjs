// A browser guest whose connection to the host fails mid-level rejoins by
// itself (issue 25): the page joins the session once more on a fresh
// connection with the rejoin token the host gave it, and the host hands it
// back the same player. The failure is real: a blackhole route in the
// browser's network namespace drops everything the browser sends to the
// server's address (the host daemon and the lobby), until the page has
// noticed; then the route goes and the page's rejoin gets through.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Rig, SERVER_IP, guestState, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

/** The route that cuts the browser off the server's address. */
const BLACKHOLE = ['blackhole', `${SERVER_IP}/32`];

/** @param {string[]} args `ip route` arguments (this process runs in the browser's namespace) */
function route(args) {
  execFileSync('ip', ['route', ...args], { stdio: 'pipe' });
}

test('a browser guest whose connection fails rejoins by itself as the same player', { timeout: 240_000 }, async () => {
  const url = await rig.lobby();
  const daemon = rig.daemon(['--name', 'Flaky link', '--bots', '1', '--start-when', '1', '--levels', '1']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
  const browser = await rig.browser();
  const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
  page.on('console', (m) => { if (process.env.CAMPFIRE_TEST_LOG) console.error(`[page] ${m.text()}`); });
  await page.goto(`${url}/play?code=${code}&name=Flaky&bot=1`);
  const playing = await until(async () => {
    const s = await guestState(page);
    return s.state === 'playing' && s.tick > 90 ? s : null;
  }, 60_000, 'the level to run');
  assert.equal(playing.rejoin, 'none');

  route(['add', ...BLACKHOLE]);
  let lost;
  try {
    lost = await until(async () => {
      const s = await guestState(page);
      return s.hostLost ? s : null;
    }, 30_000, 'the browser to notice the lost connection');
  } finally {
    route(['del', ...BLACKHOLE]);
  }
  assert.notEqual(lost.rejoin, 'none', 'the rejoin starts when the connection is lost');

  const back = await until(async () => {
    const s = await guestState(page);
    return s.resumed && s.phase === 'running' && s.tick > lost.tick + 30 ? s : null;
  }, 30_000, 'the page to rejoin');
  assert.equal(back.me, playing.me, 'the same player');
  assert.equal(back.rejoin, 'done');
  assert.ok(back.joinedAtTick > playing.tick, `resumed from the state at tick ${back.joinedAtTick}`);
  assert.equal(back.end, null);

  // It plays the level to the end; the host counted one rejoin, no
  // removal, and no desync.
  const ended = await until(async () => {
    const s = await guestState(page);
    return s.end ? s : null;
  }, 180_000, 'the level to end');
  assert.equal(ended.end.kind, 'ended');
  assert.notEqual(ended.end.reason, 'host-disconnected');
  const [line] = await daemon.waitLine(/^\{"type":"session-report".*$/, 30_000);
  const report = JSON.parse(line);
  const mine = report.players.find((/** @type {any} */ p) => p.playerId === playing.me);
  assert.ok(mine, line);
  assert.equal(mine.rejoins, 1, line);
  assert.equal(mine.desyncs, 0, line);
  assert.ok(mine.hashReports > 0, line);
});
