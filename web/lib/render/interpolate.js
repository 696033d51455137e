// @ts-check
// Between two engine ticks (30 per second) the display draws two or more
// frames; this blends two consecutive view states so motion is smooth.

import { CAMERA_PLANE } from './projection.js';

/**
 * The engine's view state for one tick, as the WebAssembly module exports it.
 * @typedef {Object} ViewPlayer
 * @property {string} id
 * @property {string} [name]
 * @property {number} x
 * @property {number} y
 * @property {number} dirX
 * @property {number} dirY
 * @property {number} planeX
 * @property {number} planeY
 * @property {number} health
 * @property {boolean} alive
 * @property {number} weapon
 * @property {string} [weaponName]
 * @property {{bullets: number, rockets: number, smg: number, gas: number}} ammo
 * @property {number} keys
 * @property {number} kills
 * @property {number} score
 *
 * @typedef {Object} ViewEnemy
 * @property {string|number} [id]
 * @property {'grunt'|'brute'|'sniper'|string} kind
 * @property {number} x
 * @property {number} y
 * @property {boolean} alive
 * @property {number} hp
 * @property {number} maxHp
 * @property {boolean} aggroed
 *
 * @typedef {Object} ViewState
 * @property {number} tick
 * @property {string} [me]
 * @property {import('./grid.js').ViewGrid} grid
 * @property {{x: number, y: number}} exit
 * @property {number|null} countdownTicks
 * @property {ViewPlayer[]} players
 * @property {ViewEnemy[]} enemies
 * @property {{kind: string, x: number, y: number}[]} pickups
 * @property {{x: number, y: number}[]} mines
 */

/** A move longer than this in one tick is a respawn or teleport: no blending. */
export const TELEPORT_TILES = 1.5;

/** @param {number} a @param {number} b @param {number} t */
const lerp = (a, b, t) => a + (b - a) * t;

/**
 * Direction and camera plane between two orientations: the direction is
 * blended and normalized; the plane stays perpendicular to it, with the
 * newer plane's length and handedness.
 * @param {{dirX: number, dirY: number}} a
 * @param {{dirX: number, dirY: number, planeX?: number, planeY?: number}} b
 * @param {number} t
 */
export function blendOrientation(a, b, t) {
  let dx = lerp(a.dirX, b.dirX, t);
  let dy = lerp(a.dirY, b.dirY, t);
  let len = Math.hypot(dx, dy);
  // Opposite directions blend to nothing: take the newer one.
  if (len < 1e-6) { dx = b.dirX; dy = b.dirY; len = Math.hypot(dx, dy); }
  if (len < 1e-9) { dx = 1; dy = 0; len = 1; }
  dx /= len;
  dy /= len;
  const px = b.planeX ?? 0;
  const py = b.planeY ?? 0;
  let planeLen = Math.hypot(px, py);
  let hand = Math.sign(b.dirX * py - b.dirY * px);
  if (planeLen < 1e-9) { planeLen = CAMERA_PLANE; hand = 1; }
  if (hand === 0) hand = 1;
  return { dirX: dx, dirY: dy, planeX: -dy * planeLen * hand, planeY: dx * planeLen * hand };
}

/**
 * @template {{x: number, y: number}} T
 * @param {T|undefined} a
 * @param {T} b
 * @param {number} t
 */
function blendPosition(a, b, t) {
  if (!a || Math.hypot(b.x - a.x, b.y - a.y) > TELEPORT_TILES) return { x: b.x, y: b.y };
  return { x: lerp(a.x, b.x, t), y: lerp(a.y, b.y, t) };
}

/**
 * The view state `alpha` of the way from `prev` to `next` (alpha clamped to
 * [0, 1]). Players are matched by id and enemies by id when they carry one,
 * else by index (the engine keeps enemies index-aligned with the map).
 * Anything only in `next` appears at its `next` place; everything else
 * (grid, pickups, mines, health, ammo) is taken from `next`. Camera
 * directions come out normalized, also without a `prev`.
 * @param {ViewState|null|undefined} prev
 * @param {ViewState} next
 * @param {number} alpha
 * @returns {ViewState}
 */
export function interpolateView(prev, next, alpha) {
  const t = prev && Number.isFinite(alpha) ? Math.min(1, Math.max(0, alpha)) : 1;
  if (!prev) prev = next;
  const prevPlayers = new Map(prev.players.map((p) => [p.id, p]));
  const players = next.players.map((p) => {
    const a = prevPlayers.get(p.id);
    return { ...p, ...blendPosition(a, p, t), ...blendOrientation(a ?? p, p, t) };
  });
  const prevEnemies = prev.enemies ?? [];
  const hasIds = (next.enemies ?? []).some((e) => e.id !== undefined);
  const byId = hasIds ? new Map(prevEnemies.map((e) => [e.id, e])) : null;
  const enemies = (next.enemies ?? []).map((e, i) => {
    const a = byId ? byId.get(e.id) : prevEnemies[i];
    return { ...e, ...blendPosition(a, e, t) };
  });
  return { ...next, players, enemies };
}
