// Both joining drivers against one scripted lobby: `host-daemon join` (the
// machine on tokio) and the browser's LobbyClient.join (the machine in
// wasm) make the same requests and end the same way. The scripts stop
// before any WebRTC (web/test/machines.test.mjs and
// lobby-api/tests/joining_scripts.rs cover every step of the machine);
// what this adds is the drivers: how each reads the lobby's answers and
// reports them to the machine.
//
// HOST_DAEMON_BIN: the native daemon (scripts/test sets it).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LobbyClient, LobbyError } from '../lib/lobby-client.js';
import { BUILD_VERSION } from '../lib/facts.js';
import { loadCampfire } from '../lib/wasm.js';

const campfire = await loadCampfire(readFileSync(fileURLToPath(new URL('../campfire.wasm', import.meta.url))));
const CODE = 'K7QH3MZD';

/**
 * A session view as `GET /session/CODE` answers it.
 * @param {{players?: number, maxPlayers?: number, public?: boolean, build?: string, round?: number|null}} over
 */
function view(over = {}) {
  const round = over.round ?? null;
  return {
    code: CODE, name: 'Scripted', hostName: 'Host', players: over.players ?? 1, maxPlayers: over.maxPlayers ?? 4,
    build: over.build ?? BUILD_VERSION, difficulty: null, campaign: null, hostKind: 'daemon', inProgress: false, bots: 0,
    createdAt: '2026-12-07T00:00:00Z', expiresAt: '2026-12-07T01:00:00Z', position: `0000000000001-${CODE}`,
    public: over.public ?? true, round, offer: round == null ? null : 'v=0\r\n', iceServers: [],
  };
}

/** @typedef {{status: number, body: any, headers?: Record<string, string>}} Reply */

const gone = { status: 404, body: { error: 'no_such_session', message: 'no such session' } };
const limited = { status: 429, body: { error: 'rate_limited', message: 'slow down' }, headers: { 'retry-after': '1' } };

/**
 * The scripts: the lobby's replies to the joiner's reads, in order (the
 * last one repeats), and how the join must end.
 * @type {{name: string, spectate?: boolean, replies: Reply[], end: string, reads?: number}[]}
 */
const SCRIPTS = [
  { name: 'an unknown code', replies: [gone], end: 'no_such_session', reads: 1 },
  { name: 'a full session, for a player', replies: [{ status: 200, body: view({ players: 4 }) }], end: 'no_open_round', reads: 1 },
  {
    name: 'a full session, for a spectator who waits until it ends',
    spectate: true,
    replies: [{ status: 200, body: view({ players: 4 }) }, { status: 200, body: view({ players: 4 }) }, gone],
    end: 'no_such_session',
    reads: 3,
  },
  { name: 'a host of another build', replies: [{ status: 200, body: view({ round: 3, build: 'campfire-0.0.0-old' }) }], end: 'version_mismatch', reads: 1 },
  { name: 'a 429 waited out, then an unknown code', replies: [limited, gone], end: 'no_such_session', reads: 2 },
  { name: 'an unlisted session with room and no round', replies: [{ status: 200, body: view({ public: false }) }], end: 'no_open_round' },
];

/** A lobby that answers the joiner's reads from a script and records every request. */
class ScriptedLobby {
  constructor() {
    /** @type {Reply[]} */
    this.replies = [];
    /** @type {string[]} */
    this.requests = [];
    this.server = createServer((req, res) => {
      this.requests.push(`${req.method} ${req.url}`);
      const reads = this.requests.filter((r) => r.startsWith('GET ')).length;
      const reply = req.method === 'GET' && req.url === `/session/${CODE}`
        ? this.replies[Math.min(reads, this.replies.length) - 1]
        : { status: 500, body: { error: 'internal', message: `unscripted ${req.method} ${req.url}` } };
      res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
      res.end(JSON.stringify(reply.body));
    });
  }

  /** @param {Reply[]} replies */
  reset(replies) {
    this.replies = replies;
    this.requests = [];
  }

  get url() {
    const a = /** @type {import('node:net').AddressInfo} */ (this.server.address());
    return `http://127.0.0.1:${a.port}`;
  }
}

const lobby = new ScriptedLobby();
before(() => new Promise((resolve) => lobby.server.listen(0, '127.0.0.1', () => resolve(null))));
after(() => lobby.server.close());

/**
 * How the browser's join ended: its error code.
 * @param {boolean} spectate
 */
async function browserJoin(spectate) {
  try {
    await new LobbyClient(lobby.url).join(CODE.toLowerCase(), { campfire, name: 'Ada', spectate, RTCPeerConnection: /** @type {any} */ (null) });
    return 'joined';
  } catch (e) {
    assert.ok(e instanceof LobbyError, String(e));
    return e.code;
  }
}

/** `host-daemon join`'s words for each ending, from its JoinError messages. */
const DAEMON_ENDS = [
  [/no such session/, 'no_such_session'],
  [/full or has already started/, 'no_open_round'],
  [/version mismatch/, 'version_mismatch'],
];

/**
 * How the daemon's join ended, read from its exit and message.
 * @param {boolean} spectate
 */
function daemonJoin(spectate) {
  const bin = process.env.HOST_DAEMON_BIN;
  assert.ok(bin, 'set HOST_DAEMON_BIN to the host-daemon binary (scripts/test does)');
  const args = ['join', CODE.toLowerCase(), '--server', lobby.url, '--bind-ip', '127.0.0.1', '--name', 'Ada'];
  if (spectate) args.push('--spectate');
  return new Promise((resolve) => {
    execFile(bin, args, { timeout: 60_000 }, (error, _stdout, stderr) => {
      assert.equal(error?.code, 2, `the join fails with exit 2: ${stderr}`);
      const end = DAEMON_ENDS.find(([pattern]) => pattern.test(stderr));
      resolve(end ? end[1] : `unrecognized: ${stderr}`);
    });
  });
}

for (const script of SCRIPTS) {
  test(`both drivers, one lobby: ${script.name}`, { timeout: 60_000 }, async () => {
    const spectate = script.spectate ?? false;
    lobby.reset(script.replies);
    const browserEnd = await browserJoin(spectate);
    const browserRequests = lobby.requests;
    lobby.reset(script.replies);
    const daemonEnd = await daemonJoin(spectate);
    const daemonRequests = lobby.requests;
    assert.equal(browserEnd, script.end, 'the browser');
    assert.equal(daemonEnd, script.end, 'the daemon');
    // Only reads of the session; as many of them as the script says (the
    // unlisted wait polls for 5 s: about as many each way).
    for (const r of [...browserRequests, ...daemonRequests]) assert.equal(r, `GET /session/${CODE}`);
    if (script.reads != null) {
      assert.equal(browserRequests.length, script.reads, 'the browser\'s reads');
      assert.equal(daemonRequests.length, script.reads, 'the daemon\'s reads');
    } else {
      assert.ok(browserRequests.length >= 10, `the browser read ${browserRequests.length} times`);
      assert.ok(Math.abs(browserRequests.length - daemonRequests.length) <= 3,
        `reads: browser ${browserRequests.length}, daemon ${daemonRequests.length}`);
    }
  });
}
