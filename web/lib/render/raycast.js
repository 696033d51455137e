// @ts-check
// The raycaster proper: a DDA walk through the tile grid per screen column
// (the classic Wolfenstein/Lode Vandevenne method). Pure arithmetic, no
// canvas, so the unit tests check distances for known rays.

import { blocksSight } from './grid.js';

/** A ray gives up after this many tile steps (a grid open to the edge). */
const MAX_STEPS = 256;

/**
 * Where one ray hit.
 * @typedef {Object} RayHit
 * @property {number} dist perpendicular distance to the wall (along the camera direction when it is a unit vector)
 * @property {number} side 0: an x-side (a wall facing east or west), 1: a y-side
 * @property {number} tile the tile code hit
 * @property {number} mapX
 * @property {number} mapY
 * @property {number} u where along the wall face the ray hit, in [0, 1), oriented so textures are not mirrored
 */

/**
 * Casts one ray from (px, py) along (rdx, rdy) and writes the first
 * sight-blocking tile into `out`.
 * @param {import('./grid.js').TileGrid} grid
 * @param {number} px
 * @param {number} py
 * @param {number} rdx
 * @param {number} rdy
 * @param {RayHit} out
 * @returns {RayHit}
 */
export function castRayInto(grid, px, py, rdx, rdy, out) {
  let mapX = Math.floor(px);
  let mapY = Math.floor(py);
  const deltaX = rdx === 0 ? Infinity : Math.abs(1 / rdx);
  const deltaY = rdy === 0 ? Infinity : Math.abs(1 / rdy);
  const stepX = rdx < 0 ? -1 : 1;
  const stepY = rdy < 0 ? -1 : 1;
  let sideX = rdx === 0 ? Infinity : (rdx < 0 ? px - mapX : mapX + 1 - px) * deltaX;
  let sideY = rdy === 0 ? Infinity : (rdy < 0 ? py - mapY : mapY + 1 - py) * deltaY;
  let side = 0;
  let tile = 0;
  for (let i = 0; i < MAX_STEPS; i++) {
    if (sideX < sideY) {
      sideX += deltaX;
      mapX += stepX;
      side = 0;
    } else {
      sideY += deltaY;
      mapY += stepY;
      side = 1;
    }
    tile = grid.at(mapX, mapY);
    if (blocksSight(tile)) break;
  }
  const dist = side === 0 ? sideX - deltaX : sideY - deltaY;
  let u = side === 0 ? py + dist * rdy : px + dist * rdx;
  u -= Math.floor(u);
  // Seen from the east or the north the face runs the other way.
  if ((side === 0 && rdx < 0) || (side === 1 && rdy > 0)) u = 1 - u;
  out.dist = dist;
  out.side = side;
  out.tile = tile;
  out.mapX = mapX;
  out.mapY = mapY;
  out.u = u >= 1 ? 0 : u;
  return out;
}

/**
 * {@link castRayInto} returning a fresh hit.
 * @param {import('./grid.js').TileGrid} grid
 * @param {number} px
 * @param {number} py
 * @param {number} rdx
 * @param {number} rdy
 */
export function castRay(grid, px, py, rdx, rdy) {
  return castRayInto(grid, px, py, rdx, rdy, { dist: 0, side: 0, tile: 0, mapX: 0, mapY: 0, u: 0 });
}

/**
 * The camera a frame is seen through (a player's position, direction and
 * camera plane, in tile units).
 * @typedef {Object} Camera
 * @property {number} x
 * @property {number} y
 * @property {number} dirX
 * @property {number} dirY
 * @property {number} planeX
 * @property {number} planeY
 */

/** One frame's rays, one per screen column, in typed arrays reused between frames. */
export class ColumnHits {
  /** @param {number} count */
  constructor(count) {
    this.count = count;
    /** Perpendicular wall distance per column: the depth buffer sprites are clipped by. */
    this.depth = new Float32Array(count);
    this.tile = new Uint8Array(count);
    this.side = new Uint8Array(count);
    this.u = new Float32Array(count);
    /** A small per-tile number (0..255) from the hit tile's position, for texture variety. */
    this.variant = new Uint8Array(count);
  }
}

/**
 * A stable 0..255 number per tile position: which wall variant a tile
 * shows. It depends on the position only, so a secret wall looks exactly
 * like the wall it pretends to be.
 * @param {number} x
 * @param {number} y
 */
export function tileHash(x, y) {
  let h = Math.imul(x, 0x27d4eb2d) ^ Math.imul(y, 0x165667b1);
  h = Math.imul(h ^ (h >>> 15), 0x85ebca6b);
  return (h ^ (h >>> 13)) & 0xff;
}

/**
 * Casts `hits.count` rays across the camera plane, left to right.
 * @param {import('./grid.js').TileGrid} grid
 * @param {Camera} cam
 * @param {ColumnHits} hits
 */
export function castColumns(grid, cam, hits) {
  /** @type {RayHit} */
  const hit = { dist: 0, side: 0, tile: 0, mapX: 0, mapY: 0, u: 0 };
  const n = hits.count;
  for (let i = 0; i < n; i++) {
    const camX = (2 * (i + 0.5)) / n - 1;
    castRayInto(grid, cam.x, cam.y, cam.dirX + cam.planeX * camX, cam.dirY + cam.planeY * camX, hit);
    hits.depth[i] = hit.dist;
    hits.tile[i] = hit.tile;
    hits.side[i] = hit.side;
    hits.u[i] = hit.u;
    hits.variant[i] = tileHash(hit.mapX, hit.mapY);
  }
  return hits;
}
