// @ts-check
// Billboard sprites: gathered from the view state, projected, sorted far to
// near and drawn in vertical runs of the columns where no wall is nearer
// (the raycaster's depth buffer).

import { projectSprite } from './projection.js';
import { spriteArt, spriteImage } from './sprite-art.js';
import { lightAt } from './textures.js';

/**
 * One thing to draw in the world.
 * @typedef {Object} Billboard
 * @property {string} art key for spriteArt
 * @property {number} x
 * @property {number} y
 * @property {string} [label] text above it (a player's name)
 * @property {number} [health] 0..1, shown as a bar when below 1
 * @property {boolean} [glow] not darkened by distance (lights)
 * @property {number} [lift] tiles above the floor (pickups hover)
 */

/**
 * What the local player can see in the world: everything but themself.
 * Pickups hover and bob, each in its own phase, so they catch the eye.
 * @param {import('./interpolate.js').ViewState} view
 * @param {string|undefined} me
 * @param {number} time in ticks (fractional), for the bobbing
 * @returns {Billboard[]}
 */
export function billboardsOf(view, me, time) {
  /** @type {Billboard[]} */
  const out = view.exit ? [{ art: 'exit-beacon', x: view.exit.x + 0.5, y: view.exit.y + 0.5, glow: true }] : [];
  for (const p of view.pickups ?? []) {
    const lift = 0.06 + 0.04 * Math.sin(time * 0.15 + (p.x + p.y) * 2.1);
    // Same depth: the sort is stable, so the shadow is drawn first.
    out.push({ art: 'shadow', x: p.x, y: p.y }, { art: `pickup:${p.kind}`, x: p.x, y: p.y, lift });
  }
  for (const m of view.mines ?? []) out.push({ art: 'mine', x: m.x, y: m.y });
  for (const e of view.enemies ?? []) {
    if (!e.alive) {
      out.push({ art: `corpse:${e.kind}`, x: e.x, y: e.y });
      continue;
    }
    const health = e.maxHp > 0 ? e.hp / e.maxHp : 1;
    out.push({ art: `enemy:${e.kind}${e.aggroed ? ':aggro' : ''}`, x: e.x, y: e.y, health, lift: stepBob(e.x, e.y) });
  }
  for (const p of view.players ?? []) {
    if (p.id === me) continue;
    const lift = p.alive ? stepBob(p.x, p.y) : 0;
    out.push({ art: p.alive ? 'player' : 'player:down', x: p.x, y: p.y, label: p.name || p.id, lift });
  }
  return out;
}

/**
 * A walker's bounce, from where it stands rather than from time: it bobs
 * while it moves (about a step per 0.4 tiles) and stands still when it does.
 * @param {number} x
 * @param {number} y
 */
export function stepBob(x, y) {
  return 0.025 * Math.abs(Math.sin((x + y * 0.618) * 7.85));
}

/**
 * A billboard on screen.
 * @typedef {Object} ProjectedSprite
 * @property {Billboard} item
 * @property {import('./sprite-art.js').SpriteArt} art
 * @property {number} depth
 * @property {number} screenX
 * @property {number} left
 * @property {number} right
 * @property {number} top
 * @property {number} bottom
 */

/**
 * The billboards in front of the camera, far to near.
 * @param {Billboard[]} items
 * @param {import('./raycast.js').Camera} cam
 * @param {number} width
 * @param {number} horizon
 * @returns {ProjectedSprite[]}
 */
export function projectBillboards(items, cam, width, horizon) {
  /** @type {ProjectedSprite[]} */
  const out = [];
  for (const item of items) {
    const a = spriteArt(item.art);
    const p = projectSprite(cam, item.x, item.y, a.size, a.height, width, horizon, a.lift + (item.lift ?? 0));
    if (p) out.push({ item, art: a, ...p });
  }
  return out.sort((a, b) => b.depth - a.depth);
}

/**
 * Column runs [first, last] (inclusive, in ray columns) of a sprite's screen
 * span where the wall is farther than the sprite.
 * @param {Float32Array} depth per-column wall distance
 * @param {number} stripWidth pixels per column
 * @param {number} left
 * @param {number} right
 * @param {number} spriteDepth
 * @returns {[number, number][]}
 */
export function visibleRuns(depth, stripWidth, left, right, spriteDepth) {
  /** @type {[number, number][]} */
  const runs = [];
  const first = Math.max(0, Math.floor(left / stripWidth));
  const last = Math.min(depth.length - 1, Math.ceil(right / stripWidth) - 1);
  let start = -1;
  for (let c = first; c <= last; c++) {
    if (depth[c] > spriteDepth) {
      if (start < 0) start = c;
    } else if (start >= 0) {
      runs.push([start, c - 1]);
      start = -1;
    }
  }
  if (start >= 0) runs.push([start, last]);
  return runs;
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {ProjectedSprite[]} sprites far to near
 * @param {import('./raycast.js').ColumnHits} hits
 * @param {number} width
 * @param {number} unit HUD text unit in pixels (labels scale from it)
 */
export function drawBillboards(ctx, sprites, hits, width, unit) {
  const stripWidth = width / hits.count;
  for (const s of sprites) {
    const spanW = s.right - s.left;
    const h = s.bottom - s.top;
    const runs = visibleRuns(hits.depth, stripWidth, s.left, s.right, s.depth);
    if (runs.length === 0) continue;
    const img = spriteImage(s.art, h, s.item.glow ? 1 : lightAt(s.depth));
    for (const [a, b] of runs) {
      const x0 = Math.max(s.left, a * stripWidth);
      const x1 = Math.min(s.right, (b + 1) * stripWidth);
      const sx0 = ((x0 - s.left) / spanW) * img.width;
      const sx1 = ((x1 - s.left) / spanW) * img.width;
      if (sx1 - sx0 <= 0) continue;
      ctx.drawImage(img, sx0, 0, sx1 - sx0, img.height, x0, s.top, x1 - x0, h);
    }
    const centre = Math.min(hits.count - 1, Math.max(0, Math.floor(s.screenX / stripWidth)));
    if (hits.depth[centre] <= s.depth) continue;
    if (s.item.health !== undefined && s.item.health < 1) healthBar(ctx, s, unit);
    if (s.item.label) label(ctx, s, unit, width);
  }
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {ProjectedSprite} s
 * @param {number} unit
 */
function healthBar(ctx, s, unit) {
  const w = Math.min(s.right - s.left, unit * 4) * 0.7;
  const h = Math.max(3, unit * 0.22);
  const x = s.screenX - w / 2;
  const y = s.top - h * 2;
  ctx.fillStyle = 'rgba(0,0,0,0.6)';
  ctx.fillRect(x - 1, y - 1, w + 2, h + 2);
  ctx.fillStyle = '#e0303a';
  ctx.fillRect(x, y, w * Math.max(0, s.item.health ?? 1), h);
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {ProjectedSprite} s
 * @param {number} unit
 * @param {number} width
 */
function label(ctx, s, unit, width) {
  const size = Math.round(Math.max(unit * 0.75, Math.min(unit * 1.1, (s.bottom - s.top) * 0.16)));
  ctx.font = `600 ${size}px system-ui, sans-serif`;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'bottom';
  const text = /** @type {string} */ (s.item.label);
  const y = s.top - size * 0.3;
  // Keep the whole name on screen when its owner is at the edge.
  const half = ctx.measureText(text).width / 2 + size * 0.3;
  const x = Math.min(width - half, Math.max(half, s.screenX));
  ctx.lineWidth = Math.max(2, size * 0.2);
  ctx.strokeStyle = 'rgba(0,0,0,0.75)';
  ctx.strokeText(text, x, y);
  ctx.fillStyle = '#e8fff6';
  ctx.fillText(text, x, y);
}
