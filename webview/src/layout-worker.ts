// The layout worker: lays out one hierarchy level per job with elkjs (layered, top to bottom or
// left to right, as the job says).
import ELK from 'elkjs/lib/elk.bundled.js';
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api';
import { type Direction, type GroupLayout, type LayoutJob, type LayoutRequest, type LayoutResponse } from './layout-types';
import { GAP, GAP_RIGHT, chainLayout } from './chain';

export { GAP_RIGHT, chainLayout };

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

async function layoutJob(job: LayoutJob): Promise<GroupLayout> {
  const t0 = performance.now();
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
  const layouts: GroupLayout[] = [];
  try {
    for (const job of req.jobs) layouts.push(await layoutJob(job));
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
