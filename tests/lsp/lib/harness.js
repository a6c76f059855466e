// Shared helpers of the protocol tests: spawn `cellscope lsp`, connect a real LSP client
// (vscode-jsonrpc + vscode-languageserver-protocol), collect what the server pushes, make
// temporary workspaces from the corpus, and a raw framing client for malformed input.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  InitializeRequest,
  InitializedNotification,
  ShutdownRequest,
  ExitNotification,
  DidOpenTextDocumentNotification,
  PublishDiagnosticsNotification,
  LogMessageNotification,
  LogTraceNotification,
  ShowMessageNotification,
  RegistrationRequest,
  WorkspaceFoldersRequest,
  ConfigurationRequest,
  WorkDoneProgressCreateRequest,
  DiagnosticRefreshRequest,
} from 'vscode-languageserver-protocol/node';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const corpus = path.join(repoRoot, 'tests', 'corpus');
export const serverBin = path.resolve(repoRoot, process.env.CELLSCOPE_BIN || path.join('build', 'cellscope'));

export const ARTICLE = path.join(corpus, 'buggy', 'mnist_article_bug.py');

export const uriOf = (p) => pathToFileURL(p).href;
export const read = (p) => fs.readFileSync(p, 'utf8');

// A fresh directory holding copies of `files` ({name: source path or {text}}).
export function tempWorkspace(files = {}) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cellscope-lsp-')));
  for (const [name, src] of Object.entries(files)) {
    const dest = path.join(dir, name);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.writeFileSync(dest, typeof src === 'string' ? read(src) : src.text);
  }
  return dir;
}

export function removeDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The process's exit code (or the signal name) once it ends.
export function exitOf(child) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(child.exitCode ?? child.signalCode);
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
}

function spawnServer(args) {
  const child = spawn(serverBin, ['lsp', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderrText = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => {
    child.stderrText += d;
  });
  // Writes after the server exits must not crash the test process.
  child.stdin.on('error', () => {});
  return child;
}

// The capabilities of a capable editor (VS Code-like), overridable per test.
export function clientCapabilities({ pull = false, hierarchical = true, encodings } = {}) {
  const caps = {
    general: {},
    textDocument: {
      synchronization: { didSave: true, dynamicRegistration: false },
      hover: { contentFormat: ['markdown', 'plaintext'] },
      publishDiagnostics: { relatedInformation: true, versionSupport: true, codeDescriptionSupport: true, dataSupport: true },
      documentSymbol: { hierarchicalDocumentSymbolSupport: hierarchical },
      signatureHelp: { signatureInformation: { parameterInformation: { labelOffsetSupport: true } } },
      completion: { completionItem: { snippetSupport: false } },
      codeAction: { codeActionLiteralSupport: { codeActionKind: { valueSet: ['quickfix'] } } },
      inlayHint: {},
      codeLens: {},
      definition: { linkSupport: false },
    },
    workspace: { workspaceFolders: true, symbol: {}, executeCommand: {} },
    window: {},
  };
  if (encodings) caps.general.positionEncodings = encodings;
  if (pull) caps.textDocument.diagnostic = { dynamicRegistration: false, relatedDocumentSupport: false };
  return caps;
}

// A running server with a connected client. Everything the server pushes is recorded.
export class Session {
  constructor({ args = ['--debounce-ms', '0'] } = {}) {
    this.child = spawnServer(args);
    this.conn = createMessageConnection(
      new StreamMessageReader(this.child.stdout),
      new StreamMessageWriter(this.child.stdin),
    );
    this.diagnostics = []; // every publishDiagnostics params, in order
    this.logs = []; // window/logMessage params
    this.traces = []; // $/logTrace params
    this.shown = []; // window/showMessage params
    this.serverRequests = []; // [method, params]
    this.progress = []; // $/progress params
    this.waiters = [];
    this.exited = exitOf(this.child);
    const record = (list) => (params) => {
      list.push(params);
      this.wake();
    };
    this.conn.onNotification(PublishDiagnosticsNotification.type, record(this.diagnostics));
    this.conn.onNotification(LogMessageNotification.type, record(this.logs));
    this.conn.onNotification(LogTraceNotification.type, record(this.traces));
    this.conn.onNotification(ShowMessageNotification.type, record(this.shown));
    this.conn.onNotification('$/progress', record(this.progress));
    const answer = (type, result) =>
      this.conn.onRequest(type, (params) => {
        this.serverRequests.push([type.method, params]);
        this.wake();
        return typeof result === 'function' ? result(params) : result;
      });
    answer(RegistrationRequest.type, null);
    answer(WorkDoneProgressCreateRequest.type, null);
    answer(DiagnosticRefreshRequest.type, null);
    answer(WorkspaceFoldersRequest.type, []);
    answer(ConfigurationRequest.type, (p) => p.items.map(() => this.configuration ?? null));
    this.conn.onError(() => {});
    this.conn.onClose(() => this.wake());
    this.conn.listen();
  }

  wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  // Resolves with predicate()'s first truthy value, re-checked whenever something arrives.
  until(predicate, what, ms = 10000) {
    return withTimeout(
      new Promise((resolve) => {
        const check = () => {
          const v = predicate();
          if (v) resolve(v);
          else this.waiters.push(check);
        };
        check();
      }),
      ms,
      what,
    );
  }

  // The first publishDiagnostics for `uri` after index `from` (an earlier length of
  // this.diagnostics) that satisfies `pred`.
  waitDiagnostics(uri, pred = () => true, { from = 0, ms = 10000 } = {}) {
    return this.until(
      () => this.diagnostics.slice(from).find((d) => d.uri === uri && pred(d)),
      `publishDiagnostics for ${uri}`,
      ms,
    );
  }

  publishedFor(uri) {
    return this.diagnostics.filter((d) => d.uri === uri);
  }

  async initialize({ capabilities = clientCapabilities(), folders, initializationOptions, trace, rootUri } = {}) {
    const params = {
      processId: process.pid,
      clientInfo: { name: 'cellscope-lsp-tests', version: '1' },
      rootUri: rootUri ?? (folders?.length ? uriOf(folders[0]) : null),
      capabilities,
      workspaceFolders: folders ? folders.map((f) => ({ uri: uriOf(f), name: path.basename(f) })) : null,
    };
    if (initializationOptions !== undefined) params.initializationOptions = initializationOptions;
    if (trace) params.trace = trace;
    this.initResult = await this.conn.sendRequest(InitializeRequest.type, params);
    await this.conn.sendNotification(InitializedNotification.type, {});
    return this.initResult;
  }

  open(file, text = read(file), version = 1) {
    const uri = uriOf(file);
    this.conn.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId: 'python', version, text },
    });
    return uri;
  }

  // shutdown + exit; resolves with the exit code.
  async stop() {
    try {
      await withTimeout(this.conn.sendRequest(ShutdownRequest.type), 5000, 'shutdown');
      await this.conn.sendNotification(ExitNotification.type);
    } catch {
      // fall through to the kill below
    }
    const code = await withTimeout(this.exited, 5000, 'server exit').catch(() => {
      this.child.kill('SIGKILL');
      return 'killed';
    });
    this.conn.dispose();
    return code;
  }

  // For test.after(): never leaves a process behind.
  async dispose() {
    if (this.child.exitCode === null && this.child.signalCode === null) await this.stop();
  }
}

// Starts a session and initializes it.
export async function startSession(init = {}, opts = {}) {
  const s = new Session(opts);
  await s.initialize(init);
  return s;
}

// 0-based line of the first line containing `needle` (asserted to exist).
export function lineOf(text, needle, from = 0) {
  const lines = text.split('\n');
  for (let i = from; i < lines.length; i++) if (lines[i].includes(needle)) return i;
  throw new Error(`no line contains ${JSON.stringify(needle)}`);
}

// {line, character} of the `nth` occurrence of `needle` on line `line` (+ `offset`).
export function posOf(text, line, needle, offset = 0) {
  const col = text.split('\n')[line].indexOf(needle);
  if (col < 0) throw new Error(`line ${line} has no ${JSON.stringify(needle)}`);
  return { line, character: col + offset };
}

// Applies LSP TextEdits (single file) to a text (UTF-16 positions; our corpus is ASCII).
export function applyEdits(text, edits) {
  const lines = text.split('\n');
  const offset = (p) => {
    let o = 0;
    for (let i = 0; i < p.line; i++) o += lines[i].length + 1;
    return o + p.character;
  };
  const sorted = [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
  let out = text;
  for (const e of sorted) out = out.slice(0, offset(e.range.start)) + e.newText + out.slice(offset(e.range.end));
  return out;
}

// ---- raw framing client (for malformed input) ----------------------------------------------

// Parses "Content-Length" framed messages from a byte stream.
class FrameParser {
  constructor(onMessage) {
    this.buf = Buffer.alloc(0);
    this.onMessage = onMessage;
  }
  push(chunk) {
    this.buf = Buffer.concat([this.buf, chunk]);
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const header = this.buf.subarray(0, end).toString('ascii');
      const m = /content-length:\s*(\d+)/i.exec(header);
      if (!m) throw new Error(`server sent a bad header: ${header}`);
      const len = Number(m[1]);
      if (this.buf.length < end + 4 + len) return;
      const body = this.buf.subarray(end + 4, end + 4 + len).toString('utf8');
      this.buf = this.buf.subarray(end + 4 + len);
      this.onMessage(JSON.parse(body));
    }
  }
}

export const frame = (body) => {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
  return Buffer.concat([Buffer.from(`Content-Length: ${b.length}\r\n\r\n`, 'ascii'), b]);
};

// A client that writes bytes as given and reads framed JSON messages.
export class RawClient {
  constructor(args = ['--debounce-ms', '0']) {
    this.child = spawnServer(args);
    this.messages = [];
    this.waiters = [];
    this.nextId = 100000; // tests pick their own ids below this
    this.exited = exitOf(this.child);
    const parser = new FrameParser((m) => {
      this.messages.push(m);
      for (const w of this.waiters.splice(0)) w();
    });
    this.child.stdout.on('data', (d) => parser.push(d));
  }
  write(bytes) {
    return new Promise((resolve, reject) =>
      this.child.stdin.write(bytes, (err) => (err ? reject(err) : resolve())),
    );
  }
  send(message) {
    return this.write(frame(message));
  }
  until(predicate, what, ms = 10000) {
    return withTimeout(
      new Promise((resolve) => {
        const check = () => {
          const v = this.messages.find(predicate);
          if (v) resolve(v);
          else this.waiters.push(check);
        };
        check();
      }),
      ms,
      what,
    );
  }
  response(id, ms) {
    return this.until((m) => m.id === id && ('result' in m || 'error' in m), `the response to id ${JSON.stringify(id)}`, ms);
  }
  // Sends a request and resolves with its response message.
  async request(method, params, id = this.nextId++) {
    await this.send({ jsonrpc: '2.0', id, method, params });
    return this.response(id);
  }
  notify(method, params) {
    return this.send({ jsonrpc: '2.0', method, params });
  }
  async initialize(extra = {}) {
    const r = await this.request('initialize', { processId: null, rootUri: null, capabilities: {}, ...extra });
    await this.notify('initialized', {});
    return r;
  }
  async stop() {
    try {
      await this.request('shutdown', null);
      await this.notify('exit', null);
    } catch {
      // killed below
    }
    return withTimeout(this.exited, 5000, 'server exit').catch(() => {
      this.child.kill('SIGKILL');
      return 'killed';
    });
  }
  async dispose() {
    if (this.child.exitCode === null && this.child.signalCode === null) await this.stop();
  }
}

// Convenience for `node:test` suites: a session per test, always disposed.
export { fs, path, os };

// A two-file model: blocks.py defines Block (3x3 conv + ReLU, padding "same"), the main file
// imports it with `importLine` and feeds its 8x32x32 output to Dense(8 * 32 * 32, 10).
export const BLOCKS = `from mindspore import nn


class Block(nn.Cell):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.conv(x))
`;

export const mainPy = (importLine) => `import numpy as np
import mindspore as ms
from mindspore import nn
${importLine}


class Model(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block = Block(3, 8)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(8 * 32 * 32, 10)

    def construct(self, x):
        x = self.block(x)
        x = self.flatten(x)
        return self.fc(x)


if __name__ == "__main__":
    net = Model()
    print(net(ms.Tensor(np.ones((1, 3, 32, 32)), ms.float32)).shape)
`;
