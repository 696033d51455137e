// The browser guest (/play?code=...): joins through the lobby and runs the
// Rust guest session and engine in WebAssembly (web/lib/wasm.js), exactly
// the code host-daemon's guests run, driven by data-channel events
// (web/lib/guest-driver.js). Draws the engine's world in first person
// (web/lib/render/), with the top-down automap on Tab.
//
// Query parameters: code (the session), name (display name), build (override
// this page's build identifier, to try the version handshake), bot=1 (the
// engine's bot drives this player: testers and tests).

import { LobbyClient, LobbyError, normalizeCode } from './lib/lobby-client.js';
import { loadCampfire } from './lib/wasm.js';
import { GuestDriver } from './lib/guest-driver.js';
import { currentAmmo, renderFrame, tickAlpha } from './lib/render/index.js';
import { displayNameOf, sanitizeDisplayName } from './lib/name.js';
import { DISCONNECT_GRACE_MS } from './lib/constants.js';

/** @param {string} name */
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';
const params = new URLSearchParams(window.location.search);
const buildVersion = params.get('build') || meta('campfire-build');
const botDriven = params.get('bot') === '1';
const NAME_KEY = 'campfire.displayName';

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const statusEl = $('status');
const errorEl = $('error');
const canvas = /** @type {HTMLCanvasElement} */ ($('view'));
const dialog = /** @type {HTMLDialogElement} */ ($('leave-dialog'));

/** @type {GuestDriver|null} */
let driver = null;
/** @type {RTCPeerConnection|null} */
let pc = null;
/** @type {any} the session's latest status */
let status = null;
/** The two newest render views and when the newer arrived. */
let prevView = /** @type {any} */ (null);
let nextView = /** @type {any} */ (null);
let nextAt = 0;
let rttMs = /** @type {number|null} */ (null);
let joinedCode = '';
let mode = /** @type {'first-person'|'automap'} */ ('first-person');
let left = false;

/** @param {string} text */
function say(text) {
  statusEl.textContent = text;
}

/** @param {string} text */
function fail(text) {
  errorEl.textContent = text;
  say('Not connected.');
  document.body.dataset.state = 'error';
  $('join-form').hidden = false;
}

// ---- input ---------------------------------------------------------------

/** Keys held now, by KeyboardEvent.code. */
const held = new Set();
/** Keys pressed since the last applied tick: a tap between two ticks still counts. */
const tapped = new Set();
let weaponTap = /** @type {number|null} */ (null);
let mouseDx = 0;

const BINDINGS = /** @type {Record<string, string>} */ ({
  ArrowUp: 'moveForward', KeyW: 'moveForward',
  ArrowDown: 'moveBack', KeyS: 'moveBack',
  ArrowLeft: 'turnLeft', ArrowRight: 'turnRight',
  KeyA: 'strafeLeft', KeyD: 'strafeRight',
  Space: 'fire', KeyE: 'use',
});

/** @param {KeyboardEvent} ev */
function typingInForm(ev) {
  const t = /** @type {HTMLElement} */ (ev.target);
  return t instanceof HTMLInputElement || t instanceof HTMLButtonElement;
}

/** The local input now (the session sanitizes it before it is sent). */
function currentInput() {
  /** @type {Record<string, unknown>} */
  const input = {};
  if (!dialog.open) {
    for (const code of new Set([...held, ...tapped])) {
      const field = BINDINGS[code];
      if (field) input[field] = true;
    }
    if (weaponTap !== null) input.weaponSelect = weaponTap;
    input.mouseDeltaX = mouseDx;
  }
  return input;
}

function pushInput() {
  if (driver && !botDriven) driver.setInput(currentInput());
}

window.addEventListener('keydown', (ev) => {
  if (status?.phase !== 'running') return;
  if (ev.code === 'Escape') {
    ev.preventDefault();
    if (!dialog.open) dialog.showModal();
    return;
  }
  if (dialog.open || typingInForm(ev)) return;
  if (ev.code === 'Tab') {
    ev.preventDefault();
    mode = mode === 'automap' ? 'first-person' : 'automap';
    canvas.setAttribute('aria-label', mode === 'automap' ? 'Automap: the level from above' : 'First-person view of the level');
    return;
  }
  if (BINDINGS[ev.code]) {
    ev.preventDefault();
    held.add(ev.code);
    tapped.add(ev.code);
  } else if (/^Digit[1-6]$/.test(ev.code)) {
    weaponTap = Number(ev.code.slice(5)) - 1;
  } else {
    return;
  }
  pushInput();
});
window.addEventListener('keyup', (ev) => {
  if (held.delete(ev.code)) pushInput();
});
window.addEventListener('blur', () => {
  held.clear();
  pushInput();
});
canvas.addEventListener('click', () => {
  if (status?.phase === 'running' && document.pointerLockElement !== canvas) {
    canvas.requestPointerLock?.();
  }
});
document.addEventListener('mousemove', (ev) => {
  if (document.pointerLockElement !== canvas || dialog.open) return;
  mouseDx += ev.movementX;
  pushInput();
});

/** A tick was applied with the current input: taps and mouse motion are spent. */
function inputSpent() {
  if (tapped.size === 0 && weaponTap === null && mouseDx === 0) return;
  tapped.clear();
  weaponTap = null;
  mouseDx = 0;
  pushInput();
}

dialog.addEventListener('close', () => {
  if (dialog.returnValue === 'leave') {
    leave();
    window.location.assign('/');
  }
  held.clear();
  pushInput();
  canvas.focus();
});

function leave() {
  left = true;
  driver?.stop();
  pc?.close();
  showEnd({ kind: 'ended', reason: 'left', scores: [], provisional: true });
}

// ---- status and HUD --------------------------------------------------------

/** @param {string} id */
function nameOf(id) {
  const base = displayNameOf(id, status?.names?.[id]);
  return id === status?.me ? `${base} (you)` : base;
}

function renderRoster() {
  const players = new Map((nextView?.players ?? []).map((/** @type {any} */ p) => [p.id, p]));
  $('roster').replaceChildren(...(status?.roster ?? []).map((/** @type {string} */ id) => {
    const li = document.createElement('li');
    li.dataset.player = id;
    const p = players.get(id);
    li.textContent = `${nameOf(id)}${p && !p.alive ? ' — down' : ''}`;
    return li;
  }));
}

/** @param {any} s */
function onStatus(s) {
  const before = status;
  status = s;
  if (s.phase !== before?.phase || s.levelEpoch !== before?.levelEpoch) {
    switch (s.phase) {
      case 'await-init':
        say('Connected. Receiving the session…');
        break;
      case 'receiving-map':
        say('Receiving the map…');
        break;
      case 'running':
        $('game').hidden = false;
        $('hud-difficulty').textContent = String(s.difficulty ?? '—');
        if (document.body.dataset.state !== 'playing') {
          document.body.dataset.state = 'ready';
          say(s.levelEpoch > 1 ? `Level ${s.levelEpoch}. Playing.` : 'Map received. Waiting for the host to start…');
        }
        canvas.focus();
        break;
      default:
    }
  }
  if (s.hostLost && !before?.hostLost) {
    say(`Lost the host; waiting up to ${DISCONNECT_GRACE_MS / 1000} s for it to come back…`);
  }
  if (JSON.stringify(s.roster) !== JSON.stringify(before?.roster)) {
    const removed = s.levelEpoch === before?.levelEpoch
      ? (before?.roster ?? []).filter((/** @type {string} */ id) => !s.roster.includes(id))
      : [];
    if (removed.length > 0) say(`${removed.map(nameOf).join(', ')} left the session.`);
    renderRoster();
  }
  if (s.end && !left) showEnd(s.end);
}

/** @param {any} view */
function onTick(view) {
  if (nextView && view.tick === nextView.tick + 1) prevView = nextView;
  else prevView = null;
  nextView = view;
  nextAt = performance.now();
  $('hud-tick').textContent = String(view.tick);
  if (view.tick > 0 && document.body.dataset.state === 'ready') {
    document.body.dataset.state = 'playing';
    say('Playing. WASD or arrows to move, mouse (click the view) or arrows to turn, Space to fire, E to use, Tab for the map, Esc to leave.');
  }
  inputSpent();
}

/** @param {any} end */
function showEnd(end) {
  document.body.dataset.state = 'ended';
  if (end.kind === 'refused') {
    if (end.reason === 'version-mismatch') {
      fail(`Version mismatch: this page runs build ${buildVersion}, but the host runs build `
        + `${end.hostBuild ?? 'unknown'}. Reload the page to get the server's current version, or join a session of your build.`);
    } else if (end.reason === 'session-started') {
      fail('This session has already started; nobody more can join it. Pick another one in the lobby.');
    } else {
      fail(`The host refused the join: ${end.detail || end.reason}.`);
    }
    return;
  }
  if (end.kind === 'setup-failed') {
    fail(`Setting up the session failed: ${end.detail}`);
    return;
  }
  const reasons = /** @type {Record<string, string>} */ ({
    completed: 'The campaign is complete.',
    'team-eliminated': 'Everybody is down: the run is over.',
    'host-disconnected': 'The host disconnected — session ended.',
    'level-transition-failed': 'This client could not follow the level change — session ended.',
    'host-shutdown': 'The host shut the session down.',
    left: 'You left the session.',
  });
  say(reasons[end.reason] ?? `The session ended (${end.reason}).`);
  if (document.pointerLockElement) document.exitPointerLock();
  $('results').hidden = false;
  $('results-note').textContent = end.provisional
    ? 'Provisional: the host is gone, so these are this browser\'s last known values.'
    : 'Final, from the host.';
  const rows = end.scores.length > 0 ? end.scores : (nextView?.players ?? []).map((/** @type {any} */ p) => (
    { playerId: p.id, name: p.name, killScore: p.score, kills: p.kills, disconnected: false }));
  $('results-rows').replaceChildren(...rows.map((/** @type {any} */ r) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = nameOf(r.playerId);
    const td = (/** @type {string} */ t) => { const c = document.createElement('td'); c.textContent = t; return c; };
    tr.append(th, td(String(r.killScore)), td(String(r.kills)), td(r.disconnected ? 'disconnected' : ''));
    return tr;
  }));
}

// ---- drawing -------------------------------------------------------------

function draw() {
  requestAnimationFrame(draw);
  if (!nextView || $('game').hidden) return;
  const rect = canvas.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(rect.width * dpr));
  const h = Math.max(1, Math.round(rect.height * dpr));
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d', { alpha: false }));
  renderFrame(ctx, {
    prev: prevView,
    next: nextView,
    alpha: tickAlpha(performance.now(), nextAt),
    me: status?.me ?? undefined,
    rttMs,
    mode,
    width: w,
    height: h,
    pixelRatio: dpr,
  });
  const me = nextView.players.find((/** @type {any} */ p) => p.id === status?.me);
  if (me) {
    $('hud-health').textContent = me.alive ? String(Math.ceil(me.health)) : 'down';
    const ammo = currentAmmo(me);
    $('hud-ammo').textContent = ammo ? `${ammo.count} ${ammo.pool} (${me.weaponName})` : me.weaponName;
    $('hud-keys').textContent = String(me.keys);
  }
  $('hud-rtt').textContent = rttMs == null ? '—' : `${Math.round(rttMs)} ms`;
}

// ---- joining -------------------------------------------------------------

async function pollRtt() {
  if (!pc || status?.end) return;
  try {
    const stats = await pc.getStats();
    stats.forEach((s) => {
      if (s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded' && typeof s.currentRoundTripTime === 'number') {
        rttMs = s.currentRoundTripTime * 1000;
      }
    });
  } catch {
    // Stats are best effort.
  }
}

/** @param {unknown} e */
function joinErrorText(e) {
  if (e instanceof LobbyError) {
    switch (e.code) {
      case 'no_such_session':
        return `No session has the code ${joinedCode}. Check the code: the session may have ended or expired.`;
      case 'invalid_code':
      case 'no_open_round':
        return e.message;
      case 'rate_limited':
        return 'Too many attempts from this address: wait a minute, then try again.';
      case 'connect_timeout':
      case 'ice_gathering_timeout':
        return `Could not connect to the host: ${e.message}.`;
      case 'unreachable':
        return 'The lobby server cannot be reached. Check your connection and reload.';
      default:
        return `Joining failed: ${e.message}`;
    }
  }
  return `Joining failed: ${e instanceof Error ? e.message : String(e)}`;
}

/**
 * @param {string} typed
 * @param {string} name
 */
async function join(typed, name) {
  errorEl.textContent = '';
  $('join-form').hidden = true;
  document.body.dataset.state = 'joining';
  const code = normalizeCode(typed);
  joinedCode = code ?? typed;
  if (!code) {
    fail(`"${typed}" is not a session code: codes have 8 letters and digits, like ABCD-EFGH.`);
    return;
  }
  $('session-title').textContent = `— session ${code}`;
  say(`Joining session ${code}…`);
  const campfire = loadCampfire();
  const client = new LobbyClient('');
  let joined;
  try {
    joined = await client.join(code, { name });
  } catch (e) {
    fail(joinErrorText(e));
    return;
  }
  pc = joined.pc;
  say(`Connecting to "${joined.view.name}"…`);
  let guest;
  try {
    guest = (await campfire).guest({ displayName: name, buildVersion, bot: botDriven });
  } catch (e) {
    pc.close();
    fail(`This browser could not start the game engine (WebAssembly): ${e instanceof Error ? e.message : e}`);
    return;
  }
  let channels;
  try {
    channels = await joined.channels;
  } catch (e) {
    pc.close();
    fail(joinErrorText(e));
    return;
  }
  driver = new GuestDriver(guest, { input: channels.input, reconciliation: channels.reconciliation }, pc, {
    onStatus,
    onTick,
    onDiagnostic: (d) => console.debug(`campfire session: ${d}`),
  });
  status = driver.status;
  say('Connected. Checking versions…');
  driver.attach();
  pushInput();
  setInterval(pollRtt, 1000);
}

/** What the browser tests read. */
/** @type {any} */ (window).campfire = {
  state() {
    const me = status?.me ?? null;
    const mine = me ? nextView?.players.find((/** @type {any} */ p) => p.id === me) : null;
    return {
      state: document.body.dataset.state ?? 'loading',
      phase: status?.phase ?? null,
      me,
      tick: status?.tick ?? 0,
      levelEpoch: status?.levelEpoch ?? 0,
      snapshotTick: status?.lastSnapshotTick ?? null,
      pos: mine ? { x: mine.x, y: mine.y } : null,
      roster: status?.roster ?? [],
      end: left ? { kind: 'ended', reason: 'left', scores: [], provisional: true } : status?.end ?? null,
      error: errorEl.textContent,
      stats: status ? { ...status.stats } : null,
      visibility: document.visibilityState,
      mode,
      rttMs,
    };
  },
};

function main() {
  const nameInput = /** @type {HTMLInputElement} */ ($('player-name'));
  const codeInput = /** @type {HTMLInputElement} */ ($('join-code'));
  const savedName = sanitizeDisplayName(localStorage.getItem(NAME_KEY) ?? '');
  nameInput.value = savedName;
  $('join-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const name = sanitizeDisplayName(nameInput.value);
    localStorage.setItem(NAME_KEY, name);
    const url = new URL(window.location.href);
    url.searchParams.set('code', codeInput.value.trim());
    window.location.assign(url.toString());
  });
  requestAnimationFrame(draw);
  const code = params.get('code');
  if (code) {
    codeInput.value = code;
    join(code, params.get('name') ?? savedName);
  } else {
    say('Type a session code to join.');
    $('join-form').hidden = false;
    document.body.dataset.state = 'idle';
  }
}

main();
