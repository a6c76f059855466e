// The words the view uses for the hardware layer, per target: what the hardware model recorded
// (graph.proto HardwareLayer: `ascend`, the target `spec`; per kernel `unit`, `bound`, cycles)
// said in the target's own vocabulary. Ascend targets have a Cube and a Vector unit on AI cores,
// an AI CPU, launch ("dispatch") overhead and Global Memory; the cpu model has CPU cores, the
// executor's per-operator overhead and DRAM. Node text, tooltips, the legend, the summary and the
// core timeline all read these, so no Ascend word reaches a CPU target.
import { commOf, shardingLines, stageOf } from './parallel';
import type { Cell, HardwareKernel, HardwareLayer } from './protocol';
import { fmtBytes, fmtNum, shapeText, tensorText } from './format';
import type { VNode } from './model';

export interface Vocab {
  /** Ascend (the hardware layer's `ascend`), else another model (the cpu one). */
  ascend: boolean;
  target: string;       // the target's display name
  clockMhz: number;     // 0 when unknown
  core: string;         // "AI core" | "core"
  memory: string;       // "GM" | "DRAM": where tensors live between kernels
}

/** The vocabulary of a Cell's hardware layer (Ascend words only when the layer says Ascend). */
export function vocabOf(hw: HardwareLayer | undefined): Vocab {
  const ascend = hw?.ascend === true || (hw?.ascend === undefined && hw?.spec?.kind === 'ascend');
  return {
    ascend,
    target: hw?.spec?.displayName ?? hw?.target ?? '',
    clockMhz: hw?.spec?.frequencyMhz ?? 0,
    core: ascend ? 'AI core' : 'core',
    memory: ascend ? 'GM' : 'DRAM',
  };
}

export function cellVocab(cell: Cell | null | undefined): Vocab {
  return vocabOf(cell?.hardware);
}

/** A kernel's unit, short, as its target calls it. */
export function unitName(v: Vocab, unit: string | undefined): string {
  switch (unit) {
    case 'cube': return 'Cube';
    case 'vector': return 'Vector';
    case 'aicpu': return 'AI CPU';
    case 'cpu': return 'CPU';
    case 'host': return 'host';
    case undefined: case '': return '?';
    default: return unit;
  }
}

/** What a unit is, in a sentence. */
export function unitSentence(v: Vocab, unit: string | undefined): string {
  switch (unit) {
    case 'cube': return 'Cube: the AI core\'s matrix unit (convolutions and matrix multiplies, in 16×16 fractals).';
    case 'vector': return 'Vector: the AI core\'s vector unit (elementwise operators, pooling, normalisation, layout conversions).';
    case 'aicpu': return 'AI CPU: the Ascend chip\'s CPU cores, for operators without an AI-core kernel.';
    case 'cpu': return `CPU: the host's CPU cores${v.target ? ` (${v.target})` : ''}, MindSpore's CPU backend.`;
    case 'host': return 'host: no kernel is launched (the shape is relabelled, no data moves).';
    default: return `${unit ?? '?'}: the unit the hardware model runs this kernel on.`;
  }
}

/** The short word for a kernel's bound (HardwareKernel.bound) on this target. */
export function boundWord(v: Vocab, bound: string | undefined): string {
  switch (bound) {
    case 'compute': return 'compute';
    case 'memory': return 'memory';
    case 'dispatch': return v.ascend ? 'dispatch' : 'overhead';
    case 'none': return 'no-op';
    case 'unknown-shape': return 'not costed';
    case 'unsupported': return 'unsupported';
    case undefined: case '': return '';
    default: return bound;
  }
}

/** The explanation of each bound word, without a kernel's numbers (the legend's). */
export function boundDefinition(v: Vocab, bound: 'compute' | 'memory' | 'dispatch'): string {
  switch (bound) {
    case 'compute':
      return 'compute-bound: its arithmetic takes longer than moving its bytes on this unit.';
    case 'memory':
      return `memory-bound: moving its bytes takes longer than its arithmetic at this unit's ${v.memory} bandwidth.`;
    case 'dispatch':
      return v.ascend
        ? 'dispatch-bound: launching the kernel on the AI cores takes longer than running it.'
        : 'overhead-bound: the CPU executor\'s per-operator overhead takes longer than the work itself.';
  }
}

/** A kernel's launch overhead (µs): its time beyond its cycles at the target's clock. */
export function overheadUs(v: Vocab, k: HardwareKernel): number {
  if (!(v.clockMhz > 0)) return 0;
  return Math.max(0, (k.timeUs ?? 0) - (k.cycles ?? 0) / v.clockMhz);
}

/** Microseconds with three significant digits, no trailing zeros ("0.3 µs", "2.95 µs", "36.5 µs"). */
const us = (x: number): string => `${x >= 1e4 ? fmtNum(x) : String(Number(x.toPrecision(3)))} µs`;

/** Why a kernel is bound the way it is, in a sentence with the numbers behind it when known. */
export function boundSentence(v: Vocab, k: HardwareKernel): string {
  const c = k.computeCycles ?? 0, m = k.movementCycles ?? 0;
  const bytes = `${fmtBytes(k.gmReadBytes ?? 0)} read, ${fmtBytes(k.gmWriteBytes ?? 0)} written`;
  switch (k.bound) {
    case 'compute':
      return `compute-bound: its arithmetic (${fmtNum(c)} cycles) takes longer than moving its bytes (${fmtNum(m)} cycles) on the ${unitName(v, k.unit)} unit.`;
    case 'memory':
      return `memory-bound: moving its bytes (${fmtNum(m)} cycles; ${bytes} in ${v.memory}) takes longer than its arithmetic (${fmtNum(c)} cycles) at this unit's bandwidth.`;
    case 'dispatch': {
      const ov = overheadUs(v, k), run = Math.max(0, (k.timeUs ?? 0) - ov);
      const nums = ov > 0 ? ` (${us(ov)} against ${us(run)} of work)` : '';
      return v.ascend
        ? `dispatch-bound: launching the kernel takes longer than running it${nums}.`
        : `overhead-bound: the CPU executor's per-operator overhead takes longer than the work itself${nums}.`;
    }
    case 'none': return 'no-op: no kernel is launched (the shape is relabelled, no data moves).';
    case 'unknown-shape': return 'not costed: its shapes are not fully known.';
    case 'unsupported': return `unsupported: no kernel for this operator on ${v.target || 'this target'}.`;
    default: return k.bound ? `${k.bound}.` : '';
  }
}

/** "cyc" on a node, in a sentence. */
export function cycSentence(v: Vocab): string {
  const clock = v.clockMhz > 0 ? ` at ${Math.round(v.clockMhz * 10) / 10} MHz` : '';
  return v.ascend
    ? `cyc: clock cycles per AI core${clock}, summed over the node's kernels.`
    : `cyc: clock cycles per CPU core${clock}, summed over the node's kernels.`;
}

/** "Σ" on a collapsed group, in a sentence (`nodes`: how many it holds, when one group is meant). */
export function sigmaSentence(nodes?: number): string {
  return nodes === undefined
    ? 'Σ: the sum over the nodes inside a collapsed group (groups have their own colour scale).'
    : `Σ: the sum over the ${nodes} node${nodes === 1 ? '' : 's'} inside this group.`;
}

/** The hardware line of a node: "Cube · 3.39k cyc · memory" (its first kernel's unit and bound). */
export function hardwareLine(v: Vocab, ks: readonly HardwareKernel[] | undefined): string {
  if (!ks || ks.length === 0) return '';
  const k = ks[0];
  const cyc = ks.reduce((s, x) => s + (x.cycles ?? 0), 0);
  const b = boundWord(v, k.bound);
  return `${unitName(v, k.unit)} · ${fmtNum(cyc)} cyc${b ? ` · ${b}` : ''}`;
}

/** The explanation of a node's hardware line: unit, cores, time, and the sentences behind it. */
export function hardwareExplanation(v: Vocab, ks: readonly HardwareKernel[] | undefined): string[] {
  if (!ks || ks.length === 0) return [];
  const out: string[] = [];
  ks.forEach((k, i) => {
    const n = k.blockDim ?? 0;
    const on = n > 0 && k.unit !== 'host' ? ` on ${n} ${v.core}${n === 1 ? '' : 's'}` : '';
    const head = ks.length > 1 ? `Kernel ${i + 1}${k.phase && k.phase !== 'forward' ? ` (${k.phase})` : ''}: ` : '';
    out.push(`${head}${unitName(v, k.unit)}${on} · ${fmtNum(k.cycles ?? 0)} cyc · ${us(k.timeUs ?? 0)}`);
    const why = boundSentence(v, k);
    if (why) out.push(why);
  });
  out.push(cycSentence(v));
  return out;
}

/** A node's accessible name: what it is, its output tensors and, in the hardware layer, its line. */
export function accessibleName(v: Vocab, n: VNode, layer: string): string {
  if (n.failure) return `Failed call ${n.failure.id}${n.failure.api ? ` (${n.failure.api})` : ''}: ${n.failure.message ?? ''}`;
  const parts: string[] = [];
  // An operator by its op ("Conv2D conv1"), an input, parameter or constant by its kind ("Input x").
  const what = n.kind === 'op' || !n.kind ? n.op : n.kind.charAt(0).toUpperCase() + n.kind.slice(1);
  parts.push(`${what} ${n.id}`.trim());
  if (n.fused && n.sub) parts.push(`fused ${n.sub}`);
  const outs = n.outputs.map((t) => tensorText(t)).filter((s) => s !== '');
  if (outs.length) parts.push(`output ${outs.join(', ')}`);
  if (layer === 'hardware') {
    const line = hardwareLine(v, n.optimized?.hardware);
    if (line) parts.push(line.replace(' cyc', ' cycles').replace(/ · /g, ', '));
  }
  return parts.join('; ');
}

/**
 * A node's hover tooltip, as lines: what it is, its tensors, and in the hardware layer its
 * kernels with the sentences that explain the node's text (bound with its numbers, "cyc").
 */
export function nodeTip(v: Vocab, n: VNode, layer: string): string[] {
  if (n.failure) {
    const f = n.failure;
    return [`${f.id} · ${f.api || f.op || ''}: ${f.message ?? ''}${f.code ? ` [${f.code}]` : ''}`];
  }
  if (n.kind === 'lazy') return [`${n.label} (${n.sub}): expand the group to load them`];
  const lines: string[] = [];
  const api = n.semantic?.api;
  lines.push(`${n.op || n.kind} · ${n.id}${api && api !== n.op ? ` (${api})` : ''}`);
  if (n.fused && n.sub) lines.push(`fused: ${n.sub}`);
  const ins = n.inputs.map((e) => tensorText(e.tensor)).filter((s) => s !== '');
  if (ins.length) lines.push(`in: ${ins.join(', ')}`);
  const outs = n.outputs.map((t) => tensorText(t)).filter((s) => s !== '');
  if (outs.length) lines.push(`out: ${outs.join(', ')}`);
  const stage = stageOf(n);
  if (stage !== null) lines.push(`pipeline stage ${stage}`);
  const comm = commOf(n);
  if (comm) lines.push(`communication: ${comm.kind}${comm.group ? ` over ${comm.group} devices` : ''}`);
  lines.push(...shardingLines(n));
  if (layer === 'hardware') lines.push(...hardwareExplanation(v, n.optimized?.hardware));
  return lines;
}

/** A collapsed group's hover tooltip: its header, Σ of the metric shown with what Σ means. */
export function groupTip(path: string, rest: string, nodes: number, sum?: string): string[] {
  const lines = [`${path} · ${rest}`];
  if (sum) lines.push(`Σ ${sum}`, sigmaSentence(nodes));
  lines.push('Click to expand.');
  return lines;
}

/** The input shapes of a node ("1×64×56×56, 1×64×56×56"). */
export function inputsText(n: VNode): string {
  return n.inputs.map((e) => shapeText(e.tensor)).filter((s) => s !== '').join(', ');
}
