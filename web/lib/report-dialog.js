// The Report dialog of the lobby and play pages: a player tells the
// lobby's moderators about a session (its name, spam, cheating,
// harassment), with an optional note. Built on first use, one per page.

import { LobbyError } from './lobby-error.js';

/** The reasons, as the API names them, and as players read them. */
export const REPORT_REASONS = [
  ['offensive_name', 'Offensive name or description'],
  ['spam', 'Spam or advertising'],
  ['cheating', 'Cheating'],
  ['harassment', 'Harassment'],
  ['other', 'Something else'],
];

/** @type {HTMLDialogElement|null} */
let dialog = null;

/** Builds the dialog once. @returns {HTMLDialogElement} */
function build() {
  const d = document.createElement('dialog');
  d.id = 'report-dialog';
  d.setAttribute('aria-labelledby', 'report-title');
  d.innerHTML = `
    <form method="dialog" class="report-form">
      <h2 id="report-title">Report a session</h2>
      <p class="muted" id="report-what"></p>
      <p class="field">
        <label for="report-reason">What is wrong</label>
        <select id="report-reason" name="reason" required></select>
      </p>
      <p class="field">
        <label for="report-text">What happened (optional)</label>
        <textarea id="report-text" name="text" maxlength="500" rows="3"></textarea>
      </p>
      <p class="error" id="report-error" role="alert"></p>
      <p class="row">
        <button type="submit" id="report-send" value="send">Send report</button>
        <button type="button" id="report-cancel" class="secondary">Cancel</button>
      </p>
    </form>`;
  const select = /** @type {HTMLSelectElement} */ (d.querySelector('#report-reason'));
  for (const [value, label] of REPORT_REASONS) select.append(new Option(label, value));
  d.querySelector('#report-cancel')?.addEventListener('click', () => d.close('cancel'));
  document.body.append(d);
  return d;
}

/**
 * Asks the player why they report session `code` and sends it. Resolves
 * with `true` once the report was taken, `false` when cancelled.
 * @param {import('./lobby-client.js').LobbyClient} client
 * @param {string} code
 * @param {string} name the session's name, as the page shows it
 * @returns {Promise<boolean>}
 */
export function openReport(client, code, name) {
  dialog ??= build();
  const d = dialog;
  const form = /** @type {HTMLFormElement} */ (d.querySelector('form'));
  const error = /** @type {HTMLElement} */ (d.querySelector('#report-error'));
  const send = /** @type {HTMLButtonElement} */ (d.querySelector('#report-send'));
  /** @type {HTMLElement} */ (d.querySelector('#report-what')).textContent =
    `“${name || code}” (${code}). The lobby's moderators read every report.`;
  form.reset();
  error.textContent = '';
  return new Promise((resolve) => {
    /** @param {SubmitEvent} ev */
    const onSubmit = async (ev) => {
      ev.preventDefault();
      const reason = /** @type {HTMLSelectElement} */ (d.querySelector('#report-reason')).value;
      const text = /** @type {HTMLTextAreaElement} */ (d.querySelector('#report-text')).value.trim();
      send.disabled = true;
      try {
        await client.report(code, /** @type {any} */ (reason), text);
        finish(true);
      } catch (e) {
        error.textContent = e instanceof LobbyError && e.status === 429
          ? 'Too many reports from here for now; the moderators have yours.'
          : `Could not send the report: ${e instanceof Error ? e.message : e}`;
      } finally {
        send.disabled = false;
      }
    };
    const onClose = () => finish(false);
    /** @param {boolean} sent */
    const finish = (sent) => {
      form.removeEventListener('submit', onSubmit);
      d.removeEventListener('close', onClose);
      if (d.open) d.close();
      resolve(sent);
    };
    form.addEventListener('submit', onSubmit);
    d.addEventListener('close', onClose);
    d.showModal();
  });
}
