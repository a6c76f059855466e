// cellscope.deviceTelemetry: the editor relays each line of `cellscope deploy --watch` (the
// deployed model's telemetry, docs/deploy.md) to the language server as view.proto's DeviceSample,
// whose graph view server sends a DeviceProgress to the views of the deployed model's file in order
// (a WebSocket client here, the `ws` package) and gives a view that opens later the samples so far.
// Power the device cannot measure stays absent ("n/a"), never 0.
import test from 'node:test';
import assert from 'node:assert/strict';
import { ExecuteCommandRequest } from 'vscode-languageserver-protocol/node';

import { openView } from '../lib/view-client.js';
import { startSession, tempWorkspace, removeDir, corpus, path, read } from '../lib/harness.js';

test('cellscope.deviceTelemetry reaches the views of the file in order; a late view gets the samples; a new watch resets', async (t) => {
  const ws = tempWorkspace({ 'lenet.py': path.join(corpus, 'models', 'lenet5.py') });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws] });
  t.after(() => s.dispose());
  const file = path.join(ws, 'lenet.py');
  const uri = s.open(file, read(file));
  await s.waitDiagnostics(uri);
  const exec = (command, args) => s.conn.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  // What the extension's deviceSample() makes of a watch line (extension/src/deploy.ts).
  const sample = (n, extra = {}) => ({
    file, device: 'edge1', address: '10.213.0.2:8443', bundle: '0001-lenet.mindir', precision: 'fp32',
    backend: 'cellscope-cpu', timeMs: 1.7e12 + 1000 * n, fps: 40 + n, inferences: 40 * n,
    latencyP50Ms: 1 + n / 10, latencyP99Ms: 2 + n / 10, rssMb: 60.5, cpuPercent: 12, ...extra,
  });

  // Before any view: the view server is started and keeps the samples.
  for (let n = 1; n <= 3; n++) assert.deepEqual(await exec('cellscope.deviceTelemetry', [sample(n), { session: 'w1' }]), { file, views: 0 });

  const res = await exec('cellscope.visualizeGraph', [uri, { line: 36, character: 4 }]);
  const v1 = openView(res.url);
  await v1.opened;
  await v1.next((m) => m.hello, 'hello');
  const history = await v1.next((m) => m.device, 'the samples so far');
  assert.equal(history.device.reset, true);
  assert.equal(history.device.device, 'edge1');
  assert.equal(history.device.session, 'w1');
  assert.deepEqual(history.device.samples.map((x) => x.fps), [41, 42, 43]);
  assert.equal(history.device.samples[0].powerW, undefined, 'power not measured: absent, not 0');
  assert.equal(history.device.samples[0].backend, 'cellscope-cpu');

  // Live samples, one message each, in order; a measured power and an int8 model's figures.
  for (let n = 4; n <= 10; n++) {
    const extra = n === 9 ? { powerW: 11.5, powerSource: 'rapl package 0', precision: 'int8', loadTop1Agreement: 1, loadCosine: 0.9999 } : {};
    assert.equal((await exec('cellscope.deviceTelemetry', [sample(n, extra), { session: 'w1' }])).views, 1);
  }
  const got = [];
  for (let n = 4; n <= 10; n++) got.push(await v1.next((m) => m.device, `sample ${n}`));
  assert.deepEqual(got.map((m) => m.device.samples[0].fps), [44, 45, 46, 47, 48, 49, 50]);
  assert.ok(got.every((m) => !m.device.reset && m.device.samples.length === 1));
  assert.equal(got[5].device.samples[0].powerW, 11.5);
  assert.equal(got[5].device.samples[0].loadCosine, 0.9999);
  assert.equal(got[4].device.samples[0].powerW, undefined);
  assert.equal(Number(got[6].device.samples[0].inferences), 400);

  // A late view: the 10 samples in one reset message.
  const v2 = openView(res.url);
  await v2.opened;
  const all = await v2.next((m) => m.device, 'the whole watch');
  assert.equal(all.device.reset, true);
  assert.equal(all.device.samples.length, 10);

  // Another file's samples do not reach these views.
  const other = path.join(ws, 'other.py');
  assert.equal((await exec('cellscope.deviceTelemetry', [{ ...sample(1), file: other }, { session: 'w1' }])).views, 0);

  // A new watch: every view of the file starts a new chart with its first sample.
  assert.equal((await exec('cellscope.deviceTelemetry', [sample(20), { session: 'w2' }])).views, 2);
  for (const v of [v1, v2]) {
    const r = await v.next((m) => m.device && m.device.session === 'w2', 'the new watch');
    assert.equal(r.device.reset, true);
    assert.deepEqual(r.device.samples.map((x) => x.fps), [60]);
  }

  // Bad arguments are refused, and the server keeps serving.
  await assert.rejects(exec('cellscope.deviceTelemetry', []), /needs an object/);
  await assert.rejects(exec('cellscope.deviceTelemetry', [{ ...sample(1), file: 'relative.py' }]), /absolute/);
  await assert.rejects(exec('cellscope.deviceTelemetry', [{ ...sample(1), fps: 'fast' }]), /cellscope\.deviceTelemetry/);
  assert.equal((await exec('cellscope.deviceTelemetry', [sample(21), { session: 'w2' }])).views, 2);
  for (const v of [v1, v2]) v.ws.close();
  assert.equal(await s.stop(), 0);
});
