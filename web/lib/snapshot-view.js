// A view-only GuestEngine for browser pages that cannot run the real
// simulation (the raycaster engine is Rust; see docs/decisions-web.md).
//
// It keeps the host's authoritative state from reconciliation snapshots
// and, between them, moves every player the way the engine does from the
// bundle's inputs (turn, walk, slide along walls), so movement shows at the
// tick rate rather than once a second. Enemies are drawn interpolated
// between the last two snapshots; everything else (health, ammo, drops,
// doors, pickups) changes only with snapshots. It never reports a world
// hash: it does not simulate combat, AI or the PRNG, so a hash would only
// count false desyncs.

import { CORRECTION_SMOOTH_MS, COUNTDOWN_TICKS, RECONCILE_INTERVAL_TICKS, SNAP_THRESHOLD_TILES, TICK_RATE_HZ } from './constants.js';

// Movement rules of the engine (engine/src/rules.rs).
const PLAYER_RADIUS = 0.2;
const PLAYER_MOVE_SPEED = 3.2;
const PLAYER_TURN_SPEED = 3.0;
const MOUSE_SENSITIVITY = 0.0025;
const CAMERA_PLANE = 0.66;

/** Tile codes on the wire. */
export const TILE = Object.freeze({ FLOOR: 0, WALL: 1, DOOR: 2, SECRET: 3, EXIT: 4 });

/**
 * @typedef {Object} ViewPlayer
 * @property {number} x
 * @property {number} y
 * @property {number} dirX
 * @property {number} dirY
 * @property {number} health
 * @property {boolean} alive
 * @property {Object|null} ammo
 * @property {number} weaponIndex
 * @property {number} keysHeld
 * @property {number} killScore
 * @property {number} kills
 */

/** @param {number} t */
const walkable = (t) => t === TILE.FLOOR || t === TILE.EXIT;

/** The snapshot-driven view engine. */
export class SnapshotViewEngine {
  constructor() {
    /** @type {any} */
    this.map = null;
    /** @type {number[]} */
    this.tiles = [];
    this.currentTick = 0;
    /** @type {Map<string, ViewPlayer>} */
    this.players = new Map();
    /** @type {Map<string, ViewPlayer>} the state before the last tick, for render interpolation */
    this.previous = new Map();
    this.lastTickAt = 0;
    /** @type {Map<string, {dx: number, dy: number, at: number}>} */
    this.renderOffsets = new Map();
    /** @type {{at: number, enemies: any[]}|null} */
    this.enemiesBefore = null;
    /** @type {{at: number, enemies: any[]}|null} */
    this.enemiesNow = null;
    /** @type {any[]} */
    this.lootDrops = [];
    /** @type {Set<number>} */
    this.pickupsCollected = new Set();
    /** @type {Set<number>} */
    this.keysCollected = new Set();
    /** @type {any[]} */
    this.mines = [];
    /** @type {number|null} ticks left of the exit countdown, as far as this view can tell */
    this.countdown = null;
    /** @type {any} */
    this.lastSnapshot = null;
    this.levelIndex = 0;
    this.now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
  }

  /** @param {import('./guest-session.js').LevelSetup} setup */
  startLevel(setup) {
    const { map, roster } = setup;
    this.map = map;
    this.tiles = map.tiles.slice();
    this.currentTick = 0;
    this.levelIndex = setup.levelIndex;
    this.players = new Map();
    [...roster].sort().forEach((id, i) => {
      const s = map.spawns[i % map.spawns.length];
      const carry = setup.carryovers?.[id];
      this.players.set(id, {
        x: s.x, y: s.y, dirX: 1, dirY: 0, health: carry?.health ?? 100, alive: true,
        ammo: carry?.ammo ?? null, weaponIndex: carry?.weaponIndex ?? 1, keysHeld: 0, killScore: 0, kills: 0,
      });
    });
    this.previous = clonePlayers(this.players);
    this.lastTickAt = this.now();
    this.renderOffsets.clear();
    const spawnEnemies = map.enemies.map((e, index) => ({ index, x: e.position.x, y: e.position.y, alive: true, hp: 1, aggroed: false }));
    this.enemiesBefore = null;
    this.enemiesNow = { at: this.now(), enemies: spawnEnemies };
    this.lootDrops = [];
    this.pickupsCollected = new Set();
    this.keysCollected = new Set();
    this.mines = map.mines.map((_, index) => ({ index, alive: true, visible: false }));
    this.countdown = null;
    this.lastSnapshot = null;
  }

  tick() {
    return this.currentTick;
  }

  roster() {
    return [...this.players.keys()].sort();
  }

  /** @param {number} x @param {number} y */
  tileAt(x, y) {
    if (!this.map || x < 0 || y < 0 || x >= this.map.width || y >= this.map.height) return TILE.WALL;
    return this.tiles[y * this.map.width + x];
  }

  /** Whether a box of half-size r around (x, y) touches only walkable tiles. */
  boxFree(x, y, r) {
    const x0 = Math.floor(x - r); const x1 = Math.floor(x + r);
    const y0 = Math.floor(y - r); const y1 = Math.floor(y + r);
    for (let ty = y0; ty <= y1; ty++) {
      for (let tx = x0; tx <= x1; tx++) if (!walkable(this.tileAt(tx, ty))) return false;
    }
    return true;
  }

  /**
   * One player's turn and walk for one tick (engine/src/player.rs `steer`).
   * @param {ViewPlayer} p
   * @param {import('./input.js').InputSnapshot} input
   * @param {number} dt
   */
  steer(p, input, dt) {
    const keys = Number(input.turnRight) - Number(input.turnLeft);
    const angle = keys * PLAYER_TURN_SPEED * dt + input.mouseDeltaX * MOUSE_SENSITIVITY;
    if (angle !== 0) {
      const s = Math.sin(angle); const c = Math.cos(angle);
      const dx = p.dirX * c - p.dirY * s; const dy = p.dirX * s + p.dirY * c;
      const len = Math.hypot(dx, dy);
      if (len > 0) { p.dirX = dx / len; p.dirY = dy / len; }
    }
    const fwd = Number(input.moveForward) - Number(input.moveBack);
    const side = Number(input.strafeRight) - Number(input.strafeLeft);
    if (fwd === 0 && side === 0) return;
    // Strafing right moves along the camera plane (-dirY, dirX).
    let wx = p.dirX * fwd - p.dirY * side;
    let wy = p.dirY * fwd + p.dirX * side;
    const len = Math.hypot(wx, wy);
    if (len > 0) { wx *= PLAYER_MOVE_SPEED * dt / len; wy *= PLAYER_MOVE_SPEED * dt / len; }
    if (this.boxFree(p.x + wx, p.y, PLAYER_RADIUS)) p.x += wx;
    if (this.boxFree(p.x, p.y + wy, PLAYER_RADIUS)) p.y += wy;
  }

  /** @param {{tick: number, dt: number, inputs: Record<string, any>, rosterRemove: string[]}} bundle */
  advance(bundle) {
    this.previous = clonePlayers(this.players);
    this.lastTickAt = this.now();
    for (const id of bundle.rosterRemove) this.players.delete(id);
    for (const [id, p] of this.players) {
      const input = bundle.inputs[id];
      if (p.alive && input) this.steer(p, input, bundle.dt);
    }
    this.currentTick += 1;
    this.updateCountdown();
  }

  /** The exit countdown as far as a view can tell: it starts when a living
   * player stands on the exit and no living enemy of the exit's room is
   * left, and then runs down once a tick. */
  updateCountdown() {
    if (this.countdown !== null) {
      this.countdown = Math.max(0, this.countdown - 1);
      return;
    }
    const exit = this.map.exit;
    const onExit = [...this.players.values()].some((p) => p.alive && Math.floor(p.x) === exit.x && Math.floor(p.y) === exit.y);
    if (!onExit) return;
    const cx = exit.x + 0.5; const cy = exit.y + 0.5;
    const enemies = this.enemiesNow?.enemies ?? [];
    const guarded = this.map.enemies.some((e, i) => {
      const h = e.home;
      const inRoom = cx >= h.x && cy >= h.y && cx < h.x + h.w && cy < h.y + h.h;
      return inRoom && enemies[i]?.alive !== false;
    });
    if (!guarded) this.countdown = COUNTDOWN_TICKS;
  }

  /** @param {any} snap */
  applySnapshot(snap) {
    const at = this.now();
    const ids = new Set(Object.keys(snap.players ?? {}));
    for (const id of [...this.players.keys()]) if (!ids.has(id)) this.players.delete(id);
    for (const [id, s] of Object.entries(snap.players ?? {})) {
      const old = this.players.get(id);
      if (old) {
        const dx = old.x - s.posX; const dy = old.y - s.posY;
        const dist = Math.hypot(dx, dy);
        if (dist > 0 && dist < SNAP_THRESHOLD_TILES) this.renderOffsets.set(id, { dx, dy, at });
        else this.renderOffsets.delete(id);
      }
      this.players.set(id, {
        x: s.posX, y: s.posY, dirX: s.dirX, dirY: s.dirY, health: s.health, alive: s.alive,
        ammo: s.ammo, weaponIndex: s.weaponIndex, keysHeld: s.keysHeld, killScore: s.killScore, kills: s.kills,
      });
    }
    this.previous = clonePlayers(this.players);
    this.enemiesBefore = this.enemiesNow;
    this.enemiesNow = { at, enemies: snap.enemies ?? [] };
    this.mines = snap.mines ?? this.mines;
    this.lootDrops = snap.lootDrops ?? [];
    this.pickupsCollected = new Set(snap.pickupsCollected ?? []);
    this.keysCollected = new Set(snap.keysCollected ?? []);
    for (const m of snap.gridDelta ?? []) {
      if (m.x >= 0 && m.y >= 0 && m.x < this.map.width && m.y < this.map.height) {
        this.tiles[m.y * this.map.width + m.x] = m.value;
      }
    }
    this.lastSnapshot = snap;
  }

  /**
   * What to draw at `nowMs`: players between their last two tick states
   * plus the decaying correction offset; enemies between the last two
   * snapshots (one snapshot interval behind).
   * @param {number} nowMs
   */
  view(nowMs) {
    const tickMs = 1000 / TICK_RATE_HZ;
    const alpha = Math.min(1, Math.max(0, (nowMs - this.lastTickAt) / tickMs));
    const players = [];
    for (const [id, p] of this.players) {
      const prev = this.previous.get(id) ?? p;
      let x = prev.x + (p.x - prev.x) * alpha;
      let y = prev.y + (p.y - prev.y) * alpha;
      const off = this.renderOffsets.get(id);
      if (off) {
        const left = 1 - (nowMs - off.at) / CORRECTION_SMOOTH_MS;
        if (left > 0) { x += off.dx * left; y += off.dy * left; } else this.renderOffsets.delete(id);
      }
      players.push({ id, ...p, x, y });
    }
    const enemies = [];
    const now = this.enemiesNow;
    const before = this.enemiesBefore;
    const span = (RECONCILE_INTERVAL_TICKS * 1000) / TICK_RATE_HZ;
    const beta = now ? Math.min(1, Math.max(0, (nowMs - now.at) / span)) : 1;
    for (const e of now?.enemies ?? []) {
      const b = before?.enemies.find((o) => o.index === e.index) ?? e;
      enemies.push({ ...e, x: b.x + (e.x - b.x) * beta, y: b.y + (e.y - b.y) * beta });
    }
    return { players, enemies };
  }
}

/** @param {Map<string, ViewPlayer>} players */
function clonePlayers(players) {
  const out = new Map();
  for (const [id, p] of players) out.set(id, { ...p });
  return out;
}
