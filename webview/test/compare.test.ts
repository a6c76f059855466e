// Comparing with a fixed base (compare.ts, model.ts's ghostNodes): the marks per layer, the
// base's removed nodes drawn where they were, the panel's before → after lines, the banner's
// summary and the order "next change" steps through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GHOST_PREFIX, ROOT_ID, buildViewGraph } from '../src/model';
import {
  bannerHtml, cellComparison, changeRows, changeSteps, compareDetailsHtml, compareDiff, deltaText, fieldLabel, ghostsFor,
  isComparing, nodeStatus, summarize, valueText,
} from '../src/compare';
import { diffGraphs } from '../src/diff';
import { computeScale } from '../src/metrics';
import type { Cell, CellComparison, Comparison } from '../src/protocol';
import { node, smallCell } from './fixtures';

/** The base (smallCell) edited: the first ReLU gone (the Add reads the conv), fc wider, a new BatchNorm. */
function currentCell(): Cell {
  const c = smallCell();
  c.nodes = c.nodes!.filter((n) => n.id !== 'layer1.0.relu');
  c.nodes.find((n) => n.id === 'layer1.0/Add')!.inputs = [{ node: 'layer1.0.conv1', output: 0 }, { node: 'x', output: 0 }];
  const fc = c.nodes.find((n) => n.id === 'fc')!;
  fc.outputs = [{ shape: [1, 10], dtype: 'float32' }];
  const at = c.nodes.findIndex((n) => n.id === 'layer1.1.relu');
  c.nodes.splice(at, 0, node('layer1.1.bn', 'layer1.1.bn', ['layer1.1.conv1'], 'BatchNorm', { category: 'normalization' }));
  c.nodes.find((n) => n.id === 'layer1.1.relu')!.inputs = [{ node: 'layer1.1.bn', output: 0 }];
  return c;
}

function comparisonOf(kind = 'head'): { c: Comparison; cc: CellComparison } {
  const base = smallCell();
  const relu = base.nodes!.find((n) => n.id === 'layer1.0.relu')!;
  relu.file = 'net.py';
  relu.range = { start: { line: 9, character: 8 }, end: { line: 9, character: 20 } };
  const cc: CellComparison = {
    cell: 'Net()', baseCell: 'Net()',
    added: ['layer1.1.bn'],
    removed: [relu],
    changed: [
      { id: 'fc', changes: [{ field: 'outputs[0].shape', before: [1, 4], after: [1, 10] }, { field: 'params', before: 20, after: 50 }] },
      { id: 'layer1.0/Add', changes: [{ field: 'inputs', before: ['layer1.0.relu:0', 'x:0'], after: ['layer1.0.conv1:0', 'x:0'] }] },
    ],
    optimizedAdded: ['k-bn'], optimizedRemoved: ['k-relu', 'k-old'], optimizedChanged: [],
    before: { params: 100, flops: 6000, kernels: 5, hardware: true, latencyMs: 1.5, memoryPeakBytes: 2048, compiled: true },
    after: { params: 130, flops: 6000, kernels: 5, hardware: true, latencyMs: 1.2, memoryPeakBytes: 4096, compiled: true },
  };
  const c: Comparison = {
    base: { kind, label: kind === 'head' ? 'HEAD (abc1234)' : 'other.py', commit: 'abc1234', spec: kind === 'head' ? 'HEAD' : 'other.py' },
    seq: 3, cells: [cc],
  };
  return { c, cc };
}

test('a comparison is in force while it names a base; each Cell has its own', () => {
  const { c } = comparisonOf();
  assert.ok(isComparing(c));
  assert.ok(!isComparing({}));
  assert.ok(!isComparing(null));
  assert.equal(cellComparison(c, 'Net()')?.baseCell, 'Net()');
  assert.equal(cellComparison(c, 'Other()'), undefined);
  assert.equal(cellComparison({ cells: c.cells }, 'Net()'), undefined);
});

test('removed nodes are drawn as ghosts where they were, with edges from what they read', () => {
  const { c, cc } = comparisonOf();
  const ghosts = ghostsFor(c, cc, 'semantic', false)!;
  assert.equal(ghosts.length, 1);
  assert.equal(ghosts[0].range, undefined, 'the HEAD text has other line numbers');
  assert.equal(ghosts[0].file, 'net.py');
  assert.equal(ghostsFor(comparisonOf('file').c, cc, 'semantic', false)![0].range?.start.line, 9, 'another file keeps its lines');
  assert.equal(ghostsFor(c, cc, 'optimized', false), undefined);
  assert.equal(ghostsFor(c, cc, 'semantic', true), undefined, 'lazy Cells list them instead');

  const g = buildViewGraph(currentCell(), 'semantic', undefined, undefined, ghosts);
  const ghost = g.byId.get(GHOST_PREFIX + 'layer1.0.relu')!;
  assert.ok(ghost.ghost);
  assert.equal(ghost.kind, 'removed');
  assert.equal(ghost.op, 'ReLU');
  assert.equal(g.parentOf.get(ghost.id), 'g:layer1.0');
  // Right after the convolution it read, before the Add.
  const order = g.groups.get('g:layer1.0')!.children;
  assert.deepEqual(order, ['layer1.0.conv1', GHOST_PREFIX + 'layer1.0.relu', 'layer1.0/Add']);
  assert.deepEqual(g.edges.filter((e) => e.tgt === ghost.id).map((e) => e.src), ['layer1.0.conv1']);
  // Not part of the graph's figures, nor of the last edit's diff.
  assert.ok(!computeScale(g, 'flops').values.has(ghost.id));
  const plain = buildViewGraph(currentCell(), 'semantic');
  assert.deepEqual(diffGraphs(g, plain), { added: new Set(), changed: new Set(), removed: [] });
  assert.deepEqual(diffGraphs(plain, g), { added: new Set(), changed: new Set(), removed: [] });
});

test('a chain of removed nodes hangs together; one with nothing drawn before it goes first', () => {
  const base = smallCell();
  const removed = [node('stem', '', [], 'Conv2D'), node('stem2', '', ['stem'], 'ReLU')];
  const g = buildViewGraph(base, 'semantic', undefined, undefined, removed);
  const ids = g.nodes.map((n) => n.id);
  assert.deepEqual(ids.slice(0, 2), [GHOST_PREFIX + 'stem', GHOST_PREFIX + 'stem2']);
  assert.deepEqual(g.edges.filter((e) => e.tgt === GHOST_PREFIX + 'stem2').map((e) => e.src), [GHOST_PREFIX + 'stem']);
});

test('the marks of a layer: added and changed nodes tinted, groups hiding changes marked', () => {
  const { c, cc } = comparisonOf();
  const g = buildViewGraph(currentCell(), 'semantic', undefined, undefined, ghostsFor(c, cc, 'semantic', false));
  const d = compareDiff(cc, g);
  assert.deepEqual([...d.added], ['layer1.1.bn']);
  assert.deepEqual([...d.changed].sort(), ['fc', 'layer1.0/Add']);
  assert.deepEqual(d.removed, ['layer1.0.relu']);
  assert.ok(d.tint);
  assert.ok(d.groups!.has('g:layer1') && d.groups!.has('g:layer1.0') && d.groups!.has('g:layer1.1'));
  assert.ok(!d.groups!.has(ROOT_ID));
  // Execution order, ghosts included: what "next change" steps through.
  assert.deepEqual(changeSteps(d, g), [GHOST_PREFIX + 'layer1.0.relu', 'layer1.0/Add', 'layer1.1.bn', 'fc']);

  // The optimized layer: its own lists (ids not drawn are not marked).
  const opt = currentCell();
  opt.optimized = { nodes: [{ id: 'x', kind: 'input', op: 'Input', origins: ['x'] }, { id: 'k-bn', op: 'BatchNorm', origins: ['layer1.1.bn'], inputs: [{ node: 'x' }] }] };
  const go = buildViewGraph(opt, 'optimized');
  const dopt = compareDiff(cc, go);
  assert.deepEqual([...dopt.added], ['k-bn']);
  assert.deepEqual(dopt.removed, ['k-relu', 'k-old']);
  assert.equal(dopt.changed.size, 0);
});

test('the panel says what changed, before → after', () => {
  const { c, cc } = comparisonOf();
  assert.deepEqual(nodeStatus(cc, 'semantic', 'layer1.1.bn'), { status: 'added' });
  assert.equal(nodeStatus(cc, 'semantic', GHOST_PREFIX + 'layer1.0.relu')!.status, 'removed');
  assert.equal(nodeStatus(cc, 'semantic', 'x'), null);
  assert.equal(nodeStatus(cc, 'optimized', 'k-bn')!.status, 'added');
  assert.deepEqual(changeRows(cc.changed![0]), [
    { field: 'outputs[0].shape', label: 'output shape', before: '1×4', after: '1×10' },
    { field: 'params', label: 'parameters', before: '20', after: '50' },
  ]);
  const html = compareDetailsHtml(c, cc, 'semantic', 'fc');
  assert.match(html, /Changed since HEAD \(abc1234\)/);
  assert.match(html, /<th>output shape<\/th><td><span class="before">1×4<\/span> → <span class="after">1×10<\/span>/);
  assert.match(compareDetailsHtml(c, cc, 'semantic', 'layer1.1.bn'), /Added since HEAD \(abc1234\)/);
  assert.match(compareDetailsHtml(c, cc, 'semantic', GHOST_PREFIX + 'layer1.0.relu'), /Removed since HEAD/);
  assert.equal(compareDetailsHtml(c, cc, 'semantic', 'x'), '');
  assert.equal(compareDetailsHtml(null, cc, 'semantic', 'fc'), '');
});

test('values read as the graph writes them', () => {
  assert.equal(fieldLabel('attrs.kernel_size'), 'kernel_size');
  assert.equal(fieldLabel('outputs[1].dtype'), 'output 1 dtype');
  assert.equal(fieldLabel('time_us'), 'time');
  assert.equal(valueText('outputs[0].shape', ['N', 64, '(H-3)//2+1', null]), 'N×64×((H-3)//2+1)×?');
  assert.equal(valueText('outputs[0].shape', null), '—');
  assert.equal(valueText('outputs[0].shape', []), '[]');
  assert.equal(valueText('params', 2359296), '2.36M');
  assert.equal(valueText('time_us', 12.5), '12.5 µs');
  assert.equal(valueText('inputs', ['a:0', 'b:1']), 'a:0, b:1');
  assert.equal(valueText('attrs.kernel_size', [3, 3]), '[3,3]');
  assert.equal(valueText('op', 'ReLU'), 'ReLU');
  assert.equal(deltaText(100, 130), '100 → 130 (+30%)');
  assert.equal(deltaText(2, 1), '2 → 1 (−50%)');
  assert.equal(deltaText(5, 5), '5 (unchanged)');
  assert.equal(deltaText(0, 5), '0 → 5');
});

test('the summary: counts of the layer, parameters, FLOPs, and latency and memory in the hardware layer', () => {
  const { cc } = comparisonOf();
  const s = summarize(cc, 'semantic');
  assert.deepEqual([s.added, s.removed, s.changed], [1, 1, 2]);
  assert.deepEqual(s.totals, [['params', '100 → 130 (+30%)'], ['FLOPs', '6000 (unchanged)']]);
  const hw = summarize(cc, 'hardware');
  assert.deepEqual([hw.added, hw.removed, hw.changed], [1, 2, 0]);
  assert.deepEqual(hw.totals.map((t) => t[0]), ['params', 'FLOPs', 'kernels', 'latency', 'memory']);
  assert.equal(hw.totals[3][1], '1.50 ms → 1.20 ms (−20%)');
  assert.equal(hw.totals[4][1], '2.0 KiB → 4.0 KiB (+100%)');
});

test('the banner: pending, a message when the base cannot be had, else the summary with the removed nodes', () => {
  const { c, cc } = comparisonOf();
  const ctx = { cell: 'Net()', layer: 'semantic' as const, drawn: new Set([GHOST_PREFIX + 'layer1.0.relu']), position: 1, steps: 4 };
  const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
  assert.match(text(bannerHtml({ base: c.base, pending: true }, undefined, ctx)), /^Comparing with HEAD \(abc1234\) analysing the base…/);
  const err = bannerHtml({ base: { kind: 'head', label: 'HEAD', spec: 'HEAD' }, error: 'net.py is not in a git repository' }, undefined, ctx);
  assert.match(text(err), /^Cannot compare with HEAD : net.py is not in a git repository ×$/);
  const ok = bannerHtml(c, cc, ctx);
  assert.match(text(ok), /^Comparing with HEAD \(abc1234\) \+1 −1 ~2 nodes params 100 → 130 \(\+30%\) FLOPs 6000 \(unchanged\) ‹ 2\/4 › ×/);
  assert.match(ok, /<a href="#" class="goto" data-id="removed:layer1\.0\.relu">layer1\.0\.relu<\/a>/);
  assert.match(text(bannerHtml(c, cc, { ...ctx, position: -1 })), /‹ 4 changes ›/);
  assert.doesNotMatch(bannerHtml(c, cc, { ...ctx, steps: 0 }), /cmp-next/);
  assert.match(text(ok), /Removed \(1\) drawn where they were/);
  // The hardware layer: kernels, latency, memory; the removed kernels are listed, not drawn.
  const hw = text(bannerHtml(c, cc, { ...ctx, layer: 'hardware', drawn: new Set() }));
  assert.match(hw, /\+1 −2 ~0 kernels .* latency 1\.50 ms → 1\.20 ms \(−20%\) memory 2\.0 KiB → 4\.0 KiB/);
  assert.match(hw, /Removed \(2\) not drawn in this layer k-relu k-old/);
  // Cells matched otherwise, base errors, Cells only in the base.
  const other = text(bannerHtml({ ...c, baseErrors: 2, baseError: 'net.py:12: shape mismatch', removedCells: ['Head'] },
    { ...cc, baseCell: 'Old()' }, ctx));
  assert.match(other, /compared with Old\(\) of HEAD \(abc1234\)/);
  assert.match(other, /HEAD \(abc1234\) has 2 errors \(net\.py:12: shape mismatch\): its graph may stop early/);
  assert.match(other, /only in HEAD \(abc1234\): Head/);
  assert.match(text(bannerHtml(c, { ...cc, baseCell: '' }, ctx)), /has no Cell matching Net\(\): every node is new/);
  assert.match(text(bannerHtml(c, undefined, ctx)), /Net\(\) is not in the comparison yet/);
});
