// Watching a replay on /play (?replay=URL, or a replay file dropped on the
// page or picked in its form): the recorded level re-simulated in
// WebAssembly tick by tick (WasmReplayViewer) at a chosen speed, drawn by
// the page's GameScreen through a chosen player's eyes. Pause, speed,
// player choice and "go to tick" (a desync warning names its tick) are the
// page's controls; at the end the page says whether the run reproduced the
// recorded end, as `host-daemon replay` does.

import { TICK_RATE_HZ } from './facts.js';

/** Speeds offered, times real time. */
export const SPEEDS = [0.25, 0.5, 1, 2, 4, 8];

/** Most ticks one animation frame runs (a long pause is not caught up). */
const MAX_TICKS_PER_FRAME = 300;

/**
 * @typedef {Object} ReplayHooks
 * @property {(view: any) => void} onView a view to draw
 * @property {(status: import('./wasm.js').ViewerStatus, player: ReplayPlayer) => void} onStatus where the replay stands
 * @property {(status: import('./wasm.js').ViewerStatus) => void} onEnd the last recorded tick ran
 */

export class ReplayPlayer {
  /**
   * @param {import('./wasm.js').WasmReplayViewer} viewer
   * @param {ReplayHooks} hooks
   */
  constructor(viewer, hooks) {
    this.viewer = viewer;
    this.hooks = hooks;
    this.status = viewer.step(0);
    /** Whose eyes the view shows. @type {string|null} */
    this.player = this.status.roster[0] ?? null;
    this.playing = false;
    this.speed = 1;
    /** Ticks owed to the clock (fractions carry over). */
    this.due = 0;
    this.last = 0;
    this.stopped = false;
    this.show();
  }

  /** Runs on animation frames until stopped. */
  start() {
    this.playing = !this.status.ended;
    this.last = performance.now();
    const frame = (/** @type {number} */ now) => {
      if (this.stopped) return;
      requestAnimationFrame(frame);
      this.advance(now);
    };
    requestAnimationFrame(frame);
  }

  /** @param {number} now */
  advance(now) {
    const elapsed = Math.max(0, now - this.last);
    this.last = now;
    if (!this.playing) return;
    this.due += (elapsed / 1000) * TICK_RATE_HZ * this.speed;
    const ticks = Math.min(MAX_TICKS_PER_FRAME, Math.floor(this.due));
    if (ticks <= 0) return;
    this.due -= ticks;
    this.status = this.viewer.step(ticks);
    this.show();
    if (this.status.ended) {
      this.playing = false;
      this.hooks.onStatus(this.status, this);
      this.hooks.onEnd(this.status);
    }
  }

  /** Draws the world now and reports where the replay stands. */
  show() {
    this.hooks.onView(this.viewer.view(this.player));
    this.hooks.onStatus(this.status, this);
  }

  /** Pauses, or plays on (from the start again once it ended). */
  toggle() {
    if (this.status.ended && !this.playing) {
      this.seek(0);
      this.playing = true;
    } else {
      this.playing = !this.playing;
    }
    this.due = 0;
    this.hooks.onStatus(this.status, this);
  }

  /** @param {number} speed times real time (one of SPEEDS) */
  setSpeed(speed) {
    if (SPEEDS.includes(speed)) this.speed = speed;
    this.hooks.onStatus(this.status, this);
  }

  /** @param {string} player a roster member */
  watch(player) {
    if (this.status.roster.includes(player)) this.player = player;
    this.show();
  }

  /**
   * Goes to `tick` and pauses there.
   * @param {number} tick
   */
  seek(tick) {
    this.status = this.viewer.seek(Math.max(0, Math.floor(tick)));
    this.playing = false;
    this.due = 0;
    if (this.player !== null && !this.status.roster.includes(this.player)) this.player = this.status.roster[0] ?? null;
    this.show();
  }

  stop() {
    this.stopped = true;
    this.viewer.free();
  }
}
