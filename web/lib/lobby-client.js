// A client of the lobby/signaling HTTP API (docs/api.md): the public
// listing and its live event stream, sessions and offer rounds for hosts,
// and joining by code for guests (read the offer, answer after full ICE
// gathering, post the answer). Plain fetch; works in browsers and in Node.

import {
  CHANNELS, CODE_ALPHABET, CODE_LEN, CODE_SEPARATORS, JOIN_MAX_LOST_ROUNDS, JOIN_RETRY_PAUSE_MS,
  JOIN_ROUND_WAIT_MS, JOIN_UNLISTED_ROUND_WAIT_MS, UNRELIABLE_CHANNELS, UNRELIABLE_CHANNEL_ID,
} from './facts.js';

/**
 * @typedef {Object} LobbyEntry
 * @property {string} code
 * @property {string} name
 * @property {string} hostName
 * @property {number} players
 * @property {number} maxPlayers
 * @property {string} build
 * @property {string|null} [difficulty]
 * @property {string|null} [campaign]
 * @property {'player'|'daemon'|'relay'} hostKind
 * @property {boolean} [inProgress] the session has started and admits players
 *   into its running game (late join); absent from servers older than it
 * @property {string} createdAt RFC 3339
 * @property {string} expiresAt RFC 3339
 * @property {Object} [meta]
 *
 * @typedef {LobbyEntry & {public: boolean, round: number|null, offer: string|null, iceServers: RTCIceServer[]}} SessionView
 * @typedef {{code: string, hostToken: string, round: number|null, expiresAt: string, iceServers: RTCIceServer[]}} HostedSession
 * @typedef {{round: number, answer: string, name: string}} AnswerView
 * @typedef {{q?: string, build?: string, hasSpace?: boolean, hostKind?: 'player'|'daemon'|'relay', limit?: number, cursor?: string}} LobbyFilters
 * @typedef {{sessions: LobbyEntry[], nextCursor: string|null, total: number, totalCapped: boolean}} LobbyPage
 * @typedef {{type: 'added'|'updated', entry: LobbyEntry} | {type: 'removed', code: string} | {type: 'resync'}} LobbyEvent
 */


/** An error answer of the API (or a join that cannot proceed). */
export class LobbyError extends Error {
  /**
   * @param {number} status HTTP status (0 when the server was unreachable)
   * @param {string} code the API's snake_case error code, or a client-side one
   * @param {string} message human-readable text
   */
  constructor(status, code, message) {
    super(message);
    this.name = 'LobbyError';
    this.status = status;
    this.code = code;
  }
}

/**
 * Canonical form of a typed code, by the generated facts: separators
 * dropped, upper case (`SessionCode::parse`; web/test/wasm.test.mjs checks
 * the two agree).
 * @param {string} input
 * @returns {string|null} null when it cannot be a code
 */
export function normalizeCode(input) {
  let code = '';
  for (const c of String(input ?? '')) {
    if (CODE_SEPARATORS.includes(c)) continue;
    // ASCII letters only change case, as in Rust ('ſ' is not an 'S').
    const upper = c >= 'a' && c <= 'z' ? c.toUpperCase() : c;
    if (!CODE_ALPHABET.includes(upper)) return null;
    code += upper;
  }
  return code.length === CODE_LEN ? code : null;
}

/**
 * Resolves once the connection's ICE gathering is complete (non-trickle
 * signaling sends one complete description).
 * @param {RTCPeerConnection} pc
 * @param {number} timeoutMs
 * @returns {Promise<void>}
 */
export function gatheringComplete(pc, timeoutMs) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      pc.removeEventListener('icegatheringstatechange', check);
      reject(new LobbyError(0, 'ice_gathering_timeout',
        `ICE gathering did not complete within ${timeoutMs} ms`));
    }, timeoutMs);
    function check() {
      if (pc.iceGatheringState === 'complete') {
        clearTimeout(timer);
        pc.removeEventListener('icegatheringstatechange', check);
        resolve();
      }
    }
    pc.addEventListener('icegatheringstatechange', check);
  });
}

/**
 * An offer without its ICE candidates, and the candidates set aside.
 *
 * A joiner applies the offer without them, so it sends no connectivity
 * check to the host before its answer has won the round: a losing
 * Chromium joiner that had the candidates would reach the host over ICE
 * and start a DTLS handshake the host then keeps, so the winner's never
 * completes. The candidates are added once the answer is accepted.
 * @param {string} sdp
 * @returns {{sdp: string, candidates: RTCIceCandidateInit[]}}
 */
export function withoutCandidates(sdp) {
  const lines = sdp.split('\r\n');
  /** @type {RTCIceCandidateInit[]} */
  const candidates = [];
  const kept = [];
  let mLine = -1;
  /** @type {string|null} */
  let mid = null;
  /** @type {RTCIceCandidateInit[]} */
  let section = [];
  const closeSection = () => {
    for (const c of section) c.sdpMid = mid;
    section = [];
  };
  for (const line of lines) {
    if (line.startsWith('m=')) {
      closeSection();
      mLine += 1;
      mid = null;
    } else if (line.startsWith('a=mid:')) {
      mid = line.slice('a=mid:'.length);
    }
    if (line.startsWith('a=candidate:') && mLine >= 0) {
      const c = { candidate: line.slice(2), sdpMLineIndex: mLine, sdpMid: /** @type {string|null} */ (null) };
      candidates.push(c);
      section.push(c);
    } else if (line !== 'a=end-of-candidates') {
      kept.push(line);
    }
  }
  closeSection();
  return { sdp: kept.join('\r\n'), candidates };
}

/** Messages that arrived on a channel before its consumer attached. */
const early = new WeakMap();

/**
 * Takes the messages that arrived on `dc` before this call and stops
 * buffering: a consumer calls it as it adds its own `message` listener, so
 * nothing the host sent while the other channel was still opening is lost.
 * @param {RTCDataChannel} dc
 * @returns {string[]}
 */
export function takeEarlyMessages(dc) {
  const buffered = early.get(dc);
  if (!buffered) return [];
  early.delete(dc);
  dc.removeEventListener('message', buffered.listener);
  return buffered.messages;
}

/**
 * How a data channel is created: `input` and `reconciliation` reliable and
 * ordered, opened by the host and accepted by the guest; `input-unreliable`
 * unordered with no retransmissions, and negotiated: both sides create it
 * with these options and its fixed id.
 * @param {string} label
 * @returns {RTCDataChannelInit}
 */
export function channelOptions(label) {
  if (!(/** @type {readonly string[]} */ (UNRELIABLE_CHANNELS)).includes(label)) return { ordered: true };
  return { ordered: false, maxRetransmits: 0, negotiated: true, id: UNRELIABLE_CHANNEL_ID };
}

/**
 * Resolves with every data channel once all are open: the ones the host
 * opens (announced in band) and the negotiated ones, created here. Text
 * messages arriving before then are kept for takeEarlyMessages.
 * @param {RTCPeerConnection} pc
 * @param {number} timeoutMs
 * @returns {Promise<Record<string, RTCDataChannel>>}
 */
function guestChannels(pc, timeoutMs) {
  const negotiated = CHANNELS.filter((l) => channelOptions(l).negotiated);
  const announced = CHANNELS.filter((l) => !channelOptions(l).negotiated);
  const ours = negotiated.map((label) => pc.createDataChannel(label, channelOptions(label)));
  return remoteChannels(pc, announced, ours, timeoutMs);
}

/**
 * Resolves with the named data channels once the remote side has opened
 * them all and every channel of `ours` is open too. Text messages arriving
 * before then are kept for takeEarlyMessages.
 * @param {RTCPeerConnection} pc
 * @param {string[]} labels
 * @param {RTCDataChannel[]} ours
 * @param {number} timeoutMs
 * @returns {Promise<Record<string, RTCDataChannel>>}
 */
function remoteChannels(pc, labels, ours, timeoutMs) {
  return new Promise((resolve, reject) => {
    /** @type {Record<string, RTCDataChannel>} */
    const open = {};
    const timer = setTimeout(() => reject(new LobbyError(0, 'connect_timeout',
      `the host's data channels did not open within ${timeoutMs / 1000} s`)), timeoutMs);
    const done = () => {
      if (labels.every((l) => open[l]) && ours.every((dc) => open[dc.label])) {
        clearTimeout(timer);
        resolve(open);
      }
    };
    const track = (/** @type {RTCDataChannel} */ dc) => {
      /** @type {string[]} */
      const messages = [];
      const listener = (/** @type {MessageEvent} */ m) => {
        if (typeof m.data === 'string') messages.push(m.data);
      };
      dc.addEventListener('message', listener);
      early.set(dc, { messages, listener });
      if (dc.readyState === 'open') {
        open[dc.label] = dc;
        done();
      } else {
        dc.addEventListener('open', () => { open[dc.label] = dc; done(); }, { once: true });
      }
    };
    for (const dc of ours) track(dc);
    pc.addEventListener('datachannel', (ev) => {
      if (labels.includes(ev.channel.label)) track(ev.channel);
    });
  });
}

/** The lobby server's HTTP API. */
export class LobbyClient {
  /**
   * @param {string} [baseUrl] the server's base URL; '' for this page's origin
   * @param {{fetch?: typeof fetch}} [options]
   */
  constructor(baseUrl = '', options = {}) {
    this.base = baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /**
   * One API call; error bodies become LobbyErrors.
   * @param {string} method
   * @param {string} path
   * @param {{body?: any, token?: string, signal?: AbortSignal, keepalive?: boolean}} [opts]
   * @returns {Promise<Response>}
   */
  async call(method, path, opts = {}) {
    /** @type {Record<string, string>} */
    const headers = {};
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let res;
    try {
      res = await this.fetch(this.base + path, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: opts.signal,
        keepalive: opts.keepalive,
      });
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      throw new LobbyError(0, 'unreachable', `the lobby server cannot be reached (${e.message})`);
    }
    if (res.ok) return res;
    let code = 'http_error';
    let message = `${method} ${path} answered ${res.status}`;
    try {
      const body = await res.json();
      if (body && typeof body.error === 'string') code = body.error;
      if (body && typeof body.message === 'string') message = body.message;
    } catch {
      // Not the API's JSON error: keep the generic message.
    }
    throw new LobbyError(res.status, code, message);
  }

  /**
   * One page of public sessions matching a search and filters, with how
   * many match in all (`total`; a lower bound when `totalCapped`).
   * @param {LobbyFilters} [filters]
   * @param {{signal?: AbortSignal}} [opts]
   * @returns {Promise<LobbyPage>}
   */
  async list(filters = {}, opts = {}) {
    return (await this.call('GET', `/lobby${lobbyQuery(filters)}`, opts)).json();
  }

  /**
   * Every public session, following cursors (at most `maxPages` pages).
   * @param {LobbyFilters} [filters]
   * @param {number} [maxPages]
   * @returns {Promise<LobbyEntry[]>}
   */
  async listAll(filters = {}, maxPages = 20) {
    const all = [];
    let cursor;
    for (let i = 0; i < maxPages; i++) {
      const page = await this.list({ ...filters, limit: 100, cursor });
      all.push(...page.sessions);
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    return all;
  }

  /**
   * Subscribes to `GET /lobby/events` (Server-Sent Events read over fetch,
   * so it works wherever fetch streams). Reconnects after a drop with a
   * growing pause, and reports `resync` after each reconnect so the caller
   * reloads the listing. Subscribe first, then load the listing, and apply
   * events by code: nothing falls between. With `hooks.filters` (search
   * and filters, as for `list`), the stream is that listing's: `added` when
   * a session starts matching, `removed` when it stops, so each moves the
   * listing's `total` by exactly one.
   * @param {(event: LobbyEvent) => void} onEvent
   * @param {{onOpen?: () => void, onError?: (e: Error) => void, filters?: LobbyFilters}} [hooks]
   * @returns {{close: () => void}}
   */
  subscribe(onEvent, hooks = {}) {
    const f = hooks.filters ?? {};
    const path = `/lobby/events${lobbyQuery({ q: f.q, build: f.build, hasSpace: f.hasSpace, hostKind: f.hostKind })}`;
    const abort = new AbortController();
    let pause = 500;
    let connectedBefore = false;
    const run = async () => {
      while (!abort.signal.aborted) {
        try {
          const res = await this.call('GET', path, { signal: abort.signal });
          if (connectedBefore) onEvent({ type: 'resync' });
          connectedBefore = true;
          pause = 500;
          hooks.onOpen?.();
          await readSse(res, abort.signal, (name, data) => dispatchSse(name, data, onEvent));
        } catch (e) {
          if (abort.signal.aborted) return;
          hooks.onError?.(e);
        }
        if (abort.signal.aborted) return;
        await new Promise((r) => setTimeout(r, pause));
        pause = Math.min(pause * 2, 10_000);
      }
    };
    run();
    return { close: () => abort.abort() };
  }

  /**
   * A session's public view with its open round.
   * @param {string} code
   * @returns {Promise<SessionView>}
   */
  async getSession(code) {
    return (await this.call('GET', `/session/${encodeURIComponent(code)}`)).json();
  }

  /**
   * Creates a session (for a browser host). `request` holds the lobby
   * fields and usually the first `offer`.
   * @param {Object} request `{offer?, public?, name, hostName, players?, maxPlayers, build, difficulty?, campaign?, hostKind, inProgress?, meta?}`
   * @returns {Promise<HostedSession>}
   */
  async createSession(request) {
    return (await this.call('PUT', '/session', { body: request })).json();
  }

  /**
   * Updates a hosted session's lobby fields (omitted ones are kept).
   * @param {HostedSession} hosted
   * @param {Object} fields
   * @returns {Promise<{code: string, round: number|null, expiresAt: string}>}
   */
  async updateSession(hosted, fields) {
    return (await this.call('PUT', '/session', {
      body: { ...fields, code: hosted.code },
      token: hosted.hostToken,
    })).json();
  }

  /**
   * Publishes the next offer round.
   * @param {HostedSession} hosted
   * @param {string} offerSdp a complete (non-trickle) offer
   * @param {Object} [fields] lobby fields to update at the same time
   * @returns {Promise<number>} the new round's number
   */
  async publishRound(hosted, offerSdp, fields = {}) {
    const res = await this.updateSession(hosted, { ...fields, offer: offerSdp });
    return /** @type {number} */ (res.round);
  }

  /**
   * Long-polls for the answer to `round`; null when the wait ran out.
   * @param {HostedSession} hosted
   * @param {number} round
   * @param {number} waitMs
   * @returns {Promise<AnswerView|null>}
   */
  async waitAnswer(hosted, round, waitMs) {
    const res = await this.call('GET',
      `/session/${encodeURIComponent(hosted.code)}/answer?round=${round}&waitMs=${waitMs}`,
      { token: hosted.hostToken });
    return res.status === 204 ? null : res.json();
  }

  /**
   * Ends a hosted session now.
   * @param {HostedSession} hosted
   * @param {{keepalive?: boolean}} [opts] keepalive: the request outlives the page (for pagehide)
   */
  async deleteSession(hosted, opts = {}) {
    await this.call('DELETE', `/session/${encodeURIComponent(hosted.code)}`, { token: hosted.hostToken, keepalive: opts.keepalive });
  }

  /**
   * Claims a round with an answer.
   * @param {string} code
   * @param {number} round
   * @param {string} answer
   * @param {string} [name]
   */
  async postAnswer(code, round, answer, name = '') {
    await this.call('POST', `/session/${encodeURIComponent(code)}/answer`, {
      body: { round, answer, name },
    });
  }

  /**
   * The session's view once it has an open round newer than `after`. A
   * host publishes the next round shortly after the previous joiner
   * connected (or after a failed connection), so a missing round is looked
   * at again while the session has room, as `protocol::join` says: up to
   * `waitMs` for a listed session, and briefly for an unlisted one (a
   * private session between rounds looks just like a started one, which
   * hosts unlist).
   * @param {string} code canonical
   * @param {number} waitMs
   * @param {number} [after] a round number already lost
   * @returns {Promise<SessionView>} with `round` null when there is none
   */
  async openRound(code, waitMs, after = 0) {
    const start = Date.now();
    for (;;) {
      const view = await this.getSession(code);
      if (view.round != null && view.offer != null && view.round > after) return view;
      const elapsed = Date.now() - start;
      const room = view.players < view.maxPlayers;
      const patient = elapsed < (view.public ? waitMs : Math.min(waitMs, JOIN_UNLISTED_ROUND_WAIT_MS));
      if (!room || !patient) return { ...view, round: null, offer: null };
      await new Promise((r) => setTimeout(r, JOIN_RETRY_PAUSE_MS));
    }
  }

  /**
   * Joins a session by code: reads the open round's offer, answers it after
   * full ICE gathering, posts the answer. A round another joiner won first
   * is retried with the next one (up to `attempts` rounds, within
   * `roundWaitMs` in all, like host-daemon's joiner).
   * @param {string} code as typed
   * @param {{name?: string, RTCPeerConnection?: typeof RTCPeerConnection, timeoutMs?: number, attempts?: number, roundWaitMs?: number}} [options]
   * @returns {Promise<{pc: RTCPeerConnection, view: SessionView, channels: Promise<Record<string, RTCDataChannel>>}>}
   */
  async join(code, options = {}) {
    const canonical = normalizeCode(code);
    if (!canonical) {
      throw new LobbyError(400, 'invalid_code',
        `"${code}" is not a session code: codes have ${CODE_LEN} letters and digits.`);
    }
    const PC = options.RTCPeerConnection ?? globalThis.RTCPeerConnection;
    const timeoutMs = options.timeoutMs ?? 20_000;
    const attempts = options.attempts ?? JOIN_MAX_LOST_ROUNDS + 1;
    const deadline = Date.now() + (options.roundWaitMs ?? JOIN_ROUND_WAIT_MS);
    let lost = 0;
    for (let attempt = 1; ; attempt++) {
      const view = await this.openRound(canonical, Math.max(0, deadline - Date.now()), lost);
      if (view.round == null || view.offer == null) {
        throw new LobbyError(409, 'no_open_round',
          'This session is full or has already started: nobody more can join it.');
      }
      const pc = new PC({ iceServers: view.iceServers ?? [] });
      const channels = guestChannels(pc, timeoutMs);
      channels.catch(() => {});
      try {
        const offer = withoutCandidates(view.offer);
        await pc.setRemoteDescription({ type: 'offer', sdp: offer.sdp });
        await pc.setLocalDescription(await pc.createAnswer());
        await gatheringComplete(pc, timeoutMs);
        const sdp = pc.localDescription?.sdp ?? '';
        await this.postAnswer(canonical, view.round, sdp, options.name ?? '');
        // The round is ours: now reach the host.
        for (const candidate of offer.candidates) await pc.addIceCandidate(candidate);
        return { pc, view, channels };
      } catch (e) {
        pc.close();
        if (e instanceof LobbyError && e.code === 'round_taken' && attempt < attempts && Date.now() < deadline) {
          lost = view.round;
          continue;
        }
        throw e;
      }
    }
  }
}

/**
 * The query string of a lobby listing or feed ('' when there is none).
 * @param {LobbyFilters} filters
 */
function lobbyQuery(filters) {
  const q = new URLSearchParams();
  if (filters.q) q.set('q', filters.q);
  if (filters.build) q.set('build', filters.build);
  if (filters.hasSpace) q.set('hasSpace', 'true');
  if (filters.hostKind) q.set('hostKind', filters.hostKind);
  if (filters.limit) q.set('limit', String(filters.limit));
  if (filters.cursor) q.set('cursor', filters.cursor);
  const qs = q.toString();
  return qs ? `?${qs}` : '';
}

/**
 * Reads an SSE body, calling `onMessage(eventName, data)` per event.
 * @param {Response} res
 * @param {AbortSignal} signal
 * @param {(name: string, data: string) => void} onMessage
 */
async function readSse(res, signal, onMessage) {
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
function dispatchSse(name, data, onEvent) {
  try {
    if (name === 'added' || name === 'updated') onEvent({ type: name, entry: JSON.parse(data) });
    else if (name === 'removed') onEvent({ type: 'removed', code: JSON.parse(data).code });
    else if (name === 'resync') onEvent({ type: 'resync' });
  } catch {
    onEvent({ type: 'resync' });
  }
}
