// A gamepad in the browser's standard mapping, read as the player's
// controls: the left stick (or the d-pad) walks and steps, the right stick
// turns like the mouse, the triggers fire, A uses, LB and RB change weapon,
// Y toggles the automap and Start opens the leave prompt. Pure: `readPad`
// turns one Gamepad snapshot into actions, and `PadEdges` reports buttons
// as they go down, so Controls polls it once per animation frame.

/** Stick travel below this share counts as centred. */
export const DEAD_ZONE = 0.25;

/**
 * The right stick's turn at full travel, in mouse pixels per millisecond:
 * 1.2 px/ms is the keys' 3 rad/s at the engine's 0.0025 rad per pixel.
 */
export const TURN_PX_PER_MS = 1.2;

/** Buttons of the standard mapping that the game uses. */
export const BUTTON = /** @type {const} */ ({
  a: 0, b: 1, x: 2, y: 3, lb: 4, rb: 5, lt: 6, rt: 7, back: 8, start: 9,
  up: 12, down: 13, left: 14, right: 15,
});

/**
 * @typedef {Object} PadState
 * @property {Set<string>} held engine actions held now (moveForward, fire, ...)
 * @property {number} turn right stick, -1..1 beyond the dead zone (0 inside it)
 * @property {Set<number>} down buttons pressed now
 */

/**
 * @param {{pressed?: boolean, value?: number}|undefined} b
 */
function isDown(b) {
  return Boolean(b && (b.pressed || (b.value ?? 0) > 0.3));
}

/** @param {number|undefined} v */
function axis(v) {
  const x = Number.isFinite(v) ? /** @type {number} */ (v) : 0;
  if (Math.abs(x) < DEAD_ZONE) return 0;
  return Math.sign(x) * Math.min(1, (Math.abs(x) - DEAD_ZONE) / (1 - DEAD_ZONE));
}

/**
 * One gamepad's state as the game reads it.
 * @param {{axes: readonly number[], buttons: readonly {pressed?: boolean, value?: number}[]}} pad
 * @returns {PadState}
 */
export function readPad(pad) {
  const held = new Set();
  const down = new Set();
  pad.buttons.forEach((b, i) => { if (isDown(b)) down.add(i); });
  const [lx, ly, rx] = [axis(pad.axes[0]), axis(pad.axes[1]), axis(pad.axes[2])];
  if (ly < 0 || down.has(BUTTON.up)) held.add('moveForward');
  if (ly > 0 || down.has(BUTTON.down)) held.add('moveBack');
  if (lx < 0) held.add('strafeLeft');
  if (lx > 0) held.add('strafeRight');
  if (down.has(BUTTON.left)) held.add('turnLeft');
  if (down.has(BUTTON.right)) held.add('turnRight');
  if (down.has(BUTTON.rt) || down.has(BUTTON.lt)) held.add('fire');
  if (down.has(BUTTON.a)) held.add('use');
  return { held, turn: rx, down };
}

/** Buttons as they go down between two polls. */
export class PadEdges {
  constructor() {
    /** @type {Set<number>} */
    this.before = new Set();
  }

  /**
   * The buttons down now that were up at the previous poll.
   * @param {Set<number>} down
   * @returns {Set<number>}
   */
  pressed(down) {
    const edges = new Set([...down].filter((b) => !this.before.has(b)));
    this.before = down;
    return edges;
  }
}

/**
 * The first connected gamepad in the standard mapping (or any, when none
 * says so), or null.
 * @returns {Gamepad|null}
 */
export function firstPad() {
  const pads = [...(navigator.getGamepads?.() ?? [])].filter((p) => p && p.connected !== false);
  return /** @type {Gamepad|null} */ (pads.find((p) => p?.mapping === 'standard') ?? pads[0] ?? null);
}
