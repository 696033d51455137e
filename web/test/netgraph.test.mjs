// The netgraph's rows and bar as a player reads them, from readings shaped
// like netcode's GuestNetgraph and HostNetgraph.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FrameCounter, correctionBar, formatRate, netgraphLines } from '../lib/netgraph.js';
import { normalizeSettings, reservedKey } from '../lib/settings.js';

const flow = (bytesPerS, messagesPerS) => ({
  bytesPerS, wireBytesPerS: bytesPerS + messagesPerS * 93, messagesPerS, bytes: 0, messages: 0,
});

const guest = {
  tick: 612, hostTick: 615, rttMs: null, rttJitterMs: null, inputDelay: 2, arrivalJitterMs: 3.25,
  down: flow(5436, 33), up: flow(1210, 31), snapshotsPerS: 1, snapshots: 20, snapshotBytes: 1712,
  heldInputs: 4, heldPerS: 0, correction: 0.15, largestCorrection: 0.3, corrections: 3,
  correctionVisibleAt: 0.1, desyncs: 0,
};

test('a guest reading shows every figure the netgraph promises', () => {
  const rows = Object.fromEntries(netgraphLines({ role: 'guest', fps: 59.6, rttMs: 41.2, guest }));
  assert.equal(rows.fps, '60');
  assert.equal(rows.tick, '612 (host 615)');
  assert.equal(rows.rtt, '41 ms ± 3.3 ms');
  assert.equal(rows.delay, '2 ticks');
  assert.equal(rows.down, '5.4 KB/s (wire 8.5 KB/s) 33 msg/s');
  assert.equal(rows.snapshots, '1.0/s, 1712 B');
  assert.equal(rows.held, '4 (0.0/s)');
  assert.equal(rows.correction, '0.150 (max 0.300)');
  assert.equal(rows.desyncs, '0');
});

test("the host's round trip, when it tells one, is the one shown", () => {
  const told = { ...guest, rttMs: 0.412, rttJitterMs: 0.06 };
  const rows = Object.fromEntries(netgraphLines({ role: 'guest', fps: 60, rttMs: 1, guest: told }));
  assert.equal(rows.rtt, '0.4 ms ± 0.1 ms');
});

test('figures not known yet read as a dash, not as zero', () => {
  const rows = Object.fromEntries(netgraphLines({
    role: 'guest', fps: null, rttMs: null,
    guest: { ...guest, hostTick: null, arrivalJitterMs: null, snapshotBytes: null, correction: null },
  }));
  assert.equal(rows.fps, '–');
  assert.equal(rows.tick, '612');
  assert.equal(rows.rtt, '– ± –');
  assert.equal(rows.correction, '–');
});

test('the correction bar fills at twice the visible threshold and is red from it', () => {
  assert.deepEqual(correctionBar(0, 0.1), { fill: 0, visible: false });
  assert.deepEqual(correctionBar(0.05, 0.1), { fill: 0.25, visible: false });
  assert.deepEqual(correctionBar(0.1, 0.1), { fill: 0.5, visible: true });
  assert.deepEqual(correctionBar(3, 0.1), { fill: 1, visible: true });
  assert.deepEqual(correctionBar(null, 0.1), { fill: 0, visible: false });
  assert.deepEqual(correctionBar(0.2, null), { fill: 0, visible: false });
});

test('a host reading has a row per guest link', () => {
  const rows = netgraphLines({
    role: 'host', fps: 30, rttMs: null,
    host: {
      tick: 90, snapshots: 3,
      links: [{ player: 'p2', name: 'Ada', rttMs: 12.5, rttJitterMs: 1.5, inputDelay: 2, down: flow(800, 31), heldInputs: 1, desyncs: 0 }],
    },
  });
  assert.deepEqual(rows.at(-1), ['Ada', '13 ms ± 1.5 ms, delay 2, 800 B/s 31 msg/s, held 1, desyncs 0']);
  const empty = netgraphLines({ role: 'host', fps: 30, rttMs: null, host: { tick: 0, snapshots: 0, links: [] } });
  assert.deepEqual(empty.at(-1), ['guests', 'none yet']);
});

test('rates read in bytes below a kilobyte', () => {
  assert.equal(formatRate(999), '999 B/s');
  assert.equal(formatRate(2500), '2.5 KB/s');
});

test('frames per second count the last second only', () => {
  const f = new FrameCounter();
  assert.equal(f.fps(0), null);
  for (let t = 0; t < 2000; t += 20) f.frame(t);
  assert.equal(f.fps(1990), 50);
  assert.equal(f.fps(5000), null);
});

test('the netgraph setting is kept, and its keys cannot be bound', () => {
  assert.equal(normalizeSettings({ netgraph: true }).netgraph, true);
  assert.equal(normalizeSettings({ netgraph: 'yes' }).netgraph, false);
  assert.equal(reservedKey('F3'), true);
  assert.equal(reservedKey('Backquote'), true);
  assert.deepEqual(normalizeSettings({ bindings: { map: ['F3'] } }).bindings.map, []);
});
