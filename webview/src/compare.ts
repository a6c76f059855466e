// Comparing the graph with a fixed base (view.proto's Comparison, computed by the server from the
// two documents): which nodes of a layer to mark added or changed, the base's removed nodes drawn
// in place (ghosts, model.ts's ghostNodes), the banner with the summary, the before→after lines
// of the selected node, and the order to step through the changes. Pure functions.
import type { AttrValue, CellComparison, CellTotals, Comparison, Node, NodeChange } from './protocol';
import type { GraphDiff } from './diff';
import { GHOST_PREFIX, ROOT_ID, type Layer, type ViewGraph } from './model';
import { dimFactor, escapeHtml as h, fmtBytes, fmtNum } from './format';

/** Whether `c` is a comparison in force (a Comparison without a base ends it). */
export function isComparing(c: Comparison | null | undefined): c is Comparison {
  return !!c?.base?.kind;
}

export function baseLabel(c: Comparison): string {
  return c.base?.label || c.base?.spec || 'the base';
}

/** The comparison of Cell `cell` (none while the base is analysed, or when it could not be). */
export function cellComparison(c: Comparison | null | undefined, cell: string): CellComparison | undefined {
  return isComparing(c) ? c.cells?.find((x) => x.cell === cell) : undefined;
}

/**
 * The base's removed nodes to draw in place: the semantic layer of a Cell held whole (a lazy Cell
 * lists them in the banner). The file at HEAD has other line numbers than the file shown: its
 * nodes keep their file but not their range.
 */
export function ghostsFor(c: Comparison, cc: CellComparison | undefined, layer: Layer, lazy: boolean): Node[] | undefined {
  if (!cc || layer !== 'semantic' || lazy || !cc.removed?.length) return undefined;
  if (c.base?.kind !== 'head') return cc.removed;
  return cc.removed.map((n) => {
    const m = { ...n };
    delete m.range;
    return m;
  });
}

function layerLists(cc: CellComparison, layer: Layer): { added: string[]; changed: NodeChange[]; removed: string[] } {
  if (layer === 'semantic') {
    return { added: cc.added ?? [], changed: cc.changed ?? [], removed: (cc.removed ?? []).map((n) => n.id) };
  }
  return { added: cc.optimizedAdded ?? [], changed: cc.optimizedChanged ?? [], removed: cc.optimizedRemoved ?? [] };
}

/**
 * The marks of a comparison in `g` (one layer): added and changed nodes, the removed ids (their
 * ghosts when drawn), and the groups holding any of them (so that a collapsed group shows it
 * hides changes). Nodes are tinted, not only outlined.
 */
export function compareDiff(cc: CellComparison, g: ViewGraph): GraphDiff {
  const lists = layerLists(cc, g.layer);
  const added = new Set(lists.added.filter((id) => g.byId.has(id)));
  const changed = new Set(lists.changed.map((c) => c.id).filter((id) => g.byId.has(id)));
  const groups = new Set<string>();
  const mark = (id: string): void => {
    for (let p = g.parentOf.get(id); p !== undefined && p !== ROOT_ID && !groups.has(p); p = g.parentOf.get(p)) groups.add(p);
  };
  for (const id of added) mark(id);
  for (const id of changed) mark(id);
  for (const id of lists.removed) if (g.byId.has(GHOST_PREFIX + id)) mark(GHOST_PREFIX + id);
  return { added, changed, removed: lists.removed, groups, tint: true };
}

/** What the comparison says of node `id` of the layer: added, changed (with how), removed (a ghost), or nothing. */
export function nodeStatus(cc: CellComparison | undefined, layer: Layer, id: string):
    { status: 'added' | 'changed' | 'removed'; change?: NodeChange } | null {
  if (!cc) return null;
  if (id.startsWith(GHOST_PREFIX)) return { status: 'removed' };
  const lists = layerLists(cc, layer);
  const change = lists.changed.find((c) => c.id === id);
  if (change) return { status: 'changed', change };
  if (lists.added.includes(id)) return { status: 'added' };
  return null;
}

/** A changed field as people read it: "output shape", "kernel_size", "parameters". */
export function fieldLabel(field: string): string {
  if (field.startsWith('attrs.')) return field.slice(6);
  const out = /^outputs\[(\d+)\]\.(\w+)$/.exec(field);
  if (out) return `output${out[1] === '0' ? '' : ' ' + out[1]} ${out[2]}`;
  const names: Record<string, string> = {
    params: 'parameters', flops: 'FLOPs', time_us: 'time', inputs: 'inputs', origins: 'fused from',
  };
  return names[field] ?? field;
}

/** A before or after value of `field`: shapes as the graph writes them, counts abbreviated. */
export function valueText(field: string, v: AttrValue | undefined): string {
  if (v === undefined || v === null) return '—';
  if (field.endsWith('.shape')) return Array.isArray(v) ? (v.length ? v.map((d) => dimFactor(d as number | string | null)).join('×') : '[]') : String(v);
  if (typeof v === 'number') {
    if (field === 'time_us') return `${fmtNum(v)} µs`;
    return fmtNum(v);
  }
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && (field === 'inputs' || field === 'origins')) return v.length ? v.join(', ') : 'none';
  return JSON.stringify(v);
}

export interface ChangeRow { field: string; label: string; before: string; after: string }

export function changeRows(change: NodeChange): ChangeRow[] {
  return (change.changes ?? []).map((f) => ({
    field: f.field, label: fieldLabel(f.field), before: valueText(f.field, f.before), after: valueText(f.field, f.after),
  }));
}

/**
 * The comparison's card for the selected node, at the top of the side panel: added, removed (the
 * base's node, drawn where it was), or changed with a "before → after" line per field; '' for a
 * node the comparison does not mention.
 */
export function compareDetailsHtml(c: Comparison | null, cc: CellComparison | undefined, layer: Layer, id: string | null): string {
  if (!c || !isComparing(c) || !id) return '';
  const st = nodeStatus(cc, layer, id);
  if (!st) return '';
  const label = h(baseLabel(c));
  if (st.status === 'added') {
    return `<section class="compare-card added"><div class="cc-title">Added since ${label}</div><div class="muted">not in the base</div></section>`;
  }
  if (st.status === 'removed') {
    return `<section class="compare-card removed"><div class="cc-title">Removed since ${label}</div><div class="muted">the base's node, drawn where it was</div></section>`;
  }
  const rows = changeRows(st.change!).map((r) =>
    `<tr><th>${h(r.label)}</th><td><span class="before">${h(r.before)}</span> → <span class="after">${h(r.after)}</span></td></tr>`).join('');
  return `<section class="compare-card changed"><div class="cc-title">Changed since ${label}</div><table class="kv cc-rows">${rows}</table></section>`;
}

/** "1.2M → 1.3M (+8.3%)", "1.2M (unchanged)". */
export function deltaText(before: number, after: number, fmt: (v: number) => string = fmtNum): string {
  if (before === after) return `${fmt(after)} (unchanged)`;
  const pct = before !== 0 ? ` (${after > before ? '+' : '−'}${fmtNum(Math.abs((after - before) / before) * 100, 2)}%)` : '';
  return `${fmt(before)} → ${fmt(after)}${pct}`;
}

export interface CompareSummary {
  added: number; removed: number; changed: number;
  /** [label, text] per total that is set on both sides. */
  totals: [string, string][];
}

/** The counts of the layer and the totals: parameters, FLOPs, and latency/memory for the hardware layer. */
export function summarize(cc: CellComparison, layer: Layer): CompareSummary {
  const lists = layerLists(cc, layer);
  const b: CellTotals = cc.before ?? {}, a: CellTotals = cc.after ?? {};
  const totals: [string, string][] = [
    ['params', deltaText(b.params ?? 0, a.params ?? 0)],
    ['FLOPs', deltaText(b.flops ?? 0, a.flops ?? 0)],
  ];
  if (layer !== 'semantic') totals.push(['kernels', deltaText(b.kernels ?? 0, a.kernels ?? 0)]);
  if (layer === 'hardware' && b.hardware && a.hardware) {
    totals.push(['latency', deltaText(b.latencyMs ?? 0, a.latencyMs ?? 0, (v) => `${fmtNum(v)} ms`)]);
    totals.push(['memory', deltaText(b.memoryPeakBytes ?? 0, a.memoryPeakBytes ?? 0, fmtBytes)]);
  } else if (layer === 'optimized') {
    totals.push(['arena', deltaText(b.memoryPeakBytes ?? 0, a.memoryPeakBytes ?? 0, fmtBytes)]);
  }
  return { added: lists.added.length, removed: lists.removed.length, changed: lists.changed.length, totals };
}

export interface BannerContext {
  cell: string;
  layer: Layer;
  drawn: ReadonlySet<string>;  // ids drawn in the pane (ghost ids included)
  position: number;            // the change stepped to (0-based), -1 none
  steps: number;               // changes to step through
}

const CLOSE = `<button type="button" class="cmp-close" title="Stop comparing" aria-label="Stop comparing">×</button>`;

/** The banner under the toolbar while comparing: what with, the summary, the removed nodes, navigation, close. */
export function bannerHtml(c: Comparison, cc: CellComparison | undefined, ctx: BannerContext): string {
  const label = h(baseLabel(c));
  if (c.pending) {
    return `<div class="bt"><span class="cmp-title">Comparing with <b>${label}</b></span> <span class="muted">analysing the base…</span>${CLOSE}</div>`;
  }
  if (c.error) {
    return `<div class="bt"><span class="cmp-title">Cannot compare with <b>${label}</b>:</span> <span class="cmp-error">${h(c.error)}</span>${CLOSE}</div>`;
  }
  const parts: string[] = [`<span class="cmp-title">Comparing with <b>${label}</b></span>`];
  const notes: string[] = [];
  if (!cc) {
    notes.push(`${h(ctx.cell)} is not in the comparison yet`);
  } else {
    const s = summarize(cc, ctx.layer);
    const what = ctx.layer === 'semantic' ? 'nodes' : 'kernels';
    parts.push(`<span class="cmp-counts" title="${what} added, removed and changed"><span class="cmp-add">+${s.added}</span> ` +
      `<span class="cmp-rem">−${s.removed}</span> <span class="cmp-chg">~${s.changed}</span> <span class="muted">${what}</span></span>`);
    for (const [k, v] of s.totals) parts.push(`<span class="cmp-total"><span class="muted">${h(k)}</span> ${h(v)}</span>`);
    if (ctx.steps > 0) {
      const at = ctx.position >= 0 ? `${ctx.position + 1}/${ctx.steps}` : `${ctx.steps} change${ctx.steps === 1 ? '' : 's'}`;
      parts.push(`<span class="cmp-nav"><button type="button" class="cmp-prev" title="Previous change" aria-label="Previous change">‹</button>` +
        `<span class="cmp-at">${at}</span><button type="button" class="cmp-next" title="Next change" aria-label="Next change">›</button></span>`);
    }
    if (!cc.baseCell) notes.push(`${label} has no Cell matching ${h(cc.cell)}: every node is new`);
    else if (cc.baseCell !== cc.cell) notes.push(`compared with ${h(cc.baseCell)} of ${label}`);
  }
  if (c.baseErrors) notes.push(`${label} has ${c.baseErrors} error${c.baseErrors === 1 ? '' : 's'} (${h(c.baseError ?? '')}): its graph may stop early`);
  if (c.removedCells?.length) notes.push(`only in ${label}: ${c.removedCells.map(h).join(', ')}`);
  let html = `<div class="bt">${parts.join('')}${CLOSE}</div>`;
  if (notes.length) html += `<div class="cmp-notes">${notes.map((n) => `<div>${n}</div>`).join('')}</div>`;
  const removed: { id: string; op: string; ghost: boolean }[] = [];
  if (cc && ctx.layer === 'semantic') {
    for (const n of cc.removed ?? []) removed.push({ id: n.id, op: n.op ?? n.kind ?? '', ghost: ctx.drawn.has(GHOST_PREFIX + n.id) });
  } else if (cc) {
    for (const id of cc.optimizedRemoved ?? []) removed.push({ id, op: '', ghost: false });
  }
  if (removed.length) {
    const placed = removed.filter((r) => r.ghost).length;
    const head = placed === removed.length ? 'drawn where they were' : placed ? `${placed} drawn where they were` : 'not drawn in this layer';
    const items = removed.slice(0, 200).map((r) => r.ghost
      ? `<li><a href="#" class="goto" data-id="${h(GHOST_PREFIX + r.id)}">${h(r.id)}</a> <span class="muted">${h(r.op)}</span></li>`
      : `<li><span class="mono">${h(r.id)}</span> <span class="muted">${h(r.op)}</span></li>`).join('');
    const more = removed.length > 200 ? `<li class="muted">… ${removed.length - 200} more</li>` : '';
    html += `<details class="cmp-removed"><summary>Removed (${removed.length}) <span class="muted">${head}</span></summary><ul>${items}${more}</ul></details>`;
  }
  return html;
}

/** The marked items of `g` in execution order (ghosts included): what "next change" steps through. */
export function changeSteps(d: GraphDiff, g: ViewGraph): string[] {
  const out: string[] = [];
  for (const n of g.nodes) if (d.added.has(n.id) || d.changed.has(n.id) || n.ghost) out.push(n.id);
  return out;
}
