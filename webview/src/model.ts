// The view model: one layer of one Cell as a graph of drawable nodes, with the Cell-scope
// hierarchy (collapsible groups) and artificial sub-groups for very wide groups.
import type { Cell, CellSkeleton, FailedCall, HardwareKernel, Node, OptimizedNode, ScopeNodes, ScopeSummary, Tensor } from './protocol';
import { shapeText, tensorBytes } from './format';
import { annotateClasses, scopeClasses } from './groups';
import { vocabOf, type Vocab } from './vocab';
import { fitParallel, frameText } from './parallel';

export type Layer = 'semantic' | 'optimized' | 'hardware';
export const LAYERS: Layer[] = ['semantic', 'optimized', 'hardware'];

export interface VEdge {
  src: string;
  tgt: string;
  output: number;
  tensor: Tensor | undefined;  // the tensor carried (its shape is the edge's label)
}

export function edgeLabel(e: VEdge): string {
  return shapeText(e.tensor);
}

export interface VNode {
  id: string;
  kind: string;
  op: string;
  label: string;     // first line
  sub: string;       // second line (api, fused origins, unit + cycles)
  group: string;     // id of the group holding it
  order: number;     // execution order
  width: number;
  height: number;
  inputs: VEdge[];
  outputs: Tensor[];
  semantic?: Node;
  optimized?: OptimizedNode;
  fused: boolean;
  dataMove: boolean; // TransData / Cast / layout changes
  scope: string;
  weight?: number;   // lazy placeholders (kind "lazy"): the nodes of the scope it stands for
  items?: number;    // lazy placeholders: the scope's own nodes plus its sub-scopes (drawn items once loaded)
  failure?: FailedCall;  // kind "failed": the call of construct an error stopped (id FAILED_PREFIX + its id)
  // kind "removed" (a ghost, id GHOST_PREFIX + its id): a node of a comparison's base that the
  // graph no longer has, drawn where it was; `semantic` is the base's node.
  ghost?: boolean;
}

/** What the drawing of a node depends on (for the before/after comparison). */
export function nodeSig(n: VNode): string {
  return `${n.op}|${n.label}|${n.sub}|${n.outputs.map(shapeText).join(',')}|${frameText(n)}|${n.semantic?.stage ?? ''}`;
}

export interface Group {
  id: string;          // "g:" + scope path; artificial: parent id + "#k"
  path: string;        // "layer1.0" (artificial: the parent's)
  label: string;
  parent: string | null;
  children: string[];  // node ids and group ids, in execution order
  leafCount: number;
  depth: number;
  artificial: boolean;
  order: number;       // first execution step inside
  cls?: string;        // the Cell's class, when the document names it (groups.ts)
}

export interface ViewGraph {
  layer: Layer;
  cell: string;
  nodes: VNode[];
  byId: Map<string, VNode>;
  edges: VEdge[];
  groups: Map<string, Group>;
  root: Group;
  parentOf: Map<string, string>;  // node or group id -> group id
  succ: Map<string, string[]>;
  pred: Map<string, string[]>;
  semanticToOptimized: Map<string, string[]>; // semantic id -> optimized ids (optimized layers)
  vocab: Vocab;  // the hardware layer's words for this Cell's target (vocab.ts)
}

export const ROOT_ID = 'g:';
/** Drawn failed calls (Cell.failures) have this prefix: a failure's id may equal a node's. */
export const FAILED_PREFIX = 'failed:';
/** Drawn removed nodes of a comparison's base (ghosts) have this prefix. */
export const GHOST_PREFIX = 'removed:';
export const GROUP_THRESHOLD_DEFAULT = 400;

const NODE_H = 40;
const NODE_H_HW = 54;

export function nodeWidth(label: string, sub: string): number {
  const chars = Math.max(label.length, sub.length * 0.85);
  return Math.round(Math.min(240, Math.max(96, chars * 6.6 + 28)));
}

/** The Cell path a semantic node belongs to: its scope, or the scope's parent for a leaf-Cell call. */
/** A dtype or layout conversion (Cast, TransData), by the category the server gives the node. */
function movesData(category: string | undefined): boolean {
  return category === 'cast' || category === 'data-move';
}

export function scopeGroupPath(id: string, scope: string): string {
  if (!scope) return '';
  if (id === scope || id.startsWith(scope + '#')) {
    const i = scope.lastIndexOf('.');
    return i < 0 ? '' : scope.slice(0, i);
  }
  return scope;
}

export function totalCycles(ks: readonly HardwareKernel[] | undefined): number {
  let c = 0;
  for (const k of ks ?? []) c += k.cycles ?? 0;
  return c;
}

function edgesOf(inputs: readonly { node: string; output?: number }[] | undefined, tgt: string,
                 outputsOf: (id: string) => Tensor[] | undefined): VEdge[] {
  return (inputs ?? []).map((e) => {
    const out = e.output ?? 0;
    return { src: e.node, tgt, output: out, tensor: outputsOf(e.node)?.[out] };
  });
}

function abbreviate(ops: string[]): string {
  const s = ops.join('+');
  return s.length > 34 ? s.slice(0, 33) + '…' : s;
}

export function buildNodes(cell: Cell, layer: Layer): VNode[] {
  const sem = cell.nodes ?? [];
  const semById = new Map<string, Node>();
  for (const n of sem) semById.set(n.id, n);
  if (layer === 'semantic' || !cell.optimized) {
    const outs = (id: string) => semById.get(id)?.outputs;
    return sem.map((n, i) => {
      const op = n.op ?? '';
      const label = n.kind === 'op' || !n.kind ? op : n.id;
      const sub = n.kind === 'op' || !n.kind ? (n.id.length > 32 ? '…' + n.id.slice(-31) : n.id) : op;
      const scope = n.scope ?? '';
      const v: VNode = {
        id: n.id, kind: n.kind ?? 'op', op, label, sub,
        group: scopeGroupPath(n.id, scope), order: i,
        width: nodeWidth(label, sub), height: NODE_H,
        inputs: edgesOf(n.inputs, n.id, outs), outputs: n.outputs ?? [], semantic: n,
        fused: false, dataMove: movesData(n.category),
        scope,
      };
      fitParallel(v);
      return v;
    });
  }
  const opt = cell.optimized.nodes ?? [];
  const optById = new Map<string, OptimizedNode>();
  for (const n of opt) optById.set(n.id, n);
  const outs = (id: string) => optById.get(id)?.outputs;
  const hw = layer === "hardware";
  const groupOf = new Map<string, string>();
  const res: VNode[] = [];
  opt.forEach((n, i) => {
    const op = n.op ?? '';
    const origins = n.origins ?? [];
    const main = origins.length > 0 ? semById.get(origins[0]) : undefined;
    let group = main ? scopeGroupPath(main.id, main.scope ?? '') : '';
    if (!main) {
      // TransData and other inserted nodes: where their producer lives.
      const src = n.inputs?.[0]?.node;
      group = src !== undefined ? groupOf.get(src) ?? '' : '';
    }
    groupOf.set(n.id, group);
    const fused = origins.length > 1 || (n.pattern ?? '') !== '';
    const label = n.kind === 'op' || !n.kind ? op : n.id;
    let sub: string;
    if (fused) {
      sub = abbreviate(origins.map((o) => semById.get(o)?.op ?? o));
    } else {
      const sid = origins[0] ?? n.id;
      sub = n.kind === 'op' || !n.kind ? (sid.length > 32 ? '…' + sid.slice(-31) : sid) : op;
    }
    if (op === 'TransData') {
      const a = n.attrs ?? {};
      const f = a['src_format'] ?? a['from'], t = a['dst_format'] ?? a['to'];
      if (typeof f === 'string' && typeof t === 'string') sub = `${f} → ${t}`;
      else if (n.outputs?.[0]?.format) sub = `→ ${n.outputs[0].format}`;
    }
    const v: VNode = {
      id: n.id, kind: n.kind ?? 'op', op, label, sub, group, order: i,
      width: hw && (n.hardware?.length ?? 0) > 0 ? Math.max(196, nodeWidth(label, sub)) : nodeWidth(label, sub),
      height: hw ? NODE_H_HW : NODE_H,
      inputs: edgesOf(n.inputs, n.id, outs), outputs: n.outputs ?? [],
      semantic: main, optimized: n, fused,
      dataMove: movesData(n.category),
      scope: main?.scope ?? '',
    };
    fitParallel(v);
    res.push(v);
  });
  return res;
}

/**
 * The drawn nodes of the Cell's failed calls (Cell.failures) in `layer`, given the layer's other
 * nodes: each sits in its scope's group, just after the latest of its inputs, with an edge from
 * each input drawn in the layer. Semantic: the input node itself. Optimized and hardware: the
 * optimized node of the same id, else the first whose origins include it; an input the passes
 * eliminated has no edge.
 */
export function failureNodes(cell: Cell, layer: Layer, nodes: readonly VNode[]): VNode[] {
  const failures = cell.failures ?? [];
  if (failures.length === 0) return [];
  const opt = layer !== 'semantic' && !!cell.optimized;
  const drawn = new Map<string, VNode>();
  const fromOrigin = new Map<string, VNode>();
  for (const n of nodes) {
    if (n.kind === 'lazy' || n.failure) continue;
    drawn.set(n.id, n);
    if (opt) for (const o of n.optimized?.origins ?? []) if (!fromOrigin.has(o)) fromOrigin.set(o, n);
  }
  const semById = new Map<string, Node>();
  for (const n of cell.nodes ?? []) semById.set(n.id, n);
  let last = -1;
  for (const n of nodes) last = Math.max(last, n.order);
  const hw = opt && layer === 'hardware';
  return failures.map((f, k) => {
    const id = FAILED_PREFIX + f.id;
    const inputs: VEdge[] = [];
    const seen = new Set<string>();
    let anchor = -Infinity;
    for (const e of f.inputs ?? []) {
      const out = e.output ?? 0;
      const same = drawn.get(e.node);
      const src = opt ? (same?.optimized ? same : fromOrigin.get(e.node)) : same;
      if (!src) continue;
      const output = src.id === e.node ? out : 0;
      if (seen.has(`${src.id}:${output}`)) continue;
      seen.add(`${src.id}:${output}`);
      // The tensor the call received (the semantic one: a fused kernel's output is the same value).
      inputs.push({ src: src.id, tgt: id, output, tensor: semById.get(e.node)?.outputs?.[out] ?? src.outputs[output] });
      anchor = Math.max(anchor, src.order);
    }
    const label = `${f.id} · ${f.api || f.op || 'call'}`;
    const sub = f.code ? `error: ${f.code}` : 'error';
    const scope = f.scope ?? '';
    return {
      id, kind: 'failed', op: f.op ?? '', label, sub,
      group: scopeGroupPath(f.id, scope),
      // Just after its latest input (evaluation order), else after everything.
      order: (anchor > -Infinity ? anchor : last + 1) + 0.5 + k * 1e-3,
      width: Math.min(260, nodeWidth(label, sub) + 20), height: hw ? NODE_H_HW : NODE_H,
      inputs, outputs: [], fused: false, dataMove: false, scope, failure: f,
    };
  });
}

/**
 * Ghost nodes for the base's nodes a comparison found removed (`removed`, in the base's order),
 * semantic layer: each in its scope's group just after the latest of its inputs still drawn (a
 * node of the graph, or an earlier ghost), with an edge from each of them; a ghost none of whose
 * inputs is drawn goes where the base had it relative to the ghost before it (else first).
 */
export function ghostNodes(removed: readonly Node[], nodes: readonly VNode[]): VNode[] {
  const placed = new Map<string, VNode>();
  for (const n of nodes) if (n.kind !== 'lazy' && !n.failure) placed.set(n.id, n);
  const ghosts: VNode[] = [];
  let last = -1;  // the order of the previous ghost
  removed.forEach((n, k) => {
    const id = GHOST_PREFIX + n.id;
    const inputs: VEdge[] = [];
    let anchor = -Infinity;
    for (const e of n.inputs ?? []) {
      const src = placed.get(e.node) ?? placed.get(GHOST_PREFIX + e.node);
      if (!src) continue;
      const output = e.output ?? 0;
      inputs.push({ src: src.id, tgt: id, output, tensor: src.outputs[output] });
      anchor = Math.max(anchor, src.order);
    }
    const op = n.op ?? '';
    const label = n.kind === 'op' || !n.kind ? op : n.id;
    const sub = n.kind === 'op' || !n.kind ? (n.id.length > 32 ? '…' + n.id.slice(-31) : n.id) : op;
    const scope = n.scope ?? '';
    const v: VNode = {
      id, kind: 'removed', op, label, sub,
      group: scopeGroupPath(n.id, scope),
      order: (anchor > -Infinity ? anchor : last) + 0.25 + k * 1e-4,
      width: nodeWidth(label, sub), height: NODE_H,
      inputs, outputs: n.outputs ?? [], semantic: n, fused: false, dataMove: movesData(n.category),
      scope, ghost: true,
    };
    last = v.order;
    placed.set(id, v);
    ghosts.push(v);
  });
  return ghosts;
}

/** `nodes` with the failed calls' nodes inserted in execution order. */
function withFailures(cell: Cell, layer: Layer, nodes: VNode[]): VNode[] {
  const fs = failureNodes(cell, layer, nodes);
  if (fs.length === 0) return nodes;
  return nodes.concat(fs).sort((a, b) => a.order - b.order);
}

/**
 * Builds the group tree from the nodes' group paths. Groups with a single child are dissolved;
 * groups with more than `threshold` children get artificial sub-groups of consecutive children.
 */
export function buildHierarchy(nodes: VNode[], threshold = GROUP_THRESHOLD_DEFAULT):
    { groups: Map<string, Group>; root: Group; parentOf: Map<string, string> } {
  const groups = new Map<string, Group>();
  const mk = (path: string, parent: string | null): Group => {
    const id = 'g:' + path;
    let g = groups.get(id);
    if (!g) {
      const label = path;
      g = { id, path, label, parent, children: [], leafCount: 0, depth: 0, artificial: false, order: Infinity };
      groups.set(id, g);
      if (parent !== null) groups.get(parent)!.children.push(id);
    }
    return g;
  };
  const root = mk('', null);
  const ensure = (path: string): Group => {
    if (path === '') return root;
    const existing = groups.get('g:' + path);
    if (existing) return existing;
    const i = path.lastIndexOf('.');
    const parent = ensure(i < 0 ? '' : path.slice(0, i));
    return mk(path, parent.id);
  };
  for (const n of nodes) {
    const g = ensure(n.group);
    g.children.push(n.id);
  }
  // Orders (first execution step) and leaf counts, bottom-up.
  const orderOf = new Map<string, number>();
  const weightOf = new Map<string, number>();
  const placeholders = new Set<string>();
  for (const n of nodes) {
    orderOf.set(n.id, n.order);
    if (n.weight !== undefined) weightOf.set(n.id, n.weight);
    if (n.kind === 'lazy') placeholders.add(n.id);
  }
  const visit = (g: Group): void => {
    let order = Infinity, leaves = 0;
    for (const c of g.children) {
      const cg = groups.get(c);
      if (cg) { visit(cg); order = Math.min(order, cg.order); leaves += cg.leafCount; }
      else { order = Math.min(order, orderOf.get(c) ?? Infinity); leaves += weightOf.get(c) ?? 1; }
    }
    g.order = order;
    g.leafCount = leaves;
    orderOf.set(g.id, order);
  };
  visit(root);
  // Dissolve single-child groups (and empty ones) into their parents.
  const dissolve = (g: Group): void => {
    const next: string[] = [];
    for (const c of g.children) {
      let cg = groups.get(c);
      let id = c;
      // A group holding only a lazy placeholder stays: expanding it loads its nodes.
      while (cg && cg.children.length <= 1 && !(cg.children.length === 1 && placeholders.has(cg.children[0]))) {
        groups.delete(cg.id);
        if (cg.children.length === 0) { id = ''; break; }
        id = cg.children[0];
        cg = groups.get(id);
      }
      if (id === '') continue;
      next.push(id);
      if (cg) { cg.parent = g.id; dissolve(cg); }
    }
    g.children = next;
  };
  dissolve(root);
  // Execution order inside each group, then artificial sub-groups for wide groups.
  const split = (g: Group): void => {
    // Children arrive mostly in execution order already: sort only when they are not.
    const ord = g.children.map((c) => orderOf.get(c) ?? 0);
    let sorted = true;
    for (let i = 1; i < ord.length && sorted; i++) if (ord[i] < ord[i - 1]) sorted = false;
    if (!sorted) {
      const idx = ord.map((_, i) => i).sort((a, b) => ord[a] - ord[b]);
      const kids = g.children;
      g.children = idx.map((i) => kids[i]);
    }
    if (g.children.length > threshold) {
      let kids = g.children;
      let level = 0;
      while (kids.length > threshold) {
        const chunks: string[] = [];
        for (let i = 0, k = 0; i < kids.length; i += threshold, k++) {
          const part = kids.slice(i, i + threshold);
          const id = `${g.id}#${level}.${k}`;
          let leaves = 0;
          for (const c of part) leaves += groups.get(c)?.leafCount ?? weightOf.get(c) ?? 1;
          const from = i + 1, to = i + part.length;
          const sg: Group = {
            id, path: g.path, label: `${g.path || 'root'} [${level === 0 ? `${from}–${to}` : `part ${k + 1}`}]`,
            parent: g.id, children: part, leafCount: leaves, depth: 0, artificial: true,
            order: orderOf.get(part[0]) ?? 0,
          };
          groups.set(id, sg);
          orderOf.set(id, sg.order);
          for (const c of part) { const cg = groups.get(c); if (cg) cg.parent = id; }
          chunks.push(id);
        }
        kids = chunks;
        level++;
      }
      g.children = kids;
    }
    for (const c of g.children) { const cg = groups.get(c); if (cg) split(cg); }
  };
  split(root);
  const parentOf = new Map<string, string>();
  const depthWalk = (g: Group, d: number): void => {
    g.depth = d;
    for (const c of g.children) {
      parentOf.set(c, g.id);
      const cg = groups.get(c);
      if (cg) { cg.parent = g.id; depthWalk(cg, d + 1); }
    }
  };
  depthWalk(root, 0);
  return { groups, root, parentOf };
}

/** What the view holds of a lazy Cell (view.proto's CellSkeleton): the scopes loaded so far. */
export interface LazyInput {
  skeleton: CellSkeleton;
  chunks: ReadonlyMap<string, ScopeNodes>;  // loaded scopes ("" always)
  pending: ReadonlySet<string>;             // scopes asked for
}

export const LAZY_PREFIX = 'lazy:';

function parentPath(p: string): string {
  const i = p.lastIndexOf('.');
  return i < 0 ? '' : p.slice(0, i);
}

/**
 * The drawable nodes of a lazy Cell: the loaded nodes (`cell` holds them, in execution order),
 * and one placeholder per scope not loaded whose parent scope is, weighing the nodes inside it.
 * Edges to nodes not loaded go to the placeholder of the outermost scope not loaded around them.
 */
export function buildLazyNodes(cell: Cell, layer: Layer, lz: LazyInput): VNode[] {
  const opt = layer !== 'semantic' && !!cell.optimized;
  const base = buildNodes(cell, layer);
  const index = new Map<string, number>();
  const groupOf = new Map<string, string>();
  for (const [scope, c] of lz.chunks) {
    const list: readonly { id: string }[] = (opt ? c.optimizedNodes : c.nodes) ?? [];
    const ix = (opt ? c.optimizedIndex : c.index) ?? [];
    list.forEach((n, i) => { index.set(n.id, ix[i] ?? 0); groupOf.set(n.id, scope); });
  }
  const loadedIds = new Set<string>();
  for (const v of base) {
    v.order = index.get(v.id) ?? v.order;
    v.group = groupOf.get(v.id) ?? v.group;
    loadedIds.add(v.id);
  }
  const loaded = (p: string): boolean => lz.chunks.has(p);
  // The outermost scope not loaded around `p` (itself when its parent is loaded).
  const rep = (p: string): string => {
    let q = p;
    while (q !== '' && !loaded(parentPath(q))) q = parentPath(q);
    return q;
  };
  const count = (s: ScopeSummary): number => (opt ? s.totalOptimizedNodes : s.totalNodes) ?? 0;
  const subScopes = new Map<string, number>();
  for (const s of lz.skeleton.scopes ?? []) {
    const p = s.scope ?? '';
    if (p !== '' && count(s) > 0) subScopes.set(parentPath(p), (subScopes.get(parentPath(p)) ?? 0) + 1);
  }
  const ph = new Map<string, VNode>();
  for (const s of lz.skeleton.scopes ?? []) {
    const p = s.scope ?? '';
    const n = count(s);
    if (p === '' || loaded(p) || !loaded(parentPath(p)) || n === 0) continue;
    const label = `${n} node${n === 1 ? '' : 's'}`;
    const sub = lz.pending.has(p) ? 'loading…' : 'not loaded';
    ph.set(p, {
      id: LAZY_PREFIX + p, kind: 'lazy', op: '', label, sub, group: p,
      order: (opt ? s.optimizedFirst : s.first) ?? 0, width: nodeWidth(label, sub), height: NODE_H,
      inputs: [], outputs: [], fused: false, dataMove: false, scope: p, weight: n,
      items: ((opt ? s.optimizedNodes : s.nodes) ?? 0) + (subScopes.get(p) ?? 0),
    });
  }
  const seen = new Set<string>();
  const toPlaceholder = (tgtScope: string, src: string, output: number): void => {
    const t = ph.get(rep(tgtScope));
    if (!t || t.id === src || seen.has(src + '\n' + t.id)) return;
    seen.add(src + '\n' + t.id);
    t.inputs.push({ src, tgt: t.id, output, tensor: undefined });
  };
  const remap = new Map<string, string>();
  for (const c of lz.chunks.values()) {
    for (const b of (opt ? c.optimizedBoundary : c.boundary) ?? []) {
      const srcIn = loadedIds.has(b.src);
      const src = srcIn ? b.src : ph.get(rep(b.srcScope ?? ''))?.id;
      if (src === undefined) continue;
      if (!srcIn) remap.set(b.src, src);
      if (!loadedIds.has(b.tgt)) toPlaceholder(b.tgtScope ?? '', src, b.output ?? 0);
    }
  }
  for (const e of (opt ? lz.skeleton.optimizedEdges : lz.skeleton.edges) ?? []) {
    const f = e.from ?? '', t = e.to ?? '';
    if (loaded(f) || loaded(t)) continue;  // the loaded side's boundary has it
    const s = ph.get(rep(f));
    if (s) toPlaceholder(t, s.id, 0);
  }
  for (const v of base) {
    for (const e of v.inputs) {
      if (loadedIds.has(e.src)) continue;
      const r = remap.get(e.src);
      if (r !== undefined) e.src = r;
    }
  }
  const all = base.concat([...ph.values()]);
  all.sort((a, b) => a.order - b.order);
  return all;
}

/**
 * One layer of `cell` as a view graph. `ghosts`: the base's removed nodes of a comparison, drawn
 * in place (semantic layer of a Cell held whole only; see ghostNodes).
 */
export function buildViewGraph(cell: Cell, layer: Layer, threshold = GROUP_THRESHOLD_DEFAULT, lazy?: LazyInput,
                               ghosts?: readonly Node[]): ViewGraph {
  let nodes = withFailures(cell, layer, lazy ? buildLazyNodes(cell, layer, lazy) : buildNodes(cell, layer));
  if (ghosts?.length && layer === 'semantic' && !lazy) nodes = nodes.concat(ghostNodes(ghosts, nodes)).sort((a, b) => a.order - b.order);
  const byId = new Map<string, VNode>();
  for (const n of nodes) byId.set(n.id, n);
  const edges: VEdge[] = [];
  const succ = new Map<string, string[]>();
  const pred = new Map<string, string[]>();
  for (const n of nodes) {
    for (const e of n.inputs) {
      if (!byId.has(e.src)) continue;
      edges.push(e);
      (succ.get(e.src) ?? succ.set(e.src, []).get(e.src)!).push(e.tgt);
      (pred.get(e.tgt) ?? pred.set(e.tgt, []).get(e.tgt)!).push(e.src);
    }
  }
  const { groups, root, parentOf } = buildHierarchy(nodes, threshold);
  annotateClasses(groups.values(), scopeClasses(cell));
  const semanticToOptimized = new Map<string, string[]>();
  if (layer !== 'semantic') {
    for (const n of nodes) for (const o of n.optimized?.origins ?? []) {
      (semanticToOptimized.get(o) ?? semanticToOptimized.set(o, []).get(o)!).push(n.id);
    }
  }
  return { layer, cell: cell.name, nodes, byId, edges, groups, root, parentOf, succ, pred, semanticToOptimized, vocab: vocabOf(cell.hardware) };
}

/** Group ids from the root down to (excluding) the item. */
export function ancestors(g: ViewGraph, id: string): string[] {
  const out: string[] = [];
  let p = g.parentOf.get(id);
  while (p !== undefined) { out.push(p); p = g.parentOf.get(p); }
  return out.reverse();
}

/** The item shown for `id` given the expanded groups: itself, or its outermost collapsed ancestor. */
export function visibleRep(g: ViewGraph, id: string, expanded: ReadonlySet<string>): string {
  const anc = ancestors(g, id);
  for (const a of anc) {
    if (a !== ROOT_ID && !expanded.has(a)) return a;
  }
  return id;
}

/** Counts what is drawn: leaf nodes inside expanded groups, plus one per collapsed group. */
export function countVisible(g: ViewGraph, expanded: ReadonlySet<string>): { nodes: number; groups: number } {
  let nodes = 0, groups = 0;
  const walk = (grp: Group): void => {
    for (const c of grp.children) {
      const cg = g.groups.get(c);
      if (!cg) nodes++;
      else if (expanded.has(c)) walk(cg);
      else groups++;
    }
  };
  walk(g.root);
  return { nodes, groups };
}

/**
 * The groups expanded by default: breadth first from the root, a group opens while the number of
 * drawn items stays under `budget`.
 */
export function defaultExpansion(g: ViewGraph, budget = 320): Set<string> {
  const expanded = new Set<string>();
  let drawn = g.root.children.length;
  let frontier = g.root.children.filter((c) => g.groups.has(c));
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const id of frontier) {
      const grp = g.groups.get(id)!;
      // A lazy group whose nodes are not loaded: what it will draw once they are (wide groups are
      // split into sub-groups of GROUP_THRESHOLD_DEFAULT); opening it asks for them.
      const lazy = grp.children.length === 1 ? g.byId.get(grp.children[0]) : undefined;
      let cost = grp.children.length - 1;
      if (lazy?.kind === 'lazy') {
        let k = lazy.items ?? 1;
        while (k > GROUP_THRESHOLD_DEFAULT) k = Math.ceil(k / GROUP_THRESHOLD_DEFAULT);
        cost = k - 1;
      }
      if (drawn + cost > budget) continue;
      expanded.add(id);
      drawn += cost;
      for (const c of grp.children) if (g.groups.has(c)) next.push(c);
    }
    frontier = next;
  }
  return expanded;
}

export function outputBytes(n: VNode): number {
  let b = 0;
  for (const t of n.outputs) b += tensorBytes(t);
  return b;
}
