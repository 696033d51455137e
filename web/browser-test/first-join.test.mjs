// The first join (issue 46): a browser opening /play?code=... the moment a
// freshly started daemon publishes its session connects at once, with the
// browser in its own namespace and with the browser in the daemon's.
// Each try is a new daemon and a new browser, as a tester's first join is.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { NS_SERVER, Rig, guestState, until } from './harness.mjs';

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
