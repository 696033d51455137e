// Replay files verified by the WebAssembly module (Campfire.replay, the
// cf_replay export), as `host-daemon replay FILE` verifies them natively:
// a level the daemon recorded re-simulates to the hash on the file's end
// line; a copy with one input changed in the middle does not; junk is a
// WasmError naming the line, never a trap, and leaves the module usable.
//
// The fixture, fixtures/short-level.replay, was recorded by the real
// daemon over WebRTC on loopback (127.0.0.1 only), as tests/tests/replays.rs
// records one, with a 300-tick safety stop to keep it small (the level ends
// host-shutdown at tick 300, and the file still gets its end line):
//   lobby-server --listen 127.0.0.1:0 --database-url sqlite://$TMP/lobby.db
//   host-daemon host --server $URL --name fixture --bind-ip 127.0.0.1 --bots 1 \
//     --start-when 1 --levels 1 --sessions 1 --max-ticks 300 --record $DIR
//   host-daemon join $CODE --server $URL --bot --name Ada --bind-ip 127.0.0.1
// and $DIR/$CODE-level-1.replay copied here. Record it again when the replay
// format (netcode::replay) or the compact bundle form (protocol::wire)
// changes.
//
// HOST_DAEMON_BIN: the native daemon (scripts/test sets it); its `replay`
// line on the fixture must equal the module's answer field for field.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WasmError, loadCampfire } from '../lib/wasm.js';

const campfire = await loadCampfire(readFileSync(fileURLToPath(new URL('../campfire.wasm', import.meta.url))));
const FIXTURE_PATH = fileURLToPath(new URL('./fixtures/short-level.replay', import.meta.url));
const FIXTURE = readFileSync(FIXTURE_PATH, 'utf8');
const LINES = FIXTURE.split('\n').filter((l) => l !== '');
const HEADER = JSON.parse(LINES[0]).replay;
const END = JSON.parse(/** @type {string} */ (LINES.at(-1))).end;
/** The tick bundles: every line between the header and the end. */
const BUNDLES = LINES.slice(1, -1);

/**
 * A postcard varint at `at` (protocol::wire's compact form is postcard).
 * @param {Uint8Array} bytes
 * @param {number} at
 * @returns {[number, number]} the value and where the next field starts
 */
function varint(bytes, at) {
  let value = 0;
  for (let shift = 0; at < bytes.length; shift += 7) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, at];
  }
  throw new Error('a varint runs past the record');
}

/**
 * A compact tick bundle line (`~` and base64url postcard) with one input
 * changed: the first player's turn-left flag (bit 4 of its flags varint).
 * Reads only the record's head (variant, tick, level epoch, input count,
 * the first player's id) and checks it against what the line must be, so a
 * change of the compact form fails here, not as a silent non-mutation.
 * @param {string} line
 * @param {number} tick the tick the line must carry
 */
function withOneInputChanged(line, tick) {
  assert.ok(line.startsWith('~'), 'a compact bundle');
  const bytes = Buffer.from(line.slice(1), 'base64url');
  let at = 0;
  let value;
  [value, at] = varint(bytes, at);
  assert.equal(value, 0, 'the Bundle record');
  [value, at] = varint(bytes, at);
  assert.equal(value, tick, 'the bundle\'s tick');
  [value, at] = varint(bytes, at);
  assert.equal(value, HEADER.levelEpoch, 'the bundle\'s level epoch');
  [value, at] = varint(bytes, at);
  assert.ok(value >= 1, 'at least one input');
  [value, at] = varint(bytes, at);
  const id = bytes.subarray(at, at + value).toString('utf8');
  assert.ok(HEADER.roster.includes(id), `the first input is a roster player's, not ${id}`);
  at += value;
  // The flags varint's first byte: bit 4 is a value bit whatever its
  // length, so the record keeps its size and layout.
  bytes[at] ^= 0x10;
  return `~${bytes.toString('base64url')}`;
}

test('the fixture is a whole recorded level: a header, a bundle per tick, an end line', () => {
  assert.equal(HEADER.format, 1);
  assert.equal(BUNDLES.length, END.ticks, 'one bundle per recorded tick');
  assert.match(END.finalWorldHash, /^[0-9a-f]{16}$/);
  assert.ok(FIXTURE.length < 100_000, `${FIXTURE.length} bytes`);
});

test('a recorded level re-simulates to the hash on its end line', () => {
  const verdict = campfire.replay(FIXTURE);
  assert.equal(verdict.type, 'replay');
  assert.equal(verdict.matches, true, JSON.stringify(verdict));
  assert.equal(verdict.finalWorldHash, END.finalWorldHash);
  assert.equal(verdict.recordedWorldHash, END.finalWorldHash);
  assert.equal(verdict.ticks, END.ticks);
  assert.equal(verdict.ticks, BUNDLES.length);
  assert.equal(verdict.levelEpoch, HEADER.levelEpoch);
  assert.equal(verdict.levelIndex, HEADER.levelIndex);
  assert.equal(verdict.build, HEADER.build);
  assert.deepEqual(verdict.roster, HEADER.roster);
});

test('one input changed in the middle: every tick still runs, but not to the recorded hash', () => {
  const middle = Math.floor(BUNDLES.length / 2);
  const lines = [...LINES];
  // LINES[0] is the header; the bundle of tick `middle` is line middle + 1
  // (the recording starts at tick 0, as the end line's count says).
  lines[middle + 1] = withOneInputChanged(LINES[middle + 1], middle);
  assert.notEqual(lines[middle + 1], LINES[middle + 1]);
  const verdict = campfire.replay(lines.join('\n'));
  assert.equal(verdict.matches, false, JSON.stringify(verdict));
  assert.equal(verdict.ticks, END.ticks);
  assert.notEqual(verdict.finalWorldHash, END.finalWorldHash);
  assert.equal(verdict.recordedWorldHash, END.finalWorldHash);
});

test('a recording without its end line runs but cannot match', () => {
  const verdict = campfire.replay(LINES.slice(0, -1).join('\n'));
  assert.equal(verdict.matches, null);
  assert.equal(verdict.recordedWorldHash, null);
  assert.equal(verdict.ticks, BUNDLES.length);
  assert.equal(verdict.finalWorldHash, END.finalWorldHash, 'the same ticks, the same world');
});

test('junk is a WasmError naming the line, and the module stays usable', () => {
  const junk = [
    ['', /^replay: line 1: an empty file$/],
    ['not a replay at all', /^replay: line 1: not a replay header/],
    ['{"replay":{"format":1}}', /^replay: line 1: not a replay header/],
    [LINES[0].replace('"format":1', '"format":99'), /^replay: line 1: replay format 99/],
    [`${LINES[0]}\n~AAAA`, /^replay: line 2: /],
    [`${LINES[0]}\n{"type":"hello"}`, /^replay: line 2: /],
    [`${LINES[0]}\n${LINES[1]}\n${LINES[3]}`, /^replay: line 3: tick 2 where 1 was due$/],
    [`${LINES.join('\n')}\n~AAAA`, new RegExp(`^replay: line ${LINES.length + 1}: a record after the end$`)],
    [[...LINES.slice(0, 10), LINES[10].slice(0, 9)].join('\n'), /^replay: line 11: /],
    ['\u0000\uFFFD\n\n~~~', /^replay: line 1: /],
  ];
  for (const [text, message] of junk) {
    assert.throws(() => campfire.replay(/** @type {string} */ (text)), (e) => {
      assert.ok(e instanceof WasmError, String(e));
      assert.match(e.message, /** @type {RegExp} */ (message));
      return true;
    }, String(text).slice(0, 60));
  }
  assert.equal(campfire.replay(FIXTURE).matches, true, 'after every refusal');
});

test('the module answers what the native `host-daemon replay` prints', () => {
  const bin = process.env.HOST_DAEMON_BIN;
  assert.ok(bin, 'set HOST_DAEMON_BIN to the host-daemon binary (scripts/test does)');
  const out = execFileSync(bin, ['replay', FIXTURE_PATH], { encoding: 'utf8' });
  const native = JSON.parse(out.trim().split('\n')[0]);
  assert.deepEqual(campfire.replay(FIXTURE), native);
});
