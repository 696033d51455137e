// The lobby page with 5,000 public sessions (created by create-sessions.mjs): the first screen shows the
// first page and the total (not thousands of rows), search finds the oldest
// session, "Show more" follows the cursor, filters are answered by the
// server, and the feed keeps rows and count true as sessions come and go.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OUTPUT, Proc, Rig, until } from './harness.mjs';

const SDP = 'v=0\r\no=- 4611 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sctp-port:5000\r\n';
const SESSIONS = 5_000;

const rig = new Rig();
after(() => rig.close());

test('the lobby page at 5,000 sessions: count, first page, search, Show more, live changes', { timeout: 300_000 }, async () => {
  // Limits raised through the server's flags: creates are not rate limited,
  // and sessions outlive the test without host refreshes.
  const url = await rig.lobby(['--disable-rate-limits', '--session-ttl', '900']);
  const browser = await rig.browser();
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  await page.goto(url + '/');
  const build = await page.locator('meta[name="campfire-build"]').getAttribute('content') ?? '';
  // 5,000 creates from Node inside the server namespace (this process
  // cannot reach it; the browser's six connections would be slow).
  const started = Date.now();
  const creator = new Proc('create-sessions', process.execPath, [
    fileURLToPath(new URL('./create-sessions.mjs', import.meta.url)), url, String(SESSIONS), build,
  ]);
  rig.procs.push(creator);
  await creator.waitLine(new RegExp(`^created ${SESSIONS}$`), 150_000);
  console.log(`created ${SESSIONS} sessions in ${Date.now() - started} ms`);
  await page.reload();
  await page.locator('body[data-live="true"]').waitFor({ timeout: 10_000 });
  const count = page.locator('#session-count');
  await until(async () => (await count.textContent()) === '5,000 sessions', 5_000, 'the total');
  const rows = page.locator('#session-rows tr');
  assert.equal(await rows.count(), 50, 'the first page only');
  assert.equal(await rows.first().locator('th').textContent(), 'Scale session 4999', 'newest first');
  assert.equal(await count.getAttribute('role'), 'status', 'the count is a live region');
  const more = page.getByRole('button', { name: 'Show more' });
  assert.equal(await more.isVisible(), true);
  await page.screenshot({ path: join(OUTPUT, 'lobby-scale.png') });

  // "Show more" follows the cursor: two more pages, in order, no repeats.
  await more.click();
  await until(async () => (await rows.count()) === 100, 5_000, 'the second page');
  await more.focus();
  await page.keyboard.press('Enter');
  await until(async () => (await rows.count()) === 150, 5_000, 'the third page (by keyboard)');
  const codes = await rows.evaluateAll((trs) => trs.map((tr) => /** @type {HTMLElement} */ (tr).dataset.code));
  assert.equal(new Set(codes).size, 150);
  const walked = await page.evaluate(async (build) => {
    const first = await (await fetch(`/lobby?limit=100&build=${encodeURIComponent(build)}`)).json();
    const second = await (await fetch(`/lobby?limit=50&build=${encodeURIComponent(build)}&cursor=${first.nextCursor}`)).json();
    return [...first.sessions, ...second.sessions].map((s) => s.code);
  }, build);
  assert.deepEqual(codes, walked, 'the rows are the lobby order, page after page');
  assert.equal(await page.locator('#shown-count').textContent(), 'Showing 150 of 5,000');

  // Live: a new session goes to the top and counts; removing a loaded one
  // (on the third page) takes its row and one from the count.
  const created = await page.evaluate(async ({ build, sdp }) => {
    const res = await fetch('/session', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Brand new', hostName: 'Zed', maxPlayers: 4, build, hostKind: 'player', offer: sdp }),
    });
    return res.json();
  }, { build, sdp: SDP });
  await until(async () => (await count.textContent()) === '5,001 sessions', 2_000, 'the count after an add');
  assert.equal(await rows.first().locator('th').textContent(), 'Brand new');
  assert.equal(await rows.count(), 151);
  const status = await page.evaluate(async ({ code, token }) => (await fetch(`/session/${code}`, {
    method: 'DELETE', headers: { authorization: `Bearer ${token}` },
  })).status, { code: created.code, token: created.hostToken });
  assert.equal(status, 204);
  await until(async () => (await count.textContent()) === '5,000 sessions', 2_000, 'the count after a delete');
  assert.equal(await page.locator(`tr[data-code="${created.code}"]`).count(), 0);
  assert.equal(await rows.count(), 150);

  // Search (debounced, answered by the server) finds the oldest session.
  const search = page.getByLabel('Search sessions');
  assert.equal(await search.getAttribute('type'), 'search');
  await search.fill('scale session 0000');
  await until(async () => (await count.textContent()) === '1 session', 3_000, 'the search result');
  assert.deepEqual(await rows.locator('th').allTextContents(), ['Scale session 0000']);
  assert.equal(await more.isVisible(), false, 'one page only');
  await search.fill('host 499');
  await until(async () => (await count.textContent()) === '11 sessions', 3_000, 'a host-name search');

  // "Not full" is answered by the server: every tenth session is full.
  await search.fill('');
  await until(async () => (await count.textContent()) === '5,000 sessions', 3_000, 'the search cleared');
  await page.getByLabel('not full').check();
  await until(async () => (await count.textContent()) === '4,500 sessions', 3_000, 'the not-full count');
  assert.equal(await rows.count(), 50);

  // Phone layout: the search, the count and Show more still fit.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(OUTPUT, 'lobby-scale-phone.png') });
  assert.equal(await search.isVisible(), true);
  assert.equal(await more.isVisible(), true);
  const box = await more.boundingBox();
  assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `Show more fits the phone: ${JSON.stringify(box)}`);
});
