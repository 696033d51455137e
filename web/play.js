// The built-in browser guest (/play?code=...): joins through the lobby,
// speaks the guest side of the peer protocol with GuestSession, feeds it
// keyboard input, and draws the level top-down from SnapshotViewEngine.

import { LobbyClient, LobbyError, normalizeCode } from './lib/lobby-client.js';
import { GuestSession } from './lib/guest-session.js';
import { SnapshotViewEngine, TILE } from './lib/snapshot-view.js';
import { NEUTRAL_INPUT } from './lib/input.js';
import { displayNameOf, sanitizeDisplayName } from './lib/name.js';
import { DISCONNECT_GRACE_MS, TICK_RATE_HZ } from './lib/constants.js';

/** @param {string} name */
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';
const params = new URLSearchParams(window.location.search);
// `build` overrides the page's build identifier: for trying the version
// handshake against a host of another build.
const buildVersion = params.get('build') || meta('campfire-build');
const NAME_KEY = 'campfire.displayName';

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const statusEl = $('status');
const errorEl = $('error');
const canvas = /** @type {HTMLCanvasElement} */ ($('view'));
const dialog = /** @type {HTMLDialogElement} */ ($('leave-dialog'));

const engine = new SnapshotViewEngine();
/** @type {GuestSession|null} */
let session = null;
/** @type {RTCPeerConnection|null} */
let pc = null;
let rttMs = /** @type {number|null} */ (null);
let joinedCode = '';

/** @param {string} text */
function status(text) {
  statusEl.textContent = text;
}

/** @param {string} text */
function fail(text) {
  errorEl.textContent = text;
  status('Not connected.');
  document.body.dataset.state = 'error';
  $('join-form').hidden = false;
}

// ---- input ---------------------------------------------------------------

/** Keys held now, by KeyboardEvent.code. */
const held = new Set();
/** Keys pressed since the last sample: a tap between two ticks still counts. */
const tapped = new Set();
let weaponTap = /** @type {number|null} */ (null);
let escapeTap = false;

const BINDINGS = /** @type {Record<string, keyof typeof NEUTRAL_INPUT>} */ ({
  ArrowUp: 'moveForward', KeyW: 'moveForward',
  ArrowDown: 'moveBack', KeyS: 'moveBack',
  ArrowLeft: 'turnLeft', KeyA: 'turnLeft',
  ArrowRight: 'turnRight', KeyD: 'turnRight',
  Space: 'fire', KeyE: 'use',
});

/** @param {KeyboardEvent} ev */
function typingInForm(ev) {
  const t = /** @type {HTMLElement} */ (ev.target);
  return t instanceof HTMLInputElement || t instanceof HTMLButtonElement;
}

window.addEventListener('keydown', (ev) => {
  if (!session || session.phase !== 'running') return;
  if (ev.code === 'Escape') {
    ev.preventDefault();
    escapeTap = true;
    if (!dialog.open) dialog.showModal();
    return;
  }
  if (dialog.open || typingInForm(ev)) return;
  if (BINDINGS[ev.code]) {
    ev.preventDefault();
    held.add(ev.code);
    tapped.add(ev.code);
  } else if (/^Digit[1-6]$/.test(ev.code)) {
    weaponTap = Number(ev.code.slice(5)) - 1;
  }
});
window.addEventListener('keyup', (ev) => held.delete(ev.code));
window.addEventListener('blur', () => held.clear());

/** The local input now. Escape and blur are recorded as the browser
 * reported them; the library strips them before anything is sent. */
function sampleInput() {
  /** @type {any} */
  const input = { ...NEUTRAL_INPUT };
  if (!dialog.open) {
    for (const code of new Set([...held, ...tapped])) {
      const field = BINDINGS[code];
      if (field) input[field] = true;
    }
    input.weaponSelect = weaponTap;
  }
  input.escape = escapeTap;
  input.blur = !document.hasFocus();
  tapped.clear();
  weaponTap = null;
  escapeTap = false;
  return input;
}

dialog.addEventListener('close', () => {
  if (dialog.returnValue === 'leave' && session) {
    session.leave();
    window.location.assign('/');
  }
  held.clear();
  canvas.focus();
});

// ---- HUD -----------------------------------------------------------------

/** @param {string} id */
function nameOf(id) {
  const base = displayNameOf(id, session?.names[id]);
  return id === session?.me ? `${base} (you)` : base;
}

function renderRoster() {
  const ul = $('roster');
  ul.replaceChildren(...engine.roster().map((id) => {
    const li = document.createElement('li');
    li.dataset.player = id;
    const p = engine.players.get(id);
    li.textContent = `${nameOf(id)}${p && !p.alive ? ' — down' : ''}`;
    return li;
  }));
}

function renderHud() {
  $('hud-tick').textContent = String(engine.tick());
  $('hud-rtt').textContent = rttMs == null ? '—' : `${Math.round(rttMs)} ms`;
  const me = session?.me ? engine.players.get(session.me) : undefined;
  if (me) {
    $('hud-health').textContent = me.alive ? String(Math.ceil(me.health)) : 'down';
    const a = me.ammo;
    const pools = a ? Object.entries(a).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`) : [];
    $('hud-ammo').textContent = pools.length > 0 ? pools.join(', ') : a ? 'none' : '—';
    $('hud-keys').textContent = String(me.keysHeld);
  }
  const cd = $('hud-countdown');
  if (engine.countdown !== null) {
    cd.hidden = false;
    cd.textContent = `Level ends in about ${Math.ceil(engine.countdown / TICK_RATE_HZ)} s`;
  } else {
    cd.hidden = true;
  }
}

/** @param {import('./lib/guest-session.js').GuestEnd} end */
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
  status(reasons[end.reason] ?? `The session ended (${end.reason}).`);
  $('results').hidden = false;
  $('results-note').textContent = end.provisional
    ? 'Provisional: the host is gone, so these are this browser\'s last known values.'
    : 'Final, from the host.';
  const rows = end.scores.length > 0 ? end.scores : engine.roster().map((id) => {
    const p = engine.players.get(id);
    return { playerId: id, name: session?.names[id] ?? '', killScore: p?.killScore ?? 0, kills: p?.kills ?? 0, disconnected: false };
  });
  $('results-rows').replaceChildren(...rows.map((r) => {
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

const COLORS = {
  floor: '#2b2a33', wall: '#8a8796', door: '#b86f2c', secret: '#8a8796', exit: '#3fbf6f',
  pickup: '#5fb0ff', key: '#ffd447', drop: '#c78bff', mine: '#ff7a3d', enemy: '#ff4d4d', player: '#7fe0c0', me: '#ffffff',
};

function draw() {
  requestAnimationFrame(draw);
  if (!engine.map || !session?.me) return;
  const rect = canvas.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(rect.width * dpr));
  const h = Math.max(1, Math.round(rect.height * dpr));
  if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
  const { players, enemies } = engine.view(performance.now());
  const me = players.find((p) => p.id === session?.me);
  const scale = Math.max(8, Math.min(w, h) / 18);
  const cx = me ? me.x : engine.map.width / 2;
  const cy = me ? me.y : engine.map.height / 2;
  const sx = (/** @type {number} */ x) => (x - cx) * scale + w / 2;
  const sy = (/** @type {number} */ y) => (y - cy) * scale + h / 2;
  ctx.fillStyle = '#111';
  ctx.fillRect(0, 0, w, h);
  const x0 = Math.max(0, Math.floor(cx - w / 2 / scale) - 1);
  const x1 = Math.min(engine.map.width - 1, Math.ceil(cx + w / 2 / scale) + 1);
  const y0 = Math.max(0, Math.floor(cy - h / 2 / scale) - 1);
  const y1 = Math.min(engine.map.height - 1, Math.ceil(cy + h / 2 / scale) + 1);
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      const t = engine.tileAt(x, y);
      ctx.fillStyle = t === TILE.FLOOR ? COLORS.floor : t === TILE.DOOR ? COLORS.door
        : t === TILE.EXIT ? COLORS.exit : t === TILE.SECRET ? COLORS.secret : COLORS.wall;
      ctx.fillRect(sx(x), sy(y), scale + 0.5, scale + 0.5);
    }
  }
  const dot = (/** @type {number} */ x, /** @type {number} */ y, /** @type {number} */ r, /** @type {string} */ c) => {
    ctx.fillStyle = c;
    ctx.beginPath();
    ctx.arc(sx(x), sy(y), r * scale, 0, Math.PI * 2);
    ctx.fill();
  };
  engine.map.ammoPickups.forEach((p, i) => {
    if (!engine.pickupsCollected.has(i)) dot(p.position.x, p.position.y, 0.15, COLORS.pickup);
  });
  engine.map.keys.forEach((k, i) => {
    if (!engine.keysCollected.has(i)) dot(k.position.x, k.position.y, 0.2, COLORS.key);
  });
  for (const d of engine.lootDrops) dot(d.x, d.y, 0.15, d.kind === 'key' ? COLORS.key : COLORS.drop);
  engine.mines.forEach((m) => {
    const at = engine.map.mines[m.index];
    if (at && m.alive && m.visible) dot(at.x, at.y, 0.15, COLORS.mine);
  });
  for (const e of enemies) {
    if (e.alive) dot(e.x, e.y, 0.3, COLORS.enemy);
  }
  ctx.font = `${Math.max(11, scale * 0.45)}px system-ui, sans-serif`;
  ctx.textAlign = 'center';
  for (const p of players) {
    const mine = p.id === session.me;
    dot(p.x, p.y, 0.25, p.alive ? (mine ? COLORS.me : COLORS.player) : '#555');
    ctx.strokeStyle = mine ? COLORS.me : COLORS.player;
    ctx.lineWidth = Math.max(2, scale * 0.08);
    ctx.beginPath();
    ctx.moveTo(sx(p.x), sy(p.y));
    ctx.lineTo(sx(p.x + p.dirX * 0.6), sy(p.y + p.dirY * 0.6));
    ctx.stroke();
    ctx.fillStyle = '#eee';
    ctx.fillText(displayNameOf(p.id, session.names[p.id]), sx(p.x), sy(p.y) - scale * 0.4);
  }
  renderHud();
}

// ---- joining -------------------------------------------------------------

async function pollRtt() {
  if (!pc || session?.end) return;
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
        return e.message;
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
  status(`Joining session ${code}…`);
  const client = new LobbyClient('');
  let joined;
  try {
    joined = await client.join(code, { name });
  } catch (e) {
    fail(joinErrorText(e));
    return;
  }
  pc = joined.pc;
  status(`Connecting to "${joined.view.name}"…`);
  session = new GuestSession({
    engine, sampleInput, buildVersion, displayName: name,
    onEvent: (type, detail) => onSessionEvent(type, detail),
  });
  let channels;
  try {
    channels = await joined.channels;
  } catch (e) {
    pc.close();
    fail(joinErrorText(e));
    return;
  }
  session.attach({ input: channels.input, reconciliation: channels.reconciliation });
  setInterval(pollRtt, 1000);
}

/**
 * @param {string} type
 * @param {any} detail
 */
function onSessionEvent(type, detail) {
  switch (type) {
    case 'hello':
      status('Connected. Checking versions…');
      break;
    case 'init':
      status('Receiving the map…');
      break;
    case 'map-progress':
      status(`Receiving the map… (${detail.chunks} chunks)`);
      break;
    case 'ready':
      $('game').hidden = false;
      $('hud-difficulty').textContent = String(detail.difficulty);
      document.body.dataset.state = 'ready';
      status('Map received. Waiting for the host to start…');
      renderRoster();
      canvas.focus();
      break;
    case 'tick':
      if (detail.tick === 1) {
        status('Playing. Arrows or WASD to move, Space to fire, E to use, Esc to leave.');
        document.body.dataset.state = 'playing';
      }
      break;
    case 'snapshot':
      renderRoster();
      break;
    case 'roster-remove':
      status(`${detail.removed.map(nameOf).join(', ')} left the session.`);
      renderRoster();
      break;
    case 'level':
      status(`Level ${detail.levelIndex + 1}. Playing.`);
      renderRoster();
      break;
    case 'transition':
      status('Level complete! Loading the next level…');
      break;
    case 'host-lost':
      status(`Lost the host; waiting up to ${DISCONNECT_GRACE_MS / 1000} s for it to come back…`);
      break;
    case 'ended':
      showEnd(detail);
      break;
    default:
  }
}

/** What the browser tests read. */
window.campfire = {
  state() {
    const me = session?.me ?? null;
    const snap = engine.lastSnapshot;
    return {
      state: document.body.dataset.state ?? 'loading',
      phase: session?.phase ?? null,
      me,
      tick: engine.tick(),
      levelEpoch: session?.levelEpoch ?? 0,
      snapshotTick: snap ? snap.tick : null,
      snapshotPos: me && snap?.players?.[me] ? { x: snap.players[me].posX, y: snap.players[me].posY } : null,
      roster: engine.roster(),
      end: session?.end ?? null,
      error: errorEl.textContent,
      stats: session ? { ...session.stats } : null,
      visibility: document.visibilityState,
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
    status('Type a session code to join.');
    $('join-form').hidden = false;
    document.body.dataset.state = 'idle';
  }
}

main();
