// A player's controls and screen in the browser: sound starts on the first
// key press and plays a shot, the game view and HUD fit the window
// (1280x720, and a phone held upright), settings survive a reload and
// rebind keys for real, a gamepad walks the player, and the
// host's invite button puts the /play link on the clipboard (with a default
// session name when the form's is left empty).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OUTPUT, Rig, guestState, until } from './harness.mjs';

const rig = new Rig();
after(() => rig.close());

/**
 * Where the view and the HUD sit, against the viewport.
 * @param {import('playwright-core').Page} page
 */
const layout = (page) => page.evaluate(() => {
  const box = (/** @type {string} */ sel) => {
    const r = /** @type {Element} */ (document.querySelector(sel)).getBoundingClientRect();
    return { top: r.top, left: r.left, bottom: r.bottom, right: r.right, width: r.width, height: r.height };
  };
  return {
    viewport: { width: window.innerWidth, height: window.innerHeight },
    scroll: { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight },
    canvas: box('#view'),
    hud: box('.hud'),
  };
});

/**
 * @param {Awaited<ReturnType<typeof layout>>} l
 * @param {string} what
 */
function assertInside(l, what) {
  for (const name of /** @type {const} */ (['canvas', 'hud'])) {
    const b = l[name];
    assert.ok(b.width > 0 && b.height > 0, `${what}: the ${name} is shown: ${JSON.stringify(l)}`);
    assert.ok(b.top >= 0 && b.left >= 0 && b.bottom <= l.viewport.height + 0.5 && b.right <= l.viewport.width + 0.5,
      `${what}: the ${name} is inside the viewport: ${JSON.stringify(l)}`);
  }
  assert.ok(l.scroll.height <= l.viewport.height && l.scroll.width <= l.viewport.width,
    `${what}: nothing to scroll: ${JSON.stringify(l)}`);
}

/**
 * Opens a guest page in `context` on `code` and waits for the level to run.
 * @param {import('playwright-core').BrowserContext} context
 * @param {string} url the lobby
 * @param {string} code
 * @param {string} name
 */
async function playing(context, url, code, name) {
  const page = await context.newPage();
  page.on('pageerror', (e) => console.error(`[${name}] page error: ${e.message}`));
  await page.goto(`${url}/play?code=${code}&name=${name}`);
  await until(async () => {
    const s = await guestState(page);
    return s.phase === 'running' && s.tick > 30 && s.pos ? s : null;
  }, 60_000, 'the level to run');
  return page;
}

/** The number before the pool name in the HUD's ammo ("48 bullets (pistol)"). */
const ammo = async (/** @type {import('playwright-core').Page} */ page) =>
  Number((await page.locator('#hud-ammo').textContent())?.split(' ')[0]);

test('a browser guest: the view fits the window, settings survive a reload and rebind fire, a gamepad walks', { timeout: 240_000 }, async () => {
  const url = await rig.lobby();
  const daemon = rig.daemon(['--name', 'Controls', '--bots', '0', '--start-when', '1', '--levels', '1', '--seed', '11']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
  const browser = await rig.browser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  // A gamepad the test holds: left stick forward while window.__stickY is set.
  await context.addInitScript(() => {
    const w = /** @type {any} */ (window);
    w.__stickY = 0;
    navigator.getGamepads = () => (w.__stickY === 0 ? [null] : [{
      id: 'test pad', index: 0, connected: true, mapping: 'standard', timestamp: performance.now(),
      axes: [0, w.__stickY, 0, 0], buttons: Array.from({ length: 17 }, () => ({ pressed: false, touched: false, value: 0 })),
    }]);
  });
  const page = await playing(context, url, code, 'Pad');

  // Sound starts with the first key press.
  assert.equal((await guestState(page)).audio.state, 'none', 'no AudioContext before a gesture');
  await page.locator('#view').focus();
  await page.keyboard.press('KeyQ');
  await until(async () => (await guestState(page)).audio.state === 'running', 5_000, 'the AudioContext to run');

  // Fits the window, on a desktop and on a phone held upright.
  assertInside(await layout(page), '1280x720');
  await page.screenshot({ path: join(OUTPUT, 'controls-1280x720.png') });
  await page.setViewportSize({ width: 360, height: 640 });
  assertInside(await layout(page), '360x640');
  await page.screenshot({ path: join(OUTPUT, 'controls-360x640.png') });
  await page.setViewportSize({ width: 1280, height: 720 });

  // Settings: fire moves from Space to J, sensitivity to 2.5; both kept.
  await page.locator('#settings-button').click();
  await page.locator('#settings-dialog button[data-action="fire"]').click();
  await page.keyboard.press('KeyJ');
  await page.locator('#setting-sensitivity').fill('2.5');
  await page.locator('#setting-view-scale').selectOption('0.5');
  await page.locator('#settings-done').click();
  // Escape closes the panel, and only the panel.
  await page.locator('#settings-button').click();
  await page.keyboard.press('Escape');
  await until(async () => page.evaluate(() => !(/** @type {HTMLDialogElement} */ (document.getElementById('settings-dialog'))).open),
    2_000, 'Escape to close the settings');
  assert.equal(await page.evaluate(() => (/** @type {HTMLDialogElement} */ (document.getElementById('leave-dialog'))).open), false);
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('campfire.settings') ?? 'null'));
  assert.deepEqual(stored.bindings.fire, ['KeyJ']);
  assert.equal(stored.sensitivity, 2.5);
  assert.equal(stored.viewScale, 0.5);
  await page.locator('#view').focus();
  const before = await ammo(page);
  assert.ok(before > 0, `ammo to spend: ${before}`);
  const pressedAt = (await guestState(page)).tick;
  await page.keyboard.down('Space');
  // A second of ticks: long past the input delay, and several shots' worth.
  await until(async () => (await guestState(page)).tick > pressedAt + 30, 5_000, 'thirty ticks');
  await page.keyboard.up('Space');
  assert.equal(await ammo(page), before, 'Space no longer fires');
  const shots = async () => Object.entries((await guestState(page)).audio.byName)
    .filter(([name]) => name.startsWith('shot-')).reduce((n, [, count]) => n + Number(count), 0);
  const shotsBefore = await shots();
  await page.keyboard.down('KeyJ');
  await until(async () => (await ammo(page)) < before, 5_000, 'J to fire');
  await page.keyboard.up('KeyJ');
  // The shot was heard: a voice started for it.
  await until(async () => (await shots()) > shotsBefore, 5_000, 'a sound for the shot');

  // A gamepad's left stick walks the player forward.
  // (Forward, or back if the player happens to face a wall.)
  /** @param {number} stickY */
  const walk = async (stickY) => {
    const from = /** @type {{x: number, y: number}} */ ((await guestState(page)).pos);
    await page.evaluate((y) => { /** @type {any} */ (window).__stickY = y; }, stickY);
    const moved = await until(async () => {
      const p = (await guestState(page)).pos;
      return p && Math.hypot(p.x - from.x, p.y - from.y) > 0.5 ? p : null;
    }, 3_000, 'the stick to walk the player').catch(() => null);
    await page.evaluate(() => { /** @type {any} */ (window).__stickY = 0; });
    return moved;
  };
  assert.ok((await walk(-1)) ?? (await walk(1)), 'the left stick walks the player');

  // The settings come back after a reload (on any page with the panel).
  await page.goto(`${url}/play`);
  await page.evaluate(() => document.getElementById('settings-button')?.click());
  assert.equal(await page.locator('#setting-sensitivity').inputValue(), '2.5');
  assert.equal(await page.locator('#setting-view-scale').inputValue(), '0.5');
  assert.equal((await page.locator('#settings-dialog button[data-action="fire"]').textContent())?.trim(), 'J');
});

test('the host page: an empty session name gets a default, and the invite button copies the /play link', { timeout: 120_000 }, async () => {
  const url = await rig.lobby();
  // The clipboard API needs a secure context; the lobby is plain HTTP on a test address.
  const browser = await rig.browser([`--unsafely-treat-insecure-origin-as-secure=${url}`]);
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
  const page = await context.newPage();
  page.on('pageerror', (e) => console.error(`[host] page error: ${e.message}`));
  await page.goto(`${url}/host`);
  await page.locator('#player-name').fill('Ana');
  await page.locator('#open-session').click();
  const code = await until(async () => {
    const s = await page.evaluate(() => /** @type {any} */ (window).campfire.state());
    if (s.error) throw new Error(`the host page failed: ${s.error}`);
    return s.state === 'waiting' && s.code ? /** @type {string} */ (s.code) : null;
  }, 30_000, 'the session to open');
  const listed = await until(async () => {
    const sessions = await page.evaluate(async () => (await (await fetch('/lobby?limit=100')).json()).sessions);
    return sessions.find((/** @type {any} */ e) => e.code === code);
  }, 5_000, 'the session in the lobby');
  assert.equal(listed.name, "Ana's game");
  assert.equal(await page.locator('#session-code').textContent(), code);
  await page.locator('#waiting-invite-button').click();
  await until(async () => (await page.locator('#waiting-invite-button').textContent()) === 'Link copied', 5_000, 'the copy');
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(copied, `${url}/play?code=${code}`);
});

test('a phone: touch controls over a view that fits, upright and on its side; a tap on Fire shoots', { timeout: 180_000 }, async () => {
  const url = await rig.lobby();
  const daemon = rig.daemon(['--name', 'Touch', '--bots', '0', '--start-when', '1', '--levels', '1', '--seed', '12']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
  const browser = await rig.browser();
  const context = await browser.newContext({ viewport: { width: 360, height: 640 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
  const page = await playing(context, url, code, 'Thumbs');
  assert.ok(await page.locator('#touch-fire').isVisible(), 'the touch controls are shown');
  assert.ok(!(await page.locator('#keys-help').isVisible()), 'no keyboard help on a phone');
  assertInside(await layout(page), 'phone upright');
  await page.screenshot({ path: join(OUTPUT, 'phone-portrait-touch.png') });

  const before = await ammo(page);
  await page.tap('#touch-fire');
  await until(async () => (await ammo(page)) < before, 5_000, 'a tap on Fire to shoot');
  assert.equal((await guestState(page)).audio.state, 'running', 'the tap started the sound');

  await page.setViewportSize({ width: 640, height: 360 });
  assertInside(await layout(page), 'phone on its side');
  await page.screenshot({ path: join(OUTPUT, 'phone-landscape-touch.png') });
});
