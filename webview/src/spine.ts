// Spines: a group made of one longest path (the spine) plus short side chains that leave it (or
// an in-port) and rejoin it (or an out-port) — residual blocks with their identity or shortcut
// branch, a transformer layer's bypasses, q/k/v projections beside each other, a constant next to
// the node reading it — is laid out directly, without elkjs: the spine in one column, each side
// chain in a column to its right (chains whose spans overlap in separate columns), and every edge
// that skips layers in a lane of its own right of those. Linear in the group's size, so the main
// thread lays such groups out at once; anything else goes to elkjs in the layout worker.
import type { GroupLayout, LayoutChild, LayoutJob } from './layout-types';
import { alongAxis } from './chain';

/** Between columns (as elkjs's spacing.nodeNode). */
export const COLUMN_GAP = 22;
/** From the rightmost column to the first lane (as elkjs's spacing.edgeNode). */
export const LANE_GAP = 14;
/** Between lanes. */
export const LANE_STEP = 10;
/** More side columns than this: the group goes to elkjs. */
const MAX_COLUMNS = 3;

export function spineLayout(job: LayoutJob): GroupLayout | null {
  return alongAxis(job, spineDown);
}

interface Chain { nodes: number[]; start: number; target: number; column: number }

function spineDown(job: LayoutJob, gap: number): GroupLayout | null {
  const kids: LayoutChild[] = [];
  const index = new Map<string, number>();
  const port = new Map<string, 'in' | 'out'>();
  for (const c of job.children) {
    if (c.port) port.set(c.id, c.port);
    else { index.set(c.id, kids.length); kids.push(c); }
  }
  const n = kids.length;
  if (n === 0) return null;
  const preds: number[][] = kids.map(() => []);
  const succs: number[][] = kids.map(() => []);
  const fromIn: string[][] = kids.map(() => []);   // edge ids from an in-port
  const toOut: string[][] = kids.map(() => []);    // edge ids to an out-port
  const between = new Map<string, string>();       // "s t" (node indices) -> edge id
  for (const e of job.edges) {
    const s = index.get(e.s), t = index.get(e.t);
    if (s !== undefined && t !== undefined) {
      if (s === t || between.has(`${s} ${t}`)) return null;
      between.set(`${s} ${t}`, e.id);
      succs[s].push(t);
      preds[t].push(s);
    } else if (t !== undefined && port.get(e.s) === 'in') fromIn[t].push(e.id);
    else if (s !== undefined && port.get(e.t) === 'out') toOut[s].push(e.id);
    else return null;
  }

  // Longest-path layers from 1, in a topological order (model order when it is one).
  const order: number[] = [];
  const indeg = preds.map((p) => p.length);
  const ready: number[] = [];
  for (let i = n - 1; i >= 0; i--) if (indeg[i] === 0) ready.push(i);
  while (ready.length) {
    const i = ready.pop()!;
    order.push(i);
    const next: number[] = [];
    for (const t of succs[i]) if (--indeg[t] === 0) next.push(t);
    next.sort((a, b) => b - a);
    ready.push(...next);
  }
  if (order.length !== n) return null;  // a cycle
  const layer = new Array<number>(n).fill(1);
  for (const i of order) for (const t of succs[i]) layer[t] = Math.max(layer[t], layer[i] + 1);

  // The spine: back from the deepest node (the last of them) through predecessors one layer up.
  let end = 0;
  for (let i = 0; i < n; i++) if (layer[i] >= layer[end]) end = i;
  const L = layer[end];
  const spineAt = new Array<number>(L + 1).fill(-1);
  const onSpine = new Array<boolean>(n).fill(false);
  for (let cur = end; ;) {
    spineAt[layer[cur]] = cur;
    onSpine[cur] = true;
    if (layer[cur] === 1) break;
    let p = -1;
    for (const q of preds[cur]) if (layer[q] === layer[cur] - 1 && (p < 0 || q < p)) p = q;
    cur = p;
  }

  // Side chains: every other node has at most one input and exactly one output.
  const side: number[] = [];
  for (let i = 0; i < n; i++) {
    if (onSpine[i]) continue;
    if (preds[i].length + fromIn[i].length > 1 || succs[i].length + toOut[i].length !== 1) return null;
    side.push(i);
  }
  const chains: Chain[] = [];
  const inChain = new Array<boolean>(n).fill(false);
  for (const h of side) {
    if (preds[h].length === 1 && !onSpine[preds[h][0]]) continue;  // not a head
    const nodes = [h];
    inChain[h] = true;
    let cur = h;
    while (succs[cur].length === 1 && !onSpine[succs[cur][0]]) {
      cur = succs[cur][0];
      nodes.push(cur);
      inChain[cur] = true;
    }
    const target = succs[cur].length === 1 ? layer[succs[cur][0]] : L + 1;
    // From the spine or an in-port: right after it; a source (a constant): right before its reader.
    const start = preds[h].length === 1 ? layer[preds[h][0]] + 1 : fromIn[h].length === 1 ? 1 : target - nodes.length;
    if (start < 1 || start + nodes.length > target) return null;
    chains.push({ nodes, start, target, column: -1 });
  }
  if (side.some((i) => !inChain[i])) return null;

  // Columns: a chain occupies its column from its first layer down to the layer it feeds.
  chains.sort((a, b) => a.start - b.start || a.nodes[0] - b.nodes[0]);
  const columnEnd: number[] = [];
  for (const c of chains) {
    let k = columnEnd.findIndex((e) => e < c.start);
    if (k < 0) {
      if (columnEnd.length === MAX_COLUMNS) return null;
      k = columnEnd.length;
      columnEnd.push(0);
    }
    columnEnd[k] = c.target - 1;
    c.column = k;
  }
  const where = new Array<{ layer: number; column: number }>(n);
  for (let i = 0; i < n; i++) if (onSpine[i]) where[i] = { layer: layer[i], column: -1 };
  for (const c of chains) c.nodes.forEach((i, j) => { where[i] = { layer: c.start + j, column: c.column }; });

  // Lanes: edges between spine nodes (or from the in-ports, or to the out-ports) that skip
  // layers. The edges of one source share its lane (the in-ports, which all sit at the top, count
  // as one source): a bus with a branch to each target.
  const bus = new Map<string, { edges: string[]; from: number; to: number }>();
  const toLane = (source: string, edge: string, from: number, to: number): void => {
    const b = bus.get(source);
    if (!b) bus.set(source, { edges: [edge], from, to });
    else { b.edges.push(edge); b.from = Math.min(b.from, from); b.to = Math.max(b.to, to); }
  };
  for (const [k, id] of between) {
    const [s, t] = k.split(' ').map(Number);
    if (onSpine[s] && onSpine[t] && layer[t] > layer[s] + 1) toLane(`n${s}`, id, layer[s] + 1, layer[t] - 1);
  }
  for (let i = 0; i < n; i++) {
    if (onSpine[i] && layer[i] > 1) for (const id of fromIn[i]) toLane('in', id, 1, layer[i] - 1);
    if (onSpine[i] && layer[i] < L) for (const id of toOut[i]) toLane(`n${i}`, id, layer[i] + 1, L);
  }
  const laneEnd: number[] = [];
  const lanes = new Map<string, number>();
  for (const b of [...bus.values()].sort((x, y) => x.from - y.from || x.to - y.to)) {
    let k = laneEnd.findIndex((x) => x < b.from);
    if (k < 0) { k = laneEnd.length; laneEnd.push(0); }
    laneEnd[k] = b.to;
    for (const e of b.edges) lanes.set(e, k);
  }

  // Geometry. The spine is a stack (a layer as tall as its node); lanes run right of it, then
  // the side columns (as wide as their widest node). A side chain is stacked down its column
  // from the top of its first layer, and the layer it feeds starts below its end.
  const ins = job.children.filter((c) => c.port === 'in');
  const outs = job.children.filter((c) => c.port === 'out');
  const inH = Math.max(0, ...ins.map((p) => p.h));
  const height = new Array<number>(L + 2).fill(0);
  let spineW = 0;
  const colW = columnEnd.map(() => 0);
  for (let i = 0; i < n; i++) {
    const w = where[i];
    if (w.column < 0) { height[w.layer] = kids[i].h; spineW = Math.max(spineW, kids[i].w); }
    else colW[w.column] = Math.max(colW[w.column], kids[i].w);
  }
  const cx = spineW / 2;
  const laneX = laneEnd.map((_, k) => spineW + LANE_GAP + k * LANE_STEP);
  const colX: number[] = [];
  let right = laneX.length ? laneX[laneX.length - 1] + LANE_GAP - COLUMN_GAP : spineW;
  for (let k = 0; k < colW.length; k++) { colX.push(right + COLUMN_GAP); right = colX[k] + colW[k]; }
  const top = new Array<number>(L + 2).fill(0);
  const sideY = new Array<number>(n).fill(0);
  const chainEnd = new Map<Chain, number>();
  for (let l = 1; l <= L + 1; l++) {
    let y = l === 1 ? (ins.length ? inH + gap : 0) : top[l - 1] + height[l - 1] + gap;
    for (const c of chains) if (c.target === l) y = Math.max(y, chainEnd.get(c)! + gap);
    top[l] = y;
    for (const c of chains) {
      if (c.start !== l) continue;
      let cy = y;
      for (const i of c.nodes) { sideY[i] = cy; cy += kids[i].h + gap; }
      chainEnd.set(c, cy - gap);
    }
  }
  const outY = top[L + 1];
  const bottom = top[L] + height[L];
  // Edges leave a node straight down and enter one straight from above; their slanted parts are
  // in the gaps between the spine's layers (checked below: no edge crosses a node).
  const layerBottom = (l: number): number => (l === 0 ? inH : top[l] + height[l]);
  const below = (l: number): number => layerBottom(l) + gap / 2;
  const above = (l: number): number => top[l] - gap / 2;

  const pos: GroupLayout['pos'] = {};
  for (let i = 0; i < n; i++) {
    const { layer: l, column } = where[i];
    const c = kids[i];
    if (column < 0) pos[c.id] = [cx - c.w / 2, top[l], c.w, c.h];
    else pos[c.id] = [colX[column] + (colW[column] - c.w) / 2, sideY[i], c.w, c.h];
  }
  for (const p of ins) pos[p.id] = [cx - p.w / 2, 0, p.w, p.h];
  for (const p of outs) pos[p.id] = [cx - p.w / 2, outY, p.w, p.h];
  const centre = (id: string): number => pos[id][0] + pos[id][2] / 2;
  const layerOf = (id: string): number => {
    const i = index.get(id);
    return i !== undefined ? where[i].layer : port.get(id) === 'in' ? 0 : L + 1;
  };

  const edges: GroupLayout['edges'] = {};
  for (const e of job.edges) {
    const sx = centre(e.s), sy = pos[e.s][1] + pos[e.s][3];
    const tx = centre(e.t), ty = pos[e.t][1];
    const ls = layerOf(e.s), lt = layerOf(e.t);
    const si = index.get(e.s), ti = index.get(e.t);
    const lane = lanes.get(e.id);
    let pts: number[];
    if (si !== undefined && where[si].column >= 0) {
      pts = ti !== undefined && where[ti].column === where[si].column
        ? [sx, sy, tx, ty]                                // the next node of its chain, below it
        : [sx, sy, sx, above(lt), tx, top[lt], tx, ty];   // its chain's end: down the column
    } else if (lane !== undefined) {
      pts = [sx, sy, sx, layerBottom(ls), laneX[lane], below(ls), laneX[lane], above(lt), tx, top[lt], tx, ty];
    } else if (lt === ls + 1) {
      pts = [sx, sy, sx, layerBottom(ls), tx, top[lt], tx, ty];
    } else {
      return null;  // (every edge that skips layers is in a lane or a column)
    }
    edges[e.id] = dedup(pts);
  }
  if (crossesANode(job, pos, edges)) return null;
  let width = right;
  if (laneX.length) width = Math.max(width, laneX[laneX.length - 1]);
  return {
    group: job.group, key: job.key, width, height: outs.length ? outY + Math.max(...outs.map((p) => p.h)) : bottom, pos, edges, ms: 0,
  };
}

/** A polyline without repeated points. */
function dedup(pts: number[]): number[] {
  const out = [pts[0], pts[1]];
  for (let i = 2; i < pts.length; i += 2) {
    if (pts[i] !== out[out.length - 2] || pts[i + 1] !== out[out.length - 1]) out.push(pts[i], pts[i + 1]);
  }
  return out;
}

/** Whether a segment of an edge passes through a node other than the edge's own two ends. */
function crossesANode(job: LayoutJob, pos: GroupLayout['pos'], edges: GroupLayout['edges']): boolean {
  const boxes = job.children.filter((c) => !c.port).map((c) => [c.id, ...pos[c.id]] as const);
  for (const e of job.edges) {
    const pts = edges[e.id];
    for (const [id, x, y, w, h] of boxes) {
      if (id === e.s || id === e.t) continue;
      for (let i = 0; i + 3 < pts.length; i += 2) {
        if (segmentHitsBox(pts[i], pts[i + 1], pts[i + 2], pts[i + 3], x + 1, y + 1, x + w - 1, y + h - 1)) return true;
      }
    }
  }
  return false;
}

/** Liang-Barsky: whether segment (x0,y0)-(x1,y1) meets the box [bx0,bx1]×[by0,by1]. */
export function segmentHitsBox(x0: number, y0: number, x1: number, y1: number,
                               bx0: number, by0: number, bx1: number, by1: number): boolean {
  let t0 = 0, t1 = 1;
  const dx = x1 - x0, dy = y1 - y0;
  const clip = (p: number, q: number): boolean => {
    if (p === 0) return q >= 0;
    const r = q / p;
    if (p < 0) { if (r > t1) return false; if (r > t0) t0 = r; }
    else { if (r < t0) return false; if (r < t1) t1 = r; }
    return true;
  };
  return clip(-dx, x0 - bx0) && clip(dx, bx1 - x0) && clip(-dy, y0 - by0) && clip(dy, by1 - y0) && t0 <= t1;
}
