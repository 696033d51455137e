// Per-tick player input and the spec §6 rule that local signals never reach
// the shared stream (protocol/src/input.rs). Every input a GuestSession
// sends goes through sanitizeInput first, so a game cannot forget it.

/** Largest mouse movement (pixels, either sign) one tick may carry. */
export const MAX_MOUSE_DELTA_X = 4096;
/** Number of weapon slots; a weaponSelect must be below it. */
export const WEAPON_SLOT_COUNT = 6;

/**
 * One player's input for one tick. `escape`, `blur`, `pointerUnlock` and
 * `click` are local only: a game may record them, the shared stream never
 * carries them. There is no cheat field, by design.
 * @typedef {Object} InputSnapshot
 * @property {boolean} moveForward
 * @property {boolean} moveBack
 * @property {boolean} strafeLeft
 * @property {boolean} strafeRight
 * @property {boolean} turnLeft
 * @property {boolean} turnRight
 * @property {number} mouseDeltaX horizontal mouse movement this tick (positive turns right)
 * @property {boolean} fire
 * @property {boolean} use
 * @property {number|null} weaponSelect
 * @property {boolean} escape
 * @property {boolean} blur
 * @property {boolean} pointerUnlock
 * @property {boolean} click
 */

/** @type {Readonly<InputSnapshot>} The all-neutral idle input (EMPTY_SNAPSHOT). */
export const NEUTRAL_INPUT = Object.freeze({
  moveForward: false,
  moveBack: false,
  strafeLeft: false,
  strafeRight: false,
  turnLeft: false,
  turnRight: false,
  mouseDeltaX: 0,
  fire: false,
  use: false,
  weaponSelect: null,
  escape: false,
  blur: false,
  pointerUnlock: false,
  click: false,
});

const BUTTONS = ['moveForward', 'moveBack', 'strafeLeft', 'strafeRight', 'turnLeft', 'turnRight', 'fire', 'use'];

/**
 * What may enter the shared stream: the local-only signals forced false, a
 * non-finite mouse delta replaced by 0 and the rest clamped, a weaponSelect
 * that is not a slot dropped, every button a real boolean, unknown fields
 * (a cheat code, say) gone.
 * @param {Partial<InputSnapshot>} raw
 * @returns {InputSnapshot}
 */
export function sanitizeInput(raw) {
  /** @type {any} */
  const out = { ...NEUTRAL_INPUT };
  const src = raw && typeof raw === 'object' ? raw : {};
  for (const b of BUTTONS) out[b] = src[b] === true;
  const m = Number(src.mouseDeltaX);
  out.mouseDeltaX = Number.isFinite(m) ? Math.max(-MAX_MOUSE_DELTA_X, Math.min(MAX_MOUSE_DELTA_X, m)) : 0;
  const w = src.weaponSelect;
  out.weaponSelect = Number.isInteger(w) && w >= 0 && w < WEAPON_SLOT_COUNT ? w : null;
  return out;
}

/**
 * Whether an input is exactly the neutral one.
 * @param {InputSnapshot} input
 */
export function isNeutral(input) {
  return Object.keys(NEUTRAL_INPUT).every((k) => input[k] === NEUTRAL_INPUT[k]);
}
