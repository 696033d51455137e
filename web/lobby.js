// The public lobby page: the live listing (GET /lobby, then GET
// /lobby/events), search and filters (both answered by the server), the
// count of matching sessions, "Show more" following the cursor, and join
// by code. Each Join opens the game URL template the server was started
// with (--game-url). A session that has started and still admits players
// (late join) is marked "In progress"; its Join works like any other.
// Watch opens the same game URL with `spectate=1`: the game page joins as
// a spectator (no seat, no input). Report tells the lobby's moderators
// about a session (web/lib/report-dialog.js).
//
// The page holds only what it has loaded: the first page, plus each page
// "Show more" fetched. The feed is subscribed with the same search and
// filters, so it tells exactly when a session starts or stops matching:
// `added` and `removed` move the count by one, and a row is inserted when it
// falls within the loaded range (up to where the next page starts, or when
// everything is loaded); anything older is for "Show more" to fetch.

import { LobbyClient } from './lib/lobby-client.js';
import { loadCampfire } from './lib/wasm.js';
import { openReport } from './lib/report-dialog.js';

/** @param {string} name */
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';
const myBuild = meta('campfire-build');
const gameUrl = meta('campfire-game-url') || '/play?code={code}';
const NAME_KEY = 'campfire.displayName';

/** @typedef {import('./lib/lobby-client.js').LobbyEntry} LobbyEntry */
const PAGE_SIZE = 50;
/** How each host kind reads in a row's details. */
const HOST_KINDS = {
  player: 'player',
  daemon: 'daemon (always on)',
  relay: 'relay (no host: outlives any player)',
};
const SEARCH_DEBOUNCE_MS = 250;

const client = new LobbyClient('');
/** Loaded rows, by code. @type {Map<string, LobbyEntry>} */
const entries = new Map();
/** What is loaded: the count, whether it is a lower bound, the cursor of the next page. */
const listing = { total: 0, capped: false, /** @type {string|null} */ next: null };
/** Bumped whenever the search or filters change: answers to older ones are dropped. */
let generation = 0;
/** @type {{close: () => void} | null} */
let feed = null;
/** Events that arrived while the first page was loading (replayed onto it). @type {import('./lib/lobby-client.js').LobbyEvent[] | null} */
let held = null;

const rows = /** @type {HTMLTableSectionElement} */ (document.getElementById('session-rows'));
const empty = /** @type {HTMLElement} */ (document.getElementById('empty'));
const live = /** @type {HTMLElement} */ (document.getElementById('live-status'));
const filterBuild = /** @type {HTMLInputElement} */ (document.getElementById('filter-build'));
const filterSpace = /** @type {HTMLInputElement} */ (document.getElementById('filter-space'));
const search = /** @type {HTMLInputElement} */ (document.getElementById('search'));
const countText = /** @type {HTMLElement} */ (document.getElementById('session-count'));
const noMatch = /** @type {HTMLElement} */ (document.getElementById('no-match'));
const moreRow = /** @type {HTMLElement} */ (document.getElementById('show-more-row'));
const moreButton = /** @type {HTMLButtonElement} */ (document.getElementById('show-more'));
const shownText = /** @type {HTMLElement} */ (document.getElementById('shown-count'));
const nameInput = /** @type {HTMLInputElement} */ (document.getElementById('player-name'));
const codeInput = /** @type {HTMLInputElement} */ (document.getElementById('join-code'));
const joinError = /** @type {HTMLElement} */ (document.getElementById('join-error'));

/** @param {string} code */
function gameUrlFor(code) {
  return gameUrl.replaceAll('{code}', encodeURIComponent(code));
}

/**
 * The game URL that watches session `code` (`spectate=1` added).
 * @param {string} code
 */
function watchUrlFor(code) {
  const url = new URL(gameUrlFor(code), window.location.href);
  url.searchParams.set('spectate', '1');
  return url.origin === window.location.origin ? url.pathname + url.search + url.hash : url.toString();
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

/** The label of a session that has started and admits players into its running game. */
function inProgressBadge() {
  const badge = document.createElement('span');
  badge.className = 'badge in-progress';
  badge.textContent = 'In progress';
  badge.title = 'Started: joining puts you into the running game.';
  return badge;
}

/**
 * The Players cell: seats taken of seats, how many of them bots hold, and,
 * before the start, the player count the session starts at by itself.
 * @param {import('./lib/lobby-client.js').LobbyEntry} e
 */
function playersText(e) {
  let text = `${e.players}/${e.maxPlayers}`;
  const bots = e.bots ?? 0;
  if (bots > 0) text += ` · ${bots} ${bots === 1 ? 'bot' : 'bots'}`;
  if (e.startAt && !e.inProgress) text += ` · starts at ${e.startAt} ${e.startAt === 1 ? 'player' : 'players'}`;
  return text;
}

/** @param {import('./lib/lobby-client.js').LobbyEntry} e */
function row(e) {
  const tr = document.createElement('tr');
  tr.dataset.code = e.code;
  const name = document.createElement('th');
  name.scope = 'row';
  name.dataset.label = 'Name';
  name.textContent = e.name || e.code;
  if (e.inProgress) {
    tr.classList.add('in-progress');
    name.append(' ', inProgressBadge());
  }
  tr.append(
    name,
    cell('Host', e.hostName || (e.hostKind === 'daemon' ? 'bots' : e.hostKind === 'relay' ? 'relay' : '—')),
    cell('Players', playersText(e)),
    cell('Difficulty', e.difficulty ?? '—'),
    cell('Campaign', e.campaign ?? '—'),
    cell('Host kind', HOST_KINDS[e.hostKind] || 'player'),
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
  const watch = document.createElement('a');
  watch.className = 'button secondary watch';
  watch.href = watchUrlFor(e.code);
  watch.textContent = 'Watch';
  watch.setAttribute('aria-label', `Watch ${e.name || e.code}`);
  watch.title = 'Watch the game without playing: no seat needed.';
  const report = document.createElement('button');
  report.type = 'button';
  report.className = 'link report';
  report.textContent = 'Report';
  report.setAttribute('aria-label', `Report ${e.name || e.code} to the moderators`);
  report.addEventListener('click', async () => {
    if (await openReport(client, e.code, e.name)) {
      report.textContent = 'Reported';
      report.setAttribute('aria-label', `Reported ${e.name || e.code}`);
      report.disabled = true;
    }
  });
  action.className = 'actions';
  action.append(a, ' ', watch, ' ', report);
  tr.append(action);
  return tr;
}

const numbers = new Intl.NumberFormat('en');

/** The search and filters as the server takes them. */
function filters() {
  return {
    q: search.value.trim() || undefined,
    build: filterBuild.checked && myBuild ? myBuild : undefined,
    hasSpace: filterSpace.checked || undefined,
  };
}

/**
 * Lobby order, as the server keeps it: entries' positions compare as plain
 * strings (protocol::lobby_order makes them so), so this page knows no rule.
 * @param {LobbyEntry} a
 * @param {LobbyEntry} b
 */
function order(a, b) {
  return a.position < b.position ? -1 : a.position > b.position ? 1 : 0;
}

/** The last loaded entry (the cursor's position), if any. */
function lastLoaded() {
  const last = rows.lastElementChild;
  return last ? entries.get(/** @type {HTMLElement} */ (last).dataset.code ?? '') : undefined;
}

/**
 * Puts an entry's row in place (new, or replacing its old row).
 * @param {LobbyEntry} e
 */
function place(e) {
  const old = rows.querySelector(`tr[data-code="${CSS.escape(e.code)}"]`);
  entries.set(e.code, e);
  const tr = row(e);
  if (old) {
    old.replaceWith(tr);
    return;
  }
  const last = lastLoaded();
  if (!last || order(e, last) > 0) {
    rows.append(tr);
    return;
  }
  for (const r of rows.children) {
    const other = entries.get(/** @type {HTMLElement} */ (r).dataset.code ?? '');
    if (other && order(e, other) < 0) {
      rows.insertBefore(tr, r);
      return;
    }
  }
  rows.append(tr);
}

/**
 * Whether a session that just started matching belongs among the loaded
 * rows (otherwise "Show more" fetches it in turn).
 * @param {LobbyEntry} e
 */
function inLoadedRange(e) {
  // The cursor is a position too: the next page starts after it (the server
  // may stop a page early, past its last row, so the last row is not enough).
  return listing.next === null || e.position <= listing.next;
}

/** Updates the count, the empty states and "Show more". */
function renderStatus() {
  const n = numbers.format(listing.total);
  const noun = listing.total === 1 && !listing.capped ? 'session' : 'sessions';
  countText.textContent = `${listing.capped ? 'At least ' : ''}${n} ${noun}`;
  const shown = rows.children.length;
  // The build filter is the default view: its empty state is the plain one.
  const narrowed = Boolean(filters().q || filterSpace.checked);
  empty.hidden = shown > 0 || listing.total > 0 || narrowed;
  noMatch.hidden = shown > 0 || listing.total > 0 || !narrowed;
  // An exact total all shown means nothing more, whatever the cursor says.
  moreRow.hidden = listing.next === null || (!listing.capped && shown >= listing.total);
  shownText.textContent = `Showing ${numbers.format(shown)} of ${n}`;
  document.body.dataset.sessions = String(shown);
  document.body.dataset.total = String(listing.total);
}

/** Pages one "Show more" may chain when the server hands back short ones. */
const MAX_PAGES_PER_LOAD = 10;

/**
 * A page of the current search and filters from `cursor` (the first page
 * without one). The server stops a page early once it has examined enough
 * sessions (a page costs about its own size), handing back a short or even
 * empty page with a cursor: follow it, a bounded number of times, until the
 * page is full or the listing ends.
 * @param {string|undefined} cursor
 */
async function loadPage(cursor) {
  const page = await client.list({ ...filters(), limit: PAGE_SIZE, cursor });
  for (let more = 1; more < MAX_PAGES_PER_LOAD; more++) {
    if (page.nextCursor === null || page.sessions.length >= PAGE_SIZE) break;
    const next = await client.list({
      ...filters(), limit: PAGE_SIZE - page.sessions.length, cursor: page.nextCursor,
    });
    page.sessions.push(...next.sessions);
    page.nextCursor = next.nextCursor;
    page.total = next.total;
    page.totalCapped = next.totalCapped;
  }
  return page;
}

/** Loads the first page of the current search and filters. */
async function reload() {
  const mine = generation;
  held = [];
  try {
    const page = await loadPage(undefined);
    if (mine !== generation) return;
    entries.clear();
    rows.replaceChildren();
    for (const e of page.sessions) place(e);
    listing.total = page.total;
    listing.capped = page.totalCapped;
    listing.next = page.nextCursor;
    // Events that crossed the page in flight: applying them again is harmless.
    const replay = held;
    held = null;
    for (const ev of replay) apply(ev);
    renderStatus();
    document.body.dataset.loaded = String(mine);
  } catch (e) {
    if (mine === generation) {
      held = null;
      live.textContent = `Could not load the lobby: ${e.message}`;
    }
  }
}

/** Loads the next page after the last loaded row. */
async function showMore() {
  const mine = generation;
  const cursor = listing.next;
  if (!cursor) return;
  moreButton.disabled = true;
  try {
    const page = await loadPage(cursor);
    if (mine !== generation || listing.next !== cursor) return;
    for (const e of page.sessions) place(e);
    listing.total = page.total;
    listing.capped = page.totalCapped;
    listing.next = page.nextCursor;
    renderStatus();
  } catch (e) {
    live.textContent = `Could not load more sessions: ${e.message}`;
  } finally {
    moreButton.disabled = false;
  }
}

/**
 * Applies one event of the (filtered) feed.
 * @param {import('./lib/lobby-client.js').LobbyEvent} ev
 */
function apply(ev) {
  if (ev.type === 'resync') {
    reload();
    return;
  }
  if (held) {
    held.push(ev);
    return;
  }
  if (ev.type === 'added') {
    // Already shown: the page in flight counted it.
    if (!entries.has(ev.entry.code)) listing.total += 1;
    if (inLoadedRange(ev.entry)) place(ev.entry);
  } else if (ev.type === 'updated') {
    if (entries.has(ev.entry.code) || inLoadedRange(ev.entry)) place(ev.entry);
  } else if (ev.type === 'removed') {
    if (entries.delete(ev.code)) {
      rows.querySelector(`tr[data-code="${CSS.escape(ev.code)}"]`)?.remove();
      listing.total = Math.max(0, listing.total - 1);
    } else if (listing.next !== null) {
      // Not loaded: one of the sessions "Show more" has yet to fetch.
      listing.total = Math.max(0, listing.total - 1);
    }
  }
  renderStatus();
}

/** (Re)subscribes with the current search and filters, then loads the first page. */
function follow() {
  generation += 1;
  feed?.close();
  // Subscribe first, then load the listing, and apply events by code.
  const mine = generation;
  held = null;
  feed = client.subscribe((ev) => { if (mine === generation) apply(ev); }, {
    filters: filters(),
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
}

function start() {
  document.getElementById('my-build').textContent = myBuild || 'unknown';
  nameInput.value = localStorage.getItem(NAME_KEY) ?? '';
  nameInput.addEventListener('change', () => {
    localStorage.setItem(NAME_KEY, nameInput.value.trim());
  });
  filterBuild.addEventListener('change', follow);
  filterSpace.addEventListener('change', follow);
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let typing;
  let searched = search.value.trim();
  const searchNow = () => {
    clearTimeout(typing);
    if (search.value.trim() === searched) return;
    searched = search.value.trim();
    follow();
  };
  search.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(searchNow, SEARCH_DEBOUNCE_MS);
  });
  document.getElementById('search-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    searchNow();
  });
  moreButton.addEventListener('click', showMore);
  // Codes are parsed by the wasm module (the lobby's own SessionCode::parse),
  // fetched when the code field is first used; the game page needs it next.
  codeInput.addEventListener('focus', () => { loadCampfire().catch(() => {}); }, { once: true });
  document.getElementById('join-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    localStorage.setItem(NAME_KEY, nameInput.value.trim());
    let code;
    try {
      code = (await loadCampfire()).parseCode(codeInput.value);
    } catch (e) {
      joinError.textContent = `This browser could not start the game engine (WebAssembly): ${e instanceof Error ? e.message : e}`;
      return;
    }
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
  follow();
  setInterval(() => {
    for (const td of document.querySelectorAll('td.age')) {
      td.textContent = age(/** @type {HTMLElement} */ (td).dataset.created ?? '');
    }
  }, 10_000);
}

start();
