// Diagnostics: push (publishDiagnostics) as the document is edited incrementally, pull
// (textDocument/diagnostic), and stale versions never being published.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  DidChangeTextDocumentNotification,
  DidCloseTextDocumentNotification,
  DocumentDiagnosticRequest,
} from 'vscode-languageserver-protocol/node';

import { startSession, clientCapabilities, read, ARTICLE, uriOf, sleep } from '../lib/harness.js';

const TEXT = read(ARTICLE);
const LINES = TEXT.split('\n');

// The two errors of the article's network, as an editor receives them.
function assertArticleErrors(diags, uri) {
  assert.equal(diags.length, 2, JSON.stringify(diags));
  const [api, shape] = [...diags].sort((a, b) => a.range.start.line - b.range.start.line);
  assert.equal(api.code, 'unknown-api');
  assert.equal(api.severity, 1);
  assert.equal(api.source, 'cellscope');
  assert.deepEqual(api.range, { start: { line: 11, character: 20 }, end: { line: 11, character: 33 } });
  assert.equal(LINES[11].slice(20, 33), 'ops.MaxPool2d');
  assert.match(api.message, /`ops\.MaxPool2d` does not exist/);
  assert.match(api.message, /nn\.MaxPool2d/);

  assert.equal(shape.code, 'shape-mismatch');
  assert.equal(shape.severity, 1);
  // The `x` argument of self.fc1(x) on line 21.
  assert.deepEqual(shape.range, { start: { line: 21, character: 31 }, end: { line: 21, character: 32 } });
  assert.equal(LINES[21].slice(31, 32), 'x');
  assert.equal(LINES[21].slice(22, 33), 'self.fc1(x)');
  assert.match(shape.message, /1600/);
  assert.match(shape.message, /9216/);
  assert.equal(shape.relatedInformation.length, 1);
  const rel = shape.relatedInformation[0];
  assert.equal(rel.location.uri, uri);
  // `nn.Dense(1600, 128)`, the value assigned to self.fc1 on line 13.
  assert.equal(rel.location.range.start.line, 13);
  assert.equal(LINES[13].slice(rel.location.range.start.character, rel.location.range.end.character), 'nn.Dense(1600, 128)');
  assert.match(rel.message, /fc1/);
}

test('push: the article network has the unknown-api and shape-mismatch errors; incremental edits fix them', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE, TEXT, 1);
  const first = await s.waitDiagnostics(uri);
  assert.equal(first.version, 1);
  assertArticleErrors(first.diagnostics, uri);

  // `1600` -> `9216` on line 13 (an incremental range change).
  const c = LINES[13].indexOf('1600');
  assert.equal(c, 28);
  let n = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version: 2 },
    contentChanges: [{ range: { start: { line: 13, character: c }, end: { line: 13, character: c + 4 } }, text: '9216' }],
  });
  const second = await s.waitDiagnostics(uri, () => true, { from: n });
  assert.equal(second.version, 2);
  assert.deepEqual(second.diagnostics.map((d) => d.code), ['unknown-api']);
  assert.deepEqual(second.diagnostics[0].range, first.diagnostics.find((d) => d.code === 'unknown-api').range);

  // `ops.MaxPool2d` -> `nn.MaxPool2d`: no errors at all.
  n = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version: 3 },
    contentChanges: [{ range: { start: { line: 11, character: 20 }, end: { line: 11, character: 23 } }, text: 'nn' }],
  });
  const third = await s.waitDiagnostics(uri, () => true, { from: n });
  assert.equal(third.version, 3);
  assert.deepEqual(third.diagnostics, []);

  // Several changes in one notification apply in order; breaking it again re-reports.
  n = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version: 4 },
    contentChanges: [
      { range: { start: { line: 13, character: 28 }, end: { line: 13, character: 32 } }, text: '100' },
      { range: { start: { line: 13, character: 28 }, end: { line: 13, character: 31 } }, text: '1600' },
    ],
  });
  const fourth = await s.waitDiagnostics(uri, () => true, { from: n });
  assert.equal(fourth.version, 4);
  assert.deepEqual(fourth.diagnostics.map((d) => d.code), ['shape-mismatch']);
  assert.match(fourth.diagnostics[0].message, /1600/);

  // Closing clears the document's diagnostics.
  n = s.diagnostics.length;
  await s.conn.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } });
  const closed = await s.waitDiagnostics(uri, () => true, { from: n });
  assert.deepEqual(closed.diagnostics, []);
  assert.equal(await s.stop(), 0);
});

test('push: a full-text change and a syntax error', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE, TEXT, 10);
  assert.equal((await s.waitDiagnostics(uri)).version, 10);
  const broken = TEXT.replace('    def construct(self, x):', '    def construct(self, x:');
  let n = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: 11 }, contentChanges: [{ text: broken }] });
  const p = await s.waitDiagnostics(uri, () => true, { from: n });
  assert.equal(p.version, 11);
  const syn = p.diagnostics.find((d) => d.code === 'syntax-error');
  assert.ok(syn, JSON.stringify(p.diagnostics));
  // Reported at the class the broken `def` is in (tree-sitter's error recovery), not past it.
  assert.ok(syn.range.start.line >= 5 && syn.range.start.line <= 16, JSON.stringify(syn.range));
  assert.equal(syn.severity, 1);
  n = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: 12 }, contentChanges: [{ text: TEXT }] });
  assertArticleErrors((await s.waitDiagnostics(uri, () => true, { from: n })).diagnostics, uri);
  assert.equal(await s.stop(), 0);
});

test('pull: textDocument/diagnostic returns full items, then unchanged with the same resultId', async (t) => {
  const s = await startSession({ capabilities: clientCapabilities({ pull: true }) });
  t.after(() => s.dispose());
  const dp = s.initResult.capabilities.diagnosticProvider;
  assert.ok(dp, 'diagnosticProvider advertised to a pull client');
  assert.equal(dp.interFileDependencies, true);
  assert.equal(dp.workspaceDiagnostics, false);
  const uri = s.open(ARTICLE);
  const full = await s.conn.sendRequest(DocumentDiagnosticRequest.type, { textDocument: { uri } });
  assert.equal(full.kind, 'full');
  assert.equal(typeof full.resultId, 'string');
  assertArticleErrors(full.items, uri);
  const again = await s.conn.sendRequest(DocumentDiagnosticRequest.type, { textDocument: { uri }, previousResultId: full.resultId });
  assert.deepEqual(again, { kind: 'unchanged', resultId: full.resultId });
  // An edit: a new full report with a new resultId.
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version: 2 },
    contentChanges: [{ range: { start: { line: 13, character: 28 }, end: { line: 13, character: 32 } }, text: '9216' }],
  });
  const next = await s.conn.sendRequest(DocumentDiagnosticRequest.type, { textDocument: { uri }, previousResultId: full.resultId });
  assert.equal(next.kind, 'full');
  assert.notEqual(next.resultId, full.resultId);
  assert.deepEqual(next.items.map((d) => d.code), ['unknown-api']);
  // A pull client gets no pushes.
  await sleep(100);
  assert.deepEqual(s.publishedFor(uri), []);
  // A document that is not open: null result? No: the request is answered (empty report or null).
  const none = await s.conn.sendRequest(DocumentDiagnosticRequest.type, { textDocument: { uri: uriOf('/nonexistent/x.py') } });
  assert.ok(none === null || (none.kind === 'full' && none.items.length === 0), JSON.stringify(none));
  assert.equal(await s.stop(), 0);
});

// The text of version `v` in the stale-version tests: `v` comment lines first (so every
// version's diagnostics are somewhere else), then the network, broken (Dense(1600)) in odd
// versions and fixed (Dense(9216)) in even ones.
function versionText(v) {
  const net = TEXT.replace('nn.Dense(1600, 128)', v % 2 ? 'nn.Dense(1600, 128)' : 'nn.Dense(9216, 128)');
  return `# version ${v}\n`.repeat(v) + net;
}

// The diagnostics of versionText(v), as [code, line].
const versionDiagnostics = (v) => (v % 2 ? [['unknown-api', 11 + v], ['shape-mismatch', 21 + v]] : [['unknown-api', 11 + v]]);

for (const debounce of [0, 120]) {
  test(`stale versions are never published (debounce ${debounce} ms)`, async (t) => {
    const s = await startSession({}, { args: ['--debounce-ms', String(debounce)] });
    t.after(() => s.dispose());
    const uri = s.open(ARTICLE, versionText(1), 1);
    assert.deepEqual((await s.waitDiagnostics(uri, (p) => p.version === 1)).diagnostics.map((d) => [d.code, d.range.start.line]), versionDiagnostics(1));
    const from = s.diagnostics.length;
    const last = 30;
    const t0 = Date.now();
    // A burst of full-text changes, as fast as the pipe takes them, with a few pauses
    // (in the debounce-0 run analyses then complete between changes).
    for (let v = 2; v <= last; v++) {
      s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: v }, contentChanges: [{ text: versionText(v) }] });
      if (v % 7 === 0) await sleep(5);
    }
    const burstMs = Date.now() - t0;
    const final = await s.waitDiagnostics(uri, (p) => p.version === last, { from });
    // Nothing more arrives for older versions after the last one.
    await sleep(debounce + 150);
    const pubs = s.diagnostics.slice(from).filter((p) => p.uri === uri);
    assert.ok(pubs.length >= 1);
    assert.equal(pubs.at(-1), final, 'the last publish is for the last version');
    let prev = 1;
    for (const p of pubs) {
      assert.ok(p.version >= prev, `versions never go back: ${pubs.map((q) => q.version)}`);
      prev = p.version;
      // Each publish matches the text of its version: the errors are where that text has them.
      const got = p.diagnostics.map((d) => [d.code, d.range.start.line]).sort((a, b) => a[1] - b[1]);
      assert.deepEqual(got, versionDiagnostics(p.version), `version ${p.version}`);
    }
    if (debounce > 0 && burstMs < debounce) {
      // Debounced: the burst is analysed once, as its last version.
      assert.deepEqual(pubs.map((p) => p.version), [last]);
    }
    assert.equal(await s.stop(), 0);
  });
}

test('requests sent during a burst of changes are answered for the latest version', async (t) => {
  // The debounce outlasts the burst: the analysis of version 1 (odd, broken) exists while the
  // requests arrive, but they must wait for the last version (10, fixed) instead of answering
  // from it.
  const s = await startSession({}, { args: ['--debounce-ms', '400'] });
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE, versionText(1), 1);
  await s.waitDiagnostics(uri);
  const t0 = Date.now();
  const answers = [];
  for (let v = 2; v <= 10; v++) {
    s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: v }, contentChanges: [{ text: versionText(v) }] });
    answers.push(s.conn.sendRequest('textDocument/codeLens', { textDocument: { uri } }));
  }
  const burstMs = Date.now() - t0;
  for (const lenses of await Promise.all(answers)) {
    // fc1 = Dense(9216, 128) in even versions: 1,199,786 parameters (224,938 with 1600); the
    // lens sits on the class line, 10 lines down in version 10.
    assert.match(lenses[0].command.title, /^(1,199,786|224,938) params/);
    if (burstMs < 400) {
      assert.equal(lenses[0].command.title.split(' ')[0], '1,199,786');
      assert.equal(lenses[0].range.start.line, 5 + 10);
    }
  }
  assert.equal(await s.stop(), 0);
});

test('the debounce holds: a change right after didOpen is analysed once, after the delay', async (t) => {
  // didOpen is analysed at once (a 0 ms timer); a didChange arriving around that moment re-arms
  // the timer. Whatever the gap, version 2 must wait for the debounce and be analysed once.
  for (const gap of [-1, 0, 0, 1, 1, 2, 3, 5]) {
    const s = await startSession({ trace: 'messages' }, { args: ['--debounce-ms', '300'] });
    t.after(() => s.dispose());
    const uri = s.open(ARTICLE, versionText(1), 1);
    if (gap >= 0) await sleep(gap);
    const t0 = Date.now();
    await s.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version: 2 }, contentChanges: [{ text: versionText(2) }] });
    const p = await s.waitDiagnostics(uri, (q) => q.version === 2);
    const elapsed = Date.now() - t0;
    assert.ok(elapsed >= 280, `gap ${gap} ms: version 2 was analysed after ${elapsed} ms, before the 300 ms debounce`);
    await sleep(50);
    const runs = s.traces.filter((x) => /^analysed .* v2 /.test(x.message));
    assert.equal(runs.length, 1, `version 2 analysed ${runs.length} times: ${JSON.stringify(s.traces)}`);
    assert.deepEqual(p.diagnostics.map((d) => [d.code, d.range.start.line]), versionDiagnostics(2));
    assert.equal(await s.stop(), 0);
  }
});
