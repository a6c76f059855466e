// `cellscope dap` in modes "train" and "joint" (docs/dap.md, "Training"): the fixtures of
// tests/dap/fixtures/train (a small MLP trained with Model.train, and its planted faults) are
// copied into a temporary directory with generated MNIST-like data (mnist_data.mjs), so that the
// trained checkpoint the session writes next to the file lands there.
import { test, describe, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import testsupport from '@vscode/debugadapter-testsupport';
import { writeMnist } from '../mnist_data.mjs';

const { DebugClient } = testsupport;
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const BIN = process.env.CELLSCOPE_BIN || path.join(repo, 'build/cellscope');
const FIXTURES = path.join(repo, 'tests/dap/fixtures/train');

let tmp;
let DATA;
const file = (name) => path.join(tmp, name);

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cellscope-dap-train-'));
  for (const f of fs.readdirSync(FIXTURES)) fs.copyFileSync(path.join(FIXTURES, f), file(f));
  DATA = writeMnist(file('mnist'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function lineOf(f, re) {
  const i = fs.readFileSync(f, 'utf8').split('\n').findIndex((l) => re.test(l));
  assert.ok(i >= 0, `no line matching ${re} in ${f}`);
  return i + 1;
}

let dc;
let outputs;
let steps;
let progress;
// `stopped` events in arrival order, and the waiters for the next one: a stop that comes before
// the test waits for it (the run is fast) is not lost.
let stops;
let stopWaiters;
let ended;  // the `terminated` event, however early it comes
let exited;  // the `exited` event, likewise
beforeEach(async () => {
  stops = [];
  stopWaiters = [];
  dc = new DebugClient(BIN, 'dap', 'mindspore');
  dc.defaultTimeout = 120000;
  outputs = [];
  steps = [];
  progress = [];
  dc.on('output', (ev) => outputs.push(ev.body.output));
  dc.on('cellscope.trainStep', (ev) => steps.push(ev.body));
  ended = new Promise((resolve) => dc.once('terminated', resolve));
  exited = new Promise((resolve) => dc.once('exited', resolve));
  dc.on('stopped', (ev) => {
    if (stopWaiters.length) stopWaiters.shift()(ev.body);
    else stops.push(ev.body);
  });
  for (const e of ['progressStart', 'progressUpdate', 'progressEnd'])
    dc.on(e, (ev) => progress.push({ event: e, ...ev.body }));
  await dc.start();
});
afterEach(async () => {
  await dc.stop();
});

async function variables(ref) {
  return (await dc.variablesRequest({ variablesReference: ref })).body.variables;
}

// initialize, launch, the breakpoints and filters, configurationDone.
async function launch(config, { breakpoints = [], filters = [], filterOptions = [] } = {}) {
  await Promise.all([
    dc.initializeRequest({ adapterID: 'mindspore', supportsProgressReporting: true }),
    dc.waitForEvent('initialized'),
  ]);
  const launched = dc.launchRequest({ data: DATA, ...config });
  for (const [source, bps] of breakpoints)
    await dc.setBreakpointsRequest({ source: { path: source }, breakpoints: bps });
  await dc.setExceptionBreakpointsRequest({ filters, filterOptions });
  await launched;
  await dc.configurationDoneRequest();
}

function stopped() {
  if (stops.length) return Promise.resolve(stops.shift());
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no stopped event after 120 s')), 120000);
    stopWaiters.push((body) => {
      clearTimeout(timer);
      resolve(body);
    });
  });
}

// The Training scope of the top frame: { step: '3', ... }.
async function trainingInfo() {
  const frames = (await dc.stackTraceRequest({ threadId: 1 })).body.stackFrames;
  const scopes = (await dc.scopesRequest({ frameId: frames[0].id })).body.scopes;
  const training = scopes.find((s) => s.name === 'Training');
  assert.ok(training, JSON.stringify(scopes));
  const info = {};
  for (const v of await variables(training.variablesReference)) info[v.name] = v.value;
  return { frames, scopes, info };
}

const FIELDS = ['cell', 'epoch', 'file', 'globalStep', 'gradNorm', 'loss', 'lossScale', 'lr',
  'samplesPerSec', 'skipped', 'step', 'stepMs', 'totalSteps'];

describe('cellscope dap: train mode', () => {
  test('trainStep events with a decreasing loss, LossMonitor lines, progress, the checkpoint', async () => {
    const program = file('train_mlp.py');
    const ckpt = file('train_mlp_trained.ckpt');
    fs.rmSync(ckpt, { force: true });
    await launch({ program, mode: 'train', steps: 30 });
    await ended;
    assert.equal(steps.length, 30, outputs.join(''));
    for (const [i, s] of steps.entries()) {
      assert.deepEqual(Object.keys(s).sort(), FIELDS);
      assert.equal(s.file, fs.realpathSync(program));
      assert.equal(s.cell, 'MLP');
      assert.equal(s.globalStep, i + 1);
      assert.equal(s.step, i + 1);  // 40 batches of 16 per epoch
      assert.equal(s.epoch, 1);
      assert.equal(s.totalSteps, 30);
      assert.equal(s.lr, Math.fround(0.05));  // MindSpore keeps the rate as a float32 Parameter
      assert.equal(s.lossScale, 1);
      assert.equal(s.skipped, false);
      assert.ok(s.gradNorm > 0 && s.stepMs > 0 && s.samplesPerSec > 0, JSON.stringify(s));
    }
    const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
    const first = mean(steps.slice(0, 5).map((s) => s.loss));
    const last = mean(steps.slice(-5).map((s) => s.loss));
    assert.ok(first > 2.0, `first losses ${first}`);  // ~ln(10) at the start
    assert.ok(last < 0.5 * first, `the loss did not decrease: ${first} -> ${last}`);
    const text = outputs.join('');
    assert.match(text, /epoch: 1 step: 1, loss is \d\.\d+ \(\d+\.\d ms, \d+ samples\/s\)/);
    assert.match(text, /epoch: 1 step: 30, loss is /);
    assert.ok(fs.existsSync(ckpt), text);
    assert.match(text, new RegExp(`wrote the trained checkpoint .*train_mlp_trained\\.ckpt\\n$`));
    // Progress: a start, one update per step, an end.
    assert.equal(progress[0].event, 'progressStart');
    assert.equal(progress.filter((p) => p.event === 'progressUpdate').length, 30);
    assert.equal(progress.at(-1).event, 'progressEnd');
    assert.equal(progress.filter((p) => p.event === 'progressUpdate').at(-1).percentage, 100);
  });

  test('a breakpoint in a sub-Cell with hitCondition 3 stops in step 3; gradients, updates, optimizer state; stepping a step', async () => {
    const program = file('train_mlp.py');
    const line = lineOf(program, /y = self\.dense\(x\)/);
    await launch({ program, mode: 'train', steps: 8 },
      { breakpoints: [[program, [{ line, hitCondition: '3' }]]] });
    let s = await stopped();
    assert.equal(s.reason, 'breakpoint');
    assert.equal(steps.length, 2);  // in the forward pass of step 3
    let { frames, scopes, info } = await trainingInfo();
    assert.equal(info.step, '3');
    assert.equal(frames[0].line, line);
    assert.match(frames[0].name, /hidden \(Block\)\.construct/);
    assert.equal(info['gradients of step'], '2');
    assert.equal(info['updates of step'], '2');
    // The locals of the forward pass: in MLP.construct (the caller's frame), x is the flattened
    // batch the hidden block gets (the network's source names).
    assert.equal(frames[1].name, 'MLP.construct');
    const outer = (await dc.scopesRequest({ frameId: frames[1].id })).body.scopes;
    const locals = await variables(outer.find((v) => v.name === 'Locals').variablesReference);
    assert.ok(locals.some((v) => v.name === 'x' && /Tensor\(16, 784\)/.test(v.value)), JSON.stringify(locals));
    // Gradients and updates: hidden.dense.weight's value, gradient, last update; update =
    // value now - value before, checked against the value at the next step.
    const params = await variables(scopes.find((v) => v.name === 'Gradients and updates').variablesReference);
    const w = params.find((v) => v.name === 'hidden.dense.weight');
    assert.ok(w, JSON.stringify(params.map((p) => p.name)));
    const parts = await variables(w.variablesReference);
    assert.deepEqual(parts.map((p) => p.name), ['value', 'gradient', 'last update', 'learning rate']);
    assert.match(parts[1].value, /Tensor\(32, 784\) float32/);
    assert.equal(parts[3].value, '0.05');
    const opt = await variables(scopes.find((v) => v.name === 'Optimizer state').variablesReference);
    assert.ok(opt.some((v) => v.name === 'moments.hidden.dense.weight'), JSON.stringify(opt.map((v) => v.name)));
    // cellscope.stepTraining: the rest of step 3, then a stop at the top of step 4.
    await dc.customRequest('cellscope.stepTraining', { threadId: 1 });
    s = await stopped();
    assert.equal(s.reason, 'step');
    ({ info } = await trainingInfo());
    assert.equal(info.step, '4');
    assert.equal(steps.length, 3);
    // `next` at the top of a step runs that step: the top of step 5.
    await dc.nextRequest({ threadId: 1 });
    s = await stopped();
    assert.equal(s.reason, 'step');
    ({ info } = await trainingInfo());
    assert.equal(info.step, '5');
    assert.equal(steps.length, 4);
    // The hit count counts steps: no further stop (hit 3 only), the run ends.
    await dc.continueRequest({ threadId: 1 });
    await ended;
    assert.equal(steps.length, 8);
  });

  test('cellscope.stepTraining in mode infer is refused', async () => {
    await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
    await dc.launchRequest({ program: path.join(repo, 'tests/dap/fixtures/nan_model.py'), inputs: ['2,4'], stopOnEntry: true });
    await dc.setExceptionBreakpointsRequest({ filters: [] });
    await dc.configurationDoneRequest();
    assert.equal((await stopped()).reason, 'entry');
    await assert.rejects(dc.customRequest('cellscope.stepTraining', { threadId: 1 }), /the session does not train \(mode "infer"\)/);
  });

  test('stopOnEntry stops at the top of step 1', async () => {
    await launch({ program: file('train_mlp.py'), mode: 'train', steps: 2, stopOnEntry: true });
    const s = await stopped();
    assert.equal(s.reason, 'entry');
    const { info } = await trainingInfo();
    assert.equal(info.step, '1');
    assert.equal(info['gradients of step'], 'none yet');
    await dc.continueRequest({ threadId: 1 });
    await ended;
    assert.equal(steps.length, 2);
  });
});

describe('cellscope dap: training filters', () => {
  test('grad-explode (planted learning rate 1e6) stops before the update with the norm, its threshold set', async () => {
    await launch({ program: file('explode_mlp.py'), mode: 'train', steps: 10 },
      { filterOptions: [{ filterId: 'grad-explode', condition: '1e4' }] });
    const s = await stopped();
    assert.equal(s.reason, 'exception');
    assert.match(s.description, /^grad-explode: step (\d+): the global gradient norm (\S+) is above 10000 \(largest: \S+, norm \S+\)$/);
    const [, step, norm] = s.description.match(/step (\d+): the global gradient norm (\S+)/);
    assert.ok(Number(norm) > 1e4);
    const { info } = await trainingInfo();
    assert.equal(info.step, step);
    assert.equal(info['gradients of step'], step);
    assert.equal(steps.length, Number(step) - 1);  // before the update of that step
    const ex = await dc.customRequest('exceptionInfo', { threadId: 1 });
    assert.equal(ex.body.exceptionId, 'grad-explode');
  });

  test('loss-spike stops after the step whose loss jumps', async () => {
    await launch({ program: file('explode_mlp.py'), mode: 'train', steps: 10 },
      { filterOptions: [{ filterId: 'loss-spike', condition: '5' }] });
    const s = await stopped();
    assert.match(s.description, /^loss-spike: step (\d+): the loss \S+ is \S+ times the mean of the previous \d+ steps \(\S+\), above the factor 5$/);
    const step = Number(s.description.match(/step (\d+)/)[1]);
    assert.equal(steps.length, step);  // after the step
    const prev = steps.slice(0, step - 1).map((e) => e.loss);
    const mean = prev.slice(-10).reduce((a, b) => a + b, 0) / Math.min(prev.length, 10);
    assert.ok(steps[step - 1].loss > 5 * mean);
  });

  test('a bad filter condition is not verified', async () => {
    await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
    const r = await dc.setExceptionBreakpointsRequest({
      filters: [], filterOptions: [{ filterId: 'grad-explode', condition: 'big' }, { filterId: 'nan', condition: '3' }],
    });
    assert.equal(r.body.breakpoints[0].verified, false);
    assert.match(r.body.breakpoints[0].message, /must be a positive number/);
    assert.equal(r.body.breakpoints[1].verified, false);
    assert.match(r.body.breakpoints[1].message, /takes no condition/);
  });

  test('loss-nan (a log of a negative) stops at the loss node of step 1', async () => {
    await launch({ program: file('nan_mlp.py'), mode: 'train', steps: 3 }, { filters: ['loss-nan'] });
    const s = await stopped();
    assert.equal(s.reason, 'exception');
    assert.match(s.description, /^loss-nan: step 1: the loss is NaN \(node '.*' at .*\)$/);
    await dc.continueRequest({ threadId: 1 });
    await ended;
    assert.match(outputs.join(''), /training failed: step 1: the loss is NaN .*no checkpoint written/);
    assert.ok(!fs.existsSync(file('nan_mlp_trained.ckpt')));
  });

  test('grad-nan names the parameter whose gradient is NaN', async () => {
    await launch({ program: file('nan_mlp.py'), mode: 'train', steps: 3 }, { filters: ['grad-nan'] });
    const s = await stopped();
    assert.match(s.description, /^grad-nan: step 1: the gradient of (head|hidden\.dense)\.(weight|bias) has \d+ NaN of \d+ elements, first at index \[/);
  });

  test('weight-unchanged (a frozen layer: lr 0) names the parameter after step 1', async () => {
    await launch({ program: file('frozen_mlp.py'), mode: 'train', steps: 3 }, { filters: ['weight-unchanged'] });
    const s = await stopped();
    assert.match(s.description, /^weight-unchanged: step 1: head\.weight did not change \(its gradient's norm is \S+, its learning rate 0\)$/);
    assert.equal(steps.length, 1);
    const { scopes } = await trainingInfo();
    const params = await variables(scopes.find((v) => v.name === 'Gradients and updates').variablesReference);
    const head = await variables(params.find((v) => v.name === 'head.weight').variablesReference);
    const update = head.find((v) => v.name === 'last update');
    assert.match(update.value, /min=0 max=0 mean=0/);
    const hidden = await variables(params.find((v) => v.name === 'hidden.dense.weight').variablesReference);
    assert.doesNotMatch(hidden.find((v) => v.name === 'last update').value, /min=0 max=0 mean=0/);
  });
});

describe('cellscope dap: joint mode', () => {
  test('trains, then reports top-1 accuracy on held-out batches at fp32, then writes the checkpoint', async () => {
    const ckpt = file('train_mlp_trained.ckpt');
    fs.rmSync(ckpt, { force: true });
    await launch({ program: file('train_mlp.py'), mode: 'joint', epochs: 1, evalBatches: 5 });
    await ended;
    assert.equal(steps.length, 40);
    const text = outputs.join('');
    const m = text.match(/inference \(fp32\): top-1 accuracy (\S+)% \((\d+) of 80 samples, 5 batches of the test split/);
    assert.ok(m, text);
    assert.ok(Number(m[1]) > 80, text);
    assert.ok(fs.existsSync(ckpt));
    assert.ok(text.indexOf('top-1 accuracy') < text.indexOf('wrote the trained checkpoint'));
  });

  for (const precision of ['target', 'int8']) {
    test(`the inference half at ${precision}: the drift table and the cellscope.drift event, by the network's node ids`, async () => {
      const drifts = [];
      dc.on('cellscope.drift', (ev) => drifts.push(ev.body));
      await launch({
        program: file('train_mlp.py'), mode: 'joint', steps: 10, evalBatches: 3,
        precision, calibrationBatches: 2,
      });
      await ended;
      assert.equal(drifts.length, 1, outputs.join(''));
      const d = drifts[0];
      assert.equal(d.precision, precision);
      assert.equal(d.file, fs.realpathSync(file('train_mlp.py')));
      assert.equal(d.threshold, 0.99);
      assert.ok(d.samples > 0);
      assert.ok(d.top1Agreement >= 0 && d.top1Agreement <= 1);
      assert.ok(d.layers.length >= 2, JSON.stringify(d));
      // The ids are the network's: the view of the file names its nodes the same way.
      const ops = new Set(d.layers.map((l) => l.op));
      assert.ok(ops.has('Dense') || ops.has('MatMul'), [...ops].join(','));
      for (const l of d.layers) {
        assert.equal(typeof l.node, 'string');
        assert.ok(l.node.length > 0);
        assert.ok(l.cosine === null || (l.cosine > 0 && l.cosine <= 1 + 1e-9), JSON.stringify(l));
        assert.ok(l.maxAbs === null || l.maxAbs >= 0);
      }
      // Quantisation moves the numbers, fp16 storage too: some layer differs from fp32.
      assert.ok(d.layers.some((l) => l.maxAbs > 0), JSON.stringify(d.layers));
      const text = outputs.join('');
      assert.match(text, new RegExp(`precision drift|${precision}`, 'i'));
      assert.match(text, /measured in [0-9.]+ ms/);
      assert.ok(text.indexOf('measured in') < text.indexOf('wrote the trained checkpoint'));
    });
  }
});

// The Precision drift scope of the stop after the inference half: its rows by name.
async function driftScope() {
  const frames = (await dc.stackTraceRequest({ threadId: 1 })).body.stackFrames;
  const scopes = (await dc.scopesRequest({ frameId: frames[0].id })).body.scopes;
  const scope = scopes.find((s) => s.name === 'Precision drift');
  assert.ok(scope, JSON.stringify(scopes.map((s) => s.name)));
  const rows = await variables(scope.variablesReference);
  return { frames, rows, byName: Object.fromEntries(rows.map((r) => [r.name, r])) };
}

// A number as the adapter shows it (%.6g): the event's number rounded to 6 significant digits.
const shown = (x) => Number(Number(x).toPrecision(6));

describe('cellscope dap: joint mode stops on precision drift', () => {
  test('driftThreshold above every cosine: an exception stop at the first drifted layer; the Precision drift scope equals the cellscope.drift event', async () => {
    const drifts = [];
    const artifacts = [];
    dc.on('cellscope.drift', (ev) => drifts.push(ev.body));
    dc.on('cellscope.sessionArtifacts', (ev) => artifacts.push(ev.body));
    const ckpt = file('train_mlp_trained.ckpt');
    fs.rmSync(ckpt, { force: true });
    await launch({
      program: file('train_mlp.py'), mode: 'joint', steps: 10, evalBatches: 3,
      precision: 'int8', calibrationBatches: 2, driftThreshold: 0.9999999,
    });
    const stop = await stopped();
    assert.equal(drifts.length, 1, 'the drift event comes before the stop');
    const d = drifts[0];
    assert.notEqual(d.firstBelow, '', JSON.stringify(d.layers));
    assert.equal(d.threshold, 0.9999999);
    assert.equal(stop.reason, 'exception');
    assert.match(stop.description, new RegExp(`^precision-drift: at int8 the cosine of layer '${d.firstBelow.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'`));
    const info = (await dc.customRequest('exceptionInfo', { threadId: 1 })).body;
    assert.equal(info.exceptionId, 'precision-drift');
    assert.ok(!fs.existsSync(ckpt), 'nothing is written while stopped');

    const { frames, rows, byName } = await driftScope();
    assert.equal(byName.precision.value, 'int8');
    assert.equal(Number(byName.threshold.value), shown(d.threshold));
    assert.equal(byName['first layer under the threshold'].value, d.firstBelow);
    assert.equal(Number(byName['top-1 agreement'].value), shown(d.top1Agreement));
    assert.equal(Number(byName['accuracy (fp32)'].value), shown(d.accuracyFp32));
    assert.equal(Number(byName['accuracy (int8)'].value), shown(d.accuracyPrecision));
    assert.equal(Number(byName.samples.value), d.samples);
    // One row per layer, in the event's order, each expandable to its node and figures.
    const layerRows = rows.filter((r) => r.variablesReference > 0);
    assert.deepEqual(layerRows.map((r) => r.name), d.layers.map((l) => l.node));
    for (const [i, row] of layerRows.entries()) {
      const l = d.layers[i];
      const fig = Object.fromEntries((await variables(row.variablesReference)).map((v) => [v.name, v.value]));
      assert.equal(fig.node, l.node);
      assert.equal(fig.op, l.op);
      assert.equal(fig.scope, l.scope);
      assert.equal(Number(fig['max abs']), shown(l.maxAbs), JSON.stringify([fig, l]));
      assert.equal(Number(fig['max rel']), shown(l.maxRel));
      assert.equal(Number(fig.cosine), shown(l.cosine));
      assert.equal(Number(fig['fp16 overflows']), l.overflows);
      assert.match(row.value, new RegExp(`^cosine ${fig.cosine.replace('+', '\\+')}, max abs`));
      // The stop is at the drifted layer's line.
      if (l.node === d.firstBelow) assert.match(fig.source, new RegExp(`train_mlp\\.py:${frames[0].line}$`));
    }
    // `cellscope train --drift` on the same file, data, steps and seed: the same numbers.
    const cli = JSON.parse(execFileSync(BIN, ['train', file('train_mlp.py'), '--data', DATA, '--steps', '10',
      '--drift', 'int8', '--eval-batches', '3', '--calibration-batches', '2', '--drift-threshold', '0.9999999',
      '--format', 'json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })).drift;
    assert.equal(cli.first_below, d.firstBelow);
    assert.equal(Number(byName['top-1 agreement'].value), shown(cli.top1_agreement));
    assert.deepEqual(cli.layers.map((l) => l.node), layerRows.map((r) => r.name));
    for (const [i, row] of layerRows.entries()) {
      const fig = Object.fromEntries((await variables(row.variablesReference)).map((v) => [v.name, v.value]));
      assert.equal(Number(fig.cosine), shown(cli.layers[i].cosine));
      assert.equal(Number(fig['max abs']), shown(cli.layers[i].max_abs));
      assert.equal(Number(fig['max rel']), shown(cli.layers[i].max_rel));
    }
    await dc.continueRequest({ threadId: 1 });
    const [exit] = await Promise.all([exited, ended]);
    assert.equal(exit.body.exitCode, 0);
    assert.ok(fs.existsSync(ckpt));
    assert.equal(artifacts.length, 1);
    assert.equal(artifacts[0].checkpoint, ckpt);
  });

  test('stopOnDrift "always" pauses after the inference half even without drift; "never" and the default at fp16 do not', async () => {
    const drifts = [];
    dc.on('cellscope.drift', (ev) => drifts.push(ev.body));
    await launch({
      program: file('train_mlp.py'), mode: 'joint', steps: 5, evalBatches: 2,
      precision: 'target', driftThreshold: 0.5, stopOnDrift: 'always',
    });
    const stop = await stopped();
    assert.equal(drifts.length, 1);
    assert.equal(drifts[0].firstBelow, '');
    assert.equal(stop.reason, 'pause');
    assert.match(stop.description, /^precision drift \(target\): every layer's cosine is at least 0\.5; top-1 agreement/);
    const { byName } = await driftScope();
    assert.match(byName['first layer under the threshold'].value, /^none/);
    assert.equal(byName.precision.value, 'target');
    await dc.continueRequest({ threadId: 1 });
    await ended;
  });

  for (const stopOnDrift of [undefined, 'never']) {
    test(`stopOnDrift ${stopOnDrift ?? '(default)'} with a threshold nothing crosses / "never": no stop, the session ends`, async () => {
      await launch({
        program: file('train_mlp.py'), mode: 'joint', steps: 5, evalBatches: 2, precision: 'int8',
        calibrationBatches: 1,
        ...(stopOnDrift ? { stopOnDrift, driftThreshold: 0.9999999 } : { driftThreshold: 0.01 }),
      });
      await ended;
      assert.equal(stops.length, 0, JSON.stringify(stops));
      assert.match(outputs.join(''), /wrote the trained checkpoint/);
    });
  }
});

describe('cellscope dap: the end of a session writes the file\'s ms.export model', () => {
  test('the trained checkpoint and the MindIR of the ms.export call, then cellscope.sessionArtifacts', async () => {
    const artifacts = [];
    dc.on('cellscope.sessionArtifacts', (ev) => artifacts.push(ev.body));
    const ckpt = file('export_mlp_trained.ckpt');
    const mindir = file('mlp_trained.mindir');
    for (const f of [ckpt, mindir]) fs.rmSync(f, { force: true });
    await launch({ program: file('export_mlp.py'), mode: 'train', steps: 5 });
    const [exit] = await Promise.all([exited, ended]);
    assert.equal(exit.body.exitCode, 0, outputs.join(''));
    assert.equal(artifacts.length, 1, outputs.join(''));
    const a = artifacts[0];
    assert.deepEqual(Object.keys(a).sort(), ['cell', 'checkpoint', 'file', 'mindir']);
    assert.equal(a.file, fs.realpathSync(file('export_mlp.py')));
    assert.equal(a.cell, 'MLP');
    assert.equal(a.checkpoint, ckpt);
    assert.equal(a.mindir, mindir);
    assert.ok(fs.statSync(ckpt).size > 0);
    // A MindIR is a protobuf ModelProto: its producer field names MindSpore.
    const bytes = fs.readFileSync(mindir);
    assert.ok(bytes.length > 32 * 784 * 4, `${bytes.length} bytes: the weights are in it`);
    const text = outputs.join('');
    assert.match(text, /cellscope: wrote .*mlp_trained\.mindir \(MindIR, .* bytes\), as the ms\.export call at export_mlp\.py:\d+ asks, from the trained checkpoint/);
    assert.ok(text.indexOf('wrote the trained checkpoint') < text.indexOf('mlp_trained.mindir'));
  });

  test('an ms.export call with file_format="AIR": no model, the reason in notes and on stderr', async () => {
    const artifacts = [];
    const errors = [];
    dc.on('cellscope.sessionArtifacts', (ev) => artifacts.push(ev.body));
    dc.on('output', (ev) => { if (ev.body.category === 'stderr') errors.push(ev.body.output); });
    const program = file('export_air.py');
    fs.writeFileSync(program, fs.readFileSync(file('export_mlp.py'), 'utf8').replace('file_format="MINDIR"', 'file_format="AIR"'));
    await launch({ program, mode: 'train', steps: 2 });
    const [exit] = await Promise.all([exited, ended]);
    assert.equal(exit.body.exitCode, 0);
    assert.equal(artifacts.length, 1);
    assert.deepEqual(Object.keys(artifacts[0]).sort(), ['cell', 'checkpoint', 'file', 'notes']);
    assert.match(artifacts[0].notes[0], /^no model exported: the ms\.export call at export_air\.py:\d+: file_format='AIR': Cellscope writes MINDIR and ONNX, not AIR$/);
    assert.ok(errors.some((e) => e.includes(artifacts[0].notes[0])), errors.join(''));
    assert.ok(!fs.existsSync(file('mlp_trained.air')));
  });

  test('a file without an ms.export call: the artifacts event names the checkpoint only', async () => {
    const artifacts = [];
    dc.on('cellscope.sessionArtifacts', (ev) => artifacts.push(ev.body));
    await launch({ program: file('train_mlp.py'), mode: 'train', steps: 2 });
    await ended;
    assert.equal(artifacts.length, 1);
    assert.deepEqual(Object.keys(artifacts[0]).sort(), ['cell', 'checkpoint', 'file']);
  });
});

describe('cellscope dap: a kernel error in a training step', () => {
  test('the kernel-error filter is announced on by default', async () => {
    const caps = (await dc.initializeRequest()).body;
    const f = caps.exceptionBreakpointFilters.find((x) => x.filter === 'kernel-error');
    assert.ok(f, JSON.stringify(caps.exceptionBreakpointFilters));
    assert.equal(f.default, true);
    assert.equal(caps.exceptionBreakpointFilters.filter((x) => x.default).length, 1);
  });

  test('stops at the failing node naming the step and the node; continue ends the session (exit code 1)', async () => {
    await launch({ program: file('kernel_error_mlp.py'), mode: 'train', steps: 5 }, { filters: ['kernel-error'] });
    const stop = await stopped();
    assert.equal(stop.reason, 'exception');
    assert.match(stop.description, /^RuntimeError: step 1: node '_loss_fn' \(SoftmaxCrossEntropyWithLogits[^)]*\) at kernel_error_mlp\.py:\d+: SoftmaxCrossEntropyWithLogits: label \d at batch index \d+ is out of range for 5 classes/);
    const info = (await dc.customRequest('exceptionInfo', { threadId: 1 })).body;
    assert.equal(info.exceptionId, 'RuntimeError');
    const { frames, info: training } = await trainingInfo();
    assert.equal(training.step, '1');
    assert.equal(frames[0].source.path, file('kernel_error_mlp.py'));
    // The forward values of the failed step so far are there: the head's logits.
    const logits = await dc.evaluateRequest({ expression: 'head', frameId: frames[0].id });
    assert.match(logits.body.result, /^Tensor\(16, 5\) float32/);
    assert.match(outputs.join(''), /training failed: step 1: .*\(no checkpoint written\)/);
    await dc.continueRequest({ threadId: 1 });
    const [exit] = await Promise.all([exited, ended]);
    assert.equal(exit.body.exitCode, 1);
    assert.ok(!fs.existsSync(file('kernel_error_mlp_trained.ckpt')));
  });

  test('without the filter the session ends at once with exit code 1', async () => {
    await launch({ program: file('kernel_error_mlp.py'), mode: 'train', steps: 5 });
    const [exit] = await Promise.all([exited, ended]);
    assert.equal(exit.body.exitCode, 1);
    assert.equal(stops.length, 0);
  });
});

describe('cellscope dap: step in conditions and evaluate', () => {
  const blockLine = () => lineOf(file('train_mlp.py'), /y = self\.dense\(x\)/);
  for (const [condition, expected] of [['step % 5 == 0', ['5', '10']], ['step >= 3', ['3', '4']]]) {
    test(`condition "${condition}" stops in steps ${expected.join(', ')}`, async () => {
      await launch({ program: file('train_mlp.py'), mode: 'train', steps: 12 }, {
        breakpoints: [[file('train_mlp.py'), [{ line: blockLine(), condition }]]],
      });
      for (const step of expected) {
        const stop = await stopped();
        assert.equal(stop.reason, 'breakpoint');
        const { frames, info } = await trainingInfo();
        assert.equal(info.step, step);
        const r = await dc.evaluateRequest({ expression: 'step', frameId: frames[0].id, context: 'watch' });
        assert.equal(r.body.result, step);
        assert.equal(r.body.variablesReference, 0);
        const m = await dc.evaluateRequest({ expression: 'epoch', frameId: frames[0].id });
        assert.equal(m.body.result, '1');
        if (step === expected.at(-1))
          await dc.setBreakpointsRequest({ source: { path: file('train_mlp.py') }, breakpoints: [] });
        await dc.continueRequest({ threadId: 1 });
      }
      await ended;
      assert.ok(!outputs.join('').includes('breakpoint condition'), outputs.join(''));
    });
  }

  test('a logpoint prints {step}; a bad modulus is reported, not a stop', async () => {
    await launch({ program: file('train_mlp.py'), mode: 'train', steps: 3 }, {
      breakpoints: [[file('train_mlp.py'), [
        { line: blockLine(), logMessage: 'at step {step}' },
        { line: lineOf(file('train_mlp.py'), /return self\.head\(x\)/), condition: 'step % 0 == 1' },
      ]]],
    });
    const stop = await stopped();  // an unevaluable condition stops, reported on stderr
    assert.equal(stop.reason, 'breakpoint');
    await dc.setBreakpointsRequest({
      source: { path: file('train_mlp.py') },
      breakpoints: [{ line: blockLine(), logMessage: 'at step {step}' }],
    });
    await dc.continueRequest({ threadId: 1 });
    await ended;
    const text = outputs.join('');
    for (const k of [1, 2, 3]) assert.match(text, new RegExp(`at step ${k}\\n`));
    assert.match(text, /breakpoint condition "step % 0 == 1": the right side of % must be a non-zero number/);
  });
});

describe('cellscope dap: bad training configurations end cleanly', () => {
  const cases = [
    [{ mode: 'bogus' }, /'mode' must be "infer", "train" or "joint", not "bogus"/],
    [{ mode: 'train', steps: 0 }, /'steps' must be a positive integer, not 0/],
    [{ mode: 'train', batch: 'x' }, /'batch' must be a positive integer, not "x"/],
    [{ steps: 3 }, /'steps' applies to mode "train" or "joint", not to mode "infer"/],
    [{ mode: 'train', evalBatches: 3 }, /'evalBatches' applies to mode "joint"/],
    [{ mode: 'train', inputs: ['1,784'] }, /'inputs' applies to mode "infer"/],
    [{ mode: 'joint', precision: 'fp8' }, /precision must be "fp32", "target" or "int8", not "fp8"/],
    [{ mode: 'joint', stopOnDrift: 'sometimes' }, /'stopOnDrift' must be "belowThreshold", "always", "never" or a boolean, not "sometimes"/],
    [{ mode: 'joint', driftThreshold: 1.5 }, /'driftThreshold' must be a number in \(0, 1\], not 1.5/],
    [{ mode: 'train', stopOnDrift: true }, /'stopOnDrift' applies to mode "joint"/],
    [{ precision: 'int8' }, /precision "int8" is the inference half's of mode "joint"/],
    [{ mode: 'train', data: '/nonexistent/mnist' }, /data directory '\/nonexistent\/mnist' does not exist/],
    [{ mode: 'train', cell: 'Nope' }, /no training of cell 'Nope' in .*train_mlp\.py \(it trains MLP\)/],
    [{ mode: 'train', program: path.join(repo, 'tests/dap/fixtures/nan_model.py') }, /no training found in .*nan_model\.py/],
  ];
  for (const [config, re] of cases) {
    test(JSON.stringify(config), async () => {
      await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
      const terminated = dc.waitForEvent('terminated');
      const training = config.mode === 'train' || config.mode === 'joint';
      await assert.rejects(dc.launchRequest({ program: file('train_mlp.py'), ...(training ? { data: DATA } : {}), ...config }), re);
      await terminated;
    });
  }

  test('a data directory without the MNIST files fails the launch naming them', async () => {
    await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
    const empty = fs.mkdtempSync(path.join(tmp, 'empty-'));
    const terminated = dc.waitForEvent('terminated');
    await assert.rejects(dc.launchRequest({ program: file('train_mlp.py'), mode: 'train', data: empty }),
      /train-images-idx3-ubyte/);
    await terminated;
  });
});
