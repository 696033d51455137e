// The error every lobby call and join throws: the API's status and error
// code, or a join that cannot proceed.

/** An error answer of the API (or a join that cannot proceed). */
export class LobbyError extends Error {
  /**
   * @param {number} status HTTP status (0 when the server was unreachable)
   * @param {string} code the API's snake_case error code, or a client-side one
   * @param {string} message human-readable text
   * @param {number | null} [retryAfterMs] the server's Retry-After, when it sent one
   */
  constructor(status, code, message, retryAfterMs = null) {
    super(message);
    this.name = 'LobbyError';
    this.status = status;
    this.code = code;
    this.retryAfterMs = retryAfterMs;
    /** @type {string | null} the host's build, on a join refused for a version mismatch */
    this.hostBuild = null;
  }
}
