// Invite links: the /play URL of a session, and copying it for a friend.

/**
 * The link that joins `code` from this lobby.
 * @param {string} code
 * @param {string} [origin] the lobby's origin (this page's by default)
 */
export function inviteUrl(code, origin = window.location.origin) {
  const url = new URL('/play', origin);
  url.searchParams.set('code', code);
  return url.toString();
}

/**
 * Puts `text` on the clipboard: the Clipboard API where the page may use it
 * (a secure context), else a selected text area and the copy command.
 * Resolves with whether it worked.
 * @param {string} text
 */
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Refused (no permission, no focus): try the copy command.
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

/**
 * Wires a "Copy invite link" button: copies the link of `code()` and says
 * so on the button for a moment (or shows the link to copy by hand).
 * @param {HTMLButtonElement} button
 * @param {() => string} code the session's code ('' before there is one)
 */
export function wireInviteButton(button, code) {
  const label = button.textContent;
  button.addEventListener('click', async () => {
    const c = code();
    if (!c) return;
    const url = inviteUrl(c);
    const ok = await copyText(url);
    button.textContent = ok ? 'Link copied' : url;
    setTimeout(() => { button.textContent = label; }, 2500);
  });
}
