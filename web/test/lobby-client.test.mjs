// The lobby client against the real lobby-server binary on 127.0.0.1:0.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LobbyClient, LobbyError } from '../lib/lobby-client.js';
import { CHANNELS } from '../lib/facts.js';
import { loadCampfire } from '../lib/wasm.js';
import { channelOptions, withoutCandidates } from '../lib/webrtc.js';
import { startLobbyServer } from '../test-support/lobby-server.mjs';

const campfire = await loadCampfire(readFileSync(fileURLToPath(new URL('../campfire.wasm', import.meta.url))));

const SDP = 'v=0\r\no=- 4611 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sctp-port:5000\r\n';

/** @type {{url: string, stop: () => Promise<void>}} */
let server;
before(async () => { server = await startLobbyServer(); });
after(() => server.stop());

/** Collects events and lets a test wait for one. */
function recorder() {
  /** @type {any[]} */
  const events = [];
  /** @type {((e: any) => void)[]} */
  let waiters = [];
  return {
    events,
    push(/** @type {any} */ e) { events.push(e); for (const w of waiters) w(e); },
    /** @param {(e: any) => boolean} pred */
    wait(pred, ms = 5_000) {
      const seen = events.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching event within ${ms} ms: ${JSON.stringify(events)}`)), ms);
        const w = (/** @type {any} */ e) => { if (pred(e)) { clearTimeout(timer); waiters = waiters.filter((x) => x !== w); resolve(e); } };
        waiters.push(w);
      });
    },
  };
}

/** A data channel stand-in, open from the start. */
const openChannel = (/** @type {string} */ label) => ({ label, readyState: 'open', addEventListener() {}, removeEventListener() {} });

/**
 * A stand-in for RTCPeerConnection that answers with a fixed SDP at once;
 * the host's channels arrive (open) as soon as the answer is made.
 */
class FakePeerConnection {
  constructor() {
    this.iceGatheringState = 'new';
    this.localDescription = null;
    /** @type {any} */
    this.remote = null;
    this.closed = false;
    /** @type {((ev: any) => void)[]} */
    this.onChannel = [];
  }
  addEventListener(/** @type {string} */ type, /** @type {any} */ fn) { if (type === 'datachannel') this.onChannel.push(fn); }
  removeEventListener() {}
  /** The joiner creates the negotiated channels itself. */
  createDataChannel(/** @type {string} */ label, /** @type {any} */ options) {
    (this.created ??= []).push({ label, options });
    return openChannel(label);
  }
  async setRemoteDescription(/** @type {any} */ d) { this.remote = d; }
  async addIceCandidate(/** @type {any} */ c) { (this.added ??= []).push(c); }
  async createAnswer() { return { type: 'answer', sdp: SDP.replace('4611', '7777') }; }
  async setLocalDescription(/** @type {any} */ d) {
    this.localDescription = d;
    this.iceGatheringState = 'complete';
    for (const label of CHANNELS.filter((l) => !channelOptions(l).negotiated)) {
      for (const fn of this.onChannel) fn({ channel: openChannel(label) });
    }
  }
  close() { this.closed = true; }
}

const lobbyFields = { name: 'Node test', hostName: 'Ada', maxPlayers: 4, build: 'web-test', hostKind: 'player', difficulty: 'hard', campaign: 'demos' };

test('list, live events, create, rounds, answers and removal', async () => {
  const client = new LobbyClient(server.url);
  const rec = recorder();
  let opened;
  const isOpen = new Promise((r) => { opened = r; });
  const sub = client.subscribe((e) => rec.push(e), { onOpen: () => opened() });
  try {
    await isOpen;
    const hosted = await client.createSession({ ...lobbyFields, offer: SDP });
    assert.equal(hosted.round, 1);
    assert.ok(hosted.hostToken.length >= 16);
    const added = await rec.wait((e) => e.type === 'added' && e.entry.code === hosted.code);
    assert.equal(added.entry.name, 'Node test');
    assert.equal(added.entry.hostKind, 'player');
    assert.equal(added.entry.inProgress, false, 'not started');

    const listed = await client.list({ build: 'web-test', hasSpace: true, hostKind: 'player' });
    assert.deepEqual(listed.sessions.map((s) => s.code), [hosted.code]);
    assert.equal((await client.list({ build: 'other' })).sessions.length, 0);
    assert.equal((await client.listAll({ hostKind: 'daemon' })).length, 0);
    // Search and count: `q` goes to the server, `total` comes back.
    const found = await client.list({ q: 'NODE tes', build: 'web-test' });
    assert.deepEqual([found.sessions.map((s) => s.code), found.total, found.totalCapped], [[hosted.code], 1, false]);
    assert.equal((await client.list({ q: 'nobody' })).total, 0);
    await assert.rejects(client.list({ q: 'x'.repeat(65) }), (e) => e instanceof LobbyError && e.code === 'invalid_field');

    // A joiner answers round 1; the host's long-poll gets it.
    const fake = /** @type {any} */ (FakePeerConnection);
    const steps = [];
    const joining = await client.join(hosted.code.toLowerCase(), {
      campfire, name: 'Bob', build: 'web-test', RTCPeerConnection: fake, onStep: (step) => steps.push(step.step),
    });
    assert.deepEqual(steps, ['readSession', 'answer', 'connect', 'joined']);
    assert.equal(joining.view.round, 1);
    assert.deepEqual(Object.keys(joining.channels).sort(), [...CHANNELS].sort());
    assert.equal(/** @type {any} */ (joining.pc).remote.sdp, SDP);
    // The unreliable channel is negotiated: the joiner creates it itself.
    assert.deepEqual(/** @type {any} */ (joining.pc).created, [{
      label: 'input-unreliable',
      options: { ordered: false, maxRetransmits: 0, negotiated: true, id: 8 },
    }]);
    const answer = await client.waitAnswer(hosted, 1, 2_000);
    assert.deepEqual(answer, { round: 1, answer: SDP.replace('4611', '7777'), name: 'Bob' });

    // No round open and no seat: a join says the session is full or started.
    await client.updateSession(hosted, { players: 4 });
    await assert.rejects(client.join(hosted.code, { campfire, build: 'web-test', RTCPeerConnection: fake }),
      (e) => e instanceof LobbyError && e.code === 'no_open_round' && /^This session is full/.test(e.message));
    // A host of another build is refused before any answer is made.
    assert.equal(await client.publishRound(hosted, SDP), 2);
    await assert.rejects(client.join(hosted.code, { campfire, build: 'other-build', RTCPeerConnection: fake }),
      (e) => e instanceof LobbyError && e.code === 'version_mismatch' && e.hostBuild === 'web-test');
    assert.equal(await client.waitAnswer(hosted, 2, 100), null, 'no answer was posted');

    assert.equal(await client.publishRound(hosted, SDP, { players: 2 }), 3);
    await rec.wait((e) => e.type === 'updated' && e.entry.code === hosted.code && e.entry.players === 2);
    assert.equal(await client.waitAnswer(hosted, 3, 100), null);

    await client.updateSession(hosted, { public: false });
    await rec.wait((e) => e.type === 'removed' && e.code === hosted.code);
    await client.deleteSession(hosted);
    await assert.rejects(client.getSession(hosted.code),
      (e) => e instanceof LobbyError && e.status === 404 && e.code === 'no_such_session');
  } finally {
    sub.close();
  }
});

test('a session in progress (late join) is listed as such until its host says otherwise', async () => {
  const client = new LobbyClient(server.url);
  const rec = recorder();
  let opened;
  const isOpen = new Promise((r) => { opened = r; });
  const sub = client.subscribe((e) => rec.push(e), { onOpen: () => opened(), filters: { build: 'late-test' } });
  try {
    await isOpen;
    const fields = { ...lobbyFields, build: 'late-test' };
    const running = await client.createSession({ ...fields, name: 'Running', inProgress: true, offer: SDP });
    const waiting = await client.createSession({ ...fields, name: 'Waiting', offer: SDP });
    const shown = async () => Object.fromEntries((await client.list({ build: 'late-test' })).sessions
      .map((s) => [s.name, s.inProgress]));
    assert.deepEqual(await shown(), { Running: true, Waiting: false });
    assert.equal((await client.getSession(running.code)).inProgress, true);
    assert.equal((await client.getSession(waiting.code)).inProgress, false);

    // The waiting session starts with late join: the feed carries the change.
    await client.updateSession(waiting, { inProgress: true });
    await rec.wait((e) => e.type === 'updated' && e.entry.code === waiting.code && e.entry.inProgress === true);
    // Later updates that leave it out keep it.
    assert.equal(await client.publishRound(waiting, SDP, { players: 2 }), 2);
    assert.deepEqual(await shown(), { Running: true, Waiting: true });
    assert.equal((await client.getSession(waiting.code)).inProgress, true);
    await client.updateSession(running, { inProgress: false });
    assert.deepEqual(await shown(), { Running: false, Waiting: true });
    await Promise.all([client.deleteSession(running), client.deleteSession(waiting)]);
  } finally {
    sub.close();
  }
});

test('errors are LobbyErrors with the API code', async () => {
  const client = new LobbyClient(server.url);
  await assert.rejects(client.join('nope', { campfire }), (e) => e instanceof LobbyError && e.code === 'invalid_code');
  await assert.rejects(client.join('ABCDEFGH', { campfire }), (e) => e instanceof LobbyError && e.code === 'no_such_session');
  await assert.rejects(client.getSession('ABCDEFGH'), (e) => e instanceof LobbyError && e.code === 'no_such_session');
  await assert.rejects(client.createSession({ name: 'x' }), (e) => e instanceof LobbyError && e.status === 400);
  const hosted = await client.createSession({ ...lobbyFields, offer: SDP });
  await assert.rejects(client.updateSession({ ...hosted, hostToken: 'wrong' }, { players: 2 }),
    (e) => e instanceof LobbyError && e.status === 403);
  await assert.rejects(new LobbyClient('http://127.0.0.1:1').list(), (e) => e instanceof LobbyError && e.code === 'unreachable');
});

test('a player reports a session; a bad reason is a LobbyError', async () => {
  const client = new LobbyClient(server.url);
  const hosted = await client.createSession({ ...lobbyFields, offer: SDP });
  await client.report(hosted.code, 'spam');
  await client.report(hosted.code, 'other', 'the same address again changes nothing');
  await assert.rejects(client.report(hosted.code, /** @type {any} */ ('bogus')),
    (e) => e instanceof LobbyError && e.status === 400);
  await assert.rejects(client.report('ABCDEFGH', 'spam'),
    (e) => e instanceof LobbyError && e.code === 'no_such_session');
  await client.deleteSession(hosted);
});

test('a joiner applies the offer without its candidates and keeps them for later', () => {
  const offer = [
    'v=0', 'o=- 1 2 IN IP4 127.0.0.1', 's=-', 't=0 0', 'a=group:BUNDLE 0',
    'm=application 9 UDP/DTLS/SCTP webrtc-datachannel', 'c=IN IP4 0.0.0.0', 'a=mid:0',
    'a=candidate:1 1 udp 2113937151 10.0.0.1 5000 typ host', 'a=candidate:2 1 tcp 1518280447 10.0.0.1 9 typ host tcptype active',
    'a=end-of-candidates', 'a=sctp-port:5000',
    'm=application 9 UDP/DTLS/SCTP webrtc-datachannel', 'a=candidate:3 1 udp 1 10.0.0.2 6000 typ host', 'a=mid:data2', '',
  ].join('\r\n');
  const { sdp, candidates } = withoutCandidates(offer);
  assert.ok(!sdp.includes('a=candidate'), sdp);
  assert.ok(!sdp.includes('end-of-candidates'), sdp);
  assert.ok(sdp.includes('a=sctp-port:5000\r\n'), 'everything else is kept');
  assert.ok(sdp.endsWith('a=mid:data2\r\n'));
  assert.deepEqual(candidates, [
    { candidate: 'candidate:1 1 udp 2113937151 10.0.0.1 5000 typ host', sdpMLineIndex: 0, sdpMid: '0' },
    { candidate: 'candidate:2 1 tcp 1518280447 10.0.0.1 9 typ host tcptype active', sdpMLineIndex: 0, sdpMid: '0' },
    { candidate: 'candidate:3 1 udp 1 10.0.0.2 6000 typ host', sdpMLineIndex: 1, sdpMid: 'data2' },
  ]);
  assert.deepEqual(withoutCandidates(SDP), { sdp: SDP, candidates: [] });
});

test('a joiner whose reads are rate limited waits as the server says and still takes the round', async () => {
  // One read a second from this address: the joiner's looks at a session
  // without a round (every 250 ms) run into 429s.
  const strict = await startLobbyServer(['--session-reads-per-minute', '60', '--session-read-burst', '1']);
  try {
    const client = new LobbyClient(strict.url);
    const hosted = await client.createSession({ ...lobbyFields });
    assert.equal(hosted.round, null, 'no round open yet');
    const fake = /** @type {any} */ (FakePeerConnection);
    // The joiner's own client tells when it first meets a 429.
    /** @type {() => void} */
    let limited = () => {};
    const metLimit = new Promise((resolve) => { limited = () => resolve(null); });
    const joiner = new LobbyClient(strict.url, {
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        if (res.status === 429) limited();
        return res;
      },
    });
    const joining = joiner.join(hosted.code, { campfire, name: 'Bob', build: 'web-test', RTCPeerConnection: fake });
    let bound;
    await Promise.race([
      metLimit,
      new Promise((_, reject) => { bound = setTimeout(() => reject(new Error('the joiner met no 429 within 5 s')), 5_000); }),
    ]);
    clearTimeout(bound);
    assert.equal(await client.publishRound(hosted, SDP, {}), 1);
    const joined = await joining;
    assert.equal(joined.view.round, 1);
    assert.deepEqual(await client.waitAnswer(hosted, 1, 2_000), { round: 1, answer: SDP.replace('4611', '7777'), name: 'Bob' });
    // Reads past the budget are 429 with the wait.
    const reads = await Promise.all([0, 1].map(() => client.getSession(hosted.code).then(() => null, (e) => e)));
    const refused = reads.find((e) => e != null);
    assert.ok(refused instanceof LobbyError && refused.status === 429, String(refused));
    assert.ok(refused.retryAfterMs >= 1_000, `Retry-After ${refused.retryAfterMs}`);
  } finally {
    await strict.stop();
  }
});
