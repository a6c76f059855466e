// Bad input, written as raw bytes: broken framing, invalid JSON / UTF-8 / JSON-RPC, unknown
// methods, requests before initialize, out-of-range positions, unknown documents, a 50 MB
// message; after each, the server must still answer the next request correctly. Also
// $/cancelRequest (through the real client library).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CancellationTokenSource, HoverRequest, DidChangeTextDocumentNotification } from 'vscode-languageserver-protocol/node';

import { RawClient, startSession, frame, read, uriOf, ARTICLE, sleep, withTimeout } from '../lib/harness.js';

const URI = uriOf(ARTICLE);
const TEXT = read(ARTICLE);

// A raw client with the article network open and analysed.
async function ready(t) {
  const c = new RawClient();
  t.after(() => c.dispose());
  const init = await c.initialize();
  assert.ok(init.result?.capabilities);
  await c.notify('textDocument/didOpen', { textDocument: { uri: URI, languageId: 'python', version: 1, text: TEXT } });
  await c.until((m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === URI, 'diagnostics');
  return c;
}

// The server still works: a hover on `x` in construct answers the right type.
async function stillWorks(c) {
  const r = await c.request('textDocument/hover', { textDocument: { uri: URI }, position: { line: 17, character: 8 } });
  assert.equal(r.error, undefined, JSON.stringify(r));
  assert.match(r.result.contents.value, /x: \(1, 32, 26, 26\) f32/);
  assert.equal(c.child.exitCode, null, 'the server is still running');
}

// The error responses with id null that arrived after message index `from`.
const nullIdErrors = (c, from) => c.messages.slice(from).filter((m) => m.id === null && m.error);

test('requests before initialize: ServerNotInitialized; notifications are dropped', async (t) => {
  const c = new RawClient();
  t.after(() => c.dispose());
  for (const method of ['textDocument/hover', 'shutdown', 'workspace/symbol']) {
    const r = await c.request(method, method === 'shutdown' ? null : { textDocument: { uri: URI }, position: { line: 0, character: 0 }, query: '' });
    assert.equal(r.error?.code, -32002, `${method}: ${JSON.stringify(r)}`);
  }
  // A string id is echoed back as is.
  const s = await c.request('textDocument/hover', {}, 'abc');
  assert.equal(s.id, 'abc');
  assert.equal(s.error.code, -32002);
  // didOpen before initialize is dropped: after initialize the document is unknown.
  await c.notify('textDocument/didOpen', { textDocument: { uri: URI, languageId: 'python', version: 1, text: TEXT } });
  assert.ok((await c.initialize()).result.capabilities);
  const h = await c.request('textDocument/hover', { textDocument: { uri: URI }, position: { line: 17, character: 8 } });
  assert.equal(h.result, null);
  assert.ok(!c.messages.some((m) => m.method === 'textDocument/publishDiagnostics'));
});

test('malformed headers are skipped; the next message is served', async (t) => {
  const c = await ready(t);
  for (const bad of [
    'Content-Lenght: 7\r\n\r\n{"a":1}', // misspelt: no Content-Length
    'Content-Length: abc\r\n\r\n{}',
    'Content-Length: -5\r\n\r\n{}',
    'Content-Length 12\r\n\r\n{"id":1}',
    'Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}',
    'garbage without any header at all\r\n\r\n',
    'X'.repeat(10000) + '\r\n\r\n', // a header line longer than the limit
  ]) {
    await c.write(bad);
    await stillWorks(c);
  }
  // Nothing in those was a request: no response was invented for them.
  assert.equal(c.messages.filter((m) => m.id === 1 && m.error).length, 0);
  // A bare "\n" line end and a Content-Type header are accepted.
  const body = JSON.stringify({ jsonrpc: '2.0', id: 'lf', method: 'textDocument/hover', params: { textDocument: { uri: URI }, position: { line: 17, character: 8 } } });
  await c.write(`Content-Type: application/vscode-jsonrpc; charset=utf-8\nContent-Length: ${Buffer.byteLength(body)}\n\n${body}`);
  assert.match((await c.response('lf')).result.contents.value, /\(1, 32, 26, 26\)/);
});

test('a Content-Length that is too short: ParseError with id null, then recovery', async (t) => {
  const c = await ready(t);
  const from = c.messages.length;
  const body = JSON.stringify({ jsonrpc: '2.0', id: 900, method: 'textDocument/hover', params: { textDocument: { uri: URI }, position: { line: 17, character: 8 } } });
  await c.write(`Content-Length: 20\r\n\r\n${body}`);
  await stillWorks(c);
  const errs = nullIdErrors(c, from);
  assert.equal(errs.length, 1, JSON.stringify(c.messages.slice(from)));
  assert.equal(errs[0].error.code, -32700);
  assert.equal(errs[0].jsonrpc, '2.0');
  // The truncated request itself cannot be answered (its id was cut off with the body).
  assert.ok(!c.messages.some((m) => m.id === 900));
});

test('invalid JSON and invalid UTF-8: ParseError with id null', async (t) => {
  const c = await ready(t);
  for (const [label, body] of [
    ['invalid JSON', Buffer.from('{"jsonrpc": "2.0", "id": 1, "method": ')],
    ['trailing garbage', Buffer.from('{"jsonrpc":"2.0","id":1,"method":"shutdown"} x')],
    ['invalid UTF-8', Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{"x":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}}')])],
    ['overlong UTF-8', Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":8,"method":"x","params":{"x":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}}')])],
    ['nesting too deep', Buffer.from('['.repeat(100000) + ']'.repeat(100000))],
  ]) {
    const from = c.messages.length;
    await c.write(frame(body));
    const err = await c.until((m, i) => m.id === null && m.error && c.messages.indexOf(m) >= from, label);
    assert.equal(err.error.code, -32700, label);
    await stillWorks(c);
  }
  // None of them was executed (the "shutdown" with trailing garbage included).
  const r = await c.request('workspace/symbol', { query: 'Net' });
  assert.equal(r.error, undefined);
});

test('invalid JSON-RPC: InvalidRequest; unknown methods: MethodNotFound; bad params: InvalidParams', async (t) => {
  const c = await ready(t);
  const expectError = async (message, code, id) => {
    const from = c.messages.length;
    await c.send(message);
    const r = await c.until((m) => c.messages.indexOf(m) >= from && m.error && m.id === id, JSON.stringify(message));
    assert.equal(r.error.code, code, JSON.stringify(message));
    assert.equal(typeof r.error.message, 'string');
    await stillWorks(c);
  };
  await expectError({ jsonrpc: '2.0', id: 11, method: 'cellscope/nonexistent', params: {} }, -32601, 11);
  await expectError({ jsonrpc: '2.0', id: 12, method: '$/nonexistent', params: {} }, -32601, 12);
  await expectError({ jsonrpc: '1.0', id: 13, method: 'textDocument/hover', params: {} }, -32600, 13);
  await expectError({ jsonrpc: '2.0', id: 14 }, -32600, 14);
  await expectError({ jsonrpc: '2.0', id: 15, method: 42 }, -32600, 15);
  await expectError({ jsonrpc: '2.0', id: 16, method: 'textDocument/hover', params: 'x' }, -32600, 16);
  await expectError({ jsonrpc: '2.0', id: { a: 1 }, method: 'shutdown' }, -32600, null);
  await expectError([{ jsonrpc: '2.0', id: 17, method: 'shutdown' }], -32600, null); // batches
  await expectError('"just a string"', -32600, null);
  // Params of the wrong shape.
  await expectError({ jsonrpc: '2.0', id: 18, method: 'textDocument/hover', params: { textDocument: { uri: URI } } }, -32602, 18);
  await expectError({ jsonrpc: '2.0', id: 19, method: 'textDocument/hover', params: { textDocument: { uri: URI }, position: { line: 'a', character: 0 } } }, -32602, 19);
  await expectError({ jsonrpc: '2.0', id: 20, method: 'textDocument/hover', params: { textDocument: { uri: URI }, position: { line: -1, character: 0 } } }, -32602, 20);
  await expectError({ jsonrpc: '2.0', id: 21, method: 'workspace/symbol', params: {} }, -32602, 21);
  // Unknown notifications get no response at all, and break nothing.
  const from = c.messages.length;
  await c.notify('cellscope/whatever', { a: 1 });
  await c.notify('$/whatever', { a: 1 });
  await stillWorks(c);
  assert.ok(!c.messages.slice(from).some((m) => m.error));
  // Malformed notifications of known methods: ignored (logged), the server keeps going.
  await c.notify('textDocument/didOpen', { textDocument: { uri: 42 } });
  await c.notify('textDocument/didChange', {});
  await c.notify('$/setTrace', { value: 7 });
  await stillWorks(c);
});

test('positions out of range: null or an error, never a crash', async (t) => {
  const c = await ready(t);
  const far = { line: 10000, character: 10000 };
  const td = { uri: URI };
  for (const [method, params] of [
    ['textDocument/hover', { textDocument: td, position: far }],
    ['textDocument/hover', { textDocument: td, position: { line: 17, character: 10000 } }],
    ['textDocument/definition', { textDocument: td, position: far }],
    ['textDocument/completion', { textDocument: td, position: far }],
    ['textDocument/signatureHelp', { textDocument: td, position: far }],
    ['textDocument/inlayHint', { textDocument: td, range: { start: far, end: { line: 20000, character: 0 } } }],
    ['textDocument/inlayHint', { textDocument: td, range: { start: { line: 30, character: 0 }, end: { line: 0, character: 0 } } }],
    ['textDocument/codeAction', { textDocument: td, range: { start: far, end: far }, context: { diagnostics: [] } }],
    ['textDocument/hover', { textDocument: td, position: { line: 4294967296, character: 0 } }],
  ]) {
    const r = await c.request(method, params);
    assert.ok(r.error === undefined || typeof r.error.code === 'number', JSON.stringify(r));
    if (!r.error) {
      const v = r.result;
      const empty = v === null || (Array.isArray(v) && v.length === 0) || (Array.isArray(v?.items) && v.items.length === 0);
      assert.ok(empty, `${method} at ${JSON.stringify(params.position ?? params.range)}: ${JSON.stringify(v)}`);
    }
    await stillWorks(c);
  }
  // A didChange whose range lies past the end of the text appends (clamped), it does not crash.
  await c.notify('textDocument/didChange', {
    textDocument: { uri: URI, version: 2 },
    contentChanges: [{ range: { start: far, end: far }, text: '\n# appended\n' }],
  });
  const p = await c.until((m) => m.method === 'textDocument/publishDiagnostics' && m.params.version === 2, 'diagnostics of version 2');
  assert.deepEqual(p.params.diagnostics.map((d) => d.code).sort(), ['shape-mismatch', 'unknown-api']);
  await stillWorks(c);
});

test('didChange / didClose for a document that is not open: ignored and logged', async (t) => {
  const c = await ready(t);
  const other = uriOf('/nonexistent/never_opened.py');
  const from = c.messages.length;
  await c.notify('textDocument/didChange', { textDocument: { uri: other, version: 3 }, contentChanges: [{ text: 'x = 1\n' }] });
  const log = await c.until((m) => c.messages.indexOf(m) >= from && m.method === 'window/logMessage', 'the logMessage');
  assert.equal(log.params.type, 2); // Warning
  assert.match(log.params.message, /never_opened\.py.*not open.*ignored/);
  await c.notify('textDocument/didClose', { textDocument: { uri: other } });
  await c.notify('textDocument/didSave', { textDocument: { uri: other }, text: 'x' });
  // A non-file URI is ignored with a message too.
  await c.notify('textDocument/didOpen', { textDocument: { uri: 'untitled:Untitled-1', languageId: 'python', version: 1, text: 'x = 1' } });
  await c.until((m) => m.method === 'window/logMessage' && /untitled:Untitled-1/.test(m.params.message), 'the untitled logMessage');
  const h = await c.request('textDocument/hover', { textDocument: { uri: other }, position: { line: 0, character: 0 } });
  assert.equal(h.result, null);
  await stillWorks(c);
  assert.ok(!c.messages.slice(from).some((m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === other && m.params.diagnostics.length));
});

test('a 50 MB message is refused with an error response (limit 32 MiB); the server carries on', async (t) => {
  const c = await ready(t);
  const size = 50 * 1000 * 1000;
  const head = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'huge', method: 'textDocument/didChange' }).slice(0, -1) + ',"params":{"pad":"');
  const tail = Buffer.from('"}}');
  const body = Buffer.alloc(size, 0x61);
  head.copy(body, 0);
  tail.copy(body, size - tail.length);
  const t0 = Date.now();
  await c.write(frame(body));
  const r = await c.response('huge', 30000);
  assert.equal(r.error.code, -32600);
  assert.match(r.error.message, /50000000 bytes exceeds the limit of 33554432 bytes/);
  await stillWorks(c);
  // Just over the limit too; a notification (no id) gets no response but does no harm.
  const over = Buffer.alloc((32 << 20) + 1, 0x20);
  Buffer.from('{"jsonrpc":"2.0","id":"over","method":"shutdown","x":"').copy(over, 0);
  Buffer.from('"}').copy(over, over.length - 2);
  await c.write(frame(over));
  assert.equal((await c.response('over', 30000)).error.code, -32600);
  const note = Buffer.alloc(40 << 20, 0x20);
  Buffer.from('{"jsonrpc":"2.0","method":"textDocument/didChange","x":"').copy(note, 0);
  Buffer.from('"}').copy(note, note.length - 2);
  await c.write(frame(note));
  await stillWorks(c);
  t.diagnostic(`50 MB + 32 MiB + 40 MiB refused in ${Date.now() - t0} ms`);
});

test('framing: messages split byte by byte, and many in one write', async (t) => {
  const c = await ready(t);
  const hover = (id) => frame({ jsonrpc: '2.0', id, method: 'textDocument/hover', params: { textDocument: { uri: URI }, position: { line: 17, character: 8 } } });
  const one = hover('split');
  for (let i = 0; i < one.length; i += 7) await c.write(one.subarray(i, i + 7));
  assert.match((await c.response('split')).result.contents.value, /\(1, 32, 26, 26\)/);
  const many = Buffer.concat(Array.from({ length: 50 }, (_, i) => hover(`m${i}`)));
  await c.write(many);
  for (let i = 0; i < 50; i++) assert.match((await c.response(`m${i}`)).result.contents.value, /\(1, 32, 26, 26\)/);
});

test('$/cancelRequest of a request waiting for an analysis answers RequestCancelled at once', async (t) => {
  // A long debounce keeps the hover waiting for the analysis of version 2.
  const s = await startSession({}, { args: ['--debounce-ms', '2000'] });
  t.after(() => s.dispose());
  const uri = s.open(ARTICLE);
  await s.waitDiagnostics(uri);
  await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version: 2 },
    contentChanges: [{ range: { start: { line: 13, character: 28 }, end: { line: 13, character: 32 } }, text: '9216' }],
  });
  const source = new CancellationTokenSource();
  const pending = s.conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position: { line: 17, character: 8 } }, source.token);
  await sleep(50);
  const cancelledAt = Date.now();
  source.cancel();
  const outcome = await withTimeout(
    pending.then(
      (result) => ({ result }),
      (error) => ({ error }),
    ),
    5000,
    'the cancelled hover',
  );
  const waited = Date.now() - cancelledAt;
  t.diagnostic(`answered after ${waited} ms`);
  assert.ok(outcome.error, 'a parked request is not answered with a result once cancelled');
  assert.equal(outcome.error.code, -32800, String(outcome.error));
  // Not held until the analysis (2 s debounce): answered when the cancellation arrived.
  assert.ok(waited < 1000, `answered after ${waited} ms`);
  // Cancelling something already answered, or an unknown id, is harmless.
  await s.conn.sendNotification('$/cancelRequest', { id: 123456 });
  await s.conn.sendNotification('$/cancelRequest', { id: null });
  const h = await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position: { line: 20, character: 8 } });
  assert.match(h.contents.value, /x: \(1, 9216\) f32/);
  assert.equal(await s.stop(), 0);
});

test('a lone surrogate in didOpen / didChange text (JSON.stringify writes "\\ud800") is read as U+FFFD', async (t) => {
  const c = await ready(t);
  const uri = uriOf('/tmp/cellscope_lone_surrogate.py');
  const from = c.messages.length;
  // An editor buffer cut inside an emoji: JSON.stringify escapes the lone surrogates.
  const text = "import mindspore.nn as nn\n\nLABEL = 'cut \ud83d'\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Dense(4, 2)\n\n    def construct(self, x):\n        return self.fc(x)\n";
  assert.match(JSON.stringify(text), /\\ud83d'/);
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
  const p1 = await c.until((m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === uri && m.params.version === 1, 'diagnostics of version 1');
  assert.deepEqual(p1.params.diagnostics, []);
  await c.notify('textDocument/didChange', {
    textDocument: { uri, version: 2 },
    contentChanges: [{ range: { start: { line: 2, character: 13 }, end: { line: 2, character: 13 } }, text: '\udc00 and nn.Relu' }],
  });
  await c.until((m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === uri && m.params.version === 2, 'diagnostics of version 2');
  assert.deepEqual(nullIdErrors(c, from), [], 'no ParseError');
  // The server holds U+FFFD where the surrogates were: a hover on `fc` answers, and an edit at
  // a column after them (UTF-16: U+FFFD is one unit, like the surrogate) lands where it should.
  const h = await c.request('textDocument/hover', { textDocument: { uri }, position: { line: 11, character: 21 } });
  assert.equal(h.error, undefined, JSON.stringify(h));
  await stillWorks(c);
});

test('parameters of the wrong type: the error names the member, what was expected and what was found', async (t) => {
  const c = await ready(t);
  for (const [params, message] of [
    [{ textDocument: { uri: URI }, position: { line: 'a', character: 0 } }, 'invalid params: params.position.line must be a number, but is a string'],
    [{ textDocument: { uri: URI }, position: { line: 1 } }, 'invalid params: params.position.character is missing'],
    [{ textDocument: { uri: URI }, position: { line: -1, character: 0 } }, 'invalid params: params.position: line must be between 0 and 4294967295, but is -1'],
    [{ textDocument: { uri: 7 }, position: { line: 1, character: 0 } }, 'invalid params: params.textDocument.uri must be a string, but is a number'],
    [{ textDocument: { uri: URI } }, 'invalid params: params.position is missing'],
  ]) {
    const r = await c.request('textDocument/hover', params);
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    assert.equal(r.error.message, message);
    assert.doesNotMatch(r.error.message, /json\.exception|type_error|out_of_range/);
  }
  await stillWorks(c);
});

test('"\\r", "\\n" and "\\r\\n" all end lines: diagnostics and positions agree across the three', async (t) => {
  const c = await ready(t);
  const lf = read(ARTICLE);
  const results = {};
  for (const [name, end] of [['lf', '\n'], ['crlf', '\r\n'], ['cr', '\r']]) {
    const uri = uriOf(`/tmp/cellscope_line_ends_${name}.py`);
    await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: lf.split('\n').join(end) } });
    const p = await c.until((m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === uri, `diagnostics of ${name}`);
    const hover = await c.request('textDocument/hover', { textDocument: { uri }, position: { line: 17, character: 8 } });
    results[name] = { diagnostics: p.params.diagnostics.map((d) => [d.code, d.range, d.message]), hover: hover.result?.contents?.value };
  }
  assert.deepEqual(results.lf.diagnostics.map((d) => d[0]).sort(), ['shape-mismatch', 'unknown-api']);
  assert.match(results.lf.hover, /x: \(1, 32, 26, 26\) f32/);
  assert.deepEqual(results.crlf, results.lf);
  assert.deepEqual(results.cr, results.lf);
});
