import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LayoutJob } from '../src/layout-types';

// The worker module starts elkjs and listens for messages; only its pure chain layout is tested.
(globalThis as { self?: unknown }).self = globalThis;
const { chainLayout } = await import('../src/layout-worker');

const job = (edges: [string, string][], ports = true): LayoutJob => ({
  group: 'g:a', key: 'k',
  children: [
    { id: 'a', w: 100, h: 40 }, { id: 'b', w: 140, h: 40 }, { id: 'c', w: 100, h: 50 },
    ...(ports ? [{ id: 'pin', w: 8, h: 2, port: 'in' as const }, { id: 'pout', w: 8, h: 2, port: 'out' as const }] : []),
  ],
  edges: edges.map(([s, t], i) => ({ id: 'e' + i, s, t })),
});

test('chains are stacked without elkjs', () => {
  const l = chainLayout(job([['pin', 'a'], ['a', 'b'], ['b', 'c'], ['c', 'pout']]));
  assert.ok(l);
  assert.equal(l.width, 140);
  assert.deepEqual(l.pos.a, [20, 36, 100, 40]);
  assert.deepEqual(l.pos.b, [0, 110, 140, 40]);
  assert.deepEqual(l.edges.e1, [70, 76, 70, 110]);
  assert.ok(l.pos.pout[1] > l.pos.c[1] + 50);
});

test('anything but a chain goes to elkjs', () => {
  assert.equal(chainLayout(job([['a', 'b'], ['a', 'c']], false)), null);
  assert.equal(chainLayout(job([['a', 'b']], false)), null, 'c is disconnected');
  assert.equal(chainLayout(job([['a', 'b'], ['b', 'c'], ['pin', 'b']])), null, 'a port into the middle');
});
