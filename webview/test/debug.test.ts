import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildViewGraph, type LazyInput } from '../src/model';
import { debugPanelHtml, debugTargets, focusGroupPath, focusShape, isPaused, scopesToLoad } from '../src/debug';
import type { Cell, CellSkeleton, DebugFocus } from '../src/protocol';
import { node, smallCell } from './fixtures';

// smallCell with an optimized layer: conv1+relu of layer1.0 fused into one kernel, the Add folded
// away, layer1.1's conv1 and relu kept apart.
function optimizedCell(): Cell {
  const c = smallCell();
  c.optimized = {
    nodes: [
      { id: 'x', kind: 'input', op: 'Input', origins: ['x'] },
      { id: 'layer1.0/fused', op: 'Conv2D', pattern: 'conv_relu', origins: ['layer1.0.conv1', 'layer1.0.relu'], inputs: [{ node: 'x' }] },
      { id: 'layer1.1.conv1', op: 'Conv2D', origins: ['layer1.1.conv1'], inputs: [{ node: 'layer1.0/fused' }] },
      { id: 'layer1.1.relu', op: 'ReLU', origins: ['layer1.1.relu'], inputs: [{ node: 'layer1.1.conv1' }] },
      { id: 'fc', op: 'MatMul', origins: ['fc'], inputs: [{ node: 'layer1.1.relu' }] },
    ],
  };
  return c;
}

const focus = (n: string, extra: Partial<DebugFocus> = {}): DebugFocus => ({ cell: 'Net()', node: n, ...extra });

test('debug focus: an empty node clears it', () => {
  assert.equal(isPaused(undefined), false);
  assert.equal(isPaused({ cell: 'Net()', node: '' }), false);
  assert.equal(isPaused({}), false);
  assert.equal(isPaused(focus('fc')), true);
  const g = buildViewGraph(smallCell(), 'semantic');
  assert.deepEqual(debugTargets(g, { cell: 'Net()', node: '' }), []);
});

test('debug focus: the semantic layer highlights the node itself, unknown ids nothing', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  assert.deepEqual(debugTargets(g, focus('layer1.0.relu')), ['layer1.0.relu']);
  assert.deepEqual(debugTargets(g, focus('layer9.conv')), []);
});

test('debug focus: optimized and hardware layers highlight the kernels whose origins include the node', () => {
  const cell = optimizedCell();
  for (const layer of ['optimized', 'hardware'] as const) {
    const g = buildViewGraph(cell, layer);
    // A node fused with others: the fused kernel.
    assert.deepEqual(debugTargets(g, focus('layer1.0.relu')), ['layer1.0/fused'], layer);
    assert.deepEqual(debugTargets(g, focus('layer1.0.conv1')), ['layer1.0/fused'], layer);
    assert.deepEqual(debugTargets(g, focus('layer1.1.conv1')), ['layer1.1.conv1'], layer);
    // Folded away by the optimizer: no kernel to highlight.
    assert.deepEqual(debugTargets(g, focus('layer1.0/Add')), [], layer);
  }
});

test('debug focus: group path and lazy scopes to load, outermost first, skipping loaded and pending ones', () => {
  assert.equal(focusGroupPath(focus('layer1.0.conv1', { scope: 'layer1.0.conv1' })), 'layer1.0');
  assert.equal(focusGroupPath(focus('layer1.0/Add', { scope: 'layer1.0' })), 'layer1.0');
  assert.equal(focusGroupPath(focus('fc', { scope: 'fc' })), '');
  const skeleton: CellSkeleton = {
    name: 'Net()', nodes: 7,
    scopes: [{ scope: '' }, { scope: 'layer1' }, { scope: 'layer1.0' }, { scope: 'layer1.1' }],
    root: { scope: '', nodes: [node('x', '', [], 'Input')], index: [0] },
  };
  const lz: LazyInput = { skeleton, chunks: new Map([['', skeleton.root!]]), pending: new Set() };
  const f = focus('layer1.0.conv1', { scope: 'layer1.0.conv1' });
  assert.deepEqual(scopesToLoad(f, lz), ['layer1', 'layer1.0']);
  const lz2: LazyInput = { skeleton, chunks: new Map([['', skeleton.root!], ['layer1', {}]]), pending: new Set(['layer1.0']) };
  assert.deepEqual(scopesToLoad(f, lz2), []);
  const lz3: LazyInput = { skeleton, chunks: new Map([['', skeleton.root!], ['layer1', {}]]), pending: new Set() };
  assert.deepEqual(scopesToLoad(f, lz3), ['layer1.0']);
  // A node of the root scope: nothing to load; a cleared focus: nothing either.
  assert.deepEqual(scopesToLoad(focus('fc', { scope: 'fc' }), lz), []);
  assert.deepEqual(scopesToLoad({ node: '' }, lz), []);
});

test('debug focus: the panel card shows the badge, the node, its line and the live statistics', () => {
  const f = focus('layer1.0.conv1', {
    op: 'Conv2D', file: '/w/net.py', line: 12, reason: 'breakpoint', ran: false, tensor: 'x',
    shape: ['1', '3', '32', '32'], dtype: 'float32',
    stats: { numel: 3072, min: -2.5, max: 3.25, mean: 0.0123456, std: 1.0, nan: 0, inf: 2, zeros: 0 },
  });
  assert.deepEqual(focusShape(f), [1, 3, 32, 32]);
  const links: [string, number][] = [];
  const html = debugPanelHtml(f, (file, line) => { links.push([file, line]); return `<a>${file}:${line}</a>`; });
  assert.deepEqual(links, [['/w/net.py', 12]]);
  assert.match(html, /Paused here/);
  assert.match(html, /at a breakpoint/);
  assert.match(html, /Conv2D/);
  assert.match(html, /layer1\.0\.conv1/);
  assert.match(html, /\(1, 3, 32, 32\) float32/);
  assert.match(html, /before the node runs/);
  assert.match(html, /<th>min<\/th><td>-2\.5<\/td>/);
  assert.match(html, /<th>max<\/th><td>3\.25<\/td>/);
  assert.match(html, /<th>mean<\/th><td>0\.012346<\/td>/);
  assert.match(html, /<th>numel<\/th><td>3072<\/td>/);
  assert.match(html, /<tr class="bad"><th>inf<\/th><td>2<\/td>/);
  assert.doesNotMatch(html, /<tr class="bad"><th>nan/);
  // After the node ran (an exception filter): its output, and the exception text; ids are escaped.
  const g = debugPanelHtml(focus('a<b>', { ran: true, reason: 'exception', description: 'NaN in the output of node', stats: { nan: 8 }, shape: [8], dtype: 'float32' }), () => '');
  assert.match(g, /<th>tensor<\/th><td>output<\/td>/);
  assert.match(g, /NaN in the output of node/);
  assert.match(g, /a&lt;b&gt;/);
  assert.match(g, /\(8,\) float32/);
  assert.match(g, /<th>min<\/th><td>—<\/td>/);  // no finite value: left out by the adapter
  assert.equal(debugPanelHtml({ node: '' }, () => ''), '');
});
