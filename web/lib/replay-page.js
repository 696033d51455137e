// Watching a replay on /play instead of a session: a replay file (picked,
// dropped on the page, or fetched from ?replay=URL) re-simulated by the
// module's replay viewer (web/lib/replay-player.js), shown on the game
// screen with the replay bar's controls: play and pause (also Space),
// speed, whose eyes, and a tick to go to.

import { loadCampfire } from './wasm.js';
import { ReplayPlayer } from './replay-player.js';
import { displayNameOf } from './name.js';
import { replayTextOf, replayTextOfFile } from './replay-file.js';

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * @typedef {Object} ReplayPageHooks
 * @property {import('./game-screen.js').GameScreen} screen
 * @property {import('./game-screen.js').ScreenHooks} screenHooks the screen's hooks (a replay is watched, not played)
 * @property {HTMLCanvasElement} canvas the view
 * @property {(text: string) => void} say the page's status line
 * @property {(text: string) => void} fail the page's error line
 */

export class ReplayPage {
  /** @param {ReplayPageHooks} page */
  constructor(page) {
    this.page = page;
    /** The replay being watched, if any. @type {ReplayPlayer|null} */
    this.current = null;
    /** What the Players list last showed (roster, names, player watched). */
    this.rosterShown = '';
    $('replay-toggle').addEventListener('click', () => this.current?.toggle());
    $('replay-speed').addEventListener('change', (ev) => this.current?.setSpeed(Number(/** @type {HTMLSelectElement} */ (ev.target).value)));
    $('replay-player').addEventListener('change', (ev) => this.current?.watch(/** @type {HTMLSelectElement} */ (ev.target).value));
    $('replay-go').addEventListener('click', () => {
      const tick = Number(/** @type {HTMLInputElement} */ ($('replay-tick')).value);
      if (this.current && Number.isFinite(tick)) this.current.seek(tick);
    });
    window.addEventListener('keydown', (ev) => {
      if (this.current && ev.code === 'Space' && !(ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement)) {
        ev.preventDefault();
        this.current.toggle();
      }
    });
  }

  /**
   * Starts watching a replay file's text.
   * @param {string} text
   * @param {string} from where it came from, for the page
   * @param {number|null} stopAt a tick to go to and pause at
   */
  async watch(text, from, stopAt) {
    const { screen, screenHooks, canvas, say, fail } = this.page;
    $('error').textContent = '';
    $('join-form').hidden = true;
    let viewer;
    try {
      viewer = (await loadCampfire()).replayViewer(text);
    } catch (e) {
      fail(`${from} is not a replay this page can play: ${e instanceof Error ? e.message : e}`);
      return;
    }
    this.current?.stop();
    screenHooks.watching = true;
    $('session-title').textContent = `— replay of ${from}`;
    $('game').hidden = false;
    $('replay-bar').hidden = false;
    $('hud-watching-row').hidden = false;
    $('keys-help').textContent = 'Space: pause or play. Tab: automap. Pick a player, a speed, or a tick to go to.';
    document.body.dataset.state = 'replay';
    const replay = new ReplayPlayer(viewer, {
      onView: (view) => screen.onView(view),
      onStatus: (s, player) => this.show(s, player),
      onEnd: (s) => {
        if (s.matches === true) say(`Replay complete at tick ${s.tick}: world hash ${s.finalWorldHash}, the recorded end, reproduced.`);
        else if (s.matches === false) say(`This replay does not reproduce its recorded end: world hash ${s.finalWorldHash} at tick ${s.tick}, recorded ${s.recordedWorldHash}. It was recorded by build ${s.build}.`);
        else say(`Replay complete at tick ${s.tick} (the file has no end record to compare with).`);
      },
    });
    this.current = replay;
    replay.start();
    if (stopAt !== null) {
      replay.seek(stopAt);
      say(`Replay of level ${replay.status.levelEpoch}, stopped at tick ${replay.status.tick}. Press Play to go on.`);
    } else {
      say(`Playing the replay of level ${replay.status.levelEpoch} (build ${replay.status.build}).`);
    }
    this.show(replay.status, replay);
    canvas.focus();
  }

  /**
   * Watches a replay file the player picked or dropped.
   * @param {File} file
   */
  async watchFile(file) {
    let text;
    try {
      text = await replayTextOfFile(file);
    } catch (e) {
      this.page.fail(`Could not open ${file.name}: ${e instanceof Error ? e.message : e}`);
      return;
    }
    await this.watch(text, file.name, null);
  }

  /**
   * Fetches a replay file and watches it.
   * @param {string} url
   * @param {number|null} stopAt a tick to go to and pause at
   */
  async watchUrl(url, stopAt) {
    this.page.say('Loading the replay…');
    let text;
    try {
      const res = await fetch(url);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      text = await replayTextOf(res);
    } catch (e) {
      this.page.fail(`Could not load the replay at ${url}: ${e instanceof Error ? e.message : e}`);
      return;
    }
    await this.watch(text, url.split('/').pop() || url, stopAt);
  }

  /**
   * The replay bar and the HUD for the replay's status.
   * @param {import('./wasm.js').ViewerStatus} s
   * @param {ReplayPlayer} player
   */
  show(s, player) {
    // The replay reporting is the one watched, also while it is being set
    // up (its first report comes from its constructor): the Players list
    // names players from it, as the Player menu does.
    this.current = player;
    const { screen } = this.page;
    $('replay-toggle').textContent = player.playing ? 'Pause' : s.ended ? 'Play again' : 'Play';
    $('replay-position').textContent = `Tick ${s.tick} of ${s.lastTick}`;
    $('hud-tick').textContent = String(s.tick);
    const select = /** @type {HTMLSelectElement} */ ($('replay-player'));
    const ids = [...select.options].map((o) => o.value);
    if (JSON.stringify(ids) !== JSON.stringify(s.roster)) {
      select.replaceChildren(...s.roster.map((id) => new Option(displayNameOf(id, s.names[id]), id)));
    }
    select.value = player.player ?? '';
    // The list changes with the roster, the names and the player watched.
    const shown = JSON.stringify([s.roster, s.names, player.player]);
    if (shown !== this.rosterShown) {
      this.rosterShown = shown;
      screen.renderRoster(s.roster, s.names);
    }
    $('hud-difficulty').textContent = s.difficulty;
    $('hud-watching').textContent = player.player ? displayNameOf(player.player, s.names[player.player]) : '—';
  }
}
