// The player's controls on a game page (/play and /host): keys (bound in
// the settings), the pointer-locked mouse and a gamepad turned into the
// engine's InputSnapshot, with taps that last until a tick used them,
// and the page's own keys (automap, fullscreen, mute; Escape for the
// leave prompt). The session sanitizes every input before it counts.

import { HELD_ACTIONS, NETGRAPH_KEYS, actionsByKey, defaultSettings } from './settings.js';
import { BUTTON, PadEdges, TURN_PX_PER_MS, firstPad, readPad } from './gamepad.js';
import { WEAPON_SLOT_COUNT as WEAPON_SLOTS } from './facts.js';

/** @param {KeyboardEvent} ev */
function typingInForm(ev) {
  const t = /** @type {HTMLElement} */ (ev.target);
  return t instanceof HTMLInputElement || t instanceof HTMLButtonElement || t instanceof HTMLSelectElement;
}

/**
 * @typedef {Object} ControlHooks
 * @property {() => boolean} active the game is running (keys are the player's)
 * @property {() => boolean} paused a prompt is open: the player stands still
 * @property {(input: object) => void} onInput the input changed
 * @property {() => void} onEscape Escape (or a gamepad's Start) was pressed while active
 * @property {() => void} onToggleMap the automap key was pressed while active
 * @property {() => void} [onFullscreen] the fullscreen key was pressed
 * @property {() => void} [onMute] the mute key was pressed
 * @property {() => void} [onToggleNetgraph] F3 or the backquote key was pressed
 * @property {() => {slot: number, owned: number[]}|null} [weapons] this player's weapon slots, for LB/RB
 */

export class Controls {
  /**
   * @param {HTMLCanvasElement} canvas the view (click for pointer lock)
   * @param {ControlHooks} hooks
   */
  constructor(canvas, hooks) {
    this.canvas = canvas;
    this.hooks = hooks;
    /** @type {import('./settings.js').Settings} */
    this.settings = defaultSettings();
    this.byKey = actionsByKey(this.settings.bindings);
    /** Keys held now. */
    this.held = new Set();
    /** Keys pressed since the last applied tick: a tap between two ticks still counts. */
    this.tapped = new Set();
    /** @type {number|null} */
    this.weaponTap = null;
    this.mouseDx = 0;
    /** Engine actions a gamepad holds now. @type {Set<string>} */
    this.padHeld = new Set();
    /** Engine actions the touch controls hold now. @type {Set<string>} */
    this.touchHeld = new Set();
    /** Gamepad and touch actions pressed since the last applied tick. @type {Set<string>} */
    this.padTapped = new Set();
    this.padEdges = new PadEdges();
    this.lastPoll = 0;
  }

  /**
   * Bindings, sensitivity and invert from now on.
   * @param {import('./settings.js').Settings} settings
   */
  useSettings(settings) {
    this.settings = settings;
    this.byKey = actionsByKey(settings.bindings);
    this.release();
  }

  /** Starts listening (and polling gamepads on animation frames). */
  attach() {
    window.addEventListener('keydown', (ev) => this.keydown(ev));
    window.addEventListener('keyup', (ev) => {
      if (this.held.delete(ev.code)) this.push();
    });
    window.addEventListener('blur', () => this.release());
    this.canvas.addEventListener('click', () => {
      if (this.hooks.active() && document.pointerLockElement !== this.canvas) {
        this.canvas.requestPointerLock?.();
      }
    });
    document.addEventListener('mousemove', (ev) => {
      if (document.pointerLockElement !== this.canvas || this.hooks.paused()) return;
      this.mouseDx += ev.movementX * this.turnScale();
      this.push();
    });
    const frame = (/** @type {number} */ now) => {
      requestAnimationFrame(frame);
      this.pollPad(now);
    };
    requestAnimationFrame(frame);
  }

  /** Mouse pixels per pixel moved: sensitivity, and the sign of invert. */
  turnScale() {
    return this.settings.sensitivity * (this.settings.invert ? -1 : 1);
  }

  /** @param {KeyboardEvent} ev */
  keydown(ev) {
    const action = this.byKey.get(ev.code);
    // Fullscreen and mute work before and after the game too.
    if ((action === 'fullscreen' || action === 'mute') && !typingInForm(ev) && !this.hooks.paused()) {
      ev.preventDefault();
      if (!ev.repeat) (action === 'fullscreen' ? this.hooks.onFullscreen : this.hooks.onMute)?.();
      return;
    }
    // The netgraph toggles whenever no prompt or form has the keys.
    if (NETGRAPH_KEYS.has(ev.code) && !typingInForm(ev) && !this.hooks.paused()) {
      ev.preventDefault();
      if (!ev.repeat) this.hooks.onToggleNetgraph?.();
      return;
    }
    // An open prompt (leave, settings) handles its own keys: Escape closes it.
    if (!this.hooks.active() || this.hooks.paused()) return;
    if (ev.code === 'Escape') {
      ev.preventDefault();
      this.hooks.onEscape();
      return;
    }
    if (typingInForm(ev)) return;
    if (action === 'map') {
      ev.preventDefault();
      if (!ev.repeat) this.hooks.onToggleMap();
      return;
    }
    if (action && HELD_ACTIONS.has(action)) {
      ev.preventDefault();
      this.held.add(ev.code);
      this.tapped.add(ev.code);
    } else if (/^Digit[1-9]$/.test(ev.code) && Number(ev.code.slice(5)) <= WEAPON_SLOTS) {
      this.weaponTap = Number(ev.code.slice(5)) - 1;
    } else {
      return;
    }
    this.push();
  }

  /**
   * Reads the gamepad once (an animation frame): held actions, the right
   * stick's turn since the last poll, and buttons that just went down.
   * @param {number} now ms
   */
  pollPad(now) {
    const dt = this.lastPoll ? Math.min(100, now - this.lastPoll) : 0;
    this.lastPoll = now;
    const pad = firstPad();
    if (!pad || !this.hooks.active() || this.hooks.paused()) {
      this.padEdges.pressed(new Set());
      if (this.padHeld.size > 0) {
        this.padHeld = new Set();
        this.push();
      }
      return;
    }
    const state = readPad(pad);
    let changed = state.held.size !== this.padHeld.size || [...state.held].some((a) => !this.padHeld.has(a));
    for (const a of state.held) if (!this.padHeld.has(a)) this.padTapped.add(a);
    this.padHeld = state.held;
    if (state.turn !== 0) {
      this.mouseDx += state.turn * TURN_PX_PER_MS * dt * this.turnScale();
      changed = true;
    }
    for (const b of this.padEdges.pressed(state.down)) {
      if (b === BUTTON.y) this.hooks.onToggleMap();
      else if (b === BUTTON.start) this.hooks.onEscape();
      else if (b === BUTTON.lb || b === BUTTON.rb) {
        this.weaponTap = this.nextWeapon(b === BUTTON.rb ? 1 : -1);
        changed = true;
      }
    }
    if (changed) this.push();
  }

  /**
   * The actions the touch controls hold now (a tap shorter than a tick
   * still counts once).
   * @param {Set<string>} held
   */
  setTouchHeld(held) {
    for (const a of held) if (!this.touchHeld.has(a)) this.padTapped.add(a);
    this.touchHeld = new Set([...held].filter((a) => HELD_ACTIONS.has(a)));
    this.push();
  }

  /**
   * Turns by `px` mouse pixels (a drag on the touch turn area), with the
   * sensitivity and invert settings.
   * @param {number} px
   */
  turnBy(px) {
    if (this.hooks.paused()) return;
    this.mouseDx += px * this.turnScale();
    this.push();
  }

  /**
   * Picks the next (`step` 1) or previous (-1) owned weapon.
   * @param {number} step
   */
  weaponStep(step) {
    this.weaponTap = this.nextWeapon(step);
    this.push();
  }

  /**
   * The next owned weapon slot after the current one (`step` ±1).
   * @param {number} step
   */
  nextWeapon(step) {
    const w = this.hooks.weapons?.() ?? null;
    const slot = w?.slot ?? 0;
    const owned = w && w.owned.length > 0 ? w.owned : [...Array(WEAPON_SLOTS).keys()];
    for (let i = 1; i <= WEAPON_SLOTS; i++) {
      const s = (slot + step * i + WEAPON_SLOTS * WEAPON_SLOTS) % WEAPON_SLOTS;
      if (owned.includes(s)) return s;
    }
    return slot;
  }

  /** The input now. */
  current() {
    /** @type {Record<string, unknown>} */
    const input = {};
    if (!this.hooks.paused()) {
      for (const code of new Set([...this.held, ...this.tapped])) {
        const action = this.byKey.get(code);
        if (action && HELD_ACTIONS.has(action)) input[action] = true;
      }
      for (const action of new Set([...this.padHeld, ...this.touchHeld, ...this.padTapped])) input[action] = true;
      if (this.weaponTap !== null) input.weaponSelect = this.weaponTap;
      input.mouseDeltaX = this.mouseDx;
    }
    return input;
  }

  push() {
    this.hooks.onInput(this.current());
  }

  /** Every key up (the window lost focus, a prompt closed). */
  release() {
    this.held.clear();
    this.push();
  }

  /** A tick was applied with the current input: taps and turns are spent. */
  spent() {
    if (this.tapped.size === 0 && this.padTapped.size === 0 && this.weaponTap === null && this.mouseDx === 0) return;
    this.tapped.clear();
    this.padTapped.clear();
    this.weaponTap = null;
    this.mouseDx = 0;
    this.push();
  }
}
