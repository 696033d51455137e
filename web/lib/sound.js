// The game's sound, synthesized with the Web Audio API (nothing to
// download): one short voice per event name of web/lib/view-sounds.js,
// placed in stereo by where it happened relative to the listener's view and
// quieter with distance. The AudioContext starts on the player's first key
// press, click or tap (browsers allow sound only after one); volume and
// mute come from the settings.

/** Beyond this many tiles an event is not heard. */
const HEARING_TILES = 24;

/**
 * The shortest gap between two starts of one voice, in seconds: a
 * flamethrower spends gas every tick, and thirty overlapping voices a
 * second would be noise, not a sound.
 */
const MIN_GAP_S = 0.06;

/**
 * @typedef {Object} Listener
 * @property {number} x
 * @property {number} y
 * @property {number} planeX the view's rightward direction (any length)
 * @property {number} planeY
 */

/**
 * Where a sound at (x, y) sits for `listener`: stereo pan (-1 left .. 1
 * right) and a gain (1 at the listener, falling with distance, 0 out of
 * hearing). Without a listener (a page that watches), everything is centred.
 * @param {Listener|null} listener
 * @param {number} x
 * @param {number} y
 */
export function placeSound(listener, x, y) {
  if (!listener) return { pan: 0, gain: 1 };
  const dx = x - listener.x;
  const dy = y - listener.y;
  const dist = Math.hypot(dx, dy);
  if (dist > HEARING_TILES) return { pan: 0, gain: 0 };
  const right = Math.hypot(listener.planeX, listener.planeY) || 1;
  const pan = dist < 1e-6 ? 0 : (dx * listener.planeX + dy * listener.planeY) / (dist * right);
  return { pan: Math.max(-1, Math.min(1, pan)) * 0.8, gain: 1 / (1 + dist * 0.35) };
}

/**
 * One voice: how it sounds.
 * @typedef {Object} Voice
 * @property {'noise'|OscillatorType} wave
 * @property {number} ms length
 * @property {number} [from] start frequency, Hz (oscillators) or filter cutoff (noise)
 * @property {number} [to] end frequency
 * @property {number} [level] loudness 0..1
 * @property {number[]} [notes] a short tune instead (Hz, each ms/notes.length long)
 */

/** @type {Record<string, Voice>} */
export const VOICES = {
  'shot-knife': { wave: 'noise', ms: 60, from: 2500, to: 1200, level: 0.25 },
  'shot-pistol': { wave: 'noise', ms: 110, from: 3000, to: 400, level: 0.6 },
  'shot-shotgun': { wave: 'noise', ms: 260, from: 1800, to: 150, level: 0.8 },
  'shot-smg': { wave: 'noise', ms: 60, from: 3500, to: 900, level: 0.45 },
  'shot-rocket launcher': { wave: 'noise', ms: 420, from: 900, to: 80, level: 0.7 },
  'shot-flamethrower': { wave: 'noise', ms: 160, from: 700, to: 300, level: 0.35 },
  'enemy-hit': { wave: 'square', ms: 70, from: 220, to: 110, level: 0.25 },
  'enemy-death': { wave: 'sawtooth', ms: 340, from: 300, to: 50, level: 0.35 },
  'enemy-alert': { wave: 'square', ms: 180, notes: [440, 660], level: 0.2 },
  hurt: { wave: 'square', ms: 120, from: 160, to: 90, level: 0.35 },
  door: { wave: 'noise', ms: 450, from: 300, to: 120, level: 0.4 },
  pickup: { wave: 'sine', ms: 120, from: 620, to: 1240, level: 0.3 },
  key: { wave: 'triangle', ms: 300, notes: [660, 880, 1320], level: 0.35 },
  'player-down': { wave: 'triangle', ms: 700, from: 420, to: 90, level: 0.5 },
  revived: { wave: 'triangle', ms: 450, from: 200, to: 640, level: 0.45 },
  'level-end': { wave: 'square', ms: 900, notes: [523, 659, 784, 1047], level: 0.3 },
};

export class Sound {
  constructor() {
    /** @type {AudioContext|null} */
    this.ctx = null;
    /** @type {GainNode|null} */
    this.master = null;
    /** @type {AudioBuffer|null} */
    this.noise = null;
    this.volume = 0.8;
    this.muted = false;
    /** Voices started so far, and by name (tests read them). */
    this.started = 0;
    /** @type {Record<string, number>} */
    this.byName = {};
    /** When each voice last started (context time). @type {Map<string, number>} */
    this.lastStart = new Map();
  }

  /** Creates or resumes the AudioContext: call from a user gesture. */
  unlock() {
    if (!this.ctx) {
      const AC = window.AudioContext ?? /** @type {any} */ (window).webkitAudioContext;
      if (!AC) return;
      this.ctx = /** @type {AudioContext} */ (new AC());
      this.master = this.ctx.createGain();
      this.master.connect(this.ctx.destination);
      const n = Math.round(this.ctx.sampleRate * 0.5);
      this.noise = this.ctx.createBuffer(1, n, this.ctx.sampleRate);
      const data = this.noise.getChannelData(0);
      // A fixed pattern (the same every run); any noise will do.
      let seed = 0x2545f491;
      for (let i = 0; i < n; i++) {
        seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5;
        data[i] = ((seed >>> 0) / 0xffffffff) * 2 - 1;
      }
      this.apply();
    }
    if (this.ctx.state === 'suspended') this.ctx.resume().catch(() => {});
  }

  /** The context's state ('none' before the first gesture). */
  state() {
    return this.ctx?.state ?? 'none';
  }

  /**
   * @param {number} volume 0..1
   * @param {boolean} muted
   */
  setVolume(volume, muted) {
    this.volume = volume;
    this.muted = muted;
    this.apply();
  }

  apply() {
    if (this.master && this.ctx) this.master.gain.setValueAtTime(this.muted ? 0 : this.volume, this.ctx.currentTime);
  }

  /**
   * Plays the events of one tick, placed for `listener`.
   * @param {import('./view-sounds.js').SoundEvent[]} events
   * @param {Listener|null} listener
   */
  playEvents(events, listener) {
    if (!this.ctx || this.ctx.state !== 'running' || this.muted || this.volume <= 0) return;
    // A burst (a whole squad dying at once) plays each kind once.
    const seen = new Set();
    for (const e of events) {
      const { pan, gain } = placeSound(listener, e.x, e.y);
      if (gain <= 0.03 || seen.has(e.name)) continue;
      seen.add(e.name);
      this.play(e.name, pan, gain);
    }
  }

  /**
   * Starts one voice now.
   * @param {string} name
   * @param {number} pan
   * @param {number} gain
   */
  play(name, pan, gain) {
    const ctx = this.ctx;
    const voice = VOICES[name];
    if (!ctx || !this.master || !voice) return;
    const t = ctx.currentTime;
    if (t - (this.lastStart.get(name) ?? -Infinity) < MIN_GAP_S) return;
    this.lastStart.set(name, t);
    const end = t + voice.ms / 1000;
    const env = ctx.createGain();
    env.gain.setValueAtTime((voice.level ?? 0.5) * gain, t);
    env.gain.exponentialRampToValueAtTime(0.001, end);
    const panner = ctx.createStereoPanner();
    panner.pan.setValueAtTime(pan, t);
    env.connect(panner).connect(this.master);
    /** @type {AudioScheduledSourceNode} */
    let source;
    if (voice.wave === 'noise') {
      const src = ctx.createBufferSource();
      src.buffer = this.noise;
      const filter = ctx.createBiquadFilter();
      filter.type = 'lowpass';
      filter.frequency.setValueAtTime(voice.from ?? 2000, t);
      filter.frequency.exponentialRampToValueAtTime(voice.to ?? 200, end);
      src.connect(filter).connect(env);
      source = src;
    } else {
      const osc = ctx.createOscillator();
      osc.type = voice.wave;
      if (voice.notes) {
        const step = voice.ms / 1000 / voice.notes.length;
        voice.notes.forEach((f, i) => osc.frequency.setValueAtTime(f, t + i * step));
      } else {
        osc.frequency.setValueAtTime(voice.from ?? 440, t);
        osc.frequency.exponentialRampToValueAtTime(voice.to ?? 440, end);
      }
      osc.connect(env);
      source = osc;
    }
    source.start(t);
    source.stop(end + 0.02);
    source.onended = () => panner.disconnect();
    this.started += 1;
    this.byName[name] = (this.byName[name] ?? 0) + 1;
  }
}
