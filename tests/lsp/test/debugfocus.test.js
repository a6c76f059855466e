// cellscope.debugFocus: the editor relays `cellscope dap`'s `cellscope.focus` events to the
// language server, whose graph view server sends view.proto's DebugFocus to the views of that file
// (a WebSocket client here, the `ws` package), remembers it for views that connect while paused,
// and clears it. Paths are compared canonically.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { ExecuteCommandRequest } from 'vscode-languageserver-protocol/node';

import { openView } from '../lib/view-client.js';
import { startSession, tempWorkspace, removeDir, corpus, path, read, lineOf, sleep } from '../lib/harness.js';


const paused = (m) => m.debug && m.debug.node;
const cleared = (m) => m.debug && !m.debug.node;

test('cellscope.debugFocus: sent to the views of the file, remembered for late views, cleared', async (t) => {
  const ws = tempWorkspace({ 'lenet.py': path.join(corpus, 'models', 'lenet5.py'), 'other.py': path.join(corpus, 'models', 'lenet5.py') });
  t.after(() => removeDir(ws));
  // A second name of the workspace (a symlink): the adapter may report the program through it.
  const alias = `${ws}-alias`;
  fs.symlinkSync(ws, alias);
  t.after(() => fs.rmSync(alias, { force: true }));
  const s = await startSession({ folders: [ws] });
  t.after(() => s.dispose());
  const file = path.join(ws, 'lenet.py');
  const text = read(file);
  const uri = s.open(file, text);
  await s.waitDiagnostics(uri);
  const exec = (command, args) => s.conn.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });

  const focus = {
    file: path.join(alias, 'lenet.py'), cell: 'LeNet5', node: 'conv2', op: 'Conv2D', scope: 'conv2',
    line: lineOf(text, 'x = self.conv2(x)') + 1, shape: [1, 6, 14, 14], dtype: 'float32', reason: 'breakpoint',
    ran: false, tensor: 'max_pool2d', stats: { numel: 1176, min: 0, max: 3.5, mean: 0.25, std: 0.5, nan: 0, inf: 0, zeros: 400 },
  };
  // Paused before any view exists (the view server is not even started): remembered.
  assert.deepEqual(await exec('cellscope.debugFocus', [focus]), { file: focus.file, node: 'conv2', views: 0 });

  const res = await exec('cellscope.visualizeGraph', [uri, { line: 36, character: 4 }]);
  assert.equal(res.cell, 'LeNet5');
  const v1 = openView(res.url);
  await v1.opened;
  await v1.next((m) => m.hello, 'hello');
  await v1.next((m) => m.update?.document, 'document');
  const first = await v1.next((m) => m.debug, 'the remembered focus after the document');
  assert.equal(first.debug.node, 'conv2');
  assert.equal(first.debug.cell, 'LeNet5');
  assert.equal(first.debug.op, 'Conv2D');
  assert.equal(first.debug.line, focus.line);
  assert.equal(first.debug.dtype, 'float32');
  assert.deepEqual(first.debug.shape.map(Number), [1, 6, 14, 14]);  // int64: proto3 JSON strings
  assert.deepEqual(first.debug.stats, { numel: 1176, max: 3.5, mean: 0.25, std: 0.5, zeros: 400, min: 0, nan: 0, inf: 0 });
  // The node is one of the view's semantic nodes.
  const doc = v1.messages.find((m) => m.update?.document).update.document;
  assert.ok(doc.cells[0].nodes.some((n) => n.id === first.debug.node));

  // A new stop: every view of the file gets it.
  const v2 = openView(res.url);
  await v2.opened;
  await v2.next(paused, 'the focus for a second view');
  const r2 = await exec('cellscope.debugFocus', [{ ...focus, node: 'fc3', op: 'MatMul', line: focus.line + 8 }]);
  assert.equal(r2.views, 2);
  for (const v of [v1, v2]) assert.equal((await v.next((m) => m.debug, 'the next focus')).debug.node, 'fc3');

  // A focus on another file: not sent to these views; theirs is cleared.
  const r3 = await exec('cellscope.debugFocus', [{ ...focus, file: path.join(ws, 'other.py') }]);
  assert.equal(r3.views, 0);
  for (const v of [v1, v2]) await v.next(cleared, 'cleared by a focus on another file');
  await exec('cellscope.debugFocus', [{ ...focus, node: 'relu' }]);
  for (const v of [v1, v2]) assert.equal((await v.next((m) => m.debug, 'back on lenet.py')).debug.node, 'relu');

  // The run resumes: cleared, and a view that connects now gets no focus.
  const r4 = await exec('cellscope.debugFocus', [{ file: focus.file, cell: 'LeNet5', node: '' }]);
  assert.equal(r4.views, 2);
  for (const v of [v1, v2]) await v.next(cleared, 'cleared');
  const v3 = openView(res.url);
  await v3.opened;
  await v3.next((m) => m.update?.document, 'a late view\'s document');
  await sleep(300);
  assert.ok(!v3.messages.some((m) => m.debug), JSON.stringify(v3.messages.map((m) => Object.keys(m))));

  // Bad arguments are refused.
  await assert.rejects(exec('cellscope.debugFocus', []), /needs a focus object/);
  await assert.rejects(exec('cellscope.debugFocus', [{ file: 'relative.py', node: 'conv1' }]), /absolute/);
  await assert.rejects(exec('cellscope.debugFocus', [{ file: focus.file, node: 'conv1', line: 'three' }]), /debugFocus/);
  for (const v of [v1, v2, v3]) v.ws.close();
  assert.equal(await s.stop(), 0);
});
