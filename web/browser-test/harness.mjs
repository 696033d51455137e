// What the browser tests share: the real binaries started inside the
// server namespace, Chromium started inside the browser namespace (both
// created by scripts/test-browser), and bounded waits.

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const env = (/** @type {string} */ name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the browser tests through scripts/test-browser`);
  return v;
};

export const NS_SERVER = env('CAMPFIRE_NS_SERVER');
export const SERVER_IP = env('CAMPFIRE_SERVER_IP');
/** The browser namespace's own address (this process runs there too). */
export const BROWSER_IP = env('CAMPFIRE_BROWSER_IP');
export const BIN_DIR = env('CAMPFIRE_BIN_DIR');
export const OUTPUT = env('CAMPFIRE_TEST_OUTPUT');
const CHROMIUM = env('CAMPFIRE_CHROMIUM');
const WORK = env('CAMPFIRE_WORK');

/** A process started inside the server namespace, with its stdout lines. */
export class Proc {
  /**
   * @param {string} name for logs
   * @param {string} bin
   * @param {string[]} args
   * @param {{direct?: boolean, stopSignal?: NodeJS.Signals, env?: Record<string, string>}} [opts] direct:
   *   start `bin` as it is (it enters its namespace itself), not inside the
   *   server namespace; stopSignal: how `kill()` ends it (SIGKILL unless
   *   given; a process with children of its own, such as nginx's master,
   *   needs a signal it can act on, or its orphans live on); env: added to
   *   the environment
   */
  constructor(name, bin, args, opts = {}) {
    this.name = name;
    this.stopSignal = opts.stopSignal ?? 'SIGKILL';
    const spawnOpts = /** @type {const} */ ({ stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } });
    this.child = opts.direct
      ? spawn(bin, args, spawnOpts)
      : spawn('ip', ['netns', 'exec', NS_SERVER, bin, ...args], spawnOpts);
    /** @type {string[]} */
    this.lines = [];
    /** @type {string[]} */
    this.errLines = [];
    /** @type {((line: string, stream: string) => void)[]} */
    this.waiters = [];
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      this.lines.push(line);
      for (const w of this.waiters) w(line, 'stdout');
    });
    createInterface({ input: this.child.stderr }).on('line', (line) => {
      if (this.errLines.length < 200) this.errLines.push(line);
      for (const w of this.waiters) w(line, 'stderr');
      if (process.env.CAMPFIRE_TEST_LOG) console.error(`[${name}] ${line}`);
    });
  }

  /**
   * The first stdout line (seen so far or coming) that matches, within `ms`.
   * @param {RegExp} re
   * @param {number} ms
   * @param {number} [from] index of the first line to consider
   * @returns {Promise<RegExpMatchArray>}
   */
  waitLine(re, ms, from = 0) {
    return this.wait('stdout', re, ms, from);
  }

  /**
   * The first stderr line that matches, within `ms`.
   * @param {RegExp} re
   * @param {number} ms
   * @returns {Promise<RegExpMatchArray>}
   */
  waitStderr(re, ms) {
    return this.wait('stderr', re, ms, 0);
  }

  /**
   * @param {'stdout'|'stderr'} stream
   * @param {RegExp} re
   * @param {number} ms
   * @param {number} from
   * @returns {Promise<RegExpMatchArray>}
   */
  wait(stream, re, ms, from) {
    for (const line of (stream === 'stdout' ? this.lines : this.errLines).slice(from)) {
      const m = line.match(re);
      if (m) return Promise.resolve(m);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(`${this.name}: no line matching ${re} within ${ms} ms`));
      }, ms);
      const check = (/** @type {string} */ line, /** @type {string} */ origin) => {
        if (origin !== stream) return;
        const m = line.match(re);
        if (m) {
          clearTimeout(timer);
          this.waiters = this.waiters.filter((w) => w !== check);
          resolve(m);
        }
      };
      this.waiters.push(check);
    });
  }

  /** Ends the process with its stop signal (SIGKILL when `force`). */
  kill(force = false) {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill(force ? 'SIGKILL' : this.stopSignal);
    }
  }

  /**
   * Ends the process and waits for it: its stop signal, then SIGKILL if it
   * is still running after 5 s. Then lets go of its output pipes, which a
   * descendant it left behind could otherwise hold open, keeping this test
   * file's process (and the whole run) alive.
   */
  async stop() {
    this.kill();
    const late = setTimeout(() => this.kill(true), 5_000);
    await this.exited;
    clearTimeout(late);
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
  }
}

/** Everything one test started; `close()` ends it all. */
export class Rig {
  constructor() {
    /** @type {Proc[]} */
    this.procs = [];
    /** @type {import('playwright-core').Browser[]} */
    this.browsers = [];
    this.url = '';
  }

  /**
   * Starts lobby-server in the server namespace on an ephemeral port.
   * @param {string[]} [extraArgs] more flags (e.g. `--disable-rate-limits`)
   */
  async lobby(extraArgs = []) {
    const dir = mkdtempSync(join(WORK, 'lobby-'));
    const p = new Proc('lobby', join(BIN_DIR, 'lobby-server'), [
      '--listen', `${SERVER_IP}:0`, '--log-format', 'json',
      '--database-url', `sqlite://${join(dir, 'lobby.db')}`, ...extraArgs,
    ]);
    this.procs.push(p);
    const m = await p.waitLine(/listening on (http:\/\/[0-9.]+:\d+)/, 30_000);
    this.url = m[1];
    return this.url;
  }

  /**
   * Starts `host-daemon host` against this rig's lobby, binding ICE to the
   * server namespace's address.
   * @param {string[]} args
   */
  daemon(args) {
    const p = new Proc('daemon', join(BIN_DIR, 'host-daemon'), [
      'host', '--server', this.url, '--bind-ip', SERVER_IP, ...args,
    ]);
    this.procs.push(p);
    return p;
  }

  /**
   * Starts `host-daemon relay` against this rig's lobby (relay sessions:
   * no engine on the daemon), binding ICE to the server namespace's
   * address; its info log on stderr.
   * @param {string[]} args
   */
  relay(args) {
    const p = new Proc('relay', join(BIN_DIR, 'host-daemon'), [
      'relay', '--server', this.url, '--bind-ip', SERVER_IP, ...args,
    ], { env: { RUST_LOG: 'warn,host_daemon=info,rtc=error,rtc_ice=error,rtc_dtls=error,webrtc=error', NO_COLOR: '1' } });
    this.procs.push(p);
    return p;
  }

  /**
   * A Rust bot guest joining `code`.
   * @param {string} code
   * @param {string} name
   */
  botGuest(code, name) {
    const p = new Proc(`guest ${name}`, join(BIN_DIR, 'host-daemon'), [
      'join', code, '--server', this.url, '--bot', '--name', name, '--bind-ip', SERVER_IP,
    ]);
    this.procs.push(p);
    return p;
  }

  /**
   * Debian's Chromium, inside the browser namespace.
   * @param {string[]} [extraArgs] more flags
   */
  async browser(extraArgs = []) {
    const b = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        '--disable-features=WebRtcHideLocalIpsWithMdns', ...extraArgs,
      ],
      timeout: 60_000,
    });
    this.browsers.push(b);
    return b;
  }

  /**
   * Debian's Chromium, inside the browser namespace, whose default
   * context's pages can really be hidden: a second tab hides the first one,
   * with Chromium's background timer throttling in effect (see hideTab).
   * Playwright emulates focus (every page "visible") in every context it
   * creates or launches; a browser it only connects to over CDP with
   * `noDefaults` keeps its default context as Chromium made it.
   */
  async hideableBrowser() {
    const profile = mkdtempSync(join(WORK, 'chromium-'));
    const proc = new Proc('chromium', CHROMIUM, [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-features=WebRtcHideLocalIpsWithMdns',
      `--user-data-dir=${profile}`, '--remote-debugging-port=0', 'about:blank',
    ], { direct: true });
    this.procs.push(proc);
    const [, endpoint] = await proc.waitStderr(/DevTools listening on (ws:\/\/\S+)/, 30_000);
    const b = await chromium.connectOverCDP(endpoint, { noDefaults: true, timeout: 30_000 });
    this.browsers.push(b);
    return b.contexts()[0];
  }

  async close() {
    for (const b of this.browsers) await b.close().catch(() => {});
    await Promise.all(this.procs.map((p) => p.stop()));
  }
}

/**
 * Polls `probe` until it returns a truthy value, at most `ms`.
 * @template T
 * @param {() => Promise<T> | T} probe
 * @param {number} ms
 * @param {string} what
 * @returns {Promise<T>}
 */
export async function until(probe, ms, what) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    last = await probe();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
}

/**
 * The guest page's test view (window.campfire.state()).
 * @param {import('playwright-core').Page} page
 */
export function guestState(page) {
  return page.evaluate(() => /** @type {any} */ (window).campfire.state());
}

/**
 * The host page's test view (window.campfire.state()).
 * @param {import('playwright-core').Page} page
 */
export function hostState(page) {
  return page.evaluate(() => /** @type {any} */ (window).campfire.state());
}

/**
 * Opens a scripted browser host on `page` (`/host?query`) and waits for its
 * session to be published; resolves with the session's code.
 * @param {import('playwright-core').Page} page
 * @param {string} url the lobby's base address
 * @param {string} query
 */
export async function openHostOn(page, url, query) {
  await page.goto(`${url}/host?${query}`);
  const s = await until(async () => {
    const st = await hostState(page);
    if (st.error) throw new Error(`the host page failed: ${st.error}`);
    return st.state === 'waiting' && st.code ? st : null;
  }, 30_000, 'the browser host to open its session');
  return /** @type {string} */ (s.code);
}

/**
 * Hides `page` for real: a new tab in front of it (the page must be in the
 * default context of a hideableBrowser). Chromium then throttles its
 * main-thread timers to about once a second, as for any background tab.
 * Resolves with the page's visibility once hidden.
 * @param {import('playwright-core').Page} page
 */
export async function hideTab(page) {
  await page.context().newPage();
  return until(async () => {
    const visibility = await page.evaluate(() => document.visibilityState);
    return visibility === 'hidden' ? { visibility } : null;
  }, 5_000, 'the tab to be hidden');
}

/**
 * Answers /play's question for a name (a link that carries none, in a
 * browser that never chose one), then the page joins.
 * @param {import('playwright-core').Page} page
 * @param {string} name
 */
export async function chooseName(page, name) {
  const input = page.getByLabel('Your name');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await input.fill(name);
  // The page reloads with the name remembered, and joins.
  await Promise.all([
    page.waitForEvent('load', { timeout: 10_000 }),
    page.getByRole('button', { name: 'Join', exact: true }).click(),
  ]);
}
