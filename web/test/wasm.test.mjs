// The WebAssembly module (web/campfire.wasm) from Node: the generated
// facts module says what the module says, codes are parsed by the Rust
// parser, the input sanitizer is the Rust one, and the guest session refuses
// bad input without changing state.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WasmError, loadCampfire } from '../lib/wasm.js';
import * as facts from '../lib/facts.js';

const campfire = await loadCampfire(readFileSync(fileURLToPath(new URL('../campfire.wasm', import.meta.url))));

test('web/lib/facts.js and the module answer the same facts', () => {
  assert.deepEqual(Object.keys(facts).sort(), Object.keys(campfire.facts).sort());
  for (const [name, value] of Object.entries(facts)) {
    assert.deepEqual(value, campfire.facts[name], name);
  }
});

test('the pages parse codes with SessionCode::parse', () => {
  assert.equal(campfire.parseCode('abcd-efgh'), 'ABCDEFGH');
  assert.equal(campfire.parseCode(' ab cd ef gh '), 'ABCDEFGH');
  for (const typed of ['', 'ABCDEFG0', 'ABC', 'ABCDEFGHJ', 'ſbcdefgh', 'abcd\tefgh']) {
    assert.equal(campfire.parseCode(typed), null, JSON.stringify(typed));
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
  host.onMessage(slot, 'input', new Uint8Array([0xff, 0xff, 0xff]), 0);
  guest.onState('connected', 0);
  // Binary messages (the `binary` feature) cross as a data channel with
  // binaryType 'arraybuffer' hands them over; text stays text.
  const binary = { down: 0, up: 0 };
  /** @param {string|Uint8Array} data */
  const asReceived = (data) => (typeof data === 'string' ? data : data.slice().buffer);
  let t = 0;
  for (let step = 0; step < 400; step++) {
    t += 10;
    host.poll(t);
    for (const msg of host.output().send) {
      if (msg.data instanceof Uint8Array) binary.down += 1;
      if (msg.slots.includes(slot)) guest.onMessage(msg.channel, asReceived(msg.data), t);
    }
    guest.poll(t);
    for (const msg of guest.output().send) {
      if (msg.data instanceof Uint8Array) binary.up += 1;
      host.onMessage(slot, msg.channel, asReceived(msg.data), t);
    }
  }
  assert.ok(binary.down > 50 && binary.up > 10, JSON.stringify(binary));
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

