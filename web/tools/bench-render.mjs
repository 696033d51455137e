// Benchmark of the first-person renderer in Chromium: renders BENCH_FRAMES
// frames (600 by default) of the view-state fixture with a camera that
// walks and turns, at 640x400 and at 1280x720, and prints the median and
// 95th-percentile time per renderFrame call. Then runs the WebAssembly
// engine (web/campfire.wasm) in the same browser: a 5-player all-bot level
// for three seeds, in ticks per second.
//
// Run it (as root) through the browser-test wrapper, which starts Chromium
// inside its own network namespace; the script runs from web/, so the path
// is relative to web/:
//
//   scripts/test-browser tools/bench-render.mjs
//
// The page needs no server: every request to http://campfire.test/ is
// answered from web/ by Playwright's request interception and any other
// request is aborted, so no traffic leaves the browser.
//
// Measured 2026-12-01 on the 2-core machine while other builds kept the
// load average at 4-6 (so read them as upper bounds), three runs:
//   640x400:  median 4.7-5.4 ms, p95 8.8-11.1 ms
//   1280x720: median 6.9-8.8 ms, p95 12.6-25.1 ms
//
// It also exports openRenderPage, which browser-test/render.test.mjs uses.

import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { extname, normalize, resolve, sep } from 'node:path';

const WEB = fileURLToPath(new URL('..', import.meta.url));
const ORIGIN = 'http://campfire.test';

/** The test page: the renderer and both fixtures, and a `draw` entry for the test. */
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>render test</title>
<style>html, body { margin: 0; background: #000; overflow: hidden; } canvas { display: block; width: 100vw; height: 100vh; }</style>
</head><body><canvas id="view"></canvas>
<script type="module">
import * as render from '/lib/render/index.js';
const load = async (name) => (await fetch('/test-support/' + name)).json();
const prev = await load('view-fixture.json');
const next = await load('view-fixture-next.json');
const canvas = document.getElementById('view');
const ctx = canvas.getContext('2d');
function size() {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(innerWidth * dpr);
  canvas.height = Math.round(innerHeight * dpr);
  return dpr;
}
/** Draws one frame; returns what the tests need to check pixels. */
window.draw = (opts = {}) => {
  const dpr = size();
  const info = render.renderFrame(ctx, { prev, next, alpha: 0.5, rttMs: 38, mode: 'first-person',
    width: canvas.width, height: canvas.height, pixelRatio: dpr, ...opts });
  return { camera: info.camera, horizon: info.horizon, depth: info.depth && Array.from(info.depth),
    automap: info.automap, width: canvas.width, height: canvas.height, dpr };
};
window.pixel = (x, y) => Array.from(ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data);
window.render = render;
window.fixtures = { prev, next };
document.body.dataset.ready = 'yes';
</script></body></html>`;

const TYPES = /** @type {Record<string, string>} */ ({ '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json' });

/**
 * A page showing the renderer test page, served by interception only.
 * @param {import('playwright-core').Browser} browser
 * @param {{width: number, height: number}} viewport
 * @param {number} [deviceScaleFactor]
 */
export async function openRenderPage(browser, viewport, deviceScaleFactor = 1) {
  const context = await browser.newContext({ viewport, deviceScaleFactor });
  // Registered first, so it only sees what the campfire.test route leaves.
  await context.route('**', (route) => route.abort('blockedbyclient'));
  await context.route(`${ORIGIN}/**`, (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/render-test.html') return route.fulfill({ body: PAGE, contentType: 'text/html' });
    if (path === '/web/campfire.wasm') {
      return route.fulfill({ body: readFileSync(resolve(WEB, 'campfire.wasm')), contentType: 'application/wasm' });
    }
    const file = normalize(resolve(WEB, `.${path}`));
    const allowed = (file.startsWith(`${WEB}lib${sep}`) || file.startsWith(`${WEB}test-support${sep}`)) && TYPES[extname(file)];
    if (!allowed) return route.fulfill({ status: 404, body: 'not found' });
    return route.fulfill({ body: readFileSync(file), contentType: TYPES[extname(file)] });
  });
  const page = await context.newPage();
  /** @type {string[]} */
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${ORIGIN}/render-test.html`);
  await page.waitForSelector('body[data-ready="yes"]', { timeout: 10_000 }).catch(() => {
    throw new Error(`the render test page did not load: ${errors.join('; ') || 'no error reported'}`);
  });
  return { page, context, errors };
}

/**
 * Times `frames` renderFrame calls at one size with a walking, turning camera.
 * @param {import('playwright-core').Page} page
 * @param {number} frames
 */
function timeFrames(page, frames) {
  return page.evaluate((n) => {
    const w = /** @type {any} */ (window);
    const { prev, next } = w.fixtures;
    const canvas = document.querySelector('canvas');
    const ctx = canvas.getContext('2d');
    canvas.width = innerWidth;
    canvas.height = innerHeight;
    const times = [];
    const me = (s, k) => s.players.find((p) => p.id === s.me);
    for (let i = 0; i < n; i++) {
      const a = 0.6 * Math.sin(i / 40);
      const step = (s) => ({ ...s, players: s.players.map((p) => p === me(s) ? {
        ...p, x: p.x + 1.5 * Math.sin(i / 90), dirX: Math.cos(a), dirY: Math.sin(a), planeX: -Math.sin(a) * 0.66, planeY: Math.cos(a) * 0.66,
      } : p) });
      const t0 = performance.now();
      w.render.renderFrame(ctx, { prev: step(prev), next: step(next), alpha: (i % 4) / 4, rttMs: 40, mode: 'first-person', width: canvas.width, height: canvas.height });
      // getImageData of one pixel waits for the canvas to finish drawing.
      ctx.getImageData(0, 0, 1, 1);
      times.push(performance.now() - t0);
    }
    return times;
  }, frames);
}

/** @param {number[]} xs @param {number} q */
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

async function main() {
  const { Rig } = await import('../browser-test/harness.mjs');
  const frames = Math.min(5000, Math.max(10, Number(process.env.BENCH_FRAMES) || 600));
  const rig = new Rig();
  try {
    const browser = await rig.browser();
    for (const [width, height] of [[640, 400], [1280, 720]]) {
      const { page, context } = await openRenderPage(browser, { width, height });
      await timeFrames(page, 30); // warm-up: textures and sprite art are made on first use
      const times = await timeFrames(page, frames);
      console.log(`renderFrame ${width}x${height}: ${frames} frames, median ${quantile(times, 0.5).toFixed(2)} ms, p95 ${quantile(times, 0.95).toFixed(2)} ms, max ${Math.max(...times).toFixed(2)} ms`);
      await context.close();
    }
    // The WebAssembly engine in the same browser: an all-bot campaign with
    // 5 players (bots deciding every tick, level generation included).
    const { page, context } = await openRenderPage(browser, { width: 640, height: 400 });
    const runs = await page.evaluate(async () => {
      const { loadCampfire } = await import('/lib/wasm.js');
      const campfire = await loadCampfire();
      const out = [];
      for (const seed of [3, 7, 11]) {
        const t0 = performance.now();
        const { summary } = campfire.botmatch({ seed, players: 5, levels: 1 });
        out.push({ seed, ticks: summary.ticks, ms: performance.now() - t0 });
      }
      return out;
    });
    for (const r of runs) {
      console.log(`wasm botmatch seed ${r.seed}, 5 players, 1 level: ${r.ticks} ticks in ${r.ms.toFixed(0)} ms = ${Math.round(r.ticks / (r.ms / 1000))} ticks/s`);
    }
    await context.close();
  } finally {
    await rig.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
