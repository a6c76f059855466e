import { test } from 'node:test';
import assert from 'node:assert/strict';
import ELK from 'elkjs/lib/elk.bundled.js';
import { buildViewGraph, defaultExpansion } from '../src/model';
import { LayoutCache, LayoutEngine, aggregateEdges, composeScene, computePorts, planLayouts } from '../src/layout';
import type { LayoutRequest, LayoutResponse } from '../src/layout-types';
import { smallCell, tangledCell } from './fixtures';

(globalThis as { self?: unknown }).self = globalThis;
const { chainLayout, options } = await import('../src/layout-worker');

test('the layout jobs carry the direction; left-right layouts are cached apart', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  const ex = defaultExpansion(g);
  const agg = aggregateEdges(g);
  const ports = computePorts(g, agg);
  const cache = new LayoutCache();
  const down = planLayouts(g, ex, agg, cache, ports);
  const right = planLayouts(g, ex, agg, cache, ports, 'RIGHT');
  assert.ok(down.jobs.length > 0);
  assert.ok(down.jobs.every((j) => j.dir === undefined));
  assert.ok(right.jobs.every((j) => j.dir === 'RIGHT'));
  for (const [id, k] of down.keys) assert.notEqual(right.keys.get(id), k, id);
  // Port proxies lie across the axis.
  const port = right.jobs.flatMap((j) => j.children).find((c) => c.port);
  assert.ok(port && port.w < port.h, JSON.stringify(port));
});

test('elkjs gets the direction: left-right puts successors to the right', async () => {
  assert.equal(options(10)['elk.direction'], 'DOWN');
  assert.equal(options(10, 'RIGHT')['elk.direction'], 'RIGHT');
  const elk = new ELK();
  const run = async (dir: 'DOWN' | 'RIGHT') => elk.layout({
    id: 'r', layoutOptions: options(3, dir),
    children: [{ id: 'a', width: 100, height: 40 }, { id: 'b', width: 100, height: 40 }, { id: 'c', width: 100, height: 40 }],
    edges: [{ id: 'e1', sources: ['a'], targets: ['b'] }, { id: 'e2', sources: ['a'], targets: ['c'] }],
  });
  const pos = (r: Awaited<ReturnType<typeof run>>, id: string) => r.children!.find((c) => c.id === id)!;
  const d = await run('DOWN');
  assert.ok(pos(d, 'b').y! > pos(d, 'a').y! + 40);
  const r = await run('RIGHT');
  assert.ok(pos(r, 'b').x! > pos(r, 'a').x! + 100, JSON.stringify(r.children));
  assert.ok(pos(r, 'c').x! > pos(r, 'a').x! + 100);
});

test('a chain laid out left to right: stacked along x, edges horizontal', () => {
  const l = chainLayout({
    group: 'g:a', key: 'k', dir: 'RIGHT',
    children: [{ id: 'a', w: 100, h: 40 }, { id: 'b', w: 140, h: 50 }, { id: 'pin', w: 2, h: 8, port: 'in' }],
    edges: [{ id: 'e0', s: 'pin', t: 'a' }, { id: 'e1', s: 'a', t: 'b' }],
  })!;
  assert.ok(l);
  const [ax, ay, aw, ah] = l.pos.a;
  const [bx, by, bw, bh] = l.pos.b;
  assert.deepEqual([aw, ah, bw, bh], [100, 40, 140, 50]);
  assert.ok(bx > ax + aw, 'b right of a');
  assert.equal(ay + ah / 2, by + bh / 2, 'on one line');
  assert.equal(l.height, 50);
  assert.equal(l.width, bx + bw);
  const e = l.edges.e1;
  assert.deepEqual(e, [ax + aw, ay + ah / 2, bx, by + bh / 2]);
  assert.ok(l.pos.pin[0] < ax);
});

/** A worker running the chain layout (or a column) in-process; records the jobs' direction. */
class FakeWorker {
  onmessage: ((ev: MessageEvent<LayoutResponse>) => void) | null = null;
  static dirs: string[] = [];
  postMessage(req: LayoutRequest): void {
    const layouts = req.jobs.map((j) => {
      FakeWorker.dirs.push(j.dir ?? 'DOWN');
      const c = chainLayout(j);
      if (c) return c;
      const pos: Record<string, [number, number, number, number]> = {};
      let at = 0;
      for (const ch of j.children) {
        pos[ch.id] = j.dir === 'RIGHT' ? [at, 0, ch.w, ch.h] : [0, at, ch.w, ch.h];
        at += (j.dir === 'RIGHT' ? ch.w : ch.h) + 30;
      }
      const edges: Record<string, number[]> = {};
      for (const e of j.edges) { const a = pos[e.s], b = pos[e.t]; edges[e.id] = [a[0], a[1], b[0], b[1]]; }
      const w = Math.max(...Object.values(pos).map((p) => p[0] + p[2])), h = Math.max(...Object.values(pos).map((p) => p[1] + p[3]));
      return { group: j.group, key: j.key, width: w, height: h, pos, edges, ms: 0 };
    });
    setTimeout(() => this.onmessage?.({ data: { id: req.id, layouts, ms: 0 } } as MessageEvent<LayoutResponse>), 0);
  }
}

test('the layout engine passes the view\'s direction to the workers; the scene follows', async () => {
  // (A group with no spine, so that a job reaches the worker; the others are laid out at once.)
  const g = buildViewGraph(tangledCell(), 'semantic');
  const ex = defaultExpansion(g);
  const agg = aggregateEdges(g);
  const ports = computePorts(g, agg);
  const engine = new LayoutEngine(() => new FakeWorker() as unknown as Worker, 1);
  FakeWorker.dirs = [];
  const keys = await engine.ensure(g, ex, agg, ports, 'RIGHT');
  assert.ok(FakeWorker.dirs.length > 0 && FakeWorker.dirs.every((d) => d === 'RIGHT'), FakeWorker.dirs.join());
  const s = composeScene(g, ex, keys, engine.cache, agg, 'RIGHT');
  const x = s.byId.get('x')!, t = s.byId.get('g:t')!, out = s.byId.get('out')!;
  assert.ok(t.x > x.x + x.w && out.x > t.x + t.w, 'successors to the right');
  assert.ok(s.width > s.height, `${s.width}×${s.height}`);
  FakeWorker.dirs = [];
  const kd = await engine.ensure(g, ex, agg, ports);
  assert.ok(FakeWorker.dirs.length > 0 && FakeWorker.dirs.every((d) => d === 'DOWN'));
  const sd = composeScene(g, ex, kd, engine.cache, agg);
  assert.ok(sd.byId.get('g:t')!.y > sd.byId.get('x')!.y + 40, 'top-down: below');
  assert.ok(sd.byId.get('out')!.y > sd.byId.get('t.f')!.y + 40, 'top-down: below');
  // smallCell is all chains and spines: laid out without a worker, in both directions.
  const g2 = buildViewGraph(smallCell(), 'semantic');
  const a2 = aggregateEdges(g2);
  FakeWorker.dirs = [];
  const k2 = await engine.ensure(g2, defaultExpansion(g2), a2, computePorts(g2, a2), 'RIGHT');
  assert.deepEqual(FakeWorker.dirs, []);
  const s2 = composeScene(g2, defaultExpansion(g2), k2, engine.cache, a2, 'RIGHT');
  assert.ok(s2.byId.get('layer1.0.conv1')!.x > s2.byId.get('x')!.x + 40, 'the successor is to the right');
});
