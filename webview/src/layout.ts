// Hierarchical layout: one layout per expanded group (chain.ts, spine.ts, else elkjs in the
// layout worker), cached by a key that captures everything the layout depends on (children, their
// sizes, the edges between them) in canonical ids, so that groups of the same structure share one
// layout. Expanding a group lays out that group and re-lays out its ancestors (one level each,
// with children as boxes); untouched groups keep their cached layouts, so unchanged parts keep
// their place.
import { ROOT_ID, type Group, type VEdge, type VNode, type ViewGraph } from './model';
import { edgeLabelLines } from './format';
import { groupHeader } from './groups';
import {
  GROUP_PAD_TOP, GROUP_PAD_X, frameSize, type Direction, type GroupLayout, type LayoutChild, type LayoutEdgeIn, type LayoutJob,
  type LayoutRequest, type LayoutResponse,
} from './layout-types';
import { chainLayout } from './chain';
import { spineLayout } from './spine';

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

/**
 * A group's names for the canonical ids of its layout problem (`c<i>`: children[i], its children
 * in order then its port proxies; `e<j>`: edges[j]), and the problem's key.
 */
export interface Naming { key: string; children: string[]; edges: string[] }

/**
 * Layouts by key. A key is a group's layout problem in canonical ids: its children numbered in
 * order with their sizes (an expanded child group by its frame's size), the edges between those
 * numbers, its port proxies and the direction; no node id. Groups of the same structure
 * (ResNet's bottleneck blocks, BERT's layers, a model's repeated blocks) therefore share one
 * layout, computed once; `instance` gives it in one group's own ids.
 */
export class LayoutCache {
  private map = new Map<string, GroupLayout>();
  layout(key: string): GroupLayout | undefined { return this.map.get(key); }
  put(l: GroupLayout): void {
    if (this.map.size > 4000) this.map.clear();
    this.map.set(l.key, l);
  }
  /** The layout of a group as planned (`n`: the plan's naming of it), in the group's ids. */
  instance(group: string, n: Naming): GroupLayout | undefined {
    const l = this.map.get(n.key);
    if (!l) return undefined;
    const pos: GroupLayout['pos'] = {};
    const edges: GroupLayout['edges'] = {};
    for (let i = 0; i < n.children.length; i++) { const p = l.pos['c' + i]; if (p) pos[n.children[i]] = p; }
    for (let j = 0; j < n.edges.length; j++) { const r = l.edges['e' + j]; if (r) edges[n.edges[j]] = r; }
    return { ...l, group, pos, edges };
  }
}

/**
 * A plan: the namings (keys) of the groups whose layout problem is known, and the jobs of this
 * wave: each distinct key not laid out yet, of groups whose child groups are all laid out (a
 * parent's problem needs their sizes: it is in a later wave). No jobs: every group is laid out.
 */
export interface Plan { jobs: LayoutJob[]; keys: Map<string, Naming> }

/**
 * Plans one wave of layouts for the expanded groups (post-order). The direction is part of the
 * key (a left-right layout is cached beside the top-down one).
 */
export function planLayouts(g: ViewGraph, expanded: ReadonlySet<string>, agg: Map<string, Map<string, AggEdge>>,
                            cache: LayoutCache, ports?: Map<string, Ports>, dir: Direction = 'DOWN'): Plan {
  // Port proxies lie across the main axis: a flat bar on the frame's entry (exit) side.
  const [pw, ph] = dir === 'RIGHT' ? [2, 8] : [8, 2];
  const keys = new Map<string, Naming>();
  const jobs: LayoutJob[] = [];
  const planned = new Set<string>();
  /** The frame size of an expanded group's layout; null while it is not laid out. */
  const visit = (grp: Group): [number, number] | null => {
    const names: string[] = [];
    const children: LayoutChild[] = [];
    const sizes: string[] = [];
    const canon = new Map<string, string>();
    let ready = true;
    const add = (id: string, w: number, h: number, port?: 'in' | 'out'): void => {
      const cid = 'c' + names.length;
      canon.set(id, cid);
      names.push(id);
      children.push(port ? { id: cid, w, h, port } : { id: cid, w, h });
      sizes.push(`${port ? port + ' ' : ''}${w}x${h}`);
    };
    for (const c of grp.children) {
      const cg = g.groups.get(c);
      if (!cg) {
        const n = g.byId.get(c)!;
        add(c, n.width, n.height);
      } else if (expanded.has(c)) {
        const size = visit(cg);
        if (!size) ready = false;
        add(c, size?.[0] ?? 0, size?.[1] ?? 0);
      } else {
        const [w, h] = collapsedGroupSize(cg);
        add(c, w, h);
      }
    }
    const edgeNames: string[] = [];
    const edges: LayoutEdgeIn[] = [];
    const link = (id: string, s: string, t: string): void => {
      edges.push({ id: 'e' + edgeNames.length, s: canon.get(s)!, t: canon.get(t)! });
      edgeNames.push(id);
    };
    for (const e of agg.get(grp.id)?.values() ?? []) link(e.id, e.s, e.t);
    const pp = ports?.get(grp.id);
    if (pp) {
      for (const c of pp.ins) { add(PORT_IN + c, pw, ph, 'in'); link(PORT_IN + c, PORT_IN + c, c); }
      for (const c of pp.outs) { add(PORT_OUT + c, pw, ph, 'out'); link(PORT_OUT + c, c, PORT_OUT + c); }
    }
    if (!ready) return null;
    const key = `${dir === 'DOWN' ? '' : dir}|${sizes.join(',')}|${edges.map((e) => `${e.s.slice(1)}>${e.t.slice(1)}`).join(',')}`;
    keys.set(grp.id, { key, children: names, edges: edgeNames });
    const cached = cache.layout(key);
    if (cached) return frameSize(cached);
    if (!planned.has(key)) {
      planned.add(key);
      const job: LayoutJob = { group: grp.id, key, children, edges };
      if (dir !== 'DOWN') job.dir = dir;
      jobs.push(job);
    }
    return null;
  };
  visit(g.root);
  return { jobs, keys };
}

export class LayoutEngine {
  private workers: Worker[];
  private idleWorkers: Worker[];
  private warm = new Set<Worker>();  // workers that have answered a job (elkjs started)
  private waiters: ((w: Worker) => void)[] = [];
  private inflight = new Map<string, Promise<void>>();  // keys being laid out (by any view)
  private nextId = 1;
  private pending = new Map<number, (r: LayoutResponse) => void>();
  readonly cache = new LayoutCache();
  lastLayoutMs = 0;
  jobsRun = 0;
  /** Jobs laid out on this thread (chains and spines), of jobsRun. */
  quickJobs = 0;

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

  /** An idle worker, a warm one first (a new worker spends its first second starting elkjs). */
  private acquire(): Promise<Worker> {
    const i = this.idleWorkers.findIndex((w) => this.warm.has(w));
    const w = i >= 0 ? this.idleWorkers.splice(i, 1)[0] : this.idleWorkers.pop();
    if (w) return Promise.resolve(w);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(w: Worker): void {
    const next = this.waiters.shift();
    if (next) next(w);
    else this.idleWorkers.push(w);
  }

  private run(w: Worker, jobs: LayoutJob[]): Promise<LayoutResponse> {
    const req: LayoutRequest = { id: this.nextId++, jobs };
    return new Promise<LayoutResponse>((resolve) => {
      this.pending.set(req.id, resolve);
      w.postMessage(req);
    });
  }

  /**
   * Lays out whatever is missing, in waves from the innermost groups out (a group's problem
   * needs its expanded children's sizes); resolves with the naming of every expanded group.
   * Chains and spines (chain.ts, spine.ts) are laid out on this thread at once; the other jobs
   * go to the workers (elkjs) in parallel.
   */
  async ensure(g: ViewGraph, expanded: ReadonlySet<string>, agg: Map<string, Map<string, AggEdge>>,
               ports?: Map<string, Ports>, dir: Direction = 'DOWN'): Promise<Map<string, Naming>> {
    let t0 = -1;
    for (;;) {
      const plan = planLayouts(g, expanded, agg, this.cache, ports, dir);
      if (plan.jobs.length === 0) {
        if (t0 >= 0) {
          this.lastLayoutMs = performance.now() - t0;
          // More workers for later layouts, once this one is drawn (they start elkjs meanwhile).
          if (this.workers.length < this.size) setTimeout(() => this.grow(), 0);
        }
        return plan.keys;
      }
      if (t0 < 0) t0 = performance.now();
      let error: string | null = null;
      await Promise.all(plan.jobs.map(async (job) => {
        const quick = chainLayout(job) ?? spineLayout(job);
        if (quick) {
          this.cache.put(quick);
          this.jobsRun++;
          this.quickJobs++;
          return;
        }
        // (The engine is shared by the panes: another may be laying this problem out already.)
        const other = this.inflight.get(job.key);
        if (other) return other;
        const work = (async () => {
          const w = await this.acquire();
          try {
            if (error !== null || this.cache.layout(job.key)) return;
            const r = await this.run(w, [job]);
            this.warm.add(w);
            if (r.error) error = r.error;
            for (const l of r.layouts) { this.cache.put(l); this.jobsRun++; }
          } finally {
            this.release(w);
          }
        })();
        this.inflight.set(job.key, work);
        try { await work; } finally { this.inflight.delete(job.key); }
      }));
      if (error !== null) throw new Error(error);
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

export function composeScene(g: ViewGraph, expanded: ReadonlySet<string>, keys: Map<string, Naming>,
                             cache: LayoutCache, agg: Map<string, Map<string, AggEdge>>, dir: Direction = 'DOWN',
                             label?: (e: VEdge, twoLines: boolean) => string[]): Scene {
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
    const n = keys.get(grp.id);
    const l = n && cache.instance(grp.id, n);
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
        const lbl = (label ? label(r, dir === 'RIGHT') : edgeLabelLines(r.tensor, dir === 'RIGHT')).join('\n');
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
  const rn = keys.get(g.root.id);
  const root = rn && cache.instance(g.root.id, rn);
  frames.sort((a, b) => a.depth - b.depth);
  return {
    items: [...frames, ...leaves], byId, edges,
    width: root?.width ?? 0, height: root?.height ?? 0, nodesDrawn, groupsDrawn,
  };
}
