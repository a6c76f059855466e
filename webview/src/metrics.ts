// Node metrics and their colour scale (log-scaled, perceptually ordered gradient).
import { ROOT_ID, outputBytes, totalCycles, type Layer, type VNode, type ViewGraph } from './model';
import { fmtBytes, fmtNum } from './format';
import { badness, driftColor, driftNorm, driftTextColor, fmtCos, nodeDrift, type DriftIndex } from './train';

export type MetricId = 'none' | 'cycles' | 'time' | 'bytes' | 'flops' | 'memory' | 'bandwidth' | 'drift';

export interface MetricDef {
  id: MetricId;
  label: string;
  layers: Layer[];
  value: (n: VNode) => number;
  format: (v: number) => string;
}

function gmBytes(n: VNode): number {
  let b = 0;
  for (const k of n.optimized?.hardware ?? []) b += (k.gmReadBytes ?? 0) + (k.gmWriteBytes ?? 0);
  return b;
}

export const METRICS: MetricDef[] = [
  { id: 'none', label: 'Op type', layers: ['semantic', 'optimized', 'hardware'], value: () => 0, format: String },
  { id: 'cycles', label: 'Cycles', layers: ['hardware'], value: (n) => totalCycles(n.optimized?.hardware), format: (v) => fmtNum(v) + ' cyc' },
  { id: 'time', label: 'Time (µs)', layers: ['hardware'],
    value: (n) => (n.optimized?.hardware ?? []).reduce((s, k) => s + (k.timeUs ?? 0), 0), format: (v) => fmtNum(v) + ' µs' },
  { id: 'bytes', label: 'Bytes moved', layers: ['semantic', 'optimized', 'hardware'],
    value: (n) => (n.optimized?.hardware?.length ? gmBytes(n) : outputBytes(n)), format: fmtBytes },
  { id: 'flops', label: 'FLOPs', layers: ['semantic', 'optimized', 'hardware'],
    value: (n) => n.optimized?.flops ?? n.semantic?.flops ?? 0, format: (v) => fmtNum(v) },
  { id: 'memory', label: 'Memory', layers: ['semantic', 'optimized', 'hardware'],
    value: (n) => {
      const m = n.optimized?.memory;
      if (m && m.length) return m.reduce((s, p) => s + (p.size ?? p.bytes ?? 0), 0);
      return outputBytes(n);
    }, format: fmtBytes },
  { id: 'bandwidth', label: 'Bandwidth', layers: ['hardware'],
    value: (n) => Math.max(0, ...(n.optimized?.hardware ?? []).map((k) => k.bandwidthGbps ?? 0)),
    format: (v) => fmtNum(v) + ' GB/s' },
  // The precision drift of the last joint debug session (PrecisionDrift): the value is the layer's
  // 1 − cosine (computeScale with the drift; a kernel: the worst of its origins), coloured on a
  // scale of its own (driftScale) with the threshold at the red end.
  { id: 'drift', label: 'Drift (cosine)', layers: ['semantic', 'optimized', 'hardware'], value: () => 0,
    format: (v) => 'cos ' + fmtCos(1 - v) },
];

export function metricDef(id: MetricId): MetricDef {
  return METRICS.find((m) => m.id === id) ?? METRICS[0];
}

// A viridis-like ramp (dark blue -> teal -> green -> yellow), readable on light and dark.
const RAMP: [number, number, number][] = [
  [68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37],
];

export function rampColor(t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  const a = RAMP[i], b = RAMP[i + 1];
  const c = (k: number) => Math.round(a[k] + (b[k] - a[k]) * f);
  return `rgb(${c(0)},${c(1)},${c(2)})`;
}

/** Readable text colour on a ramp colour. */
export function rampTextColor(t: number): string {
  return t > 0.55 ? '#111' : '#fff';
}

export interface MetricScale {
  metric: MetricId;
  min: number;
  max: number;
  values: Map<string, number>;  // node id -> value (nodes with 0 are absent)
  norm: (v: number) => number;  // 0..1, log-scaled
  // The colours of the scale (default: rampColor, rampTextColor); the drift has its own.
  color?: (t: number) => string;
  textColor?: (t: number) => string;
  // How collapsed groups combine their leaves (default: the sum, Σ); the drift takes the worst.
  combine?: 'sum' | 'max';
}

export function computeScale(g: ViewGraph, metric: MetricId, drift?: DriftIndex | null): MetricScale {
  if (metric === 'drift') return driftScale(g, drift ?? null);
  const def = metricDef(metric);
  const values = new Map<string, number>();
  if (metric !== 'none') {
    for (const n of g.nodes) {
      if (n.ghost) continue;  // a comparison's removed node: not part of this graph
      const v = def.value(n);
      if (v > 0) values.set(n.id, v);
    }
  }
  return scaleOf(metric, values);
}

/**
 * The drift scale: each node with drift data valued by its 1 − cosine, normalised so that the best
 * layer of the data is green and the threshold (and under) red (train.ts driftNorm). Nodes without
 * data are absent (drawn neutral).
 */
export function driftScale(g: ViewGraph, drift: DriftIndex | null): MetricScale {
  const values = new Map<string, number>();
  if (drift) {
    for (const n of g.nodes) {
      const d = nodeDrift(n, drift);
      if (d) values.set(n.id, badness(d.cosine));
    }
  }
  const s = scaleOf('drift', values);
  if (drift) {
    s.norm = driftNorm(drift);
    // max > 0 means "there is data" to the drawing code; a perfect layer still has badness 1e-12.
    s.min = Math.min(s.min, badness(1));
    s.max = Math.max(s.max, badness(drift.threshold));
  }
  s.color = driftColor;
  s.textColor = driftTextColor;
  s.combine = 'max';
  return s;
}

/** A log scale between the smallest and the largest of `values` (all > 0). */
export function scaleOf(metric: MetricId, values: Map<string, number>): MetricScale {
  let min = Infinity, max = 0;
  for (const v of values.values()) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (!(min <= max)) { min = 0; max = 0; }
  const lmin = Math.log(Math.max(min, 1e-12)), lmax = Math.log(Math.max(max, 1e-12));
  const norm = (v: number): number => {
    if (!(v > 0) || max <= 0) return 0;
    if (lmax - lmin < 1e-9) return 1;
    return Math.min(1, Math.max(0, (Math.log(v) - lmin) / (lmax - lmin)));
  };
  return { metric, min, max, values, norm };
}

/**
 * The colour scale of collapsed groups: their own, over the Σ of the groups drawn collapsed (of
 * every group when none is). A group's Σ is far above any one node's value, so on the nodes' scale
 * every group would be its top colour; on this one the groups drawn discriminate among themselves.
 */
export function groupScale(metric: MetricId, sums: ReadonlyMap<string, number>, drawn: Iterable<string>): MetricScale {
  const values = new Map<string, number>();
  for (const id of drawn) {
    const v = sums.get(id) ?? 0;
    if (v > 0) values.set(id, v);
  }
  if (values.size === 0) for (const [id, v] of sums) if (id !== ROOT_ID && v > 0) values.set(id, v);
  return scaleOf(metric, values);
}

/** The scale collapsed groups are coloured on: the drift's (the worst leaf) is the nodes' own. */
export function groupScaleFor(scale: MetricScale, sums: ReadonlyMap<string, number>, drawn: Iterable<string>): MetricScale {
  if (scale.combine === 'max') {
    const values = new Map<string, number>();
    for (const id of drawn) { const v = sums.get(id); if (v !== undefined) values.set(id, v); }
    return { ...scale, values };
  }
  return groupScale(scale.metric, sums, drawn);
}

/** Sum of a metric over a group's leaves (for collapsed groups). */
export function groupSums(g: ViewGraph, scale: MetricScale): Map<string, number> {
  const sums = new Map<string, number>();
  if (scale.metric === 'none') return sums;
  const max = scale.combine === 'max';
  for (const [id, v] of scale.values) {
    let p = g.parentOf.get(id);
    while (p !== undefined) { sums.set(p, max ? Math.max(sums.get(p) ?? 0, v) : (sums.get(p) ?? 0) + v); p = g.parentOf.get(p); }
  }
  return sums;
}

/** The colour family of each operator category the server sends (graph.proto Node.category,
 * from the operator's definition): Netron-like families. */
const CATEGORY_FAMILY: Record<string, string> = {
  convolution: 'compute', matmul: 'compute', attention: 'compute', recurrent: 'compute',
  normalization: 'norm',
  activation: 'act', softmax: 'act',
  pooling: 'pool',
  shape: 'shape', index: 'shape',
  random: 'dropout',
  'data-move': 'move',
};

/** Category colours for "Op type" colouring, from the category the server gives each node. */
export function opCategory(n: VNode): string {
  if (n.kind === 'input') return 'input';
  if (n.kind === 'parameter' || n.kind === 'constant') return 'const';
  if (n.dataMove) return 'move';
  const category = n.optimized?.category ?? n.semantic?.category ?? '';
  return CATEGORY_FAMILY[category] ?? 'elem';
}
