// @ts-check
// The first-person backdrop (ceiling and floor gradients), marks on the
// floor (the exit tile) and the wall columns.

import { EYE_HEIGHT, NEAR_PLANE, focalLength, toCamera } from './projection.js';
import { PALETTE } from './palette.js';
import { TEX_SIZE, lightAt, lightLevel, wallTextures } from './textures.js';

/**
 * Ceiling and floor as two gradients that fade into the fog at the horizon.
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} width
 * @param {number} height
 * @param {number} horizon
 */
export function drawBackdrop(ctx, width, height, horizon) {
  const ceiling = ctx.createLinearGradient(0, 0, 0, horizon);
  ceiling.addColorStop(0, PALETTE.ceilingTop);
  ceiling.addColorStop(1, PALETTE.ceilingHorizon);
  ctx.fillStyle = ceiling;
  ctx.fillRect(0, 0, width, horizon);
  const floor = ctx.createLinearGradient(0, horizon, 0, height);
  floor.addColorStop(0, PALETTE.floorHorizon);
  floor.addColorStop(1, PALETTE.floorBottom);
  ctx.fillStyle = floor;
  ctx.fillRect(0, horizon, width, height - horizon);
}

/**
 * Fills the floor rectangle [x0, x1] x [y0, y1] (tile units) as seen by the
 * camera, clipped at the near plane. Walls drawn afterwards hide the parts
 * behind them, because floor behind a wall projects inside the wall's column.
 * @param {CanvasRenderingContext2D} ctx
 * @param {import('./raycast.js').Camera} cam
 * @param {number[][]} corners floor points [x, y], in order around the shape
 * @param {number} width
 * @param {number} horizon
 */
export function floorPath(ctx, cam, corners, width, horizon) {
  const f = focalLength(cam, width);
  const pts = corners.map(([x, y]) => toCamera(cam, x, y, width));
  /** @type {{side: number, depth: number}[]} */
  const clipped = [];
  for (let i = 0; i < pts.length; i++) {
    const a = pts[i];
    const b = pts[(i + 1) % pts.length];
    if (a.depth >= NEAR_PLANE) clipped.push(a);
    if ((a.depth >= NEAR_PLANE) !== (b.depth >= NEAR_PLANE)) {
      const t = (NEAR_PLANE - a.depth) / (b.depth - a.depth);
      clipped.push({ side: a.side + (b.side - a.side) * t, depth: NEAR_PLANE });
    }
  }
  ctx.beginPath();
  if (clipped.length < 3) return false;
  clipped.forEach((p, i) => {
    const sx = (width / 2) * (1 + p.side / p.depth);
    const sy = horizon + (EYE_HEIGHT * f) / p.depth;
    if (i === 0) ctx.moveTo(sx, sy); else ctx.lineTo(sx, sy);
  });
  ctx.closePath();
  return true;
}

/**
 * The exit tile on the floor: a green pad with a bright inner ring.
 * @param {CanvasRenderingContext2D} ctx
 * @param {import('./raycast.js').Camera} cam
 * @param {{x: number, y: number}} exit
 * @param {number} width
 * @param {number} horizon
 */
export function drawExitPad(ctx, cam, exit, width, horizon) {
  const depth = toCamera(cam, exit.x + 0.5, exit.y + 0.5, width).depth;
  if (depth < -1.5) return;
  /** @param {number} inset */
  const square = (inset) => [
    [exit.x + inset, exit.y + inset], [exit.x + 1 - inset, exit.y + inset],
    [exit.x + 1 - inset, exit.y + 1 - inset], [exit.x + inset, exit.y + 1 - inset],
  ];
  ctx.save();
  ctx.globalAlpha = Math.max(0.35, lightAt(depth));
  const layers = /** @type {[number, string][]} */ ([[0.02, PALETTE.exit], [0.12, '#1c5a35'], [0.3, '#7dffb0'], [0.38, '#2a8a52']]);
  for (const [inset, colour] of layers) {
    if (floorPath(ctx, cam, square(inset), width, horizon)) {
      ctx.fillStyle = colour;
      ctx.fill();
    }
  }
  ctx.restore();
}

/**
 * The wall columns: one textured, pre-shaded drawImage slice per ray.
 * @param {CanvasRenderingContext2D} ctx
 * @param {import('./raycast.js').ColumnHits} hits
 * @param {import('./raycast.js').Camera} cam
 * @param {number} width
 * @param {number} horizon
 */
export function drawWalls(ctx, hits, cam, width, horizon) {
  const textures = wallTextures();
  const f = focalLength(cam, width);
  const stripWidth = width / hits.count;
  for (let i = 0; i < hits.count; i++) {
    const shades = textures.get(hits.tile[i]);
    if (!shades) continue;
    const d = Math.max(hits.depth[i], 1e-3);
    const h = f / d;
    const top = horizon - (1 - EYE_HEIGHT) * h;
    const x0 = Math.floor(i * stripWidth);
    const x1 = Math.floor((i + 1) * stripWidth);
    const tex = shades[hits.side[i]][lightLevel(d)];
    const tx = Math.min(TEX_SIZE - 1, Math.floor(hits.u[i] * TEX_SIZE));
    ctx.drawImage(tex, tx, 0, 1, TEX_SIZE, x0, top, x1 - x0, h);
  }
}
