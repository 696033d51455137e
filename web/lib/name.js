// Display-name sanitizing, the same rule as protocol/src/name.rs: control
// and bidi-override characters stripped, whitespace runs collapsed to one
// space, ends trimmed, length capped in characters (code points). An empty
// result means "unnamed".

/** Longest player display name, in characters. */
export const DISPLAY_NAME_MAX_CHARS = 32;

// Rust's char::is_whitespace (White_Space), spelled out: JavaScript's \s
// differs (it lacks U+0085 and includes U+FEFF).
const WHITESPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/u;
// Characters that reorder text on screen or hide in it.
const FORMAT_TRICK = /^[\u202a-\u202e\u2066-\u2069\u200b-\u200f\ufeff]$/u;
const CONTROL = /^\p{Cc}$/u;

/**
 * Returns `raw` cleaned and capped at `maxChars` characters.
 * @param {string} raw
 * @param {number} maxChars
 * @returns {string}
 */
export function sanitizeLabel(raw, maxChars) {
  let out = '';
  let count = 0;
  let pendingSpace = false;
  for (const c of String(raw ?? '')) {
    if (WHITESPACE.test(c)) {
      pendingSpace = count > 0;
      continue;
    }
    if (CONTROL.test(c) || FORMAT_TRICK.test(c)) continue;
    if (pendingSpace) {
      if (count + 1 >= maxChars) break;
      out += ' ';
      count += 1;
      pendingSpace = false;
    }
    if (count >= maxChars) break;
    out += c;
    count += 1;
  }
  return out;
}

/**
 * Sanitizes a player's display name.
 * @param {string} raw
 */
export function sanitizeDisplayName(raw) {
  return sanitizeLabel(raw, DISPLAY_NAME_MAX_CHARS);
}

/**
 * The name to show for a player: the sanitized name, or a fallback from the
 * id when the player chose none (applied once, where a name is shown).
 * @param {string} playerId
 * @param {string|undefined} name
 */
export function displayNameOf(playerId, name) {
  const clean = sanitizeDisplayName(name ?? '');
  if (clean) return clean;
  if (playerId === 'host') return 'Host';
  const m = /^guest-(\d+)$/.exec(playerId);
  if (m) return `Guest-${m[1]}`;
  return playerId;
}
