// The core timeline (timeline.ts): rows from core_ids / unit / dma, bar geometry from start_us /
// time_us, the zoom maths, and the links between a bar and a node of the graph.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  barAt, barX, boundOf, buildTimelineModel, clampWindow, coreRows, dmaByChannel, firstBarEndingAfter, fitWindow, fmtTick,
  graphNodeForKernel, kernelSource, kernelTip, kernelsForSelection, MIN_SPAN_US, niceStep, panWindow, revealWindow, tOf,
  ticks, xOf, zoomWindow, type RowContext,
} from '../src/timeline';
import type { Cell, HardwareKernel, HardwareLayer, OptimizedNode } from '../src/protocol';
import { smallCell } from './fixtures';
import { timelinePicture, timelineSvg } from '../src/timeline-export';

function kernel(extra: Partial<HardwareKernel>): HardwareKernel {
  return { phase: 'forward', name: 'K', unit: 'cube', blockDim: 1, coreIds: [0], cycles: 100, computeCycles: 80, movementCycles: 60,
    startUs: 0, timeUs: 1, bound: 'compute', ...extra };
}

const separated: RowContext = { ascend: true, separated: true, aiCores: 24 };
const coupled: RowContext = { ascend: true, separated: false, aiCores: 8 };
const cpu: RowContext = { ascend: false, separated: false, aiCores: 0 };

/**
 * smallCell's optimized graph on a separated Ascend chip (two AIC, four AIV): the first conv
 * fused with its ReLU on AIC 0-1, the Add on AIV 0-3, the second conv on AIC 0-1 with a backward
 * kernel, the MatMul on AIC 1, a host no-op (0 µs), and one optimizer update (no node).
 */
function ascendCell(hw: Partial<HardwareLayer> = {}): Cell {
  const c = smallCell();
  c.file = 'net.py';
  c.nodes![1].file = 'net.py';
  c.nodes![1].range = { start: { line: 11, character: 8 }, end: { line: 11, character: 20 } };
  const dma = [
    { channel: 'MTE2', from: 'GM', to: 'L1', bytes: 4096 },
    { channel: 'MTE1', from: 'L1', to: 'L0A', bytes: 1024 },
    { channel: 'MTE1', from: 'L1', to: 'L0B', bytes: 512 },
    { channel: 'FixPipe', from: 'L0C', to: 'GM', bytes: 2048 },
  ];
  const nodes: OptimizedNode[] = [
    { id: 'x', kind: 'input', op: 'Input', origins: ['x'] },
    { id: 'conv/layer1.0.conv1', op: 'FusedConv2D', origins: ['layer1.0.conv1', 'layer1.0.relu'],
      hardware: [kernel({ node: 'conv/layer1.0.conv1', name: 'FusedConv2D', coreIds: [0, 1], blockDim: 2, startUs: 0, timeUs: 10, bound: 'memory', dma })] },
    { id: 'layer1.0/Add', op: 'Add', origins: ['layer1.0/Add'],
      hardware: [kernel({ node: 'layer1.0/Add', name: 'Add', unit: 'vector', coreIds: [0, 1, 2, 3], blockDim: 4, startUs: 10, timeUs: 2, bound: 'dispatch',
        dma: [{ channel: 'MTE2', from: 'GM', to: 'UB', bytes: 100 }, { channel: 'MTE3', from: 'UB', to: 'GM', bytes: 50 }] })] },
    { id: 'conv/layer1.1.conv1', op: 'FusedConv2D', origins: ['layer1.1.conv1', 'layer1.1.relu'],
      hardware: [
        kernel({ node: 'conv/layer1.1.conv1', name: 'FusedConv2D', coreIds: [0, 1], blockDim: 2, startUs: 12, timeUs: 8, dma }),
        kernel({ node: 'conv/layer1.1.conv1', phase: 'backward-dgrad', name: 'Conv2DBackpropInput', coreIds: [0, 1], blockDim: 2, startUs: 30, timeUs: 5, dma }),
      ] },
    { id: 'Reshape', op: 'Reshape', origins: [],
      hardware: [kernel({ node: 'Reshape', name: 'Reshape', unit: 'host', coreIds: [0], startUs: 20, timeUs: 0, bound: 'none' })] },
    { id: 'fc', op: 'MatMul', origins: ['fc'],
      hardware: [kernel({ node: 'fc', name: 'MatMul', coreIds: [1], startUs: 20, timeUs: 10, bound: 'compute', dma })] },
  ];
  c.optimized = { target: 'ascend910b', nodes };
  c.hardware = {
    target: 'ascend910b', mode: 'train', ascend: true, statement: 'Analytical model: not measured on hardware.',
    spec: { name: 'ascend910b', displayName: 'Ascend 910B (B2)', kind: 'ascend', organisation: 'separated', aiCores: 2, vector_cores: 4,
      dmaChannels: ['MTE1', 'MTE2', 'MTE3', 'FixPipe'] },
    optimizer: [kernel({ node: '', phase: 'optimizer', name: 'ApplyMomentum fc.weight', unit: 'vector', coreIds: [2], startUs: 35, timeUs: 1, bound: 'memory' })],
    kernels: 7,
    ...hw,
  };
  return c;
}

test('rows from unit and core ids: AIC/AIV on a separated chip, AI Core / Vector core on a coupled one, CPU cores elsewhere', () => {
  assert.deepEqual(coreRows(kernel({ unit: 'cube', coreIds: [0, 3] }), separated).map((r) => [r.key, r.label, r.section]),
    [['aic:0', 'AIC 0', 'aic'], ['aic:3', 'AIC 3', 'aic']]);
  assert.deepEqual(coreRows(kernel({ unit: 'vector', coreIds: [5] }), separated).map((r) => r.label), ['AIV 5']);
  // Coupled (310P3: 8 AI cores + 7 vector cores in one pool): vector kernels share the AI cores.
  assert.deepEqual(coreRows(kernel({ unit: 'vector', coreIds: [7, 8] }), coupled).map((r) => [r.key, r.label]),
    [['aicore:7', 'AI Core 7'], ['vec:8', 'Vector core 8']]);
  assert.deepEqual(coreRows(kernel({ unit: 'cube', coreIds: [1] }), coupled).map((r) => r.key), ['aicore:1']);
  assert.deepEqual(coreRows(kernel({ unit: 'aicpu', coreIds: [0] }), separated).map((r) => r.label), ['AI CPU 0']);
  assert.deepEqual(coreRows(kernel({ unit: 'host', coreIds: [0] }), separated).map((r) => r.key), ['host']);
  // Not Ascend: the host CPU's cores, whatever the unit; no Ascend words.
  const rows = coreRows(kernel({ unit: 'cpu', coreIds: [0, 15] }), cpu);
  assert.deepEqual(rows.map((r) => [r.key, r.label, r.section]), [['cpu:0', 'CPU 0', 'cpu'], ['cpu:15', 'CPU 15', 'cpu']]);
  // No core ids: one row for the unit.
  assert.deepEqual(coreRows(kernel({ unit: 'cpu', coreIds: [] }), cpu).map((r) => [r.key, r.label, r.core]), [['unit:cpu', 'cpu', -1]]);
});

test('DMA transfers per channel: bytes per core summed, routes listed once', () => {
  const d = dmaByChannel([
    { channel: 'MTE1', from: 'L1', to: 'L0A', bytes: 1024 }, { channel: 'MTE1', from: 'L1', to: 'L0B', bytes: 512 },
    { channel: 'MTE2', from: 'GM', to: 'L1', bytes: 10 }, { channel: 'MTE2', from: 'GM', to: 'L1', bytes: 5 }, { from: 'x', bytes: 1 },
  ]);
  assert.deepEqual([...d.keys()], ['MTE1', 'MTE2']);
  assert.deepEqual(d.get('MTE1'), { bytes: 1536, routes: ['L1→L0A', 'L1→L0B'] });
  assert.deepEqual(d.get('MTE2'), { bytes: 15, routes: ['GM→L1'] });
  assert.equal(boundOf('memory'), 'memory');
  assert.equal(boundOf('unknown-shape'), 'other');
  assert.equal(boundOf(undefined), 'other');
});

test('the model: one row per used core and DMA channel, bars sorted by start, kernels without time not drawn', () => {
  const m = buildTimelineModel(ascendCell())!;
  assert.ok(m);
  assert.equal(m.ascend, true);
  assert.equal(m.target, 'Ascend 910B (B2)');
  assert.equal(m.kernels.length, 7);
  assert.equal(m.drawn, 6, 'the host no-op (0 µs) has no bar');
  assert.equal(m.end, 36);
  assert.deepEqual(m.sections.map((s) => s.key), ['aic', 'aiv', 'dma']);
  assert.deepEqual(m.rows.map((r) => r.key), ['aic:0', 'aic:1', 'aiv:0', 'aiv:1', 'aiv:2', 'aiv:3', 'dma:MTE1', 'dma:MTE2', 'dma:MTE3', 'dma:FixPipe']);
  const aic1 = m.rows.find((r) => r.key === 'aic:1')!;
  assert.deepEqual([...aic1.start], [0, 12, 20, 30]);
  assert.deepEqual([...aic1.end], [10, 20, 30, 35]);
  assert.deepEqual([...aic1.kernel].map((i) => m.kernels[i].k.name), ['FusedConv2D', 'FusedConv2D', 'MatMul', 'Conv2DBackpropInput']);
  const aic0 = m.rows.find((r) => r.key === 'aic:0')!;
  assert.equal(aic0.start.length, 3, 'the MatMul runs on AIC 1 only');
  // The optimizer update (no node) is on AIV 2.
  const aiv2 = m.rows.find((r) => r.key === 'aiv:2')!;
  assert.deepEqual([...aiv2.kernel].map((i) => m.kernels[i].node), ['layer1.0/Add', '']);
  // DMA rows: one bar per kernel using the channel, with its bytes per core.
  const mte1 = m.rows.find((r) => r.key === 'dma:MTE1')!;
  assert.equal(mte1.start.length, 4);
  assert.deepEqual([...mte1.bytes!], [1536, 1536, 1536, 1536]);
  assert.equal(mte1.routes, 'L1→L0A, L1→L0B');
  const mte3 = m.rows.find((r) => r.key === 'dma:MTE3')!;
  assert.deepEqual([...mte3.kernel].map((i) => m.kernels[i].node), ['layer1.0/Add']);
  // Every kernel knows its rows.
  const conv = m.kernels[m.byNode.get('conv/layer1.0.conv1')![0]];
  assert.deepEqual(conv.rows.map((r) => m.rows[r].key), ['aic:0', 'aic:1', 'dma:MTE1', 'dma:MTE2', 'dma:FixPipe']);
  assert.equal(m.dmaMissing, false);
  // A document without the transfers (slimmed by an older server): the model says so.
  const bare = ascendCell();
  for (const n of bare.optimized!.nodes!) for (const k of n.hardware ?? []) delete k.dma;
  const mb = buildTimelineModel(bare)!;
  assert.equal(mb.dmaMissing, true);
  assert.ok(!mb.sections.some((s) => s.key === 'dma'));
});

test('a CPU target: CPU core rows, no DMA section, no Ascend words', () => {
  const c = ascendCell({ ascend: false, target: 'cpu', spec: { name: 'cpu', displayName: 'host CPU', kind: 'cpu' } });
  for (const k of [...c.optimized!.nodes!.flatMap((n) => n.hardware ?? []), ...c.hardware!.optimizer!]) {
    if (k.unit !== 'host') k.unit = 'cpu';
    k.dma = [];
  }
  const m = buildTimelineModel(c)!;
  assert.deepEqual(m.sections.map((s) => s.key), ['cpu']);
  assert.deepEqual(m.rows.map((r) => r.label), ['CPU 0', 'CPU 1', 'CPU 2', 'CPU 3']);
  const words = JSON.stringify([m.sections, m.rows.map((r) => r.label), m.kernels.map((k) => kernelTip(m, k.index))]);
  assert.doesNotMatch(words, /AI ?Core|AIC|AIV|Ascend|MTE|Cube|cube core|vector core/i);
  // No core ids at all: one row per unit, and the model says so.
  for (const n of c.optimized!.nodes!) for (const k of n.hardware ?? []) k.coreIds = [];
  for (const k of c.hardware!.optimizer ?? []) k.coreIds = [];
  const u = buildTimelineModel(c)!;
  assert.equal(u.noCoreIds, true);
  assert.deepEqual(u.rows.map((r) => r.key), ['unit:cpu']);
  assert.equal(buildTimelineModel({ name: 'Net()', nodes: [] }), null, 'no hardware layer, no timeline');
});

test('geometry: bars from start_us and time_us; time <-> x; hit testing with a tolerance', () => {
  const w = { t0: 0, t1: 100 };
  assert.equal(xOf(w, 500, 20), 100);
  assert.equal(tOf(w, 500, 100), 20);
  assert.deepEqual(barX(w, 500, 20, 30), { x: 100, w: 50 });
  assert.deepEqual(barX(w, 500, 20, 20.01), { x: 100, w: 1 }, 'at least a pixel');
  assert.deepEqual(barX({ t0: 10, t1: 20 }, 1000, 12, 13), { x: 200, w: 100 });
  const m = buildTimelineModel(ascendCell())!;
  const aic1 = m.rows.find((r) => r.key === 'aic:1')!;
  assert.equal(firstBarEndingAfter(aic1, 11), 1);
  assert.equal(firstBarEndingAfter(aic1, 100), 4);
  assert.equal(m.kernels[aic1.kernel[barAt(aic1, 25)]].k.name, 'MatMul');
  assert.equal(barAt(aic1, 36), -1);
  assert.equal(m.kernels[aic1.kernel[barAt(aic1, 35.5, 1)]].k.name, 'Conv2DBackpropInput', 'within the tolerance');
  const aic0 = m.rows.find((r) => r.key === 'aic:0')!;
  assert.equal(barAt(aic0, 25), -1, 'AIC 0 is idle while the MatMul runs on AIC 1');
});

test('zoom maths: anchored zoom, limits, pan, reveal, ticks in µs and ms', () => {
  const total = 1000;
  const fit = fitWindow(total);
  assert.ok(fit.t0 < 0 && fit.t1 > total && fit.t1 - fit.t0 < total * 1.05, JSON.stringify(fit));
  // Zooming in 2x at x = 250 of 1000 px keeps the time under the pointer.
  const w = { t0: 0, t1: 1000 };
  const z = zoomWindow(w, 2, 250, 1000, total);
  assert.ok(Math.abs(tOf(z, 1000, 250) - 250) < 1e-9);
  assert.ok(Math.abs((z.t1 - z.t0) - 500) < 1e-9);
  // And back out: the same window.
  const back = zoomWindow(z, 0.5, 250, 1000, total);
  assert.ok(Math.abs(back.t0 - 0) < 1e-9 && Math.abs(back.t1 - 1000) < 1e-9, JSON.stringify(back));
  // Limits: never narrower than MIN_SPAN_US, never wider than the whole schedule.
  const deep = zoomWindow(w, 1e9, 500, 1000, total);
  assert.ok(Math.abs(deep.t1 - deep.t0 - MIN_SPAN_US) < 1e-9);
  const wide = zoomWindow(w, 1e-6, 500, 1000, total);
  assert.ok(Math.abs((wide.t1 - wide.t0) - (fit.t1 - fit.t0)) < 1e-9);
  // Pan: 100 px right at 1 µs/px shows 100 µs earlier; clamped at the start.
  const p = panWindow({ t0: 400, t1: 500 }, 100, 100, total);
  assert.deepEqual(p, { t0: 300, t1: 400 });
  const left = panWindow({ t0: 0, t1: 100 }, 1e6, 100, total);
  assert.ok(Math.abs(left.t0 + 5) < 1e-9, 'a 5 % margin before 0');
  const right = panWindow({ t0: 0, t1: 100 }, -1e6, 100, total);
  assert.ok(Math.abs(right.t1 - 1005) < 1e-9, 'a 5 % margin after the end');
  assert.deepEqual(clampWindow({ t0: 10, t1: 10 }, total), { t0: 10, t1: 10 + MIN_SPAN_US });
  // Reveal: unchanged when inside; else centred, widened only if too narrow.
  assert.deepEqual(revealWindow({ t0: 0, t1: 100 }, 40, 50, total), { t0: 0, t1: 100 });
  assert.deepEqual(revealWindow({ t0: 0, t1: 100 }, 540, 560, total), { t0: 500, t1: 600 });
  const widened = revealWindow({ t0: 0, t1: 10 }, 500, 540, total);
  assert.ok(widened.t0 <= 500 && widened.t1 >= 540 && Math.abs(widened.t1 - widened.t0 - 50) < 1e-9, JSON.stringify(widened));
  // Ticks: 1-2-5 steps at least 90 px apart; µs for small steps, ms from 100 µs steps on.
  assert.equal(niceStep(1000, 1000), 100);
  assert.equal(niceStep(262, 900), 50);
  assert.equal(niceStep(0.3, 1000), 0.05);
  assert.equal(fmtTick(150, 50), '150 µs');
  assert.equal(fmtTick(1600, 200), '1.6 ms');
  assert.equal(fmtTick(2000, 1000), '2 ms');
  assert.equal(fmtTick(12.35, 0.05), '12.35 µs');
  assert.equal(fmtTick(0, 50), '0');
  const t = ticks({ t0: -2, t1: 262 }, 900);
  assert.deepEqual(t.map((x) => x.label), ['0', '50 µs', '100 µs', '150 µs', '200 µs', '250 µs']);
  assert.ok(Math.abs(t[1].x - xOf({ t0: -2, t1: 262 }, 900, 50)) < 1e-9);
  for (let i = 1; i < t.length; i++) assert.ok(t[i].x - t[i - 1].x >= 90);
});

test('links: a bar to its node (optimized / semantic) and a selected node to its bars', () => {
  const m = buildTimelineModel(ascendCell())!;
  const convIdx = m.byNode.get('conv/layer1.0.conv1')![0];
  // Bar -> node: the kernel's optimized node; in the semantic graph its main origin.
  assert.equal(graphNodeForKernel(m, convIdx, 'hardware'), 'conv/layer1.0.conv1');
  assert.equal(graphNodeForKernel(m, convIdx, 'optimized'), 'conv/layer1.0.conv1');
  assert.equal(graphNodeForKernel(m, convIdx, 'semantic'), 'layer1.0.conv1');
  const opt = m.kernels.findIndex((k) => k.node === '');
  assert.equal(graphNodeForKernel(m, opt, 'hardware'), null, 'an optimizer update has no node');
  // Node -> bars: its kernels (forward and backward), or, from the semantic graph, those of the
  // kernels made from it (a fused ReLU selects its conv's bars).
  const two = kernelsForSelection(m, 'conv/layer1.1.conv1', 'hardware');
  assert.deepEqual(two.map((i) => m.kernels[i].k.name), ['FusedConv2D', 'Conv2DBackpropInput']);
  assert.deepEqual(kernelsForSelection(m, 'layer1.0.relu', 'semantic'), [convIdx]);
  assert.deepEqual(kernelsForSelection(m, 'layer1.0.conv1', 'semantic'), [convIdx]);
  assert.deepEqual(kernelsForSelection(m, 'layer1.0.conv1', 'hardware'), [], 'a semantic id is no kernel node');
  assert.deepEqual(kernelsForSelection(m, 'x', 'semantic'), [], 'an input has no kernel');
  assert.deepEqual(kernelsForSelection(m, null, 'semantic'), []);
  // And back: the bar of a selected node leads to the same node.
  for (const layer of ['semantic', 'hardware'] as const) {
    const id = graphNodeForKernel(m, convIdx, layer)!;
    assert.ok(kernelsForSelection(m, id, layer).includes(convIdx), layer);
  }
  // The source line of a kernel: its main semantic node's.
  assert.deepEqual(kernelSource(m, convIdx), { file: 'net.py', range: { start: { line: 11, character: 8 }, end: { line: 11, character: 20 } } });
  assert.equal(kernelSource(m, opt), null);
});

test('the tooltip: kernel id, op, unit, cores, start, duration, bound, cycles; DMA bytes on a DMA row', () => {
  const m = buildTimelineModel(ascendCell())!;
  const i = m.byNode.get('conv/layer1.0.conv1')![0];
  const tip = kernelTip(m, i);
  assert.match(tip, /FusedConv2D · conv\/layer1\.0\.conv1 · kernel 1 of 7/);
  assert.match(tip, /unit cube · 2 cores \(0–1\) · block dim 2/);
  assert.match(tip, /start 0 µs · duration 10 µs/);
  assert.match(tip, /bound memory · 100 cycles per core \(compute 80, movement 60\)/);
  const mte1 = m.rows.find((r) => r.key === 'dma:MTE1')!;
  assert.match(kernelTip(m, i, mte1), /MTE1 L1→L0A, L1→L0B: 1\.5 KiB per core over the kernel/);
  const bwd = m.byNode.get('conv/layer1.1.conv1')![1];
  assert.match(kernelTip(m, bwd), /phase backward-dgrad/);
  assert.match(kernelTip(m, m.kernels.findIndex((k) => k.node === '')), /ApplyMomentum fc\.weight · \(optimizer update\)/);
});

test('large schedules: 10k kernels on 48 cores build quickly and hit-test by binary search', () => {
  const c = smallCell();
  const nodes: OptimizedNode[] = [];
  const cores = Array.from({ length: 48 }, (_, i) => i);
  for (let i = 0; i < 10000; i++) {
    nodes.push({ id: `n${i}`, op: 'Add', origins: [],
      hardware: [kernel({ node: `n${i}`, unit: i % 3 ? 'vector' : 'cube', coreIds: i % 3 ? cores : cores.slice(0, 24), startUs: i * 3, timeUs: 3,
        bound: i % 2 ? 'memory' : 'compute', dma: [{ channel: 'MTE2', from: 'GM', to: 'UB', bytes: i }] })] });
  }
  c.optimized = { nodes };
  c.hardware = { ascend: true, spec: { organisation: 'separated', aiCores: 24 }, kernels: 10000 };
  const t0 = performance.now();
  const m = buildTimelineModel(c)!;
  const ms = performance.now() - t0;
  assert.equal(m.rows.length, 24 + 48 + 1);
  assert.ok(m.rows.reduce((s, r) => s + r.start.length, 0) > 300000);
  assert.ok(ms < 3000, `built in ${ms.toFixed(0)} ms`);
  const aiv = m.rows.find((r) => r.key === 'aiv:47')!;
  assert.equal(m.kernels[aiv.kernel[barAt(aiv, 3 * 5000 + 1.5)]].node, 'n5000');
});

test('the export picture: every row labelled, the bars of the window, the selection outlined, as SVG too', () => {
  const m = buildTimelineModel(ascendCell())!;
  const col = {
    bg: '#fff', fg: '#111', muted: '#666', border: '#ccc', accent: '#06f', stripe: '#eee',
    bound: { compute: '#0a0', memory: '#f80', dispatch: '#80f', other: '#888' },
  };
  const whole = timelinePicture(m, fitWindow(m.end), 900, col);
  const texts = whole.shapes.filter((s) => s.kind === 'text').map((s) => (s as { text: string }).text);
  for (const r of m.rows) assert.ok(texts.includes(r.label), `row ${r.label} labelled`);
  assert.ok(texts.some((t) => /analytical estimate, not a measurement/.test(t)));
  const drawnBars = m.rows.reduce((n, r) => n + r.start.length, 0);
  assert.equal(whole.bars, drawnBars, 'every bar of the whole schedule');
  assert.ok(whole.height >= m.rows.length * 12, `${whole.height} px for ${m.rows.length} rows`);
  // The window [0, 11] µs: the kernels starting after it are left out.
  const early = timelinePicture(m, { t0: 0, t1: 11 }, 900, col);
  assert.ok(early.bars < whole.bars && early.bars > 0);
  // A selection: its bars outlined in the accent colour, the others dimmed.
  const fc = m.byNode.get('fc')!;
  const sel = timelinePicture(m, fitWindow(m.end), 900, col, new Set(fc));
  const outlined = sel.shapes.filter((s) => s.kind === 'rect' && s.stroke === '#06f');
  assert.equal(outlined.length, m.kernels[fc[0]].rows.length, 'one outlined bar per row of the fc kernel');
  assert.ok(sel.shapes.some((s) => s.kind === 'rect' && s.alpha === 0.3));
  const svg = timelineSvg(whole, 10, 500);
  assert.match(svg, /^<g class="core-timeline" transform="translate\(10,500\)">/);
  assert.equal((svg.match(/<rect /g) ?? []).length, whole.shapes.filter((s) => s.kind === 'rect').length);
  assert.match(svg, />AIC 0</);
});
