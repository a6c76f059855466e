// initialize / initialized / shutdown / exit, capabilities, position encodings, tracing,
// startup log messages and workspace folders.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  InitializeRequest,
  ShutdownRequest,
  ExitNotification,
  SetTraceNotification,
  HoverRequest,
  DidChangeWorkspaceFoldersNotification,
  WorkspaceSymbolRequest,
} from 'vscode-languageserver-protocol/node';

import {
  Session,
  startSession,
  clientCapabilities,
  tempWorkspace,
  removeDir,
  withTimeout,
  read,
  corpus,
  path,
  ARTICLE,
  uriOf,
} from '../lib/harness.js';

test('initialize: honest capabilities, serverInfo, UTF-16 by default', async (t) => {
  const s = new Session();
  t.after(() => s.dispose());
  const r = await s.initialize({ capabilities: clientCapabilities() });
  assert.deepEqual(r.serverInfo?.name, 'cellscope');
  assert.match(r.serverInfo.version, /^\d+\.\d+\.\d+/);
  const c = r.capabilities;
  assert.equal(c.positionEncoding, 'utf-16');
  // Incremental sync with open/close (and save without text).
  assert.equal(c.textDocumentSync.openClose, true);
  assert.equal(c.textDocumentSync.change, 2);
  for (const p of ['hoverProvider', 'inlayHintProvider', 'documentSymbolProvider', 'workspaceSymbolProvider', 'definitionProvider'])
    assert.ok(c[p], `${p} is advertised`);
  assert.deepEqual(c.codeActionProvider.codeActionKinds, ['quickfix']);
  assert.equal(c.codeLensProvider.resolveProvider, false);
  assert.ok(c.completionProvider.triggerCharacters.includes('.'));
  assert.ok(c.signatureHelpProvider.triggerCharacters.includes('('));
  assert.deepEqual([...c.executeCommandProvider.commands].sort(), ['cellscope.debugFocus', 'cellscope.deviceTelemetry', 'cellscope.drift', 'cellscope.export', 'cellscope.graphDocument', 'cellscope.setTarget', 'cellscope.trainReset', 'cellscope.trainStep', 'cellscope.visualizeGraph']);
  assert.equal(c.workspace.workspaceFolders.supported, true);
  assert.equal(c.workspace.workspaceFolders.changeNotifications, true);
  // Not implemented, so not advertised: the client would otherwise send these.
  for (const p of ['referencesProvider', 'renameProvider', 'documentFormattingProvider', 'semanticTokensProvider', 'callHierarchyProvider'])
    assert.equal(c[p], undefined, `${p} is not advertised`);
  // Push diagnostics only: the client did not declare textDocument.diagnostic.
  assert.equal(c.diagnosticProvider, undefined);
  // Every advertised method is answered (not MethodNotFound).
  const uri = s.open(ARTICLE);
  await s.waitDiagnostics(uri);
  await s.conn.sendRequest('textDocument/inlayHint', { textDocument: { uri }, range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } } });
  await s.conn.sendRequest('textDocument/codeLens', { textDocument: { uri } });
  await s.conn.sendRequest('workspace/symbol', { query: 'x' });
  assert.equal(await s.stop(), 0);
});

test('positionEncoding negotiation: utf-8 only when offered, utf-16 otherwise', async () => {
  for (const [offered, expected] of [
    [['utf-8', 'utf-16'], 'utf-8'],
    [['utf-16', 'utf-8'], 'utf-8'],
    [['utf-16'], 'utf-16'],
    [['utf-32'], 'utf-16'],
    [undefined, 'utf-16'],
  ]) {
    const s = await startSession({ capabilities: clientCapabilities({ encodings: offered }) });
    assert.equal(s.initResult.capabilities.positionEncoding, expected, `offered ${JSON.stringify(offered)}`);
    const log = await s.until(() => s.logs.find((l) => /positions/.test(l.message)), 'startup log');
    assert.match(log.message, expected === 'utf-8' ? /UTF-8 positions/ : /UTF-16 positions/);
    assert.equal(await s.stop(), 0);
  }
});

// Lines 13 and 21 of the article network with non-ASCII text before the interesting columns:
// '😀' is 4 UTF-8 bytes / 2 UTF-16 units, 'é' 2 bytes / 1 unit.
const NON_ASCII = read(ARTICLE)
  .replace('        self.fc1 = nn.Dense(1600, 128)', "        s = '😀é'; self.fc1 = nn.Dense(1600, 128)")
  .replace('        x = self.relu(self.fc1(x))', "        é = '😀'; x = self.relu(self.fc1(x))");

function column(line, needle, enc) {
  const prefix = line.slice(0, line.indexOf(needle));
  return enc === 'utf-8' ? Buffer.byteLength(prefix, 'utf8') : prefix.length;
}

for (const enc of ['utf-8', 'utf-16']) {
  test(`${enc} positions: diagnostics, related locations and incremental edits count ${enc === 'utf-8' ? 'bytes' : 'UTF-16 units'}`, async (t) => {
    const ws = tempWorkspace({ 'e.py': { text: NON_ASCII } });
    t.after(() => removeDir(ws));
    const lines = NON_ASCII.split('\n');
    const s = await startSession({ capabilities: clientCapabilities({ encodings: [enc] }) });
    t.after(() => s.dispose());
    assert.equal(s.initResult.capabilities.positionEncoding, enc);
    const uri = s.open(path.join(ws, 'e.py'), NON_ASCII);
    const p = await s.waitDiagnostics(uri);
    const d = p.diagnostics.find((x) => x.code === 'shape-mismatch');
    assert.ok(d, 'shape-mismatch reported');
    const x = column(lines[21], 'x))', enc);
    assert.deepEqual(d.range, { start: { line: 21, character: x }, end: { line: 21, character: x + 1 } });
    assert.equal(x, enc === 'utf-8' ? 44 : 41);
    const rel = d.relatedInformation[0].location.range;
    assert.equal(rel.start.character, column(lines[13], 'nn.Dense', enc));
    // Replace `1600` using columns in the negotiated unit: only an exact hit fixes the model.
    const c = column(lines[13], '1600', enc);
    s.conn.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 2 },
      contentChanges: [{ range: { start: { line: 13, character: c }, end: { line: 13, character: c + 4 } }, text: '9216' }],
    });
    const after = await s.waitDiagnostics(uri, (q) => q.version === 2);
    assert.deepEqual(after.diagnostics.map((q) => q.code), ['unknown-api']);
    assert.equal(await s.stop(), 0);
  });
}

test('window/logMessage at startup, $/setTrace then $/logTrace', async (t) => {
  const s = await startSession({ folders: [path.join(corpus, 'models')] });
  t.after(() => s.dispose());
  const log = await s.until(() => s.logs.find((l) => /Cellscope/.test(l.message)), 'the startup logMessage');
  assert.equal(log.type, 3); // Info
  assert.match(log.message, /MindSpore API \d+\.\d+/);
  assert.match(log.message, /target cpu/);
  assert.match(log.message, /1 workspace folder/);
  assert.match(log.message, /UTF-16 positions/);
  assert.match(log.message, /push diagnostics/);

  // Tracing is off until the client turns it on.
  const a = s.open(path.join(corpus, 'models', 'lenet5.py'));
  await s.waitDiagnostics(a);
  assert.equal(s.traces.length, 0);
  await s.conn.sendNotification(SetTraceNotification.type, { value: 'verbose' });
  const b = s.open(ARTICLE);
  await s.waitDiagnostics(b);
  // The open is analysed at once (no debounce), then the analysis reports its time.
  const queued = await s.until(() => s.traces.find((x) => x.message.startsWith('queued') && x.message.includes('mnist_article_bug.py')), '$/logTrace');
  assert.match(queued.message, /queued .*mnist_article_bug\.py v1 after 0 ms/);
  const tr = await s.until(() => s.traces.find((x) => x.message.startsWith('analysed') && x.message.includes('mnist_article_bug.py')), '$/logTrace');
  assert.match(tr.message, /analysed .*mnist_article_bug\.py v1 in [\d.]+ ms/);
  assert.match(tr.verbose, /2 diagnostics, 1 Cells/);
  // Back off: no more traces.
  await s.conn.sendNotification(SetTraceNotification.type, { value: 'off' });
  const n = s.traces.length;
  s.conn.sendNotification('textDocument/didChange', { textDocument: { uri: b, version: 2 }, contentChanges: [{ text: read(ARTICLE) + '\n' }] });
  await s.waitDiagnostics(b, (p) => p.version === 2).catch(() => {});
  await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri: b }, position: { line: 17, character: 8 } });
  assert.equal(s.traces.length, n);
  assert.equal(await s.stop(), 0);
});

test('initialize with trace "messages" traces from the start', async (t) => {
  const s = await startSession({ trace: 'messages' });
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE);
  await s.waitDiagnostics(uri);
  const tr = await s.until(() => s.traces.find((x) => x.message.startsWith('analysed')), '$/logTrace');
  assert.equal(tr.verbose, undefined, '"messages" carries no verbose part');
  assert.equal(await s.stop(), 0);
});

test('exit: code 0 after shutdown, 1 without it; requests after shutdown are refused', async () => {
  const s = await startSession();
  await s.conn.sendRequest(ShutdownRequest.type);
  await assert.rejects(s.conn.sendRequest(HoverRequest.type, { textDocument: { uri: uriOf(ARTICLE) }, position: { line: 0, character: 0 } }), (e) => e.code === -32600);
  await s.conn.sendNotification(ExitNotification.type);
  assert.equal(await withTimeout(s.exited, 5000, 'exit'), 0);

  const s2 = await startSession();
  await s2.conn.sendNotification(ExitNotification.type);
  assert.equal(await withTimeout(s2.exited, 5000, 'exit'), 1);

  // exit before initialize: also 1.
  const s3 = new Session();
  await s3.conn.sendNotification(ExitNotification.type);
  assert.equal(await withTimeout(s3.exited, 5000, 'exit'), 1);

  // The input ends (editor crashed) with documents open and analyses pending: exits, 1.
  const s4 = await startSession({}, { args: ['--debounce-ms', '3000'] });
  const uri = s4.open(ARTICLE);
  await s4.conn.sendNotification('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: read(ARTICLE) }] });
  const pending = s4.conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position: { line: 17, character: 8 } });
  await new Promise((r) => setTimeout(r, 50));
  s4.child.stdin.end();
  assert.equal(await withTimeout(s4.exited, 5000, 'exit at EOF'), 1);
  // The hover waiting for the pending analysis was answered (null) before the server left.
  assert.equal(await withTimeout(pending.catch((e) => e), 1000, 'the pending hover'), null);
  for (const x of [s, s2, s3, s4]) x.conn.dispose();
});

test('a second initialize is refused', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  await assert.rejects(
    s.conn.sendRequest(InitializeRequest.type, { processId: null, rootUri: null, capabilities: {} }),
    (e) => e.code === -32600,
  );
  assert.equal(await s.stop(), 0);
});

test('workspaceFolders: folders from initialize are indexed; didChangeWorkspaceFolders adds and removes', async (t) => {
  const a = tempWorkspace({ 'lenet5.py': path.join(corpus, 'models', 'lenet5.py') });
  const b = tempWorkspace({ 'vgg16.py': path.join(corpus, 'models', 'vgg16.py') });
  t.after(() => {
    removeDir(a);
    removeDir(b);
  });
  const caps = clientCapabilities();
  caps.window.workDoneProgress = true;
  const s = await startSession({ folders: [a], capabilities: caps });
  t.after(() => s.dispose());
  const log = await s.until(() => s.logs.find((l) => /workspace folder/.test(l.message)), 'startup log');
  assert.match(log.message, /1 workspace folder\(s\)/);
  // The index is built in the background: poll until LeNet5 shows up.
  const found = await pollSymbols(s, 'LeNet5', (r) => r.some((x) => x.name === 'LeNet5'));
  const l = found.find((x) => x.name === 'LeNet5');
  assert.equal(l.location.uri, uriOf(path.join(a, 'lenet5.py')));
  assert.equal(l.kind, 5); // Class
  assert.equal(l.location.range.start.line, 9);
  // Folders that are not part of the workspace are not indexed.
  assert.deepEqual((await s.conn.sendRequest(WorkspaceSymbolRequest.type, { query: 'Vgg' })).filter((x) => x.name === 'Vgg'), []);
  // A new folder: its models resolve relative imports against it, its mindspore_config.json is
  // read, and its files are indexed without being opened.
  await s.conn.sendNotification(DidChangeWorkspaceFoldersNotification.type, {
    event: { added: [{ uri: uriOf(b), name: 'b' }], removed: [{ uri: uriOf(a), name: 'a' }] },
  });
  const indexed = await pollSymbols(s, 'Vgg', (r) => r.some((x) => x.name === 'Vgg'));
  assert.equal(indexed.find((x) => x.name === 'Vgg').location.uri, uriOf(path.join(b, 'vgg16.py')));
  const v = s.open(path.join(b, 'vgg16.py'));
  await s.waitDiagnostics(v);
  const vgg = await pollSymbols(s, 'Vgg', (r) => r.some((x) => x.name === 'Vgg'));
  assert.equal(vgg.find((x) => x.name === 'Vgg').location.uri, v);
  assert.equal(await s.stop(), 0);
});

async function pollSymbols(s, query, ok, ms = 8000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await s.conn.sendRequest(WorkspaceSymbolRequest.type, { query });
    if (ok(r)) return r;
    if (Date.now() > deadline) assert.fail(`workspace/symbol ${query}: ${JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

// A generated 100k-node-class model (the benchmark's deep residual stack) analyses for long
// enough that, with a zero progress delay, the server shows it as work-done progress.
const DEEP = (depth) => `import numpy as np
import mindspore as ms
from mindspore import nn, ops


class Block(nn.Cell):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3)
        self.bn2 = nn.BatchNorm2d(channels)

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class DeepNet(nn.Cell):
    def __init__(self, depth=${depth}, channels=16):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, kernel_size=3)
        self.body = nn.SequentialCell([Block(channels) for _ in range(depth)])

    def construct(self, x):
        return self.body(self.stem(x))


net = DeepNet()
out = net(ms.Tensor(np.ones((1, 3, 32, 32)), ms.float32))
`;

test('window/workDoneProgress: a long analysis shows begin and end progress', async (t) => {
  const ws = tempWorkspace({ 'deep.py': { text: DEEP(3000) } });
  t.after(() => removeDir(ws));
  const caps = clientCapabilities();
  caps.window.workDoneProgress = true;
  const s = await startSession({ capabilities: caps }, { args: ['--debounce-ms', '0', '--progress-delay-ms', '0'] });
  t.after(() => s.dispose());
  const uri = s.open(path.join(ws, 'deep.py'));
  assert.deepEqual((await s.waitDiagnostics(uri)).diagnostics, []);
  const created = s.serverRequests.filter(([m, p]) => m === 'window/workDoneProgress/create' && String(p.token).startsWith('cellscope-analysis-'));
  assert.equal(created.length, 1, JSON.stringify(s.serverRequests));
  const token = created[0][1].token;
  const events = await s.until(() => {
    const e = s.progress.filter((p) => p.token === token);
    return e.some((p) => p.value.kind === 'end') ? e : undefined;
  }, 'the end of the analysis progress');
  assert.deepEqual(events.map((p) => p.value.kind), ['begin', 'end']);
  assert.match(events[0].value.message, /analysing deep\.py/);
  assert.equal(await s.stop(), 0);
});
