// The side panel's tabs and copy buttons (panel.ts, tabs.ts, copy.ts), as markup: which tabs a
// node, a failed call and the Cell summary get, the ARIA wiring, the chosen tab kept (or the
// first when a panel lacks it), what each copy button copies, the JSON of a node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildViewGraph, FAILED_PREFIX } from '../src/model';
import { bufferMates, cellJson, debugStrip, decisionsFor, fileLine, kernelsFrom, matchRows, nodeJson, renderCellSummary, renderMatches, renderPanel, type PanelContext } from '../src/panel';
import { shownTab, tabForKey, tabsHtml } from '../src/tabs';
import { shapeTuple } from '../src/copy';
import { rangeText } from '../src/format';
import type { Cell } from '../src/protocol';
import { smallCell } from './fixtures';

function cell(): Cell {
  const c = smallCell();
  c.file = 'net.py';
  c.flops = 6110;
  const conv = c.nodes!.find((n) => n.id === 'layer1.0.conv1')!;
  conv.attrs = { kernel_size: [3, 3], pad_mode: 'same' };
  conv.file = 'net.py';
  conv.range = { start: { line: 41, character: 8 }, end: { line: 41, character: 30 } };
  conv.outputs = [{ shape: [1, 64, 56, 56], dtype: 'float32' }];
  conv.params = ['layer1.0.conv1.weight'];
  c.parameters = [{ name: 'layer1.0.conv1.weight', shape: [64, 4, 3, 3], dtype: 'float32', trainable: true, size: 2304 }];
  c.optimized = {
    target: 'ascend910', kernels: 4, semanticOps: 7, fusionGroups: 1,
    nodes: [
      { id: 'x', kind: 'input', op: 'Input', origins: ['x'] },
      { id: 'conv/layer1.0.conv1', op: 'FusedConv2D', origins: ['layer1.0.conv1', 'layer1.0.relu'], pass: 'fuse-conv', pattern: 'conv',
        reason: 'Conv2D + ReLU fused', inputs: [{ node: 'x' }], outputs: [{ shape: [1, 64, 56, 56], dtype: 'float16' }],
        memory: [{ output: 0, size: 401408, offset: 0, first: 1, last: 2, buffer: 0 }],
        hardware: [{ name: 'FusedConv2D', unit: 'cube', bound: 'compute', cycles: 932, timeUs: 2.9 }] },
      { id: 'fc', op: 'MatMul', origins: ['fc'], inputs: [{ node: 'conv/layer1.0.conv1' }], outputs: [{ shape: [1, 4], dtype: 'float16' }] },
    ],
    fusions: [
      { pass: 'fuse-conv', pattern: 'conv', nodes: ['layer1.0.conv1', 'layer1.0.relu'], fused: true, reason: 'Conv2D + ReLU fused', kernel: 'conv/layer1.0.conv1' },
      { pass: 'fuse-dense', pattern: 'dense', nodes: ['fc'], fused: false, reason: 'MatMul `fc` left alone: its output is a graph output', kernel: '' },
    ],
    removed: [{ node: 'layer1.1.conv1', pass: 'dce', reason: 'unused' }],
    memory: { peakBytes: 1000, naiveBytes: 4000, lowerBoundBytes: 800, weightBytes: 9216, buffers: [{ tensors: [] }], tensors: 3, algorithm: 'greedy-by-size' },
  };
  c.hardware = { target: 'ascend910', ascend: true, estimate: { latencyMs: 0.01, throughputPerSec: 100000, cubeMs: 0.005 }, kernels: 3 };
  return c;
}

function ctx(c: Cell, id: string, layer: 'semantic' | 'optimized' | 'hardware', extra: Partial<PanelContext> = {}): PanelContext {
  const g = buildViewGraph(c, layer);
  return {
    cell: c, layer, node: g.byId.get(id)!, editor: false, kernels: null, detailsPending: false,
    semanticById: new Map((c.nodes ?? []).map((n) => [n.id, n] as const)), bufferMates: [], consumers: g.succ.get(id) ?? [], ...extra,
  };
}

const tabIds = (html: string): string[] => [...html.matchAll(/role="tab"[^>]*data-tab="([^"]+)"/g)].map((m) => m[1]);
const selected = (html: string): string => /data-tab="([^"]+)" aria-selected="true"/.exec(html)?.[1] ?? "";
const panelOf = (html: string, id: string): string => {
  const m = new RegExp(`<div role="tabpanel"[^>]*data-tab="${id}"([^>]*)>`).exec(html);
  return m ? m[0] : '';
};

test('tabsHtml: ARIA tablist, tabs and tabpanels wired to each other, one shown', () => {
  const html = tabsHtml([{ id: 'a', label: 'A', html: '<p>a</p>' }, { id: 'b', label: 'B', html: '<p>b</p>', mark: true }], 'b', 'Things');
  assert.match(html, /<div class="tabs" role="tablist" aria-label="Things">/);
  assert.match(html, /id="pt-tab-a" data-tab="a" aria-selected="false" aria-controls="pt-panel-a" tabindex="-1"/);
  assert.match(html, /id="pt-tab-b" data-tab="b" aria-selected="true" aria-controls="pt-panel-b" tabindex="0"/);
  assert.match(html, /id="pt-panel-a" data-tab="a" aria-labelledby="pt-tab-a" tabindex="0" hidden>/);
  assert.match(html, /id="pt-panel-b" data-tab="b" aria-labelledby="pt-tab-b" tabindex="0">/);
  assert.match(html, /B<i class="tab-mark"/);
  assert.equal(shownTab([{ id: 'a' }, { id: 'b' }], 'zzz'), 'a', 'a missing choice shows the first');
});

test('tabForKey: arrows wrap, Home/End, other keys do nothing', () => {
  const ids = ['node', 'cost', 'opt'];
  assert.equal(tabForKey(ids, 'node', 'ArrowRight'), 'cost');
  assert.equal(tabForKey(ids, 'opt', 'ArrowRight'), 'node');
  assert.equal(tabForKey(ids, 'node', 'ArrowLeft'), 'opt');
  assert.equal(tabForKey(ids, 'cost', 'Home'), 'node');
  assert.equal(tabForKey(ids, 'cost', 'End'), 'opt');
  assert.equal(tabForKey(ids, 'cost', 'Enter'), null);
  assert.equal(tabForKey(ids, 'gone', 'ArrowRight'), null);
});

test('a node: Node, Cost, Fusion · Memory tabs (Debug only while paused); the chosen one is shown', () => {
  const c = cell();
  const html = renderPanel(ctx(c, 'layer1.0.conv1', 'semantic', { tab: 'cost' }));
  assert.deepEqual(tabIds(html), ['node', 'cost', 'opt']);
  assert.equal(selected(html), 'cost');
  assert.doesNotMatch(panelOf(html, 'cost'), /hidden/);
  assert.match(panelOf(html, 'node'), /hidden/);
  const paused = renderPanel(ctx(c, 'layer1.0.conv1', 'semantic', { tab: 'debug', debugCard: '<div class="debug-card">Paused here</div>', pausedHere: true }));
  assert.deepEqual(tabIds(paused), ['node', 'cost', 'opt', 'debug']);
  assert.equal(selected(paused), 'debug');
  assert.match(paused, /Debug<i class="tab-mark"/);
  // The Debug tab chosen, then the session ends: the Node tab shows (the choice is the caller's to keep).
  assert.equal(selected(renderPanel(ctx(c, 'layer1.0.conv1', 'semantic', { tab: 'debug' }))), 'node');
});

test('the Node tab: op, source, inputs with links, outputs, attributes, parameters, each with a copy button', () => {
  const c = cell();
  const html = renderPanel(ctx(c, 'layer1.0.conv1', 'semantic'));
  assert.match(html, /data-copy="layer1\.0\.conv1" title="Copy node id"/);
  assert.match(html, /data-copy-json="node"/);
  assert.match(html, /<span class="src">net\.py:42:9<\/span> <button type="button" class="copy" data-copy="net\.py:42" title="Copy source location"/);
  assert.match(html, /<a href="#" class="goto" data-id="x">x:0<\/a>/);
  assert.match(html, /1×64×56×56 float32 <button type="button" class="copy" data-copy="\(1, 64, 56, 56\)" title="Copy shape"/);
  assert.match(html, /<th>kernel_size<\/th><td>\[3,3\] <button type="button" class="copy" data-copy="\[3,3\]" title="Copy kernel_size"/);
  assert.match(html, /data-copy="layer1\.0\.conv1\.weight" title="Copy parameter name"/);
  assert.match(html, /Used by<\/div><ul class="origins"><li><a href="#" class="goto" data-id="layer1\.0\.relu">/);
});

test('the Cost tab: FLOPs and their share, bytes, intensity; the kernels made from a semantic node', () => {
  const c = cell();
  const html = panelText(renderPanel(ctx(c, 'layer1.0.conv1', 'semantic', { tab: 'cost' })));
  assert.match(html, /FLOPs 1000 16\.4 %/);
  assert.match(html, /parameters 2304 \(9\.0 KiB\)/);
  assert.match(html, /bytes written 784\.0 KiB/);
  assert.match(html, /intensity [\d.]+ FLOPs\/byte/);
  assert.match(html, /Kernels made from it kernel unit bound cycles time conv\/layer1\.0\.conv1 Cube compute 932 2\.90 µs/);
  assert.match(html, /Show in the Hardware layer/);
  // The hardware layer: the kernel's detail and its share of the estimate.
  const hw = panelText(renderPanel(ctx(c, 'conv/layer1.0.conv1', 'hardware', { tab: 'cost' })));
  assert.match(hw, /2\.90 µs of the 10 µs estimate 29\.0 %/);
  assert.match(hw, /bound compute/);
});

test('the Fusion · Memory tab: a semantic node\'s kernel, its fusion decision and placement; a kernel\'s origins and buffer', () => {
  const c = cell();
  const sem = panelText(renderPanel(ctx(c, 'layer1.0.relu', 'semantic')));
  assert.match(sem, /became conv\/layer1\.0\.conv1 FusedConv2D \(with 1 more\)/);
  assert.match(sem, /FUSED|fused fuse-conv \(conv\)/i);
  assert.match(sem, /Conv2D \+ ReLU fused/);
  assert.match(sem, /Memory placement \(of its kernel\)/);
  const notFused = panelText(renderPanel(ctx(c, 'fc', 'semantic')));
  assert.match(notFused, /not fused fuse-dense \(dense\) fc MatMul `fc` left alone: its output is a graph output/);
  const removed = panelText(renderPanel(ctx(c, 'layer1.1.conv1', 'semantic')));
  assert.match(removed, /removed by dce why unused/);
  const opt = panelText(renderPanel(ctx(c, 'conv/layer1.0.conv1', 'optimized')));
  assert.match(opt, /pass fuse-conv pattern conv reason Conv2D \+ ReLU fused origins layer1\.0\.conv1 Conv2D layer1\.0\.relu ReLU/);
  assert.match(opt, /Memory placement out size offset steps buffer #0 392\.0 KiB 0 B 1–2 0/);
  assert.match(opt, /No other tensor reuses its buffer/);
  assert.deepEqual(kernelsFrom(c, 'layer1.0.relu').map((o) => o.id), ['conv/layer1.0.conv1']);
  // Buffer 0 (proto3 JSON leaves its index out) is shared like any other.
  c.optimized!.memory!.buffers = [{ tensors: ['x:0', 'conv/layer1.0.conv1:0', 'fc:0'] }];
  const kernel = c.optimized!.nodes![1];
  delete kernel.memory![0].buffer;
  assert.deepEqual(bufferMates(c, kernel), ['x:0', 'fc:0']);
  const mates = panelText(renderPanel(ctx(c, 'conv/layer1.0.conv1', 'optimized', { bufferMates: bufferMates(c, kernel) })));
  assert.match(mates, /Shares its buffer with x:0 fc:0/);
  assert.deepEqual(bufferMates(c, { id: 'y', memory: [{ output: 0 }] }), [], 'not in the buffer: no mates');
  assert.deepEqual(decisionsFor(c, ['fc']).map((d) => d.fused), [false]);
});

test('a failed call: its own tabs (Call; Debug while paused), the message above them', () => {
  const c = cell();
  c.failures = [{ id: 'fc', api: 'nn.Dense', op: 'MatMul', scope: 'fc', code: 'shape-mismatch', message: 'expects 1600', inputs: [{ node: 'layer1.1.relu' }], file: 'net.py',
    range: { start: { line: 21, character: 4 }, end: { line: 21, character: 9 } } }];
  c.nodes = c.nodes!.filter((n) => n.id !== 'fc');
  const html = renderPanel(ctx(c, FAILED_PREFIX + 'fc', 'semantic', { tab: 'cost' }));
  assert.deepEqual(tabIds(html), ['node']);
  assert.equal(selected(html), 'node');
  assert.ok(html.indexOf('failure-msg') < html.indexOf('role="tablist"'), 'the message is above the tabs');
  assert.match(html, /data-copy="net\.py:22"/);
  assert.match(nodeJson(ctx(c, FAILED_PREFIX + 'fc', 'semantic')), /"message": "expects 1600"/);
});

test('the Cell summary: Cell (with the input box), Cost, Fusion · Memory; the fusions not made and why', () => {
  const c = cell();
  const html = renderCellSummary(c, 'semantic', { tab: 'opt' });
  assert.deepEqual(tabIds(html), ['node', 'cost', 'opt']);
  assert.equal(selected(html), 'opt');
  assert.match(html, /<button type="button" role="tab" class="tab" id="pt-tab-node" data-tab="node"[^>]*>Cell</);
  assert.match(panelOf(html, 'node') + html.slice(html.indexOf('data-tab="node" aria-labelledby')), /form class="inputs-form"/);
  const text = panelText(html);
  assert.match(text, /Not fused \(1\)/);
  assert.match(text, /Fused \(1\)/);
  assert.match(text, /buffer reuse saves 2\.9 KiB \(75 %\)/);
  assert.match(text, /Removed \(1\) layer1\.1\.conv1 dce unused/);
  assert.match(text, /Slowest kernels \(estimated time\) op node time share FusedConv2D layer1\.0\.conv1 2\.90 µs/);
  assert.match(text, /latency 0\.0100 ms/);
  assert.doesNotMatch(text, /CPU · overhead/, 'Ascend words on an Ascend target');
  c.hardware = { target: 'cpu', estimate: { latencyMs: 0.1, cpuMs: 0.07, dispatchMs: 0.03, cubeUtilization: 0.2 }, kernels: 3 };
  const cpu = panelText(renderCellSummary(c, 'hardware', {}));
  assert.match(cpu, /CPU · overhead 0\.0700 · 0\.0300 ms/);
  assert.match(cpu, /FMA utilization 20\.0 %/);
  assert.doesNotMatch(cpu, /cube|GM traffic|dispatch/, 'no Ascend words on a CPU target');
  const json = JSON.parse(cellJson(c)) as Record<string, unknown>;
  assert.equal(json.nodes, undefined);
  assert.equal((json.optimized as Record<string, unknown>).nodes, undefined);
  assert.equal(((json.optimized as Record<string, Record<string, unknown>>).memory).buffers, 1);
});

test('copy helpers: a shape as Python writes it, file:line, the node JSON of each layer', () => {
  assert.equal(shapeTuple({ shape: [1, 64, 56, 56] }), '(1, 64, 56, 56)');
  assert.equal(shapeTuple({ shape: ['N', 3, '(H-1)//2+1'] }), '(N, 3, (H-1)//2+1)');
  assert.equal(shapeTuple({ shape: [8] }), '(8,)');
  assert.equal(shapeTuple({ shape: [] }), '()');
  assert.equal(shapeTuple({ unranked: true }), '(...)');
  assert.equal(fileLine('a/net.py', { start: { line: 9, character: 3 }, end: { line: 9, character: 4 } }), 'a/net.py:10');
  // proto3 JSON leaves out a zero column (a class at the start of its line): no "NaN".
  const r0 = JSON.parse('{"start":{"line":115},"end":{"line":120}}');
  assert.equal(rangeText('net.py', r0), 'net.py:116:1');
  assert.equal(fileLine('net.py', JSON.parse('{"start":{},"end":{}}')), 'net.py:1');
  const c = cell();
  assert.equal(JSON.parse(nodeJson(ctx(c, 'layer1.0.conv1', 'semantic'))).attrs.pad_mode, 'same');
  const k = [{ name: 'FusedConv2D', tiling: [{ buffer: 'L1' }] }];
  const opt = JSON.parse(nodeJson({ ...ctx(c, 'conv/layer1.0.conv1', 'hardware'), kernels: k }));
  assert.deepEqual(opt.origins, ['layer1.0.conv1', 'layer1.0.relu']);
  assert.equal(opt.hardware[0].tiling[0].buffer, 'L1', 'the detailed kernels when fetched');
});

test('the multi-selection list: totals, a row per node with a link; the debug strip', () => {
  const c = cell();
  const g = buildViewGraph(c, 'semantic');
  const rows = matchRows(['layer1.0.conv1', 'layer1.1.conv1'].map((id) => g.byId.get(id)!));
  const text = panelText(renderMatches('op:Conv2D', rows, c, 'semantic'));
  assert.match(text, /^2 selected Clear matches of op:Conv2D/);
  assert.match(text, /FLOPs 6000 98\.2 %/);
  assert.match(text, /Conv2D layer1\.0\.conv1 1×64×56×56 1000 Conv2D layer1\.1\.conv1 1×4 5000/);
  assert.match(renderMatches('op:Conv2D', rows, c, 'semantic'), /data-copy="\[&quot;layer1\.0\.conv1&quot;,&quot;layer1\.1\.conv1&quot;\]"/);
  const strip = debugStrip({ node: 'layer1.0.conv1', op: 'Conv2D', shape: ['1', '64', '56', '56'], dtype: 'float32', stats: { min: 0, max: 4.75, nan: 2 } },
    () => '', true);
  assert.match(panelText(strip), /Paused here Conv2D layer1\.0\.conv1 \(1, 64, 56, 56\) float32 · min 0 · max 4\.75 2 NaN all statistics ›/);
  assert.equal(debugStrip({ node: '' }, () => '', false), '');
});

/** The text of a piece of panel markup, as innerText would read it (roughly: tags to spaces). */
function panelText(html: string): string {
  return html.replace(/<[^>]+>/g, ' ').replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>')
    .replace(/\s+/g, ' ').trim();
}
