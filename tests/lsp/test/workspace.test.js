// Several files: edits of an open dependency re-check its importers, files changed on disk
// (workspace/didChangeWatchedFiles) re-check open importers, and settings
// (workspace/didChangeConfiguration, workspace/configuration, mindspore_config.json) change
// the results.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  DidChangeTextDocumentNotification,
  DidChangeWatchedFilesNotification,
  DidChangeConfigurationNotification,
  FileChangeType,
  HoverRequest,
  ExecuteCommandRequest,
} from 'vscode-languageserver-protocol/node';

import { startSession, clientCapabilities, tempWorkspace, removeDir, read, ARTICLE, uriOf, lineOf, posOf, path, fs, BLOCKS, mainPy } from '../lib/harness.js';

// pad_mode='valid' shrinks 32x32 to 30x30: Model's fc then receives 8*30*30 = 7200 features.
const BLOCKS_VALID = BLOCKS.replace('nn.Conv2d(cin, cout, 3)', "nn.Conv2d(cin, cout, 3, pad_mode='valid')");

const MAIN = mainPy('from blocks import Block');
const FC_LINE = lineOf(MAIN, 'return self.fc(x)');

function assertFcMismatch(diags) {
  assert.equal(diags.length, 1, JSON.stringify(diags));
  const d = diags[0];
  assert.equal(d.code, 'shape-mismatch');
  assert.match(d.message, /8192/);
  assert.match(d.message, /7200/);
  const x = MAIN.split('\n')[FC_LINE].indexOf('(x)') + 1;
  assert.deepEqual(d.range, { start: { line: FC_LINE, character: x }, end: { line: FC_LINE, character: x + 1 } });
}

test('cross-file: editing an open blocks.py re-publishes the open main.py', async (t) => {
  const ws = tempWorkspace({ 'blocks.py': { text: BLOCKS }, 'main.py': { text: MAIN } });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws] }, { args: ['--debounce-ms', '200'] });
  t.after(() => s.dispose());
  const main = s.open(path.join(ws, 'main.py'));
  const blocks = s.open(path.join(ws, 'blocks.py'));
  assert.deepEqual((await s.waitDiagnostics(main)).diagnostics, []);
  await s.waitDiagnostics(blocks);

  // Break main.py's model from blocks.py (only blocks.py changes).
  let from = s.diagnostics.length;
  const line = lineOf(BLOCKS, 'nn.Conv2d(cin, cout, 3)');
  const at = BLOCKS.split('\n')[line].indexOf(', 3)') + 3;
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri: blocks, version: 2 },
    contentChanges: [{ range: { start: { line, character: at }, end: { line, character: at } }, text: ", pad_mode='valid'" }],
  });
  // A hover in main.py sent at once (main.py's re-analysis is still debounced) waits for it
  // instead of answering from main.py's analysis made with the old blocks.py.
  const h = await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri: main }, position: posOf(MAIN, lineOf(MAIN, 'x = self.block(x)'), 'x =') });
  assert.match(h.contents.value, /x: \(1, 8, 30, 30\) f32/);
  const broken = await s.waitDiagnostics(main, (p) => p.diagnostics.length > 0, { from });
  assert.equal(broken.version, 1, 'main.py itself did not change');
  assertFcMismatch(broken.diagnostics);

  // Undo: clean again.
  from = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri: blocks, version: 3 },
    contentChanges: [{ range: { start: { line, character: at }, end: { line, character: at + ", pad_mode='valid'".length } }, text: '' }],
  });
  assert.deepEqual((await s.waitDiagnostics(main, () => true, { from })).diagnostics, []);

  // An error located in blocks.py, caused by main.py's use of Block, is published for blocks.py.
  from = s.diagnostics.length;
  const use = lineOf(MAIN, 'Block(3, 8)');
  const c = MAIN.split('\n')[use].indexOf('Block(3') + 6;
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri: main, version: 2 },
    contentChanges: [{ range: { start: { line: use, character: c }, end: { line: use, character: c + 1 } }, text: '4' }],
  });
  const inBlocks = await s.waitDiagnostics(blocks, (p) => p.diagnostics.some((d) => d.code === 'shape-mismatch'), { from });
  assert.equal(inBlocks.version, 3, 'blocks.py did not change after version 3');
  const d = inBlocks.diagnostics.find((x) => x.code === 'shape-mismatch');
  assert.match(d.message, /expects 4 input channels .* receives 3/);
  assert.match(d.message, /an instance of Block/);
  const call = BLOCKS.split('\n')[lineOf(BLOCKS, 'return self.relu(self.conv(x))')];
  assert.deepEqual(d.range.start, { line: lineOf(BLOCKS, 'return self.relu(self.conv(x))'), character: call.indexOf('(x)') + 1 });
  assert.equal(d.relatedInformation[0].location.uri, blocks);
  // blocks.py's own analysis (Block alone cannot be built: it needs arguments) is kept too.
  assert.ok(inBlocks.diagnostics.some((x) => x.code === 'needs-arguments' && x.severity === 3));
  assert.equal(await s.stop(), 0);
});

test('cross-file: a file that is not open changes on disk; didChangeWatchedFiles re-checks its importers', async (t) => {
  const ws = tempWorkspace({ 'blocks.py': { text: BLOCKS }, 'main.py': { text: MAIN } });
  t.after(() => removeDir(ws));
  const caps = clientCapabilities();
  caps.workspace.didChangeWatchedFiles = { dynamicRegistration: true };
  const s = await startSession({ folders: [ws], capabilities: caps });
  t.after(() => s.dispose());
  // The server asks to watch Python files and mindspore_config.json.
  const [, reg] = await s.until(() => s.serverRequests.find(([m]) => m === 'client/registerCapability'), 'client/registerCapability');
  assert.equal(reg.registrations[0].method, 'workspace/didChangeWatchedFiles');
  const globs = reg.registrations[0].registerOptions.watchers.map((w) => w.globPattern);
  assert.deepEqual(globs, ['**/*.py', '**/mindspore_config.json']);

  const main = s.open(path.join(ws, 'main.py'));
  assert.deepEqual((await s.waitDiagnostics(main)).diagnostics, []);
  const blocksPath = path.join(ws, 'blocks.py');
  let from = s.diagnostics.length;
  fs.writeFileSync(blocksPath, BLOCKS_VALID);
  await s.conn.sendNotification(DidChangeWatchedFilesNotification.type, { changes: [{ uri: uriOf(blocksPath), type: FileChangeType.Changed }] });
  assertFcMismatch((await s.waitDiagnostics(main, () => true, { from })).diagnostics);

  const hoverX = async () =>
    (await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri: main }, position: posOf(MAIN, lineOf(MAIN, 'x = self.block(x)'), 'x =') }))?.contents.value ?? '';
  assert.match(await hoverX(), /x: \(1, 8, 30, 30\) f32/);

  // Deleted: Block is unknown (an unresolved user import is not an error), so Model's shapes
  // are too, and the mismatch goes away; one hint says where the shapes are lost.
  from = s.diagnostics.length;
  fs.rmSync(blocksPath);
  await s.conn.sendNotification(DidChangeWatchedFilesNotification.type, { changes: [{ uri: uriOf(blocksPath), type: FileChangeType.Deleted }] });
  const afterDelete = (await s.waitDiagnostics(main, () => true, { from })).diagnostics;
  assert.deepEqual(afterDelete.map((x) => [x.code, x.severity, x.range.start.line]), [['shape-unknown', 4, lineOf(MAIN, 'x = self.block(x)')]]);
  assert.doesNotMatch(await hoverX(), /\(1, 8, 3\d, 3\d\)/);

  // Created again (the original): clean, with shapes.
  from = s.diagnostics.length;
  fs.writeFileSync(blocksPath, BLOCKS);
  await s.conn.sendNotification(DidChangeWatchedFilesNotification.type, { changes: [{ uri: uriOf(blocksPath), type: FileChangeType.Created }] });
  // Requests wait for the re-analysis the event caused: no sleep needed.
  assert.match(await hoverX(), /x: \(1, 8, 32, 32\) f32/);
  // (Re-publishing the same empty list is allowed, anything else is not.)
  assert.ok(s.diagnostics.slice(from).every((p) => p.uri !== main || p.diagnostics.length === 0));

  // Changed again on disk: broken again.
  from = s.diagnostics.length;
  fs.writeFileSync(blocksPath, BLOCKS_VALID);
  await s.conn.sendNotification(DidChangeWatchedFilesNotification.type, { changes: [{ uri: uriOf(blocksPath), type: FileChangeType.Changed }] });
  // (The clean analysis above may still be publishing its empty list: wait for the mismatch.)
  assertFcMismatch((await s.waitDiagnostics(main, (p) => p.diagnostics.length > 0, { from })).diagnostics);
  assert.equal(await s.stop(), 0);
});

// The fixed article network without its `__main__` block: no call site gives its input shape.
const NO_INPUT = read(ARTICLE)
  .replace('ops.MaxPool2d', 'nn.MaxPool2d')
  .replace('nn.Dense(1600, 128)', 'nn.Dense(9216, 128)')
  .split('\n\nif __name__')[0] + '\n';
// nn.Dropout2dExt exists from MindSpore 2.7.1 on.
const DROPOUT_EXT = `from mindspore import nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout2dExt(p=0.5)
        self.fc = nn.Dense(4, 2)

    def construct(self, x):
        return self.fc(self.drop(x))
`;

const SETTINGS = { target: 'ascend910b', mindsporeVersion: '2.7.0', inputs: { '*': ['1,1,28,28'] } };

async function openConfigFiles(s, ws) {
  const net = s.open(path.join(ws, 'net.py'));
  const ext = s.open(path.join(ws, 'ext.py'));
  await s.waitDiagnostics(net);
  await s.waitDiagnostics(ext);
  return { net, ext };
}

// What the settings change: the input shape of the Cell, the API version and the target.
async function assertSettingsApplied(s, net, ext) {
  const h = await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri: net }, position: { line: 17, character: 8 } });
  assert.equal(h.contents.value, '```python\nx: (1, 32, 26, 26) f32\n```');
  const api = await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri: net }, position: posOf(NO_INPUT, 8, 'Conv2d') });
  assert.match(api.contents.value, /MindSpore 2\.7\.0 signature and defaults/);
  const d = s.publishedFor(ext).at(-1).diagnostics;
  assert.equal(d.length, 1, JSON.stringify(d));
  assert.equal(d[0].code, 'unknown-api');
  assert.match(d[0].message, /`nn\.Dropout2dExt` does not exist in MindSpore 2\.7\.0/);
  const g = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.graphDocument', arguments: [net] });
  assert.equal(g.target, 'ascend910b');
  assert.equal(g.mindsporeVersion, '2.7.0');
  assert.deepEqual(g.cells[0].inputs[0].shape, [1, 1, 28, 28]);
}

test('didChangeConfiguration: target, mindsporeVersion and inputs change the results', async (t) => {
  const ws = tempWorkspace({ 'net.py': { text: NO_INPUT }, 'ext.py': { text: DROPOUT_EXT } });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws] });
  t.after(() => s.dispose());
  const { net, ext } = await openConfigFiles(s, ws);
  // Defaults: symbolic input, MindSpore 2.10 (Dropout2dExt exists), cpu.
  const before = await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri: net }, position: { line: 17, character: 8 } });
  assert.doesNotMatch(before.contents.value, /\(1, 32, 26, 26\)/);
  assert.deepEqual(s.publishedFor(ext).at(-1).diagnostics, []);
  assert.equal((await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.graphDocument', arguments: [net] })).target, 'cpu');

  const from = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeConfigurationNotification.type, { settings: { cellscope: SETTINGS } });
  // Sent right behind the settings: answered from an analysis with the new settings.
  const h = await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri: net }, position: { line: 17, character: 8 } });
  assert.equal(h.contents.value, '```python\nx: (1, 32, 26, 26) f32\n```');
  await s.waitDiagnostics(ext, (p) => p.diagnostics.length === 1, { from });
  await assertSettingsApplied(s, net, ext);

  // Invalid values are reported to the user, not silently dropped.
  const from2 = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeConfigurationNotification.type, { settings: { cellscope: { target: 'tpu', mindsporeVersion: 'two', inputs: { '*': ['1,,2'] } } } });
  const shown = await s.until(() => s.shown.length >= 3 && s.shown, 'window/showMessage');
  const text = shown.map((m) => m.message).join('\n');
  assert.match(text, /unknown target `tpu`/);
  assert.match(text, /invalid MindSpore version `two`/);
  assert.match(text, /input `1,,2` for \*: empty dimension/);
  assert.ok(shown.every((m) => m.type === 2));
  // ... and the defaults are back: Dropout2dExt exists again.
  await s.waitDiagnostics(ext, (p) => p.diagnostics.length === 0, { from: from2 });
  assert.equal(await s.stop(), 0);
});

test('workspace/configuration: pulled at startup and when didChangeConfiguration carries no settings', async (t) => {
  const ws = tempWorkspace({ 'net.py': { text: NO_INPUT }, 'ext.py': { text: DROPOUT_EXT } });
  t.after(() => removeDir(ws));
  const caps = clientCapabilities();
  caps.workspace.configuration = true;
  const s = await startSession({ folders: [ws], capabilities: caps });
  t.after(() => s.dispose());
  const [, first] = await s.until(() => s.serverRequests.find(([m]) => m === 'workspace/configuration'), 'workspace/configuration');
  assert.deepEqual(first.items, [{ section: 'cellscope' }]);
  const { net, ext } = await openConfigFiles(s, ws);
  assert.deepEqual(s.publishedFor(ext).at(-1).diagnostics, []);
  s.configuration = SETTINGS;
  const from = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
  await s.waitDiagnostics(ext, (p) => p.diagnostics.length === 1, { from });
  assert.equal(s.serverRequests.filter(([m]) => m === 'workspace/configuration').length, 2);
  await assertSettingsApplied(s, net, ext);
  assert.equal(await s.stop(), 0);
});

test('initializationOptions and mindspore_config.json set the same settings', async (t) => {
  const ws = tempWorkspace({ 'net.py': { text: NO_INPUT }, 'ext.py': { text: DROPOUT_EXT } });
  t.after(() => removeDir(ws));
  const s = await startSession({ folders: [ws], initializationOptions: { debounceMs: 0, ...SETTINGS } }, { args: [] });
  t.after(() => s.dispose());
  const { net, ext } = await openConfigFiles(s, ws);
  await assertSettingsApplied(s, net, ext);
  assert.equal(await s.stop(), 0);

  // The project file: graph_visualization.backend and a cellscope section.
  fs.writeFileSync(
    path.join(ws, 'mindspore_config.json'),
    JSON.stringify({ graph_visualization: { backend: 'Ascend' }, cellscope: { mindsporeVersion: '2.7.0', inputs: { 'net.py': ['1,1,28,28'] } } }),
  );
  const p = await startSession({ folders: [ws] });
  t.after(() => p.dispose());
  const files = await openConfigFiles(p, ws);
  await assertSettingsApplied(p, files.net, files.ext);
  assert.equal(await p.stop(), 0);

  // A bad value: a located diagnostic published for mindspore_config.json itself; the rest applies.
  const config = path.join(ws, 'mindspore_config.json');
  fs.writeFileSync(config, '{\n  "graph_visualization": {"backend": "tpu"},\n  "mindspore_version": "2.7.0"\n}\n');
  const q = await startSession({ folders: [ws] });
  t.after(() => q.dispose());
  const published = await q.until(
    () => q.diagnostics.find((m) => m.uri === uriOf(config) && m.diagnostics.length > 0),
    'the config diagnostics',
  );
  assert.equal(published.diagnostics.length, 1);
  const d = published.diagnostics[0];
  assert.equal(d.code, 'invalid-config');
  assert.equal(d.range.start.line, 1);
  assert.match(d.message, /backend/);
  assert.equal(await q.stop(), 0);
});
