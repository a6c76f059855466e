// The training run and the precision drift, as the view holds them (pure; trainpanel.ts draws the
// chart, view.ts the drift colours). A training run arrives as view.proto's TrainProgress messages
// (a step at a time while it runs; the whole history, `reset`, when the view connects) and the
// inference half's per-layer drift as PrecisionDrift.
import type { LayerDrift, PrecisionDrift, TrainProgress, TrainStep } from './protocol';
import type { VNode } from './model';
import { escapeHtml as h, fmtNum } from './format';

/** The steps the server keeps (view/view_server.h kMaxTrainSteps), when a message does not say. */
export const MAX_TRAIN_STEPS = 10000;

/** A number of a message: proto3 JSON writes int64 as strings and NaN / Infinity as "NaN", "Infinity". */
export function num(v: number | string | undefined | null): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  return typeof v === 'number' ? v : Number(v);
}

/** One step, numbers parsed. */
export interface StepPoint {
  epoch: number; step: number; globalStep: number; totalSteps?: number;
  loss: number; lr: number; gradNorm?: number; lossScale: number; skipped: boolean;
  stepMs: number; samplesPerSec: number;
}

export function stepPoint(s: TrainStep): StepPoint {
  return {
    epoch: num(s.epoch) ?? 1, step: num(s.step) ?? 0, globalStep: num(s.globalStep) ?? 0, totalSteps: num(s.totalSteps),
    loss: num(s.loss) ?? NaN, lr: num(s.lr) ?? NaN, gradNorm: num(s.gradNorm), lossScale: num(s.lossScale) ?? 1,
    skipped: !!s.skipped, stepMs: num(s.stepMs) ?? 0, samplesPerSec: num(s.samplesPerSec) ?? 0,
  };
}

/**
 * Drops every other step of the older half while there are more than `max` (the server's rule,
 * view_server.cpp thin_train_steps: a view that keeps the steps it is sent one at a time holds
 * what a view that connects now is sent).
 */
export function thinSteps<T>(steps: T[], max: number): T[] {
  let out = steps;
  while (max >= 2 && out.length > max) {
    const half = Math.floor(out.length / 2);
    out = out.filter((_, i) => i >= half || i % 2 === 0);
  }
  return out;
}

/** The chart's data: x (global step) and one column per series; null where there is no value. */
export interface ChartData {
  x: number[];
  loss: (number | null)[];
  lr: (number | null)[];
  gradNorm: (number | null)[];
}

/** A training run as the view holds it: the steps in order, the file and Cell, what is drawn. */
export class TrainModel {
  steps: StepPoint[] = [];
  file = '';
  cell = '';
  session = '';
  /** Messages applied (tests). */
  messages = 0;
  /** Bumped whenever the steps change (the chart redraws when it differs from what it drew). */
  version = 0;

  /** Applies a TrainProgress; true when the run was reset (a new run, or the whole history). */
  apply(p: TrainProgress): boolean {
    this.messages++;
    this.version++;
    const reset = !!p.reset;
    if (reset) this.steps = [];
    if (p.file) this.file = p.file;
    if (p.cell) this.cell = p.cell;
    if (p.session !== undefined) this.session = p.session;
    for (const s of p.steps ?? []) this.steps.push(stepPoint(s));
    this.steps = thinSteps(this.steps, p.maxSteps && p.maxSteps >= 2 ? p.maxSteps : MAX_TRAIN_STEPS);
    return reset;
  }

  get last(): StepPoint | undefined { return this.steps[this.steps.length - 1]; }

  /** Whether any step measured the gradients' norm (the series is left out otherwise). */
  hasGradNorm(): boolean { return this.steps.some((s) => s.gradNorm !== undefined); }

  chartData(): ChartData {
    const fin = (v: number | undefined): number | null => (v !== undefined && Number.isFinite(v) ? v : null);
    return {
      x: this.steps.map((s) => s.globalStep),
      loss: this.steps.map((s) => fin(s.loss)),
      lr: this.steps.map((s) => fin(s.lr)),
      gradNorm: this.steps.map((s) => fin(s.gradNorm)),
    };
  }

  /** The header line: "epoch 2 · step 120/460 · loss 0.1234 · lr 0.01 · grad norm 1.52 · 4.1 ms/step". */
  summary(): string {
    const s = this.last;
    if (!s) return 'Waiting for the first step…';
    const parts = [`epoch ${s.epoch}`, `step ${s.globalStep}${s.totalSteps ? `/${s.totalSteps}` : ''}`,
      `loss ${fmtLoss(s.loss)}`, `lr ${fmtNum(s.lr, 3)}`];
    if (s.gradNorm !== undefined) parts.push(`grad norm ${fmtNum(s.gradNorm, 3)}`);
    parts.push(`${s.stepMs.toFixed(1)} ms/step`, `${fmtNum(Math.round(s.samplesPerSec))} samples/s`);
    const skipped = this.steps.filter((x) => x.skipped).length;
    if (skipped) parts.push(`${skipped} update${skipped === 1 ? '' : 's'} skipped (overflow)`);
    const nan = this.steps.filter((x) => !Number.isFinite(x.loss)).length;
    if (nan) parts.push(`${nan} non-finite loss${nan === 1 ? '' : 'es'}`);
    return parts.join(' · ');
  }
}

export function fmtLoss(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : v.toPrecision(5);
}

// ---- the precision drift -------------------------------------------------------------------

/** One layer's drift, numbers parsed. */
export interface DriftValue {
  node: string; op: string; maxAbs: number; maxRel: number; cosine: number; overflows: number;
}

/** The drift of a run, indexed by semantic node id. */
export interface DriftIndex {
  precision: string;
  threshold: number;
  firstBelow: string;
  byNode: Map<string, DriftValue>;
  top1Agreement?: number;
  accuracyFp32?: number;
  accuracyPrecision?: number;
  samples: number;
  /** The smallest 1 − cosine of the data (the good end of the colour scale). */
  bestBadness: number;
}

/** How far a layer drifted: 1 − cosine, never below 1e-12 (log scale); a NaN cosine is the worst. */
export function badness(cosine: number): number {
  if (!Number.isFinite(cosine)) return 2;
  return Math.max(1e-12, 1 - cosine);
}

export function driftIndex(d: PrecisionDrift | null | undefined): DriftIndex | null {
  if (!d || !d.layers?.length) return null;
  const byNode = new Map<string, DriftValue>();
  let best = Infinity;
  for (const l of d.layers) {
    const v = driftValue(l);
    byNode.set(v.node, v);
    best = Math.min(best, badness(v.cosine));
  }
  return {
    precision: d.precision ?? '', threshold: num(d.threshold) ?? 0.99, firstBelow: d.firstBelow ?? '', byNode,
    top1Agreement: num(d.top1Agreement), accuracyFp32: num(d.accuracyFp32), accuracyPrecision: num(d.accuracyPrecision),
    samples: num(d.samples) ?? 0, bestBadness: best,
  };
}

function driftValue(l: LayerDrift): DriftValue {
  return {
    node: l.node, op: l.op ?? '', maxAbs: num(l.maxAbs) ?? NaN, maxRel: num(l.maxRel) ?? NaN,
    cosine: num(l.cosine) ?? NaN, overflows: num(l.overflows) ?? 0,
  };
}

/**
 * The drift a drawn node stands for: a semantic node's own; a kernel (optimized, hardware layers)
 * the worst of the nodes it was made from (`origins`), so a fused conv shows its ReLU's drift too.
 */
export function nodeDrift(n: VNode, idx: DriftIndex): DriftValue | undefined {
  if (n.ghost || n.failure) return undefined;
  if (!n.optimized) return idx.byNode.get(n.id);
  let worst: DriftValue | undefined;
  for (const o of n.optimized.origins?.length ? n.optimized.origins : [n.id]) {
    const v = idx.byNode.get(o);
    if (v && (!worst || badness(v.cosine) > badness(worst.cosine))) worst = v;
  }
  return worst;
}

/** Whether a drawn node is (made from) the first node under the threshold. */
export function isFirstBelow(n: VNode, idx: DriftIndex): boolean {
  if (!idx.firstBelow) return false;
  if (!n.optimized) return n.id === idx.firstBelow;
  return (n.optimized.origins ?? [n.id]).includes(idx.firstBelow);
}

/**
 * Where a badness sits on the drift colour scale (0 = the best layer of the data, 1 = at or under the
 * threshold), log-scaled: cosines of fp16 are 1 − 1e-6, of int8 1 − 1e-3, so a linear scale would
 * paint them all alike.
 */
export function driftNorm(idx: DriftIndex): (b: number) => number {
  const top = badness(idx.threshold);
  const lo = Math.min(idx.bestBadness, top / 1000);
  const l0 = Math.log(lo), l1 = Math.log(top);
  return (b: number) => {
    if (b >= top) return 1;
    if (l1 - l0 < 1e-9) return 0;
    return Math.min(1, Math.max(0, (Math.log(Math.max(b, lo)) - l0) / (l1 - l0)));
  };
}

// Green (no drift) → yellow → orange → red (under the threshold): the traffic-light order people read
// drift in; the red end is reserved for layers under the threshold.
const DRIFT_RAMP: [number, number, number][] = [[26, 152, 80], [145, 207, 96], [254, 224, 139], [252, 141, 89], [215, 48, 39]];

export function driftColor(t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (DRIFT_RAMP.length - 1);
  const i = Math.min(DRIFT_RAMP.length - 2, Math.floor(x));
  const f = x - i;
  const a = DRIFT_RAMP[i], b = DRIFT_RAMP[i + 1];
  const c = (k: number) => Math.round(a[k] + (b[k] - a[k]) * f);
  return `rgb(${c(0)},${c(1)},${c(2)})`;
}

export function driftTextColor(t: number): string {
  return t > 0.85 || t < 0.15 ? '#fff' : '#111';
}

export function fmtCos(c: number): string {
  if (!Number.isFinite(c)) return String(c);
  // Enough digits to tell 0.999999 from 1.
  const b = 1 - c;
  if (b > 0 && b < 1e-3) return c.toFixed(Math.min(9, Math.ceil(-Math.log10(b) - 1e-9) + 1));
  return c.toFixed(4);
}

const pct = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? '—' : `${(v * 100).toFixed(1)} %`);

export function precisionLabel(p: string): string {
  return p === 'target' ? 'target (fp16, fp32 accumulation)' : p === 'int8' ? 'int8 (post-training quantisation)' : p || '?';
}

/** The drift's summary line: precision, samples, top-1 agreement, accuracies, the first layer under the threshold. */
export function driftSummary(idx: DriftIndex): string {
  const parts = [`${precisionLabel(idx.precision)} vs fp32 on ${idx.samples} sample${idx.samples === 1 ? '' : 's'}`,
    `top-1 agreement ${pct(idx.top1Agreement)}`];
  if (idx.accuracyFp32 !== undefined || idx.accuracyPrecision !== undefined) {
    parts.push(`accuracy ${pct(idx.accuracyFp32)} → ${pct(idx.accuracyPrecision)}`);
  }
  parts.push(idx.firstBelow ? `first layer under cos ${idx.threshold}: ${idx.firstBelow}` : `every layer at cos ≥ ${idx.threshold}`);
  return parts.join(' · ');
}

/** The node's drift card for the side panel ('' without data). */
export function driftCardHtml(n: VNode, idx: DriftIndex | null): string {
  if (!idx) return '';
  const v = nodeDrift(n, idx);
  if (!v) return '';
  const first = isFirstBelow(n, idx);
  const below = v.cosine < idx.threshold || !Number.isFinite(v.cosine);
  const from = n.optimized && v.node !== n.id ? ` <span class="muted">(worst of its nodes: ${h(v.node)})</span>` : '';
  const row = (k: string, val: string, cls = '') => `<tr><th>${k}</th><td class="mono${cls}">${h(val)}</td></tr>`;
  return `<details class="sec drift-card" open><summary>Precision drift · ${h(precisionLabel(idx.precision))}${from}</summary>`
    + `<table class="kv">${row('cosine', fmtCos(v.cosine), below ? ' bad' : '')}`
    + row('max abs error', fmtNum(v.maxAbs, 3)) + row('max rel error', fmtNum(v.maxRel, 3))
    + row('fp16 overflows', String(v.overflows), v.overflows > 0 ? ' bad' : '')
    + row('threshold', `cos ${idx.threshold}`) + '</table>'
    + (first ? `<div class="drift-first">The first layer whose cosine falls under ${idx.threshold}.</div>` : '')
    + '</details>';
}
