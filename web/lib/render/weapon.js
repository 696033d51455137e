// @ts-check
// The local player's weapon at the bottom centre (one procedural drawing
// per slot, cached), its walking bob and muzzle flash, and the crosshair.

import { makeSurface } from './surface.js';

/** Weapon art is painted in a space this many units wide (and 3/4 as high), scaled to the screen. */
const ART_W = 400;
const ART_H = 300;

/** Where each slot's muzzle is in the art, as fractions of (width, height). */
const MUZZLE = [null, [0.5, 0.12], [0.5, 0.08], [0.5, 0.1], [0.5, 0.06], [0.5, 0.1]];

/** @typedef {(ctx: CanvasRenderingContext2D) => void} Paint */

/**
 * A gloved fist gripping at (x, y), with the sleeve running off the bottom.
 * @param {CanvasRenderingContext2D} ctx @param {number} x @param {number} y
 */
function hand(ctx, x, y) {
  ctx.fillStyle = hgrad(ctx, x - 60, x + 60, '#4d5f7d', '#1f2838');
  ctx.beginPath(); ctx.moveTo(x - 55, y + 40); ctx.lineTo(x + 55, y + 40); ctx.lineTo(x + 75, 300); ctx.lineTo(x - 75, 300); ctx.fill();
  ctx.fillStyle = hgrad(ctx, x - 48, x + 48, '#6b5848', '#2e241c');
  ctx.beginPath(); ctx.roundRect(x - 48, y - 20, 96, 72, 22); ctx.fill();
  ctx.strokeStyle = 'rgba(0, 0, 0, 0.45)';
  ctx.lineWidth = 4;
  ctx.beginPath();
  for (const dy of [-2, 16, 34]) { ctx.moveTo(x - 40, y + dy); ctx.lineTo(x + 30, y + dy); }
  ctx.stroke();
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} x0 @param {number} x1
 * @param {string} light @param {string} dark
 */
function hgrad(ctx, x0, x1, light, dark) {
  const g = ctx.createLinearGradient(x0, 0, x1, 0);
  g.addColorStop(0, dark);
  g.addColorStop(0.45, light);
  g.addColorStop(1, dark);
  return g;
}

/** Per slot: knife, pistol, shotgun, smg, rocket launcher, flamethrower. */
const PAINT = /** @type {Paint[]} */ ([
  (ctx) => {
    ctx.save();
    ctx.translate(250, 210);
    ctx.rotate(-0.35);
    ctx.fillStyle = hgrad(ctx, -16, 16, '#f1f3f8', '#8d93a3');
    ctx.beginPath(); ctx.moveTo(-16, 0); ctx.lineTo(-14, -150); ctx.lineTo(0, -185); ctx.lineTo(16, -150); ctx.lineTo(16, 0); ctx.fill();
    ctx.fillStyle = '#3a2a20'; ctx.fillRect(-30, 0, 60, 14); ctx.fillRect(-14, 14, 28, 80);
    ctx.restore();
    hand(ctx, 262, 215);
  },
  (ctx) => {
    ctx.fillStyle = hgrad(ctx, 168, 232, '#6b6f7c', '#23252c');
    ctx.fillRect(168, 60, 64, 150);
    ctx.fillStyle = '#15161a'; ctx.fillRect(188, 40, 24, 24);
    ctx.fillStyle = '#9aa0ad'; ctx.fillRect(196, 52, 8, 4);
    hand(ctx, 200, 190);
  },
  (ctx) => {
    ctx.fillStyle = hgrad(ctx, 140, 260, '#8a5a34', '#3e2614');
    ctx.beginPath(); ctx.moveTo(130, 300); ctx.lineTo(150, 120); ctx.lineTo(250, 120); ctx.lineTo(270, 300); ctx.fill();
    for (const x of [168, 206]) {
      ctx.fillStyle = hgrad(ctx, x, x + 30, '#7d8291', '#25272e');
      ctx.fillRect(x, 20, 30, 130);
      ctx.fillStyle = '#0c0c0f';
      ctx.beginPath(); ctx.ellipse(x + 15, 22, 12, 6, 0, 0, Math.PI * 2); ctx.fill();
    }
    hand(ctx, 200, 215);
  },
  (ctx) => {
    ctx.fillStyle = hgrad(ctx, 150, 250, '#4b4f5c', '#15161b');
    ctx.fillRect(150, 70, 100, 160);
    ctx.fillStyle = '#1b1c22'; ctx.fillRect(185, 20, 30, 60);
    ctx.fillStyle = '#2a2c34'; ctx.fillRect(225, 140, 40, 110);
    ctx.fillStyle = '#6aa8ff'; ctx.fillRect(160, 90, 8, 60);
    hand(ctx, 245, 200);
  },
  (ctx) => {
    ctx.fillStyle = hgrad(ctx, 120, 280, '#7f9152', '#2c3319');
    ctx.fillRect(120, 40, 160, 260);
    ctx.fillStyle = '#15180d';
    ctx.beginPath(); ctx.ellipse(200, 42, 80, 22, 0, 0, Math.PI * 2); ctx.fill();
    ctx.fillStyle = '#ffb347'; ctx.fillRect(130, 120, 140, 10);
    hand(ctx, 200, 225);
  },
  (ctx) => {
    ctx.fillStyle = hgrad(ctx, 250, 350, '#ff6b3d', '#6d1d0c');
    ctx.beginPath(); ctx.roundRect(255, 110, 95, 190, 30); ctx.fill();
    ctx.fillStyle = hgrad(ctx, 175, 225, '#8b8f9c', '#2b2d34');
    ctx.fillRect(178, 40, 44, 220);
    ctx.fillStyle = '#1a1a1f'; ctx.fillRect(172, 30, 56, 22);
    const g = ctx.createRadialGradient(200, 24, 2, 200, 24, 22);
    g.addColorStop(0, '#fff6c0'); g.addColorStop(0.5, '#4fa8ff'); g.addColorStop(1, 'rgba(79,168,255,0)');
    ctx.fillStyle = g; ctx.beginPath(); ctx.arc(200, 24, 22, 0, Math.PI * 2); ctx.fill();
    hand(ctx, 200, 215);
  },
]);

/** Weapon images at the size last drawn, by slot; cleared when the size changes. */
const cache = {
  width: 0,
  /** @type {Map<number, OffscreenCanvas|HTMLCanvasElement>} */
  bySlot: new Map(),
};

/**
 * The slot's art painted at `width` pixels wide: drawn once per size, then
 * blitted unscaled (a scaled, smoothed blit of this size costs about a
 * millisecond a frame in software Chromium).
 * @param {number} slot
 * @param {number} width
 */
function weaponArt(slot, width) {
  const s = Number.isInteger(slot) && slot >= 0 && slot < PAINT.length ? slot : 1;
  const w = Math.max(1, Math.round(width));
  if (cache.width !== w) {
    cache.width = w;
    cache.bySlot.clear();
  }
  let img = cache.bySlot.get(s);
  if (!img) {
    const { canvas, ctx } = makeSurface(w, Math.round((w * ART_H) / ART_W));
    ctx.scale(w / ART_W, w / ART_W);
    PAINT[s](ctx);
    img = canvas;
    cache.bySlot.set(s, img);
  }
  return { img, muzzle: MUZZLE[s] };
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {Object} o
 * @param {number} o.slot weapon slot 0..5
 * @param {number} o.width
 * @param {number} o.bottom the screen row the weapon stands on (above the HUD)
 * @param {number} o.phase walking phase (radians), for the bob
 * @param {number} o.stride 0 standing .. 1 walking
 * @param {number} o.flash 0 none .. 1 a shot this tick
 */
export function drawWeapon(ctx, { slot, width, bottom, phase, stride, flash }) {
  // Never so tall that it reaches the crosshair on a short (landscape phone) view.
  const { img, muzzle } = weaponArt(slot, Math.min(width * 0.45, bottom * 0.6));
  const w = img.width;
  const h = img.height;
  const bobX = Math.sin(phase) * w * 0.04 * stride;
  const bobY = Math.abs(Math.cos(phase)) * h * 0.06 * stride + flash * h * 0.04;
  const x = width / 2 - w / 2 + bobX;
  const y = bottom - h + h * 0.06 + bobY;
  if (flash > 0 && muzzle) {
    const mx = x + muzzle[0] * w;
    const my = y + muzzle[1] * h;
    const r = w * 0.22 * (0.6 + flash * 0.4);
    const g = ctx.createRadialGradient(mx, my, 0, mx, my, r);
    g.addColorStop(0, `rgba(255, 250, 210, ${flash})`);
    g.addColorStop(0.35, `rgba(255, 190, 70, ${0.8 * flash})`);
    g.addColorStop(1, 'rgba(255, 120, 20, 0)');
    ctx.fillStyle = g;
    ctx.fillRect(mx - r, my - r, r * 2, r * 2);
  }
  ctx.drawImage(img, Math.round(x), Math.round(y));
}

/**
 * A small four-line crosshair with a dark outline, readable on any wall.
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} cx
 * @param {number} cy
 * @param {number} unit
 */
export function drawCrosshair(ctx, cx, cy, unit) {
  const gap = unit * 0.3;
  const len = unit * 0.55;
  ctx.lineCap = 'round';
  for (const [style, lw] of /** @type {[string, number][]} */ ([['rgba(0,0,0,0.7)', Math.max(3, unit * 0.2)], ['#f4f4f8', Math.max(1.5, unit * 0.09)]])) {
    ctx.strokeStyle = style;
    ctx.lineWidth = lw;
    ctx.beginPath();
    ctx.moveTo(cx - gap - len, cy); ctx.lineTo(cx - gap, cy);
    ctx.moveTo(cx + gap, cy); ctx.lineTo(cx + gap + len, cy);
    ctx.moveTo(cx, cy - gap - len); ctx.lineTo(cx, cy - gap);
    ctx.moveTo(cx, cy + gap); ctx.lineTo(cx, cy + gap + len);
    ctx.stroke();
  }
}
