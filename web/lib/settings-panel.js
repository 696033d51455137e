// The settings panel of the game pages (/play and /host): one dialog, built
// here so both pages get the same one, that edits the player's settings
// (web/lib/settings.js) and saves every change at once.

import {
  ACTIONS, SENSITIVITY, VIEW_SCALES, defaultSettings, keyLabel, loadSettings, rebind, reservedKey, saveSettings,
} from './settings.js';

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node|string)[]} [children]
 */
function el(tag, attrs = {}, children = []) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

export class SettingsPanel {
  /**
   * @param {(settings: import('./settings.js').Settings) => void} onChange called with every saved change (and once now)
   */
  constructor(onChange) {
    this.onChange = onChange;
    this.settings = loadSettings();
    /** The action waiting for a key, while one is. @type {string|null} */
    this.capturing = null;
    this.dialog = /** @type {HTMLDialogElement} */ (el('dialog', { id: 'settings-dialog', 'aria-labelledby': 'settings-heading' }));
    this.build();
    document.body.append(this.dialog);
    this.dialog.addEventListener('keydown', (ev) => this.captureKey(ev), true);
    this.onChange(this.settings);
  }

  /** Whether the panel is open (the player stands still meanwhile). */
  isOpen() {
    return this.dialog.open;
  }

  open() {
    if (document.pointerLockElement) document.exitPointerLock();
    this.fill();
    this.dialog.showModal();
  }

  build() {
    const sens = el('input', {
      id: 'setting-sensitivity', type: 'range', min: String(SENSITIVITY.min), max: String(SENSITIVITY.max), step: '0.05',
    });
    const sensOut = el('output', { id: 'setting-sensitivity-value', for: 'setting-sensitivity' });
    const invert = el('input', { id: 'setting-invert', type: 'checkbox' });
    const volume = el('input', { id: 'setting-volume', type: 'range', min: '0', max: '100', step: '1' });
    const volumeOut = el('output', { id: 'setting-volume-value', for: 'setting-volume' });
    const muted = el('input', { id: 'setting-muted', type: 'checkbox' });
    const netgraph = el('input', { id: 'setting-netgraph', type: 'checkbox' });
    const quality = el('select', { id: 'setting-view-scale' },
      VIEW_SCALES.map(([v, label]) => el('option', { value: String(v) }, [`${label} (${Math.round(v * 100)}%)`])));
    const keys = el('tbody', { id: 'setting-keys' });
    const reset = el('button', { type: 'button', id: 'settings-reset', class: 'secondary' }, ['Reset to defaults']);
    const done = el('button', { type: 'submit', id: 'settings-done' }, ['Done']);
    this.dialog.append(el('form', { method: 'dialog', class: 'settings' }, [
      el('h2', { id: 'settings-heading' }, ['Settings']),
      el('p', { class: 'field' }, [el('label', { for: 'setting-sensitivity' }, ['Mouse and stick sensitivity']), sens, sensOut]),
      el('p', {}, [el('label', {}, [invert, ' Invert turning (mouse and right stick)'])]),
      el('p', { class: 'field' }, [el('label', { for: 'setting-volume' }, ['Volume']), volume, volumeOut]),
      el('p', {}, [el('label', {}, [muted, ' Mute'])]),
      el('p', {}, [el('label', {}, [netgraph, ' Show the netgraph: network figures over the view (F3 or `)'])]),
      el('p', { class: 'field' }, [el('label', { for: 'setting-view-scale' }, ['View quality (lower is faster on a slow device)']), quality]),
      el('table', { class: 'keys' }, [
        el('caption', { class: 'muted' }, ['Keys: pick an action, then press its new key (Esc keeps the old one). 1–6 pick weapons.']),
        keys,
      ]),
      el('p', { class: 'row' }, [done, reset]),
    ]));
    const save = () => {
      saveSettings(this.settings);
      this.settings = loadSettings();
      this.fill();
      this.onChange(this.settings);
    };
    sens.addEventListener('input', () => {
      this.settings.sensitivity = Number(/** @type {HTMLInputElement} */ (sens).value);
      save();
    });
    invert.addEventListener('change', () => {
      this.settings.invert = /** @type {HTMLInputElement} */ (invert).checked;
      save();
    });
    volume.addEventListener('input', () => {
      this.settings.volume = Number(/** @type {HTMLInputElement} */ (volume).value) / 100;
      save();
    });
    muted.addEventListener('change', () => {
      this.settings.muted = /** @type {HTMLInputElement} */ (muted).checked;
      save();
    });
    netgraph.addEventListener('change', () => {
      this.settings.netgraph = /** @type {HTMLInputElement} */ (netgraph).checked;
      save();
    });
    quality.addEventListener('change', () => {
      this.settings.viewScale = Number(/** @type {HTMLSelectElement} */ (quality).value);
      save();
    });
    reset.addEventListener('click', () => {
      this.settings = defaultSettings();
      save();
    });
    keys.addEventListener('click', (ev) => {
      const button = /** @type {HTMLElement} */ (ev.target).closest('button[data-action]');
      if (!button) return;
      this.capturing = /** @type {HTMLElement} */ (button).dataset.action ?? null;
      button.textContent = 'Press a key…';
    });
    this.save = save;
  }

  /**
   * While an action waits for its key: the next key press binds it.
   * @param {KeyboardEvent} ev
   */
  captureKey(ev) {
    if (!this.capturing) return;
    ev.preventDefault();
    ev.stopPropagation();
    const action = this.capturing;
    this.capturing = null;
    if (ev.code !== 'Escape' && !reservedKey(ev.code)) {
      this.settings.bindings = rebind(this.settings.bindings, action, ev.code);
    }
    this.save?.();
  }

  /** Shows the current settings in the controls. */
  fill() {
    const s = this.settings;
    const input = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ (this.dialog.querySelector(`#${id}`));
    input('setting-sensitivity').value = String(s.sensitivity);
    input('setting-sensitivity-value').textContent = `${s.sensitivity.toFixed(2)}×`;
    input('setting-invert').checked = s.invert;
    input('setting-volume').value = String(Math.round(s.volume * 100));
    input('setting-volume-value').textContent = `${Math.round(s.volume * 100)}%`;
    input('setting-muted').checked = s.muted;
    input('setting-netgraph').checked = s.netgraph;
    input('setting-view-scale').value = String(s.viewScale);
    input('setting-keys').replaceChildren(...ACTIONS.map(([action, label]) => el('tr', {}, [
      el('th', { scope: 'row' }, [label]),
      el('td', {}, [el('button', { type: 'button', class: 'secondary', 'data-action': action },
        [(s.bindings[action] ?? []).map(keyLabel).join(', ') || 'none'])]),
    ])));
  }
}
