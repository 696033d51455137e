// The lobby's live event stream (`GET /lobby/events`, server-sent events)
// read from a fetch body, and its events as the client hands them on.

/** @typedef {import('./lobby-client.js').LobbyEvent} LobbyEvent */

/**
 * Reads an SSE body, calling `onMessage(eventName, data)` per event.
 * @param {Response} res
 * @param {AbortSignal} signal
 * @param {(name: string, data: string) => void} onMessage
 */
export async function readSse(res, signal, onMessage) {
  if (!res.body) throw new Error('the event stream has no body');
  const reader = res.body.getReader();
  signal.addEventListener('abort', () => reader.cancel().catch(() => {}), { once: true });
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the event stream ended');
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? '' : line.slice(colon + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'event') name = val;
        else if (field === 'data') data.push(val);
      }
      if (data.length > 0 || name !== 'message') onMessage(name, data.join('\n'));
    }
  }
}

/**
 * @param {string} name
 * @param {string} data
 * @param {(event: LobbyEvent) => void} onEvent
 */
export function dispatchSse(name, data, onEvent) {
  try {
    if (name === 'added' || name === 'updated') onEvent({ type: name, entry: JSON.parse(data) });
    else if (name === 'removed') onEvent({ type: 'removed', code: JSON.parse(data).code });
    else if (name === 'resync') onEvent({ type: 'resync' });
  } catch {
    onEvent({ type: 'resync' });
  }
}
