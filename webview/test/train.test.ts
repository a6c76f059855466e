import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildViewGraph } from '../src/model';
import { computeScale, groupScaleFor, groupSums, METRICS } from '../src/metrics';
import {
  TrainModel, badness, driftCardHtml, driftColor, driftIndex, driftSummary, fmtCos, isFirstBelow, nodeDrift, thinSteps,
} from '../src/train';
import type { PrecisionDrift, TrainStep } from '../src/protocol';
import { smallCell } from './fixtures';

const step = (n: number, extra: Partial<TrainStep> = {}): TrainStep => ({
  file: '/w/train.py', cell: 'Net', epoch: 1, step: n, globalStep: String(n), totalSteps: '40', loss: 2.3 / n, lr: 0.01,
  gradNorm: 1 + n, lossScale: 1, skipped: false, stepMs: 4, samplesPerSec: 8000, ...extra,
});

test('train model: steps accumulate in order, a reset starts again, int64 strings and NaN are numbers', () => {
  const m = new TrainModel();
  assert.equal(m.apply({ file: '/w/train.py', reset: true, steps: [], session: 's1' }), true);
  for (let n = 1; n <= 12; n++) assert.equal(m.apply({ steps: [step(n, n === 5 ? { loss: 'NaN' } : {})] }), false);
  assert.equal(m.steps.length, 12);
  assert.equal(m.messages, 13);
  const d = m.chartData();
  assert.deepEqual(d.x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  assert.equal(d.loss[0], 2.3);
  assert.equal(d.loss[4], null, 'a NaN loss is a gap in the chart');
  assert.equal(d.gradNorm[11], 13);
  assert.ok(m.hasGradNorm());
  assert.match(m.summary(), /^epoch 1 · step 12\/40 · loss 0\.19167 · lr 0\.0100 · grad norm 13 · 4\.0 ms\/step · 8000 samples\/s · 1 non-finite loss$/);
  // The whole history again (a view that reconnects): replaced, not appended.
  assert.equal(m.apply({ reset: true, steps: [step(1), step(2)] }), true);
  assert.deepEqual(m.chartData().x, [1, 2]);
  // Without grad norm (`cellscope train --view`): the series is left out.
  const m2 = new TrainModel();
  m2.apply({ reset: true, steps: [step(1, { gradNorm: undefined })] });
  assert.equal(m2.hasGradNorm(), false);
  assert.doesNotMatch(m2.summary(), /grad norm/);
});

test('train model: thinning is the server\'s rule (view_server.cpp thin_train_steps)', () => {
  // The same case as tests/unit/view_test.cpp ViewTrain.ThinningKeepsTheLatestHalfAndEveryOtherOlderStep.
  assert.deepEqual(thinSteps([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 10), [1, 3, 5, 6, 7, 8, 9, 10, 11]);
  const m = new TrainModel();
  m.apply({ reset: true, steps: [], maxSteps: 10 });
  for (let n = 1; n <= 11; n++) m.apply({ steps: [step(n)], maxSteps: 10 });
  assert.deepEqual(m.chartData().x, [1, 3, 5, 6, 7, 8, 9, 10, 11]);
});

const driftMsg: PrecisionDrift = {
  file: '/w/train.py', precision: 'target', threshold: 0.999, firstBelow: 'layer1.1.conv1', top1Agreement: 0.96875,
  accuracyFp32: 0.9, accuracyPrecision: '0.875', samples: '64',
  layers: [
    { node: 'layer1.0.conv1', op: 'Conv2D', maxAbs: 1e-4, maxRel: 1e-3, cosine: 0.9999999, overflows: 0 },
    { node: 'layer1.0.relu', op: 'ReLU', maxAbs: 2e-4, maxRel: 1e-3, cosine: 0.99999, overflows: '0' },
    { node: 'layer1.1.conv1', op: 'Conv2D', maxAbs: 0.2, maxRel: 0.5, cosine: 0.995, overflows: '3' },
    { node: 'fc', op: 'MatMul', maxAbs: 0.3, maxRel: 'NaN', cosine: 'NaN', overflows: 0 },
  ],
};

test('drift metric: nodes coloured by cosine on a log scale, the threshold red, no data neutral', () => {
  assert.ok(METRICS.some((m) => m.id === 'drift' && m.layers.length === 3));
  const idx = driftIndex(driftMsg)!;
  assert.equal(idx.byNode.size, 4);
  assert.equal(idx.accuracyPrecision, 0.875);
  const g = buildViewGraph(smallCell(), 'semantic');
  const s = computeScale(g, 'drift', idx);
  assert.equal(s.values.has('x'), false, 'no data: not coloured');
  assert.equal(s.values.has('layer1.0/Add'), false);
  const t = (id: string) => s.norm(s.values.get(id)!);
  // The best layer green, worse ones further along, under the threshold (and NaN) red.
  assert.equal(t('layer1.0.conv1'), 0);
  assert.ok(t('layer1.0.relu') > 0 && t('layer1.0.relu') < 1);
  assert.equal(t('layer1.1.conv1'), 1);
  assert.equal(t('fc'), 1, 'a NaN cosine is the worst');
  assert.equal(s.color?.(0), driftColor(0));
  assert.equal(driftColor(0), 'rgb(26,152,80)');
  assert.equal(driftColor(1), 'rgb(215,48,39)');
  // log scale: 1e-7 .. 1e-3 (the threshold), 1e-5 is half way.
  assert.ok(Math.abs(t('layer1.0.relu') - 0.5) < 1e-6, String(t('layer1.0.relu')));
  // Collapsed groups: their worst node, on the nodes' scale.
  const sums = groupSums(g, s);
  assert.equal(sums.get('g:layer1.0'), badness(0.99999));
  const gs = groupScaleFor(s, sums, ['g:layer1.0']);
  assert.equal(gs.norm(gs.values.get('g:layer1.0')!), t('layer1.0.relu'));
  assert.ok(isFirstBelow(g.byId.get('layer1.1.conv1')!, idx));
  assert.ok(!isFirstBelow(g.byId.get('fc')!, idx));
  // Without drift data: nothing coloured.
  assert.equal(computeScale(g, 'drift', null).values.size, 0);
  assert.equal(driftIndex({ layers: [] }), null, 'no layers: no drift');
});

test('drift metric: a kernel shows the worst of its origins; the first below marks its kernel', () => {
  const cell = smallCell();
  cell.optimized = {
    nodes: [
      { id: 'x', kind: 'input', op: 'Input', origins: ['x'] },
      { id: 'conv/layer1.0.conv1', op: 'FusedConv2D', origins: ['layer1.0.conv1', 'layer1.0.relu'], inputs: [{ node: 'x' }] },
      { id: 'conv/layer1.1.conv1', op: 'Conv2D', origins: ['layer1.1.conv1'], inputs: [{ node: 'conv/layer1.0.conv1' }] },
    ],
  };
  const idx = driftIndex(driftMsg)!;
  const g = buildViewGraph(cell, 'optimized');
  assert.equal(nodeDrift(g.byId.get('conv/layer1.0.conv1')!, idx)?.node, 'layer1.0.relu');
  assert.ok(isFirstBelow(g.byId.get('conv/layer1.1.conv1')!, idx));
  assert.equal(nodeDrift(g.byId.get('x')!, idx), undefined);
  const card = driftCardHtml(g.byId.get('conv/layer1.0.conv1')!, idx);
  assert.match(card, /worst of its nodes: layer1\.0\.relu/);
  assert.match(card, /0\.999990/);
  const first = driftCardHtml(g.byId.get('conv/layer1.1.conv1')!, idx);
  assert.match(first, /first layer whose cosine falls under 0\.999/);
  assert.match(first, /fp16 overflows<\/th><td class="mono bad">3/);
});

test('drift texts: cosines keep the digits that matter; the summary names agreement, accuracy and the first layer', () => {
  assert.equal(fmtCos(0.9999999), '0.99999990');
  assert.equal(fmtCos(0.995), '0.9950');
  assert.equal(fmtCos(NaN), 'NaN');
  assert.equal(driftSummary(driftIndex(driftMsg)!),
    'target (fp16, fp32 accumulation) vs fp32 on 64 samples · top-1 agreement 96.9 % · accuracy 90.0 % → 87.5 % · first layer under cos 0.999: layer1.1.conv1');
});
