// @ts-check
// The automap: the whole grid top-down, fitted into the space above the
// HUD bar, with the exit, pickups, mines, enemies and players on it. Tile
// colours are the top-down view's (play.js).

import { TILE, tileGridOf } from './grid.js';
import { castRay } from './raycast.js';
import { makeSurface } from './surface.js';
import { PALETTE } from './palette.js';

/**
 * Where the map goes: `scale` pixels per tile and the pixel of tile (0, 0)'s
 * top-left corner, centred between the reserved bands at the top (the
 * countdown banner) and the bottom (the HUD bar).
 * @param {number} gridW tiles
 * @param {number} gridH tiles
 * @param {number} width pixels
 * @param {number} height pixels
 * @param {{top: number, bottom: number, margin: number}} reserve pixels kept free
 */
export function automapLayout(gridW, gridH, width, height, reserve) {
  const availW = Math.max(1, width - 2 * reserve.margin);
  const availH = Math.max(1, height - reserve.top - reserve.bottom - 2 * reserve.margin);
  const scale = Math.max(1, Math.floor(Math.min(availW / gridW, availH / gridH)));
  return {
    scale,
    originX: Math.floor((width - gridW * scale) / 2),
    originY: Math.floor(reserve.top + reserve.margin + (availH - gridH * scale) / 2),
  };
}

const TILE_COLOUR = /** @type {Record<number, string>} */ ({
  [TILE.FLOOR]: PALETTE.mapFloor,
  [TILE.WALL]: PALETTE.mapWall,
  [TILE.SECRET]: PALETTE.mapWall,
  [TILE.DOOR]: PALETTE.mapDoor,
  [TILE.EXIT]: PALETTE.mapExit,
});

/** The tiles drawn at one scale, kept while the grid and scale stay the same. */
let layer = { /** @type {import('./grid.js').TileGrid|null} */ grid: null, scale: 0, image: /** @type {OffscreenCanvas|HTMLCanvasElement|null} */ (null) };

/**
 * The grid's tiles as an image, `scale` pixels per tile: one fillRect per
 * tile when the grid changes, one drawImage per frame otherwise (a large
 * map is thousands of tiles).
 * @param {import('./grid.js').TileGrid} grid
 * @param {number} scale
 */
function tileLayer(grid, scale) {
  if (layer.grid !== grid || layer.scale !== scale || !layer.image) {
    const { canvas, ctx } = makeSurface(grid.width * scale, grid.height * scale);
    for (let y = 0; y < grid.height; y++) {
      for (let x = 0; x < grid.width; x++) {
        ctx.fillStyle = TILE_COLOUR[grid.at(x, y)] ?? PALETTE.mapWall;
        ctx.fillRect(x * scale, y * scale, scale, scale);
      }
    }
    layer = { grid, scale, image: canvas };
  }
  return layer.image;
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {import('./interpolate.js').ViewState} view
 * @param {Object} o
 * @param {string|undefined} o.me
 * @param {boolean} [o.watching] `me` is watched, not played: labelled by name
 * @param {number} o.width
 * @param {number} o.height
 * @param {number} o.reserveTop
 * @param {number} o.reserveBottom
 * @param {number} o.unit
 * @returns {{scale: number, originX: number, originY: number}} where the map went
 */
export function drawAutomap(ctx, view, { me, watching = false, width, height, reserveTop, reserveBottom, unit }) {
  const grid = tileGridOf(view.grid);
  const layout = automapLayout(grid.width, grid.height, width, height, { top: reserveTop, bottom: reserveBottom, margin: unit * 0.5 });
  const { scale, originX, originY } = layout;
  ctx.fillStyle = PALETTE.mapBackground;
  ctx.fillRect(0, 0, width, height);
  ctx.drawImage(tileLayer(grid, scale), originX, originY);
  const sx = (/** @type {number} */ x) => originX + x * scale;
  const sy = (/** @type {number} */ y) => originY + y * scale;
  // The exit always shows, even if the grid row says floor.
  if (view.exit) {
    ctx.fillStyle = PALETTE.mapExit;
    ctx.fillRect(sx(view.exit.x), sy(view.exit.y), scale, scale);
  }
  const dot = (/** @type {number} */ x, /** @type {number} */ y, /** @type {number} */ r, /** @type {string} */ c) => {
    ctx.fillStyle = c;
    ctx.beginPath();
    ctx.arc(sx(x), sy(y), Math.max(2, r * scale), 0, Math.PI * 2);
    ctx.fill();
  };
  const mine = view.players?.find((p) => p.id === me);
  if (mine?.alive) viewCone(ctx, grid, mine, sx, sy);
  for (const p of view.pickups ?? []) dot(p.x, p.y, 0.16, /** @type {any} */ (PALETTE.pickup)[p.kind] ?? PALETTE.pickup.weapon);
  for (const m of view.mines ?? []) dot(m.x, m.y, 0.14, PALETTE.mine);
  for (const e of view.enemies ?? []) {
    const colour = /** @type {any} */ (PALETTE.enemy)[e.kind] ?? PALETTE.enemy.grunt;
    if (e.alive) {
      dot(e.x, e.y, 0.3, colour);
      if (e.aggroed) {
        ctx.strokeStyle = '#fff27a';
        ctx.lineWidth = Math.max(1, scale * 0.08);
        ctx.stroke();
      }
    } else {
      cross(ctx, sx(e.x), sy(e.y), Math.max(2, scale * 0.2), '#77737f');
    }
  }
  ctx.font = `600 ${Math.round(unit * 0.8)}px system-ui, sans-serif`;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'bottom';
  for (const p of view.players ?? []) {
    const isMe = p.id === me;
    const colour = !p.alive ? PALETTE.playerDown : isMe ? PALETTE.me : PALETTE.player;
    arrow(ctx, sx(p.x), sy(p.y), p.dirX, p.dirY, Math.max(5, scale * 0.45), colour);
    const name = isMe && !watching ? 'you' : (p.name || p.id);
    ctx.lineWidth = 3;
    ctx.strokeStyle = 'rgba(0,0,0,0.8)';
    ctx.strokeText(name, sx(p.x), sy(p.y) - Math.max(6, scale * 0.5));
    ctx.fillStyle = colour;
    ctx.fillText(name, sx(p.x), sy(p.y) - Math.max(6, scale * 0.5));
  }
  return layout;
}

/** Rays cast for the view cone on the automap. */
const CONE_RAYS = 24;

/**
 * What the local player sees: a translucent fan out to the walls.
 * @param {CanvasRenderingContext2D} ctx
 * @param {import('./grid.js').TileGrid} grid
 * @param {import('./interpolate.js').ViewPlayer} p
 * @param {(x: number) => number} sx
 * @param {(y: number) => number} sy
 */
function viewCone(ctx, grid, p, sx, sy) {
  ctx.beginPath();
  ctx.moveTo(sx(p.x), sy(p.y));
  for (let i = 0; i <= CONE_RAYS; i++) {
    const c = (2 * i) / CONE_RAYS - 1;
    const rx = p.dirX + p.planeX * c;
    const ry = p.dirY + p.planeY * c;
    const hit = castRay(grid, p.x, p.y, rx, ry);
    ctx.lineTo(sx(p.x + rx * hit.dist), sy(p.y + ry * hit.dist));
  }
  ctx.closePath();
  ctx.fillStyle = 'rgba(255, 255, 255, 0.09)';
  ctx.fill();
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} x @param {number} y @param {number} r @param {string} colour
 */
function cross(ctx, x, y, r, colour) {
  ctx.strokeStyle = colour;
  ctx.lineWidth = Math.max(1.5, r * 0.4);
  ctx.beginPath();
  ctx.moveTo(x - r, y - r); ctx.lineTo(x + r, y + r);
  ctx.moveTo(x + r, y - r); ctx.lineTo(x - r, y + r);
  ctx.stroke();
}

/**
 * A player: a triangle pointing along its direction.
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} x @param {number} y @param {number} dx @param {number} dy @param {number} r @param {string} colour
 */
function arrow(ctx, x, y, dx, dy, r, colour) {
  const len = Math.hypot(dx, dy) || 1;
  const ux = dx / len; const uy = dy / len;
  ctx.fillStyle = colour;
  ctx.strokeStyle = 'rgba(0,0,0,0.8)';
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(x + ux * r * 1.3, y + uy * r * 1.3);
  ctx.lineTo(x - ux * r * 0.8 - uy * r * 0.8, y - uy * r * 0.8 + ux * r * 0.8);
  ctx.lineTo(x - ux * r * 0.4, y - uy * r * 0.4);
  ctx.lineTo(x - ux * r * 0.8 + uy * r * 0.8, y - uy * r * 0.8 - ux * r * 0.8);
  ctx.closePath();
  ctx.fill();
  ctx.stroke();
}
