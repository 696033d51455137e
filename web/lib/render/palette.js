// @ts-check
// The renderer's colours, one place. The automap keeps the top-down view's
// tile colours (play.js) so both views read the same.

export const PALETTE = Object.freeze({
  // Tiles on the automap (as in play.js).
  mapFloor: '#2b2a33',
  mapWall: '#8a8796',
  mapDoor: '#b86f2c',
  mapExit: '#3fbf6f',
  mapBackground: '#111015',
  // The colour far surfaces fade into (RGB).
  fog: [13, 12, 18],
  // Things.
  me: '#ffffff',
  player: '#7fe0c0',
  playerDown: '#6b6b73',
  mine: '#ff7a3d',
  key: '#ffd447',
  enemy: { grunt: '#d9503f', brute: '#9c5bd6', sniper: '#3fa7d9' },
  pickup: { health: '#ff5a5a', bullets: '#e0b64a', rockets: '#ff9640', smg: '#6aa8ff', gas: '#ff6b3d', weapon: '#c78bff', key: '#ffd447' },
  // HUD (as style.css).
  hudText: '#ecebf2',
  hudMuted: '#a9a7b8',
  hudPanel: 'rgba(21, 20, 26, 0.72)',
  accent: '#ffb347',
  danger: '#ff5a5a',
  good: '#5fd38a',
});
