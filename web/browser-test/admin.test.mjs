// The moderators' page (/admin) in Chromium: a player reports a session
// from the lobby page; a moderator signs in on a phone-sized screen, finds
// it first (most reported), ends it and blocks the address it came from;
// the lobby page in another context loses it live, and that address can
// no longer create sessions.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OUTPUT, Rig } from './harness.mjs';

const SDP = 'v=0\r\no=- 4611 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sctp-port:5000\r\n';
const TOKEN = 'browser-test-moderator-0123456789';

const rig = new Rig();
after(() => rig.close());

/**
 * Creates a public session of the page's own build from `page` (its
 * browser's address); the status.
 * @param {import('playwright-core').Page} page
 * @param {string} name
 */
function create(page, name) {
  return page.evaluate(async ([sdp, n]) => {
    const res = await fetch('/session', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: n, hostName: 'Eve', maxPlayers: 4, hostKind: 'player', offer: sdp,
        build: document.querySelector('meta[name="campfire-build"]')?.getAttribute('content'),
      }),
    });
    return res.status;
  }, [SDP, name]);
}

test('a moderator finds the reported session, ends it and blocks its address; the lobby page loses it', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'campfire-admin-'));
  const tokens = join(dir, 'admin-tokens');
  writeFileSync(tokens, `moderator:${TOKEN}\n`);
  const url = await rig.lobby(['--admin-token-file', tokens]);
  const browser = await rig.browser();

  const lobby = await (await browser.newContext({ viewport: { width: 1100, height: 700 } })).newPage();
  await lobby.goto(url + '/');
  await lobby.locator('body[data-live="true"]').waitFor({ timeout: 10_000 });
  assert.equal(await create(lobby, 'Rude room'), 201);
  assert.equal(await create(lobby, 'Nice room'), 201);
  const rude = lobby.locator('tr', { hasText: 'Rude room' });
  await rude.waitFor({ timeout: 5_000 });
  // A player reports it from its row.
  await rude.getByRole('button', { name: 'Report Rude room to the moderators' }).click();
  await lobby.getByLabel('What is wrong').selectOption('offensive_name');
  await lobby.getByLabel('What happened (optional)').fill('the name is an insult');
  await lobby.getByRole('button', { name: 'Send report' }).click();
  await rude.getByRole('button', { name: 'Reported Rude room' }).waitFor({ timeout: 5_000 });

  // The moderator, on a phone.
  const admin = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
  await admin.goto(url + '/admin');
  await admin.getByLabel('Admin token').fill('not-this-lobbys-token-000000');
  await admin.getByRole('button', { name: 'Sign in' }).click();
  await admin.locator('#signin-error', { hasText: 'not one of' }).waitFor({ timeout: 5_000 });
  await admin.getByLabel('Admin token').fill(TOKEN);
  await admin.getByRole('button', { name: 'Sign in' }).click();
  await admin.locator('body[data-signed-in="true"]').waitFor({ timeout: 10_000 });
  assert.equal(await admin.evaluate(() => location.search + location.hash), '', 'the token is never in the URL');

  // Most reported first.
  const first = admin.locator('#admin-session-rows tr').first();
  assert.match(await first.locator('th').textContent() ?? '', /^Rude room/);
  assert.equal(await first.locator('td[data-label="Reports"]').textContent(), '1');
  const creator = (await first.locator('td[data-label="Created from"]').textContent() ?? '').trim();
  assert.ok(creator.length > 0);

  await first.getByRole('button', { name: 'End Rude room' }).click();
  await admin.locator('#reason-text').fill('offensive name');
  await admin.locator('#reason-ok').click();
  // The lobby page in the other context loses it, live.
  await rude.waitFor({ state: 'detached', timeout: 5_000 });
  await lobby.locator('tr', { hasText: 'Nice room' }).waitFor({ timeout: 2_000 });

  // Block the address it came from.
  await admin.getByLabel('Address or prefix').fill(creator);
  await admin.getByLabel('Reason').fill('made the rude room');
  await admin.getByRole('button', { name: 'Block', exact: true }).click();
  await admin.locator('#admin-block-rows tr', { hasText: creator }).waitFor({ timeout: 5_000 });
  const log = await admin.locator('#admin-audit-rows tr').allTextContents();
  assert.equal(log.length, 2, log.join(' | '));
  assert.match(log[0], /block/);
  assert.match(log[1], /end.*offensive name/);
  await admin.screenshot({ path: join(OUTPUT, 'admin-phone.png'), fullPage: true });

  // That address creates nothing more; reading the lobby still works.
  assert.equal(await create(lobby, 'Rude room again'), 403);
  assert.equal(await lobby.evaluate(async () => (await fetch('/lobby')).status), 200);
});
