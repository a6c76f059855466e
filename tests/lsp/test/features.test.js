// Language features on the corpus: hover, inlay hints, code lens, document and workspace
// symbols, quick fixes (applied and re-checked), completion, signature help, definition (in a
// file and across files) and the cellscope.* commands.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  HoverRequest,
  InlayHintRequest,
  CodeLensRequest,
  DocumentSymbolRequest,
  WorkspaceSymbolRequest,
  CodeActionRequest,
  CompletionRequest,
  SignatureHelpRequest,
  DefinitionRequest,
  ExecuteCommandRequest,
  DidChangeTextDocumentNotification,
} from 'vscode-languageserver-protocol/node';

import {
  startSession,
  clientCapabilities,
  tempWorkspace,
  removeDir,
  read,
  corpus,
  path,
  ARTICLE,
  uriOf,
  lineOf,
  posOf,
  applyEdits,
  BLOCKS,
  mainPy,
} from '../lib/harness.js';

const LENET = path.join(corpus, 'models', 'lenet5.py');
const LENET_TEXT = read(LENET);
const ARTICLE_TEXT = read(ARTICLE);
const FIXED_ARTICLE = ARTICLE_TEXT.replace('ops.MaxPool2d', 'nn.MaxPool2d').replace('nn.Dense(1600, 128)', 'nn.Dense(9216, 128)');

const hoverAt = (s, uri, position) => s.conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position });

test('hover: tensor shapes in construct, API signatures with MindSpore defaults, Cell summaries', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const lenet = s.open(LENET);
  assert.deepEqual((await s.waitDiagnostics(lenet)).diagnostics, []);

  // `x` assigned on each line of LeNet5.construct (input (1, 1, 32, 32) from the call site).
  const start = lineOf(LENET_TEXT, 'def construct(self, x):');
  const expected = ['(1, 6, 28, 28)', '(1, 6, 28, 28)', '(1, 6, 14, 14)', '(1, 16, 10, 10)', '(1, 16, 10, 10)', '(1, 16, 5, 5)'];
  for (let i = 0; i < expected.length; i++) {
    const line = start + 1 + i;
    const h = await hoverAt(s, lenet, posOf(LENET_TEXT, line, 'x ='));
    assert.equal(h.contents.kind, 'markdown');
    assert.equal(h.contents.value, '```python\nx: ' + expected[i] + ' f32\n```', `line ${line}`);
    assert.deepEqual(h.range, { start: { line, character: 8 }, end: { line, character: 9 } });
  }
  const flat = lineOf(LENET_TEXT, 'x = self.flatten(x)');
  assert.match((await hoverAt(s, lenet, posOf(LENET_TEXT, flat, 'x ='))).contents.value, /x: \(1, 400\) f32/);

  // An API name: nn.Conv2d's constructor signature with MindSpore's defaults.
  const conv1 = lineOf(LENET_TEXT, 'self.conv1 = nn.Conv2d');
  const api = await hoverAt(s, lenet, posOf(LENET_TEXT, conv1, 'Conv2d', 2));
  assert.match(api.contents.value, /nn\.Conv2d\(in_channels, out_channels, kernel_size, stride=1, pad_mode='same', padding=0/);
  assert.match(api.contents.value, /has_bias=False/);
  assert.match(api.contents.value, /MindSpore 2\.10\.0 signature and defaults/);
  // Markdown that renders: every code fence opens and closes at the start of a line (a fence
  // after "called as " on the same line showed as raw backticks in VS Code).
  for (const m of api.contents.value.matchAll(/```/g)) {
    assert.ok(m.index === 0 || api.contents.value[m.index - 1] === '\n', `a fence inside a line at ${m.index}: ${api.contents.value}`);
  }
  assert.match(api.contents.value, /called as:\n```python\nnn\.Conv2d\(x\)\n```/);
  // The range is the API's name in `nn.Conv2d`.
  const at = LENET_TEXT.split('\n')[conv1].indexOf('Conv2d');
  assert.deepEqual(api.range, { start: { line: conv1, character: at }, end: { line: conv1, character: at + 6 } });

  // The Cell class name: parameters and FLOPs (LeNet5: 61,684 trainable parameters).
  const cls = lineOf(LENET_TEXT, 'class LeNet5');
  const c = await hoverAt(s, lenet, posOf(LENET_TEXT, cls, 'LeNet5', 1));
  assert.match(c.contents.value, /class LeNet5\(nn\.Cell\)/);
  assert.match(c.contents.value, /parameters: 61,684 trainable/);
  assert.match(c.contents.value, /FLOPs: 846\.07 KFLOPs/);
  assert.match(c.contents.value, /output: `\(1, 10\) f32`/);

  // A layer attribute used in construct: its instance summary and what the call returns.
  const fc1 = lineOf(LENET_TEXT, 'x = self.relu(self.fc1(x))');
  const layer = await hoverAt(s, lenet, posOf(LENET_TEXT, fc1, 'fc1', 1));
  assert.match(layer.contents.value, /`fc1`: nn\.Dense/);
  assert.match(layer.contents.value, /parameters: 48,120/);
  assert.match(layer.contents.value, /this call returns `\(1, 120\) f32`/);

  // Blank space and comments: no hover.
  assert.equal(await hoverAt(s, lenet, { line: 0, character: 0 }), null);

  // The article network after the fix: (1, 32, 26, 26) etc.
  const art = s.open(ARTICLE, FIXED_ARTICLE);
  assert.deepEqual((await s.waitDiagnostics(art)).diagnostics, []);
  const shapes = ['(1, 32, 26, 26)', '(1, 64, 24, 24)', '(1, 64, 12, 12)', '(1, 9216)', '(1, 128)', '(1, 10)'];
  for (let i = 0; i < shapes.length; i++) {
    const h = await hoverAt(s, art, { line: 17 + i, character: 8 });
    assert.equal(h.contents.value, '```python\nx: ' + shapes[i] + ' f32\n```');
  }
  // A client that only renders plain text gets plaintext.
  const s2 = await startSession({ capabilities: { ...clientCapabilities(), textDocument: { hover: { contentFormat: ['plaintext'] } } } });
  t.after(() => s2.dispose());
  const art2 = s2.open(ARTICLE, FIXED_ARTICLE);
  await s2.waitDiagnostics(art2);
  const plain = (await hoverAt(s2, art2, { line: 17, character: 8 })).contents;
  assert.equal(plain.kind, 'plaintext');
  assert.doesNotMatch(plain.value, /```|`/, 'no markdown markers in plain text');
  // The failing call of the article as written: why it fails and what it received (the graph
  // stops there).
  s2.conn.sendNotification('textDocument/didChange', { textDocument: { uri: art2, version: 2 }, contentChanges: [{ text: ARTICLE_TEXT }] });
  await s2.waitDiagnostics(art2, (p) => p.version === 2);
  const fc1Call = lineOf(ARTICLE_TEXT, 'self.fc1(x)');
  const failed = (await hoverAt(s2, art2, posOf(ARTICLE_TEXT, fc1Call, 'fc1'))).contents.value;
  assert.match(failed, /^fc1 \(nn\.Dense\) fails here: nn\.Dense expects 1600 input features .* \[shape-mismatch\]/);
  assert.match(failed, /receives \(1, 9216\) f32/);
  assert.equal(await s2.stop(), 0);
  assert.equal(await s.stop(), 0);
});

test('inlay hints: shape labels at the end of construct assignments, only within the range', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE, FIXED_ARTICLE);
  await s.waitDiagnostics(uri);
  const lines = FIXED_ARTICLE.split('\n');
  const all = await s.conn.sendRequest(InlayHintRequest.type, { textDocument: { uri }, range: { start: { line: 0, character: 0 }, end: { line: lines.length, character: 0 } } });
  const want = ['(1, 32, 26, 26) f32', '(1, 64, 24, 24) f32', '(1, 64, 12, 12) f32', '(1, 9216) f32', '(1, 128) f32', '(1, 10) f32'];
  assert.deepEqual(all.map((h) => h.label), want);
  for (const [i, h] of all.entries()) {
    assert.equal(h.position.line, 17 + i);
    // At the end of the statement, after its last character.
    assert.equal(h.position.character, lines[17 + i].trimEnd().length);
    assert.equal(h.kind, 1); // Type
    assert.equal(h.paddingLeft, true);
  }
  // Lines 19..20 only.
  const some = await s.conn.sendRequest(InlayHintRequest.type, { textDocument: { uri }, range: { start: { line: 19, character: 0 }, end: { line: 20, character: 40 } } });
  assert.deepEqual(some.map((h) => [h.position.line, h.label]), [[19, '(1, 64, 12, 12) f32'], [20, '(1, 9216) f32']]);
  // __init__ only: none.
  assert.deepEqual(await s.conn.sendRequest(InlayHintRequest.type, { textDocument: { uri }, range: { start: { line: 6, character: 0 }, end: { line: 15, character: 0 } } }), []);
  assert.equal(await s.stop(), 0);
});

test('code lens: params/FLOPs lens and a Visualize Graph lens per analysed Cell', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const uri = s.open(LENET);
  await s.waitDiagnostics(uri);
  const lenses = await s.conn.sendRequest(CodeLensRequest.type, { textDocument: { uri } });
  assert.equal(lenses.length, 2);
  const cls = lineOf(LENET_TEXT, 'class LeNet5');
  const range = { start: { line: cls, character: 6 }, end: { line: cls, character: 12 } };
  assert.deepEqual(lenses[0].range, range);
  assert.equal(lenses[0].command.title, '61,684 params · 846.07 KFLOPs · → (1, 10) f32');
  assert.deepEqual(lenses[1], { range, command: { title: 'Visualize Graph', command: 'cellscope.visualizeGraph', arguments: [uri, 'LeNet5'] } });

  // ResNet-50: many Cells; every lens command is either informative or the graph command.
  const ws = tempWorkspace({ 'resnet50.py': path.join(corpus, 'models', 'resnet50.py') });
  t.after(() => removeDir(ws));
  const r = s.open(path.join(ws, 'resnet50.py'));
  await s.waitDiagnostics(r);
  const rl = await s.conn.sendRequest(CodeLensRequest.type, { textDocument: { uri: r } });
  const titles = rl.map((l) => l.command.title);
  assert.ok(titles.some((x) => /^25,\d{3},\d{3} params · [\d.]+ GFLOPs/.test(x)), titles.join('\n'));
  assert.ok(rl.filter((l) => l.command.command === 'cellscope.visualizeGraph').length >= 2);
  assert.equal(await s.stop(), 0);
});

test('documentSymbol: hierarchical when supported, flat SymbolInformation otherwise', async (t) => {
  const hier = await startSession({ capabilities: clientCapabilities({ hierarchical: true }) });
  t.after(() => hier.dispose());
  const uri = hier.open(LENET);
  await hier.waitDiagnostics(uri);
  const syms = await hier.conn.sendRequest(DocumentSymbolRequest.type, { textDocument: { uri } });
  const cls = syms.find((x) => x.name === 'LeNet5');
  assert.equal(cls.kind, 5); // Class
  assert.ok('selectionRange' in cls && !('location' in cls));
  assert.match(cls.detail, /61,684 params/);
  const names = cls.children.map((c) => c.name);
  for (const n of ['__init__', 'construct', 'conv1', 'conv2', 'fc1', 'fc3']) assert.ok(names.includes(n), `${n} in ${names}`);
  const conv1 = cls.children.find((c) => c.name === 'conv1');
  assert.equal(conv1.kind, 8); // Field
  assert.equal(conv1.detail, 'nn.Conv2d · 150 params');
  assert.equal(cls.children.find((c) => c.name === 'construct').kind, 6); // Method
  assert.equal(cls.children.find((c) => c.name === '__init__').kind, 9); // Constructor
  assert.equal(await hier.stop(), 0);

  const flat = await startSession({ capabilities: clientCapabilities({ hierarchical: false }) });
  t.after(() => flat.dispose());
  const u2 = flat.open(LENET);
  await flat.waitDiagnostics(u2);
  const list = await flat.conn.sendRequest(DocumentSymbolRequest.type, { textDocument: { uri: u2 } });
  assert.ok(list.every((x) => 'location' in x && !('children' in x) && x.location.uri === u2));
  const c1 = list.find((x) => x.name === 'conv1');
  assert.equal(c1.containerName, 'LeNet5');
  assert.equal(c1.location.range.start.line, lineOf(LENET_TEXT, 'self.conv1 ='));
  assert.ok(list.some((x) => x.name === 'LeNet5' && x.kind === 5 && x.containerName === undefined));
  assert.equal(await flat.stop(), 0);
});

test('workspace/symbol finds ResNet and ResidualBlock in a workspace of corpus models', async (t) => {
  const models = ['resnet50.py', 'lenet5.py', 'bert_base.py', 'vgg16.py'];
  const ws = tempWorkspace(Object.fromEntries(models.map((m) => [`models/${m}`, path.join(corpus, 'models', m)])));
  t.after(() => removeDir(ws));
  const caps = clientCapabilities();
  caps.window.workDoneProgress = true;
  const s = await startSession({ folders: [ws], capabilities: caps });
  t.after(() => s.dispose());
  // Indexing reports progress (the client offered workDoneProgress); wait for its end.
  const created = await s.until(() => s.serverRequests.find(([m]) => m === 'window/workDoneProgress/create'), 'workDoneProgress/create');
  const token = created[1].token;
  const end = await s.until(() => s.progress.find((p) => p.token === token && p.value.kind === 'end'), 'the end of indexing');
  assert.equal(end.value.message, '4 Python files indexed');
  const kinds = s.progress.filter((p) => p.token === token).map((p) => p.value.kind);
  assert.equal(kinds[0], 'begin');
  assert.equal(kinds.at(-1), 'end');
  const resnet = path.join(ws, 'models', 'resnet50.py');
  const query = async (q) => s.conn.sendRequest(WorkspaceSymbolRequest.type, { query: q });
  const res = await query('ResNet');
  const r = res.find((x) => x.name === 'ResNet');
  assert.ok(r, JSON.stringify(res));
  assert.equal(r.kind, 5);
  assert.equal(r.location.uri, uriOf(resnet));
  assert.equal(r.location.range.start.line, lineOf(read(resnet), 'class ResNet('));
  // Best match first.
  assert.equal(res[0].name, 'ResNet');
  const block = (await query('ResidualBlock')).find((x) => x.name === 'ResidualBlock');
  assert.equal(block.location.uri, uriOf(resnet));
  assert.equal(block.location.range.start.line, lineOf(read(resnet), 'class ResidualBlock('));
  // Case-insensitive subsequence matching, other files too.
  assert.ok((await query('bertselfatt')).some((x) => x.name === 'BertSelfAttention' && x.location.uri.endsWith('bert_base.py')));
  assert.deepEqual(await query('Bottleneck'), []); // the corpus ResNet names it ResidualBlock
  assert.equal(await s.stop(), 0);
});

// Runs a quick fix end to end: codeAction for the diagnostic, apply its edit with didChange,
// and wait for the re-check.
async function applyQuickFix(s, uri, text, version, diag, title) {
  const actions = await s.conn.sendRequest(CodeActionRequest.type, {
    textDocument: { uri },
    range: diag.range,
    context: { diagnostics: [diag], only: ['quickfix'] },
  });
  const action = actions.find((a) => a.title === title);
  assert.ok(action, `"${title}" offered among ${JSON.stringify(actions.map((a) => a.title))}`);
  assert.equal(action.kind, 'quickfix');
  assert.equal(action.isPreferred, true);
  assert.equal(action.diagnostics[0].code, diag.code);
  const edits = action.edit.changes[uri];
  assert.ok(edits?.length, 'the edit changes this document');
  const newText = applyEdits(text, edits);
  const from = s.diagnostics.length;
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version },
    contentChanges: edits.map((e) => ({ range: e.range, text: e.newText })),
  });
  const after = await s.waitDiagnostics(uri, (p) => p.version === version, { from });
  return { newText, after };
}

test('code actions: the quick fixes of the article network and of keep_prob, applied and re-checked', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE);
  const first = await s.waitDiagnostics(uri);
  let text = ARTICLE_TEXT;

  const shape = first.diagnostics.find((d) => d.code === 'shape-mismatch');
  let r = await applyQuickFix(s, uri, text, 2, shape, 'Change in_channels to 9216');
  text = r.newText;
  assert.equal(text.split('\n')[13], '        self.fc1 = nn.Dense(9216, 128)');
  assert.deepEqual(r.after.diagnostics.map((d) => d.code), ['unknown-api']);

  const api = r.after.diagnostics[0];
  r = await applyQuickFix(s, uri, text, 3, api, 'Replace `ops.MaxPool2d` with `nn.MaxPool2d`');
  text = r.newText;
  assert.equal(text.split('\n')[11], '        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)');
  assert.deepEqual(r.after.diagnostics, []);
  assert.equal(text, FIXED_ARTICLE);

  // Only the diagnostics under the requested range: nothing on the class line.
  assert.deepEqual(
    await s.conn.sendRequest(CodeActionRequest.type, { textDocument: { uri }, range: { start: { line: 5, character: 0 }, end: { line: 5, character: 5 } }, context: { diagnostics: [] } }),
    [],
  );

  // keep_prob -> p on nn.Dropout (a deprecation warning with a fix).
  const dropout = path.join(corpus, 'buggy', 'deprecated_dropout.py');
  const dtext = read(dropout);
  const du = s.open(dropout);
  const dd = await s.waitDiagnostics(du);
  assert.equal(dd.diagnostics.length, 1);
  const dep = dd.diagnostics[0];
  assert.equal(dep.code, 'deprecated-argument');
  assert.equal(dep.severity, 2);
  assert.deepEqual(dep.tags, [2]); // Deprecated
  assert.equal(dtext.split('\n')[dep.range.start.line].slice(dep.range.start.character, dep.range.end.character), 'keep_prob=0.8');
  // `only` asking for other kinds: nothing.
  assert.deepEqual(
    await s.conn.sendRequest(CodeActionRequest.type, { textDocument: { uri: du }, range: dep.range, context: { diagnostics: [dep], only: ['refactor'] } }),
    [],
  );
  const dr = await applyQuickFix(s, du, dtext, 2, dep, 'Use p=0.2 instead of keep_prob=0.8');
  assert.match(dr.newText.split('\n')[9], /nn\.Dropout\(p=0\.2\)/);
  assert.deepEqual(dr.after.diagnostics, []);
  assert.equal(await s.stop(), 0);
});

test('completion: nn. and ops. members with signatures, keyword arguments inside a call', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE);
  await s.waitDiagnostics(uri);
  let version = 1;
  const insert = (line, text) =>
    s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
      textDocument: { uri, version: ++version },
      contentChanges: [{ range: { start: { line, character: 0 }, end: { line, character: 0 } }, text }],
    });
  const complete = (line, character) => s.conn.sendRequest(CompletionRequest.type, { textDocument: { uri }, position: { line, character } });

  // Typing does not wait for the analysis: these run on the text as it is now.
  await insert(16, '        self.a = nn.\n');
  let c = await complete(16, 20);
  assert.equal(c.isIncomplete, false);
  const conv = c.items.find((i) => i.label === 'Conv2d');
  assert.ok(conv, 'Conv2d offered after nn.');
  assert.equal(conv.kind, 7); // Class
  assert.match(conv.detail, /^nn\.Conv2d\(in_channels, out_channels, kernel_size, stride=1, pad_mode='same'/);
  assert.ok(c.items.some((i) => i.label === 'Dense'));
  assert.ok(!c.items.some((i) => i.label === 'relu'), 'ops functions are not nn members');
  assert.ok(!c.items.some((i) => i.label.startsWith('_')));

  await insert(17, '        self.b = ops.\n');
  c = await complete(17, 21);
  const relu = c.items.find((i) => i.label === 'relu');
  assert.ok(relu, 'relu offered after ops.');
  assert.equal(relu.kind, 3); // Function
  assert.match(relu.detail, /^ops\.relu\(input/);
  assert.ok(!c.items.some((i) => i.label === 'Conv2d'));

  await insert(18, '        self.c = nn.Dense(\n');
  c = await complete(18, 26);
  const labels = c.items.map((i) => i.label);
  assert.ok(labels.includes('in_channels='), labels.join(' '));
  assert.ok(labels.includes('out_channels='));
  assert.ok(labels.includes('has_bias='));
  assert.equal(c.items.find((i) => i.label === 'in_channels=').detail, 'required');
  assert.equal(c.items.find((i) => i.label === 'has_bias=').detail, 'default True');
  // Keywords already written are not offered again.
  await insert(19, '        self.e = nn.Dense(in_channels=3, \n');
  c = await complete(19, 41);
  assert.ok(!c.items.some((i) => i.label === 'in_channels='));
  assert.ok(c.items.some((i) => i.label === 'out_channels='));
  // A name that is not a module: nothing.
  await insert(20, '        self.f = foo.\n');
  assert.deepEqual((await complete(20, 21)).items, []);
  assert.equal(await s.stop(), 0);
});

test('signatureHelp: nn.Conv2d(1, has activeParameter 1', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE);
  await s.waitDiagnostics(uri);
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version: 2 },
    contentChanges: [{ range: { start: { line: 16, character: 0 }, end: { line: 16, character: 0 } }, text: '        self.d = nn.Conv2d(1, \n' }],
  });
  const sig = (character) => s.conn.sendRequest(SignatureHelpRequest.type, { textDocument: { uri }, position: { line: 16, character } });
  const h = await sig(30);
  assert.equal(h.activeSignature, 0);
  assert.equal(h.activeParameter, 1);
  const label = h.signatures[0].label;
  assert.match(label, /^nn\.Conv2d\(in_channels, out_channels, kernel_size, stride=1/);
  // Label offsets (the client supports them) point at the parameter names.
  const [a, b] = h.signatures[0].parameters[1].label;
  assert.equal(label.slice(a, b), 'out_channels');
  // Right after the parenthesis: parameter 0.
  assert.equal((await sig(27)).activeParameter, 0);
  // Outside any call: null.
  assert.equal(await s.conn.sendRequest(SignatureHelpRequest.type, { textDocument: { uri }, position: { line: 0, character: 5 } }), null);
  assert.equal(await s.stop(), 0);
});

test('definition: self.fc1 in construct jumps to its assignment in __init__', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE);
  await s.waitDiagnostics(uri);
  const d = await s.conn.sendRequest(DefinitionRequest.type, { textDocument: { uri }, position: posOf(ARTICLE_TEXT, 21, 'fc1', 1) });
  assert.equal(d.length, 1);
  assert.equal(d[0].uri, uri);
  assert.equal(d[0].range.start.line, 13);
  assert.equal(ARTICLE_TEXT.split('\n')[13].slice(d[0].range.start.character, d[0].range.end.character), 'nn.Dense(1600, 128)');
  // self.conv2 too; and a name with no definition: null.
  const d2 = await s.conn.sendRequest(DefinitionRequest.type, { textDocument: { uri }, position: posOf(ARTICLE_TEXT, 18, 'conv2', 1) });
  assert.equal(d2[0].range.start.line, 9);
  assert.equal(await s.conn.sendRequest(DefinitionRequest.type, { textDocument: { uri }, position: { line: 3, character: 0 } }), null);
  assert.equal(await s.stop(), 0);
});

for (const [label, files, mainName] of [
  ['absolute import', { 'blocks.py': { text: BLOCKS }, 'main.py': { text: mainPy('from blocks import Block') } }, 'main.py'],
  ['relative import', { 'pkg/__init__.py': { text: '' }, 'pkg/blocks.py': { text: BLOCKS }, 'pkg/main.py': { text: mainPy('from .blocks import Block') } }, 'pkg/main.py'],
]) {
  test(`definition across files (${label}): Block goes to blocks.py`, async (t) => {
    const ws = tempWorkspace(files);
    t.after(() => removeDir(ws));
    const s = await startSession({ folders: [ws] });
    t.after(() => s.dispose());
    const main = path.join(ws, mainName);
    const text = read(main);
    const uri = s.open(main);
    assert.deepEqual((await s.waitDiagnostics(uri)).diagnostics, []);
    const blocks = uriOf(path.join(path.dirname(main), 'blocks.py'));
    const use = lineOf(text, 'Block(3, 8)');
    const d = await s.conn.sendRequest(DefinitionRequest.type, { textDocument: { uri }, position: posOf(text, use, 'Block', 2) });
    assert.deepEqual(d, [{ uri: blocks, range: { start: { line: 3, character: 6 }, end: { line: 3, character: 11 } } }]);
    // The name in the import statement itself resolves too.
    const imp = lineOf(text, 'import Block');
    const d2 = await s.conn.sendRequest(DefinitionRequest.type, { textDocument: { uri }, position: posOf(text, imp, 'Block', 1) });
    assert.deepEqual(d2, d);
    // Shapes flow through the imported Cell.
    const h = await hoverAt(s, uri, posOf(text, lineOf(text, 'x = self.block(x)'), 'x ='));
    assert.match(h.contents.value, /x: \(1, 8, 32, 32\) f32/);
    assert.equal(await s.stop(), 0);
  });
}

test('executeCommand: cellscope.graphDocument returns the graph document; cellscope.setTarget changes the target', async (t) => {
  const s = await startSession();
  t.after(() => s.dispose());
  const uri = s.open(LENET);
  await s.waitDiagnostics(uri);
  const lens = (await s.conn.sendRequest(CodeLensRequest.type, { textDocument: { uri } })).find((l) => l.command.command === 'cellscope.visualizeGraph');
  const doc = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.graphDocument', arguments: lens.command.arguments });
  assert.equal(doc.target, 'cpu');
  assert.equal(doc.mindsporeVersion, '2.10.0');
  assert.equal(doc.cells.length, 1);
  const cell = doc.cells[0];
  assert.equal(cell.className, 'LeNet5');
  assert.equal(cell.params, 61684);
  assert.deepEqual(cell.inputs[0].shape, [1, 1, 32, 32]);
  assert.deepEqual(cell.outputs[0].shape, [1, 10]);
  const ops = cell.nodes.filter((n) => n.kind === 'op').map((n) => n.op);
  assert.deepEqual(ops.filter((o) => o === 'Conv2D').length, 2);
  const conv1 = cell.nodes.find((n) => n.id === 'conv1');
  assert.deepEqual(conv1.outputs[0].shape, [1, 6, 28, 28]);
  assert.deepEqual(conv1.inputs, [{ node: 'x', output: 0 }]);
  assert.equal(conv1.range.start.line, lineOf(LENET_TEXT, 'x = self.conv1(x)'));

  // Without a Cell name: every analysed Cell. With an unknown one: none.
  assert.equal((await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.graphDocument', arguments: [uri] })).cells.length, 1);
  assert.deepEqual((await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.graphDocument', arguments: [uri, 'Nope'] })).cells, []);
  // Errors: a document that is not open, no arguments, unknown commands, unknown targets.
  for (const [params, code] of [
    [{ command: 'cellscope.visualizeGraph', arguments: [uriOf('/nonexistent.py')] }, -32602],
    [{ command: 'cellscope.visualizeGraph' }, -32602],
    [{ command: 'cellscope.graphDocument', arguments: [uriOf('/nonexistent.py')] }, -32602],
    [{ command: 'cellscope.nope', arguments: [] }, -32602],
    [{ command: 'cellscope.setTarget', arguments: ['tpu'] }, -32602],
  ])
    await assert.rejects(s.conn.sendRequest(ExecuteCommandRequest.type, params), (e) => e.code === code, JSON.stringify(params));

  assert.deepEqual(await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.setTarget', arguments: ['Ascend'] }), { target: 'ascend910b' });
  const after = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.graphDocument', arguments: [uri, 'LeNet5'] });
  assert.equal(after.target, 'ascend910b');
  assert.deepEqual(after.cells[0].outputs[0].shape, [1, 10]);
  assert.equal(await s.stop(), 0);
});
