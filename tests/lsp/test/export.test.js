// workspace/executeCommand `cellscope.export` and the "Export now" code lens, through the real
// client libraries: the file written (MindIR / ONNX bytes checked by their first fields), the
// work-done progress begin/report/end, a refusal published as located diagnostics with its
// code and nothing written, cancellation, and the lens on a training script's ms.export call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

import {
  CodeLensRequest,
  ExecuteCommandRequest,
  DidChangeTextDocumentNotification,
  WorkDoneProgressCancelNotification,
  DocumentDiagnosticRequest,
  DidChangeWatchedFilesNotification,
  CancellationTokenSource,
} from 'vscode-languageserver-protocol/node';

import { startSession, clientCapabilities, tempWorkspace, removeDir, corpus, path, repoRoot, lineOf, uriOf, sleep } from '../lib/harness.js';

const LENET = path.join(corpus, 'models', 'lenet5.py');
const RESNET = path.join(corpus, 'models', 'resnet50.py');
const TRAIN = path.join(repoRoot, 'tests', 'training', 'scripts', 'lenet_model_train.py');

// ops.dense (the Dense operator): an ONNX mapping (Gemm), no MindIR one in the operator table.
const GATE = `import mindspore as ms
from mindspore import nn, ops
from mindspore.common.initializer import initializer


class Gate(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(initializer("normal", (4, 8)), name="w")

    def construct(self, x):
        return ops.dense(x, self.w)


net = Gate()
out = net(ms.Tensor(ms.numpy.zeros((2, 8)), ms.float32))
`;

// A client that shows server-created work-done progress (VS Code does).
const withProgress = () => ({ ...clientCapabilities(), window: { workDoneProgress: true } });

const exportCmd = (s, arg, extra = {}) =>
  s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.export', arguments: [arg], ...extra });

test('cellscope.export writes LeNet-5 as MindIR next to the file, with work-done progress', async (t) => {
  const ws = tempWorkspace({ 'lenet5.py': LENET });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws], capabilities: withProgress() });
  t.after(() => s.dispose());
  const uri = s.open(path.join(ws, 'lenet5.py'));
  await s.waitDiagnostics(uri);
  const before = s.progress.length;
  const r = await exportCmd(s, { uri, format: 'mindir', position: { line: 30, character: 0 } });
  assert.equal(r.status, 'written', JSON.stringify(r));
  assert.equal(r.cell, 'LeNet5');
  assert.equal(r.path, path.join(ws, 'LeNet5.mindir'));
  assert.equal(r.format, 'mindir');
  assert.equal(r.nodes, 18); // docs/export.md's table for LeNet-5
  const bytes = fs.readFileSync(r.path);
  assert.equal(bytes.length, r.bytes);
  // ModelProto: field 1 (ir_version, a string) first; "MindSpore" as producer_name follows.
  assert.ok(bytes.subarray(0, 64).includes(Buffer.from('MindSpore')));
  // Progress: a server-created token, begin (cancellable) ... report ... end, in that order.
  const created = s.serverRequests.find(([m, p]) => m === 'window/workDoneProgress/create' && String(p.token).startsWith('cellscope-export-'));
  assert.ok(created, 'a progress token was created');
  const token = created[1].token;
  await s.until(() => s.progress.slice(before).some((p) => p.token === token && p.value.kind === 'end'), 'progress end');
  const kinds = s.progress.slice(before).filter((p) => p.token === token).map((p) => p.value.kind);
  assert.equal(kinds[0], 'begin');
  assert.equal(kinds.at(-1), 'end');
  assert.ok(kinds.includes('report'), kinds.join());
  const begin = s.progress.find((p) => p.token === token && p.value.kind === 'begin');
  assert.equal(begin.value.cancellable, true);
  assert.match(begin.value.title, /Export MindIR/);
  assert.match(s.progress.find((p) => p.token === token && p.value.kind === 'end').value.message, /wrote LeNet5\.mindir/);

  // ONNX to a named (relative) output; the opset import is in the file.
  const o = await exportCmd(s, { uri, format: 'onnx', cell: 'LeNet5', output: 'out/lenet.onnx' });
  assert.equal(o.status, 'refused'); // out/ does not exist: nothing written
  assert.match(o.messages.join('\n'), /no such directory/);
  fs.mkdirSync(path.join(ws, 'out'));
  const o2 = await exportCmd(s, { uri, format: 'onnx', cell: 'LeNet5', output: 'out/lenet.onnx' });
  assert.equal(o2.status, 'written', JSON.stringify(o2));
  assert.equal(o2.nodes, 12);
  assert.equal(fs.statSync(path.join(ws, 'out', 'lenet.onnx')).size, o2.bytes);
  // A MindIR must end in .mindir.
  const bad = await exportCmd(s, { uri, format: 'mindir', output: 'x.onnx' });
  assert.equal(bad.status, 'refused');
  assert.deepEqual(bad.messages.length, 1);
  assert.match(bad.messages[0], /writes \.mindir files/);
  assert.ok(!fs.existsSync(path.join(ws, 'x.onnx')));
  // Bad arguments are errors.
  await assert.rejects(exportCmd(s, { uri, format: 'air' }), /mindir or onnx/);
  await assert.rejects(s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.export', arguments: [] }), /needs/);
  assert.equal(await s.stop(), 0);
});

test('a refused export publishes located diagnostics with their codes and writes nothing', async (t) => {
  const ws = tempWorkspace({ 'gate.py': { text: GATE } });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws], capabilities: withProgress() });
  t.after(() => s.dispose());
  const uri = s.open(path.join(ws, 'gate.py'), GATE);
  const first = await s.waitDiagnostics(uri);
  assert.ok(!first.diagnostics.some((d) => String(d.code).startsWith('export-')));
  const from = s.diagnostics.length;
  const r = await exportCmd(s, { uri, format: 'mindir' });
  assert.equal(r.status, 'refused', JSON.stringify(r));
  assert.equal(r.cell, 'Gate');
  assert.equal(r.diagnostics, 1);
  assert.match(r.messages[0], /gate\.py:12:16: .*Dense \(ops\.dense\).*no MindIR mapping.*\[export-unsupported-op\]/);
  assert.ok(!fs.existsSync(path.join(ws, 'Gate.mindir')));
  const pub = await s.waitDiagnostics(uri, (p) => p.diagnostics.some((d) => d.code === 'export-unsupported-op'), { from });
  const d = pub.diagnostics.find((x) => x.code === 'export-unsupported-op');
  assert.equal(d.range.start.line, lineOf(GATE, 'ops.dense'));
  assert.equal(d.severity, 1);
  // The same Cell exports to ONNX (Dense has an ONNX mapping): the refusal is cleared.
  const from2 = s.diagnostics.length;
  const o = await exportCmd(s, { uri, format: 'onnx' });
  assert.equal(o.status, 'written', JSON.stringify(o));
  await s.waitDiagnostics(uri, (p) => !p.diagnostics.some((x) => String(x.code).startsWith('export-')), { from: from2 });
  // Refused again, then an edit: the next analysis no longer shows the export's refusal.
  await exportCmd(s, { uri, format: 'mindir' });
  const from3 = s.diagnostics.length;
  s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version: 2 },
    contentChanges: [{ text: GATE + '\n' }],
  });
  const after = await s.waitDiagnostics(uri, (p) => p.version === 2, { from: from3 });
  assert.ok(!after.diagnostics.some((x) => String(x.code).startsWith('export-')));
  assert.equal(await s.stop(), 0);
});

test('cellscope.export is cancellable from its progress and by $/cancelRequest', async (t) => {
  const ws = tempWorkspace({ 'resnet50.py': RESNET });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws], capabilities: withProgress() });
  t.after(() => s.dispose());
  const uri = s.open(path.join(ws, 'resnet50.py'));
  await s.waitDiagnostics(uri, () => true, { ms: 30000 });
  const pending = exportCmd(s, { uri, format: 'onnx', cell: 'resnet50()' });
  const begin = await s.until(() => s.progress.find((p) => String(p.token).startsWith('cellscope-export-') && p.value.kind === 'begin'), 'export begin');
  s.conn.sendNotification(WorkDoneProgressCancelNotification.type, { token: begin.token });
  const r = await pending;
  assert.equal(r.status, 'cancelled', JSON.stringify(r));
  assert.deepEqual(fs.readdirSync(ws).filter((f) => !f.endsWith('.py')), []); // no file, no temporary
  // $/cancelRequest (vscode-jsonrpc's CancellationToken) stops it too.
  const source = new CancellationTokenSource();
  const pending2 = s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.export', arguments: [{ uri, format: 'mindir', cell: 'resnet50()' }] }, source.token);
  await s.until(() => s.progress.filter((p) => String(p.token).startsWith('cellscope-export-') && p.value.kind === 'begin').length === 2, 'second export begin');
  source.cancel();
  const r2 = await pending2.then((v) => v, (e) => ({ rejected: e.code }));
  assert.ok(r2.status === 'cancelled' || r2.rejected === -32800, JSON.stringify(r2));
  assert.deepEqual(fs.readdirSync(ws).filter((f) => !f.endsWith('.py')), []);
  // The server goes on: the same export, not cancelled, writes ResNet-50.
  const w = await exportCmd(s, { uri, format: 'onnx', cell: 'resnet50()' });
  assert.equal(w.status, 'written', JSON.stringify(w));
  assert.equal(w.nodes, 175);
  assert.equal(path.basename(w.path), 'resnet50.onnx');
  assert.equal(await s.stop(), 0);
});

test('code lens "Export now" on a training script\'s ms.export call runs that call', async (t) => {
  const ws = tempWorkspace({ 'train.py': TRAIN });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws], capabilities: withProgress() });
  t.after(() => s.dispose());
  const file = path.join(ws, 'train.py');
  const text = fs.readFileSync(file, 'utf8');
  const uri = s.open(file, text);
  await s.waitDiagnostics(uri);
  const lenses = await s.conn.sendRequest(CodeLensRequest.type, { textDocument: { uri } });
  const lens = lenses.find((l) => l.command.command === 'cellscope.export');
  assert.ok(lens, JSON.stringify(lenses.map((l) => l.command.title)));
  assert.equal(lens.range.start.line, lineOf(text, 'ms.export('));
  assert.equal(lens.command.title, 'Export now → lenet.mindir');
  const r = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: lens.command.command, arguments: lens.command.arguments });
  assert.equal(r.status, 'written', JSON.stringify(r));
  assert.equal(r.path, path.join(ws, 'lenet.mindir'));
  assert.ok(fs.statSync(r.path).size > 200000);

  // A call whose format Cellscope does not write gets a lens that says why, with no command.
  const air = text.replace('file_format="MINDIR"', 'file_format="AIR"');
  s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: 2 }, contentChanges: [{ text: air }] });
  await s.waitDiagnostics(uri, (p) => p.version === 2);
  const l2 = await s.conn.sendRequest(CodeLensRequest.type, { textDocument: { uri } });
  const explain = l2.find((l) => l.command.title.startsWith('Export now'));
  assert.match(explain.command.title, /unavailable \(Cellscope writes MINDIR and ONNX, not AIR\)/);
  assert.equal(explain.command.command, '');
  assert.equal(await s.stop(), 0);
});

test('pull diagnostics: a refused export asks the client to re-pull, and the pull has the refusal', async (t) => {
  const ws = tempWorkspace({ 'gate.py': { text: GATE } });
  t.after(() => removeDir(ws));
  const caps = clientCapabilities({ pull: true });
  caps.window = { workDoneProgress: true };
  caps.workspace.diagnostics = { refreshSupport: true };
  const s = await startSession({ folders: [ws], capabilities: caps });
  t.after(() => s.dispose());
  const uri = s.open(path.join(ws, 'gate.py'), GATE);
  const first = await s.conn.sendRequest(DocumentDiagnosticRequest.type, { textDocument: { uri } });
  assert.equal(first.kind, 'full');
  assert.ok(!first.items.some((d) => String(d.code).startsWith('export-')));
  const refreshes = () => s.serverRequests.filter(([m]) => m === 'workspace/diagnostic/refresh').length;
  const before = refreshes();
  const r = await exportCmd(s, { uri, format: 'mindir' });
  assert.equal(r.status, 'refused');
  await s.until(() => refreshes() > before, 'workspace/diagnostic/refresh');
  const again = await s.conn.sendRequest(DocumentDiagnosticRequest.type, { textDocument: { uri }, previousResultId: first.resultId });
  assert.equal(again.kind, 'full'); // not "unchanged": the refusal is new
  const d = again.items.find((x) => x.code === 'export-unsupported-op');
  assert.ok(d, JSON.stringify(again.items));
  assert.equal(d.range.start.line, lineOf(GATE, 'ops.dense'));
  assert.equal(s.diagnostics.length, 0); // nothing pushed to a pull client
  assert.equal(await s.stop(), 0);
});

test('without a position, the Cell mindspore_config.json names (with its input shape) is exported', async (t) => {
  const two = `${GATE}

class Wide(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(16, 4)

    def construct(self, x):
        return self.fc(x)
`;
  const ws = tempWorkspace({ 'two.py': { text: two }, 'mindspore_config.json': { text: JSON.stringify({ inputs: { Wide: ['3,16'] } }) } });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws], capabilities: withProgress() });
  t.after(() => s.dispose());
  const uri = s.open(path.join(ws, 'two.py'), two);
  await s.waitDiagnostics(uri);
  const r = await exportCmd(s, { uri, format: 'onnx' });
  assert.equal(r.status, 'written', JSON.stringify(r));
  assert.equal(r.cell, 'Wide');
  assert.equal(path.basename(r.path), 'Wide.onnx');
  // Written at all only with the config's input shape: Wide's own input is (N, 16), which an
  // export refuses (export-dynamic-shape), as it does once the config names no shape.
  fs.writeFileSync(path.join(ws, 'mindspore_config.json'), JSON.stringify({ inputs: { Wide: [] } }));
  s.conn.sendNotification(DidChangeWatchedFilesNotification.type, { changes: [{ uri: uriOf(path.join(ws, 'mindspore_config.json')), type: 2 }] });
  let dyn;
  for (let i = 0; i < 50 && dyn?.status !== 'refused'; i++) {
    if (i) await sleep(100); // (the config is re-read when the notification arrives)
    dyn = await exportCmd(s, { uri, format: 'onnx', cell: 'Wide', output: 'w2.onnx' });
  }
  assert.equal(dyn.status, 'refused', JSON.stringify(dyn));
  assert.match(dyn.messages.join('\n'), /export-dynamic-shape/);
  // With the cursor in Gate, Gate is exported instead.
  const g = await exportCmd(s, { uri, format: 'onnx', position: { line: lineOf(two, 'ops.dense'), character: 8 } });
  assert.equal(g.cell, 'Gate');
  assert.equal(await s.stop(), 0);
});

test('code lens "Export now" on a plain script\'s ms.export calls: the call\'s inputs, or why not', async (t) => {
  // No training: a module-level network exported by ms.export. Its construct's input is only
  // known from the call, so the export succeeds only with the call's inputs.
  const PLAIN = `import numpy as np
import mindspore as ms
from mindspore import nn


class Small(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, 4)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.fc(x))


net = Small()
ms.export(net, ms.Tensor(np.ones((3, 8)), ms.float32), file_name="small", file_format="MINDIR")
ms.export(net, ms.Tensor(np.ones((3, 8)), ms.float32), file_name="small_net.onnx", file_format="ONNX")
ms.export(net, ms.Tensor(np.ones((3, 8)), ms.float32), file_name="small", file_format="AIR")
`;
  const ws = tempWorkspace({ 'plain.py': { text: PLAIN } });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws], capabilities: withProgress() });
  t.after(() => s.dispose());
  const uri = s.open(path.join(ws, 'plain.py'), PLAIN);
  await s.waitDiagnostics(uri);
  const lenses = await s.conn.sendRequest(CodeLensRequest.type, { textDocument: { uri } });
  const exportLenses = lenses.filter((l) => l.command.title.startsWith('Export now'));
  const call = lineOf(PLAIN, 'ms.export(');
  assert.deepEqual(
    exportLenses.map((l) => [l.range.start.line, l.command.title]),
    [
      [call, 'Export now → small.mindir'],
      [call + 1, 'Export now → small_net.onnx'],
      [call + 2, 'Export now: unavailable (Cellscope writes MINDIR and ONNX, not AIR)'],
    ],
  );
  assert.equal(exportLenses[2].command.command, '');
  const run = (lens) => s.conn.sendRequest(ExecuteCommandRequest.type, { command: lens.command.command, arguments: lens.command.arguments });
  const m = await run(exportLenses[0]);
  assert.equal(m.status, 'written', JSON.stringify(m));
  assert.equal(m.cell, 'Small');
  assert.equal(m.path, path.join(ws, 'small.mindir'));
  assert.equal(fs.statSync(m.path).size, m.bytes);
  const o = await run(exportLenses[1]);
  assert.equal(o.status, 'written', JSON.stringify(o));
  assert.equal(o.path, path.join(ws, 'small_net.onnx'));
  // The lens exports with the call's inputs: once mindspore_config.json declares (2, 8) for
  // Small, the call's (3, 8) is refused as export-input-mismatch at the call (as `cellscope
  // export FILE` does), while an export without the call takes the config's shape.
  fs.writeFileSync(path.join(ws, 'mindspore_config.json'), JSON.stringify({ inputs: { Small: ['2,8'] } }));
  s.conn.sendNotification(DidChangeWatchedFilesNotification.type, { changes: [{ uri: uriOf(path.join(ws, 'mindspore_config.json')), type: 1 }] });
  fs.rmSync(m.path);
  let mismatch;
  for (let i = 0; i < 50 && mismatch?.status !== 'refused'; i++) {
    if (i) await sleep(100); // (the config is re-read when the notification arrives)
    mismatch = await run(exportLenses[0]);
    if (mismatch.status === 'written') fs.rmSync(mismatch.path);
  }
  assert.equal(mismatch.status, 'refused', JSON.stringify(mismatch));
  assert.match(mismatch.messages.join('\n'), new RegExp(`plain\\.py:${call + 1}:1: .*\\[export-input-mismatch\\]`));
  assert.ok(!fs.existsSync(path.join(ws, 'small.mindir')));
  const byConfig = await exportCmd(s, { uri, format: 'mindir', cell: 'Small', output: 'by_config.mindir' });
  assert.equal(byConfig.status, 'written', JSON.stringify(byConfig));

  // An input the analysis cannot type: the lens says why, with no command (ExportCall::unfollowed).
  const dyn = PLAIN.replace('ms.Tensor(np.ones((3, 8)), ms.float32), file_name="small", file_format="MINDIR"', 'load_batch(), file_name="small", file_format="MINDIR"');
  s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: 2 }, contentChanges: [{ text: dyn }] });
  await s.waitDiagnostics(uri, (p) => p.version === 2);
  const l2 = await s.conn.sendRequest(CodeLensRequest.type, { textDocument: { uri } });
  const first = l2.find((l) => l.command.title.startsWith('Export now') && l.range.start.line === call);
  assert.match(first.command.title, /^Export now: unavailable \(input 1 is not a tensor the analysis followed\)$/);
  assert.equal(first.command.command, '');
  // A lens run after its call went away is refused, not run with other inputs.
  const stale = await run(exportLenses[0]);
  assert.equal(stale.status, 'refused', JSON.stringify(stale));
  assert.match(stale.messages[0], new RegExp(`line ${call + 1} cannot be followed`));
  assert.equal(await s.stop(), 0);
});

test('a .mindir that is not open: cellscope.graphDocument imports it, cellscope.visualizeGraph views it', async (t) => {
  const ws = tempWorkspace({ 'lenet5.py': LENET });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws], capabilities: withProgress() });
  t.after(() => s.dispose());
  const py = s.open(path.join(ws, 'lenet5.py'));
  await s.waitDiagnostics(py);
  const w = await exportCmd(s, { uri: py, format: 'mindir', cell: 'LeNet5' });
  assert.equal(w.status, 'written', JSON.stringify(w));
  const model = uriOf(w.path);
  const cmd = (command, args) => s.conn.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  // The imported file: one root Cell with LeNet-5's parameters and operators, read from the disk.
  const doc = await cmd('cellscope.graphDocument', [model]);
  assert.equal(doc.cells.length, 1, JSON.stringify(doc.diagnostics));
  const cell = doc.cells[0];
  assert.equal(cell.params, 61684);
  assert.deepEqual(cell.inputs[0].shape, [1, 1, 32, 32]);
  assert.deepEqual(cell.outputs[0].shape, [1, 10]);
  assert.equal(cell.nodes.filter((n) => n.kind === 'op' && n.op === 'Conv2D').length, 2);
  // The view: a URL of the daemon's view server for the file's path.
  const view = await cmd('cellscope.visualizeGraph', [model]);
  assert.equal(view.file, w.path);
  assert.equal(view.cell, '');
  assert.match(view.url, new RegExp(`^http://127\\.0\\.0\\.1:${view.port}/\\?token=${view.token}&file=`));
  assert.equal(decodeURIComponent(new URL(view.url).searchParams.get('file')), w.path);
  // The view server admits the model file and sends its imported document.
  const { default: WebSocket } = await import('ws');
  const sock = new WebSocket(`ws://127.0.0.1:${view.port}/ws?token=${view.token}&file=${encodeURIComponent(w.path)}`);
  t.after(() => sock.close());
  const seen = [];
  sock.on('message', (m) => seen.push(String(m)));
  for (let i = 0; i < 100 && !seen.some((m) => m.startsWith('{"status":{"state":"ok"')); i++) await sleep(100);
  assert.ok(seen.some((m) => m.startsWith('{"status":{"state":"ok"')), seen.map((m) => m.slice(0, 120)).join('\n'));
  const update = JSON.parse(seen.find((m) => m.startsWith('{"update"')));
  assert.equal(update.update.document.file, w.path);
  assert.equal(update.update.document.cells[0].className, 'LeNet5');
  // A corrupt file is a clear error in the document, not a crash; a missing one a bad argument.
  const bad = path.join(ws, 'bad.mindir');
  fs.writeFileSync(bad, fs.readFileSync(w.path).subarray(0, 100));
  const broken = await cmd('cellscope.graphDocument', [uriOf(bad)]);
  assert.equal(broken.cells.length, 0);
  assert.ok(broken.diagnostics.some((d) => d.severity === 'error' || d.severity === 1), JSON.stringify(broken.diagnostics));
  await assert.rejects(cmd('cellscope.graphDocument', [uriOf(path.join(ws, 'missing.mindir'))]), /no such model file/);
  await assert.rejects(cmd('cellscope.visualizeGraph', [uriOf(path.join(ws, 'missing.mindir'))]), /no such model file/);
  await assert.rejects(cmd('cellscope.graphDocument', [uriOf(path.join(ws, 'other.py'))]), /is not open/);
  assert.equal(await s.stop(), 0);
});
