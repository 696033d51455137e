// Reading a replay file's text without trusting its size: a link or a
// picked file larger than any replay the daemon writes is refused before
// (or while) it is read, so a hostile ?replay=URL cannot make the tab read
// gigabytes. The module's reader then bounds what is inside (players,
// ticks: netcode::replay).

/**
 * The most bytes of replay this page reads: a level at the replay
 * reader's tick cap for a full room of players is far less, and the
 * daemon's own recordings of real levels are a few megabytes.
 */
export const MAX_REPLAY_BYTES = 64 * 1024 * 1024;

/** A replay refused for its size. */
export class ReplayTooLarge extends Error {
  /** @param {number} limit */
  constructor(limit) {
    super(`it is larger than ${Math.round(limit / (1024 * 1024))} MiB, more than any replay this page plays`);
    this.name = 'ReplayTooLarge';
  }
}

/**
 * A fetched replay's text, read up to `limit` bytes: a declared length
 * over the limit is refused before the body is read, and a body that
 * grows past it is cancelled there.
 * @param {Response} res
 * @param {number} [limit]
 * @returns {Promise<string>}
 */
export async function replayTextOf(res, limit = MAX_REPLAY_BYTES) {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) {
    await res.body?.cancel();
    throw new ReplayTooLarge(limit);
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let read = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    read += value.byteLength;
    if (read > limit) {
      await reader.cancel();
      throw new ReplayTooLarge(limit);
    }
    text += decoder.decode(value, { stream: true });
  }
}

/**
 * A picked or dropped replay file's text, refused unread when too large.
 * @param {Blob} file
 * @param {number} [limit]
 * @returns {Promise<string>}
 */
export async function replayTextOfFile(file, limit = MAX_REPLAY_BYTES) {
  if (file.size > limit) throw new ReplayTooLarge(limit);
  return file.text();
}
