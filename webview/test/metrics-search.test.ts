import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildViewGraph } from '../src/model';
import { computeScale, groupSums, rampColor, opCategory } from '../src/metrics';
import { search } from '../src/search';
import { diffGraphs } from '../src/diff';
import { flopsText, shapeText } from '../src/format';
import { inputSpecs } from '../src/panel';
import { smallCell, node } from './fixtures';

test('metric scale is log-normalised between min and max', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  const s = computeScale(g, 'flops');
  assert.equal(s.min, 10);
  assert.equal(s.max, 5000);
  assert.equal(s.norm(10), 0);
  assert.equal(s.norm(5000), 1);
  const mid = s.norm(Math.sqrt(10 * 5000));
  assert.ok(Math.abs(mid - 0.5) < 1e-9);
  assert.equal(s.norm(0), 0);
  assert.equal(s.values.has('x'), false, 'nodes without the metric are uncoloured');
  const sums = groupSums(g, s);
  assert.equal(sums.get('g:layer1.1'), 5010);
});

test('ramp colours go from dark to light', () => {
  assert.equal(rampColor(0), 'rgb(68,1,84)');
  assert.equal(rampColor(1), 'rgb(253,231,37)');
  assert.equal(rampColor(2), rampColor(1));
});

test('op categories', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  assert.equal(opCategory(g.byId.get('layer1.0.conv1')!), 'compute');
  assert.equal(opCategory(g.byId.get('layer1.0.relu')!), 'act');
  assert.equal(opCategory(g.byId.get('x')!), 'input');
  assert.equal(opCategory(g.byId.get('fc')!), 'compute');
  assert.equal(opCategory(g.byId.get('layer1.0/Add')!), 'elem');
  // The family comes from the server's category, never from the operator's name.
  const unnamed = smallCell();
  unnamed.nodes![1].category = undefined;
  assert.equal(opCategory(buildViewGraph(unnamed, 'semantic').byId.get('layer1.0.conv1')!), 'elem');
});

test('search by name, op and scope, best first', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  assert.deepEqual(search(g, 'conv2d').map((h) => h.id), ['layer1.0.conv1', 'layer1.1.conv1']);
  assert.equal(search(g, 'fc')[0].id, 'fc');
  assert.deepEqual(search(g, 'layer1.1').map((h) => h.id), ['layer1.1.conv1', 'layer1.1.relu']);
  assert.deepEqual(search(g, '/^layer1\\.0\\//').map((h) => h.id), ['layer1.0/Add']);
  assert.deepEqual(search(g, '  '), []);
});

test('diff: added, removed and changed nodes', () => {
  const before = smallCell();
  const after = smallCell();
  after.nodes = after.nodes!.filter((n) => n.id !== 'fc');
  after.nodes.push(node('head', 'head', ['layer1.1.relu'], 'MatMul'));
  const conv = after.nodes.find((n) => n.id === 'layer1.1.conv1')!;
  conv.attrs = { kernel_size: 5 };
  const d = diffGraphs(buildViewGraph(before, 'semantic'), buildViewGraph(after, 'semantic'));
  assert.deepEqual([...d.added], ['head']);
  assert.deepEqual(d.removed, ['fc']);
  assert.deepEqual([...d.changed], ['layer1.1.conv1']);
});

test('diff ignores the order of attribute keys', () => {
  const before = smallCell();
  const after = smallCell();
  before.nodes![1].attrs = { a: 1, b: [1, 2] };
  after.nodes![1].attrs = { b: [1, 2], a: 1 };
  const d = diffGraphs(buildViewGraph(before, 'semantic'), buildViewGraph(after, 'semantic'));
  assert.equal(d.changed.size, 0);
});

test('a symbolic dim that is an expression is one parenthesised factor of the shape', () => {
  assert.equal(shapeText({ shape: ['N', 64, '(H-3)//8+1', 'W'], dtype: 'float32' }), 'N×64×((H-3)//8+1)×W');
  assert.equal(shapeText({ shape: ['N', '(H+1)//4', '2*W', null], dtype: 'float32' }), 'N×((H+1)//4)×(2*W)×?');
  assert.equal(shapeText({ shape: ['(H-2)', 3], dtype: 'float32' }), '(H-2)×3');
});

test('the input box writes the Cell inputs in the CLI syntax', () => {
  const cell = { name: 'Net', inputs: [{ shape: [8, 3, 224, 224], dtype: 'float32' }, { shape: [8, 128], dtype: 'int32' }, { shape: ['N', 3, 'H', null], dtype: 'float32' }] };
  assert.equal(inputSpecs(cell as never), '8,3,224,224; 8,128:int32; N,3,H,?');
});

test('FLOPs that are 0 only because a shape is symbolic show as "?"', () => {
  const sym = { shape: ['N', 64, '(H-3)//2+1', 'W'], dtype: 'float32' };
  const known = { shape: [1, 64, 56, 56], dtype: 'float32' };
  assert.equal(flopsText(0, [sym], 'convolution'), '? (symbolic shape)');
  assert.equal(flopsText(0, [sym], 'shape'), '0', 'a reshape computes nothing');
  assert.equal(flopsText(0, [known], 'convolution'), '0');
  assert.equal(flopsText(2.5e9, [sym], 'convolution'), '2.50G');
  assert.equal(flopsText(0, [sym]), '? (symbolic shape)', 'a Cell: its inputs');
});
