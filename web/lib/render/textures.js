// @ts-check
// Wall and door textures, generated pixel by pixel once (64x64 each) and
// pre-shaded into LIGHT_LEVELS copies per face orientation, so a wall
// column costs one drawImage whatever its distance.

import { TILE } from './grid.js';
import { PALETTE } from './palette.js';
import { makeSurface, mulberry32 } from './surface.js';

/** Texture size in texels (square). */
export const TEX_SIZE = 64;
/** How many distance shades each texture is stored in. */
export const LIGHT_LEVELS = 24;
/** Light at the far end of the scale (0 = fog colour, 1 = full). */
const MIN_LIGHT = 0.1;
/** y-side faces are this much darker than x-sides, for a sense of shape. */
const Y_SIDE_LIGHT = 0.72;

/**
 * Light in [MIN_LIGHT, 1] for a wall `dist` tiles away.
 * @param {number} dist
 */
export function lightAt(dist) {
  return Math.min(1, Math.max(MIN_LIGHT, 1.12 - dist * 0.085));
}

/**
 * The stored shade for a distance: 0 is darkest, LIGHT_LEVELS - 1 full light.
 * @param {number} dist
 */
export function lightLevel(dist) {
  return Math.round(((lightAt(dist) - MIN_LIGHT) / (1 - MIN_LIGHT)) * (LIGHT_LEVELS - 1));
}

/** @typedef {(x: number, y: number) => [number, number, number]} Texel */

/** Grey-violet stone bricks with dark mortar. */
function stoneTexels() {
  const rnd = mulberry32(7);
  const tint = Array.from({ length: 64 }, () => 0.8 + rnd() * 0.35);
  const noise = Array.from({ length: TEX_SIZE * TEX_SIZE }, () => rnd());
  /** @type {Texel} */
  return (x, y) => {
    const row = Math.floor(y / 16);
    const bx = (x + (row % 2) * 16) % TEX_SIZE;
    const brick = row * 2 + Math.floor(bx / 32);
    const mortar = y % 16 < 2 || bx % 32 < 2;
    const n = noise[y * TEX_SIZE + x];
    if (mortar) return [38 + n * 10, 36 + n * 10, 44 + n * 10];
    const k = tint[brick] * (0.86 + n * 0.24) * (y % 16 === 2 || bx % 32 === 2 ? 1.18 : 1);
    return [104 * k, 98 * k, 118 * k];
  };
}

/** An orange-brown plank door in an iron frame with a handle. */
function doorTexels() {
  const rnd = mulberry32(11);
  const noise = Array.from({ length: TEX_SIZE * TEX_SIZE }, () => rnd());
  /** @type {Texel} */
  return (x, y) => {
    const n = noise[y * TEX_SIZE + x];
    const frame = x < 4 || x > 59 || y < 4 || y > 59;
    const band = (y > 14 && y < 20) || (y > 44 && y < 50);
    const rivet = band && (x % 12 === 8) && (y === 17 || y === 47);
    if (frame || band) {
      const k = rivet ? 1.6 : 0.8 + n * 0.2;
      return [70 * k, 66 * k, 72 * k];
    }
    const handle = x >= 50 && x <= 54 && y >= 28 && y <= 36;
    if (handle) return [230, 190, 90];
    const plank = Math.floor((x - 4) / 11);
    const seam = (x - 4) % 11 === 0;
    const grain = 0.85 + 0.15 * Math.sin((y + plank * 13) * 0.6 + n * 2);
    const k = (seam ? 0.55 : grain) * (0.92 + (plank % 2) * 0.08);
    return [184 * k, 111 * k, 44 * k];
  };
}

/**
 * @param {Texel} texel
 * @param {number} light
 */
function bake(texel, light) {
  const { canvas, ctx } = makeSurface(TEX_SIZE, TEX_SIZE);
  const img = ctx.createImageData(TEX_SIZE, TEX_SIZE);
  const [fr, fg, fb] = PALETTE.fog;
  for (let y = 0; y < TEX_SIZE; y++) {
    for (let x = 0; x < TEX_SIZE; x++) {
      const [r, g, b] = texel(x, y);
      const o = (y * TEX_SIZE + x) * 4;
      img.data[o] = fr + (r - fr) * light;
      img.data[o + 1] = fg + (g - fg) * light;
      img.data[o + 2] = fb + (b - fb) * light;
      img.data[o + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
  return canvas;
}

/**
 * One texture in every shade: `shades[side][level]`.
 * @typedef {(OffscreenCanvas|HTMLCanvasElement)[][]} ShadedTexture
 */

/** @param {Texel} texel @returns {ShadedTexture} */
function shaded(texel) {
  return [1, Y_SIDE_LIGHT].map((sideLight) => Array.from({ length: LIGHT_LEVELS }, (_, k) => {
    const light = MIN_LIGHT + ((1 - MIN_LIGHT) * k) / (LIGHT_LEVELS - 1);
    return bake(texel, light * sideLight);
  }));
}

/** @type {Map<number, ShadedTexture> | null} */
let cache = null;

/**
 * The shaded textures by tile code, made on first use. A secret wall uses
 * the wall's texture: it must not give itself away.
 */
export function wallTextures() {
  if (!cache) {
    const stone = shaded(stoneTexels());
    cache = new Map([[TILE.WALL, stone], [TILE.SECRET, stone], [TILE.DOOR, shaded(doorTexels())]]);
  }
  return cache;
}
