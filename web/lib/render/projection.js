// @ts-check
// Camera-space projection shared by the world buffer and the sprites. The
// focal length comes from the screen width and the camera plane, so pixels
// stay square at any aspect ratio (index.js cameraFor shortens the plane on
// portrait screens).

/** Points nearer than this (tiles, along the view direction) are not drawn. */
export const NEAR_PLANE = 0.05;
/** The engine's camera plane length (engine/src/rules.rs CAMERA_PLANE), for a player without one. */
export const CAMERA_PLANE = 0.66;
/** Eye height above the floor, in tiles (walls are one tile high). */
export const EYE_HEIGHT = 0.5;

/**
 * Pixels per tile at distance 1.
 * @param {import('./raycast.js').Camera} cam
 * @param {number} width screen width in pixels
 */
export function focalLength(cam, width) {
  const plane = Math.hypot(cam.planeX, cam.planeY) || CAMERA_PLANE;
  return width / (2 * plane);
}

/**
 * A world point in camera space: `depth` along the view direction and
 * `screenX` the pixel column it projects to (may be off screen).
 * @param {import('./raycast.js').Camera} cam
 * @param {number} x
 * @param {number} y
 * @param {number} width
 * @returns {{depth: number, side: number, screenX: number}}
 */
export function toCamera(cam, x, y, width) {
  const dx = x - cam.x;
  const dy = y - cam.y;
  const invDet = 1 / (cam.planeX * cam.dirY - cam.dirX * cam.planeY);
  const side = invDet * (cam.dirY * dx - cam.dirX * dy);
  const depth = invDet * (-cam.planeY * dx + cam.planeX * dy);
  return { depth, side, screenX: (width / 2) * (1 + side / depth) };
}

/**
 * A sprite standing on the floor at (x, y), `size` tiles wide and `height`
 * tiles tall, as a screen rectangle; null when it is behind the camera or
 * entirely off to a side.
 * @param {import('./raycast.js').Camera} cam
 * @param {number} x
 * @param {number} y
 * @param {number} size
 * @param {number} height
 * @param {number} width screen width
 * @param {number} horizon screen row of the horizon
 * @param {number} [lift] tiles between the floor and the sprite's bottom
 * @returns {{depth: number, screenX: number, left: number, right: number, top: number, bottom: number} | null}
 */
export function projectSprite(cam, x, y, size, height, width, horizon, lift = 0) {
  const p = toCamera(cam, x, y, width);
  if (!(p.depth > NEAR_PLANE)) return null;
  const f = focalLength(cam, width) / p.depth;
  const half = (size * f) / 2;
  const left = p.screenX - half;
  const right = p.screenX + half;
  if (right <= 0 || left >= width) return null;
  const bottom = horizon + (EYE_HEIGHT - lift) * f;
  return { depth: p.depth, screenX: p.screenX, left, right, top: bottom - height * f, bottom };
}
