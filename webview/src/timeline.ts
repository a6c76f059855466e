// The core timeline: the hardware layer's schedule (HardwareKernel.start_us / time_us / core_ids)
// as a Gantt chart, one row per core the schedule uses (Ascend: AI cores / AIC, vector cores /
// AIV, AI CPU; cpu: CPU cores), one row per DMA channel (HardwareKernel.dma), kernels as bars
// coloured by what bounds them. Linked both ways with the graph: clicking a bar selects its node,
// selecting a node highlights its bars and brings them into view. Canvas-rendered: only the rows
// and bars in view are drawn (binary search per row), sub-pixel bars merge per pixel column.
//
// The pure parts (rows, geometry, zoom, the node links) are exported for test/timeline.test.ts;
// `TimelinePanel` is the dock below the graph that main.ts toggles.
import { attachDragPan } from './dragpan';
import type { Cell, DmaTransfer, HardwareKernel, Range } from './protocol';
import type { Layer } from './model';
import { escapeHtml as h, fmtBytes, fmtNum } from './format';
import { boundDefinition, boundWord, vocabOf } from './vocab';

// ---- the model ---------------------------------------------------------------------------------

export type Bound = 'compute' | 'memory' | 'dispatch' | 'other';
export const BOUNDS: readonly Bound[] = ['compute', 'memory', 'dispatch', 'other'];
export const BOUND_LABEL: Record<Bound, string> = {
  compute: 'compute-bound', memory: 'memory-bound', dispatch: 'dispatch-bound (launch overhead)', other: 'other',
};

/** The colour class of HardwareKernel.bound ("compute" | "memory" | "dispatch" | else). */
export function boundOf(b: string | undefined): Bound {
  return b === 'compute' || b === 'memory' || b === 'dispatch' ? b : 'other';
}

/** One kernel of the schedule, in schedule order (by start). */
export interface TlKernel {
  index: number;
  k: HardwareKernel;
  node: string;      // optimized node id; '' for optimizer updates (no node)
  start: number;     // µs
  end: number;       // µs
  bound: Bound;
  rows: number[];    // rows it has a bar in
  dma: Map<string, { bytes: number; routes: string[] }>;  // per channel, per core
}

/** A row: one core, one unit (no core ids) or one DMA channel; its bars sorted by start. */
export interface TlRow {
  key: string;       // "aic:3", "aiv:0", "aicore:5", "vec:9", "aicpu:0", "cpu:2", "host", "unit:cube", "dma:MTE2"
  label: string;     // "AIC 3"
  section: string;   // TlSection.key
  core: number;      // the core id (-1: a unit or DMA row)
  start: Float64Array;
  end: Float64Array;
  maxEnd: Float64Array;  // running maximum of end (for the binary search of the first visible bar)
  kernel: Int32Array;    // TlKernel.index per bar
  bytes: Float64Array | null;  // DMA rows: bytes per core moved by each bar's kernel on the channel
  maxBytes: number;
  routes: string;        // DMA rows: "GM→L1, GM→UB"
}

export interface TlSection { key: string; title: string; rows: number[] }

export interface TimelineModel {
  cell: Cell;
  ascend: boolean;
  target: string;       // the target's display name
  mode: string;
  statement: string;    // HardwareLayer.statement ("Analytical model: ...")
  kernels: TlKernel[];  // every kernel of the Cell's schedule (loaded ones, for a lazy Cell)
  drawn: number;        // kernels with a duration (the others: host no-ops, unsupported)
  rows: TlRow[];
  sections: TlSection[];
  end: number;          // µs: the schedule's end
  noCoreIds: boolean;   // no kernel carries core ids: one row per unit
  dmaMissing: boolean;  // Ascend, and no kernel carries its DMA transfers (a document without them)
  total: number;        // HardwareLayer.kernels (more than `kernels` in a lazy Cell)
  byNode: Map<string, number[]>;   // optimized node id -> kernel indices
  semToOpt: Map<string, string[]>; // semantic id -> optimized ids whose origins include it
  origin: Map<string, string>;     // optimized id -> its main semantic node (origins[0])
}

export interface RowContext {
  ascend: boolean;
  separated: boolean;  // Ascend separated organisation (AIC/AIV, 910B); false: coupled
  aiCores: number;     // coupled chips: core ids from here on are vector-only cores (310P3)
}

export interface RowSpec { key: string; label: string; section: string; core: number }

interface SectionDef { title: string; order: number }

const SECTIONS: Record<string, SectionDef> = {
  aic: { title: 'AI Core (cube) · AIC', order: 0 },
  aicore: { title: 'AI Core (cube + vector)', order: 0 },
  aiv: { title: 'Vector core · AIV', order: 1 },
  vec: { title: 'Vector core', order: 1 },
  aicpu: { title: 'AI CPU', order: 2 },
  cpu: { title: 'CPU cores', order: 3 },
  host: { title: 'Host', order: 4 },
  unit: { title: 'Units (no core ids)', order: 5 },
  dma: { title: 'DMA channels (per core, over each kernel)', order: 6 },
};

const DMA_ORDER = ['MTE1', 'MTE2', 'MTE3', 'FixPipe'];

/**
 * The core rows a kernel runs on, from its unit and core ids (the schedule's pools: graph.cpp
 * `schedule`). Ascend separated: cube kernels on AIC n, vector kernels on AIV n; coupled: both on
 * AI Core n (ids from `aiCores` on: vector-only cores); AI CPU n; the host. Any other target: CPU
 * core n (its units share the host's cores). No core ids: one row for the unit.
 */
export function coreRows(k: HardwareKernel, ctx: RowContext): RowSpec[] {
  const unit = k.unit ?? '';
  const ids = k.coreIds ?? [];
  if (unit === 'host') return [{ key: 'host', label: 'Host', section: 'host', core: 0 }];
  if (ids.length === 0) return [{ key: 'unit:' + unit, label: unit || '?', section: 'unit', core: -1 }];
  const one = (section: string, prefix: string) => (id: number): RowSpec =>
    ({ key: `${section}:${id}`, label: `${prefix} ${id}`, section, core: id });
  if (!ctx.ascend) return ids.map(one('cpu', 'CPU'));
  if (unit === 'aicpu') return ids.map(one('aicpu', 'AI CPU'));
  if (unit === 'cube' || unit === 'vector') {
    if (ctx.separated) return unit === 'cube' ? ids.map(one('aic', 'AIC')) : ids.map(one('aiv', 'AIV'));
    return ids.map((id) => (ctx.aiCores > 0 && id >= ctx.aiCores ? one('vec', 'Vector core')(id) : one('aicore', 'AI Core')(id)));
  }
  return ids.map((id) => ({ key: `unit:${unit}:${id}`, label: `${unit} ${id}`, section: 'unit', core: id }));
}

/** A kernel's DMA transfers per channel (bytes per core over the kernel, and the routes). */
export function dmaByChannel(dma: readonly DmaTransfer[] | undefined): Map<string, { bytes: number; routes: string[] }> {
  const out = new Map<string, { bytes: number; routes: string[] }>();
  for (const d of dma ?? []) {
    const ch = d.channel ?? '';
    if (!ch) continue;
    let e = out.get(ch);
    if (!e) { e = { bytes: 0, routes: [] }; out.set(ch, e); }
    e.bytes += d.bytes ?? 0;
    const r = `${d.from ?? '?'}→${d.to ?? '?'}`;
    if (!e.routes.includes(r)) e.routes.push(r);
  }
  return out;
}

function specNumber(spec: Record<string, unknown> | undefined, key: string): number {
  const v = spec?.[key];
  return typeof v === 'number' ? v : 0;
}

/** The timeline of a Cell's hardware layer, or null when it has none. */
export function buildTimelineModel(cell: Cell | undefined): TimelineModel | null {
  const hw = cell?.hardware;
  if (!cell || !hw) return null;
  const spec = hw.spec as Record<string, unknown> | undefined;
  const ascend = hw.ascend === true;
  const ctx: RowContext = {
    ascend,
    separated: spec?.['organisation'] === 'separated',
    aiCores: specNumber(spec, 'aiCores'),
  };
  // The kernels with their node, in schedule order.
  const raw: { k: HardwareKernel; node: string }[] = [];
  const semToOpt = new Map<string, string[]>();
  const origin = new Map<string, string>();
  for (const n of cell.optimized?.nodes ?? []) {
    const o = n.origins ?? [];
    if (o.length) origin.set(n.id, o[0]);
    for (const s of o) {
      const l = semToOpt.get(s);
      if (l) l.push(n.id); else semToOpt.set(s, [n.id]);
    }
    for (const k of n.hardware ?? []) raw.push({ k, node: k.node || n.id });
  }
  for (const k of hw.optimizer ?? []) raw.push({ k, node: k.node ?? '' });
  const order = raw.map((_, i) => i).sort((a, b) => (raw[a].k.startUs ?? 0) - (raw[b].k.startUs ?? 0) || a - b);
  const kernels: TlKernel[] = order.map((i, index) => {
    const { k, node } = raw[i];
    const start = k.startUs ?? 0;
    return { index, k, node, start, end: start + Math.max(0, k.timeUs ?? 0), bound: boundOf(k.bound), rows: [], dma: dmaByChannel(k.dma) };
  });
  // Rows.
  interface Acc { spec: RowSpec; start: number[]; end: number[]; kernel: number[]; bytes: number[] | null; routes: Set<string> }
  const acc = new Map<string, Acc>();
  const row = (s: RowSpec, dma: boolean): Acc => {
    let a = acc.get(s.key);
    if (!a) { a = { spec: s, start: [], end: [], kernel: [], bytes: dma ? [] : null, routes: new Set() }; acc.set(s.key, a); }
    return a;
  };
  let end = 0, drawn = 0, withIds = 0, withDma = 0;
  const byNode = new Map<string, number[]>();
  for (const t of kernels) {
    if (t.node) {
      const l = byNode.get(t.node);
      if (l) l.push(t.index); else byNode.set(t.node, [t.index]);
    }
    if ((t.k.coreIds?.length ?? 0) > 0) withIds++;
    if (!(t.end > t.start)) continue;  // host no-ops, unsupported kernels: no time, no bar
    drawn++;
    end = Math.max(end, t.end);
    for (const s of coreRows(t.k, ctx)) {
      const a = row(s, false);
      a.start.push(t.start); a.end.push(t.end); a.kernel.push(t.index);
    }
    if (ascend) {
      if (t.dma.size > 0) withDma++;
      for (const [ch, d] of t.dma) {
        const a = row({ key: 'dma:' + ch, label: ch, section: 'dma', core: -1 }, true);
        a.start.push(t.start); a.end.push(t.end); a.kernel.push(t.index); a.bytes!.push(d.bytes);
        for (const r of d.routes) a.routes.add(r);
      }
    }
  }
  const dmaRank = (ch: string): number => {
    const listed = Array.isArray(spec?.['dmaChannels']) ? (spec!['dmaChannels'] as unknown[]).map(String) : [];
    const i = listed.indexOf(ch);
    if (i >= 0) return i;
    const j = DMA_ORDER.indexOf(ch);
    return j >= 0 ? 100 + j : 200;
  };
  const specs = [...acc.values()].sort((a, b) => {
    const sa = SECTIONS[a.spec.section]?.order ?? 9, sb = SECTIONS[b.spec.section]?.order ?? 9;
    if (sa !== sb) return sa - sb;
    if (a.spec.section === 'dma') return dmaRank(a.spec.label) - dmaRank(b.spec.label) || a.spec.label.localeCompare(b.spec.label);
    return a.spec.core - b.spec.core || a.spec.key.localeCompare(b.spec.key);
  });
  const rows: TlRow[] = [];
  const sections: TlSection[] = [];
  for (const a of specs) {
    const n = a.start.length;
    const idx = a.start.map((_, i) => i);
    idx.sort((x, y) => a.start[x] - a.start[y] || a.kernel[x] - a.kernel[y]);
    const r: TlRow = {
      key: a.spec.key, label: a.spec.label, section: a.spec.section, core: a.spec.core,
      start: new Float64Array(n), end: new Float64Array(n), maxEnd: new Float64Array(n), kernel: new Int32Array(n),
      bytes: a.bytes ? new Float64Array(n) : null, maxBytes: 0, routes: [...a.routes].join(', '),
    };
    let m = -Infinity;
    idx.forEach((j, i) => {
      r.start[i] = a.start[j]; r.end[i] = a.end[j]; r.kernel[i] = a.kernel[j];
      m = Math.max(m, a.end[j]); r.maxEnd[i] = m;
      if (r.bytes && a.bytes) { r.bytes[i] = a.bytes[j]; r.maxBytes = Math.max(r.maxBytes, a.bytes[j]); }
    });
    const ri = rows.length;
    rows.push(r);
    for (let i = 0; i < n; i++) kernels[r.kernel[i]].rows.push(ri);
    let s = sections[sections.length - 1];
    if (!s || s.key !== r.section) {
      s = { key: r.section, title: SECTIONS[r.section]?.title ?? r.section, rows: [] };
      sections.push(s);
    }
    s.rows.push(ri);
  }
  const name = String(spec?.['displayName'] ?? '') || hw.target || '';
  return {
    cell, ascend, target: name, mode: hw.mode ?? '', statement: hw.statement ?? '',
    kernels, drawn, rows, sections, end, noCoreIds: drawn > 0 && withIds === 0, dmaMissing: ascend && drawn > 0 && withDma === 0,
    total: Math.max(hw.kernels ?? 0, kernels.length), byNode, semToOpt, origin,
  };
}

// ---- links with the graph ----------------------------------------------------------------------

/** The kernels of the node selected in a graph of `layer`: its own (optimized, hardware), or
 * those of the kernels made from it (semantic: every optimized node whose origins include it). */
export function kernelsForSelection(m: TimelineModel, id: string | null, layer: Layer): number[] {
  if (!id) return [];
  const own = m.byNode.get(id);
  if (layer !== 'semantic') return own ? [...own] : [];
  const out: number[] = [];
  for (const o of m.semToOpt.get(id) ?? []) out.push(...(m.byNode.get(o) ?? []));
  return [...new Set(out)].sort((a, b) => a - b);
}

/** The node to select in a graph of `layer` for a kernel: the optimized node, or its main
 * semantic node (origins[0]) in the semantic layer; null for an optimizer update. */
export function graphNodeForKernel(m: TimelineModel, index: number, layer: Layer): string | null {
  const k = m.kernels[index];
  if (!k || !k.node) return null;
  if (layer !== 'semantic') return k.node;
  return m.origin.get(k.node) ?? null;
}

/** Where a kernel comes from in the source: its main semantic node's file and range. */
export function kernelSource(m: TimelineModel, index: number): { file: string; range: Range | undefined } | null {
  const k = m.kernels[index];
  const sid = k ? m.origin.get(k.node) : undefined;
  if (!sid) return null;
  const n = m.cell.nodes?.find((x) => x.id === sid);
  const file = n?.file || m.cell.file;
  return n && file ? { file, range: n.range } : null;
}

// ---- geometry and zoom -------------------------------------------------------------------------

/** The time window shown, in µs, mapped onto a plot `width` pixels wide. */
export interface TimeWindow { t0: number; t1: number }

export const MIN_SPAN_US = 0.05;

export function xOf(w: TimeWindow, width: number, t: number): number {
  return ((t - w.t0) / (w.t1 - w.t0)) * width;
}

export function tOf(w: TimeWindow, width: number, x: number): number {
  return w.t0 + (x / width) * (w.t1 - w.t0);
}

/** A bar's horizontal extent in plot pixels: at least 1 px wide. */
export function barX(w: TimeWindow, width: number, start: number, end: number): { x: number; w: number } {
  const x0 = xOf(w, width, start), x1 = xOf(w, width, end);
  return { x: x0, w: Math.max(1, x1 - x0) };
}

/** The whole schedule with a small margin. */
export function fitWindow(total: number): TimeWindow {
  const span = total > 0 ? total * 1.02 : 1;
  return { t0: -span * 0.01, t1: span * 0.99 };
}

/** The window kept inside the schedule (a 5 % margin) and between MIN_SPAN_US and the whole. */
export function clampWindow(w: TimeWindow, total: number): TimeWindow {
  const whole = fitWindow(total);
  const maxSpan = whole.t1 - whole.t0;
  const span = Math.min(maxSpan, Math.max(MIN_SPAN_US, w.t1 - w.t0));
  const lo = -span * 0.05, hi = Math.max(lo, Math.max(total, 0) + span * 0.05 - span);
  const t0 = Math.min(hi, Math.max(lo, w.t0));
  return { t0, t1: t0 + span };
}

/** Zooms by `factor` (> 1: in) keeping the time under plot x `anchorX` where it is. */
export function zoomWindow(w: TimeWindow, factor: number, anchorX: number, width: number, total: number): TimeWindow {
  const t = tOf(w, width, anchorX);
  const span = (w.t1 - w.t0) / factor;
  const clamped = Math.min(fitWindow(total).t1 - fitWindow(total).t0, Math.max(MIN_SPAN_US, span));
  const t0 = t - (anchorX / width) * clamped;
  return clampWindow({ t0, t1: t0 + clamped }, total);
}

/** Pans by `dx` plot pixels (positive: the bars move right, earlier times come into view). */
export function panWindow(w: TimeWindow, dx: number, width: number, total: number): TimeWindow {
  const dt = (dx / width) * (w.t1 - w.t0);
  return clampWindow({ t0: w.t0 - dt, t1: w.t1 - dt }, total);
}

/** The window moved (never zoomed in; zoomed out only if it is narrower) so that [start, end]
 * lies inside it with a margin; unchanged when it already does. */
export function revealWindow(w: TimeWindow, start: number, end: number, total: number): TimeWindow {
  const span = w.t1 - w.t0;
  const m = span * 0.05;
  if (start >= w.t0 + m && end <= w.t1 - m) return w;
  const need = (end - start) * 1.25;
  const s = Math.max(span, need);
  const c = (start + end) / 2;
  return clampWindow({ t0: c - s / 2, t1: c + s / 2 }, total);
}

/** A 1-2-5 step giving ticks at least `minPx` apart. */
export function niceStep(span: number, width: number, minPx = 90): number {
  const raw = (span * minPx) / Math.max(1, width);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** A time for a tick `step` apart: µs for steps under 100 µs, else ms; as many decimals as the step needs. */
export function fmtTick(t: number, step: number): string {
  if (Math.abs(t) < step * 1e-6) return '0';
  const dec = (s: number): number => Math.max(0, Math.min(6, -Math.floor(Math.log10(s) + 1e-9)));
  if (step >= 100) return `${(t / 1000).toFixed(dec(step / 1000))} ms`;
  return `${t.toFixed(dec(step))} µs`;
}

export interface Tick { t: number; x: number; label: string }

export function ticks(w: TimeWindow, width: number, minPx = 90): Tick[] {
  const step = niceStep(w.t1 - w.t0, width, minPx);
  const out: Tick[] = [];
  for (let t = Math.ceil(w.t0 / step) * step; t <= w.t1 && out.length < 1000; t += step) {
    const v = Math.round(t / step) * step;
    out.push({ t: v, x: xOf(w, width, v), label: fmtTick(v, step) });
  }
  return out;
}

/** A duration or instant: µs under 1 ms, else ms. */
export function fmtUs(us: number): string {
  return Math.abs(us) >= 1000 ? `${fmtNum(us / 1000)} ms` : `${fmtNum(us)} µs`;
}

/** The first bar of `row` that ends at or after `t` (row.length when none). */
export function firstBarEndingAfter(row: TlRow, t: number): number {
  let lo = 0, hi = row.start.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (row.maxEnd[mid] < t) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/** The first bar of `row` that starts at or after `t`. */
export function firstBarStartingAt(row: TlRow, t: number): number {
  let lo = 0, hi = row.start.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (row.start[mid] < t) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/** The bar of `row` under time `t` (within `tol` µs of it: bars a pixel wide), or -1. */
export function barAt(row: TlRow, t: number, tol = 0): number {
  let best = -1, bestD = Infinity;
  for (let i = firstBarEndingAfter(row, t - tol); i < row.start.length && row.start[i] <= t + tol; i++) {
    const d = t < row.start[i] ? row.start[i] - t : t > row.end[i] ? t - row.end[i] : 0;
    if (d <= tol && d < bestD) { best = i; bestD = d; }
    if (d === 0) break;
  }
  return best;
}

/** One line per fact of a kernel, for the tooltip and the announcement. */
export function kernelTip(m: TimelineModel, index: number, row?: TlRow): string {
  const t = m.kernels[index];
  if (!t) return '';
  const k = t.k;
  const ids = k.coreIds ?? [];
  const cores = ids.length === 0 ? 'no core ids'
    : ids.length === 1 ? `core ${ids[0]}`
    : ids.every((c, i) => i === 0 || c === ids[i - 1] + 1) ? `${ids.length} cores (${ids[0]}–${ids[ids.length - 1]})`
    : `${ids.length} cores (${ids.slice(0, 6).join(', ')}${ids.length > 6 ? ', …' : ''})`;
  const lines = [
    `${k.name ?? '?'} · ${t.node || '(optimizer update)'} · kernel ${index + 1} of ${m.kernels.length}`,
    `unit ${k.unit ?? '?'} · ${cores} · block dim ${k.blockDim ?? ids.length}`,
    `start ${fmtUs(t.start)} · duration ${fmtUs(t.end - t.start)}`,
    `bound ${boundWord(vocabOf({ ascend: m.ascend }), k.bound) || '?'} · ${fmtNum(k.cycles ?? 0)} cycles per core (compute ${fmtNum(k.computeCycles ?? 0)}, movement ${fmtNum(k.movementCycles ?? 0)})`,
  ];
  if (row?.section === 'dma') {
    const d = t.dma.get(row.label);
    if (d) lines.push(`${row.label} ${d.routes.join(', ')}: ${fmtBytes(Math.round(d.bytes))} per core over the kernel`);
  }
  if (k.phase && k.phase !== 'forward') lines.push(`phase ${k.phase}`);
  return lines.join('\n');
}

// ---- the dock ----------------------------------------------------------------------------------

export interface TimelineCallbacks {
  /** A bar was clicked or stepped to (keyboard): select its node in the graph. */
  onPick(m: TimelineModel, index: number): void;
  /** Double-click or Enter on the selected bar: reveal its source line. */
  onReveal(m: TimelineModel, index: number): void;
  /** The dock was opened or closed (from its own close button too). */
  onToggle(open: boolean): void;
  /** The selected kernel's source link (panel.ts sourceLink), '' when none. */
  sourceLink(file: string, range: Range | undefined): string;
}

export interface Colors { bg: string; fg: string; muted: string; border: string; accent: string; stripe: string; barText: string; bound: Record<Bound, string> }

interface RowLayout { kind: 'section' | 'row'; index: number; y: number; h: number }

const GUTTER = 96;     // row labels
const AXIS = 20;       // time axis
const SECTION_H = 16;
const SCROLLBAR = 8;
const NARROW = 560;     // px: below, the compact header

export class TimelinePanel {
  readonly host: HTMLDivElement;
  readonly button: HTMLButtonElement;
  readonly canvas: HTMLCanvasElement;
  model: TimelineModel | null = null;
  open = false;
  win: TimeWindow = { t0: 0, t1: 1 };
  scrollY = 0;
  /** Kernel indices highlighted (the selected node's), and the one announced. */
  selected: number[] = [];
  focus = -1;
  hover: { row: number; kernel: number } | null = null;
  frames = 0;
  lastPaintMs = 0;
  barsPainted = 0;
  private selSet = new Set<number>();
  private selKey = '';     // the selection the highlight was computed for ('' : recompute)
  private shownKey = '';   // the selection last brought into view (a new one is, an edit does not)
  private picked = -1;
  private cell: Cell | undefined;
  private layout: RowLayout[] = [];
  private contentH = 0;
  private rowH = 14;
  private head: HTMLDivElement;
  private meta: HTMLSpanElement;
  private sel: HTMLDivElement;
  private body: HTMLDivElement;
  readonly tip: HTMLDivElement;
  private dirty = false;
  private fitted = false;

  constructor(private cb: TimelineCallbacks) {
    this.host = document.createElement('div');
    this.host.className = 'tl hidden';
    this.host.setAttribute('role', 'region');
    this.host.setAttribute('aria-label', 'Core timeline');
    const grip = document.createElement('div');
    grip.className = 'tl-resize';
    grip.tabIndex = 0;
    grip.setAttribute('role', 'separator');
    grip.setAttribute('aria-orientation', 'horizontal');
    grip.setAttribute('aria-label', 'Resize the timeline (arrow keys)');
    grip.title = 'Drag to resize the timeline';
    this.head = document.createElement('div');
    this.head.className = 'tl-head';
    this.head.innerHTML = `<span class="tl-title">Core timeline</span><span class="tl-meta"></span>` +
      `<span class="tl-est" title="">analytical estimate, not a measurement</span>` +
      `<span class="tl-legend">${BOUNDS.map((b) => `<span class="chip"><i class="b-${b}"></i><span class="bw" data-bound="${b}">${h(b === 'other' ? 'other' : b + '-bound')}</span></span>`).join('')}</span>` +
      `<span class="tl-tools"><button type="button" class="btn" data-act="out" title="Zoom out (-)" aria-label="Zoom out">−</button>` +
      `<button type="button" class="btn" data-act="in" title="Zoom in (+)" aria-label="Zoom in">+</button>` +
      `<button type="button" class="btn" data-act="fit" title="The whole schedule (0)">Fit</button>` +
      `<button type="button" class="btn" data-act="close" title="Close the timeline" aria-label="Close the timeline">×</button></span>`;
    this.meta = this.head.querySelector<HTMLSpanElement>('.tl-meta')!;
    this.sel = document.createElement('div');
    this.sel.className = 'tl-sel';
    this.sel.setAttribute('aria-live', 'polite');
    this.body = document.createElement('div');
    this.body.className = 'tl-body';
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'tl-canvas';
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'application');
    this.canvas.setAttribute('aria-roledescription', 'timeline');
    this.canvas.setAttribute('aria-label', 'Core timeline. Left and right arrows: previous or next kernel; up and down: scroll rows; + and -: zoom; 0: the whole schedule; Enter: reveal the source line');
    this.tip = document.createElement('div');
    this.tip.className = 'tl-tip hidden';
    this.body.append(this.canvas, this.tip);
    this.host.append(grip, this.head, this.sel, this.body);
    this.button = document.createElement('button');
    this.button.type = 'button';
    this.button.className = 'btn';
    this.button.textContent = 'Timeline';
    this.button.setAttribute('aria-pressed', 'false');
    this.button.addEventListener('click', () => this.setOpen(!this.open));
    this.head.addEventListener('click', (e) => {
      const b = (e.target as HTMLElement).closest<HTMLButtonElement>('button[data-act]');
      if (!b) return;
      const act = b.dataset.act;
      if (act === 'in') this.zoom(1.5);
      else if (act === 'out') this.zoom(1 / 1.5);
      else if (act === 'fit') this.fit();
      else if (act === 'close') { this.setOpen(false); this.button.focus(); }
    });
    new ResizeObserver(() => this.invalidate()).observe(this.body);
    // A narrow dock (a VS Code panel beside the editor): a one-line header, the bound colours
    // left to the bars' tooltips, so that the chart keeps its height.
    new ResizeObserver(() => this.host.classList.toggle('narrow', this.host.clientWidth < NARROW)).observe(this.host);
    this.bindInput();
    this.bindResize(grip);
    this.syncButton();
  }

  // ---- state -----------------------------------------------------------------------------------

  setOpen(on: boolean): void {
    if (on && !this.model) on = false;
    if (on === this.open) { this.syncButton(); return; }
    this.open = on;
    this.host.classList.toggle('hidden', !on);
    this.syncButton();
    if (on) {
      this.relayout();
      if (!this.fitted) this.fit();
      this.scrollToSelection();
      this.invalidate();
    } else this.hideTip();
    this.cb.onToggle(on);
  }

  private syncButton(): void {
    const m = this.model;
    this.button.disabled = !m;
    this.button.classList.toggle('on', this.open);
    this.button.setAttribute('aria-pressed', String(this.open));
    this.button.title = !m
      ? 'Core timeline: needs the hardware layer (an Ascend or cpu target)'
      : `Core timeline: the hardware layer's kernel schedule, one row per ${m.noCoreIds ? 'unit' : 'core'}${m.ascend && !m.dmaMissing ? ' and DMA channel' : ''} (analytical estimate, not a measurement)`;
  }

  /**
   * The Cell shown and the graph's selection (in a graph of `layer`): rebuilds the rows when the
   * Cell changed, highlights the selected node's bars, and brings them into view when the
   * selection is new (not when it came from a click on one of its bars).
   */
  update(cell: Cell | undefined, selection: string | null, layer: Layer): void {
    if (cell !== this.cell) {
      this.cell = cell;
      const before = this.model;
      this.model = buildTimelineModel(cell);
      if (!this.model) {
        if (this.open) this.setOpen(false);
      } else if (!before || !this.fitted || before.cell.name !== this.model.cell.name) {
        this.win = fitWindow(this.model.end);
        this.fitted = this.open;
      } else {
        this.win = clampWindow(this.win, this.model.end);
      }
      this.relayout();
      this.selKey = '';  // kernel indices changed
      this.updateMeta();
      this.syncButton();
    }
    const m = this.model;
    const key = `${layer}|${selection ?? ''}`;
    if (!m || key === this.selKey) { this.invalidate(); return; }
    this.selKey = key;
    const ks = kernelsForSelection(m, selection, layer);
    if (!selection && this.picked >= 0 && !m.kernels[this.picked]?.node) {
      // An optimizer update picked on the timeline: it has no node, the graph selects nothing.
      this.setSelected([this.picked], this.picked, false, null);
      return;
    }
    const focus = ks.includes(this.picked) ? this.picked : ks.find((i) => m.kernels[i].end > m.kernels[i].start) ?? ks[0] ?? -1;
    const reveal = focus >= 0 && focus !== this.picked && key !== this.shownKey;
    this.shownKey = key;
    this.picked = -1;
    this.setSelected(ks, focus, reveal, selection);
  }

  private setSelected(ks: number[], focus: number, reveal: boolean, selection: string | null): void {
    this.selected = ks;
    this.selSet = new Set(ks);
    this.focus = focus;
    if (reveal && this.open) this.scrollToSelection();
    this.announce(selection);
    this.invalidate();
  }

  private updateMeta(): void {
    const m = this.model;
    if (!m) { this.meta.textContent = ''; return; }
    const parts = [m.target];
    if (m.mode) parts.push(m.mode);
    parts.push(m.total > m.kernels.length ? `${m.kernels.length} of ${m.total} kernels loaded` : `${m.kernels.length} kernels`);
    parts.push(`ends at ${fmtUs(m.end)}`);
    if (m.drawn < m.kernels.length) parts.push(`${m.kernels.length - m.drawn} without time not drawn`);
    if (m.noCoreIds) parts.push('no core ids in this model: one row per unit');
    else if (m.ascend && m.dmaMissing) parts.push('DMA transfers not in this document');
    this.meta.textContent = parts.join(' · ');
    const est = this.head.querySelector<HTMLElement>('.tl-est');
    if (est) est.title = m.statement;
    // The bound words in the target's vocabulary (a cpu target's launch cost is the executor's overhead).
    const voc = vocabOf({ ascend: m.ascend });
    for (const e of this.head.querySelectorAll<HTMLElement>('.tl-legend .bw')) {
      const b = e.dataset.bound as Bound;
      if (b === 'other') continue;
      e.textContent = `${boundWord(voc, b)}-bound`;
      e.title = boundDefinition(voc, b);
    }
  }

  /** The announcement (aria-live): the selected kernel, or what the selection has. */
  private announce(selection: string | null): void {
    const m = this.model;
    if (!m) { this.sel.textContent = ''; return; }
    const f = this.focus >= 0 ? m.kernels[this.focus] : undefined;
    if (!f) {
      this.sel.innerHTML = selection
        ? `<b>${h(selection)}</b>: no kernel of its own in the schedule`
        : '<span class="muted">Click a bar to select its node · ←/→ previous/next kernel · wheel or +/− zoom · drag to pan · 0 whole schedule</span>';
      return;
    }
    const k = f.k;
    const cores = (k.coreIds?.length ?? 0) || k.blockDim || 0;
    const src = kernelSource(m, f.index);
    const link = src ? this.cb.sourceLink(src.file, src.range) : '';
    const more = this.selected.length > 1 ? ` <span class="muted">(${this.selected.length} kernels: ${[...new Set(this.selected.map((i) => m.kernels[i].k.phase || 'forward'))].join(', ')})</span>` : '';
    this.sel.innerHTML = `Selected <b>${h(k.name ?? '')}</b> <span class="mono">${h(f.node || '(optimizer update)')}</span> · ${h(k.unit ?? '')} · ` +
      `${cores} core${cores === 1 ? '' : 's'} · ${h(fmtUs(f.start))} → ${h(fmtUs(f.end))} (${h(fmtUs(f.end - f.start))}) · ` +
      `<span class="tl-bound b-${f.bound}">${h(boundWord(vocabOf({ ascend: m.ascend }), k.bound))}</span>${more}${link ? ' · ' + link : ''}`;
  }

  // ---- layout ----------------------------------------------------------------------------------

  private plotW(): number { return Math.max(10, this.body.clientWidth - GUTTER - SCROLLBAR); }
  private viewH(): number { return Math.max(1, this.body.clientHeight - AXIS); }

  /** Row height: fit the rows into the pane when they fit at 7 px or more (at most 18 px). */
  private relayout(): void {
    const m = this.model;
    this.layout = [];
    if (!m) { this.contentH = 0; return; }
    const avail = this.viewH() - m.sections.length * SECTION_H - 2;
    this.rowH = Math.max(7, Math.min(18, Math.floor(avail / Math.max(1, m.rows.length))));
    let y = 0;
    m.sections.forEach((s, si) => {
      this.layout.push({ kind: 'section', index: si, y, h: SECTION_H });
      y += SECTION_H;
      for (const r of s.rows) { this.layout.push({ kind: 'row', index: r, y, h: this.rowH }); y += this.rowH; }
    });
    this.contentH = y;
    this.scrollY = Math.max(0, Math.min(this.scrollY, this.contentH - this.viewH()));
  }

  private rowY(row: number): number {
    for (const l of this.layout) if (l.kind === 'row' && l.index === row) return l.y;
    return 0;
  }

  private scrollTo(y: number): void {
    const next = Math.max(0, Math.min(y, this.contentH - this.viewH()));
    if (next !== this.scrollY) { this.scrollY = next; this.invalidate(); }
  }

  /** Pans the time axis and scrolls the rows so that the focused kernel's first bar is in view. */
  scrollToSelection(): void {
    const m = this.model;
    const f = this.focus >= 0 ? m?.kernels[this.focus] : undefined;
    if (!m || !f || !(f.end > f.start)) return;
    this.win = revealWindow(this.win, f.start, f.end, m.end);
    const r = f.rows[0];
    if (r !== undefined) {
      const y = this.rowY(r), vh = this.viewH();
      if (y < this.scrollY || y + this.rowH > this.scrollY + vh) this.scrollTo(y - SECTION_H - 4);
    }
    this.invalidate();
  }

  // ---- camera ----------------------------------------------------------------------------------

  fit(): void {
    if (!this.model) return;
    this.win = fitWindow(this.model.end);
    this.fitted = true;
    this.invalidate();
  }

  /** Zooms at plot x `anchorX`; without one, at the focused kernel when it is in view, else the centre. */
  zoom(f: number, anchorX?: number): void {
    const m = this.model;
    if (!m) return;
    const w = this.plotW();
    let at = anchorX;
    const k = this.focus >= 0 ? m.kernels[this.focus] : undefined;
    if (at === undefined && k && k.end > this.win.t0 && k.start < this.win.t1) {
      at = Math.max(0, Math.min(w, xOf(this.win, w, (Math.max(k.start, this.win.t0) + Math.min(k.end, this.win.t1)) / 2)));
    }
    this.win = zoomWindow(this.win, f, at ?? w / 2, w, m.end);
    this.invalidate();
  }

  pan(dx: number, dy = 0): void {
    if (!this.model) return;
    this.win = panWindow(this.win, dx, this.plotW(), this.model.end);
    if (dy) this.scrollTo(this.scrollY - dy); else this.invalidate();
  }

  // ---- input -----------------------------------------------------------------------------------

  private hit(cx: number, cy: number): { row: number; kernel: number; bar: number } | null {
    const m = this.model;
    if (!m) return null;
    const r = this.canvas.getBoundingClientRect();
    const x = cx - r.left - GUTTER, y = cy - r.top - AXIS + this.scrollY;
    if (x < 0 || x > this.plotW() || cy - r.top < AXIS) return null;
    const l = this.layout.find((it) => y >= it.y && y < it.y + it.h);
    if (!l || l.kind !== 'row') return null;
    const row = m.rows[l.index];
    const t = tOf(this.win, this.plotW(), x);
    const tol = (3 / this.plotW()) * (this.win.t1 - this.win.t0);
    const b = barAt(row, t, tol);
    return b < 0 ? null : { row: l.index, kernel: row.kernel[b], bar: b };
  }

  private pick(index: number): void {
    const m = this.model;
    if (!m || !m.kernels[index]) return;
    this.picked = index;
    this.selKey = '';  // the next update recomputes the highlight around this kernel
    if (!m.kernels[index].node) {
      // No node: the timeline's own selection.
      this.setSelected([index], index, false, null);
    } else {
      this.focus = index;
      this.invalidate();
    }
    this.cb.onPick(m, index);
  }

  private bindInput(): void {
    const c = this.canvas;
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      this.hideTip();
      const r = c.getBoundingClientRect();
      const inGutter = e.clientX - r.left < GUTTER;
      if (inGutter || e.altKey) { this.scrollTo(this.scrollY + (e.deltaY || e.deltaX)); return; }
      if (!e.shiftKey && Math.abs(e.deltaY) >= Math.abs(e.deltaX)) {
        this.zoom(Math.exp(-e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0018)), e.clientX - r.left - GUTTER);
      } else {
        this.pan(-(e.deltaX || e.deltaY));
      }
    }, { passive: false });
    const dragging = attachDragPan(c, {
      hover: (x, y) => this.hoverAt(x, y),
      dragStart: () => this.hideTip(),
      pan: (dx, dy) => this.pan(dx, dy),
      click: (x, y) => {
        c.focus();
        const hit = this.hit(x, y);
        if (hit) this.pick(hit.kernel);
      },
    });
    c.addEventListener('pointerleave', () => { if (!dragging()) this.hideTip(); });
    c.addEventListener('dblclick', (e) => {
      const hit = this.hit(e.clientX, e.clientY);
      if (hit && this.model) this.cb.onReveal(this.model, hit.kernel);
    });
    c.addEventListener('keydown', (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey || !this.model) return;
      const m = this.model;
      switch (e.key) {
        case '+': case '=': this.zoom(1.25); break;
        case '-': case '_': this.zoom(0.8); break;
        case '0': this.fit(); break;
        case 'ArrowLeft': case 'ArrowRight': {
          const dir = e.key === 'ArrowRight' ? 1 : -1;
          let i = this.focus >= 0 ? this.focus + dir : dir > 0 ? 0 : m.kernels.length - 1;
          while (i >= 0 && i < m.kernels.length && !(m.kernels[i].end > m.kernels[i].start)) i += dir;
          if (i >= 0 && i < m.kernels.length) { this.pick(i); this.focus = i; this.scrollToSelection(); }
          break;
        }
        case 'ArrowUp': this.scrollTo(this.scrollY - this.rowH * 3); break;
        case 'ArrowDown': this.scrollTo(this.scrollY + this.rowH * 3); break;
        case 'PageUp': this.scrollTo(this.scrollY - this.viewH()); break;
        case 'PageDown': this.scrollTo(this.scrollY + this.viewH()); break;
        case 'Home': { const s = this.win.t1 - this.win.t0; this.win = clampWindow({ t0: -s, t1: 0 }, m.end); this.invalidate(); break; }
        case 'End': { const s = this.win.t1 - this.win.t0; this.win = clampWindow({ t0: m.end, t1: m.end + s }, m.end); this.invalidate(); break; }
        case 'Enter': if (this.focus >= 0) this.cb.onReveal(m, this.focus); break;
        default: return;
      }
      // The graph's own keys (window listener) must not act on these too.
      e.preventDefault();
      e.stopPropagation();
    });
  }

  private bindResize(grip: HTMLElement): void {
    const setH = (px: number): void => {
      const parent = this.host.parentElement?.clientHeight ?? 800;
      const hgt = Math.round(Math.max(120, Math.min(parent * 0.8, px)));
      this.host.style.height = hgt + 'px';
      grip.setAttribute('aria-valuenow', String(hgt));
      this.relayout();
      this.invalidate();
    };
    let start: { y: number; h: number } | null = null;
    grip.addEventListener('pointerdown', (e) => {
      start = { y: e.clientY, h: this.host.getBoundingClientRect().height };
      grip.setPointerCapture(e.pointerId);
      e.preventDefault();
    });
    grip.addEventListener('pointermove', (e) => { if (start) setH(start.h + start.y - e.clientY); });
    grip.addEventListener('pointerup', () => { start = null; });
    grip.addEventListener('keydown', (e) => {
      const hh = this.host.getBoundingClientRect().height;
      if (e.key === 'ArrowUp') setH(hh + 24);
      else if (e.key === 'ArrowDown') setH(hh - 24);
      else return;
      e.preventDefault();
      e.stopPropagation();
    });
  }

  private hoverAt(cx: number, cy: number): void {
    const m = this.model;
    const hit = this.hit(cx, cy);
    const before = this.hover;
    this.hover = hit ? { row: hit.row, kernel: hit.kernel } : null;
    if (!m || !hit) { this.hideTip(); } else {
      const text = kernelTip(m, hit.kernel, m.rows[hit.row]) + `\nrow ${m.rows[hit.row].label}`;
      if (this.tip.textContent !== text) this.tip.textContent = text;
      this.tip.classList.remove('hidden');
      const br = this.body.getBoundingClientRect();
      const w = this.tip.offsetWidth, hh = this.tip.offsetHeight;
      let x = cx - br.left + 14, y = cy - br.top + 14;
      if (x + w > br.width - 4) x = Math.max(4, cx - br.left - 14 - w);
      if (y + hh > br.height - 4) y = Math.max(4, cy - br.top - 10 - hh);
      this.tip.style.left = `${x}px`;
      this.tip.style.top = `${y}px`;
    }
    if (before?.kernel !== this.hover?.kernel || before?.row !== this.hover?.row) this.invalidate();
  }

  private hideTip(): void {
    if (!this.tip.classList.contains('hidden')) this.tip.classList.add('hidden');
    if (this.hover) { this.hover = null; this.invalidate(); }
  }

  // ---- painting --------------------------------------------------------------------------------

  invalidate(): void {
    if (this.dirty || !this.open) return;
    this.dirty = true;
    requestAnimationFrame(() => { if (this.dirty) this.paint(); });
  }

  private colors(): Colors {
    const cs = getComputedStyle(this.host);
    const v = (n: string, fb: string): string => cs.getPropertyValue(n).trim() || fb;
    return {
      bg: v('--cs-canvas', '#fff'), fg: v('--cs-fg', '#1f2328'), muted: v('--cs-muted', '#656d76'),
      border: v('--cs-border', '#d0d7de'), accent: v('--cs-accent', '#0969da'),
      stripe: v('--cs-tl-stripe', 'rgba(128,128,128,0.06)'), barText: v('--cs-tl-bar-text', '#fff'),
      bound: {
        compute: v('--cs-bound-compute', '#1a7f37'), memory: v('--cs-bound-memory', '#d15704'),
        dispatch: v('--cs-bound-dispatch', '#8250df'), other: v('--cs-bound-other', '#8c959f'),
      },
    };
  }

  paint(): void {
    this.dirty = false;
    if (!this.open) return;
    const t0 = performance.now();
    const dpr = window.devicePixelRatio || 1;
    const W = Math.max(1, this.body.clientWidth), H = Math.max(1, this.body.clientHeight);
    if (this.canvas.width !== Math.floor(W * dpr) || this.canvas.height !== Math.floor(H * dpr)) {
      this.canvas.width = Math.floor(W * dpr);
      this.canvas.height = Math.floor(H * dpr);
      this.canvas.style.width = W + 'px';
      this.canvas.style.height = H + 'px';
      this.relayout();
    }
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const col = this.colors();
    ctx.fillStyle = col.bg;
    ctx.fillRect(0, 0, W, H);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    const m = this.model;
    if (!m || m.rows.length === 0) {
      ctx.fillStyle = col.muted;
      ctx.fillText(m ? 'No kernel with a duration in this schedule.' : 'No hardware layer for this Cell.', 12, 20);
      this.frames++;
      return;
    }
    const pw = this.plotW(), vh = this.viewH();
    const win = this.win;
    const span = win.t1 - win.t0;
    const tks = ticks(win, pw);
    // Grid.
    ctx.strokeStyle = col.border;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const tk of tks) { const x = Math.round(GUTTER + tk.x) + 0.5; ctx.moveTo(x, AXIS); ctx.lineTo(x, H); }
    ctx.globalAlpha = 0.6;
    ctx.stroke();
    ctx.globalAlpha = 1;
    // Rows in view.
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS, W, vh);
    ctx.clip();
    const y0 = this.scrollY, y1 = this.scrollY + vh;
    const rects: number[][] = BOUNDS.map(() => []);
    const dimmed = this.selSet.size > 0;
    const selRects: { x: number; y: number; w: number; h: number; b: Bound; focus: boolean }[] = [];
    const labels: { x: number; y: number; w: number; text: string }[] = [];
    let bars = 0;
    let hoverRect: { x: number; y: number; w: number; h: number } | null = null;
    for (const l of this.layout) {
      if (l.y + l.h < y0 || l.y > y1) continue;
      const y = AXIS + l.y - y0;
      if (l.kind === 'section') {
        const s = m.sections[l.index];
        ctx.fillStyle = col.stripe;
        ctx.fillRect(0, y, W, l.h);
        ctx.fillStyle = col.fg;
        ctx.font = '600 10.5px system-ui, sans-serif';
        ctx.fillText(`${s.title} · ${s.rows.length} row${s.rows.length === 1 ? '' : 's'}`, 6, y + l.h / 2);
        ctx.font = '11px system-ui, sans-serif';
        continue;
      }
      const row = m.rows[l.index];
      // Label (every row while they are legible, else every n-th and the first).
      const every = Math.max(1, Math.ceil(11 / l.h));
      const pos = m.sections.find((s) => s.key === row.section)?.rows.indexOf(l.index) ?? 0;
      if (pos % every === 0) {
        ctx.fillStyle = col.muted;
        ctx.font = `${Math.min(11, Math.max(8, l.h - 2))}px system-ui, sans-serif`;
        ctx.fillText(row.label, 8, y + l.h / 2);
      }
      if (pos % 2 === 1) { ctx.fillStyle = col.stripe; ctx.fillRect(GUTTER, y, pw, l.h); }
      ctx.fillStyle = col.border;
      ctx.fillRect(GUTTER - 1, y, 1, l.h);
      const bh = Math.max(2, l.h - 2);
      // Bars in the window: a binary search for the first, then left to right; bars narrower
      // than a pixel share their pixel column (the first one's colour), the rest are skipped.
      const n = row.start.length;
      let i = firstBarEndingAfter(row, win.t0);
      while (i < n && row.start[i] <= win.t1) {
        const x0 = ((row.start[i] - win.t0) / span) * pw, x1 = ((row.end[i] - win.t0) / span) * pw;
        const ki = row.kernel[i];
        const kk = m.kernels[ki];
        let hh = bh;
        if (row.bytes && row.maxBytes > 0) hh = Math.max(2, bh * Math.max(0.3, Math.sqrt(row.bytes[i] / row.maxBytes)));
        const by = y + 1 + (bh - hh);
        bars++;
        if (x1 - x0 < 1) {
          const px = Math.floor(x0);
          rects[BOUNDS.indexOf(kk.bound)].push(GUTTER + px, by, 1, hh);
          if (this.selSet.has(ki)) selRects.push({ x: GUTTER + px, y: by, w: 1, h: hh, b: kk.bound, focus: ki === this.focus });
          if (this.hover && this.hover.kernel === ki && this.hover.row === l.index) hoverRect = { x: GUTTER + px, y: by, w: 1, h: hh };
          // Skip to the first bar starting in the next pixel column (keeping selected bars).
          let next = firstBarStartingAt(row, win.t0 + ((px + 1) / pw) * span);
          // The last bar starting in this column may reach beyond it: it is drawn as a bar.
          if (next - 1 > i && ((row.end[next - 1] - win.t0) / span) * pw >= px + 1) next--;
          if (dimmed) for (let j = i + 1; j < next; j++) {
            if (this.selSet.has(row.kernel[j])) selRects.push({ x: GUTTER + px, y: by, w: 1, h: hh, b: m.kernels[row.kernel[j]].bound, focus: row.kernel[j] === this.focus });
          }
          i = Math.max(i + 1, next);
          continue;
        }
        const xa = Math.max(-2, x0), xb = Math.min(pw + 2, x1);
        const gap = xb - xa > 3 ? 0.5 : 0;  // a hairline between neighbouring bars
        rects[BOUNDS.indexOf(kk.bound)].push(GUTTER + xa + gap, by, Math.max(1, xb - xa - 2 * gap), hh);
        if (this.selSet.has(ki)) selRects.push({ x: GUTTER + xa, y: by, w: Math.max(1, xb - xa), h: hh, b: kk.bound, focus: ki === this.focus });
        if (this.hover && this.hover.kernel === ki && this.hover.row === l.index) hoverRect = { x: GUTTER + xa, y: by, w: Math.max(1, xb - xa), h: hh };
        if (xb - xa >= 40 && hh >= 10) labels.push({ x: GUTTER + xa + 3, y: by + hh / 2, w: xb - xa - 6, text: kk.k.name ?? '' });
        i++;
      }
    }
    // Fills, one path per colour; everything but the selection dimmed while there is one.
    ctx.globalAlpha = dimmed ? 0.3 : 0.9;
    BOUNDS.forEach((b, bi) => {
      const r = rects[bi];
      if (!r.length) return;
      ctx.fillStyle = col.bound[b];
      ctx.beginPath();
      for (let j = 0; j < r.length; j += 4) ctx.rect(r[j], r[j + 1], r[j + 2], r[j + 3]);
      ctx.fill();
    });
    ctx.globalAlpha = 1;
    for (const s of selRects) {
      ctx.fillStyle = col.bound[s.b];
      ctx.fillRect(s.x, s.y, s.w, s.h);
    }
    ctx.strokeStyle = col.accent;
    ctx.lineWidth = 1.5;
    for (const s of selRects) ctx.strokeRect(s.x - 0.75, s.y - 0.75, s.w + 1.5, s.h + 1.5);
    const focusRect = selRects.find((s) => s.focus);
    if (focusRect) { ctx.lineWidth = 2.5; ctx.strokeRect(focusRect.x - 1.25, focusRect.y - 1.25, focusRect.w + 2.5, focusRect.h + 2.5); }
    if (hoverRect) {
      ctx.strokeStyle = col.fg;
      ctx.lineWidth = 1;
      ctx.strokeRect(hoverRect.x - 0.5, hoverRect.y - 0.5, hoverRect.w + 1, hoverRect.h + 1);
    }
    if (labels.length) {
      ctx.fillStyle = col.barText;
      ctx.font = '10px system-ui, sans-serif';
      for (const lb of labels) {
        if (dimmed) continue;
        let t = lb.text;
        if (ctx.measureText(t).width > lb.w) {
          while (t.length > 1 && ctx.measureText(t + '…').width > lb.w) t = t.slice(0, -1);
          t = t.length > 1 ? t + '…' : '';
        }
        if (t) ctx.fillText(t, lb.x, lb.y);
      }
    }
    ctx.restore();
    // Axis, scrollbar.
    ctx.fillStyle = col.bg;
    ctx.fillRect(0, 0, W, AXIS);
    ctx.fillStyle = col.border;
    ctx.fillRect(0, AXIS - 1, W, 1);
    ctx.fillStyle = col.muted;
    ctx.font = '10.5px system-ui, sans-serif';
    ctx.fillText('time →', 8, AXIS / 2);
    for (const tk of tks) {
      const x = GUTTER + tk.x;
      if (x < GUTTER - 1 || x > GUTTER + pw) continue;
      ctx.fillRect(Math.round(x), AXIS - 5, 1, 4);
      ctx.fillText(tk.label, x + 3, AXIS / 2);
    }
    if (this.contentH > vh) {
      const th = Math.max(16, (vh * vh) / this.contentH);
      const ty = AXIS + (this.scrollY / (this.contentH - vh)) * (vh - th);
      ctx.globalAlpha = 0.5;
      ctx.fillStyle = col.muted;
      ctx.fillRect(W - SCROLLBAR + 2, ty, SCROLLBAR - 4, th);
      ctx.globalAlpha = 1;
    }
    this.barsPainted = bars;
    this.frames++;
    this.lastPaintMs = performance.now() - t0;
  }

  /** What an export draws of the timeline (timeline-export.ts): null when it is not shown. */
  exportState(): { model: TimelineModel; win: TimeWindow; colours: Colors; selected: ReadonlySet<number> } | null {
    if (!this.open || !this.model || this.model.rows.length === 0) return null;
    return { model: this.model, win: this.win, colours: this.colors(), selected: this.selSet };
  }

  // ---- test hook -------------------------------------------------------------------------------

  /** The first kernel of a node id, or "#<index>" for a kernel by its schedule index. */
  kernelOf(id: string): number {
    const m = this.model;
    if (!m) return -1;
    if (id.startsWith('#')) return Number(id.slice(1));
    const ks = m.byNode.get(id) ?? [];
    return ks.find((i) => m.kernels[i].end > m.kernels[i].start) ?? -1;
  }

  /** A kernel's first bar in client coordinates (`visible`: inside the plot as scrolled), or null. */
  barRect(id: string): { x: number; y: number; w: number; h: number; visible: boolean; row: string } | null {
    const m = this.model;
    const ki = this.kernelOf(id);
    const k = m?.kernels[ki];
    if (!m || !k || k.rows.length === 0 || !this.open) return null;
    const r = this.canvas.getBoundingClientRect();
    const { x, w } = barX(this.win, this.plotW(), k.start, k.end);
    const y = AXIS + this.rowY(k.rows[0]) - this.scrollY + 1;
    const cx = r.left + GUTTER + Math.max(0, x), cw = Math.min(w, this.plotW() - Math.max(0, x));
    const visible = x + w > 0 && x < this.plotW() && y >= AXIS && y + this.rowH - 2 <= r.height;
    return { x: cx, y: r.top + y, w: cw, h: this.rowH - 2, visible, row: m.rows[k.rows[0]].key };
  }

  /** Acts as a click on a kernel's bar. */
  clickBar(id: string): boolean {
    const ki = this.kernelOf(id);
    if (ki < 0 || !this.model?.kernels[ki]) return false;
    this.pick(ki);
    return true;
  }

  state(): Record<string, unknown> {
    const m = this.model;
    return {
      open: this.open,
      available: !!m,
      ascend: m?.ascend ?? false,
      header: this.head.innerText,
      announce: this.sel.innerText,
      rows: m ? m.rows.map((r) => ({ key: r.key, label: r.label, section: r.section, bars: r.start.length })) : [],
      sections: m ? m.sections.map((s) => ({ key: s.key, title: s.title, rows: s.rows.length })) : [],
      kernels: m?.kernels.length ?? 0,
      drawn: m?.drawn ?? 0,
      bars: m ? m.rows.reduce((s, r) => s + r.start.length, 0) : 0,
      end: m?.end ?? 0,
      window: { ...this.win },
      scrollY: this.scrollY,
      rowHeight: this.rowH,
      selected: m ? [...new Set(this.selected.map((i) => m.kernels[i].node))] : [],
      selectedKernels: [...this.selected],
      selectedBars: m ? this.selected.reduce((s, i) => s + m.kernels[i].rows.length, 0) : 0,
      focus: m && this.focus >= 0 ? { index: this.focus, node: m.kernels[this.focus].node, name: m.kernels[this.focus].k.name ?? '' } : null,
      tip: this.tip.classList.contains('hidden') ? '' : this.tip.textContent,
      barsPainted: this.barsPainted,
      lastPaintMs: this.lastPaintMs,
      frames: this.frames,
    };
  }
}
