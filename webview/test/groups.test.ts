import { test } from 'node:test';
import assert from 'node:assert/strict';
import { groupHeader, scopeClasses } from '../src/groups';
import { buildViewGraph } from '../src/model';
import { flatCell, node, smallCell } from './fixtures';

test('the document names every Cell instance\'s class (scopeClasses), the root\'s and leaf-Cell calls\' layers', () => {
  const cell = smallCell();
  cell.nodes![1] = { ...cell.nodes![1], api: 'nn.Conv2d' };
  cell.nodes!.push(node('head.fc', 'head.fc', ['fc'], 'MatMul', { api: 'nn.Dense' }), node('head.fc#1', 'head.fc', ['head.fc'], 'BiasAdd', { api: 'nn.Dense' }));
  const m = scopeClasses(cell);
  assert.equal(m.get(''), 'Net');
  assert.equal(m.get('layer1.0.conv1'), 'nn.Conv2d');
  assert.equal(m.get('head.fc'), 'nn.Dense');
  assert.equal(m.has('layer1.0'), false, 'a composite sub-Cell the document does not name');
  assert.equal(m.has('layer1.0.relu'), false, 'no api: not named');
  const named = scopeClasses({ ...cell, scopeClasses: { '': 'Net', layer1: 'SequentialCell', 'layer1.0': 'Bottleneck' } });
  assert.equal(named.get('layer1'), 'SequentialCell');
  assert.equal(named.get('layer1.0'), 'Bottleneck');
  assert.equal(named.get('layer1.0.conv1'), 'nn.Conv2d');
});

test('group headers: the instance path, then the class when known, and the size', () => {
  assert.deepEqual(groupHeader({ id: 'g:layer1.0', label: 'layer1.0', leafCount: 12 }), { path: 'layer1.0', rest: '12 nodes' });
  assert.deepEqual(groupHeader({ id: 'g:x', label: 'x', leafCount: 1, cls: 'Bottleneck' }), { path: 'x', rest: 'Bottleneck  ·  1 node' });
  // The root's artificial parts (a wide root) are the root Cell's instance: its class.
  const cell = { ...flatCell(900), className: 'Flat' };
  const g = buildViewGraph(cell, 'semantic');
  const parts = [...g.groups.values()].filter((x) => x.artificial);
  assert.ok(parts.length >= 2);
  for (const p of parts) assert.equal(p.cls, 'Flat');
  assert.match(groupHeader(parts[0]).rest, /^Flat {2}· {2}\d+ nodes$/);
  // smallCell's groups are composite sub-Cells: no class.
  const s = buildViewGraph(smallCell(), 'semantic');
  assert.equal(s.groups.get('g:layer1.0')?.cls, undefined);
});
