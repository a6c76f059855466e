// The graph view's webview HTML: the webview/ app (app.css, app.js) inlined, and the URL of the
// layout worker's script (a webview resource of the extension: the app fetches it and starts the
// worker from a Blob URL, off the path to the first paint, which most graphs reach without it),
// under a strict Content-Security-Policy: scripts only with this page's nonce, no network but the
// extension's own files (the extension host relays the daemon's messages), workers only from
// blob:. Pure.
import { randomBytes } from 'node:crypto';

export interface ViewAssets {
  appJs: string;
  appCss: string;
  /** The layout worker's script, as a webview resource URI (webview.asWebviewUri). */
  workerUrl: string;
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
    // Only to fetch the layout worker's script from the extension's files.
    `connect-src ${cspSource}`,
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
<meta name="cellscope-worker" content="${esc(assets.workerUrl)}">
<style nonce="${nonce}">${escapeInline(assets.appCss, 'style')}</style>
</head>
<body>
<script nonce="${nonce}">${escapeInline(assets.appJs, 'script')}</script>
</body>
</html>
`;
}
