// Who left the game: players the roster lost are shown as left, until they
// come back, either as the same player (a rejoin) or as a new player under
// the same name (a fresh join after the host let the old one go).

/**
 * The Players list's rows: everyone in the roster, then everyone who left.
 */
export class Departures {
  constructor() {
    /** @type {string[]} the roster last followed */
    this.roster = [];
    /** @type {Map<string, string>} who left: id → name as the session knew it */
    this.left = new Map();
  }

  /**
   * Follows the roster as it stands now.
   * @param {string[]} roster ids in the game now
   * @param {Record<string, string>} names every id's name as the session knows it
   * @returns {{id: string, left: boolean}[]} the rows to show, in order
   */
  follow(roster, names) {
    for (const id of this.roster) {
      if (!roster.includes(id)) this.left.set(id, names[id] ?? '');
    }
    for (const id of roster) {
      this.left.delete(id);
      const name = names[id];
      if (!name) continue;
      for (const [gone, was] of this.left) {
        if (was === name) this.left.delete(gone);
      }
    }
    this.roster = [...roster];
    return [
      ...roster.map((id) => ({ id, left: false })),
      ...[...this.left.keys()].map((id) => ({ id, left: true })),
    ];
  }
}
