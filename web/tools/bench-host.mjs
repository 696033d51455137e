// Benchmark of the browser host in Chromium: what hosting costs per tick and
// per guest. For each guest count in BENCH_GUESTS (default "1 2 4"), a fresh
// lobby-server, one browser host (/host?...&bot=1, the host's player driven
// by the engine's bot) in its own headless Chromium, and that many
// `host-daemon join --bot` guests (separate processes, niced). Once the
// level runs, a BENCH_SECONDS window (default 20) measures:
//
// - the worker's time inside the host session (poll, messages, status and
//   view encoding; web/lib/host-worker.js counts it) per tick;
// - the CPU of every process of the host's Chromium (browser, renderer with
//   the page and its worker, network service, GPU process), from
//   /proc/PID/stat, per tick: the whole cost of the tab, WebRTC included.
//
// With BENCH_HIDDEN=1 the host tab is hidden (a tab in front of it) before
// the window, so nothing is drawn: the cost of hosting alone. Otherwise
// the page draws the first-person view on every animation frame (software
// rendering: headless Chromium without a GPU).
//
// Run it (as root) through the browser-test wrapper, which starts everything
// inside its own network namespaces (release or debug binaries: name them
// with CAMPFIRE_BIN_DIR; release for figures worth recording):
//
//   CAMPFIRE_BIN_DIR=target/release scripts/test-browser tools/bench-host.mjs

import { test, after } from 'node:test';
import { readFileSync, readdirSync } from 'node:fs';
import { Proc, Rig, hideTab, until } from '../browser-test/harness.mjs';

const GUESTS = (process.env.BENCH_GUESTS ?? '1 2 4').split(/\s+/).filter(Boolean).map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const TICKS_PER_SECOND = 30;
const CLK_TCK = 100;
const HIDDEN = process.env.BENCH_HIDDEN === '1';

/** Every descendant of `pid` (and `pid`), from /proc. */
function processTree(/** @type {number} */ pid) {
  const children = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(d));
    } catch {
      // The process is gone.
    }
  }
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...(children.get(all[i]) ?? []));
  return all;
}

/** CPU seconds (user + system) of the processes. */
function cpuSeconds(/** @type {number[]} */ pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process is gone.
    }
  }
  return ticks / CLK_TCK;
}

const rows = [];
after(() => {
  console.log(`\n(host tab ${HIDDEN ? 'hidden: nothing drawn' : 'visible: the view drawn every frame'})`);
  console.log('| guests | ticks in window | worker ms/tick | Chromium CPU ms/tick | Chromium CPU (cores) |');
  console.log('|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(`| ${r.guests} | ${r.ticks} | ${r.workerMsPerTick.toFixed(3)} | ${r.cpuMsPerTick.toFixed(3)} | ${r.cores.toFixed(3)} |`);
  }
});

for (const guests of GUESTS) {
  test(`the browser host with ${guests} bot guest(s)`, { timeout: 180_000 }, async () => {
    const rig = new Rig();
    try {
      await rig.lobby(['--disable-rate-limits']);
      const context = await rig.hideableBrowser();
      const chrome = /** @type {Proc} */ (rig.procs.find((p) => p.name === 'chromium'));
      const page = await context.newPage();
      await page.goto(`${rig.url}/host?name=Bench&levels=50&seed=9&startWhen=${guests}&maxPlayers=${guests + 1}&bot=1`);
      const state = () => page.evaluate(() => /** @type {any} */ (window).campfire.state());
      const { code } = await until(async () => {
        const s = await state();
        return s.code ? s : null;
      }, 30_000, 'the session to open');
      for (let i = 0; i < guests; i++) {
        const p = new Proc(`guest ${i}`, 'nice', ['-n', '19', `${process.env.CAMPFIRE_BIN_DIR}/host-daemon`, 'join', code,
          '--server', rig.url, '--bot', '--name', `bench-${i}`, '--bind-ip', process.env.CAMPFIRE_SERVER_IP ?? '']);
        rig.procs.push(p);
      }
      await until(async () => {
        const s = await state();
        return s.phase === 'running' && s.tick > 90 ? s : null;
      }, 90_000, 'the level to run for three seconds');
      if (HIDDEN) await hideTab(page);
      const pids = processTree(chrome.child.pid ?? 0);
      const a = await state();
      const cpuA = cpuSeconds(pids);
      const t0 = Date.now();
      await new Promise((r) => setTimeout(r, SECONDS * 1000));
      const b = await state();
      const cpuB = cpuSeconds(processTree(chrome.child.pid ?? 0));
      const wall = (Date.now() - t0) / 1000;
      if (b.end) throw new Error(`the session ended during the window: ${JSON.stringify(b.end)}`);
      const ticks = b.cost.ticks - a.cost.ticks;
      if (ticks < SECONDS * TICKS_PER_SECOND * 0.9) throw new Error(`only ${ticks} ticks in ${wall} s`);
      rows.push({
        guests,
        ticks,
        workerMsPerTick: (b.cost.busyMs - a.cost.busyMs) / ticks,
        cpuMsPerTick: ((cpuB - cpuA) * 1000) / ticks,
        cores: (cpuB - cpuA) / wall,
      });
    } finally {
      await rig.close();
    }
  });
}
