import { test } from 'node:test';
import assert from 'node:assert/strict';
import { contentSecurityPolicy, escapeInline, makeNonce, viewHtml } from '../../src/html';

test('the CSP allows only this page\'s scripts, blob workers and no network but the extension\'s files', () => {
  const csp = contentSecurityPolicy('N0NCE', 'https://x.vscode-cdn.net');
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-N0NCE'(;|$)/);
  assert.match(csp, /worker-src blob:/);
  assert.match(csp, /connect-src https:\/\/x\.vscode-cdn\.net(;|$)/);
  assert.doesNotMatch(csp, /unsafe-eval|http:|ws:|\*/);
});

test('nonces are fresh and attribute-safe', () => {
  const a = makeNonce();
  assert.match(a, /^[A-Za-z0-9]{16,}$/);
  assert.notEqual(a, makeNonce());
});

test('the page inlines the app and its CSS without breaking out of the tags; the worker by URL', () => {
  const html = viewHtml({ appJs: 'let s = "</script><script>alert(1)</script>";', appCss: 'a{}</style>', workerUrl: 'https://x/w.js?a=1&b="2"' }, 'abc', 'src');
  // Only the real closing tag remains (an opening tag inside script text is inert).
  assert.equal((html.match(/<\/script/gi) ?? []).length, 1);
  assert.equal((html.match(/<\/style/gi) ?? []).length, 1);
  assert.match(html, /<meta name="cellscope-worker" content="https:\/\/x\/w\.js\?a=1&amp;b=&quot;2&quot;">/);
  assert.doesNotMatch(html, /cellscope-worker-src/, 'the worker\'s 1.5 MB are not in the page');
  assert.match(html, /<script nonce="abc">let s = "<\\\/script><script>alert\(1\)<\\\/script>";<\/script>/);
  assert.match(html, /<style nonce="abc">a\{\}<\\\/style><\/style>/);
  assert.match(html, /http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-abc'/);
  assert.equal(escapeInline('a</script b', 'script'), 'a<\\/script b');
});
