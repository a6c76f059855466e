// The search box's query language (search.ts): the parser, each filter, combinations, negation,
// and what it does with what it cannot read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildViewGraph } from '../src/model';
import { attrEquals, groupsHolding, parseQuery, search, searchContext, shapeQuery, tokenize } from '../src/search';
import type { Cell } from '../src/protocol';
import { node, smallCell } from './fixtures';

/** smallCell with attributes, shapes, dtypes, Cell classes and an optimization + hardware layer. */
function richCell(): Cell {
  const c = smallCell();
  const byId = new Map(c.nodes!.map((n) => [n.id, n] as const));
  byId.get('layer1.0.conv1')!.attrs = { kernel_size: [3, 3], stride: 1, pad_mode: 'same', has_bias: false, out_channels: 64 };
  byId.get('layer1.0.conv1')!.outputs = [{ shape: [1, 64, 56, 56], dtype: 'float32' }];
  byId.get('layer1.0.conv1')!.api = 'nn.Conv2d';
  byId.get('layer1.1.conv1')!.attrs = { kernel_size: 1, stride: 2, pad_mode: 'valid', has_bias: true, out_channels: 256 };
  byId.get('layer1.1.conv1')!.outputs = [{ shape: [1, 256, 28, 28], dtype: 'float16' }];
  byId.get('layer1.1.conv1')!.api = 'nn.Conv2d';
  byId.get('fc')!.outputs = [{ shape: ['N', 10], dtype: 'float32' }];
  c.scopeClasses = { '': 'Net', layer1: 'SequentialCell', 'layer1.0': 'Bottleneck', 'layer1.1': 'Bottleneck' };
  c.optimized = {
    target: 'ascend910',
    nodes: [
      { id: 'x', kind: 'input', op: 'Input', origins: ['x'], outputs: [{ shape: [1, 4], dtype: 'float32' }] },
      { id: 'conv/layer1.0.conv1', op: 'FusedConv2D', origins: ['layer1.0.conv1', 'layer1.0.relu'], inputs: [{ node: 'x' }],
        outputs: [{ shape: [1, 64, 56, 56], dtype: 'float16', format: 'NC1HWC0' }],
        hardware: [{ unit: 'cube', bound: 'compute', cycles: 900, timeUs: 3 }] },
      { id: 'layer1.0/Add', op: 'Add', origins: ['layer1.0/Add'], inputs: [{ node: 'conv/layer1.0.conv1' }, { node: 'x' }],
        outputs: [{ shape: [1, 4], dtype: 'float16' }], hardware: [{ unit: 'vector', bound: 'memory', cycles: 300, timeUs: 1 }] },
      { id: 'conv/layer1.1.conv1', op: 'FusedConv2D', origins: ['layer1.1.conv1', 'layer1.1.relu'], inputs: [{ node: 'layer1.0/Add' }],
        outputs: [{ shape: [1, 256, 28, 28], dtype: 'float16' }], hardware: [{ unit: 'cube', bound: 'dispatch', cycles: 200, timeUs: 2 }] },
      { id: 'fc', op: 'MatMul', origins: ['fc'], inputs: [{ node: 'conv/layer1.1.conv1' }], outputs: [{ shape: ['N', 10], dtype: 'float16' }],
        hardware: [{ unit: 'cube', bound: 'memory', cycles: 100, timeUs: 1 }] },
    ],
  };
  c.nodes!.push(node('layer1.1/Mul', 'layer1.1', ['layer1.1.relu'], 'Mul', { attrs: { scale: 0.5 } }));
  return c;
}

const ids = (c: Cell, q: string, layer: 'semantic' | 'optimized' | 'hardware' = 'semantic'): string[] =>
  search(buildViewGraph(c, layer), q, searchContext(c)).map((h) => h.id);

test('tokenize: whitespace outside quotes, quotes dropped', () => {
  assert.deepEqual(tokenize('  op:Conv2D   layer1 '), ['op:Conv2D', 'layer1']);
  assert.deepEqual(tokenize('attr:"pad mode=same" "a b"'), ['attr:pad mode=same', 'a b']);
  assert.deepEqual(tokenize('""'), ['']);
});

test('parseQuery: filters, aliases, text, negation, errors and notes', () => {
  const q = parseQuery('op:Conv2D type:Bottleneck attr:kernel_size=3 shape:56x56 dtype:float16 bound:memory layer1 -op:ReLU');
  assert.deepEqual(q.terms.map((t) => (t.kind === 'text' ? `text:${t.text}` : `${t.neg ? '-' : ''}${t.key}:${t.raw}`)),
    ['op:Conv2D', 'cell:Bottleneck', 'attr:kernel_size=3', 'shape:56x56', 'dtype:float16', 'bound:memory', 'text:layer1', '-op:ReLU']);
  const attr = parseQuery('attr:stride>=2').terms[0];
  assert.ok(attr.kind === 'filter' && attr.cmp === '>=' && attr.value === '2');
  assert.deepEqual(parseQuery('op:/(/').errors, ['op:/(/: bad regular expression']);
  assert.deepEqual(parseQuery('attr:=3').errors, ['attr:=3: no attribute name']);
  assert.deepEqual(parseQuery('attr:stride>big').errors, ['attr:stride>big: > needs a number']);
  // Half-typed filters are ignored, not errors.
  assert.deepEqual(parseQuery('op:').terms, []);
  assert.deepEqual(parseQuery('attr:stride=').terms, []);
  assert.deepEqual(parseQuery('op:').errors, []);
  // An unknown key is text (ids contain ':'), with a note for word keys only.
  assert.deepEqual(parseQuery('ops:Conv2D').notes, ['ops: is not a filter, searched as text']);
  assert.deepEqual(parseQuery('x:0').notes, []);
  assert.equal(parseQuery('x:0').terms[0].kind, 'text');
});

test('op: is the whole operator name, case-insensitive; * and /regex/ widen it', () => {
  const c = richCell();
  assert.deepEqual(ids(c, 'op:Conv2D'), ['layer1.0.conv1', 'layer1.1.conv1']);
  assert.deepEqual(ids(c, 'op:conv2d'), ['layer1.0.conv1', 'layer1.1.conv1']);
  assert.deepEqual(ids(c, 'op:Conv'), [], 'not a substring');
  assert.deepEqual(ids(c, 'op:Fused*', 'optimized'), ['conv/layer1.0.conv1', 'conv/layer1.1.conv1']);
  assert.deepEqual(ids(c, 'op:/^(add|mul)$/'), ['layer1.0/Add', 'layer1.1/Mul']);
  // A kernel matches the operators it was made from: the ReLUs fused into the convs find them.
  assert.deepEqual(ids(c, 'op:Conv2D', 'hardware'), ['conv/layer1.0.conv1', 'conv/layer1.1.conv1']);
  assert.deepEqual(ids(c, 'op:ReLU', 'optimized'), ['conv/layer1.0.conv1', 'conv/layer1.1.conv1']);
  assert.deepEqual(ids(c, 'op:MatMul', 'optimized'), ['fc']);
});

test('type: / cell: match an enclosing Cell instance by class or path', () => {
  const c = richCell();
  assert.deepEqual(ids(c, 'type:Bottleneck op:ReLU'), ['layer1.0.relu', 'layer1.1.relu']);
  assert.deepEqual(ids(c, 'cell:layer1.1'), ['layer1.1.conv1', 'layer1.1.relu', 'layer1.1/Mul']);
  assert.deepEqual(ids(c, 'cell:SequentialCell').length, 6, 'every node under layer1');
  // A leaf-Cell call's class is its API ("nn.Conv2d"), also matched without the module.
  assert.deepEqual(ids(c, 'type:Conv2d'), ['layer1.0.conv1', 'layer1.1.conv1']);
  assert.deepEqual(ids(c, 'type:nn.Conv2d'), ['layer1.0.conv1', 'layer1.1.conv1']);
});

test('attr: by name, by value (a scalar also matches a tuple of it), compared as numbers', () => {
  const c = richCell();
  assert.deepEqual(ids(c, 'attr:kernel_size'), ['layer1.0.conv1', 'layer1.1.conv1']);
  assert.deepEqual(ids(c, 'attr:kernel_size=3'), ['layer1.0.conv1']);
  assert.deepEqual(ids(c, 'attr:kernel_size=(3,3)'), ['layer1.0.conv1']);
  assert.deepEqual(ids(c, 'attr:kernel_size=1'), ['layer1.1.conv1']);
  assert.deepEqual(ids(c, 'attr:kernel_size!=3'), ['layer1.1.conv1']);
  assert.deepEqual(ids(c, 'attr:stride>1'), ['layer1.1.conv1']);
  assert.deepEqual(ids(c, 'attr:out_channels>=64'), ['layer1.0.conv1', 'layer1.1.conv1']);
  assert.deepEqual(ids(c, 'attr:out_channels<64'), []);
  assert.deepEqual(ids(c, 'attr:pad_mode=SAME'), ['layer1.0.conv1']);
  assert.deepEqual(ids(c, 'attr:has_bias=true'), ['layer1.1.conv1']);
  assert.deepEqual(ids(c, 'attr:scale=0.5'), ['layer1.1/Mul']);
  assert.deepEqual(ids(c, 'attr:*_size=3'), ['layer1.0.conv1'], 'wildcard names');
  // The optimized layer: a fused kernel has no attributes of its own, its main origin's count.
  assert.deepEqual(ids(c, 'attr:kernel_size=3', 'optimized'), ['conv/layer1.0.conv1']);
  assert.equal(attrEquals([3, 3], '3'), true);
  assert.equal(attrEquals([3, 1], '3'), false);
  assert.equal(attrEquals(null, 'None'), true);
});

test('shape: part of an output shape, in any separator; [..] the whole shape', () => {
  const c = richCell();
  assert.deepEqual(shapeQuery('56x56'), { key: '56,56', whole: false });
  assert.deepEqual(shapeQuery('1×64'), { key: '1,64', whole: false });
  assert.deepEqual(shapeQuery('[1, 64, 56, 56]'), { key: '1,64,56,56', whole: true });
  assert.deepEqual(shapeQuery('NxC'), { key: 'n,c', whole: false });
  assert.deepEqual(ids(c, 'shape:56x56'), ['layer1.0.conv1']);
  assert.deepEqual(ids(c, 'shape:256,28'), ['layer1.1.conv1']);
  assert.deepEqual(ids(c, 'shape:[1,64,56,56]'), ['layer1.0.conv1']);
  assert.deepEqual(ids(c, 'shape:[64,56,56]'), [], 'whole, not a part');
  assert.deepEqual(ids(c, 'shape:N,10'), ['fc'], 'symbolic dims');
});

test('dtype:, bound: and unit: (the hardware layer, also from a semantic node through its kernels)', () => {
  const c = richCell();
  assert.deepEqual(ids(c, 'dtype:float16'), ['layer1.1.conv1']);
  assert.deepEqual(ids(c, 'dtype:float*').length, c.nodes!.length);
  assert.deepEqual(ids(c, 'bound:memory', 'hardware'), ['layer1.0/Add', 'fc']);
  assert.deepEqual(ids(c, 'bound:memory'), ['layer1.0/Add', 'fc'], 'semantic nodes whose kernel is memory-bound');
  // relu was fused into the conv kernel: its kernel is the conv's.
  assert.deepEqual(ids(c, 'bound:compute'), ['layer1.0.conv1', 'layer1.0.relu']);
  assert.deepEqual(ids(c, 'unit:vector', 'hardware'), ['layer1.0/Add']);
  assert.deepEqual(ids(c, 'bound:memory', 'semantic').includes('x'), false);
});

test('filters combine with text and each other (all must hold); "-" excludes', () => {
  const c = richCell();
  assert.deepEqual(ids(c, 'op:Conv2D layer1.1'), ['layer1.1.conv1']);
  assert.deepEqual(ids(c, 'op:Conv2D attr:stride>1 dtype:float16'), ['layer1.1.conv1']);
  assert.deepEqual(ids(c, 'op:Conv2D attr:stride>1 dtype:float32'), []);
  assert.deepEqual(ids(c, 'cell:layer1.0 -op:ReLU'), ['layer1.0.conv1', 'layer1.0/Add']);
  assert.deepEqual(ids(c, 'layer1 -relu').includes('layer1.0.relu'), false);
  // Several words: each must match a field (not the phrase as one string).
  assert.deepEqual(ids(c, 'layer1.1 conv'), ['layer1.1.conv1']);
  // A query of only unreadable terms matches nothing (it does not match everything).
  assert.deepEqual(ids(c, 'op:/(/'), []);
});

test('text scores: exact id first, then by field, then execution order; lazy placeholders never match', () => {
  const c = richCell();
  const g = buildViewGraph(c, 'semantic');
  const hits = search(g, 'fc', searchContext(c));
  assert.equal(hits[0].id, 'fc');
  assert.equal(hits[0].field, 'id');
  const lazy = buildViewGraph(c, 'semantic');
  lazy.nodes.push({ ...lazy.nodes[1], id: 'lazy:layer9', kind: 'lazy', op: 'Conv2D' });
  assert.equal(search(lazy, 'op:Conv2D', searchContext(c)).some((x) => x.id === 'lazy:layer9'), false);
});

test('groupsHolding: every group above the matches, the root left out', () => {
  const c = richCell();
  const g = buildViewGraph(c, 'semantic');
  const gs = groupsHolding(g, ['layer1.1.conv1']);
  assert.ok(gs.size > 0);
  for (const id of gs) assert.ok(id.startsWith('g:') && id !== g.root.id, id);
  assert.ok([...gs].some((x) => x === 'g:layer1.1' || x === 'g:layer1'), [...gs].join());
  assert.equal(groupsHolding(g, ['x']).size, 0, 'a root-level node is in no group');
});
