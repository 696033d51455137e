// @ts-check
// Procedural sprite images (canvas paths, drawn once into offscreen
// canvases on first use), and each sprite's size in the world.

import { PALETTE } from './palette.js';
import { makeSurface } from './surface.js';

/** Sprite images are this many pixels per world tile. */
const PX_PER_TILE = 160;

/**
 * A drawable sprite: its image and how large it stands in the world.
 * @typedef {Object} SpriteArt
 * @property {OffscreenCanvas|HTMLCanvasElement} image
 * @property {number} size width in tiles
 * @property {number} height height in tiles
 * @property {number} lift tiles between the floor and the image's bottom
 * @property {Mip[]} mips the image at half, quarter... size, made on use
 */

/**
 * One size of a sprite image, and its fogged copies by fog level.
 * @typedef {Object} Mip
 * @property {OffscreenCanvas|HTMLCanvasElement} image
 * @property {(OffscreenCanvas|HTMLCanvasElement|undefined)[]} fog
 */

/**
 * @param {number} size width in tiles
 * @param {number} height height in tiles
 * @param {(ctx: CanvasRenderingContext2D, w: number, h: number) => void} paint
 * @param {number} [lift]
 * @returns {SpriteArt}
 */
function art(size, height, paint, lift = 0) {
  const w = Math.round(size * PX_PER_TILE);
  const h = Math.round(height * PX_PER_TILE);
  const { canvas, ctx } = makeSurface(w, h);
  ctx.lineJoin = 'round';
  ctx.lineCap = 'round';
  paint(ctx, w, h);
  return { image: canvas, size, height, lift, mips: [{ image: canvas, fog: [] }] };
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} x @param {number} y @param {number} w @param {number} h @param {number} r
 */
function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  ctx.roundRect(x, y, w, h, r);
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} x @param {number} y @param {number} r
 */
function disc(ctx, x, y, r) {
  ctx.beginPath();
  ctx.arc(x, y, r, 0, Math.PI * 2);
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} y0 @param {number} y1
 * @param {string} light @param {string} dark
 */
function vgrad(ctx, y0, y1, light, dark) {
  const g = ctx.createLinearGradient(0, y0, 0, y1);
  g.addColorStop(0, light);
  g.addColorStop(1, dark);
  return g;
}

/**
 * A standing figure seen from the front, in a 1 x 1 box scaled to (w, h).
 * @typedef {Object} FigureLook
 * @property {string} body
 * @property {string} dark
 * @property {string} skin
 * @property {string} eye
 * @property {number} shoulders half-width of the shoulders, in box units
 * @property {number} waist
 * @property {'helmet'|'horns'|'hood'|'visor'} head
 * @property {'rifle'|'fists'|'long-rifle'|'pistol'} arms
 * @property {boolean} [aggro]
 */

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} w
 * @param {number} h
 * @param {FigureLook} look
 */
function figure(ctx, w, h, look) {
  ctx.save();
  ctx.scale(w, h);
  ctx.lineWidth = 0.012;
  const cx = 0.5;
  if (look.aggro) {
    // A red rim light: angry and easy to spot.
    ctx.shadowColor = 'rgba(255, 40, 20, 0.9)';
    ctx.shadowBlur = 14;
  }
  // Legs.
  ctx.fillStyle = look.dark;
  roundRect(ctx, cx - look.waist, 0.62, look.waist * 0.85, 0.37, 0.03); ctx.fill();
  roundRect(ctx, cx + look.waist * 0.15, 0.62, look.waist * 0.85, 0.37, 0.03); ctx.fill();
  // Torso.
  ctx.fillStyle = vgrad(ctx, 0.25, 0.68, look.body, look.dark);
  ctx.beginPath();
  ctx.moveTo(cx - look.shoulders, 0.28);
  ctx.lineTo(cx + look.shoulders, 0.28);
  ctx.lineTo(cx + look.waist, 0.68);
  ctx.lineTo(cx - look.waist, 0.68);
  ctx.closePath();
  ctx.fill();
  ctx.shadowBlur = 0;
  ctx.strokeStyle = 'rgba(0,0,0,0.5)';
  ctx.stroke();
  // Belt.
  ctx.fillStyle = 'rgba(20, 16, 14, 0.85)';
  ctx.fillRect(cx - look.waist, 0.6, look.waist * 2, 0.04);
  // Arms.
  ctx.fillStyle = look.body;
  const armW = look.shoulders * 0.42;
  roundRect(ctx, cx - look.shoulders - armW * 0.6, 0.29, armW, 0.3, 0.04); ctx.fill();
  roundRect(ctx, cx + look.shoulders - armW * 0.4, 0.29, armW, 0.3, 0.04); ctx.fill();
  ctx.fillStyle = look.skin;
  disc(ctx, cx - look.shoulders - armW * 0.1, 0.6, armW * 0.55); ctx.fill();
  disc(ctx, cx + look.shoulders + armW * 0.1, 0.6, armW * 0.55); ctx.fill();
  // Weapon held across the body.
  ctx.fillStyle = '#26252b';
  if (look.arms === 'rifle') {
    ctx.save(); ctx.translate(cx, 0.5); ctx.rotate(-0.35);
    ctx.fillRect(-0.26, -0.03, 0.52, 0.06); ctx.fillStyle = '#5a3b22'; ctx.fillRect(-0.3, -0.025, 0.1, 0.08);
    ctx.restore();
  } else if (look.arms === 'long-rifle') {
    ctx.save(); ctx.translate(cx + 0.05, 0.45); ctx.rotate(-1.2);
    ctx.fillRect(-0.42, -0.02, 0.8, 0.04); ctx.fillStyle = '#8fd3ff'; ctx.fillRect(0.05, -0.045, 0.1, 0.03);
    ctx.restore();
  } else if (look.arms === 'pistol') {
    ctx.fillRect(cx + look.shoulders - 0.02, 0.55, 0.05, 0.09);
  }
  // Head.
  const headY = 0.17;
  ctx.fillStyle = look.skin;
  disc(ctx, cx, headY, 0.11); ctx.fill();
  ctx.fillStyle = look.dark;
  if (look.head === 'helmet') {
    ctx.beginPath(); ctx.arc(cx, headY - 0.01, 0.125, Math.PI, 0); ctx.closePath(); ctx.fill();
    ctx.fillRect(cx - 0.14, headY - 0.02, 0.28, 0.03);
  } else if (look.head === 'horns') {
    ctx.fillStyle = '#e8dcc0';
    for (const s of [-1, 1]) {
      ctx.beginPath();
      ctx.moveTo(cx + s * 0.07, headY - 0.07);
      ctx.quadraticCurveTo(cx + s * 0.2, headY - 0.1, cx + s * 0.19, headY - 0.22);
      ctx.quadraticCurveTo(cx + s * 0.14, headY - 0.11, cx + s * 0.03, headY - 0.09);
      ctx.fill();
    }
  } else if (look.head === 'hood') {
    ctx.beginPath(); ctx.moveTo(cx, headY - 0.17); ctx.quadraticCurveTo(cx + 0.16, headY - 0.1, cx + 0.13, headY + 0.1);
    ctx.lineTo(cx + 0.08, headY + 0.03); ctx.quadraticCurveTo(cx, headY - 0.08, cx - 0.08, headY + 0.03);
    ctx.lineTo(cx - 0.13, headY + 0.1); ctx.quadraticCurveTo(cx - 0.16, headY - 0.1, cx, headY - 0.17); ctx.fill();
  } else {
    ctx.fillStyle = 'rgba(20, 40, 48, 0.9)';
    roundRect(ctx, cx - 0.09, headY - 0.04, 0.18, 0.06, 0.02); ctx.fill();
  }
  // Eyes.
  const eye = look.aggro ? '#fff27a' : look.eye;
  ctx.fillStyle = eye;
  if (look.aggro) { ctx.shadowColor = '#ffec40'; ctx.shadowBlur = 10; }
  if (look.head === 'hood') {
    disc(ctx, cx + 0.03, headY, 0.022); ctx.fill();
  } else if (look.head !== 'visor') {
    disc(ctx, cx - 0.04, headY, 0.018); ctx.fill();
    disc(ctx, cx + 0.04, headY, 0.018); ctx.fill();
    if (look.aggro) {
      ctx.shadowBlur = 0;
      ctx.strokeStyle = '#2a0a0a'; ctx.lineWidth = 0.015;
      ctx.beginPath(); ctx.moveTo(cx - 0.07, headY - 0.05); ctx.lineTo(cx - 0.015, headY - 0.025);
      ctx.moveTo(cx + 0.07, headY - 0.05); ctx.lineTo(cx + 0.015, headY - 0.025); ctx.stroke();
    }
  }
  ctx.restore();
}

/** @type {Record<string, Omit<FigureLook, 'aggro'> & {size: number, height: number}>} */
const ENEMY_LOOKS = {
  grunt: { body: '#d9503f', dark: '#5e2119', skin: '#d8a07a', eye: '#2a0c08', shoulders: 0.2, waist: 0.14, head: 'helmet', arms: 'rifle', size: 0.8, height: 0.85 },
  brute: { body: '#9c5bd6', dark: '#3b1e59', skin: '#8fae6e', eye: '#ff3a2a', shoulders: 0.32, waist: 0.22, head: 'horns', arms: 'fists', size: 1.05, height: 1.0 },
  sniper: { body: '#3fa7d9', dark: '#173d52', skin: '#c9a27f', eye: '#ff3030', shoulders: 0.16, waist: 0.11, head: 'hood', arms: 'long-rifle', size: 0.75, height: 0.92 },
};

/**
 * @param {string} colour
 * @returns {(ctx: CanvasRenderingContext2D, w: number, h: number) => void}
 */
const corpse = (colour) => (ctx, w, h) => {
  ctx.fillStyle = 'rgba(110, 12, 12, 0.6)';
  ctx.beginPath(); ctx.ellipse(w * 0.55, h * 0.75, w * 0.38, h * 0.22, 0, 0, Math.PI * 2); ctx.fill();
  ctx.fillStyle = colour;
  ctx.beginPath(); ctx.ellipse(w * 0.45, h * 0.55, w * 0.3, h * 0.25, 0.1, 0, Math.PI * 2); ctx.fill();
  ctx.fillStyle = 'rgba(0,0,0,0.35)';
  ctx.beginPath(); ctx.ellipse(w * 0.8, h * 0.5, w * 0.09, h * 0.2, 0, 0, Math.PI * 2); ctx.fill();
};

/** Pickups: small things on the floor, each a distinct shape and colour. */
const PICKUP_PAINT = /** @type {Record<string, (ctx: CanvasRenderingContext2D, w: number, h: number) => void>} */ ({
  health(ctx, w, h) {
    ctx.fillStyle = vgrad(ctx, 0, h, '#ffffff', '#c9c9d2');
    roundRect(ctx, w * 0.08, h * 0.2, w * 0.84, h * 0.78, w * 0.08); ctx.fill();
    ctx.fillStyle = '#e0252b';
    ctx.fillRect(w * 0.4, h * 0.3, w * 0.2, h * 0.58);
    ctx.fillRect(w * 0.2, h * 0.49, w * 0.6, h * 0.2);
  },
  bullets(ctx, w, h) {
    for (let i = 0; i < 4; i++) {
      const x = w * (0.16 + i * 0.2);
      ctx.fillStyle = vgrad(ctx, h * 0.4, h, '#f3d27a', '#9c7a25');
      ctx.fillRect(x, h * 0.42, w * 0.14, h * 0.56);
      ctx.fillStyle = '#b9743e';
      ctx.beginPath(); ctx.ellipse(x + w * 0.07, h * 0.42, w * 0.07, h * 0.2, 0, Math.PI, 0); ctx.fill();
    }
  },
  rockets(ctx, w, h) {
    ctx.fillStyle = '#5b6b3a'; roundRect(ctx, w * 0.3, h * 0.25, w * 0.4, h * 0.7, w * 0.06); ctx.fill();
    ctx.fillStyle = '#ff6a2a';
    ctx.beginPath(); ctx.moveTo(w * 0.3, h * 0.27); ctx.lineTo(w * 0.5, h * 0.02); ctx.lineTo(w * 0.7, h * 0.27); ctx.fill();
    ctx.fillStyle = '#2d351d'; ctx.fillRect(w * 0.18, h * 0.78, w * 0.64, h * 0.2);
  },
  smg(ctx, w, h) {
    ctx.fillStyle = vgrad(ctx, h * 0.3, h, '#6aa8ff', '#24508f');
    roundRect(ctx, w * 0.1, h * 0.35, w * 0.8, h * 0.63, w * 0.06); ctx.fill();
    ctx.fillStyle = '#111a2b';
    for (let i = 0; i < 3; i++) ctx.fillRect(w * (0.22 + i * 0.22), h * 0.12, w * 0.12, h * 0.3);
  },
  gas(ctx, w, h) {
    ctx.fillStyle = vgrad(ctx, h * 0.15, h, '#ff6b3d', '#8d2a12');
    roundRect(ctx, w * 0.18, h * 0.18, w * 0.64, h * 0.8, w * 0.1); ctx.fill();
    ctx.fillStyle = '#2b1a14'; ctx.fillRect(w * 0.55, h * 0.04, w * 0.14, h * 0.16);
    ctx.strokeStyle = '#ffd0b0'; ctx.lineWidth = w * 0.05;
    ctx.beginPath(); ctx.moveTo(w * 0.28, h * 0.35); ctx.lineTo(w * 0.72, h * 0.85); ctx.moveTo(w * 0.72, h * 0.35); ctx.lineTo(w * 0.28, h * 0.85); ctx.stroke();
  },
  weapon(ctx, w, h) {
    ctx.shadowColor = '#c78bff'; ctx.shadowBlur = w * 0.15;
    ctx.fillStyle = '#3a3344';
    ctx.fillRect(w * 0.08, h * 0.45, w * 0.84, h * 0.18);
    ctx.fillRect(w * 0.6, h * 0.55, w * 0.16, h * 0.4);
    ctx.fillStyle = '#c78bff';
    ctx.fillRect(w * 0.12, h * 0.49, w * 0.5, h * 0.06);
  },
  key(ctx, w, h) {
    ctx.shadowColor = PALETTE.key; ctx.shadowBlur = w * 0.2;
    ctx.strokeStyle = PALETTE.key; ctx.lineWidth = w * 0.1;
    disc(ctx, w * 0.5, h * 0.3, w * 0.17); ctx.stroke();
    ctx.fillStyle = PALETTE.key;
    ctx.fillRect(w * 0.45, h * 0.42, w * 0.1, h * 0.54);
    ctx.fillRect(w * 0.55, h * 0.74, w * 0.16, h * 0.08);
    ctx.fillRect(w * 0.55, h * 0.86, w * 0.12, h * 0.08);
  },
});

/** @param {FigureLook} look */
const player = (look) => art(0.7, 0.88, (ctx, w, h) => figure(ctx, w, h, look));

/**
 * @param {string} kind
 * @param {boolean} aggro
 */
const enemyArt = (kind, aggro) => {
  const look = ENEMY_LOOKS[kind] ?? ENEMY_LOOKS.grunt;
  return art(look.size, look.height, (ctx, w, h) => figure(ctx, w, h, { ...look, aggro }));
};

/** @type {Map<string, SpriteArt>} */
const cache = new Map();

/**
 * The sprite for a key such as `enemy:grunt:aggro`, `corpse:brute`,
 * `pickup:health`, `mine`, `player`, `player:down`, `shadow`, `exit-beacon`;
 * made on first use.
 * @param {string} key
 * @returns {SpriteArt}
 */
export function spriteArt(key) {
  let a = cache.get(key);
  if (a) return a;
  const [what, kind, state] = key.split(':');
  if (what === 'enemy') a = enemyArt(kind, state === 'aggro');
  else if (what === 'corpse') a = art(0.75, 0.22, corpse(ENEMY_LOOKS[kind]?.dark ?? '#5e2119'));
  else if (what === 'pickup') a = art(0.42, 0.42, PICKUP_PAINT[kind] ?? PICKUP_PAINT.weapon);
  else if (what === 'mine') {
    a = art(0.4, 0.13, (ctx, w, h) => {
      ctx.fillStyle = '#2a2a30'; ctx.beginPath(); ctx.ellipse(w / 2, h * 0.6, w * 0.48, h * 0.38, 0, 0, Math.PI * 2); ctx.fill();
      ctx.fillStyle = '#55555e'; ctx.beginPath(); ctx.ellipse(w / 2, h * 0.45, w * 0.3, h * 0.25, 0, 0, Math.PI * 2); ctx.fill();
      ctx.shadowColor = '#ff3b1f'; ctx.shadowBlur = 8; ctx.fillStyle = '#ff4a2a';
      disc(ctx, w / 2, h * 0.35, h * 0.16); ctx.fill();
    });
  } else if (what === 'player') {
    a = kind === 'down'
      ? art(0.75, 0.22, corpse(PALETTE.playerDown))
      : player({ body: PALETTE.player, dark: '#2f6b5a', skin: '#e0b890', eye: '#000', shoulders: 0.19, waist: 0.13, head: 'visor', arms: 'pistol' });
  } else if (what === 'shadow') {
    a = art(0.36, 0.07, (ctx, w, h) => {
      ctx.fillStyle = 'rgba(0, 0, 0, 0.45)';
      ctx.beginPath(); ctx.ellipse(w / 2, h / 2, w / 2, h / 2, 0, 0, Math.PI * 2); ctx.fill();
    });
  } else {
    a = art(0.9, 1.0, (ctx, w, h) => {
      const g = ctx.createLinearGradient(0, 0, 0, h);
      g.addColorStop(0, 'rgba(90, 255, 150, 0)');
      g.addColorStop(0.6, 'rgba(90, 255, 150, 0.22)');
      g.addColorStop(1, 'rgba(120, 255, 170, 0.55)');
      ctx.fillStyle = g;
      ctx.beginPath(); ctx.moveTo(w * 0.1, h); ctx.lineTo(w * 0.3, 0); ctx.lineTo(w * 0.7, 0); ctx.lineTo(w * 0.9, h); ctx.fill();
    });
  }
  cache.set(key, a);
  return a;
}

/** Distance shades per sprite (sprites are small; walls have finer steps). */
const FOG_LEVELS = 10;
/** Mips stop at this height in pixels. */
const MIN_MIP_HEIGHT = 8;

/**
 * The sprite's image for drawing `destHeight` pixels tall with `light`
 * (0..1) of its colour left: the smallest mip at least that tall (so a
 * nearest-neighbour blit neither aliases much nor costs a smoothed one),
 * faded toward the fog in FOG_LEVELS steps. Everything is cached on the art.
 * @param {SpriteArt} a
 * @param {number} destHeight
 * @param {number} light
 */
export function spriteImage(a, destHeight, light) {
  let m = 0;
  while (a.image.height >> (m + 1) >= Math.max(destHeight, MIN_MIP_HEIGHT)) m++;
  for (let k = a.mips.length; k <= m; k++) {
    const src = a.mips[k - 1].image;
    const { canvas, ctx } = makeSurface(Math.max(1, src.width >> 1), Math.max(1, src.height >> 1));
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(src, 0, 0, canvas.width, canvas.height);
    a.mips.push({ image: canvas, fog: [] });
  }
  const mip = a.mips[m];
  const level = Math.round(Math.min(1, Math.max(0, light)) * (FOG_LEVELS - 1));
  if (level === FOG_LEVELS - 1) return mip.image;
  let img = mip.fog[level];
  if (!img) {
    const { canvas, ctx } = makeSurface(mip.image.width, mip.image.height);
    ctx.drawImage(mip.image, 0, 0);
    ctx.globalCompositeOperation = 'source-atop';
    const [r, g, b] = PALETTE.fog;
    ctx.fillStyle = `rgba(${r}, ${g}, ${b}, ${1 - level / (FOG_LEVELS - 1)})`;
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    img = canvas;
    mip.fog[level] = img;
  }
  return img;
}
