// cellscope.trainStep / cellscope.drift / cellscope.trainReset: the editor relays `cellscope dap`'s
// `cellscope.trainStep` and `cellscope.drift` events (and a reset when a debug session starts) to the
// language server, whose graph view server sends view.proto's TrainProgress and PrecisionDrift to
// the views of that file in order (a WebSocket client here, the `ws` package) and gives a view that
// opens later the run so far. A NaN that the adapter's JSON writer turned into null stays a NaN.
import test from 'node:test';
import assert from 'node:assert/strict';
import { ExecuteCommandRequest } from 'vscode-languageserver-protocol/node';

import { openView } from '../lib/view-client.js';
import { startSession, tempWorkspace, removeDir, corpus, path, read } from '../lib/harness.js';

test('cellscope.trainStep and cellscope.drift reach the views of the file in order; a late view gets the run', async (t) => {
  const ws = tempWorkspace({ 'lenet.py': path.join(corpus, 'models', 'lenet5.py') });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws] });
  t.after(() => s.dispose());
  const file = path.join(ws, 'lenet.py');
  const uri = s.open(file, read(file));
  await s.waitDiagnostics(uri);
  const exec = (command, args) => s.conn.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  const step = (n) => ({
    file, cell: 'LeNet5', epoch: 1, step: n, globalStep: n, totalSteps: 20, loss: 2.3 / n, lr: 0.01 * (1 - n / 40),
    gradNorm: 4 / n, lossScale: 1, skipped: false, stepMs: 3.5, samplesPerSec: 9142.9,
  });

  // Before any view: the view server is started and keeps the run.
  assert.deepEqual(await exec('cellscope.trainReset', [{ file }, { session: 's1' }]), { file, views: 0 });
  for (let n = 1; n <= 3; n++) assert.equal((await exec('cellscope.trainStep', [step(n), { session: 's1' }])).views, 0);

  const res = await exec('cellscope.visualizeGraph', [uri, { line: 36, character: 4 }]);
  const v1 = openView(res.url);
  await v1.opened;
  await v1.next((m) => m.hello, 'hello');
  const history = await v1.next((m) => m.train, 'the run so far');
  assert.equal(history.train.reset, true);
  assert.deepEqual(history.train.steps.map((x) => Number(x.globalStep)), [1, 2, 3]);
  assert.equal(history.train.steps[1].gradNorm, 2);

  // Live steps, one message each, in order; a NaN loss (null in the event's JSON) arrives as NaN.
  for (let n = 4; n <= 12; n++) {
    const body = n === 7 ? { ...step(n), loss: null } : step(n);
    assert.equal((await exec('cellscope.trainStep', [body, { session: 's1' }])).views, 1);
  }
  const got = [];
  for (let n = 4; n <= 12; n++) got.push(await v1.next((m) => m.train, `step ${n}`));
  assert.deepEqual(got.map((m) => Number(m.train.steps[0].globalStep)), [4, 5, 6, 7, 8, 9, 10, 11, 12]);
  assert.ok(got.every((m) => !m.train.reset && m.train.steps.length === 1));
  assert.equal(got[3].train.steps[0].loss, 'NaN');
  assert.equal(got[0].train.steps[0].loss, 2.3 / 4);

  const drift = {
    file, cell: 'LeNet5', precision: 'int8', threshold: 0.99, firstBelow: 'fc2', top1Agreement: 0.97,
    accuracyFp32: 0.98, samples: 64,
    layers: [
      { node: 'conv1', op: 'Conv2D', scope: 'conv1', maxAbs: 0.01, maxRel: 0.02, cosine: 0.9995, overflows: 0 },
      { node: 'fc2', op: 'MatMul', scope: 'fc2', maxAbs: 0.3, maxRel: null, cosine: 0.985, overflows: 2 },
    ],
  };
  assert.equal((await exec('cellscope.drift', [drift, { session: 's1' }])).views, 1);
  const d = await v1.next((m) => m.drift, 'the drift');
  assert.equal(d.drift.firstBelow, 'fc2');
  assert.equal(d.drift.layers[1].maxRel, 'NaN');
  assert.equal(Number(d.drift.layers[1].overflows), 2);
  // The drift's nodes are the view's semantic node ids.
  const doc = v1.messages.find((m) => m.update?.document).update.document;
  for (const l of drift.layers) assert.ok(doc.cells[0].nodes.some((n) => n.id === l.node), l.node);

  // A late view: the 12 steps in one reset message, then the drift.
  const v2 = openView(res.url);
  await v2.opened;
  const all = await v2.next((m) => m.train, 'the whole run');
  assert.equal(all.train.reset, true);
  assert.equal(all.train.steps.length, 12);
  assert.equal((await v2.next((m) => m.drift, 'the drift for the late view')).drift.precision, 'int8');

  // A new debug session: every view drops the run.
  assert.equal((await exec('cellscope.trainReset', [{ file }, { session: 's2' }])).views, 2);
  for (const v of [v1, v2]) {
    const r = await v.next((m) => m.train, 'the reset');
    assert.equal(r.train.reset, true);
    assert.equal((r.train.steps ?? []).length, 0);
  }

  // Bad arguments are refused, and the server keeps serving.
  await assert.rejects(exec('cellscope.trainStep', []), /needs an object/);
  await assert.rejects(exec('cellscope.trainStep', [{ ...step(1), file: 'relative.py' }]), /absolute/);
  await assert.rejects(exec('cellscope.trainStep', [{ ...step(1), loss: 'lots' }]), /cellscope\.trainStep/);
  await assert.rejects(exec('cellscope.drift', [{ ...drift, layers: 'none' }]), /cellscope\.drift/);
  assert.equal((await exec('cellscope.trainStep', [step(1), { session: 's2' }])).views, 2);
  for (const v of [v1, v2]) v.ws.close();
  assert.equal(await s.stop(), 0);
});
