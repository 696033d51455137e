// The browser host's session loop, in a dedicated Worker: netcode's
// HostSession in WebAssembly (web/lib/wasm.js), paced by this worker's own
// timers. The spec forbids pacing the host's ticks from
// requestAnimationFrame or main-thread timers, which Chromium throttles in
// a hidden tab (to once a second, then once a minute); a dedicated
// worker's timers are not throttled, so the ticks keep their 30 Hz for
// every guest whatever the tab does.
//
// The page (web/lib/browser-host.js) owns the RTCPeerConnections, which
// workers cannot hold: it forwards each guest's messages and connection
// changes here and sends what this loop hands back. Messages, page -> worker:
//   {type: 'init', config}             the WebHostConfig; answers 'ready' or 'failed'
//   {type: 'add-guest', slot}          a guest connected (slots count from 0)
//   {type: 'message', slot, channel, data}
//   {type: 'state', slot, state}       RTCPeerConnection.connectionState, or 'closed'
//   {type: 'input', input}             the host player's InputSnapshot
//   {type: 'start'} / {type: 'shutdown'}
// worker -> page:
//   {type: 'out', send, close}         messages to send (per guest slots), connections to close
//   {type: 'status', status, cost}     the session's status when it changed, with the loop's cost
//   {type: 'view', view}               the host player's view of each new tick
//   {type: 'report', report}           the operator's report, once the session ended
//   {type: 'netgraph', netgraph}       every guest's link (netcode's HostNetgraph), twice a second
//   {type: 'diagnostic', text}         for the console
//   {type: 'heartbeat'}                every few seconds (the page refreshes the lobby TTL on it)

import { loadCampfire } from './wasm.js';

/** How often the page hears from the worker when nothing else happens. */
const HEARTBEAT_MS = 5_000;
/** How often the page gets the netgraph's figures. */
const NETGRAPH_EVERY_MS = 500;
/**
 * Diagnostics passed on per window: a guest sending garbage makes one per
 * message, and the console must not become its megaphone.
 */
const DIAGNOSTICS_PER_WINDOW = 20;
const DIAGNOSTIC_WINDOW_MS = 10_000;

const post = (/** @type {any} */ msg) => self.postMessage(msg);
const now = () => performance.now();

/** @type {import('./wasm.js').WasmHost|null} */
let host = null;
/** @type {ReturnType<typeof setTimeout>|null} */
let wakeTimer = null;
let lastStatus = '';
let lastTick = -1;
let lastEpoch = -1;
let reported = false;
/** When the page last got the netgraph. */
let lastNetgraph = -Infinity;
/** The current diagnostics window: when it opened, lines passed and held back. */
const diagnostics = { since: -Infinity, passed: 0, suppressed: 0 };

/** Passes a diagnostic on to the page, at most DIAGNOSTICS_PER_WINDOW per window. */
function diagnostic(/** @type {string} */ text) {
  const t = now();
  if (t - diagnostics.since >= DIAGNOSTIC_WINDOW_MS) {
    if (diagnostics.suppressed > 0) {
      post({ type: 'diagnostic', text: `(${diagnostics.suppressed} more diagnostics in the last ${DIAGNOSTIC_WINDOW_MS / 1000} s were not shown)` });
    }
    diagnostics.since = t;
    diagnostics.passed = 0;
    diagnostics.suppressed = 0;
  }
  if (diagnostics.passed < DIAGNOSTICS_PER_WINDOW) {
    diagnostics.passed += 1;
    post({ type: 'diagnostic', text });
  } else {
    diagnostics.suppressed += 1;
  }
}

/** Time spent inside the session (milliseconds), and in which ticks. */
const cost = { busyMs: 0, ticks: 0, since: 0 };

/** @type {Promise<void>} */
let ready = Promise.resolve();

/**
 * Runs `fn` against the session, then everything that is due, and hands
 * the page what came out.
 * @param {(h: import('./wasm.js').WasmHost, t: number) => void} fn
 */
function run(fn) {
  if (!host) return;
  const t0 = now();
  try {
    fn(host, t0);
  } catch (e) {
    diagnostic(`the host session refused a call: ${e instanceof Error ? e.message : e}`);
  }
  pump(t0);
}

/** @param {number} t0 when the work started (for the cost) */
function pump(t0) {
  if (!host) return;
  host.poll(now());
  const out = host.output();
  if (out.send.length > 0 || out.close.length > 0) post({ type: 'out', send: out.send, close: out.close });
  for (const text of out.events) diagnostic(text);
  const status = host.status();
  const view = status.tick !== lastTick || status.levelEpoch !== lastEpoch ? host.view() : null;
  cost.busyMs += now() - t0;
  cost.ticks = status.ticks;
  const text = JSON.stringify(status);
  if (text !== lastStatus) {
    lastStatus = text;
    post({ type: 'status', status, cost: { ...cost, elapsedMs: now() - cost.since } });
  }
  if (view) {
    lastTick = status.tick;
    lastEpoch = status.levelEpoch;
    post({ type: 'view', view });
  }
  if (now() - lastNetgraph >= NETGRAPH_EVERY_MS) {
    lastNetgraph = now();
    post({ type: 'netgraph', netgraph: host.netgraph(lastNetgraph) });
  }
  if (status.end && !reported) {
    reported = true;
    post({ type: 'report', report: host.report() });
  }
  if (wakeTimer !== null) clearTimeout(wakeTimer);
  wakeTimer = null;
  if (out.wakeAtMs !== null) {
    wakeTimer = setTimeout(() => pump(now()), Math.max(0, out.wakeAtMs - now()));
  }
}

self.onmessage = async (ev) => {
  const msg = ev.data;
  if (msg?.type === 'init') {
    ready = (async () => {
      try {
        const campfire = await loadCampfire();
        host = campfire.host(msg.config);
        cost.since = now();
        setInterval(() => post({ type: 'heartbeat' }), HEARTBEAT_MS);
        post({ type: 'ready', facts: campfire.facts });
        pump(now());
      } catch (e) {
        post({ type: 'failed', error: e instanceof Error ? e.message : String(e) });
      }
    })();
    return;
  }
  await ready;
  switch (msg?.type) {
    case 'add-guest':
      run((h, t) => {
        const slot = h.addGuest(t);
        if (slot !== msg.slot) diagnostic(`guest slot ${slot} was expected to be ${msg.slot}`);
      });
      break;
    case 'message':
      if (typeof msg.data === 'string' || msg.data instanceof ArrayBuffer) {
        run((h, t) => h.onMessage(msg.slot, msg.channel, msg.data, t));
      }
      break;
    case 'state':
      run((h, t) => h.onState(msg.slot, msg.state, t));
      break;
    case 'input':
      run((h) => h.setInput(msg.input));
      break;
    case 'start':
      run((h, t) => h.start(t));
      break;
    case 'shutdown':
      run((h) => h.shutdown());
      break;
    default:
      diagnostic(`the host worker ignored a ${msg?.type} message`);
  }
};
