// The first join (issue 46): a browser opening /play?code=... the moment a
// freshly started daemon publishes its session connects at once, with the
// browser in its own namespace and with the browser in the daemon's.
// Each try is a new daemon and a new browser, as a tester's first join is.
// A join whose first connection fails (the daemon's address unreachable
// for a while) is tried again by itself (the joining machine's connect
// retries), and gets in.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BIN_DIR, NS_SERVER, Proc, Rig, SERVER_IP, guestState, until } from './harness.mjs';

const TRIES = 3;

const rig = new Rig();
after(() => rig.close());

/**
 * Chromium inside the server namespace (beside the daemon): Playwright
 * launches it through a wrapper that enters the namespace first, and
 * drives it over its pipe as usual.
 */
async function browserBesideTheDaemon() {
  const dir = mkdtempSync(join(tmpdir(), 'campfire-chromium-'));
  const wrapper = join(dir, 'chromium-in-server-namespace');
  writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec ${NS_SERVER} /usr/bin/chromium "$@"\n`);
  chmodSync(wrapper, 0o755);
  const browser = await chromium.launch({
    executablePath: wrapper,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-features=WebRtcHideLocalIpsWithMdns',
    ],
    timeout: 60_000,
  });
  rig.browsers.push(browser);
  return browser;
}

/**
 * Starts a daemon, and a browser from `launch` opens its session the moment
 * it is published; how long until the data channels carried the hello.
 * @param {() => Promise<import('playwright-core').Browser>} launch
 */
async function firstJoin(launch) {
  const daemon = rig.daemon(['--name', 'First join', '--bots', '0', '--start-when', '2', '--levels', '1']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
  const browser = await launch();
  const page = await (browser.contexts()[0] ?? await browser.newContext()).newPage();
  const started = Date.now();
  await page.goto(`${rig.url}/play?code=${code}&name=First`);
  await until(async () => (await guestState(page)).phase === 'await-init', 30_000, 'the first join to connect');
  const took = Date.now() - started;
  await browser.close();
  await daemon.stop();
  return took;
}

test('a browser in its own namespace joins a daemon that just started at once', { timeout: 240_000 }, async () => {
  await rig.lobby();
  const times = [];
  for (let i = 0; i < TRIES; i++) times.push(await firstJoin(() => rig.browser()));
  console.error(`first joins, two namespaces: ${times.join(', ')} ms`);
  for (const t of times) assert.ok(t < 10_000, `${times}`);
});

test('a browser in the daemon\'s namespace joins a daemon that just started at once', { timeout: 240_000 }, async () => {
  if (!rig.url) await rig.lobby();
  const times = [];
  for (let i = 0; i < TRIES; i++) times.push(await firstJoin(browserBesideTheDaemon));
  console.error(`first joins, one namespace: ${times.join(', ')} ms`);
  for (const t of times) assert.ok(t < 10_000, `${times}`);
});

/**
 * Runs `ip` with `args` in the server namespace (`inServer`) or in this
 * process's own, the browser's.
 * @param {boolean} inServer
 * @param {string[]} args
 */
function ip(inServer, args) {
  const argv = inServer ? ['netns', 'exec', NS_SERVER, 'ip', ...args] : args;
  return execFileSync('ip', argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

test('a join whose first connection fails tries again by itself, and the player sees no error', { timeout: 180_000 }, async () => {
  if (!rig.url) await rig.lobby();
  // The daemon's WebRTC on a second address of the server namespace, which
  // the browser's namespace cannot reach during the first try (a blackhole
  // route); the lobby, on the first address, answers all along.
  const [dev] = ip(true, ['-o', '-4', 'addr', 'show']).split('\n')
    .filter((l) => l.includes(` ${SERVER_IP}/`)).map((l) => l.split(/\s+/)[1]);
  const ice = SERVER_IP.replace(/\.\d+$/, '.200');
  ip(true, ['addr', 'add', `${ice}/24`, 'dev', dev]);
  const daemon = new Proc('daemon', join(BIN_DIR, 'host-daemon'), [
    'host', '--server', rig.url, '--bind-ip', ice, '--name', 'Second try', '--bots', '0', '--start-when', '2', '--levels', '1',
  ]);
  rig.procs.push(daemon);
  try {
    const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
    ip(false, ['route', 'add', 'blackhole', `${ice}/32`]);
    let retrying;
    let page;
    try {
      page = await (await rig.browser()).newPage();
      await page.goto(`${rig.url}/play?code=${code}&name=Patient`);
      // The page says why it tries again, then that it connects again.
      retrying = await until(async () => {
        const s = await guestState(page);
        return /again…$/.test(s.said) ? s : null;
      }, 40_000, 'the first try to fail and the page to try again');
    } finally {
      ip(false, ['route', 'del', 'blackhole', `${ice}/32`]);
    }
    assert.equal(retrying.phase, null, `not in yet: ${retrying.said}`);
    assert.equal(retrying.error, '', 'the player is shown no error for the first try');
    const joined = await until(async () => {
      const s = await guestState(page);
      return s.phase === 'await-init' ? s : null;
    }, 40_000, 'the second try to get in');
    assert.equal(joined.error, '');
  } finally {
    await daemon.stop();
    ip(true, ['addr', 'del', `${ice}/24`, 'dev', dev]);
  }
});
