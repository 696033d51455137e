// The game's screen on /play and /host: the first-person view (or the
// automap) drawn on every animation frame from the two newest tick views,
// the HUD, the roster and the end-of-run table. Both pages share the same
// element ids (see play.html and host.html).

import { FrameCounter } from './netgraph.js';
import { barHeight, currentAmmo, hudUnit, renderFrame, tickAlpha } from './render/index.js';
import { Departures } from './departures.js';
import { soundsBetween } from './view-sounds.js';

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * @typedef {Object} ScreenHooks
 * @property {() => string|undefined} me this player's id, once known
 * @property {(id: string) => string} nameOf a player's name as shown
 * @property {() => number|null} rttMs the round trip to show, if any
 * @property {boolean} [watching] `me` is a player being watched (a spectator), not played
 * @property {(events: import('./view-sounds.js').SoundEvent[], listener: import('./sound.js').Listener|null) => void} [onSounds]
 *   what the new tick sounds like, heard from `me`
 */

export class GameScreen {
  /** @param {ScreenHooks} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    this.canvas = /** @type {HTMLCanvasElement} */ ($('view'));
    /** @type {'first-person'|'automap'} */
    this.mode = 'first-person';
    /** The two newest views and when the newer arrived. */
    this.prev = /** @type {any} */ (null);
    this.next = /** @type {any} */ (null);
    this.nextAt = 0;
    /** The world's internal resolution as a share of the canvas's (the view quality setting). */
    this.resolutionScale = 1;
    /** Who left, shown as left in the Players list. */
    this.departures = new Departures();
    /** Frames drawn, for the netgraph's frames per second. */
    this.frames = new FrameCounter();
  }

  /** Starts drawing on animation frames. */
  start() {
    const frame = (/** @type {number} */ now) => {
      requestAnimationFrame(frame);
      this.frames.frame(now);
      this.draw();
    };
    requestAnimationFrame(frame);
  }

  toggleMap() {
    this.mode = this.mode === 'automap' ? 'first-person' : 'automap';
    this.canvas.setAttribute('aria-label', this.mode === 'automap'
      ? 'Automap: the level from above' : 'First-person view of the level');
  }

  /**
   * A new view arrived. Views are predicted (this player's pending inputs
   * run ahead of the shared simulation), so the same tick can come again,
   * predicted from a newer confirmed state: it replaces the newest view
   * and the blend towards it goes on.
   * @param {any} view
   */
  onView(view) {
    if (this.next && view.tick === this.next.tick) {
      this.next = view;
      return;
    }
    if (this.next && view.tick === this.next.tick + 1) {
      this.prev = this.next;
      const events = soundsBetween(this.prev, view);
      if (events.length > 0 && this.hooks.onSounds) {
        const me = this.hooks.me();
        const p = me ? view.players.find((/** @type {any} */ q) => q.id === me) : null;
        this.hooks.onSounds(events, p ? { x: p.x, y: p.y, planeX: p.planeX, planeY: p.planeY } : null);
      }
    } else {
      this.prev = null;
    }
    this.next = view;
    this.nextAt = performance.now();
    $('hud-tick').textContent = String(view.tick);
  }

  /** This player in the newest view. */
  mine() {
    const me = this.hooks.me();
    return me ? this.next?.players.find((/** @type {any} */ p) => p.id === me) ?? null : null;
  }

  /**
   * The Players list: everyone in the game, then everyone who left (until
   * they come back).
   * @param {string[]} roster ids in the game
   * @param {Record<string, string>} names every id's name as the session knows it
   */
  renderRoster(roster, names) {
    const players = new Map((this.next?.players ?? []).map((/** @type {any} */ p) => [p.id, p]));
    $('roster').replaceChildren(...this.departures.follow(roster, names ?? {}).map(({ id, left }) => {
      const li = document.createElement('li');
      li.dataset.player = id;
      const p = players.get(id);
      if (left) li.dataset.left = '';
      li.textContent = `${this.hooks.nameOf(id)}${left ? ' — left' : p && !p.alive ? ' — down' : ''}`;
      return li;
    }));
  }

  /**
   * Shows the end-of-run table.
   * @param {{scores: any[], provisional?: boolean}} end
   * @param {string} note
   */
  showResults(end, note) {
    if (document.pointerLockElement) document.exitPointerLock();
    $('results').hidden = false;
    $('results-note').textContent = note;
    const rows = end.scores.length > 0 ? end.scores : (this.next?.players ?? []).map((/** @type {any} */ p) => (
      { playerId: p.id, name: p.name, killScore: p.score, kills: p.kills, disconnected: false }));
    $('results-rows').replaceChildren(...rows.map((/** @type {any} */ r) => {
      const tr = document.createElement('tr');
      tr.dataset.player = r.playerId;
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = this.hooks.nameOf(r.playerId);
      const td = (/** @type {string} */ t) => { const c = document.createElement('td'); c.textContent = t; return c; };
      tr.append(th, td(String(r.killScore)), td(String(r.kills)), td(r.disconnected ? 'left' : ''));
      return tr;
    }));
  }

  draw() {
    if (!this.next || $('game').hidden) return;
    const canvas = this.canvas;
    const rect = canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(rect.width * dpr));
    const h = Math.max(1, Math.round(rect.height * dpr));
    if (canvas.width !== w || canvas.height !== h) {
      canvas.width = w;
      canvas.height = h;
      // Touch controls sit above the view's bottom bar.
      const bar = barHeight(hudUnit(w, h, dpr), w) / dpr;
      canvas.parentElement?.style.setProperty('--hud-bar', `${Math.round(bar)}px`);
    }
    const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d', { alpha: false }));
    const rttMs = this.hooks.rttMs();
    renderFrame(ctx, {
      prev: this.prev,
      next: this.next,
      alpha: tickAlpha(performance.now(), this.nextAt),
      me: this.hooks.me(),
      watching: this.hooks.watching ?? false,
      rttMs,
      mode: this.mode,
      width: w,
      height: h,
      pixelRatio: dpr,
      resolutionScale: this.resolutionScale,
    });
    const me = this.mine();
    if (me) {
      $('hud-health').textContent = me.alive ? String(Math.ceil(me.health)) : 'down';
      const ammo = currentAmmo(me);
      $('hud-ammo').textContent = ammo ? `${ammo.count} ${ammo.pool} (${me.weaponName})` : me.weaponName;
      $('hud-keys').textContent = String(me.keys);
    }
    $('hud-rtt').textContent = rttMs == null ? '—' : `${Math.round(rttMs)} ms`;
  }
}
