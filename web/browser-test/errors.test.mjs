// A join with a bad code and a join from a client of another build both
// end in a clear message on the guest page. The build is checked by the
// joining machine before any answer is made (the host's hello check is the
// netcode tests'), so the page never connects.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Rig, guestState, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

test('a bad code shows a clear message', { timeout: 60_000 }, async () => {
  const url = await rig.lobby();
  const browser = await rig.browser();
  const page = await browser.newPage();
  await page.goto(`${url}/play?code=ABCD-EFGH&name=Ada`);
  const alert = page.getByRole('alert');
  await alert.filter({ hasText: 'No session has the code ABCDEFGH' }).waitFor({ timeout: 10_000 });
  assert.equal((await guestState(page)).state, 'error');
  // The form to try another code is offered.
  assert.equal(await page.getByRole('button', { name: 'Join' }).isVisible(), true);

  await page.goto(`${url}/play?code=O0O0&name=Ada`);
  await alert.filter({ hasText: 'is not a session code' }).waitFor({ timeout: 5_000 });
});

test('a version mismatch shows a clear message', { timeout: 90_000 }, async () => {
  const daemon = rig.daemon(['--name', 'Mismatch', '--bots', '1', '--start-when', '1']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
  const openRound = async () => (await (await fetch(`${rig.url}/session/${code}`)).json()).round;
  const before = await until(openRound, 30_000, 'a round to open');
  const page = await rig.browsers[0].newPage();
  await page.goto(`${rig.url}/play?code=${code}&build=campfire-0.0.0-old&name=Ada`);
  const alert = page.getByRole('alert');
  await alert.filter({ hasText: 'Version mismatch' }).waitFor({ timeout: 30_000 });
  const text = await alert.textContent();
  assert.match(text ?? '', /this page runs build campfire-0\.0\.0-old, but the host runs build campfire-\d/);
  const s = await guestState(page);
  assert.equal(s.state, 'error');
  assert.equal(s.end, null, 'refused before connecting: no session ran');
  // The host saw no answer: the same round is still open for the next joiner.
  assert.equal(await openRound(), before);
});
