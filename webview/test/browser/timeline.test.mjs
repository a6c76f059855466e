// The view tier: the core timeline (timeline.ts, issue 16), in Debian's chromium against the real
// `cellscope view` and a `--format html` snapshot. One row per core the hardware layer's schedule
// uses (and per DMA channel), bars coloured by what bounds each kernel, linked both ways with the
// graph; zoom and pan; a CPU target shows CPU cores and no Ascend words.
// Screenshots go to $CELLSCOPE_ARTIFACTS (default build/test-artifacts/view).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { artifacts, bin, corpus, newPage as openPage, startView, useBrowser } from './lib.mjs';

const browser = useBrowser(test);
const newPage = (t) => openPage(browser, t);

const hook = (page, fn, arg) => page.evaluate(fn, arg);
const idle = (page) => hook(page, () => window.cellscopeView.idle());
const tl = (page) => hook(page, () => window.cellscopeView.timelineState());
const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
const span = (s) => s.window.t1 - s.window.t0;
const RESNET = path.join(corpus, 'models', 'resnet50.py');

async function open(t, model, args = []) {
  const { url } = await startView(t, model, args);
  const page = await newPage(t);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  return page;
}

// What the CLI's hardware layer says: the row keys the timeline must have (one per used core,
// one per DMA channel) and the bound of each kernel node.
function expectedRows(args) {
  const r = spawnSync(bin, ['graph', RESNET, '--layer', 'hardware', ...args], { encoding: 'utf8', maxBuffer: 256 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const cell = JSON.parse(r.stdout).cells[0];
  const sep = cell.hardware.spec.organisation === 'separated';
  const keys = new Set();
  const bound = new Map();
  for (const n of cell.optimized.nodes) {
    for (const k of n.hardware ?? []) {
      bound.set(k.node || n.id, k.bound);
      if (!(k.timeUs > 0)) continue;
      for (const c of k.coreIds ?? []) {
        if (!cell.hardware.ascend) keys.add(`cpu:${c}`);
        else keys.add(`${k.unit === 'cube' ? 'aic' : sep ? 'aiv' : 'aicore'}:${c}`);
      }
      for (const d of k.dma ?? []) keys.add(`dma:${d.channel}`);
    }
  }
  return { keys, bound, cell };
}

// The colour drawn on the timeline's canvas at a client point, and a CSS colour, as [r, g, b].
async function pixelAndColour(page, x, y, cssVar) {
  return hook(page, ([px, py, v]) => {
    const canvas = document.querySelector('.tl-canvas');
    const r = canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const d = canvas.getContext('2d').getImageData(Math.round((px - r.left) * dpr), Math.round((py - r.top) * dpr), 1, 1).data;
    const probe = document.createElement('div');
    probe.style.color = getComputedStyle(document.querySelector('.tl')).getPropertyValue(v);
    document.body.appendChild(probe);
    const c = getComputedStyle(probe).color.match(/\d+/g).slice(0, 3).map(Number);
    probe.remove();
    return { pixel: [d[0], d[1], d[2]], colour: c };
  }, [x, y, cssVar]);
}
const close = (a, b, tol = 12) => a.every((v, i) => Math.abs(v - b[i]) <= tol);

test('ResNet-50 on ascend910b: one row per used core and DMA channel; a bar selects its node, a node highlights its bars', async (t) => {
  const expected = expectedRows(['--target', 'ascend910b']);
  const page = await open(t, RESNET, ['--target', 'ascend910b']);
  const button = page.getByRole('button', { name: 'Timeline', exact: true });
  assert.equal(await button.getAttribute('aria-pressed'), 'false');
  assert.match(await button.getAttribute('title'), /analytical estimate, not a measurement/);
  await button.click();
  await frame(page);
  assert.equal(await button.getAttribute('aria-pressed'), 'true');
  let s = await tl(page);
  assert.ok(s.open && s.ascend, JSON.stringify(s.header));
  assert.match(s.header, /Core timeline/);
  assert.match(s.header, /analytical estimate, not a measurement/);
  assert.match(s.header, /Ascend 910B/);
  // One row per used core (AIC for cube kernels, AIV for vector kernels on the separated 910B)
  // and per DMA channel, no more.
  assert.deepEqual(new Set(s.rows.map((r) => r.key)), expected.keys);
  assert.deepEqual(s.sections.map((x) => x.key), ['aic', 'aiv', 'dma']);
  assert.equal(s.rows.filter((r) => r.section === 'aic').length, 24);
  assert.ok(s.rows.every((r) => r.bars > 0));
  assert.ok(s.bars > 1000 && s.barsPainted > 0, `${s.bars} bars, ${s.barsPainted} painted`);
  t.diagnostic(`timeline paint: ${s.lastPaintMs} ms`);  // a figure, not a pass mark (loaded CI machines)
  await page.screenshot({ path: path.join(artifacts, 'timeline-resnet50-ascend910b.png') });

  // Zoom: the wheel over the plot, then + and - on the focused canvas (the graph does not zoom).
  const canvas = await page.locator('.tl-canvas').boundingBox();
  const graphScale = (await hook(page, () => window.cellscopeView.details())).scale;
  const s0 = span(s);
  await page.mouse.move(canvas.x + canvas.width * 0.3, canvas.y + 60);
  await page.mouse.wheel(0, -400);
  await frame(page);
  const s1 = span(await tl(page));
  assert.ok(s1 < s0 / 1.5, `wheel zooms in: ${s0} -> ${s1}`);
  await page.locator('.tl-canvas').focus();
  await page.keyboard.press('-');
  await frame(page);
  assert.ok(span(await tl(page)) > s1 * 1.2, 'minus zooms out');
  await page.keyboard.press('0');
  await frame(page);
  assert.ok(Math.abs(span(await tl(page)) - s0) < 1e-6, '0 fits the whole schedule');
  assert.equal((await hook(page, () => window.cellscopeView.details())).scale, graphScale, 'the graph kept its zoom');
  // Drag pans the time axis.
  await page.keyboard.press('+');
  await page.keyboard.press('+');
  await frame(page);
  const before = (await tl(page)).window.t0;
  await page.mouse.move(canvas.x + canvas.width * 0.6, canvas.y + 80);
  await page.mouse.down();
  await page.mouse.move(canvas.x + canvas.width * 0.4, canvas.y + 80, { steps: 4 });
  await page.mouse.up();
  await frame(page);
  assert.ok((await tl(page)).window.t0 > before, 'dragging left shows later times');
  await page.keyboard.press('0');
  await frame(page);

  // Hover a bar: its tooltip.
  const conv = 'conv/layer1.0.conv2';
  let bar = await hook(page, (id) => window.cellscopeView.timelineBar(id), conv);
  assert.ok(bar?.visible, JSON.stringify(bar));
  await page.mouse.move(bar.x + bar.w / 2, bar.y + bar.h / 2);
  await frame(page);
  s = await tl(page);
  assert.match(s.tip, /FusedConv2D · conv\/layer1\.0\.conv2 · kernel \d+ of \d+/);
  assert.match(s.tip, /unit cube · 24 cores \(0–23\)/);
  assert.match(s.tip, /start [\d.]+ µs · duration [\d.]+ µs/);
  assert.match(s.tip, /bound (compute|memory|dispatch) · [\d.,k]+ cycles per core/);

  // Click it: the node is selected in the graph (semantic layer: the conv the kernel came from),
  // the panel shows it, the timeline announces the kernel and its source line.
  await page.mouse.click(bar.x + bar.w / 2, bar.y + bar.h / 2);
  await idle(page);
  await frame(page);
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, 'layer1.0.conv2');
  assert.match(await hook(page, () => window.cellscopeView.panelText()), /Conv2D/);
  s = await tl(page);
  assert.deepEqual(s.selected, [conv]);
  assert.equal(s.focus.node, conv);
  assert.equal(s.selectedBars, 24 + 3, '24 AIC bars and one per DMA channel it uses (MTE1, MTE2, FixPipe)');
  assert.match(s.announce, /Selected FusedConv2D conv\/layer1\.0\.conv2 · cube · 24 cores .*resnet50\.py:\d+/);
  const pos = await hook(page, () => window.cellscopeView.nodeScreenPosition('layer1.0.conv2'));
  assert.ok(pos?.visible, 'the graph brought the node into view');
  // The bar is drawn in its bound's colour.
  bar = await hook(page, (id) => window.cellscopeView.timelineBar(id), conv);
  const { pixel, colour } = await pixelAndColour(page, bar.x + bar.w / 2, bar.y + bar.h / 2, `--cs-bound-${expected.bound.get(conv)}`);
  assert.ok(close(pixel, colour), `bar ${pixel} vs ${expected.bound.get(conv)} ${colour}`);
  await page.screenshot({ path: path.join(artifacts, 'timeline-bar-selects-node.png') });

  // The other way: the hardware layer, a node selected in the graph far from the time shown:
  // its bars are highlighted and brought into view.
  await hook(page, () => window.cellscopeView.setLayer('hardware'));
  await idle(page);
  for (let i = 0; i < 4; i++) await hook(page, () => window.cellscopeView.timelineZoom(2));
  await page.locator('.tl-canvas').focus();
  await page.keyboard.press('Home');
  await frame(page);
  const late = 'conv/layer4.2.conv3';
  assert.equal((await hook(page, (id) => window.cellscopeView.timelineBar(id), late)).visible, false, 'off screen at first');
  await hook(page, (id) => window.cellscopeView.select(id), late);
  await idle(page);
  await frame(page);
  s = await tl(page);
  assert.deepEqual(s.selected, [late]);
  assert.ok(s.selectedBars >= 24);
  assert.ok((await hook(page, (id) => window.cellscopeView.timelineBar(id), late)).visible, 'scrolled into view');
  assert.match(s.announce, /conv\/layer4\.2\.conv3/);

  // A vector kernel's bar (AIV rows, scrolled down to): clicking selects that node.
  const vec = s.rows.find((r) => r.section === 'aiv');
  assert.ok(vec);
  await hook(page, () => window.cellscopeView.clickBar('maxpool'));
  await idle(page);
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, 'maxpool');
  assert.deepEqual((await tl(page)).selected, ['maxpool']);

  // Keyboard: the next kernel in the schedule, selected in the graph.
  await page.locator('.tl-canvas').focus();
  const focus0 = (await tl(page)).focus.index;
  await page.keyboard.press('ArrowRight');
  await idle(page);
  await frame(page);
  s = await tl(page);
  assert.equal(s.focus.index, focus0 + 1);
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, s.focus.node);
  await page.screenshot({ path: path.join(artifacts, 'timeline-node-highlights-bars.png') });

  // Resize the dock by keyboard; close it with its own button.
  const h0 = (await page.locator('.tl').boundingBox()).height;
  await page.locator('.tl-resize').focus();
  await page.keyboard.press('ArrowUp');
  assert.ok((await page.locator('.tl').boundingBox()).height > h0);
  await page.getByRole('button', { name: 'Close the timeline' }).click();
  assert.equal((await tl(page)).open, false);
  assert.equal(await button.getAttribute('aria-pressed'), 'false');
  assert.deepEqual(page.errors, []);
});

test('a CPU target: one row per CPU core, no Ascend words', async (t) => {
  const expected = expectedRows(['--target', 'cpu']);
  const page = await open(t, RESNET);
  await hook(page, () => window.cellscopeView.setTimeline(true));
  await frame(page);
  const s = await tl(page);
  assert.ok(s.open && !s.ascend);
  assert.deepEqual(new Set(s.rows.map((r) => r.key)), expected.keys);
  assert.deepEqual(s.sections.map((x) => x.key), ['cpu']);
  assert.match(s.header, /analytical estimate, not a measurement/);
  const words = /Ascend|AI ?Core|\bAIC\b|\bAIV\b|MTE|FixPipe|vector core/i;
  assert.doesNotMatch(s.header, words);
  assert.doesNotMatch(JSON.stringify(s.rows) + JSON.stringify(s.sections), words);
  await hook(page, () => window.cellscopeView.clickBar('conv/layer1.0.conv1'));
  await idle(page);
  await frame(page);
  const after = await tl(page);
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, 'layer1.0.conv1');
  assert.doesNotMatch(after.announce, words);
  const bar = await hook(page, () => window.cellscopeView.timelineBar('conv/layer1.0.conv1'));
  await page.mouse.move(bar.x + bar.w / 2, bar.y + bar.h / 2);
  await frame(page);
  assert.match((await tl(page)).tip, /unit cpu · 16 cores/);
  assert.doesNotMatch((await tl(page)).tip, words);
  await page.screenshot({ path: path.join(artifacts, 'timeline-resnet50-cpu.png') });
  assert.deepEqual(page.errors, []);
});

test('the html snapshot (310P3, training): AI Core and vector core rows, optimizer updates, dark theme', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellscope-tl-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const out = path.join(dir, 'resnet50-train.html');
  const r = spawnSync(bin, ['graph', RESNET, '--format', 'html', '--target', 'ascend310p', '--mode', 'train', '-o', out], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const page = await newPage(t);
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto('file://' + out);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  assert.equal((await hook(page, () => window.cellscopeView.details().connection)), 'snapshot');
  await page.getByRole('button', { name: 'Timeline', exact: true }).click();
  await frame(page);
  let s = await tl(page);
  assert.ok(s.open);
  assert.match(s.header, /Ascend 310P.*train/);
  // Coupled 310P3: cube and vector kernels share the 8 AI cores; vector kernels also use the 7
  // vector cores; the snapshot carries every kernel's DMA transfers (MTE1-3, no FixPipe).
  assert.deepEqual(s.sections.map((x) => x.key), ['aicore', 'vec', 'dma']);
  assert.equal(s.rows.filter((x) => x.section === 'aicore').length, 8);
  assert.deepEqual(s.rows.filter((x) => x.section === 'dma').map((x) => x.label), ['MTE1', 'MTE2', 'MTE3']);
  assert.ok(s.kernels > 500, `${s.kernels} kernels (forward, backward, optimizer)`);
  // An optimizer update has no node: clicking it selects the bar only.
  // (The updates come last in the schedule.)
  assert.ok(await hook(page, (n) => window.cellscopeView.clickBar('#' + (n - 1)), s.kernels));
  await idle(page);
  await frame(page);
  s = await tl(page);
  assert.match(s.announce, /ApplyMomentum .*\(optimizer update\)/);
  assert.equal(s.selectedBars > 0, true);
  // A backward kernel selects the layer it is the gradient of.
  await hook(page, () => window.cellscopeView.clickBar('conv/layer1.0.conv1'));
  await idle(page);
  await frame(page);
  s = await tl(page);
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, 'layer1.0.conv1');
  assert.ok(s.selectedKernels.length >= 2, 'forward and backward kernels of the conv are highlighted');
  await page.screenshot({ path: path.join(artifacts, 'timeline-snapshot-310p-train-dark.png') });
  assert.deepEqual(page.errors, []);
});

test('inside VS Code (the same bundle, the webview transport): editor colours, a double-click reveals the source line', async (t) => {
  const { url } = await startView(t, path.join(corpus, 'models', 'lenet5.py'));  // serves the bundle
  const r = spawnSync(bin, ['graph', RESNET, '--layer', 'hardware', '--target', 'ascend910'], { encoding: 'utf8', maxBuffer: 256 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  const page = await newPage(t);
  // What VS Code provides: acquireVsCodeApi, its theme's colours on the body, messages by postMessage.
  await page.addInitScript(() => {
    window.__posted = [];
    window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m) });
    document.addEventListener('DOMContentLoaded', () => {
      document.body.classList.add('vscode-dark');
      for (const [k, v] of Object.entries({
        '--vscode-editor-background': '#1e1e1e', '--vscode-editor-foreground': '#d4d4d4', '--vscode-focusBorder': '#007fd4',
        '--vscode-charts-green': '#89d185', '--vscode-charts-orange': '#d18616', '--vscode-charts-purple': '#b180d7',
        '--vscode-charts-lines': '#808080',
      })) document.documentElement.style.setProperty(k, v);
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
  assert.equal((await hook(page, () => window.cellscopeView.details())).connection, 'vscode');
  assert.ok(await hook(page, () => document.body.classList.contains('in-vscode')));
  await page.getByRole('button', { name: 'Timeline', exact: true }).click();
  await frame(page);
  const s = await tl(page);
  assert.deepEqual(s.sections.map((x) => x.key), ['aicore', 'dma'], 'Ascend 910: coupled, 32 AI cores');
  const conv = 'conv/layer2.0.conv1';
  await hook(page, (id) => window.cellscopeView.clickBar(id), conv);
  await idle(page);
  await frame(page);
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, 'layer2.0.conv1');
  // The bar in the editor theme's chart colour for its bound.
  const bound = doc.cells[0].optimized.nodes.find((n) => n.id === conv).hardware[0].bound;
  const bar = await hook(page, (id) => window.cellscopeView.timelineBar(id), conv);
  const { pixel, colour } = await pixelAndColour(page, bar.x + bar.w / 2, bar.y + bar.h / 2, `--cs-bound-${bound}`);
  const chart = { compute: [0x89, 0xd1, 0x85], memory: [0xd1, 0x86, 0x16], dispatch: [0xb1, 0x80, 0xd7] }[bound];
  assert.ok(chart && close(colour, chart, 2), `${bound}: ${colour}`);
  assert.ok(close(pixel, colour), `bar ${pixel} vs ${colour}`);
  // The announcement's source link and a double-click both ask the editor to reveal the line.
  const link = page.locator('.tl-sel a.reveal');
  assert.match(await link.innerText(), /resnet50\.py:\d+:\d+/);
  await hook(page, () => { window.__posted.length = 0; });
  await page.mouse.dblclick(bar.x + bar.w / 2, bar.y + bar.h / 2);
  await link.click();
  const reveals = await hook(page, () => window.__posted.filter((m) => m.request?.reveal).map((m) => m.request.reveal));
  assert.equal(reveals.length, 2, JSON.stringify(reveals));
  for (const rv of reveals) {
    assert.match(rv.file, /resnet50\.py$/);
    assert.ok(rv.range.start.line > 0);
  }
  await page.screenshot({ path: path.join(artifacts, 'timeline-vscode-theme.png') });
  assert.deepEqual(page.errors, []);
});

test('a lazy Cell: the timeline has the kernels of the scopes loaded and says how many of all', async (t) => {
  const { url } = await startView(t, RESNET, ['--target', 'ascend910b'], { CELLSCOPE_VIEW_LAZY_THRESHOLD: '100' });
  const page = await newPage(t);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  assert.ok(await hook(page, () => window.cellscopeView.lazy()), 'the Cell is sent lazily');
  await hook(page, () => window.cellscopeView.setTimeline(true));
  await frame(page);
  const s0 = await tl(page);
  const m0 = s0.header.match(/(\d+) of (\d+) kernels loaded/);
  assert.ok(m0, s0.header);
  assert.ok(Number(m0[1]) > 0 && Number(m0[1]) < Number(m0[2]), s0.header);
  // Expanding a block loads its nodes, and their kernels join the timeline.
  await hook(page, () => window.cellscopeView.toggleGroup('g:layer1.0'));
  await idle(page);
  await frame(page);
  const s1 = await tl(page);
  assert.ok(s1.kernels > s0.kernels, `${s0.kernels} -> ${s1.kernels}`);
  await hook(page, () => window.cellscopeView.clickBar('conv/layer1.0.conv1'));
  await idle(page);
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, 'layer1.0.conv1');
  assert.deepEqual(page.errors, []);
});
