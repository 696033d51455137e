// The WebAssembly module (web/campfire.wasm) from Node: the protocol facts
// the page's JavaScript still names agree with the Rust ones, the input and
// name sanitizers are the Rust ones, and the guest session refuses bad
// input without changing state.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WasmError, loadCampfire } from '../lib/wasm.js';
import * as constants from '../lib/constants.js';
import { DISPLAY_NAME_MAX_CHARS, sanitizeDisplayName } from '../lib/name.js';

const campfire = await loadCampfire(readFileSync(fileURLToPath(new URL('../campfire.wasm', import.meta.url))));

test('every constant web/lib/constants.js names equals the Rust protocol fact', () => {
  const names = Object.keys(constants);
  assert.ok(names.length >= 10);
  for (const name of names) {
    assert.ok(name in campfire.facts, `${name} is not a protocol fact`);
    assert.deepEqual(/** @type {any} */ (constants)[name], campfire.facts[name], name);
  }
  assert.equal(DISPLAY_NAME_MAX_CHARS, campfire.facts.DISPLAY_NAME_MAX_CHARS);
});

test('the lobby page\'s name sanitizer agrees with the Rust one', () => {
  const corpus = [
    '', 'Ada', '  Ada  ', 'A\u0000d\u0007a', 'Zoë', '名前', 'a\u202Eb', 'tab\there', 'line\nbreak',
    'x'.repeat(100), ' '.repeat(40), '\u200Bzero\u200Bwidth', 'emoji 🔥🔥🔥', 'Ünïcödé Ñame',
    'a\u0301\u0301\u0301', '<script>', '\uFEFFbom', 'mixed \r\n\t spaces',
  ];
  for (let i = 0; i < 200; i++) {
    let s = '';
    for (let j = 0; j < (i % 50); j++) s += String.fromCodePoint((i * 7919 + j * 104729) % 0x3000);
    corpus.push(s);
  }
  for (const raw of corpus) {
    assert.equal(sanitizeDisplayName(raw), campfire.sanitizeName(raw), JSON.stringify(raw));
  }
});

test('local-only input signals never survive sanitizing; real input does', () => {
  const clean = campfire.sanitizeInput({
    escape: true, blur: true, pointerUnlock: true, click: true, fire: true, moveForward: true,
    mouseDeltaX: 1e12, weaponSelect: campfire.facts.WEAPON_SLOT_COUNT, cheat: 'IDDQD',
  });
  assert.equal(clean.escape, false);
  assert.equal(clean.blur, false);
  assert.equal(clean.pointerUnlock, false);
  assert.equal(clean.click, false);
  assert.equal(clean.fire, true);
  assert.equal(clean.moveForward, true);
  assert.equal(clean.mouseDeltaX, campfire.facts.MAX_MOUSE_DELTA_X);
  assert.equal(clean.weaponSelect, null);
  assert.equal('cheat' in clean, false);
  assert.deepEqual(Object.keys(clean).sort(), Object.keys(campfire.facts.NEUTRAL_INPUT).sort());
  assert.deepEqual(campfire.sanitizeInput(clean), clean);
  assert.throws(() => campfire.sanitizeInput({ fire: 'yes' }), WasmError);
});

test('a guest refuses malformed messages and bad arguments without changing state', () => {
  const guest = campfire.guest({ displayName: 'Ada' });
  const before = guest.status();
  assert.equal(before.phase, 'await-hello');
  guest.onMessage('reconciliation', '{"type":"no-such-message"}', 10);
  guest.onMessage('input', 'not json at all', 11);
  guest.poll(12);
  const after = guest.status();
  assert.equal(after.phase, 'await-hello');
  assert.equal(after.stats.badMessages, 2);
  assert.equal(guest.output().events.length, 2);
  assert.throws(() => guest.onMessage(/** @type {any} */ ('video'), '{}', 13), WasmError);
  assert.throws(() => guest.setInput({ mouseDeltaX: 'fast' }), WasmError);
  assert.throws(() => campfire.guest(/** @type {any} */ ({ displayName: 'x', admin: true })), WasmError);
  assert.equal(guest.view(14), null);
  guest.drop();
  assert.throws(() => guest.poll(15), /no guest session/);
});

test('a guest whose host connection is lost ends host-disconnected after the grace', () => {
  const guest = campfire.guest({});
  guest.onState('connected', 0);
  guest.onState('failed', 1000);
  const out = guest.output();
  assert.equal(out.wakeAtMs, 1000 + campfire.facts.DISCONNECT_GRACE_MS);
  guest.poll(1000 + campfire.facts.DISCONNECT_GRACE_MS - 1);
  assert.equal(guest.status().end, null);
  guest.poll(1000 + campfire.facts.DISCONNECT_GRACE_MS);
  assert.deepEqual(guest.status().end, { kind: 'ended', reason: 'host-disconnected', scores: [], provisional: true });
});

test('a host and a guest in one module play over the ABI; the host refuses bad calls', () => {
  assert.throws(() => campfire.host({ seed: 1, levels: 0 }), WasmError);
  const host = campfire.host({ seed: 5, levels: 1, displayName: 'Hostess', bot: true, startWhen: 1 });
  const guest = campfire.guest({ displayName: 'Guest', bot: true });
  assert.throws(() => host.onMessage(0, 'input', '{}', 0), WasmError, 'no slot 0 yet is not a panic either');
  const slot = host.addGuest(0);
  assert.equal(slot, 0);
  assert.throws(() => host.onMessage(slot, /** @type {any} */ ('video'), '{}', 0), WasmError);
  host.onMessage(slot, 'input', 'not json', 0);
  guest.onState('connected', 0);
  let t = 0;
  for (let step = 0; step < 400; step++) {
    t += 10;
    host.poll(t);
    for (const msg of host.output().send) {
      if (msg.slots.includes(slot)) guest.onMessage(msg.channel, msg.data, t);
    }
    guest.poll(t);
    for (const msg of guest.output().send) host.onMessage(slot, msg.channel, msg.data, t);
  }
  const status = host.status();
  assert.equal(status.phase, 'running');
  assert.deepEqual(status.roster, ['guest-1', 'host']);
  assert.deepEqual(status.guestNames, ['Guest']);
  assert.ok(status.tick > 100, `tick ${status.tick}`);
  assert.equal(guest.status().tick, status.tick, 'the guest applied every bundle sent');
  const view = host.view();
  assert.equal(view.me, 'host');
  const report = host.report();
  const g = report.players.find((/** @type {any} */ p) => p.playerId === 'guest-1');
  assert.ok(g.hashReports > 0 && g.desyncs === 0, JSON.stringify(report));
  host.shutdown();
  assert.equal(host.status().end.reason, 'host-shutdown');
  host.drop();
  guest.drop();
  assert.throws(() => host.status(), WasmError);
});

test('the browser host\'s join policy is netcode\'s: four junk answers delay the next round by 1 s, not 20; a real joiner is never dropped', () => {
  const slots = campfire.joinSlots({ connectDeadlineMs: 20_000 });
  // A grabber answers every round 10 ms after it opens; answers 1-4 never
  // show ICE progress.
  let now = 0;
  for (let i = 0; i < 4; i++) {
    assert.equal(slots.roundOpensAt(now), now);
    assert.equal(slots.admit(now).evicted, null);
    now += 10;
  }
  assert.equal(slots.roundOpensAt(now), 1_000, 'the old policy held the round for the 20 s connect timeout');
  // A real joiner takes the round at 1 s, dropping the oldest junk join,
  // and its checks arrive 50 ms later.
  const real = slots.admit(1_000);
  assert.equal(real.evicted, 1);
  assert.equal(slots.iceProgress(real.id, 1_050), true);
  // Three more grabs open at once, each dropping a junk join, never the
  // real one; then the next round waits for the oldest grab's hold.
  for (let i = 0; i < 3; i++) {
    assert.equal(slots.roundOpensAt(1_060 + i), 1_060 + i);
    const grab = slots.admit(1_060 + i);
    assert.equal(grab.evicted, 2 + i);
  }
  assert.equal(slots.roundOpensAt(1_100), 2_060);
  assert.equal(slots.finished(real.id), true);
  // The junk joins expire 5 s after their answers.
  assert.deepEqual(slots.expire(7_000).map((e) => e.why), ['no-ice-progress', 'no-ice-progress', 'no-ice-progress']);
  assert.equal(slots.nextDeadline(), null);
  // Bad input is an error answer, not a crash, and changes nothing.
  assert.throws(() => campfire.joinSlots(/** @type {any} */ ({ connectDeadlineMs: -5 })), WasmError);
  assert.equal(slots.finished(12345), false);
  assert.equal(slots.iceProgress(Number.NaN, 7_000), false);
  slots.drop();
  assert.throws(() => slots.nextDeadline(), WasmError);
});
