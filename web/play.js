// The browser guest (/play?code=...): joins through the lobby and runs the
// Rust guest session and engine in WebAssembly (web/lib/wasm.js), exactly
// the code host-daemon's guests run, driven by data-channel events
// (web/lib/guest-driver.js). Draws the engine's world in first person
// (web/lib/render/), with the top-down automap on Tab.
//
// Query parameters: code (the session), name (display name), build (override
// this page's build identifier, to try the version handshake), bot=1 (the
// engine's bot drives this player: testers and tests), spectate=1 (watch:
// no seat, no input; ←/→ or [/] cycle whose first-person view is shown,
// Tab for the automap), replay=URL (watch a replay file instead of a
// session; tick=N goes to tick N and pauses there: a desync warning names
// its tick). A replay file dropped on the page, or picked in its form,
// plays too (web/lib/replay-page.js).

import { LobbyClient, LobbyError } from './lib/lobby-client.js';
import { loadCampfire } from './lib/wasm.js';
import { GuestDriver } from './lib/guest-driver.js';
import { GameScreen } from './lib/game-screen.js';
import { displayNameOf } from './lib/name.js';
import { DISCONNECT_GRACE_MS } from './lib/facts.js';
import { ReplayPage } from './lib/replay-page.js';
import { gameControls } from './lib/game-tools.js';
import { openReport } from './lib/report-dialog.js';

/** @param {string} name */
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';
const params = new URLSearchParams(window.location.search);
const buildVersion = params.get('build') || meta('campfire-build');
const spectating = params.get('spectate') === '1';
const botDriven = params.get('bot') === '1' && !spectating;
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
/** The lobby's view of the session joined. @type {import('./lib/lobby-client.js').SessionView|null} */
let joinedView = null;
/** @type {any} the session's latest status */
let status = null;
let rttMs = /** @type {number|null} */ (null);
let joinedCode = '';
let left = false;
/** A spectator: the player whose view is shown. @type {string|null} */
let watched = null;
/** What this page joined with: a rejoin uses it again. @type {{code: string, name: string}|null} */
let joinedAs = null;
/**
 * The one automatic rejoin: `none` yet, `trying`, `done` (a fresh
 * connection took the player over) or `failed`.
 */
let rejoin = 'none';
/** A pause between lobby requests while it cannot be reached, ms. */
const REJOIN_RETRY_MS = 500;

/** @param {string} text */
function say(text) {
  if (newsTimer !== null) {
    clearTimeout(newsTimer);
    newsTimer = null;
    delete statusEl.dataset.news;
  }
  statusEl.textContent = text;
}

/** How long a line about another player stays before the status returns. */
const NEWS_MS = 6_000;
/** @type {ReturnType<typeof setTimeout>|null} */
let newsTimer = null;

/**
 * Says something about other players (joined, left) for a few seconds,
 * then the status line returns to what it said before.
 * @param {string} text
 */
function sayBriefly(text) {
  const before = newsTimer === null ? statusEl.textContent : statusEl.dataset.before ?? '';
  if (newsTimer !== null) clearTimeout(newsTimer);
  statusEl.dataset.before = before ?? '';
  statusEl.textContent = text;
  statusEl.dataset.news = 'true';
  newsTimer = setTimeout(() => {
    newsTimer = null;
    delete statusEl.dataset.news;
    if (statusEl.textContent === text) statusEl.textContent = statusEl.dataset.before ?? '';
  }, NEWS_MS);
}

/** @param {string} text */
function fail(text) {
  errorEl.textContent = text;
  say('Not connected.');
  document.body.dataset.state = 'error';
  $('join-form').hidden = false;
}

// ---- input ---------------------------------------------------------------

/** @type {import('./lib/game-screen.js').ScreenHooks} */
const screenHooks = {
  me: () => (replays.current ? replays.current.player : spectating ? watched : status?.me) ?? undefined,
  watching: spectating,
  nameOf,
  rttMs: () => rttMs,
  onSounds: (events, listener) => tools.playSounds(events, listener),
};
const screen = new GameScreen(screenHooks);
const { controls, tools } = gameControls(canvas, screen, dialog, {
  active: () => status?.phase === 'running',
  onInput: (input) => {
    if (driver && !botDriven) driver.setInput(input);
  },
  code: () => joinedCode,
  netgraph: () => ({
    role: 'guest',
    fps: screen.frames.fps(performance.now()),
    rttMs,
    guest: driver ? driver.guest.netgraph(performance.now()) : null,
  }),
});

/** Keys that change the watched player: next, previous. */
const WATCH_KEYS = /** @type {Record<string, number>} */ ({
  ArrowRight: 1, BracketRight: 1, KeyD: 1, ArrowLeft: -1, BracketLeft: -1, KeyA: -1,
});

/**
 * Shows the player `step` places after (or before) the watched one, in
 * roster order.
 * @param {number} step
 */
function watchNext(step) {
  const roster = /** @type {string[]} */ (status?.roster ?? []);
  if (roster.length === 0) return;
  const at = watched === null ? -1 : roster.indexOf(watched);
  const next = at < 0 ? 0 : (at + step + roster.length) % roster.length;
  watched = roster[next];
  $('hud-watching').textContent = displayNameOf(watched, status?.names?.[watched]);
  screen.renderRoster(roster, status?.names);
}

if (spectating) {
  window.addEventListener('keydown', (ev) => {
    if (status?.phase !== 'running' || dialog.open) return;
    const step = WATCH_KEYS[ev.code];
    if (step) {
      ev.preventDefault();
      watchNext(step);
    }
  });
}

dialog.addEventListener('close', () => {
  if (dialog.returnValue === 'leave') {
    leave();
    window.location.assign('/');
  }
  controls.release();
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
  const replay = replays.current;
  if (replay) {
    const base = displayNameOf(id, replay.status.names[id]);
    return id === replay.player ? `${base} (watching)` : base;
  }
  const base = displayNameOf(id, status?.names?.[id]);
  if (spectating) return id === watched ? `${base} (watching)` : base;
  return id === status?.me ? `${base} (you)` : base;
}

/** @param {any} s */
function onStatus(s) {
  const before = status;
  status = s;
  if (before && before.levelEpoch > 0 && s.levelEpoch > before.levelEpoch) {
    tools?.playSounds([{ name: 'level-end', x: 0, y: 0 }], null);
  }
  if (s.phase !== before?.phase || s.levelEpoch !== before?.levelEpoch) {
    switch (s.phase) {
      case 'await-init':
        say('Connected. Receiving the session…');
        break;
      case 'receiving-map':
        say(s.joining ? 'The game is under way: receiving the level as it stands…' : 'Receiving the map…');
        break;
      case 'running':
        $('game').hidden = false;
        $('invite').hidden = true;
        document.body.classList.add('in-game');
        $('hud-difficulty').textContent = String(s.difficulty ?? '—');
        if (spectating) {
          if (watched === null || !s.roster.includes(watched)) watchNext(0);
          document.body.dataset.state = 'watching';
          say(`Watching the game. ← → or [ ] change player, Tab for the map, Esc to leave.`);
        } else if (s.resumed) {
          say('Rejoined after a lost connection: the same player, where it stood.');
        } else if (document.body.dataset.state !== 'playing') {
          document.body.dataset.state = 'ready';
          if (s.joinedAtTick !== null && s.levelEpoch === before?.levelEpoch) say('Joined the game in progress. Playing.');
          else say(s.levelEpoch > 1 ? `Level ${s.levelEpoch}. Playing.` : 'Map received. Waiting for the host to start…');
        }
        canvas.focus();
        break;
      default:
    }
  }
  if (JSON.stringify(s.waitingRoom) !== JSON.stringify(before?.waitingRoom) || s.phase !== before?.phase) {
    showWaitingRoom(s.phase === 'await-init' ? s.waitingRoom : null);
  }
  if (s.hostLost && !before?.hostLost) {
    say(`Lost the host; waiting up to ${DISCONNECT_GRACE_MS / 1000} s for it to come back…`);
    if (s.phase === 'running' && s.rejoinToken) rejoinOnce(s.rejoinToken);
  }
  if (JSON.stringify(s.roster) !== JSON.stringify(before?.roster)) {
    const removed = s.levelEpoch === before?.levelEpoch
      ? (before?.roster ?? []).filter((/** @type {string} */ id) => !s.roster.includes(id))
      : [];
    if (removed.length > 0) sayBriefly(`${removed.map(nameOf).join(', ')} left the session.`);
    const added = s.levelEpoch === before?.levelEpoch && before?.roster?.length
      ? s.roster.filter((/** @type {string} */ id) => !before.roster.includes(id))
      : [];
    if (added.length > 0 && (s.joinedAtTick === null || spectating)) sayBriefly(`${added.map(nameOf).join(', ')} joined the game.`);
    // A watched player who left: watch the next one.
    if (spectating && s.phase === 'running' && watched !== null && !s.roster.includes(watched)) watchNext(0);
    screen.renderRoster(s.roster, s.names);
  }
  if (JSON.stringify(s.spectators) !== JSON.stringify(before?.spectators)) showSpectators(s.spectators ?? []);
  if (s.end && !left) showEnd(s.end);
}

/**
 * Before the start: who is in, the seats left and what the start waits
 * for, as the host said (null hides it).
 * @param {{players: string[], maxPlayers: number|null, guestsNeeded: number|null, you: number|null}|null} room
 */
function showWaitingRoom(room) {
  $('waiting').hidden = !room;
  if (!room) return;
  say('Connected: waiting for the start.');
  const n = room.players.length;
  const plural = (/** @type {number} */ k, /** @type {string} */ one, /** @type {string} */ many) => (k === 1 ? one : many);
  $('waiting-count').textContent = room.maxPlayers == null
    ? `${n} ${plural(n, 'player is', 'players are')} in.`
    : `${n} of ${room.maxPlayers} players are in: ${Math.max(0, room.maxPlayers - n)} ${plural(room.maxPlayers - n, 'seat', 'seats')} left.`;
  $('waiting-roster').replaceChildren(...room.players.map((name, i) => {
    const li = document.createElement('li');
    li.textContent = name || 'Player (no name)';
    if (i === room.you) {
      li.textContent += ' (you)';
      li.dataset.you = '';
    }
    return li;
  }));
  const needed = room.guestsNeeded;
  $('waiting-start').textContent = needed == null ? 'The game starts when the host presses Start.'
    : needed === 0 ? 'Everyone is in: starting…'
      : `The game starts when ${needed} more ${plural(needed, 'player joins', 'players join')}.`;
}

/**
 * Who watches, as the host said.
 * @param {string[]} names
 */
function showSpectators(names) {
  const el = $('spectators');
  el.hidden = names.length === 0;
  el.textContent = names.length === 0 ? ''
    : `Watching: ${names.map((n) => n || 'a spectator (no name)').join(', ')}`;
}

/** @param {any} view */
function onTick(view) {
  screen.onView(view);
  if (view.tick > 0 && document.body.dataset.state === 'ready') {
    document.body.dataset.state = 'playing';
    const how = tools?.howToPlay('leave') ?? '';
    say(status?.joinedAtTick != null ? `Joined the game in progress. ${how}` : `Playing. ${how}`);
  }
  controls.spent();
}

/**
 * What a player is told when the host runs another build.
 * @param {string|null|undefined} hostBuild
 */
function versionMismatchText(hostBuild) {
  return `Version mismatch: this page runs build ${buildVersion}, but the host runs build `
    + `${hostBuild ?? 'unknown'}. Reload the page to get the server's current version, or join a session of your build.`;
}

/** @param {any} end */
function showEnd(end) {
  document.body.classList.remove('in-game');
  tools?.playSounds([{ name: 'level-end', x: 0, y: 0 }], null);
  document.body.dataset.state = 'ended';
  if (end.kind === 'refused') {
    if (end.reason === 'version-mismatch') {
      fail(versionMismatchText(end.hostBuild));
    } else if (end.reason === 'session-started') {
      fail('This session has already started; nobody more can join it. Pick another one in the lobby.');
    } else if (end.reason === 'session-full') {
      fail(spectating ? `This session takes no more spectators: ${end.detail}.`
        : 'Every seat in this session is taken. Pick another one in the lobby.');
    } else {
      fail(`The host refused the join: ${end.detail || end.reason}.`);
    }
    return;
  }
  if (end.kind === 'failed') {
    fail(`The game stopped on this side: ${end.detail}.`);
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
  offerPlayAgain();
  screen.showResults(end, end.provisional
    ? 'Provisional: the host is gone, so these are this browser\'s last known values.'
    : 'Final, from the host.');
}

/**
 * "Play again" after a daemon's session: its next session (a daemon opens
 * a fresh one when one ends), found in the lobby by name, or else the
 * lobby searched for it.
 */
function offerPlayAgain() {
  const view = joinedView;
  if (!view || spectating) return;
  const again = $('play-again');
  again.hidden = false;
  again.onclick = async () => {
    again.setAttribute('disabled', '');
    say('Looking for the next session of this host…');
    const next = await nextSessionOf(view).catch(() => null);
    const url = new URL(next ? '/play' : '/', window.location.href);
    if (next) url.searchParams.set('code', next);
    else url.searchParams.set('q', view.name);
    window.location.assign(url.toString());
  };
}

/**
 * The code of the newest listed, not yet started session of the same name,
 * host name and host kind as `view` (another than it: a daemon's next
 * session, or the one a browser host opened with Play again), waiting up
 * to ten seconds for it to be published; null when there is none.
 * @param {import('./lib/lobby-client.js').SessionView} view
 */
async function nextSessionOf(view) {
  const client = new LobbyClient('');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await client.list({ q: view.name, hostKind: view.hostKind, hasSpace: true });
    const next = page.sessions
      .filter((e) => e.code !== view.code && e.name === view.name && e.hostName === view.hostName && !e.inProgress)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
    if (next) return next.code;
    if (Date.now() > deadline) return null;
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

// ---- joining -------------------------------------------------------------

/** The session's events go to the page's handlers. */
const driverHooks = {
  onStatus,
  onTick,
  onDiagnostic: (/** @type {string} */ d) => console.debug(`campfire session: ${d}`),
};

/**
 * Offers "Report this session" once in a session (the lobby's moderators
 * read it).
 * @param {string} code
 */
function showReport(code) {
  const button = /** @type {HTMLButtonElement} */ ($('report-session'));
  button.hidden = false;
  button.onclick = async () => {
    const title = $('session-title').textContent?.replace(/^—\s*/, '') ?? '';
    if (await openReport(new LobbyClient(''), code, title)) {
      button.textContent = 'Reported';
      button.disabled = true;
    }
  };
}

/**
 * The connection to the host failed while playing: joins the session once
 * more on a fresh connection, presenting the rejoin token the host gave
 * this player, so the host hands it back the same player (within its
 * disconnect grace). While the lobby cannot be reached it keeps asking
 * until the grace is nearly over. The old session runs on meanwhile: if
 * the rejoin fails, it ends as it would have.
 * @param {string} token
 */
async function rejoinOnce(token) {
  if (rejoin !== 'none' || !joinedAs || left) return;
  rejoin = 'trying';
  const giveUpAt = Date.now() + DISCONNECT_GRACE_MS - 1000;
  say('Lost the connection to the host: rejoining as the same player…');
  const client = new LobbyClient('');
  try {
    const campfire = await loadCampfire();
    let joined;
    for (;;) {
      try {
        joined = await client.join(joinedAs.code, { campfire, name: joinedAs.name, spectate: spectating, build: buildVersion });
        break;
      } catch (e) {
        const unreachable = e instanceof LobbyError && e.code === 'unreachable';
        if (!unreachable || Date.now() + REJOIN_RETRY_MS > giveUpAt || left) throw e;
        await new Promise((resolve) => setTimeout(resolve, REJOIN_RETRY_MS));
      }
    }
    const { channels } = joined;
    if (left || status?.end) {
      joined.pc.close();
      rejoin = 'failed';
      return;
    }
    const guest = campfire.guest({ displayName: joinedAs.name, buildVersion, bot: botDriven, resumeToken: token });
    // The fresh connection takes over; the old one is dropped.
    const old = { driver, pc };
    pc = joined.pc;
    driver = new GuestDriver(guest, channels, pc, driverHooks);
    old.driver?.stop();
    old.pc?.close();
    driver.attach();
    rejoin = 'done';
  } catch (e) {
    rejoin = 'failed';
    if (!status?.end && !left) say(`Lost the connection to the host, and rejoining failed: ${joinErrorText(e)}`);
  }
}

async function pollRtt() {
  if (!pc || status?.end) return;
  try {
    const stats = await pc.getStats();
    stats.forEach((s) => {
      if (s.type !== 'candidate-pair' || !s.nominated || s.state !== 'succeeded') return;
      // The mean of the connectivity checks' round trips when there are
      // some (Chromium measures each in whole milliseconds: the mean of a
      // sub-millisecond link is a fraction, not 0), else the latest.
      if (typeof s.totalRoundTripTime === 'number' && s.responsesReceived > 0) {
        rttMs = (s.totalRoundTripTime / s.responsesReceived) * 1000;
      } else if (typeof s.currentRoundTripTime === 'number') {
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
      case 'round_taken':
        return e.message;
      case 'version_mismatch':
        return versionMismatchText(e.hostBuild);
      case 'rate_limited':
        return 'Too many attempts from this address: wait a minute, then try again.';
      case 'connect_timeout':
      case 'ice_gathering_timeout':
      case 'connect_failed':
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
  joinedCode = typed;
  let campfire;
  try {
    campfire = await loadCampfire();
  } catch (e) {
    fail(`This browser could not start the game engine (WebAssembly): ${e instanceof Error ? e.message : e}`);
    return;
  }
  const client = new LobbyClient('');
  /** @type {string|null} */
  let code = null;
  let joined;
  try {
    // The joining machine (the daemon's) says each step: waiting for a
    // round, a lost round, a connection that failed and is tried again.
    joined = await client.join(typed, {
      campfire, name, spectate: spectating, build: buildVersion,
      onStep: (/** @type {any} */ step, /** @type {any} */ view) => {
        if (step.step === 'readSession' && code == null) {
          code = step.code;
          joinedCode = step.code;
          $('session-title').textContent = `— session ${step.code}`;
          say(spectating ? `Joining session ${step.code} to watch…` : `Joining session ${step.code}…`);
        } else if (step.step === 'pause' && step.why === 'connectFailed') {
          say('The connection failed; trying again…');
        } else if (step.step === 'pause' && step.why === 'rateLimited') {
          say(`The lobby is busy; trying again in ${Math.ceil(step.ms / 1000)} s…`);
        } else if (step.step === 'connect') {
          say(step.tries === 1 ? `Connecting to "${view?.name}"…` : `Connecting to "${view?.name}" again…`);
        }
      },
    });
  } catch (e) {
    fail(joinErrorText(e));
    return;
  }
  pc = joined.pc;
  const { channels } = joined;
  let guest;
  try {
    guest = campfire.guest({ displayName: name, buildVersion, bot: botDriven, spectate: spectating });
  } catch (e) {
    pc?.close();
    fail(`This browser could not start the game engine (WebAssembly): ${e instanceof Error ? e.message : e}`);
    return;
  }
  joinedAs = { code, name };
  joinedView = joined.view;
  showReport(code);
  if (!spectating) {
    $('session-code').textContent = code;
    $('invite').hidden = false;
    tools?.showInvite(true);
  }
  driver = new GuestDriver(guest, channels, pc, driverHooks);
  status = driver.status;
  say('Connected. Checking versions…');
  driver.attach();
  controls.push();
  setInterval(pollRtt, 1000);
}

// ---- replays ----------------------------------------------------------------

const replays = new ReplayPage({ screen, screenHooks, canvas, say, fail });

/**
 * A replay file the player picked or dropped.
 * @param {File} file
 */
async function watchFile(file) {
  if (driver) return; // in a session: not now
  await replays.watchFile(file);
}

/** What the browser tests read. */
/** @type {any} */ (window).campfire = {
  state() {
    const me = status?.me ?? null;
    const mine = screen.mine();
    return {
      state: document.body.dataset.state ?? 'loading',
      phase: status?.phase ?? null,
      me,
      tick: status?.tick ?? 0,
      levelEpoch: status?.levelEpoch ?? 0,
      snapshotTick: status?.lastSnapshotTick ?? null,
      pos: mine ? { x: mine.x, y: mine.y } : null,
      // The newest view: the tick it shows and the shared simulation's
      // tick it was predicted from.
      viewTick: screen.next?.tick ?? null,
      confirmedTick: screen.next?.confirmedTick ?? null,
      roster: status?.roster ?? [],
      // A late joiner: the tick of the state it was handed (null: in from the start).
      joinedAtTick: status?.joinedAtTick ?? null,
      // A spectator: whose view is shown, and who watches (as the host said).
      spectator: status?.spectator ?? false,
      watching: watched,
      spectators: status?.spectators ?? [],
      // Before the start: who is in and what the start waits for.
      waitingRoom: status?.waitingRoom ?? null,
      // The connection to the host is lost; and the automatic rejoin's state.
      hostLost: status?.hostLost ?? false,
      rejoin,
      resumed: status?.resumed ?? false,
      replay: replays.current ? {
        tick: replays.current.status.tick,
        lastTick: replays.current.status.lastTick,
        ended: replays.current.status.ended,
        playing: replays.current.playing,
        speed: replays.current.speed,
        player: replays.current.player,
        roster: replays.current.status.roster,
        matches: replays.current.status.matches,
        finalWorldHash: replays.current.status.finalWorldHash,
      } : null,
      said: statusEl.textContent,
      end: left ? { kind: 'ended', reason: 'left', scores: [], provisional: true } : status?.end ?? null,
      error: errorEl.textContent,
      stats: status ? { ...status.stats } : null,
      visibility: document.visibilityState,
      mode: screen.mode,
      rttMs,
      audio: tools?.audioState() ?? null,
      // The netgraph: shown or not, and what it showed last (rows and bar).
      netgraph: { visible: tools.netgraph.visible, shown: tools.netgraph.shown },
    };
  },
};

function main() {
  const nameInput = /** @type {HTMLInputElement} */ ($('player-name'));
  const codeInput = /** @type {HTMLInputElement} */ ($('join-code'));
  const savedName = localStorage.getItem(NAME_KEY) ?? '';
  nameInput.value = savedName;
  $('join-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const name = nameInput.value.trim();
    if (nameInput.required && !name) {
      say('Choose a name first: the other players see it.');
      nameInput.focus();
      return;
    }
    localStorage.setItem(NAME_KEY, name);
    const url = new URL(window.location.href);
    url.searchParams.set('code', codeInput.value.trim());
    window.location.assign(url.toString());
  });
  screen.start();
  if (spectating) {
    $('hud-watching-row').hidden = false;
    $('leave-note').textContent = 'You are watching: leaving changes nothing for the players.';
    $('keys-help').textContent = '← → or [ ]: change player. Tab: automap. Esc: leave.';
  }
  $('replay-file').addEventListener('change', (ev) => {
    const file = /** @type {HTMLInputElement} */ (ev.target).files?.[0];
    if (file) watchFile(file);
  });
  document.addEventListener('dragover', (ev) => {
    if (!driver) ev.preventDefault();
  });
  document.addEventListener('drop', (ev) => {
    const file = ev.dataTransfer?.files?.[0];
    if (file && !driver) {
      ev.preventDefault();
      watchFile(file);
    }
  });
  const code = params.get('code');
  const replayUrl = params.get('replay');
  if (replayUrl) {
    const tick = params.get('tick');
    replays.watchUrl(replayUrl, tick === null ? null : Number(tick));
  } else if (code && (params.get('name') ?? savedName) === '' && !botDriven) {
    // An invite link or a Watch link, and this browser never chose a
    // name: ask for one first (it is remembered for every later join).
    codeInput.value = code;
    say(spectating ? `Choose a name to watch session ${code}.` : `Choose a name to join session ${code}.`);
    nameInput.required = true;
    nameInput.placeholder = 'the name the others see';
    $('join-form').hidden = false;
    document.body.dataset.state = 'idle';
    nameInput.focus();
  } else if (code) {
    codeInput.value = code;
    join(code, params.get('name') ?? savedName);
  } else {
    say('Type a session code to join.');
    $('join-form').hidden = false;
    document.body.dataset.state = 'idle';
  }
}

main();
