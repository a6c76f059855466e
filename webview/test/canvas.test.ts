// The graph canvas's own logic (issue 16): edge labels (tensor, dtype, format) and where they are
// placed, the collapsed groups' colour scale, the target's vocabulary in node text, tooltips and
// the legend, the legend's preferences and place, and Fit around the overlays.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dtypeShort, edgeLabelLines, EDGE_SHAPE_MAX } from '../src/format';
import { intersects, labelLines, placeEdgeLabels, type Box } from '../src/labels';
import type { DrawEdge, DrawItem } from '../src/layout';
import { buildViewGraph } from '../src/model';
import { computeScale, groupScale, groupSums } from '../src/metrics';
import {
  accessibleName, boundDefinition, boundSentence, boundWord, cycSentence, hardwareLine, nodeTip, sigmaSentence, vocabOf,
} from '../src/vocab';
import { legendOffsets, nextCorner, parseLegendPrefs, DEFAULT_LEGEND } from '../src/legend';
import { fitAround, fitCamera } from '../src/fit';
import type { Cell, HardwareKernel, HardwareLayer } from '../src/protocol';
import { smallCell } from './fixtures';

test('edge labels: shape, dtype abbreviated as the compiler does, and the layout format where recorded', () => {
  assert.deepEqual(['float32', 'float16', 'bfloat16', 'int64', 'int32', 'uint8', 'bool', 'complex64', 'unknown'].map(dtypeShort),
    ['f32', 'f16', 'bf16', 'i64', 'i32', 'u8', 'bool', 'c64', '?']);
  assert.deepEqual(edgeLabelLines({ shape: [1, 64, 56, 56], dtype: 'float16' }), ['1×64×56×56 f16']);
  assert.deepEqual(edgeLabelLines({ shape: [1, 64, 56, 56], dtype: 'float16', format: 'NC1HWC0' }), ['1×64×56×56 f16 NC1HWC0']);
  assert.deepEqual(edgeLabelLines({ shape: [1, 64, 56, 56], dtype: 'float16', format: 'NC1HWC0' }, true), ['1×64×56×56', 'f16 NC1HWC0']);
  assert.deepEqual(edgeLabelLines({ shape: ['N', 10], dtype: 'unknown' }), ['N×10']);
  assert.deepEqual(edgeLabelLines({ shape: [], dtype: 'int32' }), ['[] i32']);
  assert.deepEqual(edgeLabelLines(undefined), []);
  const long = edgeLabelLines({ shape: ['N', '(H-1)//2+1', '(W-1)//2+1', '((H-1)//2+1)*((W-1)//2+1)'], dtype: 'float32' })[0];
  assert.ok(long.endsWith(' f32') && long.includes('…'), long);
  assert.ok(long.length <= EDGE_SHAPE_MAX + 4);
  // Two tensors of different shapes between the same items: a count.
  assert.deepEqual(labelLines({ label: '', count: 3 }), ['3 tensors']);
  assert.deepEqual(labelLines({ label: 'a\nb', count: 1 }), ['a', 'b']);
});

// A frame (a group's header band at the top) holding two nodes; an edge enters the frame from above
// through the header band, another runs between the nodes, a third alongside them.
function scene(): { items: DrawItem[]; edges: DrawEdge[] } {
  const frame: DrawItem = { id: 'g:a', type: 'frame', x: 0, y: 100, w: 300, h: 300, depth: 1 };
  const n1: DrawItem = { id: 'n1', type: 'node', x: 60, y: 150, w: 120, h: 40, depth: 2 };
  const n2: DrawItem = { id: 'n2', type: 'node', x: 60, y: 230, w: 120, h: 40, depth: 2 };
  const src: DrawItem = { id: 's', type: 'node', x: 60, y: 0, w: 120, h: 40, depth: 1 };
  const edge = (src: string, tgt: string, pts: number[], label: string): DrawEdge => ({
    src, tgt, pts, label, count: 1, real: [],
    minX: Math.min(...pts.filter((_, i) => i % 2 === 0)), maxX: Math.max(...pts.filter((_, i) => i % 2 === 0)),
    minY: Math.min(...pts.filter((_, i) => i % 2 === 1)), maxY: Math.max(...pts.filter((_, i) => i % 2 === 1)),
  });
  return {
    items: [frame, src, n1, n2],
    edges: [
      // s -> n1: down through the frame's header band (y 100..134) into n1.
      edge('s', 'n1', [120, 40, 120, 150], '1×64×56×56 f16 NC1HWC0'),
      edge('n1', 'n2', [120, 190, 120, 230], '1×64×56×56 f16'),
      edge('s', 'n2', [200, 40, 200, 250, 180, 250], '1×256×56×56 f16'),
    ],
  };
}

const mono = (t: string): number => t.length * 6;

test('edge labels are placed clear of group headers, nodes, other edges\' lines and each other', () => {
  const s = scene();
  const header: Box = { x: 6, y: 107, w: 200, h: 18 };
  const placed = placeEdgeLabels(s, mono, () => header);
  assert.equal(placed.length, 3, 'every label found a place');
  const nodes = s.items.filter((it) => it.type === 'node');
  for (const l of placed) {
    assert.ok(!intersects(l.box, header), `label ${l.lines} over the header`);
    for (const n of nodes) assert.ok(!intersects(l.box, n), `label ${l.lines} over ${n.id}`);
    for (const o of placed) if (o !== l) assert.ok(!intersects(l.box, o.box), 'labels overprint');
    assert.equal(l.box.w, mono(l.lines[0]) + 6);
  }
  // The label of the edge through the header band sits beside its line outside the header.
  const first = placed.find((l) => l.edge === 0)!;
  assert.ok(first.box.y + first.box.h <= 107 || first.box.y >= 125, JSON.stringify(first.box));
  assert.ok(first.box.x >= 124 || first.box.x + first.box.w <= 116, 'beside the line, not on it');
  // The third edge's line (x 200) is an obstacle for the others' labels: n1 -> n2's label is left of its line.
  const mid = placed.find((l) => l.edge === 1)!;
  assert.ok(mid.box.x + mid.box.w <= 200 || mid.box.x >= 200, JSON.stringify(mid.box));
  // With the whole header band as the obstacle (no measured title), still none on it.
  for (const l of placeEdgeLabels(s, mono)) assert.ok(!intersects(l.box, { x: 0, y: 100, w: 300, h: 34 }));
});

test('a label with no free place is not drawn rather than overprinting', () => {
  const s = scene();
  // A node box covering everything beside the n1 -> n2 segment.
  s.items.push({ id: 'wall', type: 'node', x: -400, y: 185, w: 1000, h: 50, depth: 1 });
  const placed = placeEdgeLabels(s, mono);
  assert.ok(!placed.some((l) => l.edge === 1), 'n1 -> n2 has no room');
  for (const l of placed) assert.ok(!intersects(l.box, { x: -400, y: 185, w: 1000, h: 50 }));
});

test('collapsed groups get their own colour scale: Σ far above any node no longer saturates', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  const nodes = computeScale(g, 'flops');
  const sums = groupSums(g, nodes);
  // On the nodes' scale both groups would be the top colour (their sums exceed the largest node).
  assert.ok((sums.get('g:layer1.1') ?? 0) > nodes.max && nodes.norm(Math.min(sums.get('g:layer1.1')!, nodes.max)) === 1);
  const gs = groupScale('flops', sums, ['g:layer1.0', 'g:layer1.1']);
  assert.equal(gs.min, 1020);   // layer1.0: conv 1000 + relu 10 + add 10
  assert.equal(gs.max, 5010);   // layer1.1: conv 5000 + relu 10
  assert.equal(gs.norm(1020), 0);
  assert.equal(gs.norm(5010), 1);
  assert.notEqual(gs.norm(sums.get('g:layer1.0')!), gs.norm(sums.get('g:layer1.1')!));
  // The nodes' scale is unchanged by it.
  assert.equal(nodes.norm(5000), 1);
  assert.equal(nodes.norm(10), 0);
  // No group drawn collapsed: every group (not the root) makes the scale.
  const all = groupScale('flops', sums, []);
  assert.ok(all.values.size >= 2 && !all.values.has('g:'));
  // Out-of-range values clamp.
  assert.equal(gs.norm(1e9), 1);
  assert.equal(gs.norm(1), 0);
});

const ascendHw: HardwareLayer = { ascend: true, target: 'ascend910', spec: { kind: 'ascend', displayName: 'Ascend 910 (A)', frequencyMhz: 976.6 } };
const cpuHw: HardwareLayer = { ascend: false, target: 'cpu', spec: { kind: 'cpu', displayName: 'host CPU', frequencyMhz: 3000 } };
const ASCEND_WORDS = /cube|vector|ai ?core|ai cpu|dispatch|\bGM\b|MTE|fractal|NC1HWC0/i;

function hwCell(hw: HardwareLayer, kernels: HardwareKernel[]): Cell {
  const c = smallCell();
  c.optimized = { nodes: (c.nodes ?? []).map((n, i) => ({ id: n.id, kind: n.kind, op: n.op, origins: [n.id],
    inputs: n.inputs, outputs: n.outputs, hardware: i === 0 ? [] : [kernels[(i - 1) % kernels.length]] })) };
  c.hardware = hw;
  return c;
}

test('a CPU target is described in CPU words, an Ascend target in Ascend words', () => {
  const cpuK: HardwareKernel[] = [
    { unit: 'cpu', bound: 'dispatch', blockDim: 16, cycles: 900, computeCycles: 900, movementCycles: 300, timeUs: 5.3 },
    { unit: 'cpu', bound: 'memory', blockDim: 16, cycles: 94560, computeCycles: 71680, movementCycles: 94560, timeUs: 36.5, gmReadBytes: 1613824 },
    { unit: 'host', bound: 'none', blockDim: 1, cycles: 0, timeUs: 0 },
  ];
  const g = buildViewGraph(hwCell(cpuHw, cpuK), 'hardware');
  const v = g.vocab;
  assert.equal(v.ascend, false);
  const conv = g.byId.get('layer1.0.conv1')!;  // the first kernel: dispatch-bound on the CPU
  assert.equal(hardwareLine(v, conv.optimized?.hardware), 'CPU · 900 cyc · overhead');
  const texts = [
    ...g.nodes.map((n) => hardwareLine(v, n.optimized?.hardware)),
    ...g.nodes.flatMap((n) => nodeTip(v, n, 'hardware')),
    ...g.nodes.map((n) => accessibleName(v, n, 'hardware')),
    boundDefinition(v, 'compute'), boundDefinition(v, 'memory'), boundDefinition(v, 'dispatch'), cycSentence(v),
    ...cpuK.map((k) => boundSentence(v, k)),
  ].join('\n');
  assert.doesNotMatch(texts, ASCEND_WORDS);
  assert.match(texts, /overhead-bound: the CPU executor's per-operator overhead/);
  assert.match(texts, /clock cycles per CPU core at 3000 MHz/);
  assert.match(texts, /CPU on 16 cores/);
  assert.match(boundSentence(v, cpuK[0]), /\(5 µs against 0\.3 µs of work\)/);
  assert.match(boundSentence(v, cpuK[1]), /memory-bound: moving its bytes \(94\.6k cycles; 1\.54 MiB read, 0 B written in DRAM\) takes longer than its arithmetic \(71\.7k cycles\)/);

  const ascK: HardwareKernel[] = [
    { unit: 'cube', bound: 'dispatch', blockDim: 32, cycles: 932, computeCycles: 640, movementCycles: 555, timeUs: 2.954542 },
    { unit: 'vector', bound: 'memory', blockDim: 32, cycles: 2903, computeCycles: 204, movementCycles: 1307, timeUs: 4.97 },
  ];
  const a = buildViewGraph(hwCell(ascendHw, ascK), 'hardware');
  assert.equal(a.vocab.ascend, true);
  assert.equal(hardwareLine(a.vocab, a.byId.get('layer1.0.conv1')!.optimized?.hardware), 'Cube · 932 cyc · dispatch');
  assert.equal(hardwareLine(a.vocab, a.byId.get('layer1.0.relu')!.optimized?.hardware), 'Vector · 2903 cyc · memory');
  const tip = nodeTip(a.vocab, a.byId.get('layer1.0.conv1')!, 'hardware').join('\n');
  assert.match(tip, /Cube on 32 AI cores · 932 cyc/);
  assert.match(tip, /dispatch-bound: launching the kernel takes longer than running it \(2 µs against 0\.954 µs of work\)/);
  assert.match(tip, /cyc: clock cycles per AI core at 976\.6 MHz/);
  assert.equal(boundWord(a.vocab, 'dispatch'), 'dispatch');
  // Without a hardware layer (semantic documents): no Ascend words either.
  assert.equal(vocabOf(undefined).ascend, false);
});

test('tooltips and accessible names: what the node is, its tensors, Σ explained', () => {
  const g = buildViewGraph(smallCell(), 'semantic');
  const conv = g.byId.get('layer1.0.conv1')!;
  assert.deepEqual(nodeTip(g.vocab, conv, 'semantic'), ['Conv2D · layer1.0.conv1', 'in: 1×4 float32', 'out: 1×4 float32']);
  assert.equal(accessibleName(g.vocab, conv, 'semantic'), 'Conv2D layer1.0.conv1; output 1×4 float32');
  assert.equal(sigmaSentence(12), 'Σ: the sum over the 12 nodes inside this group.');
  assert.match(sigmaSentence(), /^Σ: the sum over the nodes inside a collapsed group/);
});

test('legend preferences: defaults, what was stored, and nonsense ignored', () => {
  assert.deepEqual(parseLegendPrefs(null), DEFAULT_LEGEND);
  assert.deepEqual(parseLegendPrefs('{"shown":false,"corner":"tr","collapsed":true}'), { shown: false, corner: 'tr', collapsed: true, explain: true });
  assert.deepEqual(parseLegendPrefs('{"corner":"middle","shown":"yes"}'), DEFAULT_LEGEND);
  assert.deepEqual(parseLegendPrefs('not json'), DEFAULT_LEGEND);
  assert.deepEqual(parseLegendPrefs('null'), DEFAULT_LEGEND);
  assert.deepEqual(['bl', 'tl', 'tr', 'br'].map((c) => nextCorner(c as 'bl')), ['tl', 'tr', 'br', 'bl']);
});

test('the legend stacks with the overlays of its corner', () => {
  const pane = new DOMRectShim(100, 50, 1000, 800);
  assert.deepEqual(legendOffsets('bl', pane, {}), { bottom: 10, left: 10 });
  // Top left under the pane's title, top right under its note, bottom right above the overview.
  assert.deepEqual(legendOffsets('tl', pane, { title: new DOMRectShim(110, 58, 80, 22) }), { top: 36, left: 10 });
  assert.deepEqual(legendOffsets('tl', pane, { title: null }), { top: 10, left: 10 });
  assert.deepEqual(legendOffsets('tr', pane, { note: new DOMRectShim(600, 58, 490, 60) }), { top: 74, right: 10 });
  assert.deepEqual(legendOffsets('br', pane, { minimap: new DOMRectShim(900, 640, 190, 200) }), { bottom: 216, right: 10 });
});

class DOMRectShim {
  constructor(public left: number, public top: number, public width: number, public height: number) {}
  get x(): number { return this.left; }
  get y(): number { return this.top; }
  get right(): number { return this.left + this.width; }
  get bottom(): number { return this.top + this.height; }
  toJSON(): unknown { return this; }
}

test('Fit keeps the graph clear of the legend, clearing it from the side when that shows more', () => {
  const pane = { left: 0, top: 0, width: 1040, height: 830 };
  const legend = { left: 10, top: 640, width: 540, height: 180 };   // bottom left, wide and tall
  const overview = { left: 940, top: 620, width: 90, height: 200 };
  const box = (c: { scale: number; tx: number; ty: number }, w: number, h: number) => ({ left: c.tx, top: c.ty, width: w * c.scale, height: h * c.scale });
  const clear = (a: { left: number; top: number; width: number; height: number }, b: typeof a): boolean =>
    a.left + a.width <= b.left || b.left + b.width <= a.left || a.top + a.height <= b.top || b.top + b.height <= a.top;
  // A tall, narrow graph (ResNet-50 with its blocks collapsed): whole beside the legend at a larger
  // zoom than above it.
  const tall = { sceneW: 250, sceneH: 1300, paneW: 1040, paneH: 830 };
  const f = fitAround(tall, pane, [legend, overview]);
  assert.ok(f.whole);
  const above = fitCamera({ ...tall, insets: { top: 0, left: 0, right: 0, bottom: 830 - 640 + 6 } });
  assert.equal(above.whole, false, 'above the legend it would only be shown from its start');
  assert.ok(clear(box(f, 250, 1300), legend) && clear(box(f, 250, 1300), overview));
  // A long graph shown from its start: its breadth beside the legend, so scrolling along it never
  // passes a node under the legend.
  const long = { sceneW: 300, sceneH: 16000, paneW: 1040, paneH: 830 };
  const g = fitAround(long, pane, [legend, overview]);
  assert.equal(g.whole, false);
  assert.equal(g.scale, 1);
  assert.ok(g.tx >= legend.left + legend.width, `starts right of the legend: ${g.tx}`);
  assert.ok(g.tx + 300 <= overview.left);
  // A wide, short graph: the legend is cleared from below.
  const wide = { sceneW: 1500, sceneH: 300, paneW: 1040, paneH: 830 };
  const w = fitAround(wide, pane, [legend, overview]);
  assert.ok(w.whole && clear(box(w, 1500, 300), legend) && clear(box(w, 1500, 300), overview));
  // No overlays: as fitCamera.
  assert.deepEqual(fitAround(tall, pane, []).scale, fitCamera(tall).scale);
});
