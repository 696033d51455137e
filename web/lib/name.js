// @ts-check
// How a page names a player. The names themselves come sanitized from the
// WebAssembly session (protocol/src/name.rs: every receiver cleans a name,
// so a page never sanitizes one itself).

/**
 * The name to show for a player: its name, or a fallback from the id when
 * the player chose none.
 * @param {string} playerId
 * @param {string|undefined} name as the session's status gives it
 */
export function displayNameOf(playerId, name) {
  if (name) return name;
  if (playerId === 'host') return 'Host';
  const m = /^guest-(\d+)$/.exec(playerId);
  if (m) return `Guest-${m[1]}`;
  return playerId;
}
