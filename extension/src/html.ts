// The graph view's webview HTML: the webview/ app (app.css, app.js) with the layout worker's
// source inlined (the app starts it from a Blob URL), under a strict Content-Security-Policy:
// scripts only with this page's nonce, no network at all (the extension host relays the daemon's
// messages), workers only from blob:. Pure.
import { randomBytes } from 'node:crypto';

export interface ViewAssets {
  appJs: string;
  appCss: string;
  workerJs: string;
}

export function makeNonce(): string {
  return randomBytes(18).toString('base64').replace(/[^A-Za-z0-9]/g, '');
}

/** Text that goes inside a <script> or <style> element: no closing tag may appear in it. */
export function escapeInline(text: string, tag: 'script' | 'style'): string {
  return text.replace(new RegExp(`</(${tag})`, 'gi'), '<\\/$1');
}

export function contentSecurityPolicy(nonce: string, cspSource: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    // The app sets a few widths/colours through style attributes in generated markup.
    `style-src ${cspSource} 'unsafe-inline'`,
    `img-src ${cspSource} data: blob:`,
    `font-src ${cspSource} data:`,
    'worker-src blob:',
    "connect-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

export function viewHtml(assets: ViewAssets, nonce: string, cspSource: string, title = 'Cellscope — graph view'): string {
  const csp = contentSecurityPolicy(nonce, cspSource);
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${esc(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style nonce="${nonce}">${escapeInline(assets.appCss, 'style')}</style>
</head>
<body>
<script id="cellscope-worker-src" type="text/plain">${escapeInline(assets.workerJs, 'script')}</script>
<script nonce="${nonce}">${escapeInline(assets.appJs, 'script')}</script>
</body>
</html>
`;
}
