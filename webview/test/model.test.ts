import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ROOT_ID, buildViewGraph, countVisible, defaultExpansion, scopeGroupPath, visibleRep,
} from '../src/model';
import { aggregateEdges, planLayouts, LayoutCache } from '../src/layout';
import { frameSize } from '../src/layout-types';
import { flatCell, smallCell } from './fixtures';

test('scopeGroupPath puts leaf-Cell calls in their parent Cell', () => {
  assert.equal(scopeGroupPath('layer1.0.conv1', 'layer1.0.conv1'), 'layer1.0');
  assert.equal(scopeGroupPath('layer1.0.relu#2', 'layer1.0.relu'), 'layer1.0');
  assert.equal(scopeGroupPath('layer1.0/Add', 'layer1.0'), 'layer1.0');
  assert.equal(scopeGroupPath('fc', 'fc'), '');
  assert.equal(scopeGroupPath('x', ''), '');
});

test('hierarchy: scope groups, single-child groups dissolved', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  assert.ok(g.groups.has('g:layer1'));
  assert.ok(g.groups.has('g:layer1.0'));
  // layer1.1 holds two nodes (conv1, relu): kept. 
  assert.ok(g.groups.has('g:layer1.1'));
  assert.deepEqual(g.root.children, ['x', 'g:layer1', 'fc']);
  assert.deepEqual(g.groups.get('g:layer1')!.children, ['g:layer1.0', 'g:layer1.1']);
  assert.equal(g.groups.get('g:layer1')!.leafCount, 5);
  assert.equal(g.parentOf.get('layer1.0/Add'), 'g:layer1.0');
});

test('hierarchy: a single-child group is dissolved into its parent', () => {
  const cell = smallCell();
  cell.nodes = cell.nodes!.filter((n) => n.id !== 'layer1.1.relu');
  cell.nodes.find((n) => n.id === 'fc')!.inputs = [{ node: 'layer1.1.conv1', output: 0 }];
  const g = buildViewGraph(cell, 'semantic');
  assert.ok(!g.groups.has('g:layer1.1'));
  assert.deepEqual(g.groups.get('g:layer1')!.children, ['g:layer1.0', 'layer1.1.conv1']);
});

test('auto-grouping splits wide groups into artificial sub-groups', () => {
  const g = buildViewGraph(flatCell(1000), 'semantic', 400);
  assert.equal(g.root.children.length, 3);
  for (const c of g.root.children) {
    const sg = g.groups.get(c)!;
    assert.ok(sg.artificial);
    assert.ok(sg.children.length <= 400);
  }
  assert.equal(g.root.leafCount, 1001);
  const deep = buildViewGraph(flatCell(200000), 'semantic', 400);
  assert.ok(deep.root.children.length <= 400, 'nested artificial levels');
  assert.equal(deep.root.leafCount, 200001);
});

test('visibility: collapsed groups count once, reps climb to the outermost collapsed group', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  const none = new Set<string>();
  assert.deepEqual(countVisible(g, none), { nodes: 2, groups: 1 });
  assert.equal(visibleRep(g, 'layer1.0.relu', none), 'g:layer1');
  const some = new Set(['g:layer1']);
  assert.deepEqual(countVisible(g, some), { nodes: 2, groups: 2 });
  assert.equal(visibleRep(g, 'layer1.0.relu', some), 'g:layer1.0');
  const all = defaultExpansion(g, 1000);
  assert.deepEqual(countVisible(g, all), { nodes: 7, groups: 0 });
});

test('default expansion respects the budget', () => {
  const g = buildViewGraph(flatCell(1000), 'semantic', 400);
  const e = defaultExpansion(g, 320);
  assert.deepEqual([...e], [g.root.children[2]], 'only the 201-node chunk fits');
  assert.equal(defaultExpansion(g, 100).size, 0);
  const e2 = defaultExpansion(g, 450);
  assert.equal(e2.size, 1);
});

test('edges are lifted to their lowest common group', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  const agg = aggregateEdges(g);
  const root = agg.get(ROOT_ID)!;
  const ids = [...root.keys()].sort();
  assert.deepEqual(ids, ['g:layer1\u2192fc', 'x\u2192g:layer1']);
  assert.equal(root.get('x\u2192g:layer1')!.real.length, 2, 'x feeds conv1 and the residual Add');
  assert.ok(agg.get('g:layer1')!.has('g:layer1.0\u2192g:layer1.1'));
});

test('layout plan: waves from the innermost groups out, keys stable', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  const agg = aggregateEdges(g);
  const cache = new LayoutCache();
  const expanded = new Set(['g:layer1', 'g:layer1.0']);
  // A parent's problem needs its expanded children's sizes: the innermost group first.
  const plan = planLayouts(g, expanded, agg, cache);
  assert.deepEqual(plan.jobs.map((j) => j.group), ['g:layer1.0']);
  assert.deepEqual([...plan.keys.keys()], ['g:layer1.0'], 'only known problems are named');
  const j0 = plan.jobs[0];
  assert.deepEqual(j0.children.map((c) => c.id), ['c0', 'c1', 'c2'], 'canonical ids');
  assert.deepEqual(plan.keys.get('g:layer1.0')!.children, ['layer1.0.conv1', 'layer1.0.relu', 'layer1.0/Add']);
  assert.ok(!/layer1/.test(j0.key), `no node id in the key: ${j0.key}`);
  cache.put({ group: j0.group, key: j0.key, width: 100, height: 200, pos: {}, edges: {}, ms: 0 });
  const plan2 = planLayouts(g, expanded, agg, cache);
  assert.deepEqual(plan2.jobs.map((j) => j.group), ['g:layer1']);
  const framed = plan2.jobs[0].children[plan2.keys.get('g:layer1')!.children.indexOf('g:layer1.0')];
  assert.deepEqual([framed.w, framed.h], frameSize({ width: 100, height: 200 }), 'the child group by its frame size');
  assert.equal(plan2.keys.get('g:layer1.0')!.key, j0.key);
});

test('optimized layer: groups from origins, TransData follows its producer', () => {
  const cell = smallCell();
  cell.optimized = {
    nodes: [
      { id: 'x', kind: 'input', op: 'Input', origins: ['x'] },
      { id: 'TransData/x', op: 'TransData', category: 'data-move', inputs: [{ node: 'x' }], origins: [] },
      { id: 'conv/layer1.0.conv1', op: 'FusedConv2D', pattern: 'conv', origins: ['layer1.0.conv1', 'layer1.0.relu'], inputs: [{ node: 'TransData/x' }] },
      { id: 'layer1.0/Add', op: 'Add', origins: ['layer1.0/Add'], inputs: [{ node: 'conv/layer1.0.conv1' }, { node: 'x' }] },
    ],
  };
  const g = buildViewGraph(cell, 'optimized');
  const fused = g.byId.get('conv/layer1.0.conv1')!;
  assert.ok(fused.fused);
  assert.equal(fused.group, 'layer1.0');
  assert.equal(g.byId.get('TransData/x')!.group, '');
  assert.ok(g.byId.get('TransData/x')!.dataMove);
  assert.deepEqual(g.semanticToOptimized.get('layer1.0.relu'), ['conv/layer1.0.conv1']);
});
