// @ts-check
// The heads-up display drawn over both views: health, the current weapon's
// ammo, keys, kills and score along the bottom; the exit countdown at the
// top; the round-trip time in a corner. Sizes derive from one text unit
// that never drops below 14 CSS pixels, so a 360-pixel phone stays legible.

import { TICK_RATE_HZ } from '../facts.js';
import { PALETTE } from './palette.js';

/** Which ammo pool each weapon slot draws from (engine/src/weapon.rs); the knife needs none. */
export const WEAPON_POOL = Object.freeze([null, 'bullets', 'bullets', 'smg', 'rockets', 'gas']);
/** Slot names when the view state carries none. */
export const WEAPON_NAMES = Object.freeze(['knife', 'pistol', 'shotgun', 'smg', 'rocket launcher', 'flamethrower']);

/**
 * The countdown banner: seconds left rounded up to a tenth, so it never
 * reads 0.0 while the level still runs ("Exit in 4.3 s").
 * @param {number} ticks ticks left
 */
export function countdownText(ticks) {
  const tenths = Math.max(0, Math.ceil((ticks * 10) / TICK_RATE_HZ - 1e-9));
  return `Exit in ${(tenths / 10).toFixed(1)} s`;
}

/**
 * The current weapon's pool and count; null for the knife.
 * @param {Pick<import('./interpolate.js').ViewPlayer, 'weapon'|'ammo'>} p
 * @returns {{pool: string, count: number} | null}
 */
export function currentAmmo(p) {
  const pool = WEAPON_POOL[p.weapon];
  if (!pool) return null;
  return { pool, count: /** @type {any} */ (p.ammo ?? {})[pool] ?? 0 };
}

/** @param {number|null|undefined} rttMs */
export function rttText(rttMs) {
  return rttMs == null || !Number.isFinite(rttMs) ? 'RTT —' : `RTT ${Math.round(rttMs)} ms`;
}

/**
 * The HUD's text unit in device pixels: 1/26 of the shorter side in CSS
 * pixels, between 14 and 22 CSS pixels.
 * @param {number} width device pixels
 * @param {number} height device pixels
 * @param {number} pixelRatio device pixels per CSS pixel
 */
export function hudUnit(width, height, pixelRatio) {
  const css = Math.min(width, height) / pixelRatio;
  return Math.min(22, Math.max(14, css / 26)) * pixelRatio;
}

/** The bottom bar's four cells sit in one row when there is room for 28 units, else two by two. */
const cellsPerRow = (/** @type {number} */ unit, /** @type {number} */ width) => (width / unit >= 28 ? 4 : 2);
/** Shares of the width per cell in one row: the weapon's name and ammo need the most room. */
const ROW_SHARES = [0.22, 0.34, 0.18, 0.26];

/** The bottom bar's height for a unit. */
export const barHeight = (/** @type {number} */ unit, /** @type {number} */ width) => unit * (cellsPerRow(unit, width) === 4 ? 3 : 5.6);

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {Object} o
 * @param {import('./interpolate.js').ViewPlayer|undefined} o.me
 * @param {number|null} o.countdownTicks
 * @param {number|null|undefined} o.rttMs
 * @param {number} o.width
 * @param {number} o.height
 * @param {number} o.unit
 */
export function drawHud(ctx, { me, countdownTicks, rttMs, width, height, unit }) {
  ctx.textBaseline = 'alphabetic';
  const barH = barHeight(unit, width);
  ctx.fillStyle = PALETTE.hudPanel;
  ctx.fillRect(0, height - barH, width, barH);
  ctx.fillStyle = 'rgba(255, 179, 71, 0.5)';
  ctx.fillRect(0, height - barH, width, Math.max(1, unit * 0.08));
  if (me) stats(ctx, me, width, height, unit, barH);
  else {
    ctx.font = `600 ${unit * 1.1}px system-ui, sans-serif`;
    ctx.textAlign = 'center';
    ctx.fillStyle = PALETTE.hudMuted;
    ctx.fillText('Spectating', width / 2, height - barH / 2 + unit * 0.4);
  }
  // RTT, top right.
  ctx.font = `${unit * 0.8}px system-ui, sans-serif`;
  ctx.textAlign = 'right';
  const rtt = rttText(rttMs);
  const pad = unit * 0.5;
  const tw = ctx.measureText(rtt).width;
  ctx.fillStyle = PALETTE.hudPanel;
  ctx.fillRect(width - tw - pad * 2, pad * 0.6, tw + pad * 1.4, unit * 1.3);
  ctx.fillStyle = PALETTE.hudMuted;
  ctx.fillText(rtt, width - pad * 1.3, pad * 0.6 + unit * 0.95);
  if (countdownTicks != null) banner(ctx, countdownText(countdownTicks), width, unit);
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {string} text
 * @param {number} width
 * @param {number} unit
 */
function banner(ctx, text, width, unit) {
  ctx.font = `700 ${unit * 1.35}px system-ui, sans-serif`;
  ctx.textAlign = 'center';
  const tw = ctx.measureText(text).width;
  const y = unit * 2.6;
  ctx.fillStyle = 'rgba(20, 12, 0, 0.75)';
  ctx.beginPath();
  ctx.roundRect(width / 2 - tw / 2 - unit, y - unit * 1.35, tw + unit * 2, unit * 1.9, unit * 0.4);
  ctx.fill();
  ctx.strokeStyle = PALETTE.accent;
  ctx.lineWidth = Math.max(1.5, unit * 0.1);
  ctx.stroke();
  ctx.fillStyle = PALETTE.accent;
  ctx.fillText(text, width / 2, y);
}

/**
 * The four cells of the bottom bar: in a row when wide, two by two on a phone.
 * @param {CanvasRenderingContext2D} ctx
 * @param {import('./interpolate.js').ViewPlayer} me
 * @param {number} width
 * @param {number} height
 * @param {number} unit
 * @param {number} barH
 */
function stats(ctx, me, width, height, unit, barH) {
  const ammo = currentAmmo(me);
  const weaponName = me.weaponName || WEAPON_NAMES[me.weapon] || 'weapon';
  const health = Math.max(0, Math.ceil(me.health));
  const cells = [
    { label: 'HEALTH', value: me.alive ? String(health) : 'DOWN', colour: !me.alive || health <= 25 ? PALETTE.danger : PALETTE.hudText, bar: me.alive ? Math.min(1, health / 100) : 0 },
    { label: weaponName.toUpperCase(), value: ammo ? `${ammo.count} ${ammo.pool}` : '∞', colour: ammo && ammo.count === 0 ? PALETTE.danger : PALETTE.hudText },
    { label: 'KEYS', value: '', keys: me.keys, colour: PALETTE.key },
    { label: 'KILLS · SCORE', value: `${me.kills} · ${me.score}`, colour: PALETTE.hudText },
  ];
  const perRow = cellsPerRow(unit, width);
  const shares = perRow === 4 ? ROW_SHARES : [0.5, 0.5, 0.5, 0.5];
  const cellH = barH / (4 / perRow);
  let left = 0;
  cells.forEach((c, i) => {
    if (i % perRow === 0) left = 0;
    const cellW = width * shares[i];
    const x = left + unit * 0.8;
    left += cellW;
    const top = height - barH + Math.floor(i / perRow) * cellH;
    ctx.textAlign = 'left';
    ctx.font = `600 ${Math.round(unit * 0.8)}px system-ui, sans-serif`;
    ctx.fillStyle = PALETTE.hudMuted;
    ctx.fillText(c.label, x, top + cellH * 0.4);
    ctx.font = `700 ${Math.round(unit * 1.15)}px system-ui, sans-serif`;
    ctx.fillStyle = c.colour;
    const valueY = top + cellH * 0.4 + unit * 1.25;
    if (c.keys !== undefined) keyIcons(ctx, c.keys, x, valueY - unit * 0.85, unit, Math.max(1, Math.floor((cellW - unit * 2.8) / (unit * 1.1))));
    else ctx.fillText(c.value, x, valueY);
    if (c.bar !== undefined) {
      const bw = Math.min(cellW - unit * 1.6, unit * 6);
      const tw = ctx.measureText(c.value).width + unit * 0.5;
      const bx = x + tw;
      const room = Math.max(0, bw - tw);
      ctx.fillStyle = 'rgba(255,255,255,0.12)';
      ctx.fillRect(bx, valueY - unit * 0.55, room, unit * 0.4);
      ctx.fillStyle = c.bar > 0.25 ? PALETTE.good : PALETTE.danger;
      ctx.fillRect(bx, valueY - unit * 0.55, room * c.bar, unit * 0.4);
    }
  });
}

/**
 * Little gold keys, as many as fit (at most five), then a count.
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} n
 * @param {number} x
 * @param {number} y top of the icons
 * @param {number} unit
 * @param {number} room how many icons fit
 */
function keyIcons(ctx, n, x, y, unit, room) {
  if (n <= 0) {
    ctx.fillStyle = PALETTE.hudMuted;
    ctx.fillText('none', x, y + unit * 0.85);
    return;
  }
  const shown = Math.min(n, 5, room);
  ctx.strokeStyle = PALETTE.key;
  ctx.fillStyle = PALETTE.key;
  ctx.lineWidth = Math.max(1.5, unit * 0.12);
  for (let i = 0; i < shown; i++) {
    const kx = x + i * unit * 1.1 + unit * 0.3;
    ctx.beginPath();
    ctx.arc(kx, y + unit * 0.25, unit * 0.22, 0, Math.PI * 2);
    ctx.stroke();
    ctx.fillRect(kx - unit * 0.06, y + unit * 0.45, unit * 0.12, unit * 0.55);
    ctx.fillRect(kx, y + unit * 0.8, unit * 0.22, unit * 0.1);
  }
  if (n > shown) ctx.fillText(`+${n - shown}`, x + shown * unit * 1.1 + unit * 0.2, y + unit * 0.85);
}
