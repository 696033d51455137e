// A client of the lobby/signaling HTTP API (docs/api.md): the public
// listing and its live event stream, sessions and offer rounds for hosts,
// and joining by code for guests (read the offer, answer after full ICE
// gathering, post the answer). Plain fetch; works in browsers and in Node.

import {
  CODE_ALPHABET, CODE_LEN, CODE_SEPARATORS, JOIN_MAX_LOST_ROUNDS, JOIN_RETRY_PAUSE_MS,
  JOIN_ROUND_WAIT_MS, JOIN_UNLISTED_ROUND_WAIT_MS,
} from './facts.js';
import { LobbyError } from './lobby-error.js';
import { dispatchSse, readSse } from './lobby-events.js';
import { gatheringComplete, guestChannels, withoutCandidates } from './webrtc.js';

export { LobbyError };

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
 * @property {number} [bots] seats bots hold, counted in players (absent: none)
 * @property {number} [startAt] the player count the session starts at by
 *   itself, host included (absent: a person starts it)
 * @property {string} createdAt RFC 3339
 * @property {string} expiresAt RFC 3339
 * @property {string} position the place in the lobby order, as text that
 *   orders as the lobby does (a page's nextCursor is one too)
 * @property {Object} [meta]
 *
 * @typedef {LobbyEntry & {public: boolean, round: number|null, offer: string|null, iceServers: RTCIceServer[]}} SessionView
 * @typedef {{code: string, hostToken: string, round: number|null, expiresAt: string, iceServers: RTCIceServer[]}} HostedSession
 * @typedef {{round: number, answer: string, name: string}} AnswerView
 * @typedef {{q?: string, build?: string, hasSpace?: boolean, hostKind?: 'player'|'daemon'|'relay', limit?: number, cursor?: string}} LobbyFilters
 * @typedef {{sessions: LobbyEntry[], nextCursor: string|null, total: number, totalCapped: boolean}} LobbyPage
 * @typedef {{type: 'added'|'updated', entry: LobbyEntry} | {type: 'removed', code: string} | {type: 'resync'}} LobbyEvent
 */



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
    const retryAfter = Number.parseInt(res.headers?.get?.('retry-after') ?? '', 10);
    const retryAfterMs = Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : null;
    let code = 'http_error';
    let message = `${method} ${path} answered ${res.status}`;
    try {
      const body = await res.json();
      if (body && typeof body.error === 'string') code = body.error;
      if (body && typeof body.message === 'string') message = body.message;
    } catch {
      // Not the API's JSON error: keep the generic message.
    }
    throw new LobbyError(res.status, code, message, retryAfterMs);
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
   * Reports a session to the lobby's moderators. A repeat from the same
   * address is accepted and changes nothing.
   * @param {string} code
   * @param {'offensive_name'|'spam'|'cheating'|'harassment'|'other'} reason
   * @param {string} [text] what happened, up to 500 characters
   * @returns {Promise<void>}
   */
  async report(code, reason, text = '') {
    const body = text ? { reason, text } : { reason };
    await this.call('POST', `/session/${encodeURIComponent(code)}/report`, { body });
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
      let view;
      try {
        view = await this.getSession(code);
      } catch (e) {
        // Reads are budgeted per address: wait as the server says, within the wait.
        const pause = rateLimitPause(e, start + waitMs);
        if (pause == null) throw e;
        await new Promise((r) => setTimeout(r, pause));
        continue;
      }
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
        // Answers to one session are budgeted per address (a shared
        // address may have spent them): wait as the server says, then
        // try the next round, within the round wait.
        // The refused round may still be open: try it again.
        const pause = attempt < attempts ? rateLimitPause(e, deadline) : null;
        if (pause != null) {
          await new Promise((r) => setTimeout(r, pause));
          lost = view.round - 1;
          continue;
        }
        throw e;
      }
    }
  }
}

/**
 * How long to wait after `e` before trying again: its Retry-After when it
 * is a 429 that leaves time before `deadline` (ms since the epoch), else
 * null (give up).
 * @param {unknown} e
 * @param {number} deadline
 * @returns {number | null}
 */
function rateLimitPause(e, deadline) {
  if (!(e instanceof LobbyError) || e.status !== 429) return null;
  const pause = Math.max(e.retryAfterMs ?? JOIN_RETRY_PAUSE_MS, JOIN_RETRY_PAUSE_MS);
  return Date.now() + pause < deadline ? pause : null;
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
