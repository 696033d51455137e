// The deployment rehearsal: deploy/nginx.conf, as shipped but for its
// upstream addresses and port, in front of two lobby-server replicas on one
// PostgreSQL database (as deploy/docker-compose.yml runs them, trusting the
// proxy's X-Forwarded-For). Through the proxy: 200 lobby viewers, each from
// its own loopback address, hold an event stream; while they do, a
// host-daemon publishes a session, a bot guest joins it and a browser joins
// it from the lobby page, and a new client is still served.
//
// PostgreSQL is reached through its Unix socket (the servers run in the
// server namespace, which has no route to the machine's 127.0.0.1:5432);
// CAMPFIRE_PG_SOCKET_DIR overrides /var/run/postgresql.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN_DIR, Proc, Rig, SERVER_IP, guestState, until } from './harness.mjs';

const PG_SOCKET_DIR = process.env.CAMPFIRE_PG_SOCKET_DIR ?? '/var/run/postgresql';
const VIEWERS = 200;

const rig = new Rig();
const database = `campfire_rehearsal_${process.pid}`;
const psql = (/** @type {string} */ sql) => execFileSync('psql', [
  '-h', PG_SOCKET_DIR, '-U', 'postgres', '-d', 'postgres', '-Atqc', sql,
], { stdio: ['ignore', 'pipe', 'pipe'] });
after(async () => {
  await rig.close();
  try { psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`); } catch { /* best effort */ }
});

/**
 * A lobby-server replica on the shared PostgreSQL database, as the deploy
 * files configure it behind the proxy.
 * @param {string} name
 */
async function replica(name) {
  const p = new Proc(name, join(BIN_DIR, 'lobby-server'), [
    '--listen', `${SERVER_IP}:0`, '--log-format', 'json',
    '--database-url', `postgres://postgres@localhost/${database}?host=${PG_SOCKET_DIR}`,
    '--trust-forwarded-for',
  ]);
  rig.procs.push(p);
  const [, url] = await p.waitLine(/listening on (http:\/\/[0-9.]+:\d+)/, 30_000);
  return new URL(url);
}

/**
 * deploy/nginx.conf with the replicas' addresses for lobby-1 and lobby-2,
 * listening on `port` of the server namespace's address, its pid file and
 * logs in `dir`. Everything else is the shipped file.
 * @param {URL} one
 * @param {URL} two
 * @param {number} port
 * @param {string} dir
 */
function nginxConf(one, two, port, dir) {
  const shipped = readFileSync(new URL('../../deploy/nginx.conf', import.meta.url), 'utf8');
  const conf = shipped
    .replace(/^pid .*;$/m, `pid ${join(dir, 'nginx.pid')};`)
    .replace(/server lobby-1:8080/, `server ${one.host}`)
    .replace(/server lobby-2:8080/, `server ${two.host}`)
    .replace(/listen 8080;/, `listen ${SERVER_IP}:${port};`)
    // Node hands nginx sockets, not pipes, which /dev/stdout cannot reopen.
    .replace(/access_log \/dev\/stdout;/, `access_log ${join(dir, 'access.log')};`)
    .replace(/error_log \/dev\/stderr warn;/, `error_log ${join(dir, 'error.log')} warn;`);
  for (const [what, changed] of [
    ['pid', `pid ${join(dir, 'nginx.pid')}`], ['lobby-1', one.host], ['lobby-2', two.host],
    ['listen', `${SERVER_IP}:${port}`], ['access_log', join(dir, 'access.log')], ['error_log', join(dir, 'error.log')],
  ]) {
    assert.ok(conf.includes(changed), `deploy/nginx.conf no longer has the ${what} line this test rewrites`);
  }
  return conf;
}

/**
 * nginx with that configuration in the server namespace; resolves with its
 * base URL once it answers.
 * @param {URL} one
 * @param {URL} two
 */
async function proxy(one, two) {
  const dir = mkdtempSync(join(tmpdir(), 'campfire-nginx-'));
  // A free port is not knowable ahead for nginx: try a few.
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = 20_000 + ((process.pid * 7 + attempt * 7919) % 20_000);
    const conf = join(dir, 'nginx.conf');
    writeFileSync(conf, nginxConf(one, two, port, dir));
    // SIGTERM: the master stops its workers; SIGKILL would orphan them.
    const p = new Proc('nginx', '/usr/sbin/nginx', ['-p', dir, '-c', conf, '-g', 'daemon off;'], { stopSignal: 'SIGTERM' });
    rig.procs.push(p);
    const base = `http://${SERVER_IP}:${port}`;
    const up = await Promise.race([
      until(async () => (await fetch(`${base}/nginx-health`).catch(() => null))?.ok, 10_000, 'nginx to answer')
        .then(() => true, () => false),
      p.exited.then(() => false),
    ]);
    if (up) return base;
    await p.stop();
  }
  throw new Error('nginx did not start on any of 5 ports');
}

test('the shipped proxy, two replicas on PostgreSQL, 200 viewers, a daemon, a bot and a browser', { timeout: 240_000 }, async () => {
  psql(`CREATE DATABASE ${database}`);
  const one = await replica('lobby-1');
  const two = await replica('lobby-2');
  const url = await proxy(one, two);
  rig.url = url;

  // 200 viewers, each from its own address, through the proxy.
  const viewers = new Proc('viewers', process.execPath, [
    new URL('./viewers.mjs', import.meta.url).pathname, url, String(VIEWERS), '150000',
  ]);
  rig.procs.push(viewers);
  const [line] = await viewers.waitLine(/^\{"type":"viewers".*$/, 60_000);
  const seen = JSON.parse(line);
  assert.deepEqual(seen.lobby, { 200: VIEWERS }, `every viewer reads the lobby: ${line}`);
  assert.deepEqual(seen.events, { 200: VIEWERS }, `every viewer holds an event stream: ${line}`);

  // A new client is still served, through the proxy, while they hold on.
  for (const path of ['/healthz', '/lobby', '/readyz']) {
    const res = await fetch(url + path);
    assert.equal(res.status, 200, `${path} through the proxy`);
  }

  // A daemon publishes through the proxy; a bot guest and a browser join.
  const daemon = rig.daemon(['--name', 'Rehearsal', '--bots', '1', '--start-when', '2', '--levels', '1']);
  const [, code] = await daemon.waitLine(/^session (\S+)/, 60_000);
  rig.botGuest(code, 'Bot guest');
  const browser = await rig.browser();
  const page = await (await browser.newContext({ viewport: { width: 1000, height: 700 } })).newPage();
  await page.goto(url + '/');
  await page.getByLabel('Your name').fill('Ada');
  await page.getByLabel('Your name').press('Tab');
  const row = page.locator(`tr[data-code="${code}"]`);
  await row.waitFor({ timeout: 10_000 });
  await row.getByRole('link', { name: /^Join/ }).click();
  await page.waitForURL(/\/play\?code=/, { timeout: 10_000 });
  const playing = await until(async () => {
    const s = await guestState(page).catch(() => null);
    if (!s) return null;
    return s.state === 'playing' && s.roster?.length >= 3 ? s : null;
  }, 60_000, 'the session to start with the host, the bot guest and the browser');
  assert.ok(playing.roster.includes(playing.me));

  // Both replicas carried the viewers (least_conn spreads the streams):
  // their own metrics, read directly as Prometheus would.
  for (const r of [one, two]) {
    const text = await (await fetch(new URL('/metrics', r))).text();
    const requests = [...text.matchAll(/^lobby_http_requests_total\{[^}]*\} (\d+)/gm)]
      .reduce((sum, m) => sum + Number(m[1]), 0);
    assert.ok(requests >= VIEWERS / 4, `replica ${r.host} served ${requests} requests`);
  }

  // Still served after all that.
  assert.equal((await fetch(url + '/lobby')).status, 200);
  assert.ok(viewers.child.exitCode === null, 'the viewers still hold their streams');
});
