// Chains: a group whose children form one chain in model order is stacked directly, without
// elkjs (long sequential stacks are common and elkjs is slow on them). Pure and free of elkjs, so
// the main thread lays chains out at once while the worker is still starting.
import type { GroupLayout, LayoutJob } from './layout-types';

/** Top-down, the gap between layers. */
export const GAP = 34;
/** Left to right, edge labels (shapes, written horizontally) sit between the layers: more room. */
export const GAP_RIGHT = 84;

/**
 * A group whose children form one chain in model order (each feeds the next, ports only at the
 * ends) is stacked directly: long sequential stacks are common and elkjs is slow on them.
 * Left to right: the top-down stack of the transposed boxes, transposed back.
 */
export function chainLayout(job: LayoutJob): GroupLayout | null {
  return alongAxis(job, chainDown);
}

/**
 * A top-down layout function along the job's direction: left to right, the top-down layout of
 * the transposed boxes (with the left-right gap between layers), transposed back.
 */
export function alongAxis(job: LayoutJob, down: (job: LayoutJob, gap: number) => GroupLayout | null): GroupLayout | null {
  if ((job.dir ?? 'DOWN') === 'DOWN') return down(job, GAP);
  const t = down({ ...job, dir: 'DOWN', children: job.children.map((c) => ({ ...c, w: c.h, h: c.w })) }, GAP_RIGHT);
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
