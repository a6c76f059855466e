// The layout worker: lays out one hierarchy level per job with elkjs (layered, top to bottom or
// left to right, as the job says).
import ELK from 'elkjs/lib/elk.bundled.js';
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api';
import { frameSize, type Direction, type GroupLayout, type LayoutJob, type LayoutRequest, type LayoutResponse } from './layout-types';

const elk = new ELK();

export function options(n: number, dir: Direction = 'DOWN'): Record<string, string> {
  const o: Record<string, string> = {
    'elk.algorithm': 'layered',
    'elk.direction': dir,
    'elk.edgeRouting': 'POLYLINE',
    'elk.spacing.nodeNode': '22',
    'elk.layered.spacing.nodeNodeBetweenLayers': String(dir === 'RIGHT' ? GAP_RIGHT : GAP),
    'elk.spacing.edgeNode': '14',
    'elk.spacing.edgeEdge': '8',
    'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
    'elk.layered.nodePlacement.strategy': 'BRANDES_KOEPF',
    'elk.layered.nodePlacement.bk.fixedAlignment': 'BALANCED',
    'elk.padding': '[top=0,left=0,bottom=0,right=0]',
    'elk.randomSeed': '1',
  };
  if (n > 60) o['elk.layered.thoroughness'] = '1';
  if (n > 100) o['elk.layered.crossingMinimization.greedySwitch.type'] = 'OFF';
  return o;
}

const GAP = 34;
/** Left to right, edge labels (shapes, written horizontally) sit between the layers: more room. */
export const GAP_RIGHT = 84;

/**
 * A group whose children form one chain in model order (each feeds the next, ports only at the
 * ends) is stacked directly: long sequential stacks are common and elkjs is slow on them.
 * Left to right: the top-down stack of the transposed boxes, transposed back.
 */
export function chainLayout(job: LayoutJob): GroupLayout | null {
  if ((job.dir ?? 'DOWN') === 'DOWN') return chainDown(job, GAP);
  const t = chainDown({ ...job, dir: 'DOWN', children: job.children.map((c) => ({ ...c, w: c.h, h: c.w })) }, GAP_RIGHT);
  if (!t) return null;
  const pos: GroupLayout['pos'] = {};
  for (const [id, [x, y, w, h]] of Object.entries(t.pos)) pos[id] = [y, x, h, w];
  const edges: GroupLayout['edges'] = {};
  for (const [id, pts] of Object.entries(t.edges)) {
    const q = new Array<number>(pts.length);
    for (let i = 0; i < pts.length; i += 2) { q[i] = pts[i + 1]; q[i + 1] = pts[i]; }
    edges[id] = q;
  }
  return { ...t, width: t.height, height: t.width, pos, edges };
}

function chainDown(job: LayoutJob, gap: number): GroupLayout | null {
  const kids = job.children.filter((c) => !c.port);
  if (kids.length < 2) return null;
  const index = new Map(kids.map((c, i) => [c.id, i] as const));
  const seen = new Set<number>();
  for (const e of job.edges) {
    const si = index.get(e.s), ti = index.get(e.t);
    if (si !== undefined && ti !== undefined) {
      if (ti !== si + 1 || seen.has(si)) return null;
      seen.add(si);
    } else if (si === undefined && ti === undefined) return null;
    else if (ti === 0 && si === undefined) continue;               // in-port -> first
    else if (si === kids.length - 1 && ti === undefined) continue; // last -> out-port
    else return null;
  }
  if (seen.size !== kids.length - 1) return null;
  const width = Math.max(...kids.map((c) => c.w));
  const cx = width / 2;
  const pos: GroupLayout['pos'] = {};
  let y = 0;
  const ins = job.children.filter((c) => c.port === 'in');
  const outs = job.children.filter((c) => c.port === 'out');
  if (ins.length) { for (const p of ins) pos[p.id] = [cx - p.w / 2, 0, p.w, p.h]; y = 2 + gap; }
  for (const c of kids) { pos[c.id] = [cx - c.w / 2, y, c.w, c.h]; y += c.h + gap; }
  let height = y - gap;
  if (outs.length) { for (const p of outs) pos[p.id] = [cx - p.w / 2, y, p.w, p.h]; height = y + 2; }
  const edges: GroupLayout['edges'] = {};
  for (const e of job.edges) {
    const a = pos[e.s], b = pos[e.t];
    edges[e.id] = [cx, a[1] + a[3], cx, b[1]];
  }
  return { group: job.group, key: job.key, width, height, pos, edges, ms: 0 };
}

async function layoutJob(job: LayoutJob, done: Map<string, GroupLayout>): Promise<GroupLayout> {
  const t0 = performance.now();
  for (const c of job.children) {
    if (c.ref === undefined) continue;
    const r = done.get(c.ref);
    if (r) [c.w, c.h] = frameSize(r);
    delete c.ref;
  }
  const chain = chainLayout(job);
  if (chain) { chain.ms = performance.now() - t0; return chain; }
  const children: ElkNode[] = job.children.map((c) => {
    const n: ElkNode = { id: c.id, width: c.w, height: c.h };
    if (c.port) n.layoutOptions = { 'elk.layered.layering.layerConstraint': c.port === 'in' ? 'FIRST' : 'LAST' };
    return n;
  });
  const edges: ElkExtendedEdge[] = job.edges.map((e) => ({ id: e.id, sources: [e.s], targets: [e.t] }));
  const res = await elk.layout({ id: 'root', layoutOptions: options(children.length, job.dir), children, edges });
  const pos: GroupLayout['pos'] = {};
  let width = 0, height = 0;
  for (const c of res.children ?? []) {
    const x = c.x ?? 0, y = c.y ?? 0, w = c.width ?? 0, h = c.height ?? 0;
    pos[c.id] = [x, y, w, h];
    width = Math.max(width, x + w);
    height = Math.max(height, y + h);
  }
  const outEdges: GroupLayout['edges'] = {};
  for (const e of (res.edges ?? []) as ElkExtendedEdge[]) {
    const pts: number[] = [];
    for (const s of e.sections ?? []) {
      pts.push(s.startPoint.x, s.startPoint.y);
      for (const b of s.bendPoints ?? []) pts.push(b.x, b.y);
      pts.push(s.endPoint.x, s.endPoint.y);
    }
    outEdges[e.id] = pts;
    for (let i = 0; i < pts.length; i += 2) {
      width = Math.max(width, pts[i]);
      height = Math.max(height, pts[i + 1]);
    }
  }
  return { group: job.group, key: job.key, width, height, pos, edges: outEdges, ms: performance.now() - t0 };
}

const ctx = self as unknown as DedicatedWorkerGlobalScope;

let busy = false;

ctx.onmessage = async (ev: MessageEvent<LayoutRequest>) => {
  busy = true;
  const t0 = performance.now();
  const req = ev.data;
  const done = new Map<string, GroupLayout>();
  const layouts: GroupLayout[] = [];
  try {
    for (const job of req.jobs) {
      const l = await layoutJob(job, done);
      done.set(job.group, l);
      layouts.push(l);
    }
    const resp: LayoutResponse = { id: req.id, layouts, ms: performance.now() - t0 };
    ctx.postMessage(resp);
  } catch (e) {
    const resp: LayoutResponse = { id: req.id, layouts, error: String(e), ms: performance.now() - t0 };
    ctx.postMessage(resp);
  }
};

// Warm elkjs up while the main thread is still parsing the document: its first layouts run
// cold (class initialisation, JIT) and are several times slower than later ones. Real work
// stops the warm-up.
void (async () => {
  for (let round = 0; round < 2 && !busy; round++) {
    const children: ElkNode[] = [];
    const edges: ElkExtendedEdge[] = [];
    for (let i = 0; i < 40; i++) {
      children.push({ id: 'n' + i, width: 120, height: 40 });
      if (i > 0) edges.push({ id: 'e' + i, sources: ['n' + (i - 1)], targets: ['n' + i] });
      if (i > 3 && i % 4 === 0) edges.push({ id: 's' + i, sources: ['n' + (i - 4)], targets: ['n' + i] });
    }
    await elk.layout({ id: 'warm', layoutOptions: options(40), children, edges });
  }
})();
