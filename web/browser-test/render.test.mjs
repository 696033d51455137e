// The first-person renderer in Chromium, with no server at all: the page
// and the modules are served by request interception (tools/bench-render.mjs,
// openRenderPage). Renders the view-state fixture in first-person and
// automap mode on a laptop-sized and a phone-sized window, saves
// screenshots, and checks pixels where walls, a sprite and the exit must be.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OUTPUT, Rig } from './harness.mjs';
import { openRenderPage } from '../tools/bench-render.mjs';

const rig = new Rig();
after(() => rig.close());

/** @param {number[]} p rgba */
const isDoorColour = (p) => p[0] > p[2] + 25 && p[0] > p[1];
/** @param {number[]} p rgba: the grey-violet stone */
const isStoneColour = (p) => p[2] > p[0] && p[2] > p[1] && p[2] > 40;
/** @param {number[]} p rgba */
const isBruteColour = (p) => p[2] > p[1] + 40 && p[0] > p[1] + 15;
/** @param {number[]} a @param {string} hex */
const near = (a, hex) => {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return Math.abs(a[0] - r) <= 2 && Math.abs(a[1] - g) <= 2 && Math.abs(a[2] - b) <= 2;
};

/**
 * Pixels a little above the middle of the screen (between the door's iron
 * band and the crosshair's arms): the door the local player faces.
 * @param {import('playwright-core').Page} page
 * @param {{width: number, horizon: number, camera: any, depth: number[]}} f
 */
async function centreSamples(page, f) {
  const focal = await page.evaluate(([cam, w]) => /** @type {any} */ (window).render.focalLength(cam, w), [f.camera, f.width]);
  const halfWall = (0.5 * focal) / f.depth[Math.floor(f.depth.length / 2)];
  const y = f.horizon - 0.3 * halfWall;
  const xs = [-0.035, -0.02, 0.02, 0.035].map((d) => f.width / 2 + d * f.width);
  return Promise.all(xs.map((x) => page.evaluate(([px, py]) => /** @type {any} */ (window).pixel(px, py), [x, y])));
}

/**
 * The fixture's aggroed brute projected with the renderer's own projection:
 * pixels in its torso.
 * @param {import('playwright-core').Page} page
 */
async function bruteSamples(page) {
  return page.evaluate(() => {
    const w = /** @type {any} */ (window);
    const f = w.draw();
    const v = w.render.interpolateView(w.fixtures.prev, w.fixtures.next, 0.5);
    const brute = v.enemies.find((/** @type {any} */ e) => e.kind === 'brute');
    // The brute's art is 1.05 tiles wide and 1.0 tall (sprite-art.js).
    const s = w.render.projectSprite(f.camera, brute.x, brute.y, 1.05, 1.0, f.width, f.horizon);
    if (!s) return { projected: false, pixels: [] };
    const y = s.top + (s.bottom - s.top) * 0.42;
    const pixels = [-0.08, 0, 0.08].map((dx) => w.pixel(s.screenX + dx * (s.right - s.left), y));
    return { projected: true, pixels };
  });
}

test('first person at 1280x720: walls, the door ahead, a sprite where the brute projects', { timeout: 60_000 }, async () => {
  const browser = await rig.browser();
  const { page, context, errors } = await openRenderPage(browser, { width: 1280, height: 720 });
  const f = await page.evaluate(() => /** @type {any} */ (window).draw());
  await page.screenshot({ path: join(OUTPUT, 'render-first-person.png') });
  assert.equal(f.width, 1280);
  assert.ok(f.camera, 'the local player is the camera');
  // The door is 6.5 tiles ahead along the row the player stands in.
  const mid = f.depth[Math.floor(f.depth.length / 2)];
  assert.ok(mid > 5.5 && mid < 7, `centre depth ${mid}`);
  const door = await centreSamples(page, f);
  assert.ok(door.filter(isDoorColour).length >= 3, `door colour above the crosshair: ${JSON.stringify(door)}`);
  // The ceiling and floor are not door-coloured: the check can fail.
  const top = await page.evaluate(() => /** @type {any} */ (window).pixel(640, 5));
  assert.ok(!isDoorColour(top), `ceiling ${top}`);
  // Between the grunt and the door: the stone wall the door sits in, not the door.
  const wall = await page.evaluate(([x, y]) => /** @type {any} */ (window).pixel(x, y), [0.367 * f.width, f.horizon - 12]);
  assert.ok(isStoneColour(wall) && !isDoorColour(wall), `stone wall ${wall}`);
  const brute = await bruteSamples(page);
  assert.ok(brute.projected, 'the brute is in view');
  assert.ok(brute.pixels.filter(isBruteColour).length >= 2, `brute colour: ${JSON.stringify(brute.pixels)}`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('automap at 1280x720 shows the exit at its tile', { timeout: 60_000 }, async () => {
  const browser = rig.browsers[0] ?? await rig.browser();
  const { page, context, errors } = await openRenderPage(browser, { width: 1280, height: 720 });
  const got = await page.evaluate(() => {
    const w = /** @type {any} */ (window);
    const f = w.draw({ mode: 'automap' });
    const { exit } = w.fixtures.next;
    const l = f.automap;
    // A corner of the exit tile (a player stands in its centre) and a wall tile.
    return {
      exit: w.pixel(l.originX + exit.x * l.scale + 2, l.originY + exit.y * l.scale + 2),
      wall: w.pixel(l.originX + 2, l.originY + 2),
    };
  });
  assert.ok(near(got.exit, '#3fbf6f'), `exit tile colour ${got.exit}`);
  assert.ok(near(got.wall, '#8a8796'), `wall tile colour ${got.wall}`);
  await page.screenshot({ path: join(OUTPUT, 'render-automap.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('a phone-sized window (360x640 CSS, 2x pixels) renders both modes legibly', { timeout: 60_000 }, async () => {
  const browser = rig.browsers[0] ?? await rig.browser();
  const { page, context, errors } = await openRenderPage(browser, { width: 360, height: 640 }, 2);
  const f = await page.evaluate(() => /** @type {any} */ (window).draw());
  await page.screenshot({ path: join(OUTPUT, 'render-phone.png') });
  assert.deepEqual([f.width, f.height], [720, 1280]);
  const door = await centreSamples(page, f);
  assert.ok(door.filter(isDoorColour).length >= 3, `door colour above the crosshair: ${JSON.stringify(door)}`);
  const unit = await page.evaluate(([w, h]) => /** @type {any} */ (window).render.hudUnit(w, h, 2), [f.width, f.height]);
  assert.ok(unit >= 28, `HUD unit ${unit} device px (14 CSS px at least)`);
  await page.evaluate(() => /** @type {any} */ (window).draw({ mode: 'automap' }));
  await page.screenshot({ path: join(OUTPUT, 'render-phone-automap.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('every weapon slot, a downed player and a spectator render (in sub-rectangles of one canvas)', { timeout: 60_000 }, async () => {
  const browser = rig.browsers[0] ?? await rig.browser();
  const { page, context, errors } = await openRenderPage(browser, { width: 1200, height: 600 });
  const got = await page.evaluate(() => {
    const w = /** @type {any} */ (window);
    const canvas = /** @type {HTMLCanvasElement} */ (document.querySelector('canvas'));
    canvas.width = 1200;
    canvas.height = 600;
    const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
    const { prev, next } = w.fixtures;
    /** @param {any} s @param {(p: any) => any} edit */
    const withMe = (s, edit) => ({ ...s, players: s.players.map((/** @type {any} */ p) => (p.id === s.me ? edit(p) : p)) });
    const names = ['knife', 'pistol', 'shotgun', 'smg', 'rocket launcher', 'flamethrower'];
    const cells = [];
    for (let slot = 0; slot < 6; slot++) {
      const edit = (/** @type {any} */ p) => ({ ...p, weapon: slot, weaponName: names[slot] });
      cells.push({ prev: withMe(prev, edit), next: withMe(next, edit) });
    }
    cells.push({ prev, next: withMe(next, (p) => ({ ...p, alive: false, health: 0 })) });
    cells.push({ prev: null, next: { ...next, me: 'nobody' } });
    const cw = 300; const ch = 300;
    const out = [];
    cells.forEach((c, i) => {
      ctx.save();
      ctx.translate((i % 4) * cw, Math.floor(i / 4) * ch);
      ctx.beginPath();
      ctx.rect(0, 0, cw, ch);
      ctx.clip();
      const info = w.render.renderFrame(ctx, { ...c, alpha: 0.3, rttMs: null, width: cw, height: ch });
      ctx.restore();
      out.push({ camera: !!info.camera });
    });
    // The downed player's cell is veiled red: its centre is red-dominant.
    const down = w.pixel(2 * cw + 40, ch + 60);
    return { out, down };
  });
  await page.screenshot({ path: join(OUTPUT, 'render-weapons.png') });
  assert.equal(got.out.length, 8);
  assert.ok(got.out.every((/** @type {any} */ c) => c.camera), 'a spectator looks through another player');
  assert.ok(got.down[0] > got.down[2] + 20, `red veil ${got.down}`);
  assert.deepEqual(errors, []);
  await context.close();
});
