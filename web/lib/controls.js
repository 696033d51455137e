// The player's controls on a game page (/play and /host): keyboard and
// pointer-locked mouse turned into the engine's InputSnapshot, with taps
// that last until a tick used them, Tab for the automap and Escape for the
// page's leave prompt. The session sanitizes every input before it counts.

/** Key bindings, by KeyboardEvent.code. */
const BINDINGS = /** @type {Record<string, string>} */ ({
  ArrowUp: 'moveForward', KeyW: 'moveForward',
  ArrowDown: 'moveBack', KeyS: 'moveBack',
  ArrowLeft: 'turnLeft', ArrowRight: 'turnRight',
  KeyA: 'strafeLeft', KeyD: 'strafeRight',
  Space: 'fire', KeyE: 'use',
});

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
 * @property {() => void} onEscape Escape was pressed while active
 * @property {() => void} onToggleMap Tab was pressed while active
 */

export class Controls {
  /**
   * @param {HTMLCanvasElement} canvas the view (click for pointer lock)
   * @param {ControlHooks} hooks
   */
  constructor(canvas, hooks) {
    this.canvas = canvas;
    this.hooks = hooks;
    /** Keys held now. */
    this.held = new Set();
    /** Keys pressed since the last applied tick: a tap between two ticks still counts. */
    this.tapped = new Set();
    /** @type {number|null} */
    this.weaponTap = null;
    this.mouseDx = 0;
  }

  /** Starts listening. */
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
      this.mouseDx += ev.movementX;
      this.push();
    });
  }

  /** @param {KeyboardEvent} ev */
  keydown(ev) {
    if (!this.hooks.active()) return;
    if (ev.code === 'Escape') {
      ev.preventDefault();
      this.hooks.onEscape();
      return;
    }
    if (this.hooks.paused() || typingInForm(ev)) return;
    if (ev.code === 'Tab') {
      ev.preventDefault();
      this.hooks.onToggleMap();
      return;
    }
    if (BINDINGS[ev.code]) {
      ev.preventDefault();
      this.held.add(ev.code);
      this.tapped.add(ev.code);
    } else if (/^Digit[1-6]$/.test(ev.code)) {
      this.weaponTap = Number(ev.code.slice(5)) - 1;
    } else {
      return;
    }
    this.push();
  }

  /** The input now. */
  current() {
    /** @type {Record<string, unknown>} */
    const input = {};
    if (!this.hooks.paused()) {
      for (const code of new Set([...this.held, ...this.tapped])) {
        const field = BINDINGS[code];
        if (field) input[field] = true;
      }
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

  /** A tick was applied with the current input: taps and mouse motion are spent. */
  spent() {
    if (this.tapped.size === 0 && this.weaponTap === null && this.mouseDx === 0) return;
    this.tapped.clear();
    this.weaponTap = null;
    this.mouseDx = 0;
    this.push();
  }
}
