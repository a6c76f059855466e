import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyDelta, mergeById } from '../src/delta';
import type { GraphDocument } from '../src/protocol';
import { node, smallCell } from './fixtures';

test('mergeById upserts, removes and keeps order', () => {
  const a = { id: 'a' }, b = { id: 'b' }, c = { id: 'c' };
  const b2 = { id: 'b', v: 2 };
  const out = mergeById([a, b, c], [b2, { id: 'd' }], ['a'], undefined);
  assert.deepEqual(out.map((x) => x.id), ['b', 'c', 'd']);
  assert.equal(out[0], b2);
  assert.equal(out[1], c, 'unchanged nodes keep their identity');
});

test('mergeById follows an explicit order', () => {
  const out = mergeById([{ id: 'a' }, { id: 'b' }], [{ id: 'n' }], [], ['n', 'b', 'a']);
  assert.deepEqual(out.map((x) => x.id), ['n', 'b', 'a']);
});

test('applyDelta replaces cell headers, merges nodes and optimized nodes', () => {
  const cell = smallCell();
  cell.optimized = { target: 'cpu', nodes: [{ id: 'x', origins: ['x'] }, { id: 'fc', origins: ['fc'] }], kernels: 1 };
  const doc: GraphDocument = { file: 'm.py', cells: [cell, { name: 'Other()', nodes: [] }], layer: 'optimized' };
  const changed = node('fc', 'fc', ['layer1.1.relu'], 'MatMul', { flops: 42 });
  const next = applyDelta(doc, {
    base: 1,
    header: { file: 'm.py', layer: 'optimized', target: 'cpu' },
    cells: [{
      name: 'Net()',
      header: { name: 'Net()', className: 'Net', compiled: true, flops: 7, optimized: { target: 'cpu', kernels: 2 } },
      nodes: [changed], removed: ['layer1.1.relu'], order: [],
      optimizedNodes: [{ id: 'k', origins: ['fc'] }], optimizedRemoved: ['fc'], optimizedOrder: [],
    }],
  });
  assert.equal(next.cells!.length, 1, 'cells not in the delta are gone');
  const c = next.cells![0];
  assert.equal(c.flops, 7);
  assert.equal(c.nodes!.find((n) => n.id === 'fc')!.flops, 42);
  assert.ok(!c.nodes!.some((n) => n.id === 'layer1.1.relu'));
  assert.equal(c.nodes![0], cell.nodes![0], 'untouched node objects are reused');
  assert.equal(c.optimized!.kernels, 2);
  assert.deepEqual(c.optimized!.nodes!.map((n) => n.id), ['x', 'k']);
  assert.equal(next.target, 'cpu');
});

test('applyDelta drops optimized when the header has none', () => {
  const cell = smallCell();
  cell.optimized = { nodes: [{ id: 'x' }] };
  const next = applyDelta({ cells: [cell] }, { base: 1, cells: [{ name: 'Net()', header: { name: 'Net()' } }] });
  assert.equal(next.cells![0].optimized, undefined);
  assert.equal(next.cells![0].nodes!.length, cell.nodes!.length);
});
