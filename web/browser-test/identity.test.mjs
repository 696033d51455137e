// Who is who (issue 46), against a browser host: an invite link asks for a
// name, and the player's own rows say "(you)" on its page while the host's
// page shows its name; a second player under a taken name plays under a
// distinct one; a player who left is listed as left, and takes its row back
// when it comes back; the host's end-of-run table fits a 1280x720 screen,
// marks who left, and its Play again opens a new session, which a guest's
// Play again then joins.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OUTPUT, Rig, chooseName, guestState, hostState, openHostOn, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

const SCREEN = { width: 1280, height: 720 };

/**
 * A fresh page in its own browser context (its own storage: it never chose
 * a name).
 * @param {import('playwright-core').Browser} browser
 * @param {string} name for console lines
 */
async function freshPage(browser, name) {
  const page = await (await browser.newContext({ viewport: SCREEN })).newPage();
  page.on('console', (m) => { if (process.env.CAMPFIRE_TEST_LOG) console.error(`[${name}] ${m.text()}`); });
  page.on('pageerror', (e) => console.error(`[${name}] page error: ${e.message}`));
  return page;
}

/**
 * The texts of a list's items, with what is not about who is who left
 * out: whether a player is down (idle guests may be) and a guest's round
 * trip on the host's list.
 * @param {import('playwright-core').Page} page
 * @param {string} selector
 */
const items = async (page, selector) => (await page.locator(`${selector} li`).allTextContents())
  .map((t) => t.replace(/ — down$/, '').replace(/ \(\d+ ms\)$/, ''));

/**
 * Waits until a list on `page` reads exactly `want` (in any order).
 * @param {import('playwright-core').Page} page
 * @param {string} selector
 * @param {string[]} want
 * @param {string} what
 */
async function listReads(page, selector, want, what) {
  const sorted = [...want].sort();
  let got = /** @type {string[]} */ ([]);
  await until(async () => {
    got = (await items(page, selector)).sort();
    return JSON.stringify(got) === JSON.stringify(sorted) ? got : null;
  }, 30_000, `${what}: ${sorted.join(', ')}`).catch((e) => {
    throw new Error(`${e.message}; it read ${JSON.stringify(got)}`);
  });
}

test('names are asked on invite links, marked (you) and kept distinct; who left is shown so until back; Play again opens a new session', { timeout: 240_000 }, async () => {
  const url = await rig.lobby();
  const browser = await rig.browser();
  const host = await freshPage(browser, 'host');
  // No start rule: the host presses Start. Three levels, so the level the
  // test plays in outlasts it.
  const code = await openHostOn(host, url, 'name=Who%20is%20who&hostName=Hosty&levels=3&seed=11&difficulty=easy&bot=1');
  const invite = await host.locator('#join-link').evaluate((a) => /** @type {HTMLAnchorElement} */ (a).href);
  assert.ok(invite && invite.includes(code) && !invite.includes('name='), `an invite link carries the code and no name: ${invite}`);
  // (The guests idle; the host's player is bot-driven, so the team lives.)

  // The first guest is asked for a name, and sees itself as "(you)".
  const first = await freshPage(browser, 'first');
  await first.goto(invite);
  await chooseName(first, 'Tester');
  await listReads(first, '#waiting-roster', ['Hosty', 'Tester (you)'], "the first guest's waiting room");
  // The second takes the same name, and plays under a distinct one.
  const second = await freshPage(browser, 'second');
  await second.goto(invite);
  await chooseName(second, 'tester');
  await listReads(second, '#waiting-roster', ['Hosty', 'Tester', 'tester (2) (you)'], "the second guest's waiting room");
  await listReads(first, '#waiting-roster', ['Hosty', 'Tester (you)', 'tester (2)'], 'the first guest hears of the second');
  // The host's page shows both guests' names as they play, and itself.
  await listReads(host, '#waiting-roster', ['Hosty (you)', 'Tester', 'tester (2)'], "the host's waiting room");
  assert.match(await host.locator('#waiting-count').textContent() ?? '', /^3 of \d+ players are in/);
  await host.getByRole('button', { name: 'Start' }).click();
  for (const page of [first, second]) {
    await until(async () => {
      const s = await guestState(page);
      return s.state === 'playing' && s.tick > 30 ? s : null;
    }, 60_000, 'the level to run');
  }
  const before = await guestState(first);
  assert.equal(before.roster.length, 3);
  await listReads(first, '#roster', ['Hosty', 'Tester (you)', 'tester (2)'], "the first guest's Players list");
  await listReads(host, '#roster', ['Hosty (you, host)', 'Tester', 'tester (2)'], "the host's Players list");

  // The second guest closes its tab: after the host's disconnect grace
  // (10 s) it is let go, and both pages list it as left.
  const gone = (await guestState(second)).me;
  await second.context().close();
  await listReads(first, '#roster', ['Hosty', 'Tester (you)', 'tester (2) — left'], 'the departed guest listed as left');
  await listReads(host, '#roster', ['Hosty (you, host)', 'Tester', 'tester (2) — left'], "the host's list too");
  assert.equal(await first.locator(`#roster li[data-player="${gone}"][data-left]`).count(), 1);

  // It comes back through the invite link under the same name: it joins
  // the running level as a new player, and takes its row back.
  const back = await freshPage(browser, 'back');
  await back.goto(invite);
  await chooseName(back, 'tester');
  const again = await until(async () => {
    const s = await guestState(back);
    return s.state === 'playing' && s.joinedAtTick !== null ? s : null;
  }, 60_000, 'the returning guest to join the running level');
  assert.notEqual(again.me, gone, 'a player the host let go comes back as a new player');
  await listReads(first, '#roster', ['Hosty', 'Tester (you)', 'tester (2)'], 'the returning guest took its row back');
  await listReads(back, '#roster', ['Hosty', 'Tester', 'tester (2) (you)'], "the returning guest's own list");

  // The host ends the session: its end-of-run table is inside the screen,
  // says who left, and Play again opens a new session.
  await host.locator('#view').focus();
  await host.keyboard.press('Escape');
  await host.locator('#leave-confirm').click();
  const results = host.getByRole('region', { name: 'End of run' });
  await results.waitFor({ timeout: 10_000 });
  const box = await results.boundingBox();
  assert.ok(box && box.y >= 0 && box.y + box.height <= SCREEN.height, `the table inside 1280x720: ${JSON.stringify(box)}`);
  await host.getByRole('status').filter({ hasText: 'You ended the session.' }).waitFor({ timeout: 2_000 });
  const leftRow = await host.locator(`#results-rows tr[data-player="${gone}"] td`).last().textContent();
  assert.equal(leftRow, 'left');
  await host.screenshot({ path: join(OUTPUT, 'identity-host-end.png') });
  const playAgain = host.getByRole('button', { name: 'Play again' });
  assert.ok(await playAgain.isVisible(), 'Play again is in view');
  await playAgain.click();
  const next = await until(async () => {
    // (The page is loading anew: its state may not be there yet.)
    const s = await hostState(host).catch(() => null);
    return s?.state === 'waiting' && s.code ? s : null;
  }, 30_000, 'a new session from Play again');
  assert.notEqual(next.code, code, 'a new session');
  const listed = await host.evaluate(async (c) => (await fetch(`/session/${c}`)).json(), next.code);
  assert.equal(listed.name, 'Who is who', 'with the same settings');
  // A guest's Play again finds that session, and joins it under its name.
  await first.getByRole('button', { name: 'Play again' }).click();
  await first.waitForURL((u) => u.searchParams.get('code') === next.code, { timeout: 20_000 });
  await listReads(host, '#waiting-roster', ['Hosty (you)', 'Tester'], 'the first guest in the new session');
});
