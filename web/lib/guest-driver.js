// Drives a WasmGuest (the Rust guest session, web/lib/wasm.js) over the two
// RTCDataChannels the host opens, `input` and `reconciliation`: the
// browser's twin of host-daemon's driver loop.
//
// Everything happens on data-channel and connection events, never on a
// render timer: a message arrives, the session is fed and polled, what it
// wants sent is sent. A backlog of bundles is worked off in bounded batches
// with a MessageChannel hop between them (not throttled in hidden tabs, so a
// hidden tab keeps pace). The only timer is the session's own wake-up (the
// disconnect grace), which may fire late in a hidden tab without harm.

import { CHANNELS } from './facts.js';
import { takeEarlyMessages } from './webrtc.js';

/** Polls per batch before yielding to the event loop. */
const MAX_POLLS_PER_BATCH = 64;

/**
 * @typedef {Object} DriverHooks
 * @property {(status: any) => void} [onStatus] the session's status changed (phase, tick, roster, end, …)
 * @property {(view: any) => void} [onTick] a new tick was applied: its render view
 * @property {(event: string) => void} [onDiagnostic] a session diagnostic (for the console)
 * @property {() => number} [now] the clock (default performance.now)
 */

export class GuestDriver {
  /**
   * @param {import('./wasm.js').WasmGuest} guest
   * @param {Record<string, RTCDataChannel>} channels by label
   * @param {RTCPeerConnection|null} pc
   * @param {DriverHooks} [hooks]
   */
  constructor(guest, channels, pc, hooks = {}) {
    this.guest = guest;
    this.channels = channels;
    this.pc = pc;
    this.hooks = hooks;
    this.now = hooks.now ?? (() => performance.now());
    /** @type {any} */
    this.status = guest.status();
    this.lastTick = -1;
    this.lastEpoch = -1;
    this.lastViewTick = -1;
    /** @type {ReturnType<typeof setTimeout>|null} */
    this.wakeTimer = null;
    this.batchQueued = false;
    this.stopped = false;
    const hop = new MessageChannel();
    hop.port1.onmessage = () => {
      this.batchQueued = false;
      this.pump();
    };
    this.hop = hop;
  }

  /** Starts listening to the channels and the connection. */
  attach() {
    this.feed(() => this.guest.onState('connected', this.now()));
    for (const label of CHANNELS) {
      const dc = this.channels[label];
      // What the host sent before this listener existed, first.
      for (const data of takeEarlyMessages(dc)) this.feed(() => this.guest.onMessage(label, data, this.now()));
      dc.addEventListener('message', (ev) => {
        if (this.stopped) return;
        if (typeof ev.data !== 'string' && !(ev.data instanceof ArrayBuffer)) {
          this.hooks.onDiagnostic?.(`ignored a message of an unknown kind on ${label}`);
          return;
        }
        this.feed(() => this.guest.onMessage(label, ev.data, this.now()));
      });
      dc.addEventListener('close', () => this.feed(() => this.guest.onState('closed', this.now())));
    }
    this.pc?.addEventListener('connectionstatechange', () => {
      const state = this.pc?.connectionState ?? 'closed';
      this.feed(() => this.guest.onState(state, this.now()));
    });
  }

  /**
   * This player's input from now on.
   * @param {object} input an InputSnapshot
   */
  setInput(input) {
    if (!this.stopped) this.guest.setInput(input);
  }

  /**
   * Feeds one event, then runs the session.
   * @param {() => void} fn
   */
  feed(fn) {
    if (this.stopped) return;
    try {
      fn();
    } catch (e) {
      // A malformed message is counted by the session; an error here is a
      // bug of this page's, reported rather than lost.
      this.hooks.onDiagnostic?.(`feeding the session failed: ${e instanceof Error ? e.message : e}`);
    }
    this.pump();
  }

  /** Polls, sends, reports; schedules the next batch or wake-up. */
  pump() {
    if (this.stopped) return;
    let out;
    let polls = 0;
    do {
      this.guest.poll(this.now());
      out = this.guest.output();
      for (const msg of out.send) this.send(msg.channel, msg.data);
      for (const ev of out.events) this.hooks.onDiagnostic?.(ev);
      polls += 1;
      this.report();
    } while (out.backlog && polls < MAX_POLLS_PER_BATCH && !this.stopped);
    if (out.backlog && !this.batchQueued) {
      this.batchQueued = true;
      this.hop.port2.postMessage(null);
    }
    if (this.wakeTimer !== null) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    if (out.wakeAtMs !== null && !this.stopped) {
      this.wakeTimer = setTimeout(() => this.pump(), Math.max(0, out.wakeAtMs - this.now()));
    }
  }

  /** Hands the page what changed. */
  report() {
    const status = this.guest.status();
    const changed = JSON.stringify(status) !== JSON.stringify(this.status);
    this.status = status;
    if (changed) this.hooks.onStatus?.(status);
    // A new view when a tick is confirmed (the prediction is redone from
    // it) or when this player's newest input moved the predicted tick.
    if (status.tick !== this.lastTick || status.viewTick !== this.lastViewTick
      || status.levelEpoch !== this.lastEpoch) {
      this.lastTick = status.tick;
      this.lastViewTick = status.viewTick;
      this.lastEpoch = status.levelEpoch;
      const view = this.guest.view(this.now());
      if (view) this.hooks.onTick?.(view);
    }
    if (status.end) this.stop();
  }

  /**
   * @param {string} label
   * @param {string|Uint8Array} data
   */
  send(label, data) {
    const dc = this.channels[label];
    if (dc && dc.readyState === 'open') dc.send(data);
  }

  /** Stops feeding the session (it ended, or the player left). */
  stop() {
    this.stopped = true;
    if (this.wakeTimer !== null) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    this.hop.port1.close();
  }
}
