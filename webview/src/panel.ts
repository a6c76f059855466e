// The side panel: everything known about the selected node, per layer.
import type { AttrValue, Cell, FailedCall, HardwareKernel, Range } from './protocol';
import { FAILED_PREFIX, edgeLabel, type Layer, type VNode } from './model';
import { dimText, escapeHtml as h, flopsText, fmtBytes, fmtNum, rangeText, tensorText } from './format';
import { layerState } from './failures';
import { vocabOf } from './vocab';

export interface PanelContext {
  cell: Cell;
  layer: Layer;
  node: VNode;
  editor: boolean;                 // reveal through the editor
  kernels: HardwareKernel[] | null; // detailed kernels (NodeDetails), when known
  detailsPending: boolean;
  semanticById: Map<string, { op?: string; id: string }>;
  bufferMates: string[];           // "node:output" sharing a buffer with this node's outputs
}

function attrText(v: AttrValue): string {
  if (v === null) return 'None';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

function row(k: string, v: string, raw = false): string {
  return `<tr><th>${h(k)}</th><td>${raw ? v : h(v)}</td></tr>`;
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

function kernelHtml(k: HardwareKernel, detail: boolean): string {
  const rows: string[] = [];
  rows.push(row('kernel', `${k.name ?? ''} (${k.phase ?? 'forward'})`));
  rows.push(row('unit', k.unit ?? ''));
  rows.push(row('bound', k.bound ?? ''));
  const cores = k.coreIds ?? [];
  const coreText = cores.length > 8 ? `${cores.length} cores: ${cores[0]}–${cores[cores.length - 1]}` : cores.join(', ');
  rows.push(row('block dim / cores', `${k.blockDim ?? 0} · ${coreText}`));
  const cc = k.computeCycles ?? 0, mc = k.movementCycles ?? 0, tot = k.cycles ?? 0;
  const mx = Math.max(cc, mc, tot, 1);
  rows.push(row('cycles', `<div class="bars">` +
    `<div class="bar"><span style="width:${(100 * tot) / mx}%"></span><em>total ${fmtNum(tot)}</em></div>` +
    `<div class="bar c"><span style="width:${(100 * cc) / mx}%"></span><em>compute ${fmtNum(cc)}</em></div>` +
    `<div class="bar m"><span style="width:${(100 * mc) / mx}%"></span><em>movement ${fmtNum(mc)}</em></div></div>`, true));
  rows.push(row('time', `${fmtNum(k.timeUs ?? 0)} µs (starts at ${fmtNum(k.startUs ?? 0)} µs)`));
  rows.push(row('GM bytes', `read ${fmtBytes(k.gmReadBytes ?? 0)} · write ${fmtBytes(k.gmWriteBytes ?? 0)}`));
  rows.push(row('bandwidth', `${fmtNum(k.bandwidthGbps ?? 0)} GB/s`));
  if (k.macs) rows.push(row('MACs', fmtNum(k.macs)));
  if (k.tiles) rows.push(row('tiles / core', fmtNum(k.tiles)));
  let out = `<table class="kv">${rows.join('')}</table>`;
  if (detail) {
    if (k.tiling?.length) {
      out += `<div class="sub">Tiling</div><table class="grid"><tr><th>buffer</th><th>tile</th><th>bytes</th><th>×</th><th>use</th></tr>` +
        k.tiling.map((t) => {
          const use = t.capacity ? ((100 * (t.bytes ?? 0) * (t.copies ?? 1)) / t.capacity) : 0;
          return `<tr><td>${h(t.buffer ?? '')}</td><td>${h(t.tile ?? '')}</td><td>${fmtBytes(t.bytes ?? 0)}</td><td>${t.copies ?? 1}</td>` +
            `<td><div class="mini"><span style="width:${Math.min(100, use)}%"></span></div>${use.toFixed(0)}%</td></tr>`;
        }).join('') + '</table>';
    }
    if (k.loops?.length) {
      out += `<div class="sub">Loops</div><table class="grid"><tr><th>var</th><th>trips</th><th>what</th></tr>` +
        k.loops.map((l) => `<tr><td>${h(l.var ?? '')}</td><td>${fmtNum(l.trips ?? 0)}</td><td>${h(l.what ?? '')}</td></tr>`).join('') + '</table>';
    }
    if (k.dma?.length) {
      out += `<div class="sub">DMA (per core)</div><table class="grid"><tr><th>channel</th><th>path</th><th>bytes</th></tr>` +
        k.dma.map((d) => `<tr><td>${h(d.channel ?? '')}</td><td>${h(d.from ?? '')} → ${h(d.to ?? '')}</td><td>${fmtBytes(d.bytes ?? 0)}</td></tr>`).join('') + '</table>';
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

/** A failed call of construct (Cell.failures): the error, where it is, what it received. */
function failurePanel(c: PanelContext, f: FailedCall): string {
  const n = c.node;
  const parts: string[] = [];
  parts.push(`<div class="ph failed"><div class="op">${ERROR_ICON}${h(f.id)} · ${h(f.api || f.op || '')}</div>` +
    `<div class="id">failed call: construct stops here</div></div>`);
  const file = f.file || c.cell.file;
  const src = sourceLink(file, f.range, c.editor);
  const open = c.editor && file ? ` <a href="#" class="reveal open" data-reveal="${h(JSON.stringify({ file, range: f.range ?? ZERO_RANGE }))}">open in editor</a>` : '';
  parts.push(`<div class="failure-msg">${f.code ? `<span class="code">${h(f.code)}</span> ` : ''}${h(f.message ?? '')}${open}</div>`);
  const gen: string[] = [];
  gen.push(row('kind', 'failed call'));
  if (f.api) gen.push(row('api', f.api));
  if (f.op) gen.push(row('op', f.op));
  gen.push(row('scope', f.scope || '(root)'));
  if (src) gen.push(row('source', src, true));
  parts.push(section('Call', `<table class="kv">${gen.join('')}</table>`));
  // What it received (the semantic values), and the nodes drawn for them in this layer.
  const semById = new Map((c.cell.nodes ?? []).map((x) => [x.id, x] as const));
  const drawn = new Set(n.inputs.map((e) => e.src));
  const ins = (f.inputs ?? []).map((e) => {
    const out = e.output ?? 0;
    const name = `${e.node}:${out}`;
    const link = c.layer === 'semantic' && drawn.has(e.node) ? `<a href="#" class="goto" data-id="${h(e.node)}">${h(name)}</a>` : h(name);
    return `<tr><td class="mono">${link}</td><td class="mono">${h(tensorText(semById.get(e.node)?.outputs?.[out]))}</td></tr>`;
  }).join('');
  let here = '';
  if (c.layer !== 'semantic' && (f.inputs ?? []).length > 0) {
    here = n.inputs.length
      ? `<div class="sub">In this layer, from</div><ul class="origins">${n.inputs.map((e) =>
        `<li><a href="#" class="goto" data-id="${h(e.src)}">${h(e.src)}</a></li>`).join('')}</ul>`
      : '<div class="muted small">Not in this layer: the passes eliminated what it received (nothing used it).</div>';
  }
  parts.push(section('Inputs', (ins ? `<table class="grid">${ins}</table>` : '<div class="none">none</div>') + here));
  parts.push(section('Outputs', '<div class="none">none: nothing that depends on this call is in the graph</div>'));
  const more = (c.cell.failures ?? []).filter((x) => x !== f);
  if (more.length) {
    parts.push(section('Other failed calls', `<ul class="origins">${more.map((x) =>
      `<li><a href="#" class="goto" data-id="${h(FAILED_PREFIX + x.id)}">${h(x.id)}</a> <span class="muted">${h(x.api ?? '')}: ${h(x.message ?? '')}</span></li>`).join('')}</ul>`));
  }
  return parts.join('');
}

export function renderPanel(c: PanelContext): string {
  const n = c.node;
  if (n.failure) return failurePanel(c, n.failure);
  const sem = n.semantic;
  const opt = n.optimized;
  const parts: string[] = [];
  parts.push(`<div class="ph"><div class="op">${h(n.op || n.kind)}</div><div class="id">${h(n.id)}</div></div>`);
  const gen: string[] = [];
  gen.push(row('kind', n.kind));
  if (sem?.api) gen.push(row('api', sem.api));
  gen.push(row('scope', n.scope || '(root)'));
  const link = sourceLink(sem?.file, sem?.range, c.editor);
  if (link) gen.push(row('source', link, true));
  const flops = opt?.flops ?? sem?.flops ?? 0;
  const shown = flopsText(flops, sem?.outputs ?? [], sem?.category ?? '');
  if (flops || shown !== '0') gen.push(row('FLOPs', shown));
  parts.push(section('Node', `<table class="kv">${gen.join('')}</table>`));
  // Tensors.
  const ins = n.inputs.map((e) => `<tr><td class="mono">${h(e.src)}:${e.output}</td><td class="mono">${h(edgeLabel(e))}</td></tr>`).join('');
  const srcNodes = c.layer === 'semantic' ? (c.cell.nodes ?? []) : (c.cell.optimized?.nodes ?? []);
  void srcNodes;
  const outs = n.outputs.map((t, i) => `<tr><td class="mono">#${i}${t.name ? ' ' + h(t.name) : ''}</td><td class="mono">${h(tensorText(t))}</td></tr>`).join('');
  parts.push(section('Inputs', ins ? `<table class="grid">${ins}</table>` : '<div class="none">none</div>'));
  parts.push(section('Outputs', outs ? `<table class="grid">${outs}</table>` : '<div class="none">none</div>'));
  const attrs = opt && c.layer !== 'semantic' && Object.keys(opt.attrs ?? {}).length ? opt.attrs! : sem?.attrs ?? {};
  const ak = Object.keys(attrs).sort();
  if (ak.length) parts.push(section('Attributes', `<table class="kv">${ak.map((k) => row(k, attrText(attrs[k]))).join('')}</table>`));
  const params = opt?.params ?? sem?.params ?? [];
  if (params.length) {
    const pm = new Map((c.cell.parameters ?? []).map((p) => [p.name, p] as const));
    parts.push(section('Parameters', `<table class="grid">${params.map((p) => {
      const pp = pm.get(p);
      return `<tr><td class="mono">${h(p)}</td><td class="mono">${pp ? h(tensorText({ shape: pp.shape, dtype: pp.dtype })) : ''}</td>` +
        `<td>${pp?.size ? fmtNum(pp.size) : ''}${pp && !pp.trainable ? ' (frozen)' : ''}</td></tr>`;
    }).join('')}</table>`));
  }
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
    parts.push(section('Optimization', `<table class="kv">${o.join('')}</table>`));
    if (opt.memory?.length) {
      const mem = opt.memory.map((p) => `<tr><td>#${p.output ?? 0}</td><td>${fmtBytes(p.size ?? 0)}</td><td>${fmtBytes(p.offset ?? 0)}</td>` +
        `<td>${p.first ?? 0}–${p.last ?? 0}</td><td>${p.buffer ?? 0}</td></tr>`).join('');
      const mates = c.bufferMates.length
        ? `<div class="sub">Shares its buffer with</div><ul class="origins">${c.bufferMates.slice(0, 40).map((t) => {
          const id = t.slice(0, t.lastIndexOf(':'));
          return `<li><a href="#" class="goto" data-id="${h(id)}">${h(t)}</a></li>`;
        }).join('')}${c.bufferMates.length > 40 ? `<li class="muted">… ${c.bufferMates.length - 40} more</li>` : ''}</ul>` : '';
      parts.push(section('Memory placement', `<table class="grid"><tr><th>out</th><th>size</th><th>offset</th><th>steps</th><th>buffer</th></tr>${mem}</table>${mates}`));
    }
  }
  if (c.layer === 'hardware' && opt) {
    const ks = c.kernels ?? opt.hardware ?? [];
    if (ks.length === 0) parts.push(section('Hardware', '<div class="none">no kernel (input, parameter or constant)</div>'));
    else {
      const body = ks.map((k, i) => (ks.length > 1 ? `<div class="sub">Kernel ${i + 1}</div>` : '') + kernelHtml(k, true)).join('');
      const note = c.detailsPending ? '<div class="muted">loading tiling and schedule…</div>' : '';
      parts.push(section('Hardware', note + body));
    }
  }
  return parts.join('');
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

export function renderCellSummary(cell: Cell, layer: Layer): string {
  const parts: string[] = [];
  parts.push(`<div class="ph"><div class="op">${h(cell.className || cell.name)}</div><div class="id">${h(cell.name)}</div></div>`);
  const st = layerState(cell, layer);
  if (st.kind !== 'complete') parts.push(failureNote(st.text, cell));
  const r: string[] = [];
  r.push(row('parameters', `${fmtNum(cell.params ?? 0)} trainable · ${fmtNum(cell.totalParams ?? 0)} total`));
  r.push(row('FLOPs', flopsText(cell.flops ?? 0, cell.inputs ?? [])));
  r.push(row('nodes', String(cell.nodes?.length ?? 0)));
  r.push(row('inputs', `${h((cell.inputs ?? []).map(tensorText).join(', '))}${inputsForm(cell)}`, true));
  r.push(row('outputs', (cell.outputs ?? []).map(tensorText).join(', ')));
  if (!cell.compiled) r.push(row('compiled', 'no — see diagnostics'));
  parts.push(section('Cell', `<table class="kv">${r.join('')}</table>`));
  const o = cell.optimized;
  if (o && layer !== 'semantic' && st.kind === 'unavailable') {
    parts.push(section('Optimization', `<table class="kv">${row('target', o.target ?? '')}</table>${unavailable(st.short)}`));
  } else if (o && layer !== 'semantic') {
    const m = o.memory;
    const rows = [
      row('target', o.target ?? ''),
      row('kernels', `${o.kernels ?? 0} (from ${o.semanticOps ?? 0} ops)`),
      row('fusion groups', String(o.fusionGroups ?? 0)),
      row('TransData', String(o.transdata ?? 0)),
    ];
    if (m) {
      rows.push(row('memory peak', `${fmtBytes(m.peakBytes ?? 0)} (naive ${fmtBytes(m.naiveBytes ?? 0)}, lower bound ${fmtBytes(m.lowerBoundBytes ?? 0)})`));
      rows.push(row('weights', fmtBytes(m.weightBytes ?? 0)));
      rows.push(row('buffers', `${m.buffers?.length ?? 0} for ${m.tensors ?? 0} tensors (${m.algorithm ?? ''})`));
    }
    parts.push(section(st.kind === 'partial' ? 'Optimization (partial)' : 'Optimization',
      (st.kind === 'partial' ? partial(st.short) : '') + `<table class="kv">${rows.join('')}</table>`));
  }
  if (o && layer !== 'semantic') {
    if (o.passes?.length) {
      parts.push(section('Passes', `<table class="grid"><tr><th>pass</th><th>nodes</th><th>changes</th></tr>${o.passes.map((p) =>
        `<tr><td title="${h(p.description ?? '')}">${h(p.name ?? '')}</td><td>${p.nodesBefore ?? 0} → ${p.nodesAfter ?? 0}</td><td>${p.changes ?? 0}</td></tr>`).join('')}</table>`, false));
    }
  }
  const hw = cell.hardware;
  if (hw && layer === 'hardware' && st.kind === 'unavailable') {
    parts.push(section('Hardware estimate', `<table class="kv">${row('target', hw.spec?.displayName ?? hw.target ?? '')}</table>${unavailable(st.short)}`));
  } else if (hw && layer === 'hardware') {
    const e = hw.estimate ?? {};
    const voc = vocabOf(hw);
    const rows = [
      row('target', hw.spec?.displayName ?? hw.target ?? ''),
      row('latency', `${fmtNum(e.latencyMs ?? 0)} ms (${e.mode ?? hw.mode ?? ''}, batch ${e.batch ?? 1})`),
      row('throughput', `${fmtNum(e.throughputPerSec ?? 0)} / s`),
      // In the target's words (vocab.ts): a cpu target has no Cube, Vector or launch dispatch.
      voc.ascend
        ? row('cube · vector · dispatch', `${fmtNum(e.cubeMs ?? 0)} · ${fmtNum(e.vectorMs ?? 0)} · ${fmtNum(e.dispatchMs ?? 0)} ms`)
        : row('CPU · overhead', `${fmtNum(e.cpuMs ?? 0)} · ${fmtNum(e.dispatchMs ?? 0)} ms`),
      row(voc.ascend ? 'cube utilization' : 'FMA utilization', `${((e.cubeUtilization ?? 0) * 100).toFixed(1)} %`),
      row(`${voc.memory} traffic`, fmtBytes(e.gmBytes ?? 0)),
      row('kernels', String(hw.kernels ?? 0)),
    ];
    parts.push(section(st.kind === 'partial' ? 'Hardware estimate (partial)' : 'Hardware estimate',
      (st.kind === 'partial' ? partial(st.short) : '') + `<table class="kv">${rows.join('')}</table>` +
      (hw.statement ? `<p class="muted small">${h(hw.statement)}</p>` : '') +
      ((e.notes ?? []).length ? `<ul class="notes">${(e.notes ?? []).map((x) => `<li>${h(x)}</li>`).join('')}</ul>` : '')));
  }
  parts.push(`<p class="muted small">Click a node for its details. Keys: +/− zoom, 0 fit, Home/End the graph's start/end, arrows follow edges, / search.</p>`);
  return parts.join('');
}
