import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserThemeKind, isHighContrast, nextThemeKind, vscodeThemeKind } from '../src/theme';

test("inside VS Code the editor's theme class decides", () => {
  assert.equal(vscodeThemeKind(['vscode-light']), 'light');
  assert.equal(vscodeThemeKind(['in-vscode', 'vscode-dark']), 'dark');
  assert.equal(vscodeThemeKind(['vscode-high-contrast']), 'hc-dark');
  // VS Code gives a light high-contrast theme both classes.
  assert.equal(vscodeThemeKind(['vscode-high-contrast', 'vscode-high-contrast-light']), 'hc-light');
  assert.equal(vscodeThemeKind([]), null);
  assert.equal(vscodeThemeKind(['in-vscode']), null);
});

test('in a browser: the saved choice, then more contrast, then the colour scheme', () => {
  assert.equal(browserThemeKind({ saved: null, prefersDark: false, moreContrast: false }), 'light');
  assert.equal(browserThemeKind({ saved: null, prefersDark: true, moreContrast: false }), 'dark');
  assert.equal(browserThemeKind({ saved: null, prefersDark: true, moreContrast: true }), 'hc-dark');
  assert.equal(browserThemeKind({ saved: null, prefersDark: false, moreContrast: true }), 'hc-light');
  assert.equal(browserThemeKind({ saved: 'light', prefersDark: true, moreContrast: true }), 'light');
  assert.equal(browserThemeKind({ saved: 'hc-light', prefersDark: true, moreContrast: false }), 'hc-light');
  // A value saved by something else is ignored.
  assert.equal(browserThemeKind({ saved: 'solarized', prefersDark: true, moreContrast: false }), 'dark');
});

test('the toggle goes round all four and comes back', () => {
  const seen = ['light' as const];
  let t = nextThemeKind('light');
  while (t !== 'light') { seen.push(t as never); t = nextThemeKind(t); }
  assert.deepEqual(seen, ['light', 'dark', 'hc-dark', 'hc-light']);
  assert.deepEqual(seen.map(isHighContrast), [false, false, true, true]);
});
