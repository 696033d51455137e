// Lobby viewers for the deployment rehearsal (rehearsal.test.mjs): COUNT
// clients, each from its own loopback address (127.0.1.1, 127.0.1.2, ...),
// read the lobby once and then hold its event stream open, reading it, as
// a lobby page does. Prints one JSON line with the status codes each step
// got, then holds the streams for HOLD_MS (bounded) and exits.
//
// Usage (inside the server namespace): node viewers.mjs BASE_URL COUNT HOLD_MS

import http from 'node:http';

const [base, countArg, holdArg] = process.argv.slice(2);
const target = new URL(base);
const count = Math.min(Number(countArg), 1000);
const holdMs = Math.min(Number(holdArg), 300_000);

/** The loopback address of viewer `i` (at most 250 per /24). */
const addressOf = (/** @type {number} */ i) => `127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`;

/** @type {http.ClientRequest[]} */
const held = [];

/**
 * GET `path` from `localAddress`: resolves with the status code (or an
 * error name). With `hold`, the response is read on and kept open.
 * @param {string} path
 * @param {string} localAddress
 * @param {boolean} hold
 * @returns {Promise<number|string>}
 */
function get(path, localAddress, hold) {
  return new Promise((resolve) => {
    const req = http.request({
      host: target.hostname, port: target.port, path, localAddress, agent: false,
      headers: hold ? { accept: 'text/event-stream' } : {},
    }, (res) => {
      resolve(res.statusCode ?? 0);
      res.on('data', () => {});
      res.on('error', () => {});
      if (hold && res.statusCode === 200) held.push(req);
    });
    req.setTimeout(15_000, () => { req.destroy(); resolve('timeout'); });
    req.on('error', (e) => resolve(`error ${/** @type {any} */ (e).code ?? e.message}`));
    req.end();
  });
}

/** @param {(number|string)[]} list */
const tally = (list) => list.reduce((/** @type {Record<string, number>} */ t, s) => {
  t[String(s)] = (t[String(s)] ?? 0) + 1;
  return t;
}, {});

const viewers = Array.from({ length: count }, (_, i) => addressOf(i));
const lobby = await Promise.all(viewers.map((a) => get('/lobby?limit=20', a, false)));
const events = await Promise.all(viewers.map((a) => get('/lobby/events', a, true)));
console.log(JSON.stringify({ type: 'viewers', count, lobby: tally(lobby), events: tally(events), held: held.length }));
setTimeout(() => {
  for (const req of held) req.destroy();
  process.exit(0);
}, holdMs);
