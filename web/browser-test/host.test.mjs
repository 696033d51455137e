// A player hosts from the browser: netcode's host session in WebAssembly,
// in a worker, published through the lobby as `hostKind: player`, joined by
// Rust bot guests (`host-daemon join --bot`) and by browser guests alike.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OUTPUT, Rig, SERVER_IP, guestState, hideTab, hostState, openHostOn, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

/**
 * A fresh page in its own browser context.
 * @param {import('playwright-core').Browser} browser
 * @param {string} name for console lines
 */
async function newPage(browser, name) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  const page = await context.newPage();
  page.on('console', (m) => { if (process.env.CAMPFIRE_TEST_LOG) console.error(`[${name}] ${m.text()}`); });
  page.on('pageerror', (e) => console.error(`[${name}] page error: ${e.message}`));
  return page;
}

/**
 * Opens a scripted browser host; resolves with its page and session code.
 * @param {import('playwright-core').Browser|import('playwright-core').BrowserContext} where a browser (a fresh context) or a context
 * @param {string} query
 */
async function openHost(where, query) {
  const page = 'newContext' in where ? await newPage(where, 'host') : await where.newPage();
  return { page, code: await openHostOn(page, rig.url, query) };
}

/**
 * The public listing as a page sees it, for player hosts.
 * @param {import('playwright-core').Page} page
 */
const playerListing = (page) => page.evaluate(async () => {
  const res = await fetch('/lobby?hostKind=player&limit=100');
  return (await res.json()).sessions;
});

/**
 * The JSON report line a bot guest prints when it is done.
 * @param {import('./harness.mjs').Proc} bot
 */
async function botReport(bot) {
  const [line] = await bot.waitLine(/^\{.*"endReason".*\}$/, 30_000);
  return JSON.parse(line);
}

test('a browser host (bot-driven) and a Rust bot guest finish a level; a second bot joins the running level (late join)', { timeout: 240_000 }, async () => {
  await rig.lobby();
  const browser = await rig.browser();
  const { page, code } = await openHost(browser, 'name=Browser%20night&hostName=Hosty&levels=1&seed=7&startWhen=1&bot=1');

  const listed = await until(async () => (await playerListing(page)).find((/** @type {any} */ e) => e.code === code),
    5_000, 'the session in the public listing');
  assert.equal(listed.hostKind, 'player');
  assert.equal(listed.name, 'Browser night');
  assert.equal(listed.hostName, 'Hosty');
  assert.equal(listed.players, 1);

  const bot = rig.botGuest(code, 'rusty');
  const running = await until(async () => {
    const s = await hostState(page);
    return s.phase === 'running' && s.tick > 30 ? s : null;
  }, 60_000, 'the level to run');
  assert.deepEqual(running.roster, ['guest-1', 'host']);
  assert.ok(running.pos, 'the host player is in its own view');
  // The browser host measures the Rust guest's round trip (ping/pong), and
  // its HUD shows it.
  const measured = await until(async () => {
    const s = await hostState(page);
    return typeof s.guestRttMs[0] === 'number' ? s : null;
  }, 10_000, 'a measured round trip to the guest');
  assert.ok(measured.guestRttMs[0] >= 0 && measured.guestRttMs[0] < 1_000, JSON.stringify(measured.guestRttMs));
  assert.match(await page.locator('#hud-rtt').textContent() ?? '', /^\d+ ms$/);
  await page.screenshot({ path: join(OUTPUT, 'host-first-person.png') });
  // The host's netgraph (F3): a line per guest, with its round trip and
  // what the host sends it.
  await page.locator('#view').focus();
  await page.keyboard.press('F3');
  const link = await until(async () => {
    const n = (await hostState(page)).netgraph;
    const l = n.visible ? n.shown?.host?.links.find((/** @type {any} */ x) => x.name === 'rusty') : null;
    return l && typeof l.rttMs === 'number' && l.down.bytesPerS > 0 ? l : null;
  }, 10_000, 'the host netgraph line of the guest');
  assert.ok(link.inputDelay >= 1 && link.down.messagesPerS > 20, JSON.stringify(link));
  await page.screenshot({ path: join(OUTPUT, 'netgraph-host.png') });
  await page.keyboard.press('F3');
  // Ten seconds into the level, with seats free, the session is still
  // listed, and a second bot joins the running level.
  await until(async () => ((await hostState(page)).tick > 300 ? true : null), 60_000, 'ten seconds of the level');
  assert.ok((await playerListing(page)).some((/** @type {any} */ e) => e.code === code),
    'a started session with free seats stays listed');
  const late = rig.botGuest(code, 'late');
  const joined = await until(async () => {
    const s = await hostState(page);
    return s.roster?.includes('guest-2') ? s : null;
  }, 60_000, 'the late joiner in the roster');
  assert.ok(joined.tick > 300, `joined at tick ${joined.tick}`);
  const marked = await page.evaluate(async (c) => (await fetch(`/session/${c}`)).json(), code);
  assert.equal(marked.inProgress, true, JSON.stringify(marked));

  const ended = await until(async () => {
    const s = await hostState(page);
    return s.end && s.report ? s : null;
  }, 150_000, 'the level to be completed');
  assert.equal(ended.end.reason, 'completed');
  assert.equal(ended.report.levelsCompleted, 1);
  const rusty = ended.report.players.find((/** @type {any} */ p) => p.name === 'rusty');
  assert.ok(rusty, JSON.stringify(ended.report));
  assert.equal(rusty.kind, 'guest');
  assert.ok(rusty.hashReports > 0, JSON.stringify(rusty));
  assert.equal(rusty.desyncs, 0, JSON.stringify(rusty));
  assert.equal(typeof rusty.rttMs, 'number', JSON.stringify(rusty));
  await page.locator('#results-rows tr[data-player="guest-1"]').waitFor({ timeout: 5_000 });

  const lateRow = ended.report.players.find((/** @type {any} */ p) => p.name === 'late');
  assert.ok(lateRow && lateRow.hashReports > 0 && lateRow.desyncs === 0, JSON.stringify(ended.report));

  for (const b of [bot, late]) {
    const report = await botReport(b);
    assert.equal(report.endReason, 'completed');
    // What the guest counted in is what the browser host counted out.
    const sent = ended.report.players.find((/** @type {any} */ p) => p.playerId === report.playerId)?.bytesSent ?? 0;
    assert.ok(sent > 10_000 && Math.abs(report.traffic.bytesDown - sent) <= sent * 0.02,
      `the guest received ${report.traffic.bytesDown} bytes, the host sent ${sent}`);
    assert.ok(report.levelsCompleted >= 1, JSON.stringify(report));
    assert.equal(report.desyncs, 0, JSON.stringify(report));
    assert.deepEqual(await b.exited, { code: 0, signal: null });
  }

  const gone = await page.evaluate(async (c) => (await fetch(`/session/${c}`)).status, code);
  assert.equal(gone, 404, 'the lobby entry is deleted at the end');
});

test('a browser host, a browser guest and a bot guest play a two-level campaign; the hidden host tab keeps 30 Hz', { timeout: 360_000 }, async (t) => {
  await rig.lobby();
  const browser = await rig.browser();
  const { page: host, code } = await openHost(await rig.hideableBrowser(), 'name=Trio&levels=2&seed=3&startWhen=2&bot=1');
  const guest = await newPage(browser, 'guest');
  await guest.goto(`${rig.url}/play?code=${code}&name=Wasm&bot=1`);
  await until(async () => (await guestState(guest)).phase === 'await-init', 30_000, 'the browser guest to pass the hello');
  const bot = rig.botGuest(code, 'rusty');

  const playing = await until(async () => {
    const s = await guestState(guest);
    return s.state === 'playing' && s.tick > 60 ? s : null;
  }, 60_000, 'the level to run');
  assert.equal(playing.roster.length, 3, `roster ${playing.roster}`);

  // Hide the host's tab: the browser may throttle its main thread (timers
  // at most once a second, or less; the policy is the browser's), while the
  // worker keeps the ticks at 30 Hz.
  const hidden = await hideTab(host);
  assert.equal(hidden.visibility, 'hidden');
  const from = await guestState(guest);
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, 4_000));
  const to = await guestState(guest);
  const rate = (to.tick - from.tick) / ((Date.now() - t0) / 1000);
  const throttle = await host.evaluate(() => new Promise((resolve) => {
    // Main-thread timers of the hidden host tab: how far apart do 50 ms ones fire?
    const start = performance.now();
    let n = 0;
    const id = setInterval(() => {
      n += 1;
      if (n === 3) {
        clearInterval(id);
        resolve({ meanGapMs: (performance.now() - start) / 3, visibility: document.visibilityState });
      }
    }, 50);
  }));
  t.diagnostic(`hidden host: guests saw ${rate.toFixed(1)} ticks/s; the host tab's 50 ms timers fired ${JSON.stringify(throttle)}`);
  assert.equal(to.end, null, 'the level outlasts the measurement');
  assert.equal(/** @type {any} */ (throttle).visibility, 'hidden');
  // The product's property, whatever the browser's throttling policy of the
  // day (its timer gap is a diagnostic above, not an assertion: Chromium
  // throttled a hidden tab's 50 ms timers to 1 s on one machine and to
  // 366 ms on a fresh one).
  assert.ok(rate >= 27 && rate <= 33, `guests saw ${rate.toFixed(1)} ticks/s while the host tab was hidden`);

  const ended = await until(async () => {
    const s = await guestState(guest);
    return s.end ? s : null;
  }, 240_000, 'the campaign to be completed');
  assert.deepEqual([ended.end.kind, ended.end.reason, ended.end.provisional], ['ended', 'completed', false]);
  assert.equal(ended.levelEpoch, 2, 'the guest followed the transition to level 2');
  assert.equal(ended.stats.outOfSequence, 0);
  const hs = await until(async () => {
    const s = await hostState(host);
    return s.report ? s : null;
  }, 10_000, 'the host report');
  assert.equal(hs.report.levelsCompleted, 2);
  for (const name of ['Wasm', 'rusty']) {
    const p = hs.report.players.find((/** @type {any} */ x) => x.name === name);
    assert.ok(p && p.kind === 'guest' && p.hashReports > 0 && p.desyncs === 0, `${name}: ${JSON.stringify(hs.report)}`);
  }
  const rusty = await botReport(bot);
  assert.deepEqual([rusty.endReason, rusty.levelsCompleted, rusty.desyncs], ['completed', 2, 0], JSON.stringify(rusty));
  await guest.screenshot({ path: join(OUTPUT, 'host-guest-end.png') });
});

test('a player hosts from the lobby page and starts with whoever is in; closing the tab mid-level ends every guest with host-disconnected', { timeout: 180_000 }, async (t) => {
  await rig.lobby();
  const browser = await rig.browser();
  const host = await newPage(browser, 'host');
  await host.goto(`${rig.url}/`);
  await host.getByRole('link', { name: 'Host a game', exact: true }).click();
  await host.waitForURL(/\/host$/, { timeout: 5_000 });
  await host.getByLabel('Session name').fill('Closing time');
  await host.getByLabel('Your name').fill('Hosty');
  await host.getByLabel('Levels').fill('3');
  await host.getByLabel('Private: only with its code').check();
  await host.getByLabel('Players may join after the start').uncheck();
  await host.getByRole('button', { name: 'Open the session' }).click();
  const { code } = await until(async () => {
    const s = await hostState(host);
    return s.code ? s : null;
  }, 30_000, 'the session to open');
  assert.equal((await playerListing(host)).length, 0, 'a private session is not listed');

  const guest = await newPage(browser, 'guest');
  // Both join the same round: the bot guest starts as the browser guest
  // reads the offer, and the browser's answer is held back until the bot is
  // in, so the bot wins and the browser (with the offer applied and its
  // answer gathered all along) loses and takes the next round. A loser that
  // reached the host over ICE used to spoil the winner's DTLS handshake (the
  // bot then never got in); joiners now add the host's candidates only after
  // their answer won.
  /** @type {import('./harness.mjs').Proc|null} */
  let bot = null;
  let answersPosted = 0;
  await guest.route(`**/session/${code}**`, async (route) => {
    const method = route.request().method();
    if (method === 'GET' && !bot) bot = rig.botGuest(code, 'rusty');
    if (method === 'POST' && answersPosted++ === 0) {
      await until(async () => (await hostState(host)).guestsPresent >= 1, 30_000, 'the bot guest to win the round')
        .catch(() => {});
    }
    await route.continue();
  });
  await guest.goto(`${rig.url}/play?code=${code}&name=Left&bot=1`);
  await until(async () => (await hostState(host)).guestsPresent === 2, 30_000, 'both guests in the waiting room');
  // The lobby follows admissions within a second (it used to hear of them
  // only with the host's next round).
  await until(async () => (await host.evaluate(async (c) => (await (await fetch(`/session/${c}`)).json()).players, code)) === 3,
    1_000, 'the lobby to count the host and both guests');
  // Normally 2 (the browser lost its first round and won the next).
  t.diagnostic(`the browser guest posted ${answersPosted} answer(s)`);
  assert.ok(answersPosted >= 1);
  await host.locator('#waiting-roster', { hasText: 'rusty' }).waitFor({ timeout: 5_000 });
  // Counted as the guests count: the host's player and both guests, the
  // host's own row marked.
  assert.match(await host.locator('#waiting-count').textContent() ?? '', /^3 of \d+ players are in: \d+ seats? left\.$/);
  assert.match(await host.locator('#waiting-roster li[data-you="true"]').textContent() ?? '', / \(you\)$/);
  assert.equal((await hostState(host)).phase, 'lobby', 'no startWhen: the host starts it');
  await host.getByRole('button', { name: 'Start' }).click();
  await until(async () => {
    const s = await guestState(guest);
    return s.state === 'playing' && s.tick > 60 ? s : null;
  }, 60_000, 'the level to run');
  assert.deepEqual((await hostState(host)).roster, ['guest-1', 'guest-2', 'host']);
  // Late join off: the started session is not marked in progress (with
  // late join on, the host marks it so at the start).
  const view = await host.evaluate(async (c) => (await fetch(`/session/${c}`)).json(), code);
  assert.equal(view.inProgress, false, JSON.stringify(view));

  await host.close();
  const ended = await until(async () => {
    const s = await guestState(guest);
    return s.end ? s : null;
  }, 30_000, 'the browser guest to give up on the host');
  assert.deepEqual([ended.end.kind, ended.end.reason], ['ended', 'host-disconnected']);
  const rusty = /** @type {import('./harness.mjs').Proc} */ (bot);
  const report = await botReport(rusty);
  assert.equal(report.endReason, 'host-disconnected');
  assert.equal((await rusty.exited).code, 3, 'a lost host is an abnormal end for the bot guest');
  const gone = await guest.evaluate(async (c) => (await fetch(`/session/${c}`)).status, code);
  assert.equal(gone, 404, 'the closing tab deleted its lobby entry');
});

/**
 * A complete, well-formed answer to `offer` whose only ICE candidate is a
 * port nobody listens on in the server namespace: the lobby accepts it,
 * the browser host applies it, and it never connects.
 * @param {string} offer
 */
function junkAnswer(offer) {
  const mid = offer.split('\r\n').find((l) => l.startsWith('a=mid:'))?.slice(6) ?? '0';
  const fingerprint = offer.split('\r\n').find((l) => l.startsWith('a=fingerprint:'));
  return [
    'v=0', `o=- 4242 2 IN IP4 ${SERVER_IP}`, 's=-', 't=0 0', `a=group:BUNDLE ${mid}`,
    'm=application 9 UDP/DTLS/SCTP webrtc-datachannel', `c=IN IP4 ${SERVER_IP}`,
    'a=ice-ufrag:junkjunkjunk', 'a=ice-pwd:junkjunkjunkjunkjunkjunkjunk', fingerprint,
    'a=setup:active', `a=mid:${mid}`, 'a=sctp-port:5000',
    `a=candidate:1 1 udp 2130706431 ${SERVER_IP} 9 typ host`, 'a=end-of-candidates', '',
  ].join('\r\n');
}

test('a grabber answering every round of a browser host does not lock it: a bot guest gets in (issue 24)', { timeout: 180_000 }, async (t) => {
  await rig.lobby();
  const browser = await rig.browser();
  const { page, code } = await openHost(browser, 'name=Grabbed&levels=1&seed=5&startWhen=1&bot=1');
  // The grabber answers every round the moment it opens (polling every
  // 5 ms), with answers that never connect: at most 24, for at most 60 s.
  let grabs = 0;
  let stop = false;
  const grabber = (async () => {
    let last = null;
    const began = Date.now();
    while (!stop && grabs < 24 && Date.now() - began < 60_000) {
      const view = await (await fetch(`${rig.url}/session/${code}`)).json();
      if (view.round != null && view.round !== last) {
        last = view.round;
        const res = await fetch(`${rig.url}/session/${code}/answer`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ round: view.round, answer: junkAnswer(view.offer), name: 'grabber' }),
        });
        if (res.status === 201) grabs += 1;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  // Four grabs took every join slot of the old policy for 20 s.
  await until(() => grabs >= 4, 30_000, 'four rounds grabbed');
  const started = Date.now();
  const bot = rig.botGuest(code, 'rusty');
  await until(async () => (await hostState(page)).guestsPresent >= 1, 30_000, 'the bot guest to get in');
  const tookMs = Date.now() - started;
  stop = true;
  await grabber;
  t.diagnostic(`${grabs} rounds grabbed; the bot guest got in ${tookMs} ms after it started`);
  assert.ok(tookMs < 15_000, `the bot guest took ${tookMs} ms to get in`);
  const ended = await until(async () => {
    const s = await hostState(page);
    return s.end ? s : null;
  }, 150_000, 'the level to be completed');
  assert.equal(ended.end.reason, 'completed', `${JSON.stringify(ended.end)}; the bot said: ${bot.errLines.slice(-5).join(' | ')}`);
  const report = await botReport(bot);
  assert.equal(report.endReason, 'completed', JSON.stringify(report));
});
