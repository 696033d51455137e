// What /play and /host share around the game view: the settings panel
// (applied to the controls and the sound as it changes), the sound (started
// on the first key press, click or tap), fullscreen with pointer lock, mute,
// the invite button of the HUD, touch controls on touch devices, and the
// netgraph overlay.

import { Controls } from './controls.js';
import { NetgraphOverlay } from './netgraph.js';
import { SettingsPanel } from './settings-panel.js';
import { wireInviteButton } from './invite.js';
import { saveSettings } from './settings.js';
import { Sound } from './sound.js';
import { TouchControls, touchDevice } from './touch.js';

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

export class GameTools {
  /**
   * @param {import('./controls.js').Controls} controls the page's controls (settings apply to them)
   * @param {{code: () => string, onToggleMap: () => void, onSettings?: (s: import('./settings.js').Settings) => void,
   *   netgraph: () => import('./netgraph.js').NetgraphReading|null}} hooks
   *   the session's code once there is one; the automap toggle (the touch
   *   Map button); every change of the settings (the screen's view quality);
   *   the netgraph's figures now
   */
  constructor(controls, hooks) {
    const code = hooks.code;
    this.sound = new Sound();
    this.netgraph = new NetgraphOverlay($('view-wrap'), hooks.netgraph);
    this.panel = new SettingsPanel((settings) => {
      this.netgraph.show(settings.netgraph);
      this.sound.setVolume(settings.volume, settings.muted);
      controls.useSettings(settings);
      hooks.onSettings?.(settings);
    });
    /** @type {TouchControls|null} */
    this.touch = null;
    if (touchDevice()) {
      document.body.classList.add('touch');
      this.touch = new TouchControls($('view-wrap'), controls, { onToggleMap: hooks.onToggleMap });
    }
    const unlock = () => this.sound.unlock();
    for (const type of ['keydown', 'pointerdown', 'touchstart']) {
      window.addEventListener(type, unlock, { capture: true, passive: true });
    }
    this.canvas = /** @type {HTMLCanvasElement} */ ($('view'));
    $('settings-button').addEventListener('click', () => this.panel.open());
    $('fullscreen-button').addEventListener('click', () => this.toggleFullscreen());
    wireInviteButton(/** @type {HTMLButtonElement} */ ($('invite-button')), code);
    document.addEventListener('fullscreenchange', () => {
      $('fullscreen-button').textContent = document.fullscreenElement ? 'Leave fullscreen' : 'Fullscreen';
    });
  }

  /**
   * Plays what a tick's view brought (GameScreen's onSounds hook).
   * @param {import('./view-sounds.js').SoundEvent[]} events
   * @param {import('./sound.js').Listener|null} listener
   */
  playSounds(events, listener) {
    this.sound.playEvents(events, listener);
  }

  /** The sound's state for the test view: the context, and voices started. */
  audioState() {
    return { state: this.sound.state(), started: this.sound.started, byName: { ...this.sound.byName } };
  }

  /**
   * How to play on this device, for the status line.
   * @param {string} leave what Escape does ("leave", "end the session")
   */
  howToPlay(leave) {
    return this.touch
      ? 'Left stick to move, drag the view to turn, Fire and Use buttons, Map for the automap.'
      : `WASD or arrows to move, mouse (click the view) or arrows to turn, Space to fire, E to use, Tab for the map, F for fullscreen, Esc to ${leave}.`;
  }

  /** A prompt of these tools is open: the player stands still. */
  paused() {
    return this.panel.isOpen();
  }

  /** The game (view and HUD) fills the screen, with the mouse captured; or back. */
  async toggleFullscreen() {
    try {
      if (document.fullscreenElement) {
        await document.exitFullscreen();
        return;
      }
      await $('game').requestFullscreen?.({ navigationUI: 'hide' });
      this.canvas.requestPointerLock?.();
      this.canvas.focus();
    } catch {
      // Refused (no user gesture, or not allowed in this frame): stay as is.
    }
  }

  /** Sound off, or back on (saved like any setting). */
  toggleMute() {
    this.flip('muted');
  }

  /** The netgraph shown, or hidden (saved like any setting). */
  toggleNetgraph() {
    this.flip('netgraph');
  }

  /** @param {'muted'|'netgraph'} key a setting that is on or off */
  flip(key) {
    const s = this.panel.settings;
    s[key] = !s[key];
    saveSettings(s);
    this.panel.fill();
    this.panel.onChange(s);
  }

  /**
   * Shows the invite button once the session's code is known.
   * @param {boolean} shown
   */
  showInvite(shown) {
    $('invite-button').hidden = !shown;
  }
}

/**
 * The controls of a game page with the tools around them, wired as /play and
 * /host both want them: input while the game runs and no prompt is open,
 * Escape opens the leave prompt, the automap, fullscreen, mute, weapon
 * stepping through what the player owns, and the invite buttons.
 * @param {HTMLCanvasElement} canvas the view
 * @param {import('./game-screen.js').GameScreen} screen
 * @param {HTMLDialogElement} dialog the page's leave prompt
 * @param {{active: () => boolean, onInput: (input: any) => void, code: () => string,
 *   netgraph: () => import('./netgraph.js').NetgraphReading|null}} hooks
 *   whether the game runs; where this player's input goes; the session's
 *   code; the netgraph's figures now
 * @returns {{controls: Controls, tools: GameTools}}
 */
export function gameControls(canvas, screen, dialog, hooks) {
  /** @type {GameTools|undefined} */
  let tools;
  const controls = new Controls(canvas, {
    active: hooks.active,
    paused: () => dialog.open || (tools?.paused() ?? false),
    onInput: hooks.onInput,
    onEscape: () => {
      if (!dialog.open) dialog.showModal();
    },
    onToggleMap: () => screen.toggleMap(),
    onFullscreen: () => tools?.toggleFullscreen(),
    onMute: () => tools?.toggleMute(),
    onToggleNetgraph: () => tools?.toggleNetgraph(),
    weapons: () => {
      const me = screen.mine();
      return me ? { slot: me.weapon, owned: me.ownedWeapons ?? [] } : null;
    },
  });
  controls.attach();
  tools = new GameTools(controls, {
    code: hooks.code,
    onToggleMap: () => screen.toggleMap(),
    onSettings: (settings) => { screen.resolutionScale = settings.viewScale; },
    netgraph: hooks.netgraph,
  });
  wireInviteButton(/** @type {HTMLButtonElement} */ ($('waiting-invite-button')), hooks.code);
  return { controls, tools };
}
