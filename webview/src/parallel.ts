// Parallel strategies in the view (issue 21, docs/parallel.md "In the view and editor"): which
// drawn node is sharded and how (the red dashed frame and its "split (2, 4)"), its pipeline stage
// (the node's colour), which nodes are communication, and the per-device shapes the device
// picker shows. Pure functions of the document; view.ts draws, main.ts wires the picker.
import type { ParallelSummary, Sharding, ShardingRow, Tensor } from './protocol';
import { edgeLabelLines, shapeText } from './format';
import type { VEdge, VNode, ViewGraph } from './model';

/** The communication operators MindSpore inserts (the optimization layer's "comm" pass). */
export const COMM_OPS: ReadonlySet<string> = new Set([
  'AllReduce', 'AllGather', 'ReduceScatter', 'AllToAll', 'AlltoAll', 'Send', 'Receive',
]);

/**
 * Colours of pipeline stages: Okabe & Ito's colour-blind-safe palette (without its black), in an
 * order that keeps neighbouring stages apart. Themes may override them (`--cs-stage-0` ...).
 */
export const STAGE_PALETTE: readonly string[] = [
  '#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442',
];

export function stageColor(stage: number, palette: readonly string[] = STAGE_PALETTE): string {
  const p = palette.length > 0 ? palette : STAGE_PALETTE;
  return p[((stage % p.length) + p.length) % p.length];
}

function rowText(r: ShardingRow | undefined): string {
  return `(${(r?.splits ?? []).join(', ')}${(r?.splits?.length ?? 0) === 1 ? ',' : ''})`;
}

/** A strategy as Python prints it: "(2, 4)" for one row, "((2, 4), (4, 1))" for several. */
export function strategyText(rows: readonly ShardingRow[] | undefined): string {
  const rs = rows ?? [];
  if (rs.length === 1) return rowText(rs[0]);
  return `(${rs.map(rowText).join(', ')})`;
}

/** What the frame of a sharded node says: "split (2, 4)", "split ((2, 4), (4, 1))". */
export function splitLabel(s: Sharding): string {
  const base = `split ${strategyText(s.strategy)}`;
  return s.outStrategy && s.outStrategy.length > 0 ? `${base} → ${strategyText(s.outStrategy)}` : base;
}

/** The band of a sharded node's frame under its card, where the split is written. */
export const SPLIT_H = 16;

/** The split as a frame writes it: marked "propagated" when sharding propagation gave it, not the user. */
export function frameSplit(s: Sharding): string {
  return s.propagatedFrom ? `propagated ${splitLabel(s)}` : splitLabel(s);
}

/** The text of that band: the split, then the communication MindSpore inserts for it. */
export function frameText(n: VNode): string {
  const s = shardingOf(n);
  if (!s) return '';
  const m = commMarker(n);
  return m ? `${frameSplit(s)} · ${m}` : frameSplit(s);
}

/**
 * Sizes a drawn node for what parallel.ts adds: a sharded node grows by the band of its frame (and
 * widens to fit its text); a communication node's second line names its group.
 */
export function fitParallel(v: VNode): void {
  const c = commOf(v);
  if (c && c.group) v.sub = `${c.group} devices · ${v.sub}`;
  const t = frameText(v);
  if (!t) return;
  v.height += SPLIT_H;
  v.width = Math.max(v.width, Math.min(340, Math.round(t.length * 5.9 + 22)));
}

/** The strategy of a drawn node: its own (semantic), or its main origin's (optimized, hardware). */
export function shardingOf(n: VNode): Sharding | undefined {
  const s = n.semantic?.sharding;
  return s && (s.strategy?.length ?? 0) > 0 ? s : undefined;
}

/** The pipeline stage of a drawn node (its main origin's in the optimized layers); null: none. */
export function stageOf(n: VNode): number | null {
  const s = n.semantic?.stage;
  return typeof s === 'number' && s >= 0 ? s : null;
}

/** A communication node of the optimized layers: its kind and group size (null: not one). */
export function commOf(n: VNode): { kind: string; group: number | null } | null {
  if (!COMM_OPS.has(n.op)) return null;
  const a = n.optimized?.attrs ?? n.semantic?.attrs ?? {};
  const g = a['group_size'] ?? a['group'] ?? a['rank_size'];
  return { kind: n.op, group: typeof g === 'number' && g > 0 ? g : null };
}

/**
 * The communication MindSpore inserts for a sharded semantic node, as its marker says it:
 * "AllReduce ×4", "AllGather ×4 · ReduceScatter ×2"; '' when none.
 */
export function commMarker(n: VNode): string {
  const s = shardingOf(n);
  const parts: string[] = [];
  for (const c of s?.comms ?? []) {
    if (!c.kind) continue;
    parts.push(c.group ? `${c.kind} ×${c.group}` : c.kind);
  }
  return parts.join(' · ');
}

/** The stages the drawn nodes of `g` run in, ascending. */
export function stagesIn(g: ViewGraph): number[] {
  const out = new Set<number>();
  for (const n of g.nodes) {
    const s = stageOf(n);
    if (s !== null) out.add(s);
  }
  return [...out].sort((a, b) => a - b);
}

/** The ranks the device picker offers: 0..device_num-1 when the job has more than one device. */
export function deviceRanks(p: ParallelSummary | undefined): number[] {
  const n = p?.deviceNum ?? 0;
  if (n <= 1) return [];
  return Array.from({ length: Math.min(n, 4096) }, (_, i) => i);
}

/** The pipeline stage rank `rank` runs (ranks are cut into device_num / stages per stage); null: no pipeline. */
export function rankStage(p: ParallelSummary | undefined, rank: number): number | null {
  const n = p?.deviceNum ?? 0, stages = p?.pipelineStages ?? 1;
  if (n <= 0 || stages <= 1 || n % stages !== 0) return null;
  return Math.floor(rank / (n / stages));
}

/** Whether node `n` runs on rank `rank` (false only for a node of another pipeline stage). */
export function onRank(p: ParallelSummary | undefined, n: VNode, rank: number): boolean {
  const rs = rankStage(p, rank), s = stageOf(n);
  return rs === null || s === null || rs === s;
}

/**
 * The tensor one device holds on edge `e`: the producer's per-device output when it is sharded,
 * else the per-device input the (sharded) consumer takes; undefined when neither is sharded (its
 * per-device shape is not known: MindSpore picks a default strategy for it).
 */
export function deviceTensor(g: ViewGraph, e: VEdge): Tensor | undefined {
  const merge = (t: Tensor | undefined): Tensor | undefined =>
    t && (t.shape?.length ?? 0) > 0 ? { ...e.tensor, ...t, name: e.tensor?.name ?? '', dtype: e.tensor?.dtype ?? t.dtype } : undefined;
  const src = g.byId.get(e.src);
  const ss = src ? shardingOf(src) : undefined;
  const out = merge(ss?.deviceOutputs?.[e.output]);
  if (out) return out;
  const tgt = g.byId.get(e.tgt);
  const ts = tgt ? shardingOf(tgt) : undefined;
  if (!tgt || !ts) return undefined;
  const index = tgt.inputs.findIndex((x) => x.src === e.src && x.output === e.output);
  return index >= 0 ? merge(ts.deviceInputs?.[index]) : undefined;
}

/**
 * An edge's label lines with the device picker on rank `rank` (null: global shapes): the
 * per-device shape when known, else the global one marked "(global)".
 */
export function deviceEdgeLabel(g: ViewGraph, e: VEdge, rank: number | null, twoLines: boolean): string[] {
  if (rank === null || !e.tensor) return edgeLabelLines(e.tensor, twoLines);
  const t = deviceTensor(g, e);
  if (t) return edgeLabelLines(t, twoLines);
  const lines = edgeLabelLines(e.tensor, twoLines);
  if (lines.length > 0) lines[lines.length - 1] += ' (global)';
  return lines;
}

/** The device picker's tooltip: what a per-device shape is, and what differs between ranks. */
export function pickerTip(p: ParallelSummary | undefined): string {
  const n = p?.deviceNum ?? 0;
  const lines = [
    `Shapes on the edges: global, or one device's slice (${n} devices${p?.deviceNumFrom ? `, from ${p.deviceNumFrom}` : ''}).`,
    'A sharded tensor\'s slice has the same shape on every rank (global / split per dimension); ranks differ in which slice they hold.',
    'Where a strategy uses fewer devices than the stage has, the strategy repeats: several ranks hold the same slice.',
    'Tensors of unsharded operators keep their global shape, marked "(global)".',
  ];
  if ((p?.pipelineStages ?? 1) > 1) {
    lines.push(`With ${p?.pipelineStages} pipeline stages a rank runs one stage (${n / (p?.pipelineStages ?? 1)} ranks each): the other stages' nodes are faded.`);
  }
  return lines.join('\n');
}

/** A sharded node's lines for its tooltip and panel: strategy, per-device shapes, communication. */
export function shardingLines(n: VNode): string[] {
  const s = shardingOf(n);
  if (!s) return [];
  const owner = s.propagatedFrom ? n.op : s.attr ? `self.${s.attr}` : n.op;
  const out = [`${owner}: ${splitLabel(s)}${s.deviceMatrix ? ` on ${s.deviceMatrix} devices` : ''}`];
  if (s.propagatedFrom) out.push(`strategy by sharding propagation from ${s.propagatedFrom}`);
  const ins = n.semantic?.inputs ?? [];
  (s.deviceInputs ?? []).forEach((t, i) => {
    const global = n.inputs[i]?.tensor;
    out.push(`input ${i}${ins[i] ? ` (${ins[i].node})` : ''}: global ${shapeText(global)}, per device ${shapeText(t)}`);
  });
  (s.deviceOutputs ?? []).forEach((t, i) => {
    out.push(`output${(s.deviceOutputs?.length ?? 0) > 1 ? ' ' + i : ''}: global ${shapeText(n.outputs[i])}, per device ${shapeText(t)}`);
  });
  for (const c of s.comms ?? []) {
    out.push(`${c.kind}${c.group ? ` over ${c.group} devices` : ''}${c.why ? `: ${c.why}` : ''}`);
  }
  return out;
}
