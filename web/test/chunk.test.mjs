import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChunkError, Reassembler, checksum, fnv1a64, split } from '../lib/chunk.js';
import { CHUNK_SIZE_BYTES } from '../lib/constants.js';

test('FNV-1a 64 matches the published test vectors (and protocol::chunk::checksum)', () => {
  assert.equal(fnv1a64(new Uint8Array()), 'cbf29ce484222325');
  assert.equal(checksum('a'), 'af63dc4c8601ec8c');
  assert.equal(checksum('foobar'), '85944171f73967e8');
});

test('split and reassemble round-trip, multi-byte characters never cut', () => {
  const payload = JSON.stringify({ grid: 'é'.repeat(20_000), tail: '🔥'.repeat(5_000), n: [1, 2, 3] });
  const { chunks, end } = split(payload);
  assert.ok(chunks.length > 2);
  for (const c of chunks) assert.ok(new TextEncoder().encode(c.data).length <= CHUNK_SIZE_BYTES);
  assert.equal(end.chunkCount, chunks.length);
  assert.equal(end.totalBytes, new TextEncoder().encode(payload).length);
  const r = new Reassembler();
  for (const c of chunks) r.push(c);
  assert.deepEqual(r.finishParse(end), JSON.parse(payload));
});

test('every broken transfer is a ChunkError naming the check', () => {
  const { chunks, end } = split('x'.repeat(40_000));
  const kind = (/** @type {() => void} */ f) => {
    try { f(); } catch (e) { assert.ok(e instanceof ChunkError); return e.kind; }
    return 'none';
  };
  assert.equal(kind(() => new Reassembler().push(chunks[1])), 'out-of-order');
  assert.equal(kind(() => { const r = new Reassembler(); r.push(chunks[0]); r.push(chunks[0]); }), 'out-of-order');
  assert.equal(kind(() => new Reassembler().push({ index: 0, data: 'y'.repeat(CHUNK_SIZE_BYTES + 1) })), 'chunk-too-large');
  assert.equal(kind(() => { const r = new Reassembler(20_000); for (const c of chunks) r.push(c); }), 'payload-too-large');
  const all = () => { const r = new Reassembler(); for (const c of chunks) r.push(c); return r; };
  assert.equal(kind(() => all().finish({ ...end, chunkCount: end.chunkCount + 1 })), 'count-mismatch');
  assert.equal(kind(() => all().finish({ ...end, totalBytes: end.totalBytes - 1 })), 'size-mismatch');
  const tampered = () => {
    const r = new Reassembler();
    for (const c of chunks) r.push(c.index === 1 ? { index: 1, data: `${c.data.slice(1)}z` } : c);
    r.finish(end);
  };
  assert.equal(kind(tampered), 'checksum-mismatch');
  const notJson = split('{"open": ');
  assert.equal(kind(() => { const r = new Reassembler(); for (const c of notJson.chunks) r.push(c); r.finishParse(notJson.end); }), 'parse');
  assert.equal(all().finish(end), 'x'.repeat(40_000));
});
