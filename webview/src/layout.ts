// Hierarchical layout: one elkjs layout per expanded group, cached by a key that captures
// everything the layout depends on (children, their sizes, the edges between them). Expanding a
// group lays out that group and re-lays out its ancestors (one level each, with children as
// boxes); untouched groups keep their cached layouts, so unchanged parts keep their place.
import { ROOT_ID, type Group, type VEdge, type VNode, type ViewGraph } from './model';
import { edgeLabelLines } from './format';
import { groupHeader } from './groups';
import {
  GROUP_PAD_TOP, GROUP_PAD_X, frameSize, type Direction, type GroupLayout, type LayoutChild, type LayoutJob,
  type LayoutRequest, type LayoutResponse,
} from './layout-types';

export interface AggEdge { id: string; s: string; t: string; real: VEdge[] }

/** For each group, the edges between its direct children (real edges lifted to their LCA group). */
export function aggregateEdges(g: ViewGraph): Map<string, Map<string, AggEdge>> {
  const out = new Map<string, Map<string, AggEdge>>();
  const depth = (id: string): number => {
    const grp = g.groups.get(id);
    return grp ? grp.depth : (g.groups.get(g.parentOf.get(id) ?? '')?.depth ?? 0) + 1;
  };
  for (const e of g.edges) {
    if (e.src === e.tgt) continue;
    let a = e.src, b = e.tgt;
    let da = depth(a), db = depth(b);
    while (da > db) { a = g.parentOf.get(a)!; da--; }
    while (db > da) { b = g.parentOf.get(b)!; db--; }
    if (a === b) continue;  // one contains the other: cannot happen for leaves
    while (g.parentOf.get(a) !== g.parentOf.get(b)) { a = g.parentOf.get(a)!; b = g.parentOf.get(b)!; }
    if (a === b) continue;
    const lca = g.parentOf.get(a);
    if (lca === undefined) continue;
    let m = out.get(lca);
    if (!m) { m = new Map(); out.set(lca, m); }
    const id = `${a}\u2192${b}`;
    let ag = m.get(id);
    if (!ag) { ag = { id, s: a, t: b, real: [] }; m.set(id, ag); }
    ag.real.push(e);
  }
  return out;
}

export interface Ports { ins: Set<string>; outs: Set<string> }

/** The child (of `group`) that contains `id`. */
export function childOf(g: ViewGraph, group: string, id: string): string {
  let c = id;
  let p = g.parentOf.get(c);
  while (p !== undefined && p !== group) { c = p; p = g.parentOf.get(c); }
  return c;
}

/**
 * Port nodes: for an edge entering (leaving) a group, the group's layout gets a small proxy node
 * in its first (last) layer, linked to the child holding the edge's end, so that the edge enters
 * the group's frame from the top and is routed inside it by the layout instead of crossing it.
 */
export function computePorts(g: ViewGraph, agg: Map<string, Map<string, AggEdge>>): Map<string, Ports> {
  const ports = new Map<string, Ports>();
  const get = (grp: string): Ports => {
    let p = ports.get(grp);
    if (!p) { p = { ins: new Set(), outs: new Set() }; ports.set(grp, p); }
    return p;
  };
  for (const m of agg.values()) for (const e of m.values()) {
    const sg = g.groups.has(e.s), tg = g.groups.has(e.t);
    if (!sg && !tg) continue;
    for (const r of e.real) {
      for (let cur = e.s; g.groups.has(cur);) {
        const c = childOf(g, cur, r.src);
        get(cur).outs.add(c);
        cur = c;
      }
      for (let cur = e.t; g.groups.has(cur);) {
        const c = childOf(g, cur, r.tgt);
        get(cur).ins.add(c);
        cur = c;
      }
    }
  }
  return ports;
}

export const PORT_IN = '\u22b3in:';
export const PORT_OUT = '\u22b3out:';

/** A collapsed group's box: room for its title, and for its class and size with a metric's Σ before them. */
export function collapsedGroupSize(grp: Group): [number, number] {
  const rest = groupHeader(grp).rest.length + 16;  // "Σ 12.3M cyc · " + class · size
  return [Math.round(Math.min(260, Math.max(150, grp.label.length * 7 + 44, rest * 6 + 20))), 50];
}

export class LayoutCache {
  private map = new Map<string, GroupLayout>();
  get(group: string, key: string): GroupLayout | undefined { return this.map.get(group + '\n' + key); }
  put(l: GroupLayout): void {
    if (this.map.size > 4000) this.map.clear();
    this.map.set(l.group + '\n' + l.key, l);
  }
}

interface Plan { jobs: LayoutJob[]; keys: Map<string, string> }

/**
 * Keys of every expanded group (post-order) and the jobs for those without a cached layout. The
 * direction is part of the key (a left-right layout is cached beside the top-down one).
 */
export function planLayouts(g: ViewGraph, expanded: ReadonlySet<string>, agg: Map<string, Map<string, AggEdge>>,
                            cache: LayoutCache, ports?: Map<string, Ports>, dir: Direction = 'DOWN'): Plan {
  // Port proxies lie across the main axis: a flat bar on the frame's entry (exit) side.
  const [pw, ph] = dir === 'RIGHT' ? [2, 8] : [8, 2];
  const keys = new Map<string, string>();
  const jobs: LayoutJob[] = [];
  const visit = (grp: Group): { key: string; size?: [number, number] } => {
    const children: LayoutChild[] = [];
    const parts: string[] = [];
    for (const c of grp.children) {
      const cg = g.groups.get(c);
      if (!cg) {
        const n = g.byId.get(c)!;
        children.push({ id: c, w: n.width, h: n.height });
        parts.push(`${c}:${n.width}x${n.height}`);
      } else if (expanded.has(c)) {
        const r = visit(cg);
        if (r.size) {
          children.push({ id: c, w: r.size[0], h: r.size[1] });
          parts.push(`${c}:${r.size[0]}x${r.size[1]}`);
        } else {
          children.push({ id: c, w: 0, h: 0, ref: c });
          parts.push(`${c}:{${r.key}}`);
        }
      } else {
        const [w, h] = collapsedGroupSize(cg);
        children.push({ id: c, w, h });
        parts.push(`${c}:${w}x${h}`);
      }
    }
    const edges = [...(agg.get(grp.id)?.values() ?? [])].map((e) => ({ id: e.id, s: e.s, t: e.t }));
    const pp = ports?.get(grp.id);
    if (pp) {
      for (const c of pp.ins) {
        children.push({ id: PORT_IN + c, w: pw, h: ph, port: 'in' });
        edges.push({ id: PORT_IN + c, s: PORT_IN + c, t: c });
      }
      for (const c of pp.outs) {
        children.push({ id: PORT_OUT + c, w: pw, h: ph, port: 'out' });
        edges.push({ id: PORT_OUT + c, s: c, t: PORT_OUT + c });
      }
    }
    for (const e of edges) parts.push(e.id);
    const key = (dir === 'DOWN' ? '' : dir + '|') + parts.join('|');
    keys.set(grp.id, key);
    const cached = cache.get(grp.id, key);
    if (cached) return { key, size: frameSize(cached) };
    const job: LayoutJob = { group: grp.id, key, children, edges };
    if (dir !== 'DOWN') job.dir = dir;
    jobs.push(job);
    return { key };
  };
  visit(g.root);
  return { jobs, keys };
}

export class LayoutEngine {
  private workers: Worker[];
  private idleWorkers: Worker[];
  private nextId = 1;
  private pending = new Map<number, (r: LayoutResponse) => void>();
  readonly cache = new LayoutCache();
  lastLayoutMs = 0;
  jobsRun = 0;

  /** A pool of layout workers: independent groups are laid out in parallel. */
  constructor(private makeWorker: () => Worker, private size: number, initial = 1) {
    // Few workers at first: on small machines more would compete with the main thread (which is
    // parsing the document) during the cold start. The pool grows after the first layout.
    this.workers = [];
    this.idleWorkers = [];
    for (let i = 0; i < Math.max(1, Math.min(initial, size)); i++) this.addWorker();
  }

  private addWorker(): void {
    const w = this.makeWorker();
    w.onmessage = (ev: MessageEvent<LayoutResponse>) => {
      const cb = this.pending.get(ev.data.id);
      this.pending.delete(ev.data.id);
      cb?.(ev.data);
    };
    this.workers.push(w);
    this.idleWorkers.push(w);
  }

  private grow(): void {
    while (this.workers.length < Math.max(1, this.size)) this.addWorker();
  }

  private run(w: Worker, jobs: LayoutJob[]): Promise<LayoutResponse> {
    const req: LayoutRequest = { id: this.nextId++, jobs };
    return new Promise<LayoutResponse>((resolve) => {
      this.pending.set(req.id, resolve);
      w.postMessage(req);
    });
  }

  /** Lays out whatever is missing; resolves with the keys of every expanded group. */
  async ensure(g: ViewGraph, expanded: ReadonlySet<string>, agg: Map<string, Map<string, AggEdge>>,
               ports?: Map<string, Ports>, dir: Direction = 'DOWN'): Promise<Map<string, string>> {
    for (;;) {
      const plan = planLayouts(g, expanded, agg, this.cache, ports, dir);
      if (plan.jobs.length === 0) return plan.keys;
      const t0 = performance.now();
      const done = new Map<string, GroupLayout>();
      const waiting = [...plan.jobs];
      const running = new Set<Promise<void>>();
      let error: string | null = null;
      while ((waiting.length > 0 || running.size > 0) && error === null) {
        // Start every job whose nested groups are laid out, while workers are free.
        for (let i = 0; i < waiting.length && this.idleWorkers.length > 0;) {
          const job = waiting[i];
          if (!job.children.every((c) => c.ref === undefined || done.has(c.ref))) { i++; continue; }
          waiting.splice(i, 1);
          for (const c of job.children) {
            if (c.ref === undefined) continue;
            [c.w, c.h] = frameSize(done.get(c.ref)!);
            delete c.ref;
          }
          const w = this.idleWorkers.pop()!;
          const p: Promise<void> = this.run(w, [job]).then((r) => {
            this.idleWorkers.push(w);
            running.delete(p);
            if (r.error) error = r.error;
            for (const l of r.layouts) { done.set(l.group, l); this.cache.put(l); this.jobsRun++; }
          });
          running.add(p);
        }
        if (running.size === 0) break;
        await Promise.race(running);
      }
      if (error !== null) throw new Error(error);
      this.lastLayoutMs = performance.now() - t0;
      if (this.workers.length < this.size) setTimeout(() => this.grow(), 0);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Scene: absolute positions of everything drawn.

export type ItemType = 'node' | 'group' | 'frame';

export interface DrawItem {
  id: string;
  type: ItemType;
  x: number; y: number; w: number; h: number;
  node?: VNode;
  group?: Group;
  depth: number;
}

export interface DrawEdge {
  src: string;  // visible item ids
  tgt: string;
  pts: number[];
  /** The tensor's shape, dtype and format (format.ts edgeLabelLines; lines joined by "\n"); '' when
   * the tensors it stands for differ. */
  label: string;
  count: number;
  minX: number; minY: number; maxX: number; maxY: number;
  real: VEdge[];
}

export interface Scene {
  items: DrawItem[];        // frames first (outer to inner), then nodes and collapsed groups
  byId: Map<string, DrawItem>;
  edges: DrawEdge[];
  width: number;
  height: number;
  nodesDrawn: number;
  groupsDrawn: number;
}

export function composeScene(g: ViewGraph, expanded: ReadonlySet<string>, keys: Map<string, string>,
                             cache: LayoutCache, agg: Map<string, Map<string, AggEdge>>, dir: Direction = 'DOWN'): Scene {
  // Where an edge leaves (enters) an item without a port route: the middle of its exit (entry) side.
  const exitOf = (it: DrawItem): [number, number] => (dir === 'RIGHT' ? [it.x + it.w, it.y + it.h / 2] : [it.x + it.w / 2, it.y + it.h]);
  const entryOf = (it: DrawItem): [number, number] => (dir === 'RIGHT' ? [it.x, it.y + it.h / 2] : [it.x + it.w / 2, it.y]);
  const origin = new Map<string, { ox: number; oy: number; l: GroupLayout }>();
  /** The inner route of a port edge, in absolute coordinates ([] when unknown). */
  const portRoute = (grp: string, id: string): number[] => {
    const o = origin.get(grp);
    const r = o?.l.edges[id];
    if (!o || !r) return [];
    const out = new Array<number>(r.length);
    for (let i = 0; i < r.length; i += 2) { out[i] = r[i] + o.ox; out[i + 1] = r[i + 1] + o.oy; }
    return out;
  };
  const frames: DrawItem[] = [];
  const leaves: DrawItem[] = [];
  const byId = new Map<string, DrawItem>();
  const edges: DrawEdge[] = [];
  let nodesDrawn = 0, groupsDrawn = 0;
  const rep = new Map<string, string>();
  const repOf = (id: string): string => {
    let r = rep.get(id);
    if (r !== undefined) return r;
    const p = g.parentOf.get(id);
    if (p === undefined || p === ROOT_ID) r = id;
    else {
      const pr = repOf(p);
      // The parent is hidden inside a collapsed ancestor, or is itself a collapsed box.
      r = pr !== p ? pr : expanded.has(p) ? id : p;
    }
    rep.set(id, r);
    return r;
  };
  const pending: { grp: Group; ox: number; oy: number; l: GroupLayout }[] = [];
  const place = (grp: Group, ox: number, oy: number): void => {
    const l = cache.get(grp.id, keys.get(grp.id) ?? '');
    if (!l) return;
    pending.push({ grp, ox, oy, l });
    origin.set(grp.id, { ox, oy, l });
    for (const c of grp.children) {
      const p = l.pos[c];
      if (!p) continue;
      // (port proxies are not children: they are only in l.pos)
      const [x, y, w, h] = p;
      const cg = g.groups.get(c);
      if (cg && expanded.has(c)) {
        const it: DrawItem = { id: c, type: 'frame', x: ox + x, y: oy + y, w, h, group: cg, depth: cg.depth };
        frames.push(it);
        byId.set(c, it);
        place(cg, ox + x + GROUP_PAD_X, oy + y + GROUP_PAD_TOP);
      } else if (cg) {
        const it: DrawItem = { id: c, type: 'group', x: ox + x, y: oy + y, w, h, group: cg, depth: cg.depth };
        leaves.push(it);
        byId.set(c, it);
        groupsDrawn++;
      } else {
        const it: DrawItem = { id: c, type: 'node', x: ox + x, y: oy + y, w, h, node: g.byId.get(c), depth: grp.depth + 1 };
        leaves.push(it);
        byId.set(c, it);
        nodesDrawn++;
      }
    }
  };
  place(g.root, 0, 0);
  for (const { grp, ox, oy, l } of pending) {
    const ag = agg.get(grp.id);
    if (!ag) continue;
    for (const e of ag.values()) {
      const route = l.edges[e.id];
      if (!route || route.length < 4) continue;
      const base: number[] = new Array<number>(route.length);
      for (let i = 0; i < route.length; i += 2) { base[i] = route[i] + ox; base[i + 1] = route[i + 1] + oy; }
      const pairs = new Map<string, DrawEdge>();
      for (const r of e.real) {
        const vs = repOf(r.src), vt = repOf(r.tgt);
        const k = vs + '\n' + vt;
        let de = pairs.get(k);
        const lbl = edgeLabelLines(r.tensor, dir === 'RIGHT').join('\n');
        if (de) { de.count++; de.real.push(r); if (de.label !== lbl) de.label = ''; continue; }
        let pts = base;
        if (vs !== e.s) {
          // From the visible source up through the frames it sits in: innermost first.
          const chain: number[][] = [];
          for (let cur = e.s; cur !== vs && g.groups.has(cur);) {
            const c = childOf(g, cur, vs);
            chain.push(portRoute(cur, PORT_OUT + c));
            cur = c;
          }
          const pre: number[] = [];
          for (let i = chain.length - 1; i >= 0; i--) pre.push(...chain[i]);
          if (pre.length === 0) { const si = byId.get(vs); if (si) pre.push(...exitOf(si)); }
          pts = pre.concat(pts);
        }
        if (vt !== e.t) {
          const post: number[] = [];
          for (let cur = e.t; cur !== vt && g.groups.has(cur);) {
            const c = childOf(g, cur, vt);
            post.push(...portRoute(cur, PORT_IN + c));
            cur = c;
          }
          if (post.length === 0) { const ti = byId.get(vt); if (ti) post.push(...entryOf(ti)); }
          pts = pts.concat(post);
        }
        if (pts === base) pts = base.slice();
        let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
        for (let i = 0; i < pts.length; i += 2) {
          minX = Math.min(minX, pts[i]); maxX = Math.max(maxX, pts[i]);
          minY = Math.min(minY, pts[i + 1]); maxY = Math.max(maxY, pts[i + 1]);
        }
        de = { src: vs, tgt: vt, pts, label: lbl, count: 1, minX, minY, maxX, maxY, real: [r] };
        pairs.set(k, de);
        edges.push(de);
      }
    }
  }
  const root = cache.get(g.root.id, keys.get(g.root.id) ?? '');
  frames.sort((a, b) => a.depth - b.depth);
  return {
    items: [...frames, ...leaves], byId, edges,
    width: root?.width ?? 0, height: root?.height ?? 0, nodesDrawn, groupsDrawn,
  };
}
