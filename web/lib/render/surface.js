// @ts-check
// Offscreen canvases for art drawn once (textures, sprites, the weapon).

/**
 * A 2D canvas that is not on the page: an OffscreenCanvas where the browser
 * has one, else a detached <canvas>.
 * @param {number} width
 * @param {number} height
 * @returns {{canvas: OffscreenCanvas | HTMLCanvasElement, ctx: CanvasRenderingContext2D}}
 */
export function makeSurface(width, height) {
  const canvas = typeof OffscreenCanvas !== 'undefined'
    ? new OffscreenCanvas(width, height)
    : Object.assign(document.createElement('canvas'), { width, height });
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
  return { canvas, ctx };
}

/**
 * A small deterministic PRNG (mulberry32) so procedural art looks the same
 * on every load and in every screenshot.
 * @param {number} seed
 */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
