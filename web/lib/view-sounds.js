// What a player should hear between two views of the game: shots, hits,
// deaths, alerts, doors, pickups and keys, a teammate going down or coming
// back. Derived from the engine's views the page already draws (never a
// second simulation): `soundsBetween(before, after)` compares two
// consecutive ticks and names each event with where it happened.

/**
 * @typedef {Object} SoundEvent
 * @property {string} name one of the names web/lib/sound.js plays
 * @property {number} x where, in tiles
 * @property {number} y
 * @property {string} [player] the player it happened to, when one did
 */

/** @param {Record<string, number>|undefined} ammo */
function totalAmmo(ammo) {
  return Object.values(ammo ?? {}).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
}

/**
 * Every door cell ('D') of a grid, as "x,y".
 * @param {any} grid
 * @returns {Set<string>}
 */
function doors(grid) {
  const out = new Set();
  (grid?.rows ?? []).forEach((/** @type {string} */ row, /** @type {number} */ y) => {
    for (let x = 0; x < row.length; x++) if (row[x] === 'D') out.add(`${x},${y}`);
  });
  return out;
}

/**
 * The sounds of going from view `a` to view `b` (the next tick). Views of
 * the same tick, or of ticks that do not follow, give none: a rewound or
 * repeated view must not play its sounds twice.
 * @param {any} a
 * @param {any} b
 * @returns {SoundEvent[]}
 */
export function soundsBetween(a, b) {
  if (!a || !b || b.tick !== a.tick + 1) return [];
  /** @type {SoundEvent[]} */
  const out = [];
  const before = new Map((a.players ?? []).map((/** @type {any} */ p) => [p.id, p]));
  for (const p of b.players ?? []) {
    const q = before.get(p.id);
    if (!q) continue;
    const at = { x: p.x, y: p.y, player: p.id };
    if (q.weapon === p.weapon && p.weapon !== undefined) {
      const pool = Object.keys(p.ammo ?? {}).find((k) => (p.ammo[k] ?? 0) < (q.ammo?.[k] ?? 0));
      if (pool) out.push({ name: `shot-${p.weaponName ?? 'pistol'}`, ...at });
    }
    if (totalAmmo(p.ammo) > totalAmmo(q.ammo)) out.push({ name: 'pickup', ...at });
    if (p.keys > q.keys) out.push({ name: 'key', ...at });
    if (q.alive && p.alive && p.health < q.health) out.push({ name: 'hurt', ...at });
    if (q.alive && p.health > q.health && p.alive) out.push({ name: 'pickup', ...at });
    if (q.alive && !p.alive) out.push({ name: 'player-down', ...at });
    if (!q.alive && p.alive) out.push({ name: 'revived', ...at });
  }
  const enemies = /** @type {any[]} */ (a.enemies ?? []);
  (b.enemies ?? []).forEach((/** @type {any} */ e, /** @type {number} */ i) => {
    const f = enemies[i];
    if (!f || f.kind !== e.kind) return;
    const at = { x: e.x, y: e.y };
    if (f.alive && !e.alive) out.push({ name: 'enemy-death', ...at });
    else if (e.alive && e.hp < f.hp) out.push({ name: 'enemy-hit', ...at });
    if (e.alive && e.aggroed && !f.aggroed) out.push({ name: 'enemy-alert', ...at });
  });
  if (a.grid && b.grid && a.grid.version !== b.grid.version) {
    const was = doors(a.grid);
    const now = doors(b.grid);
    for (const cell of new Set([...was, ...now])) {
      if (was.has(cell) !== now.has(cell)) {
        const [x, y] = cell.split(',').map(Number);
        out.push({ name: 'door', x: x + 0.5, y: y + 0.5 });
      }
    }
  }
  return out;
}
