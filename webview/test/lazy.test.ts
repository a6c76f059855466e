import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LAZY_PREFIX, buildViewGraph, countVisible, defaultExpansion, type LazyInput } from '../src/model';
import { aggregateEdges } from '../src/layout';
import type { Cell, CellSkeleton, Node, ScopeNodes } from '../src/protocol';

// x ("") -> a1 -> a2 (a) -> a.b/B1 (a.b) -> c1 (c), and a2 -> c1.
const node = (id: string, scope: string, inputs: string[]): Node =>
  ({ id, kind: inputs.length ? 'op' : 'input', op: inputs.length ? 'Add' : '', scope, inputs: inputs.map((n) => ({ node: n })) });
const x = node('x', '', []);
const a1 = node('a/A1', 'a', ['x']);
const a2 = node('a/A2', 'a', ['a/A1']);
const c1 = node('c/C1', 'c', ['a.b/B1', 'a/A2']);

const skeleton: CellSkeleton = {
  name: 'Net', nodes: 5,
  scopes: [
    { scope: '', nodes: 1, totalNodes: 5 },
    { scope: 'a', nodes: 2, totalNodes: 3, first: 1 },
    { scope: 'a.b', nodes: 1, totalNodes: 1, first: 3 },
    { scope: 'c', nodes: 1, totalNodes: 1, first: 4 },
  ],
  edges: [{ from: '', to: 'a', count: 1 }, { from: 'a', to: 'a.b', count: 1 }, { from: 'a', to: 'c', count: 1 }, { from: 'a.b', to: 'c', count: 1 }],
  root: { scope: '', nodes: [x], index: [0], boundary: [{ src: 'x', tgt: 'a/A1', srcScope: '', tgtScope: 'a' }] },
};
const chunkA: ScopeNodes = {
  scope: 'a', nodes: [a1, a2], index: [1, 2],
  boundary: [
    { src: 'x', tgt: 'a/A1', srcScope: '', tgtScope: 'a' },
    { src: 'a/A2', tgt: 'a.b/B1', srcScope: 'a', tgtScope: 'a.b' },
    { src: 'a/A2', tgt: 'c/C1', output: 0, srcScope: 'a', tgtScope: 'c' },
  ],
};

function cellOf(nodes: Node[]): Cell {
  return { name: 'Net', nodes };
}

const edgeSet = (g: ReturnType<typeof buildViewGraph>): string[] => g.edges.map((e) => `${e.src}>${e.tgt}`).sort();

test('lazy: the skeleton draws the root nodes and one weighted placeholder group per scope', () => {
  const lz: LazyInput = { skeleton, chunks: new Map([['', skeleton.root!]]), pending: new Set() };
  const g = buildViewGraph(cellOf([x]), 'semantic', undefined, lz);
  assert.deepEqual(g.nodes.map((n) => n.id), ['x', LAZY_PREFIX + 'a', LAZY_PREFIX + 'c']);
  assert.equal(g.groups.get('g:a')?.leafCount, 3);  // the placeholder's group is kept, with its count
  assert.equal(g.groups.get('g:c')?.leafCount, 1);
  assert.equal(g.root.leafCount, 5);
  assert.deepEqual(edgeSet(g), ['lazy:a>lazy:c', 'x>lazy:a']);
  // Collapsed, the groups are drawn with their edges.
  assert.deepEqual(countVisible(g, new Set()), { nodes: 1, groups: 2 });
  const agg = aggregateEdges(g);
  assert.ok(agg.size > 0);
  // The default expansion opens groups not loaded by what they will draw (their own nodes and
  // sub-scopes), which asks for their nodes; the budget counts them.
  assert.deepEqual([...defaultExpansion(g)].sort(), ['g:a', 'g:c']);
  assert.deepEqual([...defaultExpansion(g, 4)], ['g:c']);  // 3 + (3 - 1) > 4
});

test('lazy: a loaded scope brings its nodes; edges to scopes not loaded go to their placeholders', () => {
  const lz: LazyInput = { skeleton, chunks: new Map([['', skeleton.root!], ['a', chunkA]]), pending: new Set(['c']) };
  const g = buildViewGraph(cellOf([x, a1, a2]), 'semantic', undefined, lz);
  assert.deepEqual(g.nodes.map((n) => n.id), ['x', 'a/A1', 'a/A2', LAZY_PREFIX + 'a.b', LAZY_PREFIX + 'c']);
  assert.equal(g.byId.get(LAZY_PREFIX + 'c')?.sub, 'loading…');
  assert.equal(g.byId.get('a/A2')?.order, 2);
  assert.deepEqual(edgeSet(g), ['a/A1>a/A2', 'a/A2>lazy:a.b', 'a/A2>lazy:c', 'lazy:a.b>lazy:c', 'x>a/A1']);
  assert.equal(g.groups.get('g:a')?.leafCount, 3);
  assert.equal(g.parentOf.get(LAZY_PREFIX + 'a.b'), 'g:a.b');
  assert.equal(g.parentOf.get('g:a.b'), 'g:a');
});

test('lazy: nodes whose producer is not loaded take their edge from its placeholder', () => {
  const chunkC: ScopeNodes = {
    scope: 'c', nodes: [c1], index: [4],
    boundary: [
      { src: 'a.b/B1', tgt: 'c/C1', srcScope: 'a.b', tgtScope: 'c' },
      { src: 'a/A2', tgt: 'c/C1', srcScope: 'a', tgtScope: 'c' },
    ],
  };
  const lz: LazyInput = { skeleton, chunks: new Map([['', skeleton.root!], ['c', chunkC]]), pending: new Set() };
  const g = buildViewGraph(cellOf([x, c1]), 'semantic', undefined, lz);
  assert.deepEqual(edgeSet(g), ['lazy:a>c/C1', 'lazy:a>c/C1', 'x>lazy:a']);
  // The node keeps its own inputs (the panel shows the real ids).
  assert.equal(c1.inputs?.[0]?.node, 'a.b/B1');
});
