// Touch controls for phones and tablets, over the game view: a move stick
// on the left (walk and step), a turn area on the right (drag to turn, like
// the mouse), and buttons for fire, use, weapon and map, sized for thumbs.
// They feed the same Controls as keys do (held actions, turns, weapon
// steps), so a tap on Fire is a shot like a tap on Space.

/** Stick travel (CSS px) before a direction counts as held. */
const STICK_DEAD_PX = 14;
/** Mouse pixels of turn per CSS pixel dragged on the turn area. */
const TURN_PX_PER_DRAG_PX = 2.5;

/** Whether this device's main pointer is a finger. */
export function touchDevice() {
  return window.matchMedia?.('(pointer: coarse)').matches || navigator.maxTouchPoints > 0;
}

/**
 * @param {string} tag
 * @param {Record<string, string>} attrs
 * @param {string} [text]
 */
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text) e.textContent = text;
  return e;
}

export class TouchControls {
  /**
   * @param {HTMLElement} host the element over the view that holds the controls
   * @param {import('./controls.js').Controls} controls
   * @param {{onToggleMap: () => void}} hooks
   */
  constructor(host, controls, hooks) {
    this.controls = controls;
    this.hooks = hooks;
    /** Held by the stick. @type {Set<string>} */
    this.stickHeld = new Set();
    /** Held by buttons. @type {Set<string>} */
    this.buttonHeld = new Set();
    this.root = el('div', { class: 'touch-controls', id: 'touch-controls' });
    this.stick = el('div', { class: 'touch-stick', 'aria-label': 'Move' });
    this.knob = el('div', { class: 'touch-knob' });
    this.stick.append(this.knob);
    this.turn = el('div', { class: 'touch-turn', 'aria-label': 'Turn: drag' });
    const buttons = el('div', { class: 'touch-buttons' });
    /** @type {[string, string, string][]} id, label, what it does */
    const defs = [['touch-fire', 'Fire', 'fire'], ['touch-use', 'Use', 'use'],
      ['touch-weapon', 'Weapon', 'weapon'], ['touch-map', 'Map', 'map']];
    for (const [id, label, what] of defs) {
      const b = el('button', { type: 'button', id, class: `touch-button touch-${what}`, 'data-what': what }, label);
      buttons.append(b);
    }
    this.root.append(this.turn, this.stick, buttons);
    host.append(this.root);
    this.wireStick();
    this.wireTurn();
    this.wireButtons(buttons);
  }

  push() {
    this.controls.setTouchHeld(new Set([...this.stickHeld, ...this.buttonHeld]));
  }

  wireStick() {
    /** @type {{id: number, x: number, y: number}|null} */
    let origin = null;
    const move = (/** @type {PointerEvent} */ ev) => {
      if (!origin || ev.pointerId !== origin.id) return;
      const dx = ev.clientX - origin.x;
      const dy = ev.clientY - origin.y;
      const r = this.stick.clientWidth / 2 || 60;
      const k = Math.min(1, r / Math.max(1, Math.hypot(dx, dy)));
      this.knob.style.transform = `translate(${dx * k}px, ${dy * k}px)`;
      const held = new Set();
      if (dy < -STICK_DEAD_PX) held.add('moveForward');
      if (dy > STICK_DEAD_PX) held.add('moveBack');
      if (dx < -STICK_DEAD_PX) held.add('strafeLeft');
      if (dx > STICK_DEAD_PX) held.add('strafeRight');
      this.stickHeld = held;
      this.push();
    };
    const end = (/** @type {PointerEvent} */ ev) => {
      if (!origin || ev.pointerId !== origin.id) return;
      origin = null;
      this.knob.style.transform = '';
      this.stickHeld = new Set();
      this.push();
    };
    this.stick.addEventListener('pointerdown', (ev) => {
      ev.preventDefault();
      const r = this.stick.getBoundingClientRect();
      origin = { id: ev.pointerId, x: r.left + r.width / 2, y: r.top + r.height / 2 };
      this.stick.setPointerCapture?.(ev.pointerId);
      move(ev);
    });
    this.stick.addEventListener('pointermove', move);
    this.stick.addEventListener('pointerup', end);
    this.stick.addEventListener('pointercancel', end);
  }

  wireTurn() {
    /** @type {{id: number, x: number}|null} */
    let last = null;
    this.turn.addEventListener('pointerdown', (ev) => {
      ev.preventDefault();
      last = { id: ev.pointerId, x: ev.clientX };
      this.turn.setPointerCapture?.(ev.pointerId);
    });
    this.turn.addEventListener('pointermove', (ev) => {
      if (!last || ev.pointerId !== last.id) return;
      this.controls.turnBy((ev.clientX - last.x) * TURN_PX_PER_DRAG_PX);
      last.x = ev.clientX;
    });
    const end = (/** @type {PointerEvent} */ ev) => {
      if (last && ev.pointerId === last.id) last = null;
    };
    this.turn.addEventListener('pointerup', end);
    this.turn.addEventListener('pointercancel', end);
  }

  /** @param {HTMLElement} buttons */
  wireButtons(buttons) {
    for (const b of buttons.querySelectorAll('button')) {
      const what = /** @type {HTMLElement} */ (b).dataset.what ?? '';
      b.addEventListener('pointerdown', (ev) => {
        ev.preventDefault();
        if (what === 'fire' || what === 'use') {
          this.buttonHeld.add(what);
          this.push();
        } else if (what === 'weapon') {
          this.controls.weaponStep(1);
        } else if (what === 'map') {
          this.hooks.onToggleMap();
        }
      });
      const release = () => {
        if (this.buttonHeld.delete(what)) this.push();
      };
      b.addEventListener('pointerup', release);
      b.addEventListener('pointercancel', release);
      b.addEventListener('pointerleave', release);
      // No long-press menu or double-tap zoom on a thumb's button.
      b.addEventListener('contextmenu', (ev) => ev.preventDefault());
    }
  }
}
