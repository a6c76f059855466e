// The view tier, the debugger's focus: a DebugFocus (view.proto; in the editor the daemon sends it
// while `cellscope dap` is paused) given to the view served by the real `cellscope view`, in
// Debian's chromium (playwright-core): the node is highlighted in each layer, its collapsed groups
// open, it is panned into view with the zoom kept, the side panel shows "paused here" and the
// statistics; another Cell of the file is switched to; a lazy Cell loads the scopes down to the
// node; an empty focus clears it. Screenshots in $CELLSCOPE_ARTIFACTS.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { artifacts, corpus, newPage, startView, useBrowser } from './lib.mjs';

const resnet = path.join(corpus, 'models', 'resnet50.py');
const browser = useBrowser(test);

async function openView(t, args = [], env = {}) {
  const { url, file } = await startView(t, resnet, args, env);
  const page = await newPage(browser, t);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  const v = (fn, arg) => page.evaluate(fn, arg);
  await v(() => window.cellscopeView.idle());
  return { page, file, v };
}

// What a breakpoint on `out = self.conv2(out)` of ResidualBlock sends for layer3.2 (the adapter's
// `cellscope.focus` body).
const focusOn = (file, cell, node, extra = {}) => ({
  file, cell, node, op: 'Conv2D', scope: node, line: 57, reason: 'breakpoint', ran: false, tensor: 'layer3.2.relu',
  shape: ['1', '256', '14', '14'], dtype: 'float32',
  stats: { numel: 50176, min: 0, max: 4.75, mean: 0.3125, std: 0.5, nan: 0, inf: 0, zeros: 20000 }, ...extra,
});

test('a DebugFocus highlights the paused node in every layer, opens its groups and pans it into view', async (t) => {
  const { page, file, v } = await openView(t, ['--target', 'ascend910']);
  const cell = (await v(() => window.cellscopeView.details())).cell;
  assert.equal(cell, 'resnet50()');
  const node = 'layer3.2.conv2';
  // Deep inside collapsed blocks, and the camera zoomed in elsewhere.
  await v(() => window.cellscopeView.collapseAll());
  await v(() => window.cellscopeView.idle());
  assert.equal(await v((id) => window.cellscopeView.nodeScreenPosition(id), node), null, 'not drawn at first');
  const before = await v(() => window.cellscopeView.groups());
  assert.ok(before.some((g) => g.id === 'g:layer3.2' && !g.expanded), 'layer3.2 starts collapsed');
  await v(() => window.cellscopeView.zoom(1.6));
  await v(() => window.cellscopeView.pan(-3000, -3000));
  const scale = (await v(() => window.cellscopeView.details())).scale;

  await v((f) => window.cellscopeView.setDebugFocus(f), focusOn(file, cell, node));
  await v(() => window.cellscopeView.idle());
  const d = await v(() => window.cellscopeView.debugFocus());
  assert.deepEqual(d.highlighted, [node]);
  const pos = await v((id) => window.cellscopeView.nodeScreenPosition(id), node);
  assert.ok(pos?.visible, `panned into view: ${JSON.stringify(pos)}`);
  const det = await v(() => window.cellscopeView.details());
  assert.equal(det.scale, scale, 'the zoom is kept');
  assert.ok(det.expanded.includes('g:layer3.2') && det.expanded.includes('g:layer3'), JSON.stringify(det.expanded));
  assert.deepEqual(det.debug, [node]);
  assert.equal((await v(() => window.cellscopeView.state())).selection, null, 'the selection is the user\'s');
  // The side panel: the badge, the node and the live statistics.
  const panel = await v(() => window.cellscopeView.panelText());
  assert.match(panel, /Paused here/);
  assert.match(panel, /layer3\.2\.conv2/);
  assert.match(panel, /\(1, 256, 14, 14\) float32/);
  assert.match(panel, /max\s+4\.75/);
  assert.match(panel, /mean\s+0\.3125/);
  // The canvas draws the outline and the badge in the theme's debug colour around the node.
  const debugColour = await v(() => getComputedStyle(document.documentElement).getPropertyValue('--cs-debug').trim());
  const px = await v(({ x, y }) => {
    const c = document.querySelector('canvas.graph-canvas');
    const r = c.getBoundingClientRect();
    const k = c.width / r.width;
    const ctx = c.getContext('2d');
    // Scan a box around the node's centre for pixels of the debug colour.
    const w = 240, h = 120;
    const data = ctx.getImageData(Math.round((x - r.left - w / 2) * k), Math.round((y - r.top - h / 2) * k), Math.round(w * k), Math.round(h * k)).data;
    const hits = {};
    for (let i = 0; i < data.length; i += 4) { const key = `${data[i]},${data[i + 1]},${data[i + 2]}`; hits[key] = (hits[key] ?? 0) + 1; }
    return hits;
  }, pos);
  const hex = debugColour.replace('#', '');
  const rgb = [0, 2, 4].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(',');
  assert.ok((px[rgb] ?? 0) > 50, `debug colour ${debugColour} (${rgb}) drawn around the node: ${px[rgb] ?? 0} pixels`);
  await page.screenshot({ path: path.join(artifacts, 'debug-focus-semantic.png') });

  // Another stop nearby: already on screen, so the camera does not move.
  const cam0 = await v((id) => window.cellscopeView.nodeScreenPosition(id), node);
  await v((f) => window.cellscopeView.setDebugFocus(f), focusOn(file, cell, 'layer3.2.bn2', { op: 'BatchNorm', scope: 'layer3.2.bn2' }));
  await v(() => window.cellscopeView.idle());
  assert.deepEqual((await v(() => window.cellscopeView.debugFocus())).highlighted, ['layer3.2.bn2']);
  const cam1 = await v((id) => window.cellscopeView.nodeScreenPosition(id), node);
  assert.deepEqual([cam1.x, cam1.y], [cam0.x, cam0.y], 'a visible node is not re-centred');
  await v((f) => window.cellscopeView.setDebugFocus(f), focusOn(file, cell, node));
  await v(() => window.cellscopeView.idle());

  // Optimized and hardware layers: the kernel whose origins include the node (conv+bn+relu fused).
  for (const layer of ['optimized', 'hardware']) {
    await v((l) => window.cellscopeView.setLayer(l), layer);
    await v(() => window.cellscopeView.idle());
    const dl = await v(() => window.cellscopeView.debugFocus());
    assert.deepEqual(dl.highlighted, ['conv/layer3.2.conv2'], layer);
    const p = await v(() => window.cellscopeView.nodeScreenPosition('conv/layer3.2.conv2'));
    assert.ok(p?.visible, `${layer}: the kernel is in view`);
    if (layer === 'hardware') await page.screenshot({ path: path.join(artifacts, 'debug-focus-hardware.png') });
  }
  await v(() => window.cellscopeView.setLayer('semantic'));
  await v(() => window.cellscopeView.idle());

  // A focus on the file's other Cell: the view switches to it.
  await v((f) => window.cellscopeView.setDebugFocus(f), focusOn(file, 'resnet101()', 'layer3.20.conv2', { scope: 'layer3.20.conv2' }));
  await v(() => window.cellscopeView.idle());
  const other = await v(() => window.cellscopeView.debugFocus());
  assert.equal(other.cell, 'resnet101()');
  assert.deepEqual(other.highlighted, ['layer3.20.conv2']);
  assert.ok((await v(() => window.cellscopeView.nodeScreenPosition('layer3.20.conv2')))?.visible);

  // Cleared (the run resumed): nothing highlighted, no badge in the panel.
  await v((f) => window.cellscopeView.setDebugFocus(f), { file, cell: 'resnet101()', node: '' });
  await v(() => window.cellscopeView.idle());
  const cleared = await v(() => window.cellscopeView.debugFocus());
  assert.deepEqual(cleared.highlighted, []);
  assert.equal(cleared.focus, null);
  assert.doesNotMatch(await v(() => window.cellscopeView.panelText()), /Paused here/);
  assert.deepEqual(page.errors, []);
});

test('a DebugFocus in a lazy Cell loads the scopes down to the node, then highlights it', async (t) => {
  const { page, file, v } = await openView(t, ['--target', 'ascend910'], { CELLSCOPE_VIEW_LAZY_THRESHOLD: '100' });
  const lazy0 = await v(() => window.cellscopeView.lazy());
  assert.ok(lazy0 && !lazy0.loaded.includes('layer4.1'), JSON.stringify(lazy0));
  const cell = (await v(() => window.cellscopeView.details())).cell;
  await v((f) => window.cellscopeView.setDebugFocus(f), focusOn(file, cell, 'layer4.1.conv2'));
  await v(() => window.cellscopeView.idle());
  const lazy1 = await v(() => window.cellscopeView.lazy());
  assert.ok(lazy1.loaded.includes('layer4') && lazy1.loaded.includes('layer4.1'), JSON.stringify(lazy1));
  assert.deepEqual((await v(() => window.cellscopeView.debugFocus())).highlighted, ['layer4.1.conv2']);
  assert.ok((await v(() => window.cellscopeView.nodeScreenPosition('layer4.1.conv2')))?.visible, 'panned into view');
  await page.screenshot({ path: path.join(artifacts, 'debug-focus-lazy.png') });
  assert.deepEqual(page.errors, []);
});
