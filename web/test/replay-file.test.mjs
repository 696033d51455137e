// A replay URL or file larger than any replay is refused without being
// read whole: a declared length over the cap is refused unread, a body
// that keeps coming is cancelled just past the cap, a big picked file is
// refused before its text is read.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReplayTooLarge, replayTextOf, replayTextOfFile } from '../lib/replay-file.js';

/**
 * A streamed body of `chunks` chunks of `size` bytes, with no length
 * declared; counts the chunks pulled.
 */
function endlessBody(chunks, size) {
  const pulled = { count: 0, cancelled: false };
  const chunk = new Uint8Array(size).fill(0x41);
  const body = new ReadableStream({
    pull(controller) {
      if (pulled.count === chunks) return controller.close();
      pulled.count += 1;
      controller.enqueue(chunk);
    },
    cancel() {
      pulled.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { body, pulled };
}

test('a body past the cap is cancelled there, not read to its end', async () => {
  const { body, pulled } = endlessBody(100_000, 1024);
  await assert.rejects(replayTextOf(new Response(body), 10 * 1024), ReplayTooLarge);
  assert.ok(pulled.count <= 12, `pulled ${pulled.count} chunks of 1 KiB for a 10 KiB cap`);
  assert.ok(pulled.cancelled, 'the rest of the body was cancelled');
});

test('a declared length over the cap is refused before the body is read', async () => {
  const { body, pulled } = endlessBody(100, 1024);
  const res = new Response(body, { headers: { 'content-length': String(100 * 1024) } });
  await assert.rejects(replayTextOf(res, 10 * 1024), /larger than/);
  assert.equal(pulled.count, 0);
});

test('a replay within the cap is read whole, multi-byte text intact', async () => {
  const text = 'campfire replay 1\n{"name":"Zoë ✓"}\n'.repeat(200);
  assert.equal(await replayTextOf(new Response(text), text.length * 2), text);
  const exact = new TextEncoder().encode(text).byteLength;
  assert.equal(await replayTextOf(new Response(text), exact), text);
  await assert.rejects(replayTextOf(new Response(text), exact - 1), ReplayTooLarge);
});

test('a picked file over the cap is refused unread', async () => {
  const file = new Blob(['x'.repeat(2048)]);
  await assert.rejects(replayTextOfFile(file, 1024), ReplayTooLarge);
  assert.equal(await replayTextOfFile(file, 2048), 'x'.repeat(2048));
});
