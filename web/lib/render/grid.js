// @ts-check
// The view state's tile rows as a flat typed array, built once per grid
// object: the raycaster reads tiles millions of times a second, and a byte
// lookup is cheaper than `rows[y].charCodeAt(x)` plus a character switch.

import { TILE } from '../snapshot-view.js';

export { TILE };

/**
 * The grid as the view state carries it.
 * @typedef {Object} ViewGrid
 * @property {number} width
 * @property {number} height
 * @property {number} [version]
 * @property {string[]} rows one string per row y, one character per tile x
 */

/** Row characters to the wire's tile codes. */
const CHAR_TO_TILE = /** @type {Record<string, number>} */ ({
  '#': TILE.WALL, '.': TILE.FLOOR, D: TILE.DOOR, S: TILE.SECRET, E: TILE.EXIT,
});

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

/** @type {WeakMap<ViewGrid, TileGrid>} */
const decoded = new WeakMap();

/**
 * The decoded grid, cached per grid object (a new view state with the same
 * grid object costs nothing; a changed grid is a new object).
 * @param {ViewGrid} grid
 */
export function tileGridOf(grid) {
  let g = decoded.get(grid);
  if (!g) {
    g = new TileGrid(grid);
    decoded.set(grid, g);
  }
  return g;
}
