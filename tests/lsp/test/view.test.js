// The graph view server inside `cellscope lsp`: cellscope.visualizeGraph starts it on demand and
// returns a URL for the Cell under the cursor; a view (a WebSocket client here, the `ws` package)
// receives the document, an update on every edit (a delta), keeps the last good graph when the
// edit breaks the model, and its reveal requests become window/showDocument. Access rules: token
// and Origin.
import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { DidChangeConfigurationNotification, DidChangeTextDocumentNotification, DidCloseTextDocumentNotification, ExecuteCommandRequest, ShowDocumentRequest } from 'vscode-languageserver-protocol/node';

import { openView } from '../lib/view-client.js';
import { startSession, clientCapabilities, tempWorkspace, removeDir, corpus, path, read, lineOf } from '../lib/harness.js';


function get(url, headers = {}) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    }).on('error', reject);
  });
}

test('visualizeGraph: a URL for the cursor\'s Cell; the view follows edits; reveal -> showDocument', async (t) => {
  const caps = clientCapabilities();
  caps.window.showDocument = { support: true };
  const ws = tempWorkspace({ 'lenet.py': path.join(corpus, 'models', 'lenet5.py') });
  t.after(() => removeDir(ws));
  const s = await startSession({ capabilities: caps, folders: [ws] });
  t.after(() => s.dispose());
  const shown = [];
  s.conn.onRequest(ShowDocumentRequest.type, (p) => { shown.push(p); s.wake(); return { success: true }; });
  const file = path.join(ws, 'lenet.py');
  const text = read(file);
  const uri = s.open(file, text);
  await s.waitDiagnostics(uri);

  const line = lineOf(text, 'x = self.conv1(x)');
  const res = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.visualizeGraph', arguments: [uri, { line, character: 4 }] });
  assert.equal(res.cell, 'LeNet5');
  assert.equal(res.file, file);
  assert.match(res.url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{32}&file=/);

  // The page itself: 200 with the token (and a cookie for its assets), 401 without, 403 from a foreign Origin.
  const page = await get(res.url);
  assert.equal(page.status, 200);
  assert.match(page.headers['content-type'], /text\/html/);
  assert.match(page.headers['set-cookie'][0], /HttpOnly; SameSite=Strict/);
  const bare = new URL(res.url);
  assert.equal((await get(`http://${bare.host}/app.js`)).status, 401);
  assert.equal((await get(`http://${bare.host}/app.js`, { cookie: page.headers['set-cookie'][0].split(';')[0] })).status, 200);
  assert.equal((await get(res.url, { origin: 'http://evil.example' })).status, 403);
  assert.equal((await get(`http://${bare.host}/?token=${'0'.repeat(32)}`)).status, 401);

  const view = openView(res.url);
  await view.opened;
  const hello = await view.next((m) => m.hello, 'hello');
  assert.equal(hello.hello.editor, true);
  assert.equal(hello.hello.focusCell, 'LeNet5');
  const first = await view.next((m) => m.update, 'first document');
  const doc = first.update.document;
  assert.equal(doc.layer, 'hardware');
  assert.equal(doc.cells[0].name, 'LeNet5');
  assert.ok(doc.cells[0].optimized.nodes.length > 0);
  // Per-kernel detail is left out and sent on request.
  const kernelNode = doc.cells[0].optimized.nodes.find((n) => n.hardware?.length);
  assert.ok(kernelNode, 'a node with kernels');
  assert.ok(!kernelNode.hardware[0].schedule?.length);
  view.ws.send(JSON.stringify({ details: { cell: 'LeNet5', node: kernelNode.id } }));
  const details = await view.next((m) => m.details, 'details');
  assert.equal(details.details.node, kernelNode.id);
  assert.ok(details.details.kernels[0].schedule.length > 0);

  // An edit: the view gets an update (a delta: only what changed) without asking.
  const edited = text.replace('nn.Dense(120, 84,', 'nn.Dense(120, 90,').replace('nn.Dense(84,', 'nn.Dense(90,');
  assert.notEqual(edited, text);
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: 2 }, contentChanges: [{ text: edited }] });
  const second = await view.next((m) => m.update, 'update after an edit');
  assert.equal(second.update.seq, first.update.seq + 1);
  const fc2 = second.update.delta
    ? second.update.delta.cells[0].nodes.find((n) => n.id === 'fc2')
    : second.update.document.cells[0].nodes.find((n) => n.id === 'fc2');
  assert.deepEqual(fc2.outputs[0].shape, [1, 90]);

  // A syntax error: a "failed" status with the diagnostics, no new document.
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: 3 }, contentChanges: [{ text: edited.replace('def construct(self, x):', 'def construct(self, x)') }] });
  const failed = await view.next((m) => m.status?.state === 'failed', 'failed status');
  assert.ok(failed.status.diagnostics.some((d) => d.code === 'syntax-error'), JSON.stringify(failed.status));
  assert.ok(!view.messages.slice(view.messages.indexOf(failed)).some((m) => m.update));

  // Reveal: the editor is asked to show the line.
  view.ws.send(JSON.stringify({ reveal: { file, range: { start: { line, character: 8 }, end: { line, character: 25 } } } }));
  await s.until(() => shown.length > 0, 'window/showDocument');
  assert.equal(shown[0].uri, uri);
  assert.equal(shown[0].selection.start.line, line);

  // A view from a foreign page is refused; so is one without the token.
  await assert.rejects(openView(res.url, { origin: 'http://evil.example' }).opened, /403/);
  await assert.rejects(openView(res.url.replace(/token=[0-9a-f]+/, 'token=')).opened, /401/);
  view.ws.close();
  assert.equal(await s.stop(), 0);
});

test('visualizeGraph: the Cell under the cursor is the factory or class it is in, never a private helper', async (t) => {
  const text = [
    'from mindspore import nn',
    '',
    '',
    'def register_model(fn):',
    '    return fn',
    '',
    '',
    'class Net(nn.Cell):',
    '    def __init__(self, width, num_classes=10):',
    '        super().__init__()',
    '        self.fc = nn.Dense(width, num_classes)',
    '',
    '    def construct(self, x):',
    '        return self.fc(x)',
    '',
    '',
    'def _create(width, **kwargs):',
    '    return Net(width, **kwargs)',
    '',
    '',
    '@register_model',
    'def net_small(**kwargs):',
    '    return _create(8, **kwargs)',
    '',
    '',
    '@register_model',
    'def net_big(**kwargs):',
    '    return _create(64, **kwargs)',
    '',
  ].join('\n');
  const ws = tempWorkspace({ 'zoo.py': { text } });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws] });
  t.after(() => s.dispose());
  const file = path.join(ws, 'zoo.py');
  const uri = s.open(file, text);
  await s.waitDiagnostics(uri);
  const at = async (needle) => {
    const line = lineOf(text, needle);
    const res = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.visualizeGraph', arguments: [uri, { line, character: 4 }] });
    return res.cell;
  };
  assert.equal(await at('return _create(64, **kwargs)'), 'net_big()');
  assert.equal(await at('return _create(8, **kwargs)'), 'net_small()');
  assert.equal(await at('return self.fc(x)'), 'net_small()');  // the class: a factory that builds it
  assert.equal(await at('return Net(width, **kwargs)'), 'net_small()');  // a helper: not a root
});

// LeNet-5 in a temporary workspace, open in the editor, and a view of it (connected).
async function lenetView(t) {
  const ws = tempWorkspace({ 'lenet.py': path.join(corpus, 'models', 'lenet5.py') });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws] });
  t.after(() => s.dispose());
  const file = path.join(ws, 'lenet.py');
  const text = read(file);
  const uri = s.open(file, text);
  await s.waitDiagnostics(uri);
  const res = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.visualizeGraph', arguments: [uri, { line: lineOf(text, 'x = self.conv1(x)'), character: 4 }] });
  const view = openView(res.url);
  t.after(() => view.ws.close());
  await view.opened;
  return { s, uri, text, view };
}

// A view of a file that is not open in the editor follows the settings too: a change of
// `cellscope.inputs` (the "had no effect while running") or of mindspore_config.json
// gives it a new document, analysed with the new inputs.
test('visualizeGraph: a view of a file not open in the editor gets a new document when the settings change', async (t) => {
  const { s, uri, text, view } = await lenetView(t);
  const first = await view.next((m) => m.update, 'first document');
  assert.equal(first.update.document.cells[0].inputs[0].shape[0], 1);
  await s.conn.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } });
  await s.conn.sendNotification(DidChangeConfigurationNotification.type, { settings: { cellscope: { inputs: { 'lenet.py': ['4,1,32,32'] } } } });
  const second = await view.next((m) => m.update && (m.update.document ?? m.update.delta), 'update after the settings changed');
  const cell = second.update.document ? second.update.document.cells[0] : second.update.delta.cells[0].header;
  assert.deepEqual(cell.inputs[0].shape, [4, 1, 32, 32]);
});

// The view's input box (view.proto's InputsRequest): the views of the file get a document
// analysed with the shapes they set, the editor keeps the settings' (its diagnostics do not
// change), a spec that does not parse is refused to that view alone, and an empty list goes
// back to the settings.
test('visualizeGraph: input shapes set from the view; refused when they do not parse; reset', async (t) => {
  const { s, uri, text, view } = await lenetView(t);
  await view.next((m) => m.update, 'first document');
  const inputsOf = (m) => (m.update.document ? m.update.document.cells[0] : m.update.delta.cells[0].header).inputs[0];

  view.ws.send(JSON.stringify({ inputs: { inputs: ['8,1,32,32'] } }));
  // An update already on its way when the box was sent (a debounced re-analysis under load) may
  // come first: wait for the one with the view's inputs.
  const shapeIs = (m, dims) => m.update && JSON.stringify(inputsOf(m).shape) === JSON.stringify(dims);
  const set = await view.next((m) => shapeIs(m, [8, 1, 32, 32]), 'the document with the view\'s inputs');
  assert.deepEqual(inputsOf(set).shape, [8, 1, 32, 32]);
  // An edit: the views keep their shapes.
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: 2 }, contentChanges: [{ text: text + '\n' }] });
  const edited = await view.next((m) => m.update, 'the update after an edit');
  assert.deepEqual(inputsOf(edited).shape, [8, 1, 32, 32]);

  view.ws.send(JSON.stringify({ inputs: { inputs: ['1,x y'] } }));
  const refused = await view.next((m) => m.status?.state === 'failed', 'the refusal');
  assert.equal(refused.status.state, 'failed');
  assert.match(refused.status.message, /^input '1,x y': /);

  view.ws.send(JSON.stringify({ inputs: { inputs: [] } }));
  const reset = await view.next((m) => shapeIs(m, [1, 1, 32, 32]), 'the document with the settings\' inputs again');
  assert.deepEqual(inputsOf(reset).shape, [1, 1, 32, 32]);
});
