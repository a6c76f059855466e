// The view tier, themes (issue 16): light, dark and the two high-contrast palettes; the system's
// "more contrast" preference, the toolbar's toggle (remembered), and VS Code's theme classes,
// which win over both. The real `cellscope view` on LeNet-5 in Debian's chromium.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { artifacts, corpus, newPage, startView, useBrowser } from './lib.mjs';

const browser = useBrowser(test);
const lenet = path.join(corpus, 'models', 'lenet5.py');

async function open(t, options) {
  const { url } = await startView(t, lenet);
  const page = await newPage(browser, t, options);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await page.evaluate(() => window.cellscopeView.idle());
  return page;
}

const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

// The theme in force, the canvas's background pixel (top-left corner, clear of nodes) and the
// line-width factor the canvas draws with.
async function looks(page) {
  await frame(page);
  return page.evaluate(() => {
    const canvas = document.querySelector('.graph-canvas');
    const d = canvas.getContext('2d').getImageData(2, 2, 1, 1).data;
    return {
      theme: document.documentElement.dataset.theme,
      bg: [d[0], d[1], d[2]],
      line: getComputedStyle(canvas.parentElement).getPropertyValue('--cs-line').trim() || '1',
      title: document.querySelector('button[aria-label="Theme"]')?.title ?? null,
    };
  });
}

const near = (a, b, tol = 8) => a.every((v, i) => Math.abs(v - b[i]) <= tol);

test('"more contrast" in a dark system gives the dark high-contrast palette: black canvas, thicker lines', async (t) => {
  const page = await open(t, { colorScheme: 'dark', contrast: 'more' });
  const l = await looks(page);
  assert.equal(l.theme, 'hc-dark');
  assert.ok(near(l.bg, [0, 0, 0]), `background ${l.bg}`);
  assert.equal(l.line, '1.6');
  assert.match(l.title, /high contrast \(dark\)/);
  await page.screenshot({ path: path.join(artifacts, 'theme-hc-dark.png') });
  assert.deepEqual(page.errors, []);
});

test('the toggle goes light -> dark -> high contrast (dark) -> high contrast (light), remembered across a reload', async (t) => {
  const page = await open(t, { colorScheme: 'light' });
  const seen = [];
  const btn = page.locator('button[aria-label="Theme"]');
  for (let i = 0; i < 4; i++) {
    const l = await looks(page);
    seen.push([l.theme, l.bg]);
    await btn.click();
  }
  assert.deepEqual(seen.map(([th]) => th), ['light', 'dark', 'hc-dark', 'hc-light']);
  assert.ok(near(seen[0][1], [255, 255, 255]), `light ${seen[0][1]}`);
  assert.ok(near(seen[1][1], [0x0d, 0x11, 0x17]), `dark ${seen[1][1]}`);
  assert.ok(near(seen[2][1], [0, 0, 0]), `hc-dark ${seen[2][1]}`);
  assert.ok(near(seen[3][1], [255, 255, 255]), `hc-light ${seen[3][1]}`);
  // Back to light after four clicks; then dark, kept over a reload.
  assert.equal((await looks(page)).theme, 'light');
  await btn.click();
  await page.reload();
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  assert.equal((await looks(page)).theme, 'dark');
});

test("VS Code's theme classes decide over the saved choice and follow a theme switch", async (t) => {
  const page = await open(t, { colorScheme: 'light' });
  await page.evaluate(() => localStorage.setItem('cellscope-theme', 'dark'));
  await page.evaluate(() => document.body.classList.add('vscode-high-contrast'));
  assert.equal((await looks(page)).theme, 'hc-dark');
  await page.evaluate(() => document.body.classList.add('vscode-high-contrast-light'));
  const l = await looks(page);
  assert.equal(l.theme, 'hc-light');
  assert.ok(near(l.bg, [255, 255, 255]), `hc-light ${l.bg}`);
  await page.screenshot({ path: path.join(artifacts, 'theme-hc-light.png') });
  await page.evaluate(() => document.body.classList.remove('vscode-high-contrast', 'vscode-high-contrast-light'));
  assert.equal((await looks(page)).theme, 'dark', 'outside VS Code the saved choice again');
});
