// The view tier: the real `cellscope view` server and `cellscope graph --format html` snapshots,
// driven in Debian's chromium by playwright-core (node:test). Screenshots go to
// $CELLSCOPE_ARTIFACTS (default build/test-artifacts/view).
//   CELLSCOPE_BIN  the binary (default build/cellscope)
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { artifacts, bin, corpus, newPage as openPage, startView, useBrowser } from './lib.mjs';

const browser = useBrowser(test);
const newPage = (t) => openPage(browser, t, { acceptDownloads: true });

const hook = (page, fn, arg) => page.evaluate(fn, arg);
const idle = (page) => hook(page, () => window.cellscopeView.idle());
const state = (page) => hook(page, () => window.cellscopeView.state());


test('live view of ResNet-50: panel, layers, live edits, a broken edit, collapse, export', async (t) => {
  const { url, file } = await startView(t, path.join(corpus, 'models', 'resnet50.py'), ['--target', 'ascend910']);
  const page = await newPage(t);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  await hook(page, () => { window.__noReload = true; });
  assert.equal((await state(page)).layer, 'semantic');

  // Click a node on the canvas: the panel shows it.
  const pos = await hook(page, () => window.cellscopeView.nodeScreenPosition('conv1'));
  assert.ok(pos?.visible, 'conv1 is on screen');
  await page.mouse.click(pos.x, pos.y);
  assert.equal((await state(page)).selection, 'conv1');
  const panel = await hook(page, () => window.cellscopeView.panelText());
  assert.match(panel, /Conv2D/);
  assert.match(panel, /out_channels/);
  assert.match(panel, /resnet50\.py:\d+/); // no editor: the source location as file:line
  await page.screenshot({ path: path.join(artifacts, 'resnet50-semantic-selected.png') });

  // Optimization layer, then hardware: the kernel's tiling and schedule come from the server.
  await hook(page, () => window.cellscopeView.setLayer('optimized'));
  await idle(page);
  assert.equal((await state(page)).layer, 'optimized');
  await page.screenshot({ path: path.join(artifacts, 'resnet50-optimized.png') });
  await hook(page, () => window.cellscopeView.setLayer('hardware'));
  await idle(page);
  assert.equal((await state(page)).layer, 'hardware');
  await hook(page, () => window.cellscopeView.select('conv/conv1'));
  await page.waitForFunction(() => /Tiling[\s\S]*Instruction schedule/.test(window.cellscopeView.panelText()), null, { timeout: 10000 });
  assert.match(await hook(page, () => window.cellscopeView.panelText()), /AI cores|core/i);
  await page.screenshot({ path: path.join(artifacts, 'resnet50-hardware.png') });
  await hook(page, () => window.cellscopeView.setLayer('semantic'));
  await idle(page);

  // Edit the file on disk: the update arrives over the WebSocket, no reload.
  const text = fs.readFileSync(file, 'utf8');
  const seq0 = await hook(page, () => window.cellscopeView.lastUpdateSeq());
  const edited = text.replace('out = self.mean(c5, (2, 3))', 'out = self.mean(c5, (2, 3))\n        out = out * 2');
  assert.ok(edited !== text, 'the edit applies');
  fs.writeFileSync(file, edited);
  await page.waitForFunction((s) => window.cellscopeView.lastUpdateSeq() > s, seq0, { timeout: 15000 });
  await idle(page);
  assert.ok(await hook(page, () => window.__noReload), 'the page was not reloaded');
  const diff = await hook(page, () => window.cellscopeView.details().diff);
  assert.ok(diff && diff.added.length + diff.changed.length > 0, JSON.stringify(diff));
  await page.screenshot({ path: path.join(artifacts, 'resnet50-after-edit.png') });

  // A syntax error: the last good graph stays, the diagnostics are shown.
  const drawn = (await state(page)).nodesDrawn;
  fs.writeFileSync(file, edited.replace(/def construct\(self, x\):/, 'def construct(self, x)'));
  await page.waitForFunction(() => /Analysis failed/.test(window.cellscopeView.bannerText()), null, { timeout: 15000 });
  assert.equal((await state(page)).nodesDrawn, drawn);
  assert.match(await hook(page, () => window.cellscopeView.bannerText()), /resnet50\.py:\d+/);
  await page.screenshot({ path: path.join(artifacts, 'resnet50-failed.png') });
  const seq1 = await hook(page, () => window.cellscopeView.lastUpdateSeq());
  fs.writeFileSync(file, edited);
  await page.waitForFunction(() => !/Analysis failed/.test(window.cellscopeView.bannerText()), null, { timeout: 15000 });
  assert.ok(await hook(page, () => window.__noReload));
  assert.ok((await hook(page, () => window.cellscopeView.lastUpdateSeq())) >= seq1);

  // Collapse and expand a Cell group.
  const before = (await state(page)).nodesDrawn;
  await hook(page, () => window.cellscopeView.toggleGroup('g:layer1'));
  await idle(page);
  const collapsed = (await state(page)).nodesDrawn;
  assert.ok(collapsed < before, `collapse: ${before} -> ${collapsed}`);
  await hook(page, () => window.cellscopeView.toggleGroup('g:layer1'));
  await idle(page);
  assert.ok((await state(page)).nodesDrawn > collapsed);

  // Export PNG.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('button[aria-label="Export PNG"]')]);
  const png = path.join(artifacts, 'resnet50-export.png');
  await download.saveAs(png);
  const bytes = fs.readFileSync(png);
  assert.equal(bytes.subarray(1, 4).toString(), 'PNG');
  assert.deepEqual(page.errors, []);
});

test('a lazy Cell (threshold lowered): skeleton first, the nodes of a group fetched when it is expanded, kept across edits', async (t) => {
  const { url, file } = await startView(t, path.join(corpus, 'models', 'resnet50.py'), ['--target', 'ascend910'],
    { CELLSCOPE_VIEW_LAZY_THRESHOLD: '100' });
  const page = await newPage(t);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  const v = (fn, arg) => hook(page, fn, arg);
  const lazy0 = await v(() => window.cellscopeView.lazy());
  assert.ok(lazy0, 'the Cell is sent lazily');
  // The default expansion opened (and so fetched) the top-level groups; their blocks come as
  // collapsed groups, not loaded.
  assert.ok(lazy0.loaded.includes('') && lazy0.loaded.includes('layer1'), JSON.stringify(lazy0));
  assert.ok(!lazy0.loaded.includes('layer1.0'), JSON.stringify(lazy0));
  const loaded0 = await v(() => window.cellscopeView.loadedNodes());
  assert.ok(loaded0 > 0 && loaded0 < lazy0.nodes / 2, `${loaded0} of ${lazy0.nodes} nodes loaded at first`);
  const block = (await v(() => window.cellscopeView.groups())).find((g) => g.id === 'g:layer1.0');
  assert.ok(block?.drawn && !block.expanded, 'layer1.0 is drawn collapsed');
  assert.ok(block.leaves > 5, `the collapsed group counts the nodes not loaded (${block.leaves})`);
  assert.equal(await v(() => window.cellscopeView.nodeScreenPosition('layer1.0.conv1')), null);
  await page.screenshot({ path: path.join(artifacts, 'lazy-skeleton.png') });

  // Expand layer1.0: its nodes are fetched, then drawn.
  await v(() => window.cellscopeView.toggleGroup('g:layer1.0'));
  await idle(page);
  const lazy1 = await v(() => window.cellscopeView.lazy());
  assert.ok(lazy1.loaded.includes('layer1.0'), JSON.stringify(lazy1));
  assert.deepEqual(lazy1.pending, []);
  const loaded1 = await v(() => window.cellscopeView.loadedNodes());
  assert.ok(loaded1 > loaded0, `${loaded0} -> ${loaded1}`);
  const pos = await v(() => window.cellscopeView.nodeScreenPosition('layer1.0.conv1'));
  assert.ok(pos, 'a node of layer1.0 is drawn');
  await v(() => window.cellscopeView.select('layer1.0.conv1'));
  assert.match(await v(() => window.cellscopeView.panelText()), /Conv2D/);
  await page.screenshot({ path: path.join(artifacts, 'lazy-expanded.png') });

  // The hardware layer of what is loaded.
  await v(() => window.cellscopeView.setLayer('hardware'));
  await idle(page);
  assert.ok(await v(() => window.cellscopeView.nodeScreenPosition('conv/layer1.0.conv1')), 'the fused kernel is drawn');
  await v(() => window.cellscopeView.setLayer('semantic'));
  await idle(page);

  // An edit: a new skeleton; the loaded scopes are fetched again and stay drawn.
  const seq0 = await v(() => window.cellscopeView.lastUpdateSeq());
  const text = fs.readFileSync(file, 'utf8');
  fs.writeFileSync(file, text.replace('out = self.mean(c5, (2, 3))', 'out = self.mean(c5, (2, 3))\n        out = out * 2'));
  await page.waitForFunction((s) => window.cellscopeView.lastUpdateSeq() > s, seq0, { timeout: 15000 });
  await idle(page);
  const lazy2 = await v(() => window.cellscopeView.lazy());
  assert.ok(lazy2.loaded.includes('layer1') && lazy2.loaded.includes('layer1.0'), JSON.stringify(lazy2));
  assert.ok(await v(() => window.cellscopeView.nodeScreenPosition('layer1.0.conv1')), 'still drawn after the edit');
  assert.ok(await v(() => window.cellscopeView.loadedNodes()) >= loaded1);  // + the new Mul
  assert.deepEqual(page.errors, []);
});

test('requests without the token or from a foreign page are refused', async (t) => {
  const { url } = await startView(t, path.join(corpus, 'models', 'lenet5.py'));
  const u = new URL(url);
  const page = await newPage(t);
  const bare = await page.goto(`http://${u.host}/`);
  assert.equal(bare.status(), 401);
  const wrong = await page.goto(`http://${u.host}/?token=${'0'.repeat(32)}&file=x`);
  assert.equal(wrong.status(), 401);
  // A page of another origin that knows the token still cannot open the WebSocket (403).
  const foreign = await newPage(t);
  await foreign.goto('about:blank');
  const outcome = await foreign.evaluate((wsUrl) => new Promise((resolve) => {
    const ws = new WebSocket(wsUrl);
    ws.onopen = () => resolve('open');
    ws.onerror = () => resolve('refused');
  }), `ws://${u.host}/ws?token=${u.searchParams.get('token')}&file=${encodeURIComponent(u.searchParams.get('file'))}`);
  assert.equal(outcome, 'refused');
  // The real page with the token works.
  const ok = await page.goto(url);
  assert.equal(ok.status(), 200);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
});

test('snapshots of the corpus models open without a server', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellscope-snap-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const models = [
    ['models/lenet5.py', []],
    ['models/mobilenetv2.py', ['--target', 'ascend310p']],
    ['models/bert_base.py', ['--target', 'ascend910b']],
    ['buggy/mnist_article_bug.py', []],
  ];
  for (const [rel, args] of models) {
    const out = path.join(dir, path.basename(rel, '.py') + '.html');
    const r = spawnSync(bin, ['graph', path.join(corpus, rel), '--format', 'html', '-o', out, ...args], { encoding: 'utf8' });
    assert.ok(r.status === 0 || r.status === 1, r.stderr); // 1: the buggy model has errors
    const page = await newPage(t);
    await page.goto('file://' + out);
    await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
    await idle(page);
    const s = await state(page);
    assert.ok(s.nodesDrawn > 0, rel);
    assert.equal((await hook(page, () => window.cellscopeView.details().connection)), 'snapshot');
    await hook(page, () => window.cellscopeView.setLayer('hardware'));
    await idle(page);
    await page.screenshot({ path: path.join(artifacts, `snapshot-${path.basename(rel, '.py')}.png`) });
    assert.deepEqual(page.errors, [], rel);
  }
});
