// Failed calls of construct (Cell.failures): drawn as nodes of their own in every layer, with
// edges from what they received; the summaries say where the graph stops and whether the
// optimization and hardware figures are unavailable or partial.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FAILED_PREFIX, buildViewGraph, defaultExpansion, type LazyInput } from '../src/model';
import { aggregateEdges, planLayouts, LayoutCache } from '../src/layout';
import { layerState, stopsAt } from '../src/failures';
import { renderCellSummary, renderPanel } from '../src/panel';
import { search } from '../src/search';
import { diffGraphs } from '../src/diff';
import type { Cell, FailedCall, OptimizedNode } from '../src/protocol';
import { smallCell } from './fixtures';

const MESSAGE = 'nn.Dense expects 1600 input features (in_channels=1600), but receives 9216 from input of shape (1, 9216)';

function fc1(extra: Partial<FailedCall> = {}): FailedCall {
  return {
    id: 'fc', api: 'nn.Dense', op: 'MatMul', scope: 'fc', inputs: [{ node: 'layer1.1.relu', output: 0 }],
    file: 'net.py', range: { start: { line: 21, character: 22 }, end: { line: 21, character: 33 } },
    code: 'shape-mismatch', message: MESSAGE, ...extra,
  };
}

/** smallCell cut off where `fc` fails (nothing after it is in the graph). */
function failedCell(): Cell {
  const c = smallCell();
  c.file = 'net.py';
  c.nodes = c.nodes!.filter((n) => n.id !== 'fc');
  c.failures = [fc1()];
  return c;
}

function optNodes(): OptimizedNode[] {
  return [
    { id: 'x', kind: 'input', op: 'Input', origins: ['x'] },
    { id: 'conv/layer1.0.conv1', op: 'FusedConv2D', pattern: 'conv', origins: ['layer1.0.conv1', 'layer1.0.relu'], inputs: [{ node: 'x' }] },
    { id: 'layer1.0/Add', op: 'Add', origins: ['layer1.0/Add'], inputs: [{ node: 'conv/layer1.0.conv1' }, { node: 'x' }] },
    { id: 'conv/layer1.1.conv1', op: 'FusedConv2D', pattern: 'conv', origins: ['layer1.1.conv1', 'layer1.1.relu'],
      inputs: [{ node: 'layer1.0/Add' }], outputs: [{ shape: [1, 4], dtype: 'float16' }] },
  ];
}

/** With optimized and hardware layers: `kernels` compiled (0: everything was dead code). */
function compiledCell(kernels: number): Cell {
  const c = failedCell();
  c.optimized = { target: 'ascend910', kernels, semanticOps: 6, nodes: kernels ? optNodes() : [optNodes()[0]] };
  c.hardware = {
    target: 'ascend910', mode: 'infer', kernels, statement: 'Analytical model.',
    estimate: { latencyMs: kernels ? 0.0125 : 0, throughputPerSec: kernels ? 80000 : 0, batch: 1, mode: 'infer' },
  };
  return c;
}

test('semantic layer: the failed call is a node of its own, after its input, with an edge from it', () => {
  const g = buildViewGraph(failedCell(), 'semantic');
  const id = FAILED_PREFIX + 'fc';
  const f = g.byId.get(id);
  assert.ok(f, 'the failure is drawn');
  assert.equal(f.kind, 'failed');
  assert.equal(f.label, 'fc · nn.Dense');
  assert.equal(f.sub, 'error: shape-mismatch');
  assert.equal(f.op, 'MatMul');
  assert.equal(f.failure?.message, MESSAGE);
  assert.equal(f.group, '', 'a leaf-Cell call sits in its parent Cell (the root)');
  assert.deepEqual(g.root.children.at(-1), id, 'last in execution order');
  assert.deepEqual(g.pred.get(id), ['layer1.1.relu']);
  const e = g.edges.find((x) => x.tgt === id)!;
  assert.deepEqual([e.src, e.output], ['layer1.1.relu', 0]);
  assert.deepEqual(e.tensor?.shape, [1, 4], 'the edge carries the tensor the call received');
  // The layout gets it as a node (the root group's job), with its edge.
  // (The root's problem comes once its groups are laid out: stand-in layouts for those.)
  const ex = defaultExpansion(g, 1000), agg = aggregateEdges(g), cache = new LayoutCache();
  let plan = planLayouts(g, ex, agg, cache);
  for (let wave = 0; wave < 5 && !plan.jobs.some((j) => j.group === 'g:'); wave++) {
    for (const j of plan.jobs) cache.put({ group: j.group, key: j.key, width: 200, height: 300, pos: {}, edges: {}, ms: 0 });
    plan = planLayouts(g, ex, agg, cache);
  }
  const root = plan.jobs.find((j) => j.group === 'g:')!;
  const names = plan.keys.get('g:')!.children;
  const cid = (real: string) => `c${names.indexOf(real)}`;
  const child = root.children.find((c) => c.id === cid(id));
  assert.ok(child && child.w >= 96 && child.h === 40, JSON.stringify(child));
  assert.ok(root.edges.some((x) => x.t === cid(id) && x.s === cid('g:layer1')), JSON.stringify(root.edges));
});

test('a failed call sits in its scope\'s group; its id may equal a node\'s', () => {
  const c = failedCell();
  c.failures = [fc1({ id: 'layer1.1/MatMul', api: 'ops.matmul', scope: 'layer1.1', inputs: [{ node: 'layer1.1.conv1' }] })];
  const g = buildViewGraph(c, 'semantic');
  const id = FAILED_PREFIX + 'layer1.1/MatMul';
  assert.equal(g.byId.get(id)!.group, 'layer1.1');
  assert.equal(g.parentOf.get(id), 'g:layer1.1');
  const kids = g.groups.get('g:layer1.1')!.children;
  assert.ok(kids.indexOf(id) === kids.indexOf('layer1.1.conv1') + 1, `just after its input: ${kids.join(', ')}`);
  // A layer applied twice: the first call made node "fc", the second failed with id "fc".
  const twice = smallCell();
  twice.failures = [fc1({ inputs: [{ node: 'fc' }] })];
  const g2 = buildViewGraph(twice, 'semantic');
  assert.equal(g2.byId.get('fc')!.kind, 'op');
  assert.equal(g2.byId.get(FAILED_PREFIX + 'fc')!.kind, 'failed');
  assert.deepEqual(g2.pred.get(FAILED_PREFIX + 'fc'), ['fc']);
});

test('optimized and hardware layers: the edge comes from the kernel holding the input', () => {
  for (const layer of ['optimized', 'hardware'] as const) {
    const g = buildViewGraph(compiledCell(3), layer);
    const id = FAILED_PREFIX + 'fc';
    const f = g.byId.get(id)!;
    assert.equal(f.kind, 'failed', layer);
    assert.equal(f.height, layer === 'hardware' ? 54 : 40);
    // layer1.1.relu was fused into conv/layer1.1.conv1.
    assert.deepEqual(g.pred.get(id), ['conv/layer1.1.conv1'], layer);
    assert.deepEqual(g.edges.find((e) => e.tgt === id)!.tensor?.shape, [1, 4]);
    assert.equal(g.nodes.at(-1)!.id, id);
  }
  // An optimized node of the input's own id wins over one that merely holds it.
  const c = compiledCell(3);
  c.failures = [fc1({ inputs: [{ node: 'x' }] })];
  c.optimized!.nodes!.push({ id: 'Cast/x', op: 'Cast', origins: ['x'], inputs: [{ node: 'x' }] });
  assert.deepEqual(buildViewGraph(c, 'optimized').pred.get(FAILED_PREFIX + 'fc'), ['x']);
});

test('optimized layer: an input the passes eliminated gives no edge, the failure is still drawn', () => {
  const g = buildViewGraph(compiledCell(0), 'hardware');
  const id = FAILED_PREFIX + 'fc';
  assert.ok(g.byId.has(id));
  assert.equal(g.pred.get(id), undefined);
  assert.deepEqual(g.nodes.map((n) => n.id), ['x', id]);
});

test('several failures: one node each, each after its own input', () => {
  const c = failedCell();
  c.failures = [fc1(), fc1({ id: 'head', scope: 'head', inputs: [{ node: 'layer1.0/Add' }, { node: 'x' }] })];
  const g = buildViewGraph(c, 'semantic');
  assert.deepEqual(g.pred.get(FAILED_PREFIX + 'head')!.slice().sort(), ['layer1.0/Add', 'x']);
  const ids = g.nodes.map((n) => n.id);
  assert.ok(ids.indexOf(FAILED_PREFIX + 'head') === ids.indexOf('layer1.0/Add') + 1, ids.join(', '));
  assert.equal(stopsAt(c), `fc (nn.Dense, line 22): ${MESSAGE} (+1 more)`);
});

test('a lazy Cell: the failure is drawn; an input not loaded gives no edge', () => {
  const c = failedCell();
  const lz: LazyInput = {
    skeleton: { name: c.name, nodes: 6, scopes: [{ scope: '', nodes: 1, totalNodes: 6, first: 0 }, { scope: 'layer1', nodes: 0, totalNodes: 5, first: 1 }] },
    chunks: new Map([['', { nodes: [c.nodes![0]], index: [0] }]]),
    pending: new Set(),
  };
  const g = buildViewGraph({ ...c, nodes: [c.nodes![0]] }, 'semantic', undefined, lz);
  assert.ok(g.byId.has('lazy:layer1'));
  assert.ok(g.byId.has(FAILED_PREFIX + 'fc'));
  assert.equal(g.pred.get(FAILED_PREFIX + 'fc'), undefined);
});

test('search finds a failed call by id, api and message', () => {
  const g = buildViewGraph(failedCell(), 'semantic');
  const id = FAILED_PREFIX + 'fc';
  assert.equal(search(g, 'fc')[0].id, id);
  assert.deepEqual(search(g, 'nn.dense').map((h) => h.id), [id]);
  assert.deepEqual(search(g, 'expects 1600').map((h) => [h.id, h.field]), [[id, 'message']]);
  assert.deepEqual(search(g, 'shape-mismatch').map((h) => h.id), [id]);
});

test('diff: a failure that appears is an added node', () => {
  const before = smallCell();
  const after = failedCell();
  const d = diffGraphs(buildViewGraph(before, 'semantic'), buildViewGraph(after, 'semantic'));
  assert.ok(d.added.has(FAILED_PREFIX + 'fc'));
  assert.deepEqual(d.removed, ['fc']);
  // The same failure in the next document (new objects): unchanged; another message: changed.
  const again = diffGraphs(buildViewGraph(failedCell(), 'semantic'), buildViewGraph(failedCell(), 'semantic'));
  assert.equal(again.changed.size + again.added.size + again.removed.length, 0);
  const other = failedCell();
  other.failures = [fc1({ message: 'nn.Dense expects 2048 input features' })];
  assert.deepEqual([...diffGraphs(buildViewGraph(failedCell(), 'semantic'), buildViewGraph(other, 'semantic')).changed], [FAILED_PREFIX + 'fc']);
});

test('layer states: the graph stops; optimization and hardware unavailable without kernels, else partial', () => {
  const none = smallCell();
  assert.deepEqual(layerState(none, 'hardware'), { kind: 'complete', text: '', short: '', failure: null });
  const c0 = compiledCell(0);
  assert.equal(layerState(c0, 'semantic').kind, 'stops');
  assert.equal(layerState(c0, 'semantic').text, `Graph stops at fc (nn.Dense, line 22): ${MESSAGE}`);
  for (const l of ['optimized', 'hardware'] as const) {
    assert.equal(layerState(c0, l).text, `Unavailable: construct stops at fc (nn.Dense, line 22): ${MESSAGE}`);
    assert.equal(layerState(c0, l).short, 'Unavailable: construct stops at fc (nn.Dense, line 22)');
    assert.equal(layerState(compiledCell(2), l).kind, 'partial');
    assert.equal(layerState(compiledCell(2), l).text, `Partial: construct stops at fc (nn.Dense, line 22): ${MESSAGE}`);
  }
  // A failure in another file (an imported Cell) names the file.
  const other = compiledCell(0);
  other.failures = [fc1({ file: 'lib/blocks.py' })];
  assert.match(layerState(other, 'hardware').text, /^Unavailable: construct stops at fc \(nn\.Dense, line 22 of blocks\.py\)/);
});

test('summary: no kernels: "Unavailable" instead of latency 0 ms, 0 / s, kernels 0', () => {
  const c = compiledCell(0);
  const hw = renderCellSummary(c, 'hardware');
  assert.match(hw, /Unavailable: construct stops at fc \(nn\.Dense, line 22\): nn\.Dense expects 1600/);
  assert.doesNotMatch(hw, /0 ms/);
  assert.doesNotMatch(hw, /\d \/ s/);
  assert.doesNotMatch(hw, /<th>kernels<\/th>/);
  assert.doesNotMatch(hw, /<th>latency<\/th>/);
  assert.doesNotMatch(hw, /Analytical model/, 'no statement about figures not shown');
  const opt = renderCellSummary(c, 'optimized');
  assert.match(opt, /Unavailable: construct stops at fc/);
  assert.doesNotMatch(opt, /<th>kernels<\/th>|<th>memory peak<\/th>/);
  // Every layer's summary says where the graph stops, with a link that selects the failure.
  const sem = renderCellSummary(c, 'semantic');
  assert.match(sem, /Graph stops at fc \(nn\.Dense, line 22\)/);
  assert.match(sem, new RegExp(`data-id="${FAILED_PREFIX}fc"`));
  // The note on top is the semantic layer's; the Cost and Fusion tabs say the figures are unavailable.
  assert.doesNotMatch(sem.slice(0, sem.indexOf('role="tablist"')), /Unavailable/);
  assert.match(sem.slice(sem.indexOf('data-tab="cost" aria-labelledby')), /Unavailable: construct stops at fc/);
  assert.doesNotMatch(sem, /<th>latency<\/th>/);
});

test('summary: with kernels the figures are shown, labelled partial', () => {
  const c = compiledCell(3);
  const hw = renderCellSummary(c, 'hardware');
  assert.match(hw, /Hardware estimate \(partial\)/);
  assert.match(hw, /Partial: construct stops at fc \(nn\.Dense, line 22\)/);
  assert.match(hw, /cover the graph only up to there/);
  assert.match(hw, /<th>latency<\/th><td>0\.0125 ms/);
  assert.match(hw, /<th>kernels<\/th><td>3/);
  assert.match(renderCellSummary(c, 'optimized'), /Optimization \(partial\)[\s\S]*<th>kernels<\/th><td>3 \(from 6 ops\)/);
  // Without failures nothing changes.
  const ok = compiledCell(3);
  delete ok.failures;
  const plain = renderCellSummary(ok, 'hardware');
  assert.doesNotMatch(plain, /partial|Unavailable|stops/i);
  assert.match(plain, /<th>latency<\/th>/);
});

test('panel: a failed call shows its code, message, api/op, inputs and the source link', () => {
  const c = compiledCell(0);
  const g = buildViewGraph(c, 'semantic');
  const n = g.byId.get(FAILED_PREFIX + 'fc')!;
  const ctx = { cell: c, layer: 'semantic' as const, node: n, editor: true, kernels: null, detailsPending: false,
    semanticById: new Map(), bufferMates: [] };
  const html = renderPanel(ctx);
  assert.match(html, /class="err-icon"/);
  assert.match(html, /fc · nn\.Dense/);
  assert.match(html, /<span class="code">shape-mismatch<\/span> nn\.Dense expects 1600 input features/);
  assert.match(html, /<th>api<\/th><td>nn\.Dense <button type="button" class="copy" data-copy="nn\.Dense"/);
  assert.match(html, /<th>op<\/th><td>MatMul<\/td>/);
  // The editor reveals the call's range (1-based in the text, 0-based in the request).
  assert.match(html, /class="reveal open" data-reveal="[^"]*&quot;line&quot;:21,&quot;character&quot;:22/);
  assert.match(html, /class="src reveal"[^>]*>net\.py:22:23<\/a>/);
  assert.match(html, /class="goto" data-id="layer1\.1\.relu">layer1\.1\.relu:0<\/a>/);
  assert.match(html, /nothing that depends on this call is in the graph/);
  // Without an editor: the location as text; in the hardware layer, the eliminated input is said.
  const hwg = buildViewGraph(c, 'hardware');
  const html2 = renderPanel({ ...ctx, layer: 'hardware', node: hwg.byId.get(FAILED_PREFIX + 'fc')!, editor: false });
  assert.match(html2, /<span class="src">net\.py:22:23<\/span>/);
  assert.doesNotMatch(html2, /open in editor/);
  assert.match(html2, /the passes eliminated what it received/);
});
