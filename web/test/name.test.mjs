import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DISPLAY_NAME_MAX_CHARS, displayNameOf, sanitizeDisplayName, sanitizeLabel } from '../lib/name.js';

// The same cases as protocol/src/name.rs.
test('strips controls and bidi tricks, collapses whitespace', () => {
  assert.equal(sanitizeDisplayName('  Ada\u0007\n  Lovelace\t'), 'Ada Lovelace');
  assert.equal(sanitizeDisplayName('\u202Eevil'), 'evil');
  assert.equal(sanitizeDisplayName('\u0000\u001b'), '');
  assert.equal(sanitizeDisplayName('a\u0085b'), 'a b');
  assert.equal(sanitizeDisplayName('zero\u200bwidth\ufeff'), 'zerowidth');
});

test('caps the length in characters, not UTF-16 units', () => {
  assert.equal([...sanitizeDisplayName('é'.repeat(100))].length, DISPLAY_NAME_MAX_CHARS);
  assert.equal([...sanitizeDisplayName('🔥'.repeat(40))].length, DISPLAY_NAME_MAX_CHARS);
  // A space is never the last character.
  assert.equal(sanitizeLabel('abc def', 4), 'abc');
});

test('output is clean, bounded and idempotent', () => {
  const samples = ['', ' ', '\t\t', 'a  b', ' x\u202a y ', '\u0001'.repeat(10), 'long '.repeat(30), 'ümlaut\r\nname'];
  for (const raw of samples) {
    for (const max of [1, 5, 32]) {
      const once = sanitizeLabel(raw, max);
      assert.ok([...once].length <= max);
      assert.equal(once, once.trim());
      assert.ok(!/\p{Cc}/u.test(once));
      assert.equal(sanitizeLabel(once, max), once);
    }
  }
});

test('a player who chose no name gets the id-based fallback', () => {
  assert.equal(displayNameOf('guest-2', ''), 'Guest-2');
  assert.equal(displayNameOf('host', undefined), 'Host');
  assert.equal(displayNameOf('guest-1', ' Ada '), 'Ada');
});
