// @ts-check
// Procedural textures (64x64, generated texel by texel once) for walls,
// doors, floor, the exit pad and the ceiling, each pre-shaded into
// LIGHT_LEVELS tables of packed RGBA pixels so that drawing a pixel at any
// distance is one table read.

import { TILE } from './grid.js';
import { PALETTE } from './palette.js';
import { mulberry32 } from './surface.js';

/** Texture size in texels (square, a power of two). */
export const TEX_SIZE = 64;
/** How many distance shades each texture is stored in. */
export const LIGHT_LEVELS = 32;
/** Light at the far end of the scale (0 = fog colour, 1 = full). */
const MIN_LIGHT = 0.08;
/** y-side wall faces are this much darker than x-sides, for a sense of shape. */
const Y_SIDE_LIGHT = 0.72;

/**
 * Light in [MIN_LIGHT, 1] for a surface `dist` tiles away.
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

/** @typedef {(x: number, y: number) => number[]} Texel an RGB colour per texel */

/** @param {number} seed */
function noiseField(seed) {
  const rnd = mulberry32(seed);
  return Array.from({ length: TEX_SIZE * TEX_SIZE }, () => rnd());
}

/**
 * Grey-violet stone bricks with dark mortar and a lit top edge; variants
 * with other seeds add moss creeping up from the floor or a crack.
 * @param {number} seed
 * @param {'plain'|'moss'|'crack'} wear
 */
function stone(seed, wear) {
  const rnd = mulberry32(seed);
  const tint = Array.from({ length: 64 }, () => 0.8 + rnd() * 0.35);
  const noise = noiseField(seed + 1);
  const mossLine = Array.from({ length: TEX_SIZE }, (_, x) => 40 + 10 * Math.sin(x * 0.3 + seed) + rnd() * 8);
  /** @type {Texel} */
  return (x, y) => {
    const row = Math.floor(y / 16);
    const bx = (x + (row % 2) * 16) % TEX_SIZE;
    const brick = row * 2 + Math.floor(bx / 32);
    const n = noise[y * TEX_SIZE + x];
    const mortar = y % 16 < 2 || bx % 32 < 2;
    if (wear === 'moss' && y > mossLine[x] && (mortar || n > 0.45)) return [44 + n * 30, 78 + n * 40, 40 + n * 16];
    if (wear === 'crack' && Math.abs(x - 30 - 8 * Math.sin(y * 0.21)) < 1.2 && y > 6 && y < 54) return [28, 26, 32];
    if (mortar) return [38 + n * 10, 36 + n * 10, 44 + n * 10];
    const k = tint[brick] * (0.86 + n * 0.24) * (y % 16 === 2 || bx % 32 === 2 ? 1.18 : 1);
    return [104 * k, 98 * k, 118 * k];
  };
}

/** An orange-brown plank door in an iron frame with a handle. */
function door() {
  const noise = noiseField(11);
  /** @type {Texel} */
  return (x, y) => {
    const n = noise[y * TEX_SIZE + x];
    const frame = x < 4 || x > 59 || y < 4 || y > 59;
    const band = (y > 14 && y < 20) || (y > 44 && y < 50);
    if (frame || band) {
      const k = band && x % 12 === 8 && (y === 17 || y === 47) ? 1.6 : 0.8 + n * 0.2;
      return [70 * k, 66 * k, 72 * k];
    }
    if (x >= 50 && x <= 54 && y >= 28 && y <= 36) return [230, 190, 90];
    const plank = Math.floor((x - 4) / 11);
    const seam = (x - 4) % 11 === 0;
    const grain = 0.85 + 0.15 * Math.sin((y + plank * 13) * 0.6 + n * 2);
    const k = (seam ? 0.55 : grain) * (0.92 + (plank % 2) * 0.08);
    return [184 * k, 111 * k, 44 * k];
  };
}

/** Worn flagstones, four to a tile, warm grey-brown. */
function flagstones() {
  const rnd = mulberry32(21);
  const tint = Array.from({ length: 4 }, () => 0.85 + rnd() * 0.25);
  const noise = noiseField(22);
  /** @type {Texel} */
  return (x, y) => {
    const n = noise[y * TEX_SIZE + x];
    if (x % 32 < 1 || y % 32 < 1) return [30, 26, 24];
    const k = tint[Math.floor(y / 32) * 2 + Math.floor(x / 32)] * (0.85 + n * 0.22);
    return [92 * k, 80 * k, 68 * k];
  };
}

/** The exit pad: a green glowing square with a bright ring. */
function exitPad() {
  const noise = noiseField(31);
  /** @type {Texel} */
  return (x, y) => {
    const n = noise[y * TEX_SIZE + x];
    const edge = Math.min(x, y, 63 - x, 63 - y);
    if (edge < 3) return [63, 191, 111];
    if (edge >= 14 && edge < 19) return [150, 255, 190];
    const k = 0.75 + n * 0.2;
    return [28 * k, 110 * k, 62 * k];
  };
}

/** Dark slate ceiling panels. */
function ceiling() {
  const noise = noiseField(41);
  /** @type {Texel} */
  return (x, y) => {
    const n = noise[y * TEX_SIZE + x];
    if (x % 32 < 1 || y % 32 < 1) return [34, 32, 42];
    const k = 0.9 + n * 0.12;
    return [50 * k, 47 * k, 60 * k];
  };
}

/**
 * @param {Texel} texel
 * @param {number} sideLight extra light factor for the whole texture
 * @param {number} [glow] light the texture keeps however far (0..1)
 * @returns {Uint32Array[]} packed RGBA (little-endian: 0xAABBGGRR) per light level
 */
function bake(texel, sideLight, glow = 0) {
  const base = Array.from({ length: TEX_SIZE * TEX_SIZE }, (_, i) => texel(i % TEX_SIZE, Math.floor(i / TEX_SIZE)));
  const [fr, fg, fb] = PALETTE.fog;
  return Array.from({ length: LIGHT_LEVELS }, (_, k) => {
    const light = Math.max(glow, (MIN_LIGHT + ((1 - MIN_LIGHT) * k) / (LIGHT_LEVELS - 1)) * sideLight);
    const out = new Uint32Array(TEX_SIZE * TEX_SIZE);
    base.forEach(([r, g, b], i) => {
      const R = Math.round(fr + (r - fr) * light);
      const G = Math.round(fg + (g - fg) * light);
      const B = Math.round(fb + (b - fb) * light);
      out[i] = (0xff000000 | (B << 16) | (G << 8) | R) >>> 0;
    });
    return out;
  });
}

/**
 * Everything the world buffer draws with: `walls.get(tile)[variant][side][level]`
 * (pick the variant with a tile hash modulo the count), `floor[level]`,
 * `exit[level]`, `ceiling[level]`.
 * @typedef {Object} TextureSet
 * @property {Map<number, Uint32Array[][][]>} walls
 * @property {Uint32Array[]} floor
 * @property {Uint32Array[]} exit
 * @property {Uint32Array[]} ceiling
 */

/** @type {TextureSet | null} */
let cache = null;

/**
 * The texture set, made on first use (a few milliseconds). A secret wall
 * uses the wall's texture: it must not give itself away.
 * @returns {TextureSet}
 */
export function textures() {
  if (!cache) {
    /** @param {Texel} t */
    const sides = (t) => [bake(t, 1), bake(t, Y_SIDE_LIGHT)];
    // Plain stone most often; moss and cracks now and then.
    const plain = sides(stone(7, 'plain'));
    const stones = [plain, plain, sides(stone(7, 'moss')), plain, sides(stone(13, 'plain')), sides(stone(13, 'crack'))];
    cache = {
      walls: new Map([[TILE.WALL, stones], [TILE.SECRET, stones], [TILE.DOOR, [sides(door())]]]),
      floor: bake(flagstones(), 1),
      exit: bake(exitPad(), 1, 0.45),
      ceiling: bake(ceiling(), 0.8),
    };
  }
  return cache;
}
