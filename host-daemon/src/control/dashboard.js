// The daemon's dashboard: its sessions live (the control API's event
// stream), a form to open one, links to watch each in the lobby and to
// download its replays. Every call carries the control token when the
// daemon asks for one (kept for this tab only).

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const statusLine = $('status');
const list = $('sessions');
const tokenForm = /** @type {HTMLFormElement} */ ($('token-form'));
const openForm = /** @type {HTMLFormElement} */ ($('open-form'));

/** @type {{kind: string, lobby: string, recording: boolean, standingSessions: number, maxControlSessions: number} | null} */
let daemon = null;

function token() {
  return sessionStorage.getItem('campfire-control-token') || '';
}

/** @param {string} path @param {RequestInit} [init] */
function api(path, init = {}) {
  const headers = new Headers(init.headers);
  if (token()) headers.set('Authorization', `Bearer ${token()}`);
  return fetch(path, { ...init, headers });
}

/** @param {string} text @param {boolean} [bad] */
function say(text, bad = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle('bad', bad);
}

/** @param {Response} res */
async function errorOf(res) {
  try {
    const body = await res.json();
    return body.message || `${res.status}`;
  } catch {
    return `${res.status} ${res.statusText}`;
  }
}

async function start() {
  const res = await api('/api/daemon');
  if (res.status === 403) {
    tokenForm.hidden = false;
    say('sign in with the control token', true);
    return;
  }
  if (!res.ok) {
    say(await errorOf(res), true);
    return;
  }
  tokenForm.hidden = true;
  daemon = await res.json();
  $('daemon').textContent = `${daemon?.kind} daemon · lobby ${daemon?.lobby}` +
    (daemon?.recording ? ' · recording replays' : '');
  for (const el of document.querySelectorAll('.host-only')) {
    /** @type {HTMLElement} */ (el).hidden = daemon?.kind !== 'host';
  }
  follow();
}

// The event stream, read with fetch so it carries the token; reconnects
// after a pause when it drops.
async function follow() {
  for (;;) {
    try {
      const res = await api('/api/events', { headers: { Accept: 'text/event-stream' } });
      if (!res.ok || !res.body) throw new Error(await errorOf(res));
      say('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
          if (block.includes('event: sessions') && data) render(JSON.parse(data).sessions);
        }
      }
      say('reconnecting…', true);
    } catch (e) {
      say(`reconnecting… (${e instanceof Error ? e.message : e})`, true);
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}

/** @param {string} tag @param {Record<string, string>} [attrs] @param {(Node|string)[]} [children] */
function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

/** @param {number} n */
function bytes(n) {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} KB` : `${n} B`;
}

/** @param {any} p */
function playerRow(p) {
  const who = p.kind === 'guest' ? 'player' : p.kind;
  const name = el('td', p.present ? {} : { class: 'left' }, [p.name || p.id]);
  return el('tr', { 'data-player': p.id }, [
    name,
    el('td', {}, [p.present ? who : `${who}, left`]),
    el('td', { class: 'num' }, [p.rttMs != null ? `${Math.round(p.rttMs)} ms` : '–']),
    el('td', { class: 'num' }, [String(p.heldInputs)]),
    el('td', { class: 'num' }, [String(p.desyncs)]),
    el('td', { class: 'num' }, [bytes(p.bytesSent)]),
  ]);
}

/** @param {any} s */
function card(s) {
  const title = el('h3', {}, [
    el('span', { class: 'code' }, [s.code]),
    s.name,
    el('span', { class: `state ${s.state}`, 'data-state': s.state }, [s.state]),
  ]);
  const level = s.level ? `level ${s.level} of ${s.levels}` : `${s.levels} level${s.levels === 1 ? '' : 's'}`;
  const bots = s.players.filter((/** @type {any} */ p) => p.kind === 'bot').length;
  const people = s.players.filter((/** @type {any} */ p) => p.kind === 'guest' && p.present).length;
  const figures = el('p', { class: 'figures' }, [
    `${s.kind} · ${s.difficulty} · seed ${s.seed} · ${level} · tick ${s.ticks} · ` +
      `${people} player${people === 1 ? '' : 's'}, ${bots} bot${bots === 1 ? '' : 's'}` +
      (s.spectators ? `, ${s.spectators} watching` : '') + ` · ${bytes(s.bytesSent)} sent` +
      (s.end ? ` · ended: ${s.end}` : ''),
  ]);
  const table = el('table', {}, [
    el('thead', {}, [el('tr', {}, [
      el('th', {}, ['Name']), el('th', {}, ['Who']), el('th', { class: 'num' }, ['RTT']),
      el('th', { class: 'num' }, ['Held']), el('th', { class: 'num' }, ['Desyncs']), el('th', { class: 'num' }, ['Sent']),
    ])]),
    el('tbody', {}, s.players.map(playerRow)),
  ]);
  const actions = el('div', { class: 'actions' });
  if (s.state !== 'ended' && daemon) {
    const watch = new URL('/play', daemon.lobby);
    watch.searchParams.set('code', s.code);
    watch.searchParams.set('spectate', '1');
    actions.append(el('a', { href: watch.href, target: '_blank', rel: 'noopener' }, ['Watch in the lobby']));
    const end = el('button', { type: 'button', class: 'quiet' }, ['End']);
    end.addEventListener('click', async () => {
      const res = await api(`/api/sessions/${s.code}`, { method: 'DELETE' });
      if (!res.ok) say(await errorOf(res), true);
    });
    actions.append(end);
  }
  if (s.state === 'ended') {
    const report = el('button', { type: 'button', class: 'quiet' }, ['Report']);
    report.addEventListener('click', () => download(`/api/sessions/${s.code}/report`, `${s.code}-report.json`));
    actions.append(report);
    for (const level of s.replays) {
      const replay = el('button', { type: 'button', class: 'quiet', 'data-replay': String(level) }, [`Replay, level ${level}`]);
      replay.addEventListener('click', () => download(`/api/sessions/${s.code}/replays/${level}`, `${s.code}-level-${level}.replay`));
      actions.append(replay);
    }
  }
  return el('article', { class: 'session', 'data-code': s.code }, [
    title, figures, el('div', { class: 'players' }, [table]), actions,
  ]);
}

/** @param {any[]} sessions */
function render(sessions) {
  $('empty').hidden = sessions.length > 0;
  list.replaceChildren(...sessions.map(card));
}

/** Downloads `path` (with the token) as a file named `name`. @param {string} path @param {string} name */
async function download(path, name) {
  const res = await api(path);
  if (!res.ok) {
    say(await errorOf(res), true);
    return;
  }
  const url = URL.createObjectURL(await res.blob());
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem('campfire-control-token', /** @type {HTMLInputElement} */ ($('token')).value.trim());
  start();
});

openForm.addEventListener('submit', async (e) => {
  e.preventDefault();
  const form = new FormData(openForm);
  /** @type {Record<string, any>} */
  const order = {};
  for (const key of ['bots', 'levels', 'seed', 'startWhen', 'maxPlayers']) {
    const v = String(form.get(key) ?? '').trim();
    if (v !== '' && !(key === 'bots' && daemon?.kind !== 'host')) order[key] = Number(v);
  }
  for (const key of ['name', 'difficulty']) {
    const v = String(form.get(key) ?? '').trim();
    if (v) order[key] = v;
  }
  if (form.get('private')) order.public = false;
  const result = $('open-result');
  result.textContent = 'opening…';
  result.classList.remove('error');
  const res = await api('/api/sessions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(order),
  });
  if (res.ok) {
    const { code } = await res.json();
    result.textContent = `opened ${code}`;
  } else {
    result.textContent = await errorOf(res);
    result.classList.add('error');
  }
});

start();
