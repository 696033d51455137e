// A tester drives a daemon (issue 46): `host-daemon ctl open` asks a
// daemon that keeps no session of its own for one with two bots; a bot
// guest joins; the daemon's dashboard, on a phone, asks for the control
// token, follows the session live until its level completes, and
// downloads its replay, which `host-daemon replay` re-simulates to the
// recorded end.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN_DIR, OUTPUT, Proc, Rig, SERVER_IP } from './harness.mjs';

const TOKEN = 'browser-test-control-token-0123456789';

const rig = new Rig();
after(() => rig.close());

test('a session opened through the control API is followed on the dashboard to its end and its replay matches', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'campfire-dashboard-'));
  const tokenFile = join(dir, 'control-token');
  writeFileSync(tokenFile, `${TOKEN}\n`);
  const records = join(dir, 'replays');
  await rig.lobby();
  // Beyond loopback (the browser is in its own namespace), so a token.
  const daemon = rig.daemon([
    '--sessions', '0', '--levels', '1', '--record', records,
    '--control-listen', `${SERVER_IP}:0`, '--control-token-file', tokenFile,
  ]);
  const [, control] = await daemon.waitStderr(/control API and dashboard on (http:\/\/[0-9.:]+)\//, 30_000);

  const ctl = (/** @type {string[]} */ args) => {
    const p = new Proc('ctl', join(BIN_DIR, 'host-daemon'), ['ctl', '--control', control, '--token-file', tokenFile, ...args]);
    rig.procs.push(p);
    return p;
  };
  const open = ctl(['open', '--bots', '2', '--name', 'Two bots', '--start-when', '1']);
  const [code] = await open.waitLine(/^[A-Z0-9]{4,}$/, 30_000);
  assert.deepEqual(await open.exited, { code: 0, signal: null });
  // Without the token, nothing.
  const refused = await fetch(`${control}/api/sessions`);
  assert.equal(refused.status, 403);
  assert.equal((await refused.json()).error, 'wrong_token');

  const browser = await rig.browser();
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, acceptDownloads: true });
  const page = await context.newPage();
  await page.goto(`${control}/`);
  await page.getByLabel('This daemon asks for its control token').fill(TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const card = page.locator(`article[data-code="${code}"]`);
  await card.waitFor({ timeout: 10_000 });
  assert.match(await card.textContent() ?? '', /Two bots/);
  assert.equal(await card.locator('[data-state]').getAttribute('data-state'), 'waiting');

  rig.botGuest(code, 'Tester');
  await card.locator('[data-state="running"]').waitFor({ timeout: 30_000 });
  // Live figures: the two bots and the guest, with a round trip.
  await card.locator('tr[data-player="guest-1"]', { hasText: 'Tester' }).waitFor({ timeout: 10_000 });
  assert.match(await card.locator('.figures').textContent() ?? '', /1 player, 2 bots/);
  assert.equal(await card.locator('tbody tr', { hasText: 'bot' }).count(), 2);
  const ticksOf = async () => Number((/tick (\d+)/.exec(await card.locator('.figures').textContent() ?? '') ?? [])[1]);
  const early = await ticksOf();
  await page.waitForFunction(([c, t]) => {
    const text = document.querySelector(`article[data-code="${c}"] .figures`)?.textContent ?? '';
    return Number((/tick (\d+)/.exec(text) ?? [])[1]) > Number(t);
  }, [code, String(early)], { timeout: 10_000 });
  await page.screenshot({ path: join(OUTPUT, 'dashboard-running-phone.png'), fullPage: true });

  await card.locator('[data-state="ended"]').waitFor({ timeout: 150_000 });
  assert.match(await card.locator('.figures').textContent() ?? '', /ended: completed/);
  const [download] = await Promise.all([
    page.waitForEvent('download', { timeout: 10_000 }),
    card.getByRole('button', { name: 'Replay, level 1' }).click(),
  ]);
  const file = join(OUTPUT, `${code}-level-1.replay`);
  await download.saveAs(file);
  await page.screenshot({ path: join(OUTPUT, 'dashboard-ended-phone.png'), fullPage: true });

  const replay = new Proc('replay', join(BIN_DIR, 'host-daemon'), ['replay', file]);
  rig.procs.push(replay);
  const [line] = await replay.waitLine(/^\{.*"type":"replay".*\}$/, 60_000);
  const result = JSON.parse(line);
  assert.equal(result.matches, true, line);
  assert.ok(result.ticks > 0);
  assert.deepEqual(result.roster.filter((/** @type {string} */ p) => p.startsWith('bot-')), ['bot-1', 'bot-2']);

  // The report, through the CLI, names the guest and marks the bots.
  const report = ctl(['report', code]);
  const [json] = await report.waitLine(/^\{.*\}$/, 10_000);
  const players = JSON.parse(json).players;
  assert.deepEqual(players.filter((/** @type {any} */ p) => p.kind === 'bot').length, 2);
  assert.equal(players.find((/** @type {any} */ p) => p.playerId === 'guest-1')?.name, 'Tester');
});
