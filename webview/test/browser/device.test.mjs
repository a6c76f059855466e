// The view tier, deployment (issue 20): the Device chart fed by the real `cellscope lsp` (the
// `cellscope.deviceTelemetry` command the extension sends for each `cellscope deploy --watch` line,
// relayed by the language server's view server as view.proto's DeviceProgress over the WebSocket),
// (tests/lsp's client: its node_modules are the tier's) in Debian's chromium (playwright-core). The chart has one point per sample with the values sent;
// power no sample measured is one "power: n/a" line (no series, no axis), never 0; a rollback and a
// stop are marks drawn at their time. Screenshots in $CELLSCOPE_ARTIFACTS.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { startSession, tempWorkspace, removeDir, read } from '../../../tests/lsp/lib/harness.js';
import { artifacts, corpus, newPage, useBrowser } from './lib.mjs';

const browser = useBrowser(test);

test('the Device chart: a point per telemetry sample, power n/a as a gap labelled n/a, a new watch resets', async (t) => {
  const ws = tempWorkspace({ 'lenet.py': path.join(corpus, 'models', 'lenet5.py') });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws] });
  t.after(() => s.dispose());
  const file = path.join(ws, 'lenet.py');
  const uri = s.open(file, read(file));
  await s.waitDiagnostics(uri);
  const exec = (command, args) => s.conn.sendRequest('workspace/executeCommand', { command, arguments: args });
  const T0 = 1.7e12;
  const sample = (n, extra = {}) => ({
    file, device: 'edge1', address: '10.213.0.2:8443', bundle: '0002-lenet.mindir', precision: 'fp32', backend: 'cellscope-cpu',
    timeMs: T0 + 1000 * n, fps: 100 + n, inferences: 100 * n, latencyP50Ms: 2 + n / 100, latencyP99Ms: 5 + n / 100,
    rssMb: 64 + n, cpuPercent: 90, ...extra,
  });
  const N = 6;
  for (let n = 1; n <= N; n++) await exec('cellscope.deviceTelemetry', [sample(n), { session: 'w1' }]);

  // A view opened after the deployment: it gets the samples so far.
  const res = await exec('cellscope.visualizeGraph', [uri, { line: 36, character: 4 }]);
  const page = await newPage(browser, t);
  await page.goto(res.url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await page.waitForFunction((n) => window.cellscopeView.device().points === n, N, { timeout: 15000 });
  let d = await page.evaluate(() => window.cellscopeView.deviceFlush());
  assert.ok(d.open, 'the device dock opened');
  // No sample measured the power: no power series or axis, one line that says so.
  assert.deepEqual(d.series, ['t (s)', 'FPS', 'p50 ms', 'p99 ms', 'RSS MB']);
  assert.deepEqual(d.axes, ['', 'FPS', 'latency ms', 'RSS MB']);
  assert.equal(d.powerLine, 'power: n/a (no npu-smi, RAPL or hwmon reading on the device)');
  assert.equal(await page.locator('.device-power-na').innerText(), 'power: n/a (no npu-smi, RAPL or hwmon reading on the device)');
  assert.equal(d.data[0].length, N, 'N points after N samples');
  assert.deepEqual(d.data[0], [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(d.data[1], [101, 102, 103, 104, 105, 106]);
  assert.deepEqual(d.data[3], [5.01, 5.02, 5.03, 5.04, 5.05, 5.06]);
  assert.deepEqual(d.data[4], [65, 66, 67, 68, 69, 70]);
  // Power not measured: no data column at all (never 0); n/a in the summary and the figures.
  assert.equal(d.data.length, 5);
  assert.doesNotMatch(d.legend, /power/);
  assert.match(d.summary, /power n\/a/);
  assert.match(d.facts.power, /^n\/a/);
  assert.doesNotMatch(`${d.summary} ${d.facts.power}`, /\b0(\.0)? W/);
  // The text figures: device, model, precision, backend, quality.
  assert.equal(d.facts.device, 'edge1 (10.213.0.2:8443)');
  assert.equal(d.facts.model, 'lenet (0002-lenet.mindir)');
  assert.equal(d.facts.precision, 'fp32');
  assert.equal(d.facts.backend, 'cellscope-cpu');
  assert.match(d.facts.quality, /^n\/a \(fp32/);
  assert.match(d.summary, /^edge1 · lenet · 106 FPS · p50 2\.06 ms · p99 5\.06 ms · RSS 70\.0 MB · power n\/a$/);
  const ink = await page.evaluate(() => window.cellscopeView.deviceInk());
  assert.ok(ink > 0.005, `chart ink ${ink}`);
  assert.ok(d.width > 600, String(d.width));
  await page.screenshot({ path: path.join(artifacts, 'device-chart.png') });

  // Live: each sample a point, as it arrives; a measured power is drawn (the label loses n/a), the
  // int8 figures are shown.
  for (let n = N + 1; n <= N + 3; n++) {
    await exec('cellscope.deviceTelemetry', [sample(n, { powerW: 10 + n, powerSource: 'rapl package 0', precision: 'int8', loadTop1Agreement: 1, loadCosine: 0.99995 }), { session: 'w1' }]);
  }
  await page.waitForFunction((n) => window.cellscopeView.device().points === n, N + 3, { timeout: 15000 });
  d = await page.evaluate(() => window.cellscopeView.deviceFlush());
  assert.equal(d.data[0].length, N + 3);
  // Measured: the series and its axis come, the points before it are gaps; the n/a line goes.
  assert.deepEqual(d.data[5], [...Array(N).fill(null), 17, 18, 19]);
  assert.equal(d.series[5], 'power W');
  assert.equal(d.axes[4], 'power W');
  assert.equal(d.powerLine, '');
  assert.equal(await page.locator('.device-power-na').isVisible(), false);
  assert.match(d.facts.power, /^19\.0 W \(rapl package 0\)/);
  assert.match(d.facts.quality, /top-1 agreement 100\.0 %, cosine 0\.99995/);
  await page.screenshot({ path: path.join(artifacts, 'device-chart-power.png') });

  // Marks (what the extension sends on Roll Back, Stop, or a watch that ends by itself): a rollback
  // between two samples, then a stop after the last one; each drawn as a line at its time.
  const mark = (at, event) => ({ file, device: 'edge1', address: '10.213.0.2:8443', timeMs: T0 + 1000 * at, event });
  await exec('cellscope.deviceTelemetry', [mark(N + 3.5, 'rolled back'), { session: 'w1' }]);
  await exec('cellscope.deviceTelemetry', [sample(N + 4, { powerW: 20 }), { session: 'w1' }]);
  await exec('cellscope.deviceTelemetry', [mark(N + 4.2, 'stopped'), { session: 'w1' }]);
  await page.waitForFunction(() => window.cellscopeView.device().summary.endsWith(' · stopped'), null, { timeout: 15000 });
  d = await page.evaluate(() => window.cellscopeView.deviceFlush());
  assert.equal(d.data[0].length, N + 4, 'a mark is no point');
  assert.deepEqual(d.marks.map((m) => [m.x, m.label]), [[N + 2.5, 'rolled back'], [N + 3.2, 'stopped']]);
  assert.match(d.facts.watch, /^stopped at \d\d:\d\d:\d\d$/);
  // The pixels: the marks' colour down each mark's column, not in a column between them.
  const columns = await page.evaluate((xs) => {
    const c = document.querySelector('.device-chart canvas');
    const ctx = c.getContext('2d');
    return xs.map((x) => {
      // Below the marks' words (drawn at the top of the plot, left of their line).
      const px = ctx.getImageData(x, 40, 1, c.height - 40).data;
      let n = 0;
      for (let i = 0; i < px.length; i += 4) {
        const [r, g, b, a] = [px[i], px[i + 1], px[i + 2], px[i + 3]];
        if (a > 128 && r > g && g > b && r - b > 100) n++;  // the mark's amber, no series' colour
      }
      return n;
    });
  }, [d.marks[0].px, d.marks[1].px, Math.round((d.marks[0].px + d.marks[1].px) / 2)]);
  assert.ok(columns[0] > 20 && columns[1] > 20, `mark pixels ${columns}`);
  assert.ok(columns[2] < 5, `between the marks ${columns}`);
  await page.screenshot({ path: path.join(artifacts, 'device-chart-marks.png') });
  // A late view gets the marks with the samples.
  const late = await newPage(browser, t);
  await late.goto(res.url);
  await late.waitForFunction((n) => window.cellscopeView?.device().points === n, N + 4, { timeout: 30000 });
  const dl = await late.evaluate(() => window.cellscopeView.deviceFlush());
  assert.deepEqual(dl.marks.map((m) => m.label), ['rolled back', 'stopped']);

  // A new watch (another session): the chart starts again with its first sample.
  await exec('cellscope.deviceTelemetry', [sample(50), { session: 'w2' }]);
  await page.waitForFunction(() => window.cellscopeView.device().points === 1, null, { timeout: 15000 });
  d = await page.evaluate(() => window.cellscopeView.deviceFlush());
  assert.deepEqual(d.data[1], [150]);
  assert.deepEqual(d.marks, []);
  assert.deepEqual(page.errors, []);
  assert.equal(await s.stop(), 0);
});
