// Comparing the graph with a fixed base through the view bridge of `cellscope lsp`: a view's
// CompareRequest ("HEAD" or another file) gets a pending comparison, then the comparison of the
// editor's (unsaved) text with the file as of the last commit, again before every update after
// an edit; a file outside git gets a message, not an error state; "" stops comparing.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { DidChangeTextDocumentNotification, ExecuteCommandRequest } from 'vscode-languageserver-protocol/node';

import { openView } from '../lib/view-client.js';
import { startSession, tempWorkspace, removeDir, corpus, path, read, lineOf } from '../lib/harness.js';

function git(dir, ...args) {
  const env = { ...process.env };
  delete env.GIT_DIR;
  delete env.GIT_WORK_TREE;
  const r = spawnSync('git', ['-C', dir, '-c', 'user.name=Cellscope Test', '-c', 'user.email=test@cellscope.invalid',
    '-c', 'commit.gpgsign=false', ...args], { encoding: 'utf8', env });
  assert.equal(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

// A session with `file` open, a view of it (its first document read) and the view's messages.
async function viewOf(t, ws, name, text) {
  const s = await startSession({ folders: [ws] });
  t.after(() => s.dispose());
  const file = path.join(ws, name);
  const uri = s.open(file, text);
  await s.waitDiagnostics(uri);
  const line = lineOf(text, 'def construct');
  const res = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.visualizeGraph', arguments: [uri, { line, character: 4 }] });
  const view = openView(res.url);
  await view.opened;
  t.after(() => view.ws.close());
  const first = await view.next((m) => m.update, 'first document');
  return { s, uri, file, view, first };
}

const compare = (view, base) => view.ws.send(JSON.stringify({ compare: { base } }));
const changedIds = (cell) => (cell.changed ?? []).map((c) => c.id).sort();

test('compare with HEAD: the unsaved text against the last commit, live, until stopped', async (t) => {
  const ws = tempWorkspace({ 'lenet.py': path.join(corpus, 'models', 'lenet5.py') });
  t.after(() => removeDir(ws));
  git(ws, 'init', '-q');
  git(ws, 'add', 'lenet.py');
  git(ws, 'commit', '-q', '-m', 'LeNet');
  const commit = git(ws, 'rev-parse', '--short', 'HEAD').trim();
  const text = read(path.join(ws, 'lenet.py'));
  const { s, uri, view, first } = await viewOf(t, ws, 'lenet.py', text);

  compare(view, 'HEAD');
  const pending = await view.next((m) => m.comparison, 'pending comparison');
  assert.equal(pending.comparison.pending, true);
  assert.equal(pending.comparison.base.kind, 'head');
  const same = await view.next((m) => m.comparison && !m.comparison.pending, 'comparison');
  const c0 = same.comparison;
  assert.equal(c0.base.label, `HEAD (${commit})`);
  assert.equal(c0.base.commit, commit);
  assert.equal(c0.seq, first.update.seq);
  assert.equal(c0.cells[0].cell, 'LeNet5');
  assert.equal(c0.cells[0].baseCell, 'LeNet5');
  assert.deepEqual(changedIds(c0.cells[0]), [], 'the open text is the committed one');
  assert.ok(!c0.cells[0].added?.length && !c0.cells[0].removed?.length);

  // An edit in the editor (not saved): fc2 is wider, the ReLU after it and fc3 follow; the comparison comes before its update.
  const edited = text.replace('nn.Dense(120, 84,', 'nn.Dense(120, 90,').replace('nn.Dense(84,', 'nn.Dense(90,');
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: 2 }, contentChanges: [{ text: edited }] });
  const live = await view.next((m) => m.comparison || m.update, 'comparison of the edit');
  assert.ok(live.comparison, 'the comparison precedes the update');
  const update = await view.next((m) => m.update, 'update of the edit');
  assert.equal(live.comparison.seq, update.update.seq);
  const cell = live.comparison.cells[0];
  assert.deepEqual(changedIds(cell), ['fc2', 'fc3', 'relu#4']);  // the ReLU after fc2 too
  const fc2 = cell.changed.find((c) => c.id === 'fc2');
  const shape = fc2.changes.find((f) => f.field === 'outputs[0].shape');
  assert.deepEqual([shape.before, shape.after], [[1, 84], [1, 90]]);
  assert.ok(fc2.changes.some((f) => f.field === 'params' && f.before === 120 * 84 + 84 && f.after === 120 * 90 + 90), JSON.stringify(fc2));
  assert.equal(cell.after.params - cell.before.params, (120 * 90 + 90 + 90 * 10 + 10) - (120 * 84 + 84 + 84 * 10 + 10));
  assert.ok(cell.before.hardware && cell.after.latencyMs > 0);

  // Stop: an empty comparison.
  compare(view, '');
  const stopped = await view.next((m) => m.comparison, 'stop');
  assert.equal(stopped.comparison.base, undefined);
  assert.equal(await s.stop(), 0);
});

test('compare: a file outside git gets a message; another file is compared by its own analysis', async (t) => {
  const other = read(path.join(corpus, 'models', 'lenet5.py')).replace('nn.ReLU()', 'nn.Sigmoid()');
  const ws = tempWorkspace({ 'lenet.py': path.join(corpus, 'models', 'lenet5.py'), 'variants/lenet_sigmoid.py': { text: other } });
  t.after(() => removeDir(ws));
  const { s, view } = await viewOf(t, ws, 'lenet.py', read(path.join(ws, 'lenet.py')));

  compare(view, 'HEAD');
  const failed = await view.next((m) => m.comparison && !m.comparison.pending, 'HEAD outside git');
  assert.equal(failed.comparison.error, 'lenet.py is not in a git repository');
  assert.ok(!failed.comparison.cells);

  compare(view, 'variants/lenet_sigmoid.py');
  const c = await view.next((m) => m.comparison && !m.comparison.pending, 'other file');
  assert.equal(c.comparison.error, undefined);
  assert.equal(c.comparison.base.kind, 'file');
  assert.equal(c.comparison.base.label, 'lenet_sigmoid.py');
  assert.equal(c.comparison.base.file, path.join(ws, 'variants', 'lenet_sigmoid.py'));
  const relu = c.comparison.cells[0].changed.find((x) => x.id === 'relu');
  assert.ok(relu, JSON.stringify(c.comparison.cells[0].changed));
  assert.deepEqual(relu.changes.find((f) => f.field === 'op'), { field: 'op', before: 'Sigmoid', after: 'ReLU' });

  compare(view, 'no_such.py');
  const missing = await view.next((m) => m.comparison && !m.comparison.pending, 'missing file');
  assert.equal(missing.comparison.error, `no such file: ${path.join(ws, 'no_such.py')}`);
  assert.equal(await s.stop(), 0);
});
