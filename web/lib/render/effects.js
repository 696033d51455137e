// @ts-check
// Screen effects that outlast the tick that caused them: the muzzle flash
// after a shot and the red vignette after a hit. A renderer frame sees only
// two view states, so the moment of the cause is remembered here, in ticks.

import { currentAmmo } from './hud.js';

/** How long each effect fades, in ticks (30 per second). */
export const SHOT_TICKS = 3;
export const HURT_TICKS = 9;

/** Remembers when the local player last fired and was hurt. */
export class ScreenEffects {
  constructor() {
    this.player = '';
    this.shotTick = Number.NaN;
    this.hurtTick = Number.NaN;
  }

  /**
   * Notes a shot (the current weapon's pool went down) or a hit (health
   * went down) between `prev` and `next`.
   * @param {import('./interpolate.js').ViewState|null|undefined} prev
   * @param {import('./interpolate.js').ViewState} next
   * @param {string} me
   */
  observe(prev, next, me) {
    if (me !== this.player) {
      this.player = me;
      this.shotTick = Number.NaN;
      this.hurtTick = Number.NaN;
    }
    const before = prev?.players.find((p) => p.id === me);
    const after = next.players.find((p) => p.id === me);
    if (!before || !after || prev?.tick === next.tick) return;
    const a0 = before.weapon === after.weapon ? currentAmmo(before) : null;
    const a1 = currentAmmo(after);
    if (a0 && a1 && a1.count < a0.count) this.shotTick = next.tick;
    if (after.health < before.health) this.hurtTick = next.tick;
  }

  /** @param {number} now ticks, fractional @returns {number} 1 just fired .. 0 */
  shot(now) {
    return fade(now - this.shotTick, SHOT_TICKS);
  }

  /** @param {number} now ticks, fractional @returns {number} 1 just hurt .. 0 */
  hurt(now) {
    return fade(now - this.hurtTick, HURT_TICKS);
  }
}

/**
 * 1 at the cause, falling linearly to 0 after `span` ticks; 0 for a cause
 * in the future (the tick counter restarts with each level).
 * @param {number} age
 * @param {number} span
 */
function fade(age, span) {
  return age >= 0 && age < span ? 1 - age / span : 0;
}

/**
 * The red vignette of a hit.
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} width
 * @param {number} height
 * @param {number} strength 0..1
 */
export function drawHurt(ctx, width, height, strength) {
  if (strength <= 0) return;
  const g = ctx.createRadialGradient(width / 2, height / 2, Math.min(width, height) * 0.3, width / 2, height / 2, Math.max(width, height) * 0.7);
  g.addColorStop(0, 'rgba(255, 0, 0, 0)');
  g.addColorStop(1, `rgba(220, 0, 0, ${0.55 * strength})`);
  ctx.fillStyle = g;
  ctx.fillRect(0, 0, width, height);
}
