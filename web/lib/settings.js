// The player's settings on the game pages (/play and /host), kept in
// localStorage under one key: mouse sensitivity and invert, volume and
// mute, and the key bindings. A stored value that is missing, of the wrong
// type or out of range falls back to its default, so a hand-edited or old
// entry never breaks a page.

/** The localStorage key. */
export const SETTINGS_KEY = 'campfire.settings';

/**
 * The actions a key can be bound to: the engine's held inputs, then the
 * page's own (automap, fullscreen, mute).
 */
export const ACTIONS = /** @type {const} */ ([
  ['moveForward', 'Walk forward'],
  ['moveBack', 'Walk back'],
  ['turnLeft', 'Turn left'],
  ['turnRight', 'Turn right'],
  ['strafeLeft', 'Step left'],
  ['strafeRight', 'Step right'],
  ['fire', 'Fire'],
  ['use', 'Use (doors, switches)'],
  ['map', 'Automap'],
  ['fullscreen', 'Fullscreen'],
  ['mute', 'Mute'],
]);

/** Actions the engine reads as held inputs (the rest are the page's). */
export const HELD_ACTIONS = new Set(['moveForward', 'moveBack', 'turnLeft', 'turnRight',
  'strafeLeft', 'strafeRight', 'fire', 'use']);

/** @typedef {Record<string, string[]>} Bindings action -> KeyboardEvent.code list */

/** @returns {Bindings} */
export function defaultBindings() {
  return {
    moveForward: ['KeyW', 'ArrowUp'],
    moveBack: ['KeyS', 'ArrowDown'],
    turnLeft: ['ArrowLeft'],
    turnRight: ['ArrowRight'],
    strafeLeft: ['KeyA'],
    strafeRight: ['KeyD'],
    fire: ['Space'],
    use: ['KeyE'],
    map: ['Tab'],
    fullscreen: ['KeyF'],
    mute: ['KeyM'],
  };
}

/** The keys that toggle the netgraph (seed 001's F3 and backquote). */
export const NETGRAPH_KEYS = new Set(['F3', 'Backquote']);

/** Keys no binding may take: Escape opens the leave prompt, digits pick weapons, F3 and ` the netgraph. */
export function reservedKey(/** @type {string} */ code) {
  return code === 'Escape' || /^Digit[0-9]$/.test(code) || NETGRAPH_KEYS.has(code);
}

/**
 * @typedef {Object} Settings
 * @property {number} sensitivity mouse turn per pixel, as a multiple of the engine's
 * @property {boolean} invert mouse and right stick turn the other way
 * @property {number} volume 0..1
 * @property {number} viewScale the view's internal resolution, as a share of the screen's (lower is faster)
 * @property {boolean} muted
 * @property {boolean} netgraph the netgraph overlay is shown (F3 or the backquote key)
 * @property {Bindings} bindings
 */

export const SENSITIVITY = { min: 0.25, max: 4 };

/** View quality choices: internal resolution as a share of the screen's. */
export const VIEW_SCALES = /** @type {const} */ ([[1, 'Full'], [0.75, 'Balanced'], [0.5, 'Fast'], [0.35, 'Fastest']]);

/** @returns {Settings} */
export function defaultSettings() {
  return {
    sensitivity: 1, invert: false, volume: 0.8, muted: false, viewScale: 1, netgraph: false, bindings: defaultBindings(),
  };
}

/**
 * `raw` (anything parsed from storage) as settings: every field checked.
 * @param {unknown} raw
 * @returns {Settings}
 */
export function normalizeSettings(raw) {
  const s = defaultSettings();
  if (!raw || typeof raw !== 'object') return s;
  const r = /** @type {Record<string, unknown>} */ (raw);
  const num = (/** @type {unknown} */ v, /** @type {number} */ lo, /** @type {number} */ hi) =>
    typeof v === 'number' && Number.isFinite(v) && v >= lo && v <= hi ? v : null;
  s.sensitivity = num(r.sensitivity, SENSITIVITY.min, SENSITIVITY.max) ?? s.sensitivity;
  s.volume = num(r.volume, 0, 1) ?? s.volume;
  if (VIEW_SCALES.some(([v]) => v === r.viewScale)) s.viewScale = /** @type {number} */ (r.viewScale);
  if (typeof r.invert === 'boolean') s.invert = r.invert;
  if (typeof r.muted === 'boolean') s.muted = r.muted;
  if (typeof r.netgraph === 'boolean') s.netgraph = r.netgraph;
  if (r.bindings && typeof r.bindings === 'object') {
    const taken = new Set();
    const stored = /** @type {Record<string, unknown>} */ (r.bindings);
    for (const [action] of ACTIONS) {
      const codes = stored[action];
      if (!Array.isArray(codes)) continue;
      const ok = codes.filter((c) => typeof c === 'string' && /^[A-Za-z0-9]{1,24}$/.test(c) && !reservedKey(c))
        .slice(0, 3);
      s.bindings[action] = ok;
    }
    // One key, one action: a key bound twice keeps its first action.
    for (const [action] of ACTIONS) {
      s.bindings[action] = s.bindings[action].filter((c) => !taken.has(c) && taken.add(c));
    }
  }
  return s;
}

/**
 * The stored settings.
 * @param {Storage} [storage]
 * @returns {Settings}
 */
export function loadSettings(storage = localStorage) {
  try {
    return normalizeSettings(JSON.parse(storage.getItem(SETTINGS_KEY) ?? 'null'));
  } catch {
    return defaultSettings();
  }
}

/**
 * @param {Settings} settings
 * @param {Storage} [storage]
 */
export function saveSettings(settings, storage = localStorage) {
  storage.setItem(SETTINGS_KEY, JSON.stringify(normalizeSettings(settings)));
}

/**
 * `bindings` turned around: which action each key does.
 * @param {Bindings} bindings
 * @returns {Map<string, string>}
 */
export function actionsByKey(bindings) {
  const byKey = new Map();
  for (const [action] of ACTIONS) {
    for (const code of bindings[action] ?? []) if (!byKey.has(code)) byKey.set(code, action);
  }
  return byKey;
}

/**
 * `bindings` with `code` as the only key of `action` (taken from any other action).
 * @param {Bindings} bindings
 * @param {string} action
 * @param {string} code
 * @returns {Bindings}
 */
export function rebind(bindings, action, code) {
  /** @type {Bindings} */
  const out = {};
  for (const [a] of ACTIONS) out[a] = (bindings[a] ?? []).filter((c) => c !== code);
  out[action] = [code];
  return out;
}

const ARROWS = /** @type {Record<string, string>} */ ({ ArrowUp: '↑', ArrowDown: '↓', ArrowLeft: '←', ArrowRight: '→' });

/** A key's name as a player reads it ("KeyW" -> "W", "ArrowUp" -> "↑"). */
export function keyLabel(/** @type {string} */ code) {
  return ARROWS[code] ?? code.replace(/^Key/, '');
}
