import { test } from 'node:test';
import assert from 'node:assert/strict';
import { contentSecurityPolicy, escapeInline, makeNonce, viewHtml } from '../../src/html';

test('the CSP allows only this page\'s scripts, blob workers and no network', () => {
  const csp = contentSecurityPolicy('N0NCE', 'https://x.vscode-cdn.net');
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-N0NCE'(;|$)/);
  assert.match(csp, /worker-src blob:/);
  assert.match(csp, /connect-src 'none'/);
  assert.doesNotMatch(csp, /unsafe-eval|http:|ws:/);
});

test('nonces are fresh and attribute-safe', () => {
  const a = makeNonce();
  assert.match(a, /^[A-Za-z0-9]{16,}$/);
  assert.notEqual(a, makeNonce());
});

test('the page inlines the app, its CSS and the worker source without breaking out of the tags', () => {
  const html = viewHtml({ appJs: 'let s = "</script><script>alert(1)</script>";', appCss: 'a{}</style>', workerJs: 'x="</SCRIPT>"' }, 'abc', 'src');
  // Only the two real closing tags remain (an opening tag inside script text is inert).
  assert.equal((html.match(/<\/script/gi) ?? []).length, 2);
  assert.equal((html.match(/<\/style/gi) ?? []).length, 1);
  assert.match(html, /<script id="cellscope-worker-src" type="text\/plain">x="<\\\/SCRIPT>"<\/script>/);
  assert.match(html, /<script nonce="abc">let s = "<\\\/script><script>alert\(1\)<\\\/script>";<\/script>/);
  assert.match(html, /<style nonce="abc">a\{\}<\\\/style><\/style>/);
  assert.match(html, /http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-abc'/);
  assert.equal(escapeInline('a</script b', 'script'), 'a<\\/script b');
});
