// @ts-check
// campfire's first-person renderer: draws a view state (produced by the
// Rust engine through WebAssembly, one per 30 Hz tick) onto a 2D canvas.
//
//   import { renderFrame, tickAlpha } from '/web/lib/render/index.js';
//   const ctx = canvas.getContext('2d', { alpha: false }); // every pixel is drawn each frame
//   // each animation frame:
//   renderFrame(ctx, { prev, next, alpha: tickAlpha(performance.now(), nextArrivedAt),
//                      me, rttMs, mode: 'first-person', width: canvas.width,
//                      height: canvas.height, pixelRatio: devicePixelRatio });
//
// Resolution: the caller sizes the canvas in device pixels (CSS size times
// devicePixelRatio) and passes that ratio as `pixelRatio`. The world
// (walls, floor, ceiling) is rendered into a buffer of at most
// MAX_BUFFER_PIXELS (640x400 worth; one ray per buffer column) and scaled
// up without smoothing, a deliberate chunky-pixel look; sprites (from
// mipmaps, also unsmoothed), the weapon and the HUD are drawn at the
// canvas's full resolution, so text stays sharp. HUD text scales from CSS
// pixels (never below 14 CSS px). A portrait screen narrows the field of
// view rather than shrinking the world (cameraFor).
//
// Layout (one concern per file):
//   grid.js         the view state's rows decoded to tile codes, cached per grid object
//   raycast.js      DDA per column; the per-column depth buffer
//   projection.js   camera-space projection (sprites, eye height)
//   interpolate.js  blending two consecutive view states (positions, camera)
//   textures.js     procedural wall, door, floor, exit and ceiling textures, pre-shaded by distance
//   world-buffer.js floor, ceiling and wall pixels at the internal resolution, scaled up
//   sprite-art.js   procedural sprite images (enemies, pickups, mines, players)
//   sprites.js      billboards: gather, project, depth-sort, clip by the depth buffer
//   weapon.js       the weapon at the bottom centre, bob, muzzle flash, crosshair
//   effects.js      shot and hit effects that outlast their tick
//   hud.js          health, ammo, keys, kills/score, exit countdown, RTT
//   automap.js      the top-down map mode
//   palette.js      colours; surface.js offscreen canvases and a seeded PRNG

import { TICK_RATE_HZ } from '../facts.js';
import { drawAutomap } from './automap.js';
import { tileGridOf } from './grid.js';
import { ScreenEffects, drawHurt } from './effects.js';
import { barHeight, drawHud, hudUnit } from './hud.js';
import { interpolateView } from './interpolate.js';
import { PALETTE } from './palette.js';
import { CAMERA_PLANE } from './projection.js';
import { billboardsOf, drawBillboards, projectBillboards } from './sprites.js';
import { WorldBuffer, bufferSize } from './world-buffer.js';
import { drawCrosshair, drawWeapon } from './weapon.js';

export { interpolateView, blendOrientation, TELEPORT_TILES } from './interpolate.js';
export { barHeight, countdownText, currentAmmo, hudUnit, rttText, WEAPON_NAMES, WEAPON_POOL } from './hud.js';
export { automapLayout } from './automap.js';
export { castRay, castColumns, ColumnHits } from './raycast.js';
export { projectSprite, toCamera, focalLength } from './projection.js';
export { TileGrid, tileGridOf } from './grid.js';
export { MAX_BUFFER_PIXELS, bufferSize } from './world-buffer.js';

/** The smallest focal length (pixels per tile at distance 1) as a share of the view's height. */
export const MIN_FOCAL_PER_HEIGHT = 0.9;
/** Distance a player covers in one tick at full walking speed (engine/src/rules.rs: 3.2 tiles/s). */
const WALK_PER_TICK = 3.2 / TICK_RATE_HZ;

/**
 * @typedef {'first-person'|'automap'} RenderMode
 *
 * @typedef {Object} FrameOptions
 * @property {import('./interpolate.js').ViewState|null} [prev] the view state one tick before `next` (null: no blending)
 * @property {import('./interpolate.js').ViewState} next the newest view state
 * @property {number} [alpha] fraction of the tick elapsed since `next` arrived, 0..1
 * @property {string} [me] whose eyes to render; defaults to `next.me`
 * @property {boolean} [watching] `me` is a player being watched (a spectator's view): the automap labels it by name, not "you"
 * @property {number|null} [rttMs] round-trip time to the host, shown in the HUD
 * @property {RenderMode} [mode]
 * @property {number} width canvas width in device pixels
 * @property {number} height canvas height in device pixels
 * @property {number} [pixelRatio] device pixels per CSS pixel (window.devicePixelRatio)
 * @property {number} [resolutionScale] the world's internal resolution as a share of the canvas's, 0.25..1 (the player's view quality setting; default 1)
 *
 * @typedef {Object} FrameInfo what was drawn, for tests and debugging
 * @property {import('./interpolate.js').ViewState} view the interpolated view state
 * @property {import('./raycast.js').Camera|null} camera null in automap mode or with no player to look through
 * @property {Float32Array|null} depth per-ray wall distance
 * @property {number} horizon screen row of the horizon
 * @property {{scale: number, originX: number, originY: number}} [automap] in automap mode: pixels per tile and where tile (0, 0) is
 */

const world = new WorldBuffer();
const effects = new ScreenEffects();

/**
 * Fraction of a tick elapsed at `nowMs` since the newest view state arrived
 * at `nextAtMs`, clamped to [0, 1].
 * @param {number} nowMs
 * @param {number} nextAtMs
 */
export function tickAlpha(nowMs, nextAtMs) {
  return Math.min(1, Math.max(0, ((nowMs - nextAtMs) * TICK_RATE_HZ) / 1000));
}

/**
 * Draws one frame into [0, width) x [0, height) of `ctx`.
 * @param {CanvasRenderingContext2D} ctx
 * @param {FrameOptions} o
 * @returns {FrameInfo}
 */
export function renderFrame(ctx, o) {
  const { next, width, height } = o;
  const alpha = o.alpha ?? 1;
  const view = interpolateView(o.prev, next, alpha);
  const meId = o.me ?? next.me;
  const me = view.players.find((p) => p.id === meId);
  const unit = hudUnit(width, height, o.pixelRatio ?? 1);
  const barH = barHeight(unit, width);
  const hud = { me, countdownTicks: countdown(o.prev, next, alpha), rttMs: o.rttMs, width, height, unit };
  ctx.save();
  try {
    if (o.mode === 'automap') {
      ctx.imageSmoothingEnabled = true;
      const automap = drawAutomap(ctx, view, { me: meId, watching: o.watching ?? false, width, height, reserveTop: unit * 3.6, reserveBottom: barH, unit });
      drawHud(ctx, hud);
      return { view, camera: null, depth: null, horizon: 0, automap };
    }
    const horizon = Math.round((height - barH) / 2);
    // With no local player (a spectator), look through the first player.
    const eye = me ?? view.players[0];
    if (!eye) {
      ctx.fillStyle = PALETTE.mapBackground;
      ctx.fillRect(0, 0, width, height);
      drawHud(ctx, hud);
      return { view, camera: null, depth: null, horizon };
    }
    const camera = cameraFor(eye, width, horizon * 2);
    const q = Math.min(1, Math.max(0.25, o.resolutionScale ?? 1));
    const size = bufferSize(Math.round(width * q), Math.round(height * q));
    world.resize(size.width, size.height);
    const hits = world.draw(tileGridOf(view.grid), camera, (horizon * size.height) / height);
    // Nearest-neighbour scaling for the world and the sprites (mipmapped):
    // the chunky-pixel look, and a third of the cost of smoothed blits.
    ctx.imageSmoothingEnabled = false;
    world.blit(ctx, width, height);
    drawBillboards(ctx, projectBillboards(billboardsOf(view, eye.id, next.tick + alpha), camera, width, horizon), hits, width, unit);
    ctx.imageSmoothingEnabled = true;
    if (me) {
      effects.observe(o.prev, next, me.id);
      firstPersonOverlay(ctx, o, me, { width, height, horizon, unit, barH, alpha });
    }
    drawHud(ctx, hud);
    return { view, camera, depth: hits.depth, horizon };
  } finally {
    ctx.restore();
  }
}

/**
 * The camera for a player on a screen of `width` by `viewHeight`. Pixels are
 * square; on a landscape screen the player sees the engine's whole field
 * of view across. On a tall (portrait) screen that would shrink the world
 * to a strip, so the plane is shortened until the focal length reaches
 * MIN_FOCAL_PER_HEIGHT of the view height: a phone sees a narrower slice,
 * at a readable size.
 * @param {import('./interpolate.js').ViewPlayer} p
 * @param {number} width
 * @param {number} viewHeight
 * @returns {import('./raycast.js').Camera}
 */
export function cameraFor(p, width, viewHeight) {
  const plane = Math.hypot(p.planeX, p.planeY) || CAMERA_PLANE;
  const k = Math.min(1, width / (2 * plane * MIN_FOCAL_PER_HEIGHT * viewHeight));
  return { x: p.x, y: p.y, dirX: p.dirX, dirY: p.dirY, planeX: p.planeX * k, planeY: p.planeY * k };
}

/**
 * Ticks left on the exit countdown, running down smoothly between ticks.
 * @param {import('./interpolate.js').ViewState|null|undefined} prev
 * @param {import('./interpolate.js').ViewState} next
 * @param {number} alpha
 */
function countdown(prev, next, alpha) {
  if (next.countdownTicks == null) return null;
  return prev?.countdownTicks != null ? Math.max(0, next.countdownTicks - alpha) : next.countdownTicks;
}

/**
 * The weapon, crosshair, hurt flash and the "down" veil of the local player.
 * @param {CanvasRenderingContext2D} ctx
 * @param {FrameOptions} o
 * @param {import('./interpolate.js').ViewPlayer} me
 * @param {{width: number, height: number, horizon: number, unit: number, barH: number, alpha: number}} f
 */
function firstPersonOverlay(ctx, o, me, f) {
  if (!me.alive) {
    ctx.fillStyle = 'rgba(90, 0, 0, 0.45)';
    ctx.fillRect(0, 0, f.width, f.height);
    ctx.font = `700 ${Math.round(f.unit * 1.8)}px system-ui, sans-serif`;
    ctx.textAlign = 'center';
    ctx.fillStyle = '#ffd6d6';
    ctx.fillText('You are down', f.width / 2, f.horizon);
    ctx.font = `${Math.round(f.unit)}px system-ui, sans-serif`;
    ctx.fillText('Your team can still reach the exit', f.width / 2, f.horizon + f.unit * 1.8);
    return;
  }
  const before = o.prev?.players.find((p) => p.id === me.id);
  const after = o.next.players.find((p) => p.id === me.id) ?? me;
  const moved = before ? Math.hypot(after.x - before.x, after.y - before.y) : 0;
  const stride = Math.min(1, moved / WALK_PER_TICK);
  const now = o.next.tick + f.alpha;
  const phase = now * 0.45;
  drawWeapon(ctx, { slot: me.weapon, width: f.width, bottom: f.height - f.barH, phase, stride, flash: effects.shot(now) });
  drawCrosshair(ctx, f.width / 2, f.horizon, f.unit);
  drawHurt(ctx, f.width, f.height, effects.hurt(now));
}
