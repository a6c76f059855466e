// The layout engine: layouts shared by groups of one structure, waves from the innermost groups
// out, chains on the main thread, no layout done twice, warm workers first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildViewGraph, defaultExpansion } from '../src/model';
import { LayoutCache, LayoutEngine, aggregateEdges, composeScene, computePorts, planLayouts } from '../src/layout';
import type { GroupLayout, LayoutJob, LayoutRequest, LayoutResponse } from '../src/layout-types';
import { blocksCell, tangledCell } from './fixtures';

/** A column layout (what a worker would answer for anything but a chain). */
function column(j: LayoutJob): GroupLayout {
  const pos: GroupLayout['pos'] = {};
  let y = 0;
  j.children.forEach((c, i) => { pos[c.id] = [i % 2 ? 40 : 0, y, c.w, c.h]; y += c.h + 30; });
  const edges: GroupLayout['edges'] = {};
  for (const e of j.edges) { const a = pos[e.s], b = pos[e.t]; edges[e.id] = [a[0], a[1] + a[3], b[0], b[1]]; }
  const width = Math.max(...Object.values(pos).map((p) => p[0] + p[2]));
  return { group: j.group, key: j.key, width, height: y, pos, edges, ms: 0 };
}

/** An in-process stand-in for the layout worker; records what it was sent, by worker. */
class FakeWorker {
  static made = 0;
  static jobs: { worker: number; job: LayoutJob }[] = [];
  readonly n = FakeWorker.made++;
  onmessage: ((ev: MessageEvent<LayoutResponse>) => void) | null = null;
  postMessage(req: LayoutRequest): void {
    for (const job of req.jobs) FakeWorker.jobs.push({ worker: this.n, job });
    const layouts = req.jobs.map(column);
    setTimeout(() => this.onmessage?.({ data: { id: req.id, layouts, ms: 0 } } as MessageEvent<LayoutResponse>), 1);
  }
}

const fresh = (size = 1, initial = 1) => {
  FakeWorker.made = 0;
  FakeWorker.jobs = [];
  return new LayoutEngine(() => new FakeWorker() as unknown as Worker, size, initial);
};

test('groups of one structure share one layout, each drawn in its own ids', async () => {
  const g = buildViewGraph(blocksCell(6), 'semantic');
  const ex = defaultExpansion(g);
  const agg = aggregateEdges(g);
  const ports = computePorts(g, agg);
  const blocks = [...g.groups.keys()].filter((id) => /^g:blk\.\d$/.test(id));
  assert.equal(blocks.length, 6);
  assert.ok(blocks.every((b) => ex.has(b)), 'the blocks are drawn expanded');
  const engine = fresh();
  const keys = await engine.ensure(g, ex, agg, ports);
  const blockKeys = new Set(blocks.map((b) => keys.get(b)!.key));
  // blk.0 reads x (no other input), the others an Add: the first block may differ in its ports.
  assert.ok(blockKeys.size <= 2, [...blockKeys].join('\n'));
  const sent = FakeWorker.jobs.map((j) => j.job.group);
  assert.ok(sent.filter((s) => blocks.includes(s)).length <= 2, `block jobs sent: ${sent.join(', ')}`);
  assert.equal(new Set(FakeWorker.jobs.map((j) => j.job.key)).size, FakeWorker.jobs.length, 'no key laid out twice');
  // Every block is drawn, at the same place within its frame as the others of its structure.
  const s = composeScene(g, ex, keys, engine.cache, agg);
  const rel = (b: string, n: string) => {
    const f = s.byId.get(b)!, it = s.byId.get(n)!;
    return [it.x - f.x, it.y - f.y, it.w, it.h];
  };
  for (let i = 2; i < 6; i++) {
    assert.deepEqual(rel(`g:blk.${i}`, `blk.${i}.conv`), rel('g:blk.1', 'blk.1.conv'));
    assert.deepEqual(rel(`g:blk.${i}`, `blk.${i}/Add`), rel('g:blk.1', 'blk.1/Add'));
  }
  assert.equal(s.nodesDrawn, g.nodes.length);
  // The residual edge of each block is routed (from its in-port to its Add).
  assert.ok(s.edges.filter((e) => e.tgt.endsWith('/Add')).length >= 6);
});

test('waves: a group is laid out after its expanded children, each key once, nothing twice', async () => {
  const g = buildViewGraph(blocksCell(4), 'semantic');
  const ex = defaultExpansion(g);
  const agg = aggregateEdges(g);
  const ports = computePorts(g, agg);
  const engine = fresh();
  const keys = await engine.ensure(g, ex, agg, ports);
  const order = FakeWorker.jobs.map((j) => j.job.group);
  // The first wave holds no group containing another expanded group of the plan.
  const first = planLayouts(g, ex, agg, new LayoutCache(), ports).jobs.map((j) => j.group);
  for (const grp of first) {
    const kids = g.groups.get(grp)!.children;
    assert.ok(!kids.some((k) => ex.has(k)), `${grp} waits for its children`);
  }
  // Chains (the root: x, the blocks' parent, fc) never reach a worker.
  const rootJob = FakeWorker.jobs.find((j) => j.job.group === 'g:');
  assert.equal(rootJob, undefined, `sent: ${order.join(', ')}`);
  assert.ok(engine.quickJobs > 0);
  assert.equal(engine.jobsRun, engine.quickJobs + FakeWorker.jobs.length);
  // Everything is cached now: the same graph again sends nothing and gives the same keys.
  const before = FakeWorker.jobs.length;
  const again = await engine.ensure(g, ex, agg, ports);
  assert.equal(FakeWorker.jobs.length, before);
  for (const [id, n] of keys) assert.equal(again.get(id)?.key, n.key, id);
});

test('a warm worker is preferred to one still starting; concurrent layouts share the pool', async () => {
  const engine = fresh(2, 1);
  const g = buildViewGraph(tangledCell(), 'semantic');
  const agg = aggregateEdges(g);
  const ports = computePorts(g, agg);
  const ex = defaultExpansion(g);
  await engine.ensure(g, ex, agg, ports);
  assert.ok(FakeWorker.jobs.length > 0);
  await new Promise((r) => setTimeout(r, 5));  // the pool grows after the first layout
  assert.equal(FakeWorker.made, 2);
  const n = FakeWorker.jobs.length;
  // A new problem (left to right): the warm worker 0 takes it, not the new worker 1.
  await engine.ensure(g, ex, agg, ports, 'RIGHT');
  assert.ok(FakeWorker.jobs.length > n);
  assert.ok(FakeWorker.jobs.slice(n).every((j) => j.worker === 0), JSON.stringify(FakeWorker.jobs.slice(n).map((j) => j.worker)));
  // Two views laying out at once (side by side): both finish, the key laid out once.
  const fresh2 = fresh(2, 2);
  const [ka, kb] = await Promise.all([fresh2.ensure(g, ex, agg, ports), fresh2.ensure(g, ex, agg, ports)]);
  assert.equal(ka.get('g:')?.key, kb.get('g:')?.key);
  const keysSent = FakeWorker.jobs.map((j) => j.job.key);
  assert.ok(keysSent.length > 0);
  assert.equal(new Set(keysSent).size, keysSent.length, 'no key sent twice');
});
