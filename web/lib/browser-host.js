// A player's browser as the host: the lobby lifecycle and one
// RTCPeerConnection per guest on the page, the host session itself in a
// dedicated worker (web/lib/host-worker.js) that paces the ticks. This is
// host-daemon's `host` (hosting.rs) for one session, in a tab:
//
// - the session is created in the lobby (`hostKind: player`) and one offer
//   round is kept open while the session waits in its lobby and has a free
//   seat; each answer is accepted, and once its data channels (`input`,
//   `reconciliation`, reliable and ordered; `input-unreliable`, unordered
//   and never retransmitted) are open the connection is handed to the
//   session, which sends its hello;
// - the TTL is refreshed by the answer long-polls and by the worker's
//   heartbeat (worker timers are not throttled in a hidden tab);
// - with late join (the default), rounds go on after the start while a
//   seat is free and the session admits the joiner into the running game;
//   without it, `public: false` once the level starts (no new rounds from
//   then on; a joiner of the round still open is refused with
//   `session-started`);
// - `DELETE` when the session ends, and, best effort, when the page goes
//   away (the guests then end with `host-disconnected` after the grace).

import { CHANNELS, HOST_ANSWER_POLL_MS, HOST_REFRESH_EVERY_MS, HOST_RETRY_PAUSE_MS } from './facts.js';
import { LobbyError } from './lobby-error.js';
import { CONNECT_TIMEOUT_MS, MAX_BUFFERED_BYTES, PendingOffer, sleep } from './host-links.js';
import { loadCampfire } from './wasm.js';

/** How long one answer long-poll waits (the server caps it): netcode's, as the daemon's. */
const ANSWER_POLL_MS = HOST_ANSWER_POLL_MS;
/** How often the TTL is refreshed besides the answer polls. */
const REFRESH_EVERY_MS = HOST_REFRESH_EVERY_MS;
/** Pause after a failed lobby call before the round loop goes on. */
const RETRY_PAUSE_MS = HOST_RETRY_PAUSE_MS;

/**
 * @typedef {Object} HostHooks
 * @property {(status: any, cost: any) => void} [onStatus] the session's status changed
 * @property {(view: any) => void} [onView] the host player's view of a new tick
 * @property {(report: any) => void} [onReport] the session ended: the operator's report
 * @property {(text: string) => void} [onDiagnostic] for the console
 * @property {(error: Error) => void} [onLobbyError] the lobby refused or lost the session
 */

/** A player's browser hosting one session: see the top of this file. */
export class BrowserHost {
  /**
   * @param {import('./lobby-client.js').LobbyClient} client
   * @param {{seed: number, levels: number, displayName: string, bot?: boolean, difficulty?: string, startWhen?: number|null, lateJoin?: boolean, maxGuests?: number, maxSpectators?: number, buildVersion?: string}} sessionConfig the host session (WebHostConfig)
   * @param {{name: string, public: boolean, maxPlayers: number, build: string, campaign?: string}} listing the lobby entry
   * @param {HostHooks} [hooks]
   */
  constructor(client, sessionConfig, listing, hooks = {}) {
    this.client = client;
    this.sessionConfig = sessionConfig;
    this.listing = listing;
    this.hooks = hooks;
    /** @type {import('./lobby-client.js').HostedSession|null} */
    this.hosted = null;
    /** @type {Worker|null} */
    this.worker = null;
    /** @type {import('./host-links.js').GuestLink[]} by slot */
    this.links = [];
    /** @type {any} the session's latest status */
    this.status = { phase: 'lobby', seatsTaken: 0, connections: 0, guestsPresent: 0 };
    /** @type {any} the operator's report, once the session ended */
    this.report = null;
    this.stopped = false;
    this.unlisted = false;
    this.deleted = false;
    this.lastRefresh = 0;
    /** @type {number|null} the `players` count last published */
    this.publishedPlayers = null;
    /** @type {(() => void)[]} */
    this.statusWaiters = [];
    /**
     * Answers being connected: netcode's join policy (WasmJoinSlots), set
     * up in open(), and each join's offer by id.
     * @type {import('./wasm.js').WasmJoinSlots|null}
     */
    this.joinSlots = null;
    /** @type {Map<number, PendingOffer>} */
    this.joins = new Map();
    /** @type {ReturnType<typeof setTimeout>|null} */
    this.expiryTimer = null;
    /** A `players` update is in flight; another change came meanwhile. */
    this.publishing = false;
    this.publishAgain = false;
    /** @type {ReturnType<typeof setTimeout>|null} a failed update's retry */
    this.publishRetry = null;
    /** The pause before the next retry of a failed update, ms (doubles, at most 30 s). */
    this.publishBackoff = RETRY_PAUSE_MS;
  }

  /** Whether players may join after the start. */
  get lateJoin() {
    return this.sessionConfig.lateJoin !== false;
  }

  /** Most spectators at once (the session's default when unset). */
  get maxSpectators() {
    return this.sessionConfig.maxSpectators ?? 8;
  }

  /** Whether rounds are served now: players may join, or spectators watch. */
  takingJoiners() {
    const started = this.status.phase !== 'lobby';
    return !this.stopped && !this.status.end && Boolean(this.joinSlots?.takesJoiners(started));
  }

  /** Whether a joiner could be admitted now: a free seat, or a spectator place. */
  roomForJoiner() {
    return Boolean(this.joinSlots?.wantsRound({
      started: this.status.phase !== 'lobby',
      taken: this.seatsTaken(),
      spectators: this.status.spectators?.length ?? 0,
    }));
  }

  /** Guest seats: every player but the host's own. */
  get guestSeats() {
    return Math.max(0, this.listing.maxPlayers - 1);
  }

  /** Seats taken, counting connections the worker has not seen yet. */
  seatsTaken() {
    return this.status.seatsTaken + Math.max(0, this.links.length - this.status.connections);
  }

  /**
   * Starts the worker, creates the session in the lobby and opens rounds.
   * @returns {Promise<import('./lobby-client.js').HostedSession>}
   */
  async open() {
    const worker = new Worker(new URL('./host-worker.js', import.meta.url), { type: 'module' });
    this.worker = worker;
    const ready = new Promise((resolve, reject) => {
      worker.addEventListener('message', (ev) => {
        if (ev.data?.type === 'ready') resolve(null);
        else if (ev.data?.type === 'failed') reject(new Error(ev.data.error));
      });
      worker.addEventListener('error', (ev) => reject(new Error(`the host worker failed: ${ev.message}`)));
    });
    worker.addEventListener('message', (ev) => this.onWorker(ev.data));
    worker.postMessage({ type: 'init', config: this.sessionConfig });
    try {
      const [campfire] = await Promise.all([loadCampfire(), ready]);
      // The round policy is netcode's (host::rounds), as the daemon's.
      this.joinSlots = campfire.joinSlots({
        connectDeadlineMs: CONNECT_TIMEOUT_MS,
        guestSeats: this.guestSeats,
        startWhen: this.sessionConfig.startWhen ?? undefined,
        lateJoin: this.lateJoin,
        maxSpectators: this.maxSpectators,
      });
    } catch (e) {
      worker.terminate();
      this.worker = null;
      throw e;
    }
    this.hosted = await this.client.createSession({
      public: this.listing.public,
      name: this.listing.name,
      hostName: this.sessionConfig.displayName,
      players: 1,
      maxPlayers: this.listing.maxPlayers,
      build: this.listing.build,
      difficulty: this.sessionConfig.difficulty ?? 'normal',
      campaign: this.listing.campaign,
      hostKind: 'player',
    });
    this.lastRefresh = performance.now();
    this.publishedPlayers = 1;
    window.addEventListener('pagehide', () => this.pageGone());
    this.roundLoop().catch((e) => this.hooks.onDiagnostic?.(`the round loop stopped: ${e.message}`));
    return this.hosted;
  }

  /** Starts the level now with whoever is in. */
  start() {
    this.worker?.postMessage({ type: 'start' });
  }

  /**
   * The host player's input from now on.
   * @param {object} input an InputSnapshot
   */
  setInput(input) {
    this.worker?.postMessage({ type: 'input', input });
  }

  /** Ends the session for everybody now (`host-shutdown`). */
  shutdown() {
    this.worker?.postMessage({ type: 'shutdown' });
  }

  /** @param {any} msg */
  onWorker(msg) {
    switch (msg?.type) {
      case 'out':
        for (const { slots, channel, data } of msg.send) {
          for (const slot of slots) {
            const link = this.links[slot];
            if (link && !link.send(channel, data)) {
              this.hooks.onDiagnostic?.(`guest ${slot} is not keeping up (over ${MAX_BUFFERED_BYTES} bytes queued): closing it`);
              link.closing = true;
              link.pc.close();
              this.worker?.postMessage({ type: 'state', slot, state: 'closed' });
            }
          }
        }
        for (const slot of msg.close) this.links[slot]?.closeWhenFlushed();
        break;
      case 'status':
        this.onStatus(msg.status, msg.cost);
        break;
      case 'view':
        this.hooks.onView?.(msg.view);
        break;
      case 'report':
        this.report = msg.report;
        this.hooks.onReport?.(msg.report);
        break;
      case 'diagnostic':
        this.hooks.onDiagnostic?.(msg.text);
        break;
      case 'heartbeat':
        this.refreshIfDue();
        break;
      default:
    }
  }

  /**
   * @param {any} status
   * @param {any} cost
   */
  onStatus(status, cost) {
    const before = this.status;
    this.status = status;
    this.hooks.onStatus?.(status, cost);
    for (const wake of this.statusWaiters.splice(0)) wake();
    if (!this.hosted) return;
    if (status.phase !== 'lobby' && !this.unlisted) {
      // Late join: listed on, as in progress; else unlisted.
      this.unlisted = true;
      this.client.updateSession(this.hosted, this.lateJoin ? { inProgress: true } : { public: false })
        .catch((e) => this.hooks.onDiagnostic?.(`could not mark the started session: ${e.message}`));
    }
    if (status.end && !before.end) this.ended();
    if (this.takingJoiners()) this.publishPlayers();
    this.refreshIfDue();
  }

  /** Resolves at the session's next status change. */
  statusChange() {
    return new Promise((resolve) => this.statusWaiters.push(() => resolve(null)));
  }

  refreshIfDue() {
    if (!this.hosted || this.deleted || performance.now() - this.lastRefresh < REFRESH_EVERY_MS) return;
    this.lastRefresh = performance.now();
    this.client.updateSession(this.hosted, {})
      .catch((e) => this.lobbyError(e));
  }

  /** @param {Error} e */
  lobbyError(e) {
    this.hooks.onDiagnostic?.(`lobby: ${e.message}`);
    // Once the session is over its entry goes: a call that was under way
    // then finds it gone, which the player need not hear of.
    if (this.stopped) return;
    if (e instanceof LobbyError && [401, 403, 404, 410].includes(e.status)) {
      // 410: a moderator ended the session; it is not published again.
      if (e.status === 410) this.deleted = true;
      this.hooks.onLobbyError?.(e);
    }
  }

  /** The session ended: the lobby entry goes, then every connection. */
  async ended() {
    this.stopped = true;
    for (const wake of this.statusWaiters.splice(0)) wake();
    if (this.expiryTimer !== null) clearTimeout(this.expiryTimer);
    if (this.publishRetry !== null) clearTimeout(this.publishRetry);
    this.expiryTimer = null;
    this.publishRetry = null;
    for (const id of [...this.joins.keys()]) this.dropJoin(id, 'was still connecting when the session ended');
    if (this.hosted && !this.deleted) {
      this.deleted = true;
      await this.client.deleteSession(this.hosted).catch((e) => {
        if (!(e instanceof LobbyError && (e.status === 404 || e.status === 410))) this.hooks.onDiagnostic?.(`could not delete the session: ${e.message}`);
      });
    }
    await Promise.all(this.links.map((l) => l.closeWhenFlushed()));
  }

  /** The page is going away: best-effort delete (guests see the host go). */
  pageGone() {
    if (!this.hosted || this.deleted) return;
    this.deleted = true;
    this.client.deleteSession(this.hosted, { keepalive: true }).catch(() => {});
  }

  /** @returns {number} the `players` count to publish */
  playersNow() {
    return 1 + this.seatsTaken();
  }

  /**
   * Keeps one offer round open while the session takes joiners (in its
   * lobby, or running with late join) and a seat is free; connects each answer in the background and hands it to
   * the session. The next round opens as soon as an answer arrives, so a
   * stranger's answer that never connects costs the real joiner one round,
   * not the connect timeout (docs/decisions.md, "Round grabbing"). Answers
   * being connected follow netcode's join policy, as the daemon's do: one
   * without ICE progress within seconds is dropped, and joins in flight
   * delay a round by at most a second, never stop it.
   */
  async roundLoop() {
    const hosted = /** @type {import('./lobby-client.js').HostedSession} */ (this.hosted);
    const slots = /** @type {import('./wasm.js').WasmJoinSlots} */ (this.joinSlots);
    while (this.takingJoiners()) {
      if (!this.roomForJoiner()) {
        await this.publishPlayers();
        await this.statusChange();
        continue;
      }
      const wait = slots.roundOpensAt(performance.now()) - performance.now();
      if (wait > 0) {
        await Promise.race([sleep(wait), this.statusChange()]);
        continue;
      }
      let offer;
      try {
        offer = await PendingOffer.create(hosted.iceServers ?? []);
      } catch (e) {
        this.hooks.onDiagnostic?.(`gathering an offer failed: ${e instanceof Error ? e.message : e}`);
        await sleep(RETRY_PAUSE_MS);
        continue;
      }
      let round;
      try {
        const players = this.playersNow();
        round = await this.client.publishRound(hosted, offer.sdp, { players });
        this.publishedPlayers = players;
        this.lastRefresh = performance.now();
      } catch (e) {
        offer.close();
        this.lobbyError(/** @type {Error} */ (e));
        if (e instanceof LobbyError && e.status >= 400 && e.status < 500 && e.status !== 429) return;
        await sleep(RETRY_PAUSE_MS);
        continue;
      }
      const answer = await this.waitAnswer(round);
      if (!answer) {
        offer.close();
        continue;
      }
      this.join(offer, answer);
    }
  }

  /**
   * Connects one answer in the background and hands the link to the
   * session; drops the join the policy gives up for it.
   * @param {PendingOffer} offer
   * @param {{answer: string, name: string}} answer
   */
  join(offer, answer) {
    const slots = /** @type {import('./wasm.js').WasmJoinSlots} */ (this.joinSlots);
    const { id, evicted } = slots.admit(performance.now());
    if (evicted !== null) this.dropJoin(evicted, 'showed no ICE progress, and a newer answer needed its slot');
    this.joins.set(id, offer);
    this.scheduleExpiry();
    offer.accept(answer.answer, () => slots.iceProgress(id, performance.now()))
      .then((link) => {
        if (!this.joins.has(id)) return; // dropped: already closed
        if (this.stopped) {
          offer.close();
          return;
        }
        this.addGuest(link);
        this.hooks.onDiagnostic?.(`guest "${answer.name}" connected`);
      }, (e) => {
        if (!this.joins.has(id)) return;
        offer.close();
        this.hooks.onDiagnostic?.(`a joiner's connection failed: ${e instanceof Error ? e.message : e}`);
      })
      .finally(() => {
        if (this.joins.delete(id)) slots.finished(id);
        this.scheduleExpiry();
        // The round loop may be waiting for a join slot.
        for (const wake of this.statusWaiters.splice(0)) wake();
      });
  }

  /**
   * Gives join `id` up: closes its connection.
   * @param {number} id
   * @param {string} why
   */
  dropJoin(id, why) {
    const offer = this.joins.get(id);
    if (!offer) return;
    this.joins.delete(id);
    offer.close();
    this.hooks.onDiagnostic?.(`dropped a join that ${why}`);
  }

  /** Drops the joins past their deadline, and wakes up for the next one. */
  scheduleExpiry() {
    const slots = this.joinSlots;
    if (!slots || this.stopped) return;
    for (const { id, why } of slots.expire(performance.now())) {
      this.dropJoin(id, why === 'no-ice-progress' ? 'showed no ICE progress in time' : 'did not open its channels in time');
    }
    if (this.expiryTimer !== null) clearTimeout(this.expiryTimer);
    this.expiryTimer = null;
    const next = slots.nextDeadline();
    if (next !== null) {
      this.expiryTimer = setTimeout(() => this.scheduleExpiry(), Math.max(0, next - performance.now()) + 1);
    }
  }

  /**
   * Long-polls round `round` until its answer arrives; null when the
   * session started or stopped first, or the lobby lost it.
   * @param {number} round
   */
  async waitAnswer(round) {
    const hosted = /** @type {import('./lobby-client.js').HostedSession} */ (this.hosted);
    while (!this.stopped) {
      try {
        const answer = await this.client.waitAnswer(hosted, round, ANSWER_POLL_MS);
        this.lastRefresh = performance.now();
        if (answer) return answer;
        if (!this.takingJoiners()) return null;
      } catch (e) {
        this.lobbyError(/** @type {Error} */ (e));
        if (e instanceof LobbyError && e.status >= 400 && e.status < 500 && e.status !== 429) return null;
        await sleep(RETRY_PAUSE_MS);
      }
    }
    return null;
  }

  /**
   * Publishes `players` when it changed: at every status change in the
   * lobby (an admission or a leave), round or no round, so the lobby
   * follows within a request's time. One update at a time; a change that
   * comes during one is published right after it (bounded). A failed
   * update is retried once after a pause that doubles with each failure,
   * not at every later change.
   */
  async publishPlayers() {
    if (this.publishRetry !== null) return;
    if (this.publishing) {
      this.publishAgain = true;
      return;
    }
    this.publishing = true;
    try {
      for (let i = 0; i < 4; i++) {
        this.publishAgain = false;
        const players = this.playersNow();
        if (!this.hosted || this.deleted || players === this.publishedPlayers) return;
        try {
          await this.client.updateSession(this.hosted, { players });
          this.publishedPlayers = players;
          this.publishBackoff = RETRY_PAUSE_MS;
        } catch (e) {
          this.lobbyError(/** @type {Error} */ (e));
          this.publishRetry = setTimeout(() => {
            this.publishRetry = null;
            this.publishPlayers();
          }, this.publishBackoff);
          this.publishBackoff = Math.min(this.publishBackoff * 2, 30_000);
          return;
        }
        if (!this.publishAgain) return;
      }
    } finally {
      this.publishing = false;
    }
  }

  /** @param {import('./host-links.js').GuestLink} link */
  addGuest(link) {
    const slot = this.links.length;
    this.links.push(link);
    const worker = /** @type {Worker} */ (this.worker);
    worker.postMessage({ type: 'add-guest', slot });
    for (const label of CHANNELS) {
      const dc = link.channels[label];
      dc.addEventListener('message', (ev) => {
        // Once the session closed it (left, refused, or over its budget of
        // messages and bytes, which the session in the worker enforces),
        // nothing more is forwarded.
        if (link.closing) return;
        if (typeof ev.data === 'string') worker.postMessage({ type: 'message', slot, channel: label, data: ev.data });
      });
      dc.addEventListener('close', () => worker.postMessage({ type: 'state', slot, state: 'closed' }));
    }
    link.pc.addEventListener('connectionstatechange', () => {
      worker.postMessage({ type: 'state', slot, state: link.pc.connectionState });
    });
  }
}
