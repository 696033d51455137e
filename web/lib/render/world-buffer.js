// @ts-check
// The 3D world (ceiling, floor and walls) drawn into a pixel buffer at a
// reduced internal resolution, then scaled onto the canvas in one
// drawImage. Measured in software-rendering Chromium on a busy 2-core
// machine, the first version (640 scaled drawImage wall strips over two
// gradient fills) took about 19 ms per 1280x720 frame for walls and
// backdrop alone; this buffer (at most MAX_BUFFER_PIXELS), with textured
// floor and ceiling, takes about 2 ms of JavaScript and 1 ms to scale up
// (tools/bench-render.mjs measures whole frames).
// The pixels are plain typed arrays, so the unit tests render without a
// canvas; only `blit` needs one.

import { TILE } from './grid.js';
import { EYE_HEIGHT, focalLength } from './projection.js';
import { ColumnHits, castColumns } from './raycast.js';
import { makeSurface } from './surface.js';
import { LIGHT_LEVELS, TEX_SIZE, lightLevel, textures } from './textures.js';

/** The internal buffer holds at most this many pixels (e.g. 640x400, 608x342 for 16:9). */
export const MAX_BUFFER_PIXELS = 640 * 400;

const TEX_MASK = TEX_SIZE - 1;

/**
 * The internal resolution for a canvas: the canvas itself when small
 * enough, else scaled down evenly to MAX_BUFFER_PIXELS.
 * @param {number} width
 * @param {number} height
 */
export function bufferSize(width, height) {
  const s = Math.min(1, Math.sqrt(MAX_BUFFER_PIXELS / Math.max(1, width * height)));
  return { width: Math.max(1, Math.round(width * s)), height: Math.max(1, Math.round(height * s)) };
}

/** Light levels by distance, precomputed for the floor rows. */
const LEVEL_SCALE = 64;
const levelByDist = Uint8Array.from({ length: 64 * LEVEL_SCALE }, (_, i) => lightLevel(i / LEVEL_SCALE));
/** @param {number} d */
const levelOf = (d) => levelByDist[Math.min(levelByDist.length - 1, (d * LEVEL_SCALE) | 0)];

/** One reusable buffer; `draw` renders a camera's view into it, `blit` puts it on a canvas. */
export class WorldBuffer {
  constructor() {
    this.width = 0;
    this.height = 0;
    /** Packed RGBA (0xAABBGGRR), row by row. */
    this.pixels = new Uint32Array(0);
    /** @type {{image: ImageData, surface: ReturnType<typeof makeSurface>}|null} made by the first blit at this size */
    this.output = null;
    this.hits = new ColumnHits(1);
    /** Per column, the first buffer row below its wall: floor above it is hidden. */
    this.wallBottom = new Int32Array(1);
  }

  /** @param {number} width @param {number} height */
  resize(width, height) {
    if (width === this.width && height === this.height) return;
    this.width = width;
    this.height = height;
    this.pixels = new Uint32Array(width * height);
    this.output = null;
    this.hits = new ColumnHits(width);
    this.wallBottom = new Int32Array(width);
  }

  /**
   * Renders the view; returns the per-column hits (the depth buffer).
   * @param {import('./grid.js').TileGrid} grid
   * @param {import('./raycast.js').Camera} cam
   * @param {number} horizon the horizon's row in buffer pixels
   */
  draw(grid, cam, horizon) {
    castColumns(grid, cam, this.hits);
    const focal = focalLength(cam, this.width);
    for (let x = 0; x < this.width; x++) {
      this.wallBottom[x] = Math.floor(horizon + (EYE_HEIGHT * focal) / Math.max(this.hits.depth[x], 1e-3)) - 2;
    }
    this.drawFloorAndCeiling(grid, cam, horizon);
    this.drawWalls(cam, horizon);
    return this.hits;
  }

  /**
   * Floor casting row by row (rows below the horizon), with the ceiling
   * row mirrored above it: at eye height 0.5 both are the same distance.
   * Pixels a wall will cover (with a two-row margin) are skipped.
   * @param {import('./grid.js').TileGrid} grid
   * @param {import('./raycast.js').Camera} cam
   * @param {number} horizon
   */
  drawFloorAndCeiling(grid, cam, horizon) {
    const { width: w, height: h, pixels, wallBottom } = this;
    const tex = textures();
    const focal = focalLength(cam, w);
    const r0x = cam.dirX - cam.planeX; const r0y = cam.dirY - cam.planeY;
    const r1x = cam.dirX + cam.planeX; const r1y = cam.dirY + cam.planeY;
    const cells = grid.cells; const gw = grid.width; const gh = grid.height;
    const exitTile = TILE.EXIT;
    const hz = Math.floor(horizon);
    for (let y = hz; y < h; y++) {
      const p = y - horizon + 0.5;
      const ceilingRow = 2 * hz - y - 1;
      if (p <= 0) continue;
      const dist = (EYE_HEIGHT * focal) / p;
      const level = levelOf(dist);
      const floorTex = tex.floor[level];
      const exitTex = tex.exit[level];
      const ceilTex = tex.ceiling[level];
      const stepX = (dist * (r1x - r0x)) / w;
      const stepY = (dist * (r1y - r0y)) / w;
      const fx0 = cam.x + dist * r0x + stepX * 0.5;
      const fy0 = cam.y + dist * r0y + stepY * 0.5;
      const row = y * w;
      const crow = ceilingRow >= 0 ? ceilingRow * w : -1;
      for (let x = 0; x < w; x++) {
        if (y < wallBottom[x]) continue;
        const fx = fx0 + stepX * x;
        const fy = fy0 + stepY * x;
        // Truncation instead of Math.floor: it differs only left of or
        // above the grid, where the floor is always behind a wall.
        const cx = fx | 0;
        const cy = fy | 0;
        const t = (((fy * TEX_SIZE) | 0) & TEX_MASK) * TEX_SIZE + (((fx * TEX_SIZE) | 0) & TEX_MASK);
        const tile = cx < gw && cy < gh ? cells[cy * gw + cx] : 0;
        pixels[row + x] = tile === exitTile ? exitTex[t] : floorTex[t];
        if (crow >= 0) pixels[crow + x] = ceilTex[t];
      }
    }
    // Rows above the mirrored ceiling (a horizon below the middle): far ceiling.
    const far = tex.ceiling[0][0];
    const firstCeiling = 2 * hz - h;
    if (firstCeiling > 0) pixels.fill(far, 0, firstCeiling * w);
  }

  /**
   * @param {import('./raycast.js').Camera} cam
   * @param {number} horizon
   */
  drawWalls(cam, horizon) {
    const { width: w, height: h, pixels, hits } = this;
    const walls = textures().walls;
    const focal = focalLength(cam, w);
    for (let x = 0; x < w; x++) {
      const variants = walls.get(hits.tile[x]);
      if (!variants) continue;
      const shades = variants[hits.variant[x] % variants.length];
      const d = Math.max(hits.depth[x], 1e-3);
      const lineH = focal / d;
      const top = horizon - (1 - EYE_HEIGHT) * lineH;
      const y0 = Math.max(0, Math.ceil(top - 0.5));
      const y1 = Math.min(h, Math.ceil(top + lineH - 0.5));
      const tex = shades[hits.side[x]][Math.min(LIGHT_LEVELS - 1, levelOf(d))];
      const tx = Math.min(TEX_MASK, (hits.u[x] * TEX_SIZE) | 0);
      const step = TEX_SIZE / lineH;
      let ty = (y0 + 0.5 - top) * step;
      for (let y = y0; y < y1; y++) {
        pixels[y * w + x] = tex[Math.min(TEX_MASK, ty | 0) * TEX_SIZE + tx];
        ty += step;
      }
    }
  }

  /**
   * Scales the buffer onto [0, width) x [0, height) of `ctx`.
   * @param {CanvasRenderingContext2D} ctx
   * @param {number} width
   * @param {number} height
   */
  blit(ctx, width, height) {
    if (!this.output) {
      // The ImageData shares the pixel array: no copy per frame.
      const image = new ImageData(new Uint8ClampedArray(this.pixels.buffer), this.width, this.height);
      this.output = { image, surface: makeSurface(this.width, this.height) };
    }
    const { image, surface } = this.output;
    surface.ctx.putImageData(image, 0, 0);
    ctx.drawImage(surface.canvas, 0, 0, this.width, this.height, 0, 0, width, height);
  }
}
