// The end of a session: the host's end-of-run table is shown with every
// player's name.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Rig, guestState, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

test('the end-of-run table comes from the host', { timeout: 90_000 }, async () => {
  const url = await rig.lobby();
  // A safety stop after 150 ticks ends the session as a host shutdown.
  const daemon = rig.daemon(['--name', 'Short', '--bots', '1', '--start-when', '1', '--max-ticks', '150']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
  const browser = await rig.browser();
  const page = await browser.newPage();
  await page.goto(`${url}/play?code=${code}&name=Ada`);
  const ended = await until(async () => {
    const s = await guestState(page);
    return s.end ? s : null;
  }, 30_000, 'the session to end');
  assert.equal(ended.end.kind, 'ended');
  assert.equal(ended.end.reason, 'host-shutdown');
  assert.equal(ended.end.provisional, false);
  assert.equal(ended.tick, 150, 'every bundle up to the final tick was applied');
  const results = page.getByRole('region', { name: 'End of run' });
  await results.waitFor({ timeout: 2_000 });
  const rows = await results.locator('tbody tr th').allTextContents();
  assert.deepEqual(rows.sort(), ['Ada (you)', 'Bot 1', 'Host'].sort(), 'bots are named as bots');
  await page.getByRole('status').filter({ hasText: 'The host shut the session down.' }).waitFor({ timeout: 2_000 });
});
