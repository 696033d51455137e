// The public lobby page: the live listing (GET /lobby, then GET
// /lobby/events), filters, and join by code. Each Join opens the game URL
// template the server was started with (--game-url).

import { LobbyClient, normalizeCode } from './lib/lobby-client.js';
import { sanitizeDisplayName } from './lib/name.js';

/** @param {string} name */
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';
const myBuild = meta('campfire-build');
const gameUrl = meta('campfire-game-url') || '/play?code={code}';
const NAME_KEY = 'campfire.displayName';

const client = new LobbyClient('');
/** @type {Map<string, import('./lib/lobby-client.js').LobbyEntry>} */
const entries = new Map();

const rows = /** @type {HTMLTableSectionElement} */ (document.getElementById('session-rows'));
const empty = /** @type {HTMLElement} */ (document.getElementById('empty'));
const live = /** @type {HTMLElement} */ (document.getElementById('live-status'));
const filterBuild = /** @type {HTMLInputElement} */ (document.getElementById('filter-build'));
const filterSpace = /** @type {HTMLInputElement} */ (document.getElementById('filter-space'));
const nameInput = /** @type {HTMLInputElement} */ (document.getElementById('player-name'));
const codeInput = /** @type {HTMLInputElement} */ (document.getElementById('join-code'));
const joinError = /** @type {HTMLElement} */ (document.getElementById('join-error'));

/** @param {string} code */
function gameUrlFor(code) {
  return gameUrl.replaceAll('{code}', encodeURIComponent(code));
}

/** @param {string} iso */
function age(iso) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h} h` : `${Math.round(h / 24)} d`;
}

/**
 * @param {string} label
 * @param {string} text
 */
function cell(label, text) {
  const td = document.createElement('td');
  td.dataset.label = label;
  td.textContent = text;
  return td;
}

/** @param {import('./lib/lobby-client.js').LobbyEntry} e */
function row(e) {
  const tr = document.createElement('tr');
  tr.dataset.code = e.code;
  const name = document.createElement('th');
  name.scope = 'row';
  name.dataset.label = 'Name';
  name.textContent = e.name || e.code;
  tr.append(
    name,
    cell('Host', e.hostName || (e.hostKind === 'daemon' ? 'bots' : '—')),
    cell('Players', `${e.players}/${e.maxPlayers}`),
    cell('Difficulty', e.difficulty ?? '—'),
    cell('Campaign', e.campaign ?? '—'),
    cell('Host kind', e.hostKind === 'daemon' ? 'daemon (always on)' : 'player'),
  );
  const ageCell = cell('Age', age(e.createdAt));
  ageCell.className = 'age';
  ageCell.dataset.created = e.createdAt;
  tr.append(ageCell);
  const action = document.createElement('td');
  const a = document.createElement('a');
  a.className = 'button';
  a.href = gameUrlFor(e.code);
  a.textContent = 'Join';
  a.setAttribute('aria-label', `Join ${e.name || e.code}`);
  if (e.build !== myBuild) a.title = `This session runs build ${e.build}; yours is ${myBuild}.`;
  action.append(a);
  tr.append(action);
  return tr;
}

function render() {
  const shown = [...entries.values()]
    .filter((e) => !filterBuild.checked || e.build === myBuild)
    .filter((e) => !filterSpace.checked || e.players < e.maxPlayers)
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.code.localeCompare(b.code));
  rows.replaceChildren(...shown.map(row));
  empty.hidden = shown.length > 0;
  document.body.dataset.sessions = String(shown.length);
}

async function reload() {
  try {
    const all = await client.listAll();
    entries.clear();
    for (const e of all) entries.set(e.code, e);
    render();
  } catch (e) {
    live.textContent = `Could not load the lobby: ${e.message}`;
  }
}

function start() {
  document.getElementById('my-build').textContent = myBuild || 'unknown';
  nameInput.value = localStorage.getItem(NAME_KEY) ?? '';
  nameInput.addEventListener('change', () => {
    localStorage.setItem(NAME_KEY, sanitizeDisplayName(nameInput.value));
  });
  filterBuild.addEventListener('change', render);
  filterSpace.addEventListener('change', render);
  document.getElementById('join-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    localStorage.setItem(NAME_KEY, sanitizeDisplayName(nameInput.value));
    const code = normalizeCode(codeInput.value);
    if (!code) {
      joinError.textContent = codeInput.value.trim()
        ? `"${codeInput.value.trim()}" is not a session code: codes have 8 letters and digits, like ABCD-EFGH.`
        : 'Type the session code you were given.';
      codeInput.setAttribute('aria-invalid', 'true');
      codeInput.focus();
      return;
    }
    codeInput.removeAttribute('aria-invalid');
    joinError.textContent = '';
    window.location.assign(gameUrlFor(code));
  });
  // Subscribe first, then load the listing, and apply events by code.
  client.subscribe((ev) => {
    if (ev.type === 'added' || ev.type === 'updated') entries.set(ev.entry.code, ev.entry);
    else if (ev.type === 'removed') entries.delete(ev.code);
    else if (ev.type === 'resync') { reload(); return; }
    render();
  }, {
    onOpen: () => {
      live.textContent = 'Live: the list updates by itself.';
      document.body.dataset.live = 'true';
      reload();
    },
    onError: () => {
      live.textContent = 'Lost the live lobby; reconnecting…';
      document.body.dataset.live = 'false';
    },
  });
  setInterval(() => {
    for (const td of document.querySelectorAll('td.age')) {
      td.textContent = age(/** @type {HTMLElement} */ (td).dataset.created ?? '');
    }
  }, 10_000);
}

start();
