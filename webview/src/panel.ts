// The side panel: everything known about the selected node, per layer, in tabs (tabs.ts): Node
// (op, attributes, inputs and outputs, parameters, source), Cost (FLOPs, bytes, the hardware
// kernels), Fusion · Memory (the optimization layer's facts) and Debug (the paused node's live
// statistics); the Cell summary when nothing is selected, with the same tabs; the list of a
// multi-selection (the search's "select all matches"). Copy buttons (copy.ts) on every value.
import type { AttrValue, Cell, DebugFocus, Estimate, FailedCall, FusionDecision, HardwareKernel, OptimizedNode, Range, Tensor } from './protocol';
import { FAILED_PREFIX, edgeLabel, outputBytes, type Layer, type VNode } from './model';
import { dimText, escapeHtml as h, flopsText, fmtBytes, fmtNum, rangeText, tensorBytes, tensorText, shapeText } from './format';
import { layerState } from './failures';
import { focusShape, isPaused } from './debug';
import { copyButton, copyJsonButton, shapeTuple } from './copy';
import { tabsHtml, type Tab } from './tabs';
import { type Vocab, boundDefinition, boundWord, cellVocab, unitName, unitSentence, vocabOf } from './vocab';
import { nodeAttrs } from './search';

/** The tabs of the panel, by id; a Cell's first tab is "Cell", a node's "Node". */
export const PANEL_TABS = ['node', 'cost', 'opt', 'debug'] as const;
export type PanelTab = typeof PANEL_TABS[number];

export interface PanelContext {
  cell: Cell;
  layer: Layer;
  node: VNode;
  editor: boolean;                 // reveal through the editor
  kernels: HardwareKernel[] | null; // detailed kernels (NodeDetails), when known
  detailsPending: boolean;
  semanticById: Map<string, { op?: string; id: string }>;
  bufferMates: string[];           // "node:output" sharing a buffer with this node's outputs
  tab?: string;                    // the tab chosen (kept across nodes and updates)
  consumers?: string[];            // drawn nodes reading this node's outputs
  debugCard?: string;              // the paused node's card ('' when not paused): the Debug tab
  pausedHere?: boolean;            // this node stands for the paused one
}

function attrText(v: AttrValue): string {
  if (v === null) return 'None';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

function row(k: string, v: string, raw = false): string {
  return `<tr><th>${h(k)}</th><td>${raw ? v : h(v)}</td></tr>`;
}

/** A row whose value has a copy button. */
function rowCopy(k: string, v: string, copyLabel: string, copy: string, raw = false): string {
  return `<tr><th>${h(k)}</th><td>${raw ? v : h(v)} ${copyButton(copyLabel, copy)}</td></tr>`;
}

/** The input shapes in the CLI's --input syntax, one per construct input: "1,3,224,224",
 * "8,128:int32"; symbolic dims as written ("N,3,H,W"). */
export function inputSpecs(cell: Cell): string {
  return (cell.inputs ?? []).map((t) => {
    const dims = (t.shape ?? []).map(dimText).join(',');
    return t.dtype && t.dtype !== 'float32' && t.dtype !== 'unknown' ? `${dims}:${t.dtype}` : dims;
  }).join('; ');
}

/** The input box (view.proto's InputsRequest): the shapes to analyse the Cell with, for the
 * views of this file; "Settings" goes back to the workspace's. */
function inputsForm(cell: Cell): string {
  return `<form class="inputs-form" title="Input shapes for the graph view, one per construct input, separated by ';' (e.g. 8,3,224,224 or 8,128:int32 or N,3,H,W)">` +
    `<input class="mono" name="shapes" value="${h(inputSpecs(cell))}" aria-label="Input shapes" spellcheck="false">` +
    `<button type="submit" title="Analyse the graph with these input shapes">Apply</button>` +
    `<button type="button" class="inputs-reset" title="Back to the input shapes of the settings (mindspore_config.json / cellscope.inputs)">Settings</button>` +
    `<button type="button" class="inputs-save" title="Write these input shapes to the workspace's mindspore_config.json (VS Code asks first)">Save</button></form>`;
}

// The hardware estimate's parallel rows (empty for a single-device job): the communication one
// device sends and its time on the interconnect (or why there is none), the pipeline's bubble
// and step, and each stage's compute and communication time.
export function parallelEstimateRows(e: Estimate): [string, string][] {
  const rows: [string, string][] = [];
  const bytes = e.commBytes ?? 0;
  if (bytes > 0) {
    rows.push(['communication', e.commTimed
      ? `${fmtNum(e.commMs ?? 0)} ms · ${fmtBytes(bytes)} sent per device`
      : `${fmtBytes(bytes)} sent per device (no interconnect figure: time not estimated)`]);
  }
  const p = e.pipelineStages ?? 0;
  if (p > 1) {
    rows.push(['pipeline', `${p} stages × ${e.microBatches ?? 0} micro-batches: bubble ${((e.bubbleFraction ?? 0) * 100).toFixed(1)} %, step ${fmtNum(e.pipelineStepMs ?? 0)} ms`]);
    for (const st of e.stages ?? []) {
      const comm = st.commMs ? ` + ${fmtNum(st.commMs)} ms communication` : '';
      rows.push([`stage ${st.stage ?? 0}`, `${fmtNum(st.computeMs ?? 0)} ms compute${comm}`]);
    }
  }
  return rows;
}

function section(title: string, body: string, open = true): string {
  return `<details class="sec"${open ? ' open' : ''}><summary>${h(title)}</summary>${body}</details>`;
}

const ZERO_RANGE: Range = { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } };

export function sourceLink(file: string | undefined, range: Range | undefined, editor: boolean): string {
  if (!file) return '';
  const text = rangeText(file, range);
  if (!editor) return `<span class="src">${h(text)}</span>`;
  const payload = h(JSON.stringify({ file, range: range ?? ZERO_RANGE }));
  return `<a href="#" class="src reveal" data-reveal="${payload}">${h(text)}</a>`;
}

/** "file:line" (1-based), what the source's copy button copies. */
export function fileLine(file: string, range: Range | undefined): string {
  return range ? `${file}:${(range.start?.line ?? 0) + 1}` : file;
}

/** A source link with its copy button (file:line). */
function sourceRow(k: string, file: string | undefined, range: Range | undefined, editor: boolean): string {
  const link = sourceLink(file, range, editor);
  return link && file ? rowCopy(k, link, 'Copy source location', fileLine(file, range), true) : '';
}

/** A kernel's bound, in its target's words, with the definition on hover (vocab.ts). */
function boundHtml(v: Vocab, b: string | undefined): string {
  if (!b) return '';
  const t = b === 'compute' || b === 'memory' || b === 'dispatch' ? boundDefinition(v, b) : '';
  return `<span class="bound b-${h(b)}"${t ? ` title="${h(t)}"` : ''}>${h(boundWord(v, b))}</span>`;
}

function kernelHtml(v: Vocab, k: HardwareKernel, detail: boolean): string {
  const rows: string[] = [];
  rows.push(row('kernel', `${k.name ?? ''} (${k.phase ?? 'forward'})`));
  rows.push(`<tr><th>unit</th><td title="${h(unitSentence(v, k.unit))}">${h(unitName(v, k.unit))}</td></tr>`);
  rows.push(row('bound', boundHtml(v, k.bound), true));
  const cores = k.coreIds ?? [];
  const coreText = cores.length > 8 ? `${cores.length} cores: ${cores[0]}–${cores[cores.length - 1]}` : cores.join(', ');
  rows.push(row('block dim / cores', `${k.blockDim ?? 0} · ${coreText}`));
  const cc = k.computeCycles ?? 0, mc = k.movementCycles ?? 0, tot = k.cycles ?? 0;
  const mx = Math.max(cc, mc, tot, 1);
  rows.push(`<tr><th title="cycles of one core: compute and data movement overlap (pipelined), the total is not their sum">cycles</th><td><div class="bars">` +
    `<div class="bar"><span style="width:${(100 * tot) / mx}%"></span><em>total ${fmtNum(tot)}</em></div>` +
    `<div class="bar c"><span style="width:${(100 * cc) / mx}%"></span><em>compute ${fmtNum(cc)}</em></div>` +
    `<div class="bar m"><span style="width:${(100 * mc) / mx}%"></span><em>movement ${fmtNum(mc)}</em></div></div></td></tr>`);
  rows.push(row('time', `${fmtNum(k.timeUs ?? 0)} µs (starts at ${fmtNum(k.startUs ?? 0)} µs)`));
  rows.push(row(`${v.memory} bytes`, `read ${fmtBytes(k.gmReadBytes ?? 0)} · write ${fmtBytes(k.gmWriteBytes ?? 0)}`));
  rows.push(row('bandwidth', `${fmtNum(k.bandwidthGbps ?? 0)} GB/s`));
  if (k.macs) rows.push(row('MACs', fmtNum(k.macs)));
  if (k.tiles) rows.push(row('tiles / core', fmtNum(k.tiles)));
  let out = `<table class="kv">${rows.join('')}</table>`;
  if (detail) {
    if (k.tiling?.length) {
      out += `<div class="sub">Tiling</div><table class="grid"><tr><th>buffer</th><th>tile</th><th>bytes</th><th>×</th><th>use</th></tr>` +
        k.tiling.map((t) => {
          const use = t.capacity ? ((100 * (t.bytes ?? 0) * (t.copies ?? 1)) / t.capacity) : 0;
          return `<tr><td>${h(t.buffer ?? '')}</td><td>${h(t.tile ?? '')}</td><td class="num">${fmtBytes(t.bytes ?? 0)}</td><td>${t.copies ?? 1}</td>` +
            `<td><div class="mini"><span style="width:${Math.min(100, use)}%"></span></div>${use.toFixed(0)}%</td></tr>`;
        }).join('') + '</table>';
    }
    if (k.loops?.length) {
      out += `<div class="sub">Loops</div><table class="grid"><tr><th>var</th><th>trips</th><th>what</th></tr>` +
        k.loops.map((l) => `<tr><td>${h(l.var ?? '')}</td><td>${fmtNum(l.trips ?? 0)}</td><td>${h(l.what ?? '')}</td></tr>`).join('') + '</table>';
    }
    if (k.dma?.length) {
      out += `<div class="sub">DMA (per core)</div><table class="grid"><tr><th>channel</th><th>path</th><th>bytes</th></tr>` +
        k.dma.map((d) => `<tr><td>${h(d.channel ?? '')}</td><td>${h(d.from ?? '')} → ${h(d.to ?? '')}</td><td class="num">${fmtBytes(d.bytes ?? 0)}</td></tr>`).join('') + '</table>';
    }
    if (k.schedule?.length) {
      const mx2 = Math.max(1, ...k.schedule.map((s) => (s.cycles ?? 0)));
      out += `<div class="sub">Instruction schedule (per tile)</div><table class="grid"><tr><th>unit</th><th>instruction</th><th>×</th><th>cycles</th></tr>` +
        k.schedule.map((s) => `<tr><td><span class="unit u-${h((s.unit ?? '').toLowerCase())}">${h(s.unit ?? '')}</span></td><td>${h(s.op ?? '')}</td>` +
          `<td>${fmtNum(s.count ?? 0)}</td><td><div class="mini"><span style="width:${(100 * (s.cycles ?? 0)) / mx2}%"></span></div>${fmtNum(s.cycles ?? 0)}</td></tr>`).join('') + '</table>';
    }
  }
  return out;
}

/** The error glyph (a danger-coloured disc with "!"), as in the canvas. */
export const ERROR_ICON = '<i class="err-icon" aria-hidden="true"></i>';

/** The panel's header: the op (HTML), "Copy as JSON", and the id line (HTML). */
function header(opHtml: string, idHtml: string, cls = ''): string {
  return `<div class="ph${cls ? ' ' + cls : ''}"><div class="ph-row"><div class="op">${opHtml}</div>${copyJsonButton('Copy as JSON', 'node')}</div>` +
    `<div class="id">${idHtml}</div></div>`;
}

function idLine(id: string): string {
  return `${h(id)} ${copyButton('Copy node id', id)}`;
}

function debugTab(c: { debugCard?: string; pausedHere?: boolean }): Tab | null {
  if (!c.debugCard) return null;
  return { id: 'debug', label: 'Debug', html: c.debugCard, mark: !!c.pausedHere,
    title: c.pausedHere ? 'The debugger is paused at this node: its live statistics' : 'The debugger is paused: the live statistics of its node' };
}

function tabbed(tabs: (Tab | null)[], chosen: string | undefined, label: string): string {
  return tabsHtml(tabs.filter((t): t is Tab => t !== null), chosen ?? 'node', label);
}

/** A failed call of construct (Cell.failures): the error, where it is, what it received. */
function failurePanel(c: PanelContext, f: FailedCall): string {
  const n = c.node;
  const parts: string[] = [];
  parts.push(header(`${ERROR_ICON}${h(f.id)} · ${h(f.api || f.op || '')}`, 'failed call: construct stops here', 'failed'));
  const file = f.file || c.cell.file;
  const open = c.editor && file ? ` <a href="#" class="reveal open" data-reveal="${h(JSON.stringify({ file, range: f.range ?? ZERO_RANGE }))}">open in editor</a>` : '';
  parts.push(`<div class="failure-msg">${f.code ? `<span class="code">${h(f.code)}</span> ` : ''}${h(f.message ?? '')}${open}</div>`);
  const node: string[] = [];
  const gen: string[] = [];
  gen.push(row('kind', 'failed call'));
  if (f.api) gen.push(rowCopy('api', f.api, 'Copy API', f.api));
  if (f.op) gen.push(row('op', f.op));
  gen.push(row('scope', f.scope || '(root)'));
  gen.push(sourceRow('source', file, f.range, c.editor));
  node.push(section('Call', `<table class="kv">${gen.join('')}</table>`));
  // What it received (the semantic values), and the nodes drawn for them in this layer.
  const semById = new Map((c.cell.nodes ?? []).map((x) => [x.id, x] as const));
  const drawn = new Set(n.inputs.map((e) => e.src));
  const ins = (f.inputs ?? []).map((e) => {
    const out = e.output ?? 0;
    const name = `${e.node}:${out}`;
    const link = c.layer === 'semantic' && drawn.has(e.node) ? `<a href="#" class="goto" data-id="${h(e.node)}">${h(name)}</a>` : h(name);
    const t = semById.get(e.node)?.outputs?.[out];
    return `<tr><td class="mono">${link}</td><td class="mono">${h(tensorText(t))}${t ? ' ' + copyButton('Copy shape', shapeTuple(t)) : ''}</td></tr>`;
  }).join('');
  let here = '';
  if (c.layer !== 'semantic' && (f.inputs ?? []).length > 0) {
    here = n.inputs.length
      ? `<div class="sub">In this layer, from</div><ul class="origins">${n.inputs.map((e) =>
        `<li><a href="#" class="goto" data-id="${h(e.src)}">${h(e.src)}</a></li>`).join('')}</ul>`
      : '<div class="muted small">Not in this layer: the passes eliminated what it received (nothing used it).</div>';
  }
  node.push(section('Inputs', (ins ? `<table class="grid">${ins}</table>` : '<div class="none">none</div>') + here));
  node.push(section('Outputs', '<div class="none">none: nothing that depends on this call is in the graph</div>'));
  const more = (c.cell.failures ?? []).filter((x) => x !== f);
  if (more.length) {
    node.push(section('Other failed calls', `<ul class="origins">${more.map((x) =>
      `<li><a href="#" class="goto" data-id="${h(FAILED_PREFIX + x.id)}">${h(x.id)}</a> <span class="muted">${h(x.api ?? '')}: ${h(x.message ?? '')}</span></li>`).join('')}</ul>`));
  }
  parts.push(tabbed([{ id: 'node', label: 'Call', html: node.join('') }, debugTab(c)], c.tab, 'Failed call details'));
  return parts.join('');
}

/** The kernels of the optimization layer made from semantic node `id` (its origins include it). */
export function kernelsFrom(cell: Cell, id: string): OptimizedNode[] {
  return (cell.optimized?.nodes ?? []).filter((o) => (o.origins ?? []).includes(id));
}

/** The fusion decisions about a node: naming it (semantic) or its origins, or made into it (kernel). */
export function decisionsFor(cell: Cell, ids: readonly string[], kernel?: string): FusionDecision[] {
  const want = new Set(ids);
  return (cell.optimized?.fusions ?? []).filter((d) => (kernel !== undefined && d.kernel === kernel) || (d.nodes ?? []).some((x) => want.has(x)));
}

function decisionsHtml(ds: readonly FusionDecision[], layer: Layer): string {
  if (!ds.length) return '';
  return `<ul class="decisions">${ds.map((d) => {
    const k = d.kernel ? (layer === 'semantic'
      ? ` → <a href="#" class="goto-layer" data-layer="optimized" data-id="${h(d.kernel)}">${h(d.kernel)}</a>`
      : ` → <a href="#" class="goto" data-id="${h(d.kernel)}">${h(d.kernel)}</a>`) : '';
    const nodes = (d.nodes ?? []).map((x) => layer === 'semantic'
      ? `<a href="#" class="goto" data-id="${h(x)}">${h(x)}</a>` : `<a href="#" class="goto-sem" data-id="${h(x)}">${h(x)}</a>`).join(' + ');
    return `<li class="${d.fused ? 'fused' : 'not-fused'}"><span class="verdict">${d.fused ? 'fused' : 'not fused'}</span> ` +
      `<span class="muted">${h(d.pass ?? '')}${d.pattern ? ` (${h(d.pattern)})` : ''}</span><div>${nodes}${k}</div>` +
      `<div class="reason">${h(d.reason ?? '')}</div></li>`;
  }).join('')}</ul>`;
}

/** The tensors ("node:output") sharing an arena buffer with the outputs of optimized node `n`. */
export function bufferMates(cell: Cell, n: OptimizedNode): string[] {
  const bufs = cell.optimized?.memory?.buffers ?? [];
  const out: string[] = [];
  for (const p of n.memory ?? []) {
    // proto3 JSON leaves out zeros: no `buffer` is buffer 0 (usually the one reused most).
    const self = `${n.id}:${p.output ?? 0}`;
    const b = bufs[p.buffer ?? 0];
    if (!b?.tensors?.includes(self)) continue;
    for (const t of b.tensors) if (t !== self) out.push(t);
  }
  return out;
}

function memoryHtml(c: PanelContext, opt: OptimizedNode): string {
  if (!opt.memory?.length) return '';
  const mem = opt.memory.map((p) => `<tr><td>#${p.output ?? 0}</td><td>${fmtBytes(p.size ?? 0)}</td><td>${fmtBytes(p.offset ?? 0)}</td>` +
    `<td>${p.first ?? 0}–${p.last ?? 0}</td><td>${p.buffer ?? 0}</td></tr>`).join('');
  const mates = c.bufferMates.length
    ? `<div class="sub">Shares its buffer with</div><ul class="origins">${c.bufferMates.slice(0, 40).map((t) => {
      const id = t.slice(0, t.lastIndexOf(':'));
      return `<li><a href="#" class="goto" data-id="${h(id)}">${h(t)}</a></li>`;
    }).join('')}${c.bufferMates.length > 40 ? `<li class="muted">… ${c.bufferMates.length - 40} more</li>` : ''}</ul>`
    : '<div class="muted small">No other tensor reuses its buffer.</div>';
  return section('Memory placement', `<table class="grid"><tr><th>out</th><th>size</th><th>offset</th><th title="execution steps the tensor is alive">steps</th><th>buffer</th></tr>${mem}</table>${mates}`);
}

/** The Node tab: what the node is, what it reads and makes, its attributes and parameters. */
function nodeTab(c: PanelContext): string {
  const n = c.node;
  const sem = n.semantic;
  const opt = n.optimized;
  const out: string[] = [];
  const gen: string[] = [];
  gen.push(rowCopy('op', n.op || n.kind, 'Copy op', n.op || n.kind));
  gen.push(row('kind', n.kind));
  if (sem?.api) gen.push(rowCopy('api', sem.api, 'Copy API', sem.api));
  gen.push(row('scope', n.scope || '(root)'));
  if (opt && c.layer !== 'semantic' && (opt.origins ?? []).length > 1) gen.push(row('made from', `${(opt.origins ?? []).length} semantic nodes (Fusion · Memory tab)`));
  gen.push(sourceRow('source', sem?.file, sem?.range, c.editor));
  const flops = opt?.flops ?? sem?.flops ?? 0;
  const shown = flopsText(flops, sem?.outputs ?? [], sem?.category ?? '');
  if (flops || shown !== '0') gen.push(row('FLOPs', shown));
  out.push(section('Node', `<table class="kv">${gen.join('')}</table>`));
  const ins = n.inputs.map((e) => {
    const t = e.tensor;
    return `<tr><td class="mono"><a href="#" class="goto" data-id="${h(e.src)}">${h(e.src)}:${e.output}</a></td>` +
      `<td class="mono">${h(edgeLabel(e))}${t?.dtype && t.dtype !== 'unknown' ? ' ' + h(t.dtype) : ''}${t?.format ? ' ' + h(t.format) : ''}` +
      `${t ? ' ' + copyButton('Copy shape', shapeTuple(t)) : ''}</td></tr>`;
  }).join('');
  out.push(section('Inputs', ins ? `<table class="grid">${ins}</table>` : '<div class="none">none</div>'));
  const outs = n.outputs.map((t, i) => `<tr><td class="mono">#${i}${t.name ? ' ' + h(t.name) : ''}</td>` +
    `<td class="mono">${h(tensorText(t))} ${copyButton('Copy shape', shapeTuple(t))}</td></tr>`).join('');
  const users = c.consumers ?? [];
  const usedBy = users.length
    ? `<div class="sub">Used by</div><ul class="origins">${users.slice(0, 30).map((u) => `<li><a href="#" class="goto" data-id="${h(u)}">${h(u)}</a></li>`).join('')}` +
      `${users.length > 30 ? `<li class="muted">… ${users.length - 30} more</li>` : ''}</ul>` : '';
  out.push(section('Outputs', (outs ? `<table class="grid">${outs}</table>` : '<div class="none">none</div>') + usedBy));
  const attrs = c.layer !== 'semantic' ? nodeAttrs(n) : sem?.attrs ?? {};
  const ak = Object.keys(attrs).sort();
  if (ak.length) {
    const own = !opt || c.layer === 'semantic' || Object.keys(opt.attrs ?? {}).length > 0;
    out.push(section(own ? 'Attributes' : `Attributes (of ${sem?.id ?? 'its origin'})`,
      `<table class="kv">${ak.map((k) => rowCopy(k, attrText(attrs[k]), `Copy ${k}`, attrText(attrs[k]))).join('')}</table>`));
  }
  const params = opt?.params ?? sem?.params ?? [];
  if (params.length) {
    const pm = new Map((c.cell.parameters ?? []).map((p) => [p.name, p] as const));
    out.push(section('Parameters', `<table class="grid">${params.map((p) => {
      const pp = pm.get(p);
      return `<tr><td class="mono">${h(p)} ${copyButton('Copy parameter name', p)}</td><td class="mono">${pp ? h(tensorText({ shape: pp.shape, dtype: pp.dtype })) : ''}</td>` +
        `<td>${pp?.size ? fmtNum(pp.size) : ''}${pp && !pp.trainable ? ' (frozen)' : ''}</td></tr>`;
    }).join('')}</table>`));
  }
  return out.join('');
}

function sumKernels(ks: readonly HardwareKernel[], f: (k: HardwareKernel) => number): number {
  let s = 0;
  for (const k of ks) s += f(k);
  return s;
}

/** A share as a percentage with a bar ("6.1 %"). */
function shareHtml(part: number, whole: number): string {
  if (!(whole > 0) || !(part > 0)) return '';
  const p = (100 * part) / whole;
  return ` <span class="share" title="share of the Cell"><span class="mini"><span style="width:${Math.min(100, p)}%"></span></span>${p < 0.1 ? '<0.1' : p.toFixed(1)} %</span>`;
}

/** The Cost tab: FLOPs and bytes, then the kernels (their tiling and schedule in the hardware layer). */
function costTab(c: PanelContext): string {
  const n = c.node;
  const sem = n.semantic;
  const opt = c.layer !== 'semantic' ? n.optimized : undefined;
  const out: string[] = [];
  const flops = opt?.flops ?? sem?.flops ?? 0;
  const r: string[] = [];
  r.push(row('FLOPs', flopsText(flops, sem?.outputs ?? [], sem?.category ?? '') + shareHtml(flops, c.cell.flops ?? 0), true));
  const pm = new Map((c.cell.parameters ?? []).map((p) => [p.name, p] as const));
  let pcount = 0, pbytes = 0;
  for (const p of opt?.params ?? sem?.params ?? []) {
    const pp = pm.get(p);
    if (!pp) continue;
    pcount += pp.size ?? 0;
    pbytes += tensorBytes({ shape: pp.shape, dtype: pp.dtype });
  }
  if (pcount) r.push(row('parameters', `${fmtNum(pcount)} (${fmtBytes(pbytes)})`));
  const inBytes = n.inputs.reduce((s, e) => s + tensorBytes(e.tensor), 0);
  const outBytes = outputBytes(n);
  r.push(row('bytes read', inBytes ? fmtBytes(inBytes) : '0 B'));
  r.push(row('bytes written', outBytes ? fmtBytes(outBytes) : '0 B'));
  const moved = inBytes + outBytes + pbytes;
  if (flops > 0 && moved > 0) {
    r.push(`<tr><th title="FLOPs per byte read and written (inputs, outputs, parameters): low values are memory-bound on most hardware">intensity</th>` +
      `<td>${fmtNum(flops / moved)} FLOPs/byte</td></tr>`);
  }
  out.push(section('Compute', `<table class="kv">${r.join('')}</table>`));
  const hw = c.cell.hardware;
  const latencyUs = (hw?.estimate?.latencyMs ?? 0) * 1000;
  if (c.layer === 'hardware' && n.optimized) {
    const ks = c.kernels ?? n.optimized.hardware ?? [];
    if (ks.length === 0) out.push(section('Hardware', '<div class="none">no kernel (input, parameter or constant)</div>'));
    else {
      const t = sumKernels(ks, (k) => k.timeUs ?? 0);
      const total = latencyUs > 0 ? `<div class="muted small">${fmtNum(t)} µs of the ${fmtNum(latencyUs)} µs estimate${shareHtml(t, latencyUs)}</div>` : '';
      const body = ks.map((k, i) => (ks.length > 1 ? `<div class="sub">Kernel ${i + 1}</div>` : '') + kernelHtml(cellVocab(c.cell), k, true)).join('');
      const note = c.detailsPending ? '<div class="muted">loading tiling and schedule…</div>' : '';
      out.push(section('Hardware', note + total + body));
    }
  } else {
    // The kernels this node became (semantic) or is (optimized), summarised: the hardware layer has their detail.
    const kernels: [string, HardwareKernel][] = [];
    const sources = n.optimized && c.layer !== 'semantic' ? [n.optimized] : kernelsFrom(c.cell, n.id);
    for (const o of sources) for (const k of o.hardware ?? []) kernels.push([o.id, k]);
    if (kernels.length) {
      const voc = cellVocab(c.cell);
      const rows = kernels.map(([id, k]) => `<tr><td class="mono">${h(id)}</td><td>${h(unitName(voc, k.unit))}</td><td>${boundHtml(voc, k.bound)}</td>` +
        `<td>${fmtNum(k.cycles ?? 0)}</td><td>${fmtNum(k.timeUs ?? 0)} µs</td></tr>`).join('');
      const go = `<a href="#" class="goto-layer" data-layer="hardware" data-id="${h(kernels[0][0])}">Show in the Hardware layer</a> (tiling, loops, DMA, schedule)`;
      out.push(section(c.layer === 'semantic' ? 'Kernels made from it' : 'Kernel',
        `<table class="grid"><tr><th>kernel</th><th>unit</th><th>bound</th><th>cycles</th><th>time</th></tr>${rows}</table><div class="small">${go}</div>`));
    } else if (hw && c.layer === 'semantic' && c.cell.optimized) {
      out.push(section('Kernels made from it', `<div class="none">none: ${kernelsFrom(c.cell, n.id).length ? 'its kernel has no hardware figures' : 'the optimization layer has no kernel from it'}</div>`));
    }
  }
  return out.join('');
}

/** The Fusion · Memory tab: the optimization layer's facts about the node. */
function optTab(c: PanelContext): string {
  const n = c.node;
  const cell = c.cell;
  if (!cell.optimized) return '<div class="none pad">No optimization layer in this document.</div>';
  const out: string[] = [];
  const opt = n.optimized;
  if (opt && c.layer !== 'semantic') {
    const o: string[] = [];
    o.push(row('pass', opt.pass ?? ''));
    if (opt.pattern) o.push(row('pattern', opt.pattern));
    if (opt.reason) o.push(row('reason', opt.reason));
    const origins = (opt.origins ?? []).map((id) => {
      const s = c.semanticById.get(id);
      return `<li><a href="#" class="goto-sem" data-id="${h(id)}">${h(id)}</a> <span class="muted">${h(s?.op ?? '')}</span></li>`;
    }).join('');
    o.push(row('origins', origins ? `<ul class="origins">${origins}</ul>` : '<span class="muted">inserted by the pass</span>', true));
    out.push(section('Optimization', `<table class="kv">${o.join('')}</table>`));
    const ds = decisionsFor(cell, opt.origins ?? [], opt.id);
    if (ds.length) out.push(section('Fusion decisions', decisionsHtml(ds, c.layer)));
    const mem = memoryHtml(c, opt);
    out.push(mem || section('Memory placement', '<div class="none">no buffer of its own (an alias, a constant or a host no-op)</div>'));
    return out.join('');
  }
  // A semantic node: what the passes made of it.
  const made = kernelsFrom(cell, n.id);
  const removed = (cell.optimized.removed ?? []).find((r) => r.node === n.id);
  const r: string[] = [];
  if (made.length) {
    r.push(row('became', `<ul class="origins">${made.map((o) =>
      `<li><a href="#" class="goto-layer" data-layer="optimized" data-id="${h(o.id)}">${h(o.id)}</a> <span class="muted">${h(o.op ?? '')}` +
      `${(o.origins ?? []).length > 1 ? ` (with ${(o.origins ?? []).length - 1} more)` : ''}</span></li>`).join('')}</ul>`, true));
    const pass = made[0].pass;
    if (pass) r.push(row('pass', pass));
  } else if (removed) {
    r.push(row('removed by', removed.pass ?? ''));
    if (removed.reason) r.push(row('why', removed.reason));
  } else {
    r.push(row('became', '<span class="muted">no kernel (an input or a node without one in the optimized graph)</span>', true));
  }
  out.push(section('In the optimized graph', `<table class="kv">${r.join('')}</table>`));
  const ds = decisionsFor(cell, [n.id]);
  out.push(section('Fusion decisions', ds.length ? decisionsHtml(ds, c.layer) : '<div class="none">no fusion pattern starts or ends here</div>'));
  const placements = made.filter((o) => o.memory?.length);
  if (placements.length) {
    out.push(section('Memory placement (of its kernel)', `<table class="grid"><tr><th>kernel</th><th>size</th><th>offset</th><th>steps</th><th>buffer</th></tr>${placements.flatMap((o) =>
      (o.memory ?? []).map((p) => `<tr><td class="mono">${h(o.id)}#${p.output ?? 0}</td><td>${fmtBytes(p.size ?? 0)}</td><td>${fmtBytes(p.offset ?? 0)}</td>` +
        `<td>${p.first ?? 0}–${p.last ?? 0}</td><td>${p.buffer ?? 0}</td></tr>`)).join('')}</table>`));
  }
  return out.join('');
}

export function renderPanel(c: PanelContext): string {
  const n = c.node;
  if (n.failure) return failurePanel(c, n.failure);
  const head = header(h(n.op || n.kind), idLine(n.id));
  const tabs: (Tab | null)[] = [
    { id: 'node', label: 'Node', html: nodeTab(c), title: 'The node: op, attributes, inputs and outputs, parameters, source' },
    { id: 'cost', label: 'Cost', html: costTab(c), title: 'FLOPs, bytes and the hardware kernels (unit, bound, cycles, tiling)' },
    { id: 'opt', label: 'Fusion · Memory', html: optTab(c), title: 'What the optimization passes did: fusion, why (not), memory placement and buffer reuse' },
    debugTab(c),
  ];
  return head + tabbed(tabs, c.tab, 'Node details');
}

/** The JSON the header's "Copy as JSON" copies: the node as the document has it (a kernel with
 * its detailed kernels when fetched), or the failed call. */
export function nodeJson(c: Pick<PanelContext, 'node' | 'layer' | 'kernels'>): string {
  const n = c.node;
  if (n.failure) return JSON.stringify(n.failure, null, 2);
  if (c.layer !== 'semantic' && n.optimized) {
    const o: OptimizedNode = { ...n.optimized };
    if (c.kernels) o.hardware = c.kernels;
    return JSON.stringify(o, null, 2);
  }
  return JSON.stringify(n.semantic ?? { id: n.id, op: n.op, kind: n.kind, outputs: n.outputs }, null, 2);
}

/** The Cell's summary as JSON (without the node lists). */
export function cellJson(cell: Cell): string {
  const { nodes: _n, optimized, hardware, ...rest } = cell;
  void _n;
  const out: Record<string, unknown> = { ...rest };
  if (optimized) {
    const { nodes: _o, memory, ...o } = optimized;
    void _o;
    out.optimized = { ...o, memory: memory ? { ...memory, buffers: memory.buffers?.length ?? 0 } : undefined };
  }
  if (hardware) out.hardware = hardware;
  return JSON.stringify(out, null, 2);
}

/** The note at the top of the summary: where the graph stops (links to the failed call). */
function failureNote(text: string, cell: Cell): string {
  const f = cell.failures?.[0];
  const link = f ? ` <a href="#" class="goto" data-id="${h(FAILED_PREFIX + f.id)}">show</a>` : '';
  return `<div class="failure-note">${ERROR_ICON}<span>${h(text)}</span>${link}</div>`;
}

function unavailable(text: string): string {
  return `<div class="layer-state unavailable">${h(text)}: no kernel was compiled, so there are no figures.</div>`;
}

function partial(text: string): string {
  return `<div class="layer-state partial">${h(text)}: the figures cover the graph only up to there.</div>`;
}

export interface SummaryOptions {
  tab?: string;
  debugCard?: string;
  editor?: boolean;
  /** A lazy Cell: the node lists hold the loaded scopes only. */
  partialNodes?: boolean;
}

/** The most expensive nodes: kernels by time when the hardware layer has figures, else nodes by FLOPs. */
function topNodes(cell: Cell, layer: Layer, hwOk: boolean, partialNodes: boolean): string {
  const rows: { id: string; op: string; v: number }[] = [];
  let unit = '', total = 0;
  if (hwOk && cell.hardware && cell.optimized) {
    for (const o of cell.optimized.nodes ?? []) {
      const t = sumKernels(o.hardware ?? [], (k) => k.timeUs ?? 0);
      // The node drawn for it in this layer: the kernel, or (semantic) its main origin.
      const id = layer === 'semantic' ? o.origins?.[0] : o.id;
      if (t > 0 && id) rows.push({ id, op: o.op ?? '', v: t });
    }
    unit = 'µs';
    total = (cell.hardware.estimate?.latencyMs ?? 0) * 1000;
  } else {
    for (const n of cell.nodes ?? []) if ((n.flops ?? 0) > 0) rows.push({ id: n.id, op: n.op ?? '', v: n.flops ?? 0 });
    unit = 'FLOPs';
    total = cell.flops ?? 0;
  }
  if (rows.length === 0) return '';
  rows.sort((a, b) => b.v - a.v);
  const top = rows.slice(0, 10);
  const body = top.map((r) => `<tr><td>${h(r.op)}</td><td class="mono"><a href="#" class="goto" data-id="${h(r.id)}">${h(r.id)}</a></td>` +
    `<td class="num">${fmtNum(r.v)}${unit === 'µs' ? ' µs' : ''}</td><td>${shareHtml(r.v, total)}</td></tr>`).join('');
  const what = unit === 'µs' ? 'Slowest kernels (estimated time)' : 'Most FLOPs';
  return section(what, `<table class="grid"><tr><th>op</th><th>node</th><th>${unit === 'µs' ? 'time' : 'FLOPs'}</th><th>share</th></tr>${body}</table>` +
    (partialNodes ? '<div class="muted small">Of the scopes loaded so far (a large Cell loads its groups as they are opened).</div>' : ''));
}

export function renderCellSummary(cell: Cell, layer: Layer, opts: SummaryOptions = {}): string {
  const parts: string[] = [];
  parts.push(`<div class="ph"><div class="ph-row"><div class="op">${h(cell.className || cell.name)}</div>${copyJsonButton('Copy the Cell summary as JSON', 'cell')}</div>` +
    `<div class="id">${h(cell.name)} ${copyButton('Copy Cell name', cell.name)}</div></div>`);
  const st = layerState(cell, layer);
  if (st.kind !== 'complete') parts.push(failureNote(st.text, cell));
  // Cell: what it is, its inputs (the input box) and outputs.
  const r: string[] = [];
  r.push(row('parameters', `${fmtNum(cell.params ?? 0)} trainable · ${fmtNum(cell.totalParams ?? 0)} total`));
  r.push(row('FLOPs', flopsText(cell.flops ?? 0, cell.inputs ?? [])));
  r.push(row('nodes', String(cell.nodes?.length ?? 0)));
  r.push(row('inputs', `${h((cell.inputs ?? []).map(tensorText).join(', '))}${inputsForm(cell)}`, true));
  const outs = cell.outputs ?? [];
  r.push(outs.length ? rowCopy('outputs', outs.map(tensorText).join(', '), 'Copy output shapes', outs.map(shapeTuple).join(', ')) : row('outputs', ''));
  if (!cell.compiled) r.push(row('compiled', 'no — see diagnostics'));
  r.push(sourceRow('source', cell.file, cell.range, !!opts.editor));
  const cellTab = section('Cell', `<table class="kv">${r.join('')}</table>`) +
    `<p class="muted small pad">Click a node for its details. Keys: +/− zoom, 0 fit, Home/End the graph's start/end, arrows follow edges, / search.</p>`;

  // Cost: the totals, the hardware estimate, the most expensive nodes.
  const cost: string[] = [];
  const cr: string[] = [];
  cr.push(row('FLOPs', flopsText(cell.flops ?? 0, cell.inputs ?? [])));
  let wbytes = cell.optimized?.memory?.weightBytes ?? 0;
  if (!wbytes) for (const p of cell.parameters ?? []) wbytes += tensorBytes({ shape: p.shape, dtype: p.dtype });
  cr.push(row('parameters', `${fmtNum(cell.totalParams ?? 0)} (${fmtBytes(wbytes)})`));
  const ins = (cell.inputs ?? []).reduce((s, t) => s + tensorBytes(t), 0);
  const outb = outs.reduce((s, t) => s + tensorBytes(t), 0);
  if (ins || outb) cr.push(row('inputs / outputs', `${fmtBytes(ins)} / ${fmtBytes(outb)}`));
  cost.push(section('Compute', `<table class="kv">${cr.join('')}</table>`));
  const hw = cell.hardware;
  const hst = layerState(cell, 'hardware');
  if (hw && hst.kind === 'unavailable') {
    cost.push(section('Hardware estimate', `<table class="kv">${row('target', hw.spec?.displayName ?? hw.target ?? '')}</table>${unavailable(hst.short)}`));
  } else if (hw) {
    const e = hw.estimate ?? {};
    const voc = vocabOf(hw);  // the target's words (vocab.ts); proto3 JSON leaves `ascend: false` out
    const ascend = voc.ascend;
    const rows = [
      row('target', hw.spec?.displayName ?? hw.target ?? ''),
      row('latency', `${fmtNum(e.latencyMs ?? 0)} ms (${e.mode ?? hw.mode ?? ''}, batch ${e.batch ?? 1})`),
      row('throughput', `${fmtNum(e.throughputPerSec ?? 0)} / s`),
      ascend
        ? row('cube · vector · dispatch', `${fmtNum(e.cubeMs ?? 0)} · ${fmtNum(e.vectorMs ?? 0)} · ${fmtNum(e.dispatchMs ?? 0)} ms`)
        : row('CPU · overhead', `${fmtNum(e.cpuMs ?? 0)} · ${fmtNum(e.dispatchMs ?? 0)} ms`),
    ];
    rows.push(row(ascend ? 'cube utilization' : 'FMA utilization', `${((e.cubeUtilization ?? 0) * 100).toFixed(1)} %`));
    rows.push(row(`${voc.memory} traffic`, fmtBytes(e.gmBytes ?? 0)), row('kernels', String(hw.kernels ?? 0)));
    for (const [k, v] of parallelEstimateRows(e)) rows.push(row(k, v));
    cost.push(section(hst.kind === 'partial' ? 'Hardware estimate (partial)' : 'Hardware estimate',
      (hst.kind === 'partial' ? partial(hst.short) : '') + `<table class="kv">${rows.join('')}</table>` +
      (hw.statement ? `<p class="muted small">${h(hw.statement)}</p>` : '') +
      ((e.notes ?? []).length ? `<ul class="notes">${(e.notes ?? []).map((x) => `<li>${h(x)}</li>`).join('')}</ul>` : '')));
  }
  cost.push(topNodes(cell, layer, !!hw && hst.kind !== 'unavailable', !!opts.partialNodes));

  // Fusion · Memory: the optimization layer's summary, its decisions, what it removed, the passes.
  const opt: string[] = [];
  const o = cell.optimized;
  const ost = layerState(cell, 'optimized');
  if (!o) opt.push('<div class="none pad">No optimization layer in this document.</div>');
  else if (ost.kind === 'unavailable') {
    opt.push(section('Optimization', `<table class="kv">${row('target', o.target ?? '')}</table>${unavailable(ost.short)}`));
  } else {
    const m = o.memory;
    const rows = [
      row('target', o.target ?? ''),
      row('kernels', `${o.kernels ?? 0} (from ${o.semanticOps ?? 0} ops)`),
      row('fusion groups', String(o.fusionGroups ?? 0)),
      row('TransData', String(o.transdata ?? 0)),
    ];
    if (m) {
      rows.push(row('memory peak', `${fmtBytes(m.peakBytes ?? 0)} (naive ${fmtBytes(m.naiveBytes ?? 0)}, lower bound ${fmtBytes(m.lowerBoundBytes ?? 0)})`));
      if ((m.naiveBytes ?? 0) > 0 && (m.peakBytes ?? 0) > 0) {
        rows.push(`<tr><th title="the arena's peak against giving every tensor its own buffer">buffer reuse</th><td>saves ${fmtBytes((m.naiveBytes ?? 0) - (m.peakBytes ?? 0))} ` +
          `(${(100 * (1 - (m.peakBytes ?? 0) / (m.naiveBytes ?? 1))).toFixed(0)} %)</td></tr>`);
      }
      rows.push(row('weights', fmtBytes(m.weightBytes ?? 0)));
      rows.push(row('buffers', `${m.buffers?.length ?? 0} for ${m.tensors ?? 0} tensors (${m.algorithm ?? ''})`));
    }
    opt.push(section(ost.kind === 'partial' ? 'Optimization (partial)' : 'Optimization',
      (ost.kind === 'partial' ? partial(ost.short) : '') + `<table class="kv">${rows.join('')}</table>`));
    const ds = o.fusions ?? [];
    const notFused = ds.filter((d) => !d.fused);
    const fused = ds.filter((d) => d.fused);
    if (notFused.length) opt.push(section(`Not fused (${notFused.length})`, decisionsHtml(notFused, layer)));
    if (fused.length) opt.push(section(`Fused (${fused.length})`, decisionsHtml(fused, layer), false));
    const rm = o.removed ?? [];
    if (rm.length) {
      opt.push(section(`Removed (${rm.length})`, `<ul class="decisions">${rm.map((x) => `<li><span class="mono">${h(x.node)}</span> ` +
        `<span class="muted">${h(x.pass ?? '')}</span><div class="reason">${h(x.reason ?? '')}</div></li>`).join('')}</ul>`, rm.length <= 8));
    }
  }
  if (o?.passes?.length) {
    opt.push(section('Passes', `<table class="grid"><tr><th>pass</th><th>nodes</th><th>changes</th></tr>${o.passes.map((p) =>
      `<tr><td title="${h(p.description ?? '')}">${h(p.name ?? '')}</td><td>${p.nodesBefore ?? 0} → ${p.nodesAfter ?? 0}</td><td>${p.changes ?? 0}</td></tr>`).join('')}</table>`, false));
  }
  const tabs: (Tab | null)[] = [
    { id: 'node', label: 'Cell', html: cellTab, title: 'The Cell: parameters, FLOPs, its inputs (the input box) and outputs' },
    { id: 'cost', label: 'Cost', html: cost.join(''), title: 'FLOPs, the hardware estimate and the most expensive nodes' },
    { id: 'opt', label: 'Fusion · Memory', html: opt.join(''), title: 'The optimization layer: kernels, fusion decisions (and why not), memory plan' },
    debugTab({ debugCard: opts.debugCard }),
  ];
  parts.push(tabbed(tabs, opts.tab, 'Cell summary'));
  return parts.join('');
}

/** The strip above the tabs while the debugger is paused: where, and the tensor at a glance. */
export function debugStrip(f: DebugFocus | null, reveal: (file: string, line: number) => string, here: boolean): string {
  if (!isPaused(f)) return '';
  const st = f.stats ?? {};
  const shape = focusShape(f);
  const num = (v: number | undefined): string => v === undefined ? '—' : Number.isInteger(v) ? String(v) : Math.abs(v) >= 1e-3 && Math.abs(v) < 1e6 ? v.toPrecision(5).replace(/\.?0+$/, '') : v.toExponential(3);
  const stats = ['min', 'max', 'mean', 'std'].filter((k) => st[k] !== undefined).map((k) => `${k} ${num(st[k])}`).join(' · ');
  const bad = [(st.nan ?? 0) > 0 ? `${num(st.nan)} NaN` : '', (st.inf ?? 0) > 0 ? `${num(st.inf)} Inf` : ''].filter((x) => x).join(' · ');
  const where = f.line ? reveal(f.source || f.file || '', f.line) : '';
  return `<div class="debug-strip${here ? ' here' : ''}"><span class="paused-badge"><i class="pause-icon"></i>Paused here</span> ` +
    `<a href="#" class="goto-focus" data-id="${h(f.node)}"><b>${h(f.op ?? '')}</b> <span class="mono">${h(f.node)}</span></a>${where ? ` ${where}` : ''}` +
    (shape.length || f.dtype ? `<div class="mono small">${h(`(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`)}${f.dtype ? ' ' + h(f.dtype) : ''}${stats ? ' · ' + h(stats) : ''}</div>` : '') +
    (bad ? `<div class="bad small">${h(bad)}</div>` : '') +
    (f.description ? `<div class="dx small">${h(f.description)}</div>` : '') +
    ` <a href="#" class="show-tab small" data-tab="debug">all statistics ›</a></div>`;
}

/** One row of a multi-selection's list. */
export interface MatchRow { id: string; op: string; scope: string; shape: string; flops: number; timeUs: number; failed: boolean }

export function matchRows(nodes: readonly VNode[]): MatchRow[] {
  return nodes.map((n) => ({
    id: n.id, op: n.failure ? (n.failure.api || n.op) : n.op, scope: n.scope, failed: !!n.failure,
    shape: n.outputs.map((t: Tensor) => shapeText(t)).join(', '),
    flops: n.optimized?.flops ?? n.semantic?.flops ?? 0,
    timeUs: sumKernels(n.optimized?.hardware ?? [], (k) => k.timeUs ?? 0),
  }));
}

/** The panel for a multi-selection: what was searched, the totals and every node (click: go to it). */
export function renderMatches(query: string, rows: readonly MatchRow[], cell: Cell, layer: Layer): string {
  const flops = rows.reduce((s, r) => s + r.flops, 0);
  const time = rows.reduce((s, r) => s + r.timeUs, 0);
  const latencyUs = (cell.hardware?.estimate?.latencyMs ?? 0) * 1000;
  const ids = rows.map((r) => r.id);
  const head = `<div class="ph"><div class="ph-row"><div class="op">${rows.length} selected</div>` +
    `<button type="button" class="btn small clear-multi" title="Clear the selection (Esc)">Clear</button></div>` +
    `<div class="id">matches of <span class="mono">${h(query)}</span> ${copyButton('Copy the node ids as JSON', JSON.stringify(ids))}</div></div>`;
  const totals: string[] = [];
  totals.push(row('nodes', String(rows.length)));
  if (flops > 0) totals.push(row('FLOPs', fmtNum(flops) + shareHtml(flops, cell.flops ?? 0), true));
  if (layer === 'hardware' && time > 0) totals.push(row('kernel time', `${fmtNum(time)} µs${shareHtml(time, latencyUs)}`, true));
  const showTime = layer === 'hardware' && time > 0;
  const body = rows.map((r) => `<tr class="match${r.failed ? ' failed' : ''}" data-id="${h(r.id)}"><td>${r.failed ? ERROR_ICON : ''}${h(r.op)}</td>` +
    `<td class="mono"><a href="#" class="goto" data-id="${h(r.id)}">${h(r.id)}</a></td><td class="mono shape">${h(r.shape)}</td>` +
    `<td class="num">${showTime ? (r.timeUs ? fmtNum(r.timeUs) + ' µs' : '') : r.flops ? fmtNum(r.flops) : ''}</td></tr>`).join('');
  return head + section('Totals', `<table class="kv">${totals.join('')}</table>`) +
    section('Nodes', `<table class="grid matches"><tr><th>op</th><th>node</th><th>output</th><th>${showTime ? 'time' : 'FLOPs'}</th></tr>${body}</table>`);
}
