// The renderer's pure parts: the DDA, projection, depth clipping,
// interpolation and the HUD's text. Drawing is checked in
// browser-test/render.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { TILE, TileGrid, tileGridOf } from '../lib/render/grid.js';
import { ColumnHits, castColumns, castRay } from '../lib/render/raycast.js';
import { focalLength, projectSprite, toCamera } from '../lib/render/projection.js';
import { billboardsOf, visibleRuns } from '../lib/render/sprites.js';
import { interpolateView, blendOrientation, TELEPORT_TILES } from '../lib/render/interpolate.js';
import { countdownText, currentAmmo, hudUnit, rttText } from '../lib/render/hud.js';
import { automapLayout } from '../lib/render/automap.js';
import { cameraFor, tickAlpha } from '../lib/render/index.js';
import { WorldBuffer, bufferSize } from '../lib/render/world-buffer.js';
import { textures } from '../lib/render/textures.js';
import { HURT_TICKS, SHOT_TICKS, ScreenEffects } from '../lib/render/effects.js';

const near = (/** @type {number} */ a, /** @type {number} */ b, eps = 1e-9) =>
  assert.ok(Math.abs(a - b) <= eps, `${a} is not within ${eps} of ${b}`);

const room = new TileGrid({ width: 6, height: 5, rows: ['######', '#....#', '#...DS', '#..E.#', '######'] });
const fixture = JSON.parse(readFileSync(new URL('../test-support/view-fixture.json', import.meta.url), 'utf8'));
const fixtureNext = JSON.parse(readFileSync(new URL('../test-support/view-fixture-next.json', import.meta.url), 'utf8'));

test('rows decode to tile codes; outside the grid is wall', () => {
  assert.equal(room.at(0, 0), TILE.WALL);
  assert.equal(room.at(1, 1), TILE.FLOOR);
  assert.equal(room.at(4, 2), TILE.DOOR);
  assert.equal(room.at(5, 2), TILE.SECRET);
  assert.equal(room.at(3, 3), TILE.EXIT);
  assert.equal(room.at(-1, 2), TILE.WALL);
  assert.equal(room.at(6, 2), TILE.WALL);
  assert.equal(room.at(2, 99), TILE.WALL);
});

test('axis-aligned rays stop at the first wall, at the right distance and side', () => {
  const east = castRay(room, 1.5, 1.5, 1, 0);
  assert.deepEqual([east.mapX, east.mapY, east.side, east.tile], [5, 1, 0, TILE.WALL]);
  near(east.dist, 3.5);
  near(east.u, 0.5);
  const north = castRay(room, 1.5, 2.25, 0, -1);
  assert.deepEqual([north.mapX, north.mapY, north.side], [1, 0, 1]);
  near(north.dist, 1.25);
  const west = castRay(room, 2.5, 2.5, -1, 0);
  near(west.dist, 1.5);
});

test('doors and secret walls stop rays; the exit tile does not', () => {
  const door = castRay(room, 1.5, 2.5, 1, 0);
  assert.equal(door.tile, TILE.DOOR);
  assert.equal(door.mapX, 4);
  near(door.dist, 2.5);
  // Along row 3 the ray crosses the exit tile (3, 3) and stops at the wall.
  const overExit = castRay(room, 1.5, 3.5, 1, 0);
  assert.equal(overExit.tile, TILE.WALL);
  assert.equal(overExit.mapX, 5);
  near(overExit.dist, 3.5);
  const secret = castRay(new TileGrid({ width: 3, height: 1, rows: ['.S#'] }), 0.5, 0.5, 1, 0);
  assert.equal(secret.tile, TILE.SECRET);
  near(secret.dist, 0.5);
});

test('an oblique ray: distance in ray lengths and the texture coordinate', () => {
  // From (1.5, 1.5) along (1, 0.5): crosses x = 2, y = 2 and x = 3 over
  // floor; at x = 4 (t = 2.5) it is at y = 2.75, in the door (4, 2).
  const hit = castRay(room, 1.5, 1.5, 1, 0.5);
  assert.deepEqual([hit.mapX, hit.mapY, hit.side, hit.tile], [4, 2, 0, TILE.DOOR]);
  near(hit.dist, 2.5);
  near(hit.u, 0.75);
});

test('columns measure perpendicular distance: a flat wall has one depth (no fisheye)', () => {
  const wide = new TileGrid({ width: 10, height: 20, rows: Array.from({ length: 20 }, (_, y) => (y === 0 || y === 19 ? '#'.repeat(10) : '#........#')) });
  const hits = castColumns(wide, { x: 2.5, y: 10, dirX: 1, dirY: 0, planeX: 0, planeY: 0.66 }, new ColumnHits(64));
  for (let i = 0; i < hits.count; i++) near(hits.depth[i], 6.5, 1e-5);
  assert.ok(hits.side.every((s) => s === 0));
});

test('projection: centre, edge, size, behind the camera, off to a side', () => {
  const cam = { x: 0, y: 0, dirX: 1, dirY: 0, planeX: 0, planeY: 0.66 };
  near(focalLength(cam, 660), 500);
  const ahead = toCamera(cam, 2, 0, 660);
  near(ahead.depth, 2);
  near(ahead.screenX, 330);
  near(toCamera(cam, 2, 1.32, 660).screenX, 660);
  near(toCamera(cam, 2, -1.32, 660).screenX, 0);
  const s = /** @type {NonNullable<ReturnType<typeof projectSprite>>} */ (projectSprite(cam, 2, 0, 1, 1, 660, 200));
  near(s.right - s.left, 250);
  near(s.bottom, 200 + 125);
  near(s.top, 200 - 125);
  assert.equal(projectSprite(cam, -1, 0, 1, 1, 660, 200), null);
  assert.equal(projectSprite(cam, 1, 5, 0.5, 1, 660, 200), null);
  // Half on screen is still drawn.
  assert.ok(projectSprite(cam, 2, 1.4, 0.5, 1, 660, 200));
});

test('projection: facing south, a point to the west is right of centre', () => {
  const cam = { x: 0, y: 0, dirX: 0, dirY: 1, planeX: -0.66, planeY: 0 };
  const p = toCamera(cam, -1, 3, 660);
  near(p.depth, 3);
  assert.ok(p.screenX > 330);
});

test('sprites are clipped to the columns where the wall is farther', () => {
  const depth = Float32Array.from([5, 5, 1, 1, 5, 5, 5]);
  assert.deepEqual(visibleRuns(depth, 1, 0, 6, 3), [[0, 1], [4, 5]]);
  assert.deepEqual(visibleRuns(depth, 1, 0, 7, 0.5), [[0, 6]]);
  assert.deepEqual(visibleRuns(depth, 1, 2, 4, 3), []);
  // Two pixels per column; the span starts off screen.
  assert.deepEqual(visibleRuns(depth, 2, -10, 5.5, 3), [[0, 1]]);
});

test('interpolation blends positions and keeps the camera normalized', () => {
  const prev = { ...fixture, players: [{ ...fixture.players[1], x: 1, y: 1, dirX: 1, dirY: 0, planeX: 0, planeY: 0.66 }] };
  const next = { ...fixture, players: [{ ...fixture.players[1], x: 1.1, y: 1.2, dirX: 0, dirY: 1, planeX: -0.66, planeY: 0 }] };
  const mid = interpolateView(prev, next, 0.5).players[0];
  near(mid.x, 1.05);
  near(mid.y, 1.1);
  near(Math.hypot(mid.dirX, mid.dirY), 1);
  near(mid.dirX, Math.SQRT1_2);
  near(mid.dirY, Math.SQRT1_2);
  near(Math.hypot(mid.planeX, mid.planeY), 0.66);
  near(mid.dirX * mid.planeX + mid.dirY * mid.planeY, 0);
  // The plane is on the same hand as the engine's (right of the direction).
  assert.ok(mid.dirX * mid.planeY - mid.dirY * mid.planeX > 0);
  assert.deepEqual([interpolateView(prev, next, 0).players[0].x, interpolateView(prev, next, 1).players[0].x], [1, 1.1]);
  // Alpha outside [0, 1] is clamped.
  near(interpolateView(prev, next, 7).players[0].y, 1.2);
});

test('opposite directions and a missing plane still give a usable camera', () => {
  const o = blendOrientation({ dirX: 1, dirY: 0 }, { dirX: -1, dirY: 0 }, 0.5);
  near(o.dirX, -1);
  const p = blendOrientation({ dirX: 2, dirY: 0 }, { dirX: 2, dirY: 0 }, 0.3);
  near(p.dirX, 1);
  near(Math.hypot(p.planeX, p.planeY), 0.66);
});

test('entities only in next appear where next has them; teleports snap', () => {
  const prev = { ...fixture, players: fixture.players.slice(0, 1), enemies: fixture.enemies.slice(0, 1) };
  const next = {
    ...fixture,
    players: [{ ...fixture.players[0], x: fixture.players[0].x + TELEPORT_TILES + 3 }, fixture.players[1]],
    enemies: [{ ...fixture.enemies[0], x: fixture.enemies[0].x + 0.2 }, fixture.enemies[1]],
  };
  const v = interpolateView(prev, next, 0.5);
  assert.equal(v.players[0].x, next.players[0].x, 'a long jump snaps');
  assert.equal(v.players[1].x, fixture.players[1].x, 'a new player appears in place');
  near(v.enemies[0].x, fixture.enemies[0].x + 0.1);
  assert.equal(v.enemies[1].x, fixture.enemies[1].x, 'a new enemy appears in place');
  const alone = interpolateView(null, { ...next, players: [{ ...next.players[0], dirX: 0, dirY: 3, planeX: -2, planeY: 0 }] }, 0.3);
  assert.deepEqual([alone.players[0].x, alone.players[0].dirY], [next.players[0].x, 1], 'no prev: next, normalized');
});

test('enemies carrying ids are matched by id, not index', () => {
  const a = { kind: 'grunt', id: 'a', x: 1, y: 1, alive: true, hp: 1, maxHp: 1, aggroed: false };
  const b = { ...a, id: 'b', x: 5 };
  const v = interpolateView({ ...fixture, enemies: [a, b] }, { ...fixture, enemies: [{ ...b, x: 6 }, { ...a, x: 2 }] }, 0.5);
  assert.deepEqual(v.enemies.map((e) => e.x), [5.5, 1.5]);
});

test('the fixtures interpolate: everything but positions comes from next', () => {
  const v = interpolateView(fixture, fixtureNext, 0.25);
  assert.equal(v.tick, fixtureNext.tick);
  assert.equal(v.countdownTicks, fixtureNext.countdownTicks);
  const me = v.players.find((p) => p.id === 'p2');
  assert.ok(me && me.x > fixture.players[1].x && me.x < fixtureNext.players[1].x);
  assert.equal(me.ammo.bullets, fixtureNext.players[1].ammo.bullets);
});

test('countdown text: seconds rounded up to a tenth', () => {
  assert.equal(countdownText(150), 'Exit in 5.0 s');
  assert.equal(countdownText(129), 'Exit in 4.3 s');
  assert.equal(countdownText(130), 'Exit in 4.4 s');
  assert.equal(countdownText(1), 'Exit in 0.1 s');
  assert.equal(countdownText(0.4), 'Exit in 0.1 s');
  assert.equal(countdownText(0), 'Exit in 0.0 s');
  assert.equal(countdownText(-3), 'Exit in 0.0 s');
});

test('HUD figures: the current weapon\'s pool, RTT, a legible unit on a phone', () => {
  const ammo = { bullets: 7, rockets: 2, smg: 40, gas: 0 };
  assert.deepEqual(currentAmmo({ weapon: 2, ammo }), { pool: 'bullets', count: 7 });
  assert.deepEqual(currentAmmo({ weapon: 3, ammo }), { pool: 'smg', count: 40 });
  assert.deepEqual(currentAmmo({ weapon: 4, ammo }), { pool: 'rockets', count: 2 });
  assert.deepEqual(currentAmmo({ weapon: 5, ammo }), { pool: 'gas', count: 0 });
  assert.equal(currentAmmo({ weapon: 0, ammo }), null);
  assert.equal(rttText(null), 'RTT —');
  assert.equal(rttText(41.6), 'RTT 42 ms');
  assert.equal(hudUnit(360, 640, 1), 14);
  assert.equal(hudUnit(1080, 1920, 3), 42);
  assert.ok(hudUnit(1280, 720, 1) > 14 && hudUnit(1280, 720, 1) <= 22);
});

test('the automap fits the grid between the banner and the HUD bar, centred', () => {
  const l = automapLayout(24, 16, 1280, 720, { top: 80, bottom: 60, margin: 20 });
  assert.equal(l.scale, 33);
  assert.ok(l.originY >= 100 && l.originY + 16 * l.scale <= 720 - 60 - 20);
  assert.equal(l.originX, Math.floor((1280 - 24 * 33) / 2));
  const phone = automapLayout(24, 16, 360, 640, { top: 50, bottom: 80, margin: 7 });
  assert.equal(phone.scale, 14);
  assert.ok(phone.originX >= 0 && phone.originX + 24 * 14 <= 360);
});

test('a portrait screen narrows the field of view instead of shrinking the world', () => {
  const p = fixture.players[1];
  const wide = cameraFor(p, 1280, 654);
  near(Math.hypot(wide.planeX, wide.planeY), 0.66, 1e-6);
  const tall = cameraFor(p, 720, 1100);
  near(focalLength(tall, 720), 0.9 * 1100, 1e-6);
  near(tall.dirX * tall.planeX + tall.dirY * tall.planeY, 0, 1e-6);
});

/**
 * Renders a grid from (1.5, 2.5) looking east into a 64x40 pixel buffer.
 * @param {string[]} rows
 */
function renderRows(rows) {
  const world = new WorldBuffer();
  world.resize(64, 40);
  const grid = new TileGrid({ width: rows[0].length, height: rows.length, rows });
  world.draw(grid, { x: 1.5, y: 2.5, dirX: 1, dirY: 0, planeX: 0, planeY: 0.66 }, 20);
  return world;
}

test('world buffer: a secret wall is pixel-for-pixel a wall; a door is not', () => {
  const base = ['#######', '#.....#', '#.....#', '#.....#', '#######'];
  const wall = renderRows(base).pixels;
  const secret = renderRows(base.map((r, y) => (y === 2 ? '#.....S' : r))).pixels;
  const door = renderRows(base.map((r, y) => (y === 2 ? '#.....D' : r))).pixels;
  assert.deepEqual(secret, wall);
  assert.notDeepEqual(door, wall);
  // Every pixel is drawn (opaque), none left from an earlier frame.
  assert.ok(wall.every((p) => p >>> 24 === 0xff));
});

test('world buffer: the exit tile shows on the floor, and only where it is', () => {
  const exitTexels = new Set(textures().exit.flatMap((level) => [...level]));
  const count = (/** @type {Uint32Array} */ px) => px.reduce((n, p) => n + (exitTexels.has(p) ? 1 : 0), 0);
  const rows = ['#######', '#.....#', '#.....#', '#.....#', '#######'];
  assert.equal(count(renderRows(rows).pixels), 0);
  assert.ok(count(renderRows(rows.map((r, y) => (y === 2 ? '#..E..#' : r))).pixels) > 20);
});

test('world buffer: the centre column sees the wall at the depth the DDA gives', () => {
  const world = renderRows(['#######', '#.....#', '#.....#', '#.....#', '#######']);
  near(world.hits.depth[32], 4.5, 1e-5);
  assert.equal(world.hits.tile[32], TILE.WALL);
});

test('internal resolution: small canvases as they are, large ones scaled down evenly', () => {
  assert.deepEqual(bufferSize(640, 400), { width: 640, height: 400 });
  assert.deepEqual(bufferSize(320, 200), { width: 320, height: 200 });
  const hd = bufferSize(1280, 720);
  assert.ok(hd.width * hd.height <= 640 * 400);
  near(hd.width / hd.height, 1280 / 720, 0.01);
});

test('tick alpha: the fraction of a 30 Hz tick since the newest state arrived', () => {
  near(tickAlpha(1000, 1000), 0);
  near(tickAlpha(1000 + 1000 / 60, 1000), 0.5);
  near(tickAlpha(2000, 1000), 1);
  near(tickAlpha(900, 1000), 0);
});

test('screen effects: a shot and a hit fade over their spans, from the tick they happened', () => {
  const fx = new ScreenEffects();
  const me = fixture.players[1];
  const at = (/** @type {number} */ tick, /** @type {any} */ edit) => ({ ...fixture, tick, players: [{ ...me, ...edit }] });
  fx.observe(at(10, {}), at(11, { ammo: { ...me.ammo, bullets: me.ammo.bullets - 1 }, health: me.health - 5 }), me.id);
  near(fx.shot(11), 1);
  near(fx.hurt(11), 1);
  assert.ok(fx.hurt(11 + HURT_TICKS / 2) > 0.4 && fx.hurt(11 + HURT_TICKS / 2) < 0.6);
  assert.equal(fx.shot(11 + SHOT_TICKS), 0);
  // The next tick changes nothing: the effect keeps fading, not restarting.
  fx.observe(at(11, {}), at(12, {}), me.id);
  near(fx.hurt(12), 1 - 1 / HURT_TICKS);
  // A weapon switch to a fuller pool is not a shot; a new level's tick 1 shows no old effects.
  const fx2 = new ScreenEffects();
  fx2.observe(at(5, { weapon: 3 }), at(6, { weapon: 2 }), me.id);
  assert.equal(fx2.shot(6), 0);
  assert.equal(fx.hurt(1), 0);
});

test('billboards: everything but the local player, corpses for the dead, a shadow under each pickup', () => {
  const items = billboardsOf(fixture, 'p2', 0);
  const arts = items.map((b) => b.art);
  assert.ok(!items.some((b) => b.label === 'bea'), 'the local player is not drawn');
  assert.ok(arts.includes('player') && items.some((b) => b.label === 'ada'));
  assert.ok(arts.includes('enemy:brute:aggro') && arts.includes('enemy:sniper:aggro') && arts.includes('enemy:grunt'));
  assert.ok(arts.includes('corpse:grunt'));
  assert.equal(arts.filter((a) => a === 'shadow').length, fixture.pickups.length);
  assert.equal(arts.filter((a) => a.startsWith('pickup:')).length, fixture.pickups.length);
  assert.ok(arts.includes('mine') && arts.includes('exit-beacon'));
  assert.deepEqual(billboardsOf({ ...fixture, exit: undefined, pickups: [], mines: [], enemies: [], players: [] }, 'p2', 0), []);
});

test('the decoded grid is reused while the rows are equal, and rebuilt when one changes', () => {
  const rows = ['####', '#.D#', '####'];
  const a = tileGridOf({ width: 4, height: 3, rows });
  assert.equal(tileGridOf({ width: 4, height: 3, version: 9, rows: rows.slice() }), a);
  const opened = tileGridOf({ width: 4, height: 3, rows: ['####', '#..#', '####'] });
  assert.notEqual(opened, a);
  assert.equal(opened.at(2, 1), TILE.FLOOR);
});
