// The netgraph (seed 001: "a feature, not a nicety"): a small overlay on the
// game view, toggled with F3 or the backquote key or from the settings
// panel, that says within seconds whether a problem is the network,
// prediction or the game. The figures come from the Rust session
// (netcode::netgraph, through web/lib/wasm.js) and from the page (frames
// per second, the transport's round trip); netgraphLines() turns them into
// the rows shown, so a test reads exactly what a player sees.

/** How often the overlay redraws while shown. */
const REFRESH_MS = 250;

/**
 * @typedef {Object} FlowReading
 * @property {number} bytesPerS
 * @property {number} wireBytesPerS
 * @property {number} messagesPerS
 * @property {number} bytes
 * @property {number} messages
 */

/**
 * @typedef {Object} NetgraphReading what the overlay shows
 * @property {'guest'|'host'} role
 * @property {number|null} fps frames drawn per second
 * @property {number|null} rttMs the transport's round trip (guest; shown
 *   only when the host does not tell its own, `round-trip`)
 * @property {any} [guest] netcode's GuestNetgraph (guest)
 * @property {any} [host] netcode's HostNetgraph (host)
 */

/** @param {number} bytesPerS */
export function formatRate(bytesPerS) {
  return bytesPerS >= 1000 ? `${(bytesPerS / 1000).toFixed(1)} KB/s` : `${Math.round(bytesPerS)} B/s`;
}

/** @param {number|null|undefined} ms */
function formatMs(ms) {
  return typeof ms === 'number' ? `${ms.toFixed(ms < 10 ? 1 : 0)} ms` : '–';
}

/**
 * The correction bar: how full (0..1, full at twice the visible threshold)
 * and whether the last correction could be seen.
 * @param {number|null} correction
 * @param {number|null} visibleAt
 */
export function correctionBar(correction, visibleAt) {
  if (correction === null || visibleAt === null) return { fill: 0, visible: false };
  return { fill: Math.min(1, correction / (2 * visibleAt)), visible: correction >= visibleAt };
}

/**
 * The overlay's rows, [label, value] each, for a reading.
 * @param {NetgraphReading} r
 * @returns {[string, string][]}
 */
export function netgraphLines(r) {
  /** @type {[string, string][]} */
  const rows = [['fps', r.fps === null ? '–' : String(Math.round(r.fps))]];
  if (r.role === 'guest' && r.guest) {
    const g = r.guest;
    const lead = g.hostTick === null ? '' : ` (host ${g.hostTick})`;
    // The session's round trip is the host's measure of its pings (in
    // microseconds); without it, the transport's and the bundles' jitter.
    const told = typeof g.rttMs === 'number';
    const rtt = told ? g.rttMs : r.rttMs;
    const jitter = told ? g.rttJitterMs : g.arrivalJitterMs;
    rows.push(
      ['tick', `${g.tick}${lead}`],
      ['rtt', `${formatMs(rtt)} ± ${formatMs(jitter)}`],
      ['delay', `${g.inputDelay} ticks`],
      ['down', `${formatRate(g.down.bytesPerS)} (wire ${formatRate(g.down.wireBytesPerS)}) ${g.down.messagesPerS.toFixed(0)} msg/s`],
      ['up', `${formatRate(g.up.bytesPerS)} (wire ${formatRate(g.up.wireBytesPerS)}) ${g.up.messagesPerS.toFixed(0)} msg/s`],
      ['snapshots', `${g.snapshotsPerS.toFixed(1)}/s, ${g.snapshotBytes === null ? '–' : `${g.snapshotBytes} B`}`],
      ['held', `${g.heldInputs} (${g.heldPerS.toFixed(1)}/s)`],
      ['correction', g.correction === null ? '–' : `${g.correction.toFixed(3)} (max ${g.largestCorrection.toFixed(3)})`],
      ['desyncs', String(g.desyncs)],
    );
  } else if (r.role === 'host' && r.host) {
    rows.push(['tick', String(r.host.tick)], ['snapshots', String(r.host.snapshots)]);
    for (const l of r.host.links) {
      rows.push([l.name || l.player,
        `${formatMs(l.rttMs)} ± ${formatMs(l.rttJitterMs)}, delay ${l.inputDelay}, ${formatRate(l.down.bytesPerS)} `
        + `${l.down.messagesPerS.toFixed(0)} msg/s, held ${l.heldInputs}, desyncs ${l.desyncs}`]);
    }
    if (r.host.links.length === 0) rows.push(['guests', 'none yet']);
  }
  return rows;
}

/**
 * Counts animation frames: frames per second over the last second.
 */
export class FrameCounter {
  constructor() {
    /** @type {number[]} */
    this.times = [];
  }

  /** @param {number} now ms */
  frame(now) {
    this.times.push(now);
    while (this.times.length > 0 && this.times[0] <= now - 1000) this.times.shift();
  }

  /** @param {number} now ms */
  fps(now) {
    const recent = this.times.filter((t) => t > now - 1000);
    return recent.length === 0 ? null : recent.length;
  }
}

export class NetgraphOverlay {
  /**
   * @param {HTMLElement} parent where the overlay sits (over the view)
   * @param {() => NetgraphReading|null} read the figures now (null: no session yet)
   */
  constructor(parent, read) {
    this.read = read;
    this.el = document.createElement('aside');
    this.el.id = 'netgraph';
    this.el.className = 'netgraph';
    this.el.setAttribute('aria-label', 'Netgraph');
    this.el.hidden = true;
    this.rows = document.createElement('dl');
    // The prediction error (a guest's): hidden where nothing is predicted.
    this.bar = document.createElement('div');
    this.bar.className = 'netgraph-bar';
    this.bar.title = 'Prediction correction: red when a correction can be seen';
    this.fill = document.createElement('div');
    this.fill.id = 'netgraph-correction';
    this.bar.append(this.fill);
    this.el.append(this.rows, this.bar);
    parent.append(this.el);
    /** @type {ReturnType<typeof setInterval>|null} */
    this.timer = null;
    /** The last reading shown, with its rows and bar (the pages' test view). @type {any} */
    this.shown = null;
  }

  get visible() {
    return !this.el.hidden;
  }

  /** @param {boolean} on */
  show(on) {
    this.el.hidden = !on;
    if (on && this.timer === null) {
      this.timer = setInterval(() => this.refresh(), REFRESH_MS);
      this.refresh();
    } else if (!on && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  refresh() {
    const r = this.read();
    if (!r) return;
    const lines = netgraphLines(r);
    this.rows.replaceChildren(...lines.flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      return [dt, dd];
    }));
    this.bar.hidden = !r.guest;
    const bar = r.guest ? correctionBar(r.guest.correction, r.guest.correctionVisibleAt) : { fill: 0, visible: false };
    this.fill.style.width = `${(bar.fill * 100).toFixed(1)}%`;
    this.fill.classList.toggle('visible', bar.visible);
    this.shown = { ...r, lines, bar };
  }
}
