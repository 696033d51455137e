// @ts-check
// The view state's tile rows as a flat typed array, rebuilt only when the
// rows change: the raycaster reads tiles millions of times a second, and a
// byte lookup is cheaper than `rows[y].charCodeAt(x)` plus a character switch.

import { TILE, TILE_OF_CHAR } from '../facts.js';

export { TILE };

/**
 * The grid as the view state carries it.
 * @typedef {Object} ViewGrid
 * @property {number} width
 * @property {number} height
 * @property {number} [version]
 * @property {string[]} rows one string per row y, one character per tile x
 */

/** Row characters to the wire's tile codes (generated from `view.rs`). */
const CHAR_TO_TILE = /** @type {Record<string, number>} */ (TILE_OF_CHAR);

/** A grid decoded to tile codes; everything outside it is wall. */
export class TileGrid {
  /** @param {ViewGrid} grid */
  constructor(grid) {
    this.width = grid.width;
    this.height = grid.height;
    this.cells = new Uint8Array(grid.width * grid.height).fill(TILE.WALL);
    for (let y = 0; y < grid.height; y++) {
      const row = grid.rows[y] ?? '';
      for (let x = 0; x < grid.width; x++) {
        this.cells[y * grid.width + x] = CHAR_TO_TILE[row[x]] ?? TILE.WALL;
      }
    }
  }

  /** @param {number} x @param {number} y */
  at(x, y) {
    if (x < 0 || y < 0 || x >= this.width || y >= this.height) return TILE.WALL;
    return this.cells[y * this.width + x];
  }
}

/** Whether a ray stops at the tile: walls, closed doors and secret walls. */
export const blocksSight = (/** @type {number} */ t) => t === TILE.WALL || t === TILE.DOOR || t === TILE.SECRET;

/** The last decoded grid and the rows it came from. */
let last = { /** @type {string[]} */ rows: [], /** @type {TileGrid|null} */ grid: null };

/**
 * The decoded grid, reused while the rows are the same: the engine makes a
 * new view state (and grid object) every tick, but the grid rarely changes
 * (a door opens, a secret wall slides). Comparing the row strings is much
 * cheaper than decoding, and unlike `version` it cannot be fooled by a new
 * level whose version counter restarts.
 * @param {ViewGrid} grid
 */
export function tileGridOf(grid) {
  let g = last.grid;
  const same = g !== null && g.width === grid.width && g.height === grid.height
    && last.rows.length === grid.rows.length && last.rows.every((r, i) => r === grid.rows[i]);
  if (!same || g === null) {
    g = new TileGrid(grid);
    last = { rows: grid.rows.slice(), grid: g };
  }
  return g;
}
