// The browser host (/host): a player hosts a game from the lobby page. The
// host session (netcode's HostSession in WebAssembly, the daemon's host
// code) runs in a dedicated worker that paces the ticks; this page owns the
// lobby lifecycle and the guests' connections (web/lib/browser-host.js) and
// shows the host's player the same first-person view as every guest.
//
// Scripted runs (testers, tests): /host?name=N opens the session at once,
// with levels=L, seed=S, startWhen=G (start on its own once G guests are
// in), bot=1 (the engine's bot drives the host's player), hostName,
// maxPlayers, difficulty and public=0 as further options.

import { LobbyClient, LobbyError } from './lib/lobby-client.js';
import { SESSION_NAME_MAX_CHARS } from './lib/facts.js';
import { BrowserHost } from './lib/browser-host.js';
import { GameScreen } from './lib/game-screen.js';
import { displayNameOf } from './lib/name.js';
import { gameControls } from './lib/game-tools.js';

/** @param {string} name */
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';
const params = new URLSearchParams(window.location.search);
const buildVersion = meta('campfire-build');
const botDriven = params.get('bot') === '1';
const NAME_KEY = 'campfire.displayName';
const CAMPAIGN = 'generated';

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const statusEl = $('status');
const errorEl = $('error');
const canvas = /** @type {HTMLCanvasElement} */ ($('view'));
const dialog = /** @type {HTMLDialogElement} */ ($('leave-dialog'));
const form = /** @type {HTMLFormElement} */ ($('host-form'));

/** @type {BrowserHost|null} */
let host = null;
/** @type {any} the session's latest status */
let status = null;
/** @type {any} the worker loop's cost so far */
let cost = null;
let code = '';

/** @param {string} text */
function say(text) {
  statusEl.textContent = text;
}

/** @param {string} text */
function fail(text) {
  errorEl.textContent = text;
  document.body.dataset.state = 'error';
}

/** @param {string} id */
function nameOf(id) {
  const base = displayNameOf(id, status?.names?.[id]);
  return id === status?.me ? `${base} (you, host)` : base;
}

/** The HUD's RTT on the host: the slowest guest's measured round trip. */
function slowestGuestRttMs() {
  const rtts = (status?.guestRttMs ?? []).filter((/** @type {number|null} */ r) => r != null);
  return rtts.length > 0 ? Math.max(...rtts) : null;
}

const screen = new GameScreen({
  me: () => status?.me,
  nameOf,
  rttMs: slowestGuestRttMs,
  onSounds: (events, listener) => tools.playSounds(events, listener),
});
$('host-note').hidden = false;
$('keys-escape').textContent = 'end the session';
const { controls, tools } = gameControls(canvas, screen, dialog, {
  active: () => status?.phase === 'running',
  onInput: (input) => {
    if (host && !botDriven) host.setInput(input);
  },
  code: () => code,
  netgraph: () => ({ role: 'host', fps: screen.frames.fps(performance.now()), rttMs: null, host: host?.netgraph ?? null }),
});

dialog.addEventListener('close', () => {
  if (dialog.returnValue === 'leave') host?.shutdown();
  controls.release();
  canvas.focus();
});

// ---- the session ---------------------------------------------------------

/**
 * @param {number} value
 * @param {number} lo
 * @param {number} hi
 * @param {number} fallback
 */
function clampInt(value, lo, hi, fallback) {
  return Number.isInteger(value) ? Math.min(hi, Math.max(lo, value)) : fallback;
}

/**
 * The session's name when the host left it empty: the host's, or a plain one.
 * @param {string} hostName
 */
function defaultSessionName(hostName) {
  return hostName ? `${hostName}'s game` : 'Co-op game';
}

/** The settings from the form, or from the query string of a scripted run. */
function settings() {
  const num = (/** @type {string} */ id) => Number(/** @type {HTMLInputElement} */ ($(id)).value);
  const scripted = params.has('name');
  const q = (/** @type {string} */ k) => params.get(k);
  const seedParam = Number(q('seed'));
  const startWhen = q('startWhen') === null ? null : clampInt(Number(q('startWhen')), 1, 15, 1);
  return {
    // The lobby's limit, in code points (a string's slice counts UTF-16 units).
    name: [...(scripted ? q('name') ?? '' : /** @type {HTMLInputElement} */ ($('session-name')).value).trim()]
      .slice(0, SESSION_NAME_MAX_CHARS).join(''),
    hostName: (scripted ? q('hostName') ?? 'Host' : /** @type {HTMLInputElement} */ ($('player-name')).value).trim(),
    maxPlayers: clampInt(scripted ? Number(q('maxPlayers') ?? 4) : num('max-players'), 2, 16, 4),
    difficulty: (scripted ? q('difficulty') : /** @type {HTMLSelectElement} */ ($('difficulty')).value) || 'normal',
    levels: clampInt(scripted ? Number(q('levels') ?? 1) : num('levels'), 1, 50, 1),
    public: scripted ? q('public') !== '0'
      : /** @type {HTMLInputElement} */ (form.querySelector('input[name="visibility"]:checked'))?.value !== 'private',
    seed: Number.isInteger(seedParam) && seedParam > 0 && seedParam < 2 ** 32
      ? seedParam : crypto.getRandomValues(new Uint32Array(1))[0],
    startWhen,
    lateJoin: scripted ? q('lateJoin') !== '0'
      : /** @type {HTMLInputElement} */ ($('late-join')).checked,
    maxSpectators: clampInt(scripted ? Number(q('maxSpectators') ?? 8) : num('max-spectators'), 0, 16, 8),
  };
}

/** The settings of the session this page opened. @type {ReturnType<typeof settings>|null} */
let hostSettings = null;

async function open() {
  const s = settings();
  hostSettings = s;
  const name = s.name || defaultSessionName(s.hostName);
  errorEl.textContent = '';
  form.hidden = true;
  document.body.dataset.state = 'opening';
  say('Opening the session…');
  host = new BrowserHost(new LobbyClient(''), {
    seed: s.seed,
    levels: s.levels,
    displayName: s.hostName,
    bot: botDriven,
    difficulty: s.difficulty,
    startWhen: s.startWhen,
    lateJoin: s.lateJoin,
    maxGuests: s.maxPlayers - 1,
    maxSpectators: s.maxSpectators,
    buildVersion,
  }, {
    name,
    public: s.public,
    maxPlayers: s.maxPlayers,
    build: buildVersion,
    campaign: CAMPAIGN,
  }, {
    onStatus,
    onView: (view) => {
      screen.onView(view);
      controls.spent();
    },
    onReport: (report) => console.info(`campfire session-report ${JSON.stringify({ code, ...report })}`),
    onDiagnostic: (d) => console.debug(`campfire host: ${d}`),
    onLobbyError: (e) => say(e instanceof LobbyError && e.code === 'session_ended'
      ? 'A moderator of this lobby ended this session: it is no longer listed or joinable. Players already in keep playing.'
      : `The lobby lost this session (${e.message}); players already in keep playing.`),
  });
  try {
    const hosted = await host.open();
    code = hosted.code;
  } catch (e) {
    fail(`Could not open the session: ${e instanceof Error ? e.message : e}`);
    form.hidden = false;
    host = null;
    return;
  }
  $('session-title').textContent = `— session ${code}`;
  $('session-code').textContent = code;
  $('join-link').setAttribute('href', `/play?code=${encodeURIComponent(code)}`);
  $('hud-difficulty').textContent = s.difficulty;
  $('waiting').hidden = false;
  tools?.showInvite(true);
  document.body.dataset.state = 'waiting';
  say(s.startWhen ? `Session ${code} is open; it starts once ${s.startWhen} ${s.startWhen === 1 ? 'player has' : 'players have'} joined.`
    : `Session ${code} is open. Press Start when everybody is in.`);
  if (!botDriven) controls.push();
}

/**
 * @param {any} s
 * @param {any} c
 */
function onStatus(s, c) {
  const before = status;
  status = s;
  cost = c;
  if (before && before.levelEpoch > 0 && s.levelEpoch > before.levelEpoch) {
    tools?.playSounds([{ name: 'level-end', x: 0, y: 0 }], null);
  }
  if (s.phase === 'lobby') {
    // Counted as the guests' waiting room counts: the host's own player too.
    const n = s.guestsPresent + 1;
    const max = hostSettings?.maxPlayers ?? n;
    const left = Math.max(0, max - n);
    $('waiting-count').textContent = `${n} of ${max} ${max === 1 ? 'player is' : 'players are'} in: ${left} ${left === 1 ? 'seat' : 'seats'} left.`;
    const me = document.createElement('li');
    me.dataset.you = 'true';
    me.textContent = `${hostSettings?.hostName || 'Player (no name)'} (you)`;
    $('waiting-roster').replaceChildren(me, ...s.guestNames.map((/** @type {string} */ name, /** @type {number} */ i) => {
      const li = document.createElement('li');
      const rtt = s.guestRttMs?.[i];
      li.textContent = (name || 'Player (no name)') + (rtt == null ? '' : ` (${Math.round(rtt)} ms)`);
      return li;
    }));
  }
  if (s.phase !== before?.phase || s.levelEpoch !== before?.levelEpoch) {
    if (s.phase === 'setup') say('Sending the map to the players…');
    if (s.phase === 'running') {
      $('waiting').hidden = true;
      $('game').hidden = false;
      document.body.classList.add('in-game');
      document.body.dataset.state = 'playing';
      say(s.levelEpoch > 1 ? `Level ${s.levelEpoch} of ${s.levelCount}.`
        : `Playing. ${tools?.howToPlay('end the session') ?? ''}`);
      canvas.focus();
    }
    if (s.phase === 'transition') say('Level complete. Waiting for every player to load the next one…');
  }
  if (JSON.stringify(s.roster) !== JSON.stringify(before?.roster)) screen.renderRoster(s.roster, s.names);
  if (JSON.stringify(s.spectators) !== JSON.stringify(before?.spectators)) {
    const names = /** @type {string[]} */ (s.spectators ?? []);
    const text = names.length === 0 ? ''
      : `Watching: ${names.map((n) => n || 'a spectator (no name)').join(', ')}`;
    for (const id of ['spectators', 'waiting-spectators']) {
      $(id).textContent = text;
      $(id).hidden = names.length === 0;
    }
  }
  if (s.end && !before?.end) showEnd(s.end);
}

/** @param {any} end */
function showEnd(end) {
  document.body.classList.remove('in-game');
  tools?.playSounds([{ name: 'level-end', x: 0, y: 0 }], null);
  document.body.dataset.state = 'ended';
  $('waiting').hidden = true;
  const reasons = /** @type {Record<string, string>} */ ({
    completed: 'The campaign is complete.',
    'team-eliminated': 'Everybody is down: the run is over.',
    'host-shutdown': 'You ended the session.',
  });
  say(reasons[end.reason] ?? `The session ended (${end.reason}).`);
  screen.showResults({ scores: end.scores }, 'Final: this browser was the host.');
  if (hostSettings) {
    const again = $('play-again');
    again.hidden = false;
    again.onclick = () => window.location.assign(againUrl(hostSettings));
  }
}

/**
 * This page opening a new session with the same settings (a new seed).
 * @param {ReturnType<typeof settings>} s
 */
function againUrl(s) {
  const url = new URL('/host', window.location.href);
  const set = (/** @type {string} */ k, /** @type {string} */ v) => url.searchParams.set(k, v);
  set('name', s.name);
  set('hostName', s.hostName);
  set('maxPlayers', String(s.maxPlayers));
  set('difficulty', s.difficulty);
  set('levels', String(s.levels));
  if (!s.public) set('public', '0');
  if (s.startWhen !== null) set('startWhen', String(s.startWhen));
  if (!s.lateJoin) set('lateJoin', '0');
  set('maxSpectators', String(s.maxSpectators));
  if (botDriven) set('bot', '1');
  return url.toString();
}

$('start-button').addEventListener('click', () => host?.start());
$('cancel-button').addEventListener('click', () => host?.shutdown());

/** What the browser tests read. */
/** @type {any} */ (window).campfire = {
  state() {
    const mine = screen.mine();
    return {
      state: document.body.dataset.state ?? 'loading',
      code,
      phase: status?.phase ?? null,
      me: status?.me ?? null,
      tick: status?.tick ?? 0,
      ticks: status?.ticks ?? 0,
      levelEpoch: status?.levelEpoch ?? 0,
      roster: status?.roster ?? [],
      guestsPresent: status?.guestsPresent ?? 0,
      guestNames: status?.guestNames ?? [],
      guestRttMs: status?.guestRttMs ?? [],
      spectators: status?.spectators ?? [],
      pos: mine ? { x: mine.x, y: mine.y } : null,
      end: status?.end ?? null,
      report: host?.report ?? null,
      cost,
      error: errorEl.textContent,
      visibility: document.visibilityState,
      mode: screen.mode,
      audio: tools?.audioState() ?? null,
      netgraph: { visible: tools.netgraph.visible, shown: tools.netgraph.shown },
    };
  },
};

function main() {
  const nameInput = /** @type {HTMLInputElement} */ ($('player-name'));
  nameInput.value = localStorage.getItem(NAME_KEY) ?? '';
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    localStorage.setItem(NAME_KEY, nameInput.value.trim());
    open();
  });
  screen.start();
  if (params.has('name')) {
    open();
  } else {
    say('Set up your session, then open it: friends join from the lobby or with its code.');
    form.hidden = false;
    document.body.dataset.state = 'idle';
  }
}

main();
