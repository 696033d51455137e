// A relay session (issue 26) from the lobby page: `host-daemon relay`
// runs no engine; the browser joins first, so its WebAssembly guest is the
// authority (it builds the level and answers the relay's snapshots); a bot
// guest joins second and the level starts. When the browser leaves, the
// bot takes authority over and plays the level to its end: the session
// outlives the player who began it.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OUTPUT, Rig, chooseName, guestState, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

test('a browser joins a relay session from the lobby page, serves as its authority, and the session outlives it', { timeout: 300_000 }, async () => {
  const url = await rig.lobby();
  const browser = await rig.browser();
  const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
  await page.goto(url + '/');
  await page.locator('body[data-live="true"]').waitFor({ timeout: 10_000 });

  const relay = rig.relay(['--name', 'Relay test', '--start-when', '2', '--max-players', '4',
    '--levels', '1', '--seed', '11', '--difficulty', 'easy', '--snapshot-every', '300']);
  const [, code] = await relay.waitLine(/^session (\S+)/, 60_000);
  const row = page.locator(`tr[data-code="${code}"]`);
  await row.waitFor({ timeout: 5_000 });
  const cells = await row.locator('th, td').allTextContents();
  assert.equal(cells[0], 'Relay test');
  assert.equal(cells[2], '0/4 · starts at 2 players', 'a relay has no player of its own, and says what its start waits for');
  assert.match(cells.join('|'), /relay/);

  // The browser joins from the lobby page: the first player, the authority.
  await row.getByRole('link', { name: 'Join Relay test' }).click();
  await page.waitForURL(/\/play\?code=/, { timeout: 5_000 });
  await chooseName(page, 'Relay player');
  await relay.waitStderr(/guest admitted.*player-1/, 30_000);
  const bot = rig.botGuest(code, 'relay-bot');
  await relay.waitStderr(/level started/, 60_000);
  const playing = await until(async () => {
    const s = await guestState(page);
    return s.state === 'playing' && s.tick > 30 ? s : null;
  }, 30_000, 'the browser to play the relayed level');
  assert.equal(playing.me, 'player-1');
  assert.deepEqual(playing.roster, ['player-1', 'player-2']);
  // The browser's engine answered the relay's snapshot of tick 300 and
  // the bot's hash agreed with it.
  await relay.waitStderr(/snapshot verified.*tick=300/, 30_000);
  const later = await guestState(page);
  assert.equal(later.end, null);
  assert.equal(later.stats.outOfSequence, 0);
  await page.screenshot({ path: join(OUTPUT, 'relay-browser.png') });

  // The browser leaves; the bot takes over and finishes the level.
  await page.close();
  await relay.waitStderr(/authority.*player-2/, 30_000);
  const botEnd = await Promise.race([
    bot.exited,
    new Promise((_, reject) => setTimeout(() => reject(new Error('the bot did not finish')), 200_000)),
  ]);
  assert.equal(botEnd.code, 0, bot.errLines.join('\n'));
  const reportLine = bot.lines.find((l) => l.startsWith('{'));
  assert.ok(reportLine, `the bot's JSON line: ${bot.lines.join('\n')}`);
  const report = JSON.parse(reportLine);
  assert.match(report.endReason, /^(completed|team-eliminated)$/, JSON.stringify(report));
  assert.equal(report.playerId, 'player-2');
  assert.equal(report.desyncs, 0);
  const [line] = await relay.waitLine(/^\{"type":"relay-report".*$/, 30_000);
  const relayReport = JSON.parse(line);
  assert.equal(relayReport.end, 'completed', line);
  assert.equal(relayReport.stats.handovers, 1, line);
  assert.equal(relayReport.stats.desyncs, 0, line);
  assert.ok(relayReport.stats.snapshotsVerified >= 1, line);
});
