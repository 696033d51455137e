// The operator's moderation page (/admin): sign in with an admin token
// (kept in this tab's sessionStorage, sent only as a bearer header), then
// the live sessions with their reports (most reported first), hide, end
// and block their creator with a reason; the blocks in force, lifted with
// a click; and the audit log. Everything goes through the admin API
// (docs/api.md, "Admin API").

const TOKEN_KEY = 'campfire.adminToken';

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** An admin API call's failure: its status and the API's message. */
class AdminError extends Error {
  /** @param {number} status @param {string} message */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * One admin call with the tab's token.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<any>} the JSON body (null for 204)
 */
async function call(method, path, body) {
  const headers = { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) ?? ''}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return null;
  const json = await res.json().catch(() => null);
  if (!res.ok) throw new AdminError(res.status, json?.message ?? `HTTP ${res.status}`);
  return json;
}

/** Shows what went wrong with an action (a lost token signs out). @param {unknown} e */
function failed(e) {
  if (e instanceof AdminError && e.status === 403) {
    signOut('The token was refused; sign in again.');
    return;
  }
  $('console-error').textContent = e instanceof Error ? e.message : String(e);
}

/**
 * Asks for a reason in the page's dialog.
 * @param {string} title
 * @returns {Promise<string|null>} the reason, or null when cancelled
 */
function askReason(title) {
  const dialog = /** @type {HTMLDialogElement} */ ($('reason-dialog'));
  const input = /** @type {HTMLInputElement} */ ($('reason-text'));
  $('reason-title').textContent = title;
  input.value = '';
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'ok' && input.value.trim() ? input.value.trim() : null);
    }, { once: true });
    dialog.showModal();
  });
}

/** @param {string} text @param {string} label */
function cell(text, label) {
  const td = document.createElement('td');
  td.textContent = text;
  td.dataset.label = label;
  return td;
}

/** @param {string} text @param {() => void} onClick @param {string} label */
function button(text, onClick, label) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'secondary';
  b.textContent = text;
  b.setAttribute('aria-label', label);
  b.addEventListener('click', onClick);
  return b;
}

/** @param {string} iso */
const when = (iso) => new Date(iso).toLocaleString();

// ---- sessions -------------------------------------------------------------

/** The cursor of the next page of sessions, if any. @type {string|null} */
let sessionsNext = null;

function sessionQuery() {
  const q = new URLSearchParams();
  const words = /** @type {HTMLInputElement} */ ($('session-q')).value.trim();
  if (words) q.set('q', words);
  q.set('sort', /** @type {HTMLSelectElement} */ ($('session-sort')).value);
  if (/** @type {HTMLInputElement} */ ($('session-reported')).checked) q.set('reported', 'true');
  q.set('limit', '50');
  return q;
}

/** @param {boolean} more append the next page instead of starting over */
async function loadSessions(more = false) {
  const q = sessionQuery();
  if (more && sessionsNext) q.set('cursor', sessionsNext);
  const page = await call('GET', `/admin/sessions?${q}`);
  const rows = $('admin-session-rows');
  if (!more) rows.replaceChildren();
  for (const s of page.sessions) rows.append(sessionRow(s));
  sessionsNext = page.nextCursor ?? null;
  $('sessions-more').hidden = !sessionsNext;
  $('session-count').textContent = `${page.total} session${page.total === 1 ? '' : 's'}`;
}

/** @param {any} s an AdminSessionView */
function sessionRow(s) {
  const tr = document.createElement('tr');
  tr.dataset.code = s.code;
  const name = document.createElement('th');
  name.scope = 'row';
  name.dataset.label = 'Name';
  name.textContent = `${s.name || s.code} (${s.code})`;
  const listed = s.hidden ? 'hidden' : s.public ? 'listed' : 'private';
  tr.append(
    name,
    cell(`${s.hostName || '—'} · ${s.hostKind}`, 'Host'),
    cell(String(s.reports), 'Reports'),
    cell(`${s.players}/${s.maxPlayers}`, 'Players'),
    cell(listed, 'Listed'),
    cell(s.creator, 'Created from'),
  );
  const actions = document.createElement('td');
  actions.className = 'actions';
  const label = s.name || s.code;
  actions.append(
    button(s.hidden ? 'Unhide' : 'Hide', () => act(async () => {
      const reason = await askReason(`${s.hidden ? 'List again' : 'Hide'} “${label}”`);
      if (reason) await call('POST', `/admin/sessions/${s.code}/hide`, { hidden: !s.hidden, reason });
      return reason !== null;
    }), `${s.hidden ? 'Unhide' : 'Hide'} ${label}`),
    ' ',
    button('End', () => act(async () => {
      const reason = await askReason(`End “${label}” now`);
      if (reason) await call('POST', `/admin/sessions/${s.code}/end`, { reason });
      return reason !== null;
    }), `End ${label}`),
    ' ',
    button('Block creator', () => act(async () => {
      const reason = await askReason(`Block ${s.creator} for a day`);
      if (reason) await call('POST', '/admin/blocks', { prefix: s.creator, durationSecs: 86_400, reason });
      return reason !== null;
    }), `Block the creator of ${label}`),
  );
  tr.append(actions);
  return tr;
}

/**
 * Runs an action, then reloads everything it may have changed.
 * @param {() => Promise<boolean>} action resolves whether anything was done
 */
async function act(action) {
  $('console-error').textContent = '';
  try {
    if (await action()) await refresh();
  } catch (e) {
    failed(e);
  }
}

// ---- blocks and the audit log --------------------------------------------

async function loadBlocks() {
  const { blocks } = await call('GET', '/admin/blocks');
  const rows = $('admin-block-rows');
  rows.replaceChildren();
  for (const b of blocks) {
    const tr = document.createElement('tr');
    tr.dataset.id = String(b.id);
    const prefix = document.createElement('th');
    prefix.scope = 'row';
    prefix.dataset.label = 'Prefix';
    prefix.textContent = b.prefix;
    const lift = document.createElement('td');
    lift.append(button('Lift', () => act(async () => {
      const reason = await askReason(`Lift the block of ${b.prefix}`);
      if (reason) await call('DELETE', `/admin/blocks/${b.id}?${new URLSearchParams({ reason })}`);
      return reason !== null;
    }), `Lift the block of ${b.prefix}`));
    tr.append(prefix, cell(when(b.until), 'Until'), cell(b.reason, 'Reason'), cell(b.createdBy, 'By'), lift);
    rows.append(tr);
  }
}

/** The id before which the next (older) page of the log starts. @type {number|null} */
let auditBefore = null;

/** @param {boolean} more */
async function loadAudit(more = false) {
  const q = new URLSearchParams({ limit: '50' });
  if (more && auditBefore !== null) q.set('before', String(auditBefore));
  const page = await call('GET', `/admin/audit?${q}`);
  const rows = $('admin-audit-rows');
  if (!more) rows.replaceChildren();
  for (const e of page.entries) {
    const tr = document.createElement('tr');
    tr.append(cell(when(e.at), 'When'), cell(e.actor, 'Who'), cell(e.action, 'What'), cell(e.target, 'To'), cell(e.reason, 'Why'));
    rows.append(tr);
  }
  auditBefore = page.nextBefore ?? null;
  $('audit-more').hidden = auditBefore === null;
}

async function refresh() {
  await Promise.all([loadSessions(), loadBlocks(), loadAudit()]);
}

// ---- signing in and out ---------------------------------------------------

/** @param {string} [why] */
function signOut(why = '') {
  sessionStorage.removeItem(TOKEN_KEY);
  $('console').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = why;
  document.body.dataset.signedIn = 'false';
}

async function signedIn() {
  $('signin').hidden = true;
  $('console').hidden = false;
  $('signed-in').textContent = 'Signed in.';
  try {
    await refresh();
    document.body.dataset.signedIn = 'true';
  } catch (e) {
    failed(e);
  }
}

$('signin-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const input = /** @type {HTMLInputElement} */ ($('admin-token'));
  sessionStorage.setItem(TOKEN_KEY, input.value.trim());
  input.value = '';
  try {
    await call('GET', '/admin/blocks');
  } catch (e) {
    signOut(e instanceof AdminError && e.status === 403 ? 'That token is not one of this lobby’s.' : String(e));
    return;
  }
  await signedIn();
});
$('sign-out').addEventListener('click', () => signOut());
$('session-filters').addEventListener('submit', (ev) => {
  ev.preventDefault();
  loadSessions().catch(failed);
});
$('sessions-more').addEventListener('click', () => loadSessions(true).catch(failed));
$('audit-more').addEventListener('click', () => loadAudit(true).catch(failed));
$('block-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const prefix = /** @type {HTMLInputElement} */ ($('block-prefix')).value.trim();
  const hours = Number(/** @type {HTMLInputElement} */ ($('block-hours')).value);
  const reason = /** @type {HTMLInputElement} */ ($('block-reason')).value.trim();
  const endSessions = /** @type {HTMLInputElement} */ ($('block-end')).checked;
  act(async () => {
    await call('POST', '/admin/blocks', { prefix, durationSecs: Math.round(hours * 3600), reason, endSessions });
    /** @type {HTMLFormElement} */ ($('block-form')).reset();
    return true;
  });
});

if (sessionStorage.getItem(TOKEN_KEY)) signedIn();
else document.body.dataset.signedIn = 'false';
