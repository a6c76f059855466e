// Copy to the clipboard: the async Clipboard API where the page may use it, else a selected
// textarea and document.execCommand('copy') (a VS Code webview, a file:// snapshot in some
// browsers, a denied permission). The panel's copy buttons carry their text (data-copy) or ask
// for it when clicked (data-copy-json: the whole node or Cell, built then).
import { dimText, escapeHtml as h } from './format';
import type { Dim, Tensor } from './protocol';

/** A copy button (an icon; `label` is its accessible name and tooltip). */
export function copyButton(label: string, text: string): string {
  return `<button type="button" class="copy" data-copy="${h(text)}" title="${h(label)}" aria-label="${h(label)}">${COPY_ICON}</button>`;
}

/** A button copying JSON built when clicked (`what`: "node" or "cell"). */
export function copyJsonButton(label: string, what: string): string {
  return `<button type="button" class="copy copy-json" data-copy-json="${h(what)}" title="${h(label)}" aria-label="${h(label)}">${COPY_ICON}<span>JSON</span></button>`;
}

export const COPY_ICON = '<svg class="ico" viewBox="0 0 16 16" width="13" height="13" aria-hidden="true" focusable="false" fill="none" ' +
  'stroke="currentColor" stroke-width="1.4" stroke-linejoin="round"><rect x="5.5" y="5.5" width="8" height="8.5" rx="1.5"/>' +
  '<path d="M10.5 5.5V3.5A1.5 1.5 0 0 0 9 2H4A1.5 1.5 0 0 0 2.5 3.5V10A1.5 1.5 0 0 0 4 11.5h1.5"/></svg>';

/** A shape as Python writes it: "(1, 64, 56, 56)", "(N, 3, H, W)", "(8,)"; unranked "(...)". */
export function shapeTuple(t: Tensor | { shape?: Dim[]; unranked?: boolean } | undefined): string {
  if (!t) return '()';
  if (t.unranked) return '(...)';
  const s = (t.shape ?? []).map(dimText);
  return `(${s.join(', ')}${s.length === 1 ? ',' : ''})`;
}

function legacyCopy(text: string): boolean {
  const ta = document.createElement('textarea');
  ta.value = text;
  ta.setAttribute('readonly', '');
  ta.style.position = 'fixed';
  ta.style.top = '-1000px';
  ta.style.opacity = '0';
  const prev = document.activeElement as HTMLElement | null;
  document.body.appendChild(ta);
  ta.select();
  let ok = false;
  try { ok = document.execCommand('copy'); } catch { ok = false; }
  ta.remove();
  prev?.focus?.();
  return ok;
}

/** Copies `text`; resolves with how (or false when neither way worked). */
export async function copyText(text: string): Promise<'clipboard' | 'execCommand' | false> {
  const cb = typeof navigator !== 'undefined' ? navigator.clipboard : undefined;
  if (cb?.writeText && (typeof window === 'undefined' || window.isSecureContext !== false)) {
    try {
      await cb.writeText(text);
      return 'clipboard';
    } catch { /* denied, or not focused: the fallback */ }
  }
  return legacyCopy(text) ? 'execCommand' : false;
}

/** Copies and shows it on the button ("Copied", or "Copy failed") and in a live region. */
export async function copyWithFeedback(button: HTMLElement, text: string, status: HTMLElement | null): Promise<boolean> {
  const how = await copyText(text);
  const what = (button.getAttribute('aria-label') ?? 'Copy').replace(/^Copy\s*/i, '');
  const msg = how ? `Copied${what ? ' ' + what : ''}` : 'Copy failed: the clipboard is not available here';
  button.classList.toggle('copied', !!how);
  button.classList.toggle('copy-failed', !how);
  button.dataset.feedback = how ? 'Copied' : 'Failed';
  if (status) {
    status.textContent = msg;
    status.classList.add('show');
  }
  const b = button as HTMLElement & { copyTimer?: number };
  if (b.copyTimer) clearTimeout(b.copyTimer);
  b.copyTimer = window.setTimeout(() => {
    button.classList.remove('copied', 'copy-failed');
    delete button.dataset.feedback;
    if (status && status.textContent === msg) status.classList.remove('show');
  }, 1600);
  return !!how;
}
