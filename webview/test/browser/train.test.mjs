// The view tier, training (issue 19): the live loss / lr chart fed by the real `cellscope train
// --view` (a TrainProgress per step over the WebSocket, the messages `cellscope lsp` relays from a
// debug session), and the drift metric in an html snapshot (`cellscope graph --format html
// --progress --drift`), in Debian's chromium (playwright-core). The chart's data is checked against
// the losses the same run printed; the drift colours against the drift given. Screenshots in
// $CELLSCOPE_ARTIFACTS.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { artifacts, bin, newPage, repo, useBrowser } from './lib.mjs';

const script = path.join(repo, 'tests', 'training', 'scripts', 'lenet_model_train.py');
const browser = useBrowser(test);
const STEPS = 30;

function tempCopy(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellscope-train-view-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'lenet_train.py');
  fs.copyFileSync(script, file);
  return { dir, file };
}

// "epoch: 1 step: 7, loss is 2.30117 (4.1 ms, 7804 samples/s)" -> [7, 2.30117]
function printedLosses(text) {
  return [...text.matchAll(/^epoch: \d+ step: (\d+), loss is (\S+) /gm)].map((m) => [Number(m[1]), Number(m[2])]);
}

test('cellscope train --view: the view draws a live loss / lr chart from the TrainProgress of every step', async (t) => {
  const { dir, file } = tempCopy(t);
  const child = spawn(bin, ['train', file, '--synthetic', '--steps', String(STEPS), '--seed', '3', '--view', '--view-wait'],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGTERM'));
  let out = '', err = '';
  child.stderr.on('data', (d) => { err += d; });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no URL from cellscope train --view: ' + out + err)), 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{32}&file=\S+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('exit', (code) => reject(new Error(`cellscope train exited (${code}): ${out}${err}`)));
  });
  const page = await newPage(browser, t);
  // Count the TrainProgress frames the page receives over its WebSocket.
  const frames = [];
  page.on('websocket', (ws) => ws.on('framereceived', (f) => {
    if (typeof f.payload === 'string' && f.payload.startsWith('{"train"')) frames.push(JSON.parse(f.payload).train);
  }));
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await page.waitForFunction((n) => window.cellscopeView.train().points === n, STEPS, { timeout: 60000 });
  await new Promise((resolve) => {
    if (/Training done/.test(out)) resolve();
    child.stdout.on('data', () => { if (/Training done/.test(out)) resolve(); });
  });
  // --view-wait: the run started once the page was connected.
  assert.ok(out.indexOf('Waiting for a view to connect') < out.indexOf('epoch: 1 step: 1,'), out);
  const s = await page.evaluate(() => window.cellscopeView.trainFlush());
  assert.ok(s.open, 'the training dock opened');
  assert.equal(s.collapsed, false);
  // Live: one message per step after the reset the run started with (the page connected first).
  const stepFrames = frames.filter((f) => (f.steps ?? []).length === 1 && !f.reset);
  assert.ok(stepFrames.length >= 10, `${stepFrames.length} live step messages`);
  assert.ok(s.messages >= 10, `${s.messages} TrainProgress applied`);
  // The chart's data as uPlot holds it: steps 1..STEPS, the losses the run printed, its lr.
  // The Trainer reports each step's global gradient norm: the third series.
  assert.deepEqual(s.series, ['step', 'loss', 'lr', 'grad norm']);
  assert.ok(s.data[3].every((g) => Number.isFinite(g) && g > 0), JSON.stringify(s.data[3]));
  const printed = printedLosses(out);
  assert.equal(printed.length, STEPS, out);
  assert.deepEqual(s.data[0], printed.map(([n]) => n));
  s.data[1].forEach((loss, i) => {
    const want = printed[i][1];
    assert.ok(Math.abs(loss - want) <= 1e-5 * Math.abs(want), `step ${i + 1}: chart ${loss}, printed ${want}`);
  });
  assert.ok(s.data[2].every((lr) => lr === Math.fround(0.01)), JSON.stringify(s.data[2]));  // Momentum(learning_rate=0.01), a float32
  assert.match(s.summary, new RegExp(`^epoch 1 · step ${STEPS}/${STEPS} · loss `));
  // Drawn: the chart's canvas has ink, and is as wide as the pane.
  const ink = await page.evaluate(() => window.cellscopeView.trainInk());
  assert.ok(ink > 0.01, `chart ink ${ink}`);
  assert.ok(s.width > 600, String(s.width));
  await page.screenshot({ path: path.join(artifacts, 'train-chart.png') });
  // Collapsed to its summary line, and back; the graph gets the room.
  const paneH = () => page.evaluate(() => document.querySelector('.views').getBoundingClientRect().height);
  const open = await paneH();
  const c = await page.evaluate(() => window.cellscopeView.setTrainCollapsed(true));
  assert.equal(c.collapsed, true);
  assert.ok(await page.evaluate(() => document.querySelector('.train-chart').classList.contains('hidden')));
  assert.ok(await paneH() > open + 100, 'the graph pane grows when the chart is collapsed');
  await page.screenshot({ path: path.join(artifacts, 'train-chart-collapsed.png') });
  await page.evaluate(() => window.cellscopeView.setTrainCollapsed(false));
  // A debug session's steps carry the gradients' norm (cellscope.trainStep's gradNorm): a new run
  // (reset) with it draws a third series on its own scale.
  const steps = Array.from({ length: 12 }, (_, i) => ({
    file: '/w/x.py', epoch: 1, step: i + 1, globalStep: String(i + 1), loss: 2 / (i + 1), lr: 0.1, gradNorm: 10 + i, stepMs: 2,
  }));
  await page.evaluate((p) => window.cellscopeView.injectMessage({ train: p }), { reset: true, session: 'dap-1', steps: [] });
  for (const st of steps) await page.evaluate((p) => window.cellscopeView.injectMessage({ train: p }), { steps: [st] });
  const g = await page.evaluate(() => window.cellscopeView.trainFlush());
  assert.deepEqual(g.series, ['step', 'loss', 'lr', 'grad norm']);
  assert.deepEqual(g.data[0], steps.map((_, i) => i + 1));
  assert.deepEqual(g.data[3], steps.map((x) => x.gradNorm));
  assert.match(g.summary, /grad norm 21/);
  await page.screenshot({ path: path.join(artifacts, 'train-chart-grad-norm.png') });
  assert.deepEqual(page.errors, []);
});

test('a snapshot with --progress and --drift: the chart, and the drift metric colours nodes by cosine', async (t) => {
  const { dir, file } = tempCopy(t);
  // The run, as `cellscope train --format json` prints it.
  const run = spawnSync(bin, ['train', file, '--synthetic', '--steps', '12', '--format', 'json'], { cwd: dir, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const runFile = path.join(dir, 'run.json');
  fs.writeFileSync(runFile, run.stdout);
  const losses = JSON.parse(run.stdout).steps.map((s) => s.loss);
  // A drift: conv1 perfect, conv2 close, fc1 under the threshold (the first), fc3 a NaN; the rest none.
  const drift = {
    precision: 'target', threshold: 0.999, firstBelow: 'fc1', top1Agreement: 0.9375, samples: 64,
    accuracyFp32: 0.5, accuracyPrecision: 0.4375,
    layers: [
      { node: 'conv1', op: 'Conv2D', scope: 'conv1', maxAbs: 1e-6, maxRel: 1e-5, cosine: 0.9999999, overflows: 0 },
      { node: 'conv2', op: 'Conv2D', scope: 'conv2', maxAbs: 1e-4, maxRel: 1e-3, cosine: 0.99999, overflows: 0 },
      { node: 'fc1', op: 'MatMul', scope: 'fc1', maxAbs: 0.25, maxRel: 0.5, cosine: 0.995, overflows: 3 },
    ],
  };
  const driftFile = path.join(dir, 'drift.json');
  fs.writeFileSync(driftFile, JSON.stringify(drift));
  const html = path.join(dir, 'lenet.html');
  const g = spawnSync(bin, ['graph', file, '--format', 'html', '--progress', runFile, '--drift', driftFile, '-o', html], { encoding: 'utf8' });
  assert.equal(g.status, 0, g.stderr);
  // Refused without --format html.
  const bad = spawnSync(bin, ['graph', file, '--drift', driftFile], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--format html/);

  const page = await newPage(browser, t);
  await page.goto('file://' + html);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  const v = (fn, arg) => page.evaluate(fn, arg);
  await v(() => window.cellscopeView.expandAll());
  await v(() => window.cellscopeView.idle());
  const s = await v(() => window.cellscopeView.trainFlush());
  assert.equal(s.points, 12);
  assert.deepEqual(s.data[1], losses);
  assert.match(s.drift, /top-1 agreement 93\.8 % · accuracy 50\.0 % → 43\.8 % · first layer under cos 0\.999: fc1/);

  // Op type colours first; then the drift metric.
  const before = await v(() => window.cellscopeView.groupColour('fc1'));
  await v(() => window.cellscopeView.setMetric('drift'));
  await v(() => window.cellscopeView.idle());
  const colour = (id) => v((x) => window.cellscopeView.groupColour(x), id);
  assert.equal(await colour('conv1'), 'rgb(26,152,80)', 'the best layer: green');
  assert.equal(await colour('fc1'), 'rgb(215,48,39)', 'under the threshold: red');
  assert.notEqual(await colour('fc1'), before);
  const mid = await colour('conv2');
  assert.notEqual(mid, 'rgb(26,152,80)');
  assert.notEqual(mid, 'rgb(215,48,39)');
  // Nodes without data are neutral: the theme's plain node colour.
  const plain = await v(() => getComputedStyle(document.querySelector('.pane')).getPropertyValue('--cs-node').trim());
  assert.equal(await colour('fc2'), plain);
  assert.equal(await colour('flatten'), plain);
  const d = await v(() => window.cellscopeView.drift());
  assert.deepEqual(d.firstDrawn, ['fc1']);
  const legend = (await v(() => window.cellscopeView.legend())).text;
  assert.match(legend, /Drift: cosine to fp32/);
  assert.match(legend, /first under 0\.999: fc1/);
  // The first layer under the threshold is outlined in the error colour (dashed) around its node.
  const danger = await v(() => getComputedStyle(document.documentElement).getPropertyValue('--cs-danger').trim());
  const r = await v((id) => window.cellscopeView.nodeRect(id), 'fc1');
  const hits = await v(({ r, danger }) => {
    const c = document.querySelector('canvas.graph-canvas');
    const b = c.getBoundingClientRect();
    const k = c.width / b.width;
    const ctx = c.getContext('2d');
    const x0 = Math.round((r.x - b.left - 12) * k), y0 = Math.round((r.y - b.top - 12) * k);
    const data = ctx.getImageData(x0, y0, Math.round((r.w + 24) * k), Math.round((r.h + 40) * k)).data;
    const m = danger.match(/^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i);
    const [R, G, B] = m ? [1, 2, 3].map((i) => parseInt(m[i], 16)) : [207, 34, 46];
    let n = 0;
    for (let i = 0; i < data.length; i += 4) if (Math.abs(data[i] - R) < 8 && Math.abs(data[i + 1] - G) < 8 && Math.abs(data[i + 2] - B) < 8) n++;
    return n;
  }, { r, danger });
  assert.ok(hits > 50, `danger-coloured pixels around fc1: ${hits}`);
  // The node's details.
  await v(() => window.cellscopeView.select('fc1'));
  const panel = await v(() => window.cellscopeView.panelText());
  assert.match(panel, /Precision drift · target/i);
  assert.match(panel, /cosine\s+0\.9950/);
  assert.match(panel, /fp16 overflows\s+3/);
  assert.match(panel, /first layer whose cosine falls under 0\.999/);
  await page.screenshot({ path: path.join(artifacts, 'train-drift-semantic.png') });
  // The hardware layer: the kernel made from fc1 is red too.
  await v(() => window.cellscopeView.setLayer('hardware'));
  await v(() => window.cellscopeView.setMetric('drift'));
  await v(() => window.cellscopeView.idle());
  const items = await v(() => window.cellscopeView.items());
  const reds = [];
  for (const it of items) if (await colour(it.id) === 'rgb(215,48,39)') reds.push(it.id);
  assert.ok(reds.length >= 1 && reds.some((id) => /fc1/.test(id)), JSON.stringify(reds));
  assert.ok((await v(() => window.cellscopeView.drift())).firstDrawn.some((id) => /fc1/.test(id)));
  await page.screenshot({ path: path.join(artifacts, 'train-drift-hardware.png') });
  assert.deepEqual(page.errors, []);
});
