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

import { CHANNELS, HOST_ANSWER_POLL_MS, HOST_REFRESH_EVERY_MS } from './facts.js';
import { LobbyError } from './lobby-error.js';
import { CONNECT_TIMEOUT_MS, MAX_BUFFERED_BYTES, PendingOffer } from './host-links.js';
import { loadCampfire } from './wasm.js';

/** How long one answer long-poll waits (the server caps it): netcode's, as the daemon's. */
const ANSWER_POLL_MS = HOST_ANSWER_POLL_MS;
/** How often the TTL is refreshed besides the answer polls. */
const REFRESH_EVERY_MS = HOST_REFRESH_EVERY_MS;

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
    /** @type {any} every guest's link as the worker last said (netcode's HostNetgraph), null before */
    this.netgraph = null;
    /** @type {any} the session's latest status */
    this.status = { phase: 'lobby', seatsTaken: 0, connections: 0, guestsPresent: 0 };
    /** @type {any} the operator's report, once the session ended */
    this.report = null;
    this.stopped = false;
    this.unlisted = false;
    this.deleted = false;
    this.lastRefresh = 0;
    /**
     * The rounds, the answers being connected and the lobby's `players`:
     * netcode's hosting machine (WasmHosting, the daemon's round loop), set
     * up in open(). This class does what it says.
     * @type {import('./wasm.js').WasmHosting|null}
     */
    this.hosting = null;
    /** @type {PendingOffer|null} the offer in hand */
    this.offer = null;
    /** @type {{answer: string, name: string}|null} the answer just polled */
    this.answer = null;
    /** @type {Map<number, PendingOffer>} answers being connected, by join id */
    this.joins = new Map();
    /** @type {ReturnType<typeof setTimeout>|null} the machine's next wake-up */
    this.wakeTimer = null;
  }

  /** Whether players may join after the start. */
  get lateJoin() {
    return this.sessionConfig.lateJoin !== false;
  }

  /** Most spectators at once (the session's default when unset). */
  get maxSpectators() {
    return this.sessionConfig.maxSpectators ?? 8;
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
      // The rounds are netcode's hosting machine, as the daemon's.
      this.hosting = campfire.hosting({
        connectDeadlineMs: CONNECT_TIMEOUT_MS,
        guestSeats: this.guestSeats,
        startWhen: this.sessionConfig.startWhen ?? undefined,
        lateJoin: this.lateJoin,
        maxSpectators: this.maxSpectators,
        localPlayers: 1,
        publishedPlayers: 1,
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
    window.addEventListener('pagehide', () => this.pageGone());
    this.run(/** @type {import('./wasm.js').WasmHosting} */ (this.hosting).start(performance.now()));
    this.feed(this.seatsEvent());
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
      case 'netgraph':
        this.netgraph = msg.netgraph;
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
    if (!this.hosted) return;
    if (status.phase !== 'lobby' && !this.unlisted) {
      // Late join: listed on, as in progress; else unlisted.
      this.unlisted = true;
      this.client.updateSession(this.hosted, this.lateJoin ? { inProgress: true } : { public: false })
        .catch((e) => this.hooks.onDiagnostic?.(`could not mark the started session: ${e.message}`));
    }
    if (status.end && !before.end) this.ended();
    this.feed(this.seatsEvent());
    this.refreshIfDue();
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
    if (this.wakeTimer !== null) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    for (const id of [...this.joins.keys()]) this.dropJoin(id, 'was still connecting when the session ended');
    this.offer?.close();
    this.offer = null;
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

  /** The session's seats, as the hosting machine hears them. */
  seatsEvent() {
    return {
      event: 'seats',
      started: this.status.phase !== 'lobby',
      taken: this.seatsTaken(),
      spectators: this.status.spectators?.length ?? 0,
    };
  }

  /**
   * Reports `event` to the hosting machine and does what it says. Once the
   * session is over nothing more is reported.
   * @param {object} event
   */
  feed(event) {
    if (!this.hosting || this.stopped) return;
    let commands;
    try {
      commands = this.hosting.on(event, performance.now());
    } catch (e) {
      this.hooks.onDiagnostic?.(`the hosting machine refused ${JSON.stringify(event)}: ${e instanceof Error ? e.message : e}`);
      return;
    }
    this.run(commands);
  }

  /**
   * Does the hosting machine's commands: each lobby call, offer and
   * connection reports back through feed() when it is done.
   * @param {any[]} commands
   */
  run(commands) {
    const hosted = /** @type {import('./lobby-client.js').HostedSession} */ (this.hosted);
    for (const c of commands) {
      switch (c.command) {
        case 'makeOffer':
          PendingOffer.create(hosted.iceServers ?? []).then((offer) => {
            if (this.stopped) {
              offer.close();
              return;
            }
            this.offer = offer;
            this.feed({ event: 'offerMade' });
          }, (e) => {
            this.hooks.onDiagnostic?.(`gathering an offer failed: ${e instanceof Error ? e.message : e}`);
            this.feed({ event: 'offerFailed' });
          });
          break;
        case 'publishRound':
          this.client.publishRound(hosted, this.offer?.sdp ?? '', { players: c.players }).then((round) => {
            this.lastRefresh = performance.now();
            this.feed(round == null ? { event: 'noRound' } : { event: 'roundPublished', round });
          }, (e) => this.feed(this.lobbyFailed('publishRound', e)));
          break;
        case 'pollAnswer':
          this.client.waitAnswer(hosted, c.round, ANSWER_POLL_MS).then((answer) => {
            this.lastRefresh = performance.now();
            this.answer = answer;
            this.feed(answer ? { event: 'answered', round: c.round } : { event: 'pollEmpty', round: c.round });
          }, (e) => this.feed(this.lobbyFailed('pollAnswer', e)));
          break;
        case 'connect':
          this.connect(c.join);
          break;
        case 'dropJoin':
          this.dropJoin(c.join, c.why === 'evicted' ? 'showed no ICE progress, and a newer answer needed its slot'
            : c.why === 'noIceProgress' ? 'showed no ICE progress in time' : 'did not open its channels in time');
          break;
        case 'closeOffer':
          this.offer?.close();
          this.offer = null;
          break;
        case 'publishPlayers':
          this.client.updateSession(hosted, { players: c.players })
            .then(() => this.feed({ event: 'playersPublished', players: c.players }),
              (e) => this.feed(this.lobbyFailed('publishPlayers', e)));
          break;
        case 'stop':
          this.hooks.onDiagnostic?.(c.why === 'lobbyGone' ? 'the lobby entry is gone: no more rounds' : 'no more rounds: the session takes no joiners');
          break;
        default:
          this.hooks.onDiagnostic?.(`unknown hosting command ${JSON.stringify(c)}`);
      }
    }
    this.scheduleWake();
  }

  /** Wakes the hosting machine when it asked to be, if nothing else does first. */
  scheduleWake() {
    if (this.wakeTimer !== null) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    if (!this.hosting || this.stopped) return;
    const at = this.hosting.nextWake(performance.now());
    if (at !== null) {
      this.wakeTimer = setTimeout(() => this.feed({ event: 'clock' }), Math.max(0, at - performance.now()) + 1);
    }
  }

  /**
   * A failed lobby call, as the hosting machine hears it.
   * @param {'publishRound'|'pollAnswer'|'publishPlayers'} call
   * @param {unknown} e
   */
  lobbyFailed(call, e) {
    this.lobbyError(/** @type {Error} */ (e));
    return { event: 'lobbyFailed', call, code: e instanceof LobbyError ? e.code : undefined };
  }

  /**
   * Connects the answer just polled with the offer in hand, as join
   * `join`, in the background, and hands the link to the session.
   * @param {number} join
   */
  connect(join) {
    const { offer, answer } = this;
    this.offer = null;
    this.answer = null;
    if (!offer || !answer) {
      this.hooks.onDiagnostic?.('the hosting machine connected a join without an offer and answer');
      return;
    }
    this.joins.set(join, offer);
    offer.accept(answer.answer, () => this.feed({ event: 'iceProgress', join }))
      .then((link) => {
        if (!this.joins.has(join)) return; // dropped: already closed
        if (this.stopped) {
          offer.close();
          return;
        }
        this.addGuest(link);
        this.hooks.onDiagnostic?.(`guest "${answer.name}" connected`);
      }, (e) => {
        if (!this.joins.has(join)) return;
        offer.close();
        this.hooks.onDiagnostic?.(`a joiner's connection failed: ${e instanceof Error ? e.message : e}`);
      })
      .finally(() => {
        this.joins.delete(join);
        this.feed({ event: 'joinEnded', join });
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
        if (typeof ev.data === 'string' || ev.data instanceof ArrayBuffer) {
          worker.postMessage({ type: 'message', slot, channel: label, data: ev.data });
        }
      });
      dc.addEventListener('close', () => worker.postMessage({ type: 'state', slot, state: 'closed' }));
    }
    link.pc.addEventListener('connectionstatechange', () => {
      worker.postMessage({ type: 'state', slot, state: link.pc.connectionState });
    });
  }
}
