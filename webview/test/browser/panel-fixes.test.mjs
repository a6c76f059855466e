// The view tier: defects seen in code-server (issue 16), each reproduced in Debian's chromium.
//  - In a VS Code panel beside the editor (~630 px wide, VS Code's default body padding): side
//    by side squeezed the two graphs into half of an already narrow pane, the memory chart's
//    texts ran past its edges, and the details panel scrolled sideways when its input box took
//    the focus, its left part vanishing under the graph's edge (seen as "the graph drawn over the
//    panel").
//  - Nodes an edit adds (a quick fix) landed outside the view.
//  - The core timeline was not in the PNG/SVG export.
// Screenshots go to $CELLSCOPE_ARTIFACTS (default build/test-artifacts/view).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { artifacts, bin, corpus, newPage as openPage, startView, useBrowser } from './lib.mjs';

const browser = useBrowser(test);
const hook = (page, fn, arg) => page.evaluate(fn, arg);
const idle = (page) => hook(page, () => window.cellscopeView.idle());
const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
const RESNET = path.join(corpus, 'models', 'resnet50.py');
const ARTICLE = path.join(corpus, 'buggy', 'mnist_article_bug.py');
const rect = (page, sel) => hook(page, (s) => {
  const b = document.querySelector(s)?.getBoundingClientRect();
  return b ? { x: b.left, y: b.top, w: b.width, h: b.height } : null;
}, sel);

test('in a narrow VS Code panel: side by side one above the other, the memory chart and the details panel fit', async (t) => {
  const { url } = await startView(t, path.join(corpus, 'models', 'lenet5.py'));  // serves the bundle
  const r = spawnSync(bin, ['graph', RESNET, '--layer', 'hardware', '--target', 'ascend910b'], { encoding: 'utf8', maxBuffer: 256 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  const page = await openPage(browser, t, { viewport: { width: 626, height: 908 } });
  // What VS Code provides: acquireVsCodeApi, its default style (the body padded by 20 px), messages by postMessage.
  await page.addInitScript(() => {
    window.__posted = [];
    window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m) });
    document.addEventListener('DOMContentLoaded', () => {
      const st = document.createElement('style');  // (VS Code puts it first in the head)
      st.textContent = 'body { padding: 0 20px; }';
      document.head.prepend(st);
    });
  });
  await page.goto(url);
  await page.waitForFunction(() => window.__posted?.some((m) => m.ready));
  await hook(page, (d) => {
    window.postMessage({ type: 'cellscope', message: { hello: { file: d.file, editor: true } } }, '*');
    window.postMessage({ type: 'cellscope', message: { update: { seq: 1, document: d } } }, '*');
  }, doc);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  const app = await rect(page, '.app');
  assert.equal(app.w, 626, 'the whole width (no body padding)');

  // Side by side: too narrow for two panes beside each other, so one above the other, each as wide as the view.
  await hook(page, () => window.cellscopeView.setSplit(true));
  await idle(page);
  await frame(page);
  const views = await rect(page, '.views');
  const panes = await hook(page, () => [...document.querySelectorAll('.views .pane')].map((p) => {
    const b = p.getBoundingClientRect();
    return { x: b.left, y: b.top, w: b.width, h: b.height };
  }));
  assert.equal(panes.length, 2);
  for (const p of panes) assert.ok(Math.abs(p.w - views.w) <= 1, `pane ${JSON.stringify(p)} as wide as the views (${views.w})`);
  assert.ok(panes[1].y >= panes[0].y + panes[0].h - 1, 'the optimized pane below the semantic one');
  for (const which of ['A', 'B']) {
    const cam = await hook(page, (w) => window.cellscopeView.camera(w), which);
    assert.ok(Math.abs(cam.w - views.w) <= 1, `pane ${which}'s canvas is the pane's width (${cam.w})`);
    assert.ok(await hook(page, (w) => window.cellscopeView.ink(w), which) > 0.01, `pane ${which} draws its graph`);
    const items = await hook(page, (w) => window.cellscopeView.items(w), which);
    const pane = panes[which === 'A' ? 0 : 1];
    const inside = items.filter((it) => it.x >= pane.x - 1 && it.x + it.w <= pane.x + pane.w + 1 && it.y + it.h > pane.y && it.y < pane.y + pane.h);
    assert.ok(inside.length > 0, `pane ${which}: some nodes whole inside it`);
  }
  // Wide again: beside each other.
  await page.setViewportSize({ width: 1500, height: 908 });
  await frame(page);
  const wide = await hook(page, () => [...document.querySelectorAll('.views .pane')].map((p) => p.getBoundingClientRect().top));
  assert.equal(wide[0], wide[1], 'side by side in a wide view');
  await page.setViewportSize({ width: 626, height: 908 });
  await frame(page);

  // The memory chart: as wide as the view, every text inside it.
  await hook(page, () => window.cellscopeView.setMemory(true));
  await frame(page);
  const mem = await hook(page, () => window.cellscopeView.memory());
  assert.ok(Math.abs(mem.width - views.w) <= 1 && mem.canvasWidth === mem.width, JSON.stringify(mem));
  assert.ok(mem.labels.some((l) => /^peak /.test(l.text)), JSON.stringify(mem.labels));
  for (const l of mem.labels) assert.ok(l.x >= 0 && l.x + l.w <= mem.width + 0.5, `"${l.text}" at ${l.x}+${l.w} in ${mem.width}`);
  const axis = mem.labels.filter((l) => l.text !== '0' && !/^peak/.test(l.text)).sort((a, b) => a.x - b.x);
  for (let i = 1; i < axis.length; i++) assert.ok(axis[i - 1].x + axis[i - 1].w <= axis[i].x, `"${axis[i - 1].text}" overlaps "${axis[i].text}"`);
  await page.screenshot({ path: path.join(artifacts, 'vscode-narrow-split-memory.png') });

  // The core timeline in the narrow view: a one-line header, the chart keeps its height.
  await hook(page, () => window.cellscopeView.setMemory(false));
  await hook(page, () => window.cellscopeView.setTimeline(true));
  await frame(page);
  const head = await rect(page, '.tl-head'), body = await rect(page, '.tl-body');
  await page.screenshot({ path: path.join(artifacts, 'vscode-narrow-timeline.png') });
  assert.ok(head.h <= 34, `timeline header ${head.h} px tall`);
  assert.ok(body.h >= 100, `timeline chart ${body.h} px tall`);
  await page.screenshot({ path: path.join(artifacts, 'vscode-narrow-timeline.png') });
  await hook(page, () => window.cellscopeView.setTimeline(false));

  // The details panel: its input box and Save (shown in VS Code) never scroll it sideways.
  await hook(page, () => window.cellscopeView.setMemory(false));
  await hook(page, () => window.cellscopeView.select(null));
  const box = page.locator('form.inputs-form input[name="shapes"]');
  await box.click();
  await box.fill('2,3,224,224');
  await page.locator('form.inputs-form button.inputs-save').click();
  const panel = await hook(page, () => {
    const p = document.querySelector('.panel');
    return { scrollLeft: p.scrollLeft, scrollWidth: p.scrollWidth, clientWidth: p.clientWidth };
  });
  assert.equal(panel.scrollLeft, 0);
  assert.ok(panel.scrollWidth <= panel.clientWidth + 1, JSON.stringify(panel));
  const panelBox = await rect(page, '.panel');
  const labels = await hook(page, () => [...document.querySelectorAll('.panel table.kv th')].slice(0, 4).map((th) => {
    const b = th.getBoundingClientRect();
    return { text: th.textContent, x: b.left };
  }));
  for (const l of labels) assert.ok(l.x >= panelBox.x, `"${l.text}" visible in the panel`);
  for (const p of await hook(page, () => [...document.querySelectorAll('.views .pane')].map((e) => e.getBoundingClientRect().right))) {
    assert.ok(p <= panelBox.x + 1, 'the graph ends where the panel begins');
  }
  const save = await hook(page, () => window.__posted.filter((m) => m.request?.saveInputs).map((m) => m.request.saveInputs.inputs));
  assert.deepEqual(save, [['2,3,224,224']]);
  await page.screenshot({ path: path.join(artifacts, 'vscode-narrow-panel-inputs.png') });
  assert.deepEqual(page.errors, []);
});

test('what an edit adds comes into view; the zoom stays; a fitted view stays fitted', async (t) => {
  const { url, file } = await startView(t, ARTICLE);
  const page = await openPage(browser, t, { viewport: { width: 1100, height: 700 } });
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  // Close in on the top of the graph (as a user reading conv1 would).
  await hook(page, () => { const v = window.cellscopeView; v.zoom(2.2); v.jump('start'); });
  await frame(page);
  const cam0 = await hook(page, () => window.cellscopeView.camera());
  const seq0 = await hook(page, () => window.cellscopeView.lastUpdateSeq());
  // The quick fix, as the editor writes it.
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('nn.Dense(1600, 128)', 'nn.Dense(9216, 128)'));
  await page.waitForFunction((s) => window.cellscopeView.lastUpdateSeq() > s, seq0, { timeout: 15000 });
  await idle(page);
  await frame(page);
  const d = await hook(page, () => window.cellscopeView.details());
  assert.ok(d.diff.added.length > 0, JSON.stringify(d.diff));
  const canvas = await rect(page, '.pane .graph-canvas');
  for (const id of d.diff.added) {
    const r = await hook(page, (n) => window.cellscopeView.nodeRect(n), id);
    assert.ok(r, `${id} drawn`);
    assert.ok(r.x >= canvas.x && r.y >= canvas.y && r.x + r.w <= canvas.x + canvas.w && r.y + r.h <= canvas.y + canvas.h,
      `${id} in view: ${JSON.stringify(r)} in ${JSON.stringify(canvas)}`);
  }
  const cam1 = await hook(page, () => window.cellscopeView.camera());
  assert.equal(cam1.scale, cam0.scale, 'the zoom is the user\'s');
  assert.notEqual(cam1.ty, cam0.ty, 'panned to show them');
  await page.screenshot({ path: path.join(artifacts, 'edit-added-nodes-in-view.png') });

  // Fitted, then an edit that adds nodes: fitted again to the new graph.
  await hook(page, () => window.cellscopeView.fit());
  await frame(page);
  const seq1 = await hook(page, () => window.cellscopeView.lastUpdateSeq());
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('x = self.fc2(x)', 'x = self.fc2(self.relu(x))'));
  await page.waitForFunction((s) => window.cellscopeView.lastUpdateSeq() > s, seq1, { timeout: 15000 });
  await idle(page);
  await frame(page);
  const items = await hook(page, () => window.cellscopeView.items());
  for (const it of items) {
    assert.ok(it.y >= canvas.y && it.y + it.h <= canvas.y + canvas.h, `${it.id} in the fitted view: ${JSON.stringify(it)} in ${JSON.stringify(canvas)} cam ${JSON.stringify(await hook(page, () => window.cellscopeView.camera()))}`);
  }
  assert.deepEqual(page.errors, []);
});

test('the core timeline is in the PNG and SVG exports when it is open', async (t) => {
  const { url } = await startView(t, RESNET, ['--target', 'ascend910b']);
  const page = await openPage(browser, t);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  const png = async (name) => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('button[aria-label="Export PNG"]')]);
    const out = path.join(artifacts, name);
    await download.saveAs(out);
    const bytes = fs.readFileSync(out);
    assert.equal(bytes.subarray(1, 4).toString(), 'PNG');
    return { w: bytes.readUInt32BE(16), h: bytes.readUInt32BE(20) };
  };
  const svgClosed = await hook(page, () => window.cellscopeView.svg());
  assert.doesNotMatch(svgClosed, /core-timeline/);
  const without = await png('export-without-timeline.png');
  await page.getByRole('button', { name: 'Timeline', exact: true }).click();
  await frame(page);
  const st = await hook(page, () => window.cellscopeView.timelineState());
  assert.ok(st.open && st.rows.length > 10, `${st.rows.length} rows`);
  await hook(page, () => window.cellscopeView.clickBar('conv/layer1.0.conv1'));
  await idle(page);
  const withTl = await png('export-with-timeline.png');
  assert.ok(withTl.h >= without.h + st.rows.length * 12, `${without.w}x${without.h} -> ${withTl.w}x${withTl.h}`);
  // The bottom part of the PNG is the timeline: bars in the bound colours, not the background.
  const svg = await hook(page, () => window.cellscopeView.svg());
  const g = svg.match(/<g class="core-timeline"[\s\S]*?<\/g>/)?.[0] ?? '';
  assert.ok(g, 'a timeline group in the SVG');
  for (const r of st.rows) assert.ok(g.includes(`>${r.label}</text>`), `row ${r.label}`);
  assert.match(g, /analytical estimate, not a measurement/);
  assert.match(g, /stroke="[^"]+" stroke-width="1.5"/, 'the selected kernel outlined');
  fs.writeFileSync(path.join(artifacts, 'export-with-timeline.svg'), svg);
  // (the SVG is well-formed XML: one root, every tag closed)
  assert.equal((svg.match(/<svg /g) ?? []).length, 1);
  assert.equal((svg.match(/<g[ >]/g) ?? []).length, (svg.match(/<\/g>/g) ?? []).length);
  assert.deepEqual(page.errors, []);
});
