// A join that fails to connect is tried once more before the player hears
// of it (issue 46): a fresh round, a fresh connection. Only a connection
// that failed is retried; the lobby's refusals (no such session, full,
// rate limited) are answers, not accidents.

/** Tries a join may take, the first included. */
export const JOIN_ATTEMPTS = 2;

/** The errors a second try may cure: the WebRTC connection failed. */
const RETRYABLE = new Set(['connect_timeout', 'ice_gathering_timeout']);

/**
 * Whether a join that failed with `e` is worth another try.
 * @param {unknown} e
 */
export function isRetryable(e) {
  return typeof e === 'object' && e !== null && RETRYABLE.has(/** @type {any} */ (e).code);
}

/**
 * Runs `attempt` (one whole join: round, answer, channels) and, when it
 * fails in a way a second try may cure, once more; `onRetry` hears why
 * before the second try. The last error is thrown.
 * @template T
 * @param {(n: number) => Promise<T>} attempt called with 1, then 2
 * @param {(e: unknown) => void} [onRetry]
 * @returns {Promise<T>}
 */
export async function withOneRetry(attempt, onRetry = () => {}) {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (e) {
      if (n >= JOIN_ATTEMPTS || !isRetryable(e)) throw e;
      onRetry(e);
    }
  }
}
