// A client of the lobby/signaling HTTP API (docs/api.md): the public
// listing and its live event stream, sessions and offer rounds for hosts,
// and joining by code for guests (the wasm module's joining machine says
// the steps: read the offer, answer after full ICE gathering, post the
// answer, open the channels). Plain fetch; works in browsers and in Node.

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
   * Joins a session by code, as campfire's joining machine says (the wasm
   * module's `lobby_api::joining`, which `host-daemon join` follows too):
   * reads the session, answers its open round after full ICE gathering,
   * posts the answer and waits for the channels to open. Lost rounds, a
   * 429's Retry-After, a session between rounds and failed connections are
   * handled by the machine's rules; this method only does the steps.
   * @param {string} code as typed
   * @param {{campfire: import('./wasm.js').Campfire, name?: string, spectate?: boolean, build?: string,
   *   RTCPeerConnection?: typeof RTCPeerConnection, timeoutMs?: number,
   *   onStep?: (step: any, view: SessionView|null) => void}} options `onStep` hears
   *   every step with the session as last read (`connect` once per try: its
   *   number is in `tries`)
   * @returns {Promise<{pc: RTCPeerConnection, view: SessionView, channels: Record<string, RTCDataChannel>}>}
   */
  async join(code, options) {
    const { campfire } = options;
    if (!campfire) throw new TypeError('LobbyClient.join needs the loaded wasm module (options.campfire)');
    const PC = options.RTCPeerConnection ?? globalThis.RTCPeerConnection;
    const timeoutMs = options.timeoutMs ?? 20_000;
    const joining = campfire.joining({ code: String(code ?? ''), spectate: !!options.spectate, build: options.build }, Date.now());
    /** @type {SessionView|null} */
    let view = null;
    /** @type {RTCPeerConnection|null} */
    let pc = null;
    /** @type {Promise<Record<string, RTCDataChannel>>|null} */
    let channels = null;
    /** @type {RTCIceCandidateInit[]} */
    let candidates = [];
    /** @type {Record<string, RTCDataChannel>|null} */
    let opened = null;
    /** @type {unknown} the error behind the last failed step */
    let last = null;
    let tries = 0;
    /** @param {unknown} e */
    const failed = (e) => {
      pc?.close();
      last = e;
    };
    try {
      let step = joining.start();
      for (;;) {
        if (step.step === 'connect') tries += 1;
        options.onStep?.({ ...step, tries }, view);
        /** @type {object} */
        let event;
        switch (step.step) {
          case 'readSession':
            try {
              view = await this.getSession(step.code);
              event = { ...view, event: 'session' };
            } catch (e) {
              last = e;
              event = refusal(e);
            }
            break;
          case 'pause':
            await new Promise((r) => setTimeout(r, step.ms));
            event = { event: 'paused' };
            break;
          case 'answer': {
            pc = new PC({ iceServers: view?.iceServers ?? [] });
            channels = guestChannels(pc, timeoutMs);
            channels.catch(() => {});
            let sdp;
            try {
              const offer = withoutCandidates(step.offer);
              candidates = offer.candidates;
              await pc.setRemoteDescription({ type: 'offer', sdp: offer.sdp });
              await pc.setLocalDescription(await pc.createAnswer());
              await gatheringComplete(pc, timeoutMs);
              sdp = pc.localDescription?.sdp ?? '';
            } catch (e) {
              failed(e);
              event = { event: 'connectFailed' };
              break;
            }
            try {
              await this.postAnswer(step.code, step.round, sdp, options.name ?? '');
              event = { event: 'answered' };
            } catch (e) {
              failed(e);
              event = refusal(e);
            }
            break;
          }
          case 'connect':
            try {
              // The round is ours: now reach the host.
              for (const candidate of candidates) await pc?.addIceCandidate(candidate);
              opened = await channels;
              event = { event: 'connected' };
            } catch (e) {
              failed(e);
              event = { event: 'connectFailed' };
            }
            break;
          case 'joined':
            if (!pc || !view || !opened) throw new Error('joined without a connection');
            return { pc, view, channels: opened };
          case 'fail': {
            const f = step.failure;
            if (f.reported && last) throw last;
            const message = `${f.message.charAt(0).toUpperCase()}${f.message.slice(1)}.`;
            const error = new LobbyError(f.code === 'invalid_code' ? 400 : 409, f.code, message);
            error.hostBuild = f.hostBuild ?? null;
            throw error;
          }
          default:
            throw new Error(`unknown joining step ${JSON.stringify(step)}`);
        }
        step = joining.on(event, Date.now());
      }
    } finally {
      joining.drop();
    }
  }
}

/**
 * A failed lobby call as the joining machine hears it.
 * @param {unknown} e
 */
function refusal(e) {
  if (!(e instanceof LobbyError)) return { event: 'refused' };
  return { event: 'refused', code: e.code, retryAfterMs: e.retryAfterMs ?? undefined };
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
