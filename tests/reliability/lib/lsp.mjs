// A minimal LSP client for the reliability runs: spawns `cellscope lsp`, talks to it through
// vscode-jsonrpc / vscode-languageserver-protocol (the libraries VS Code's client is built on),
// records every publishDiagnostics with its arrival time and every analysis timing the server
// reports in $/logTrace, and watches the process (crash = exit while in use).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  InitializeRequest,
  InitializedNotification,
  ShutdownRequest,
  ExitNotification,
  DidOpenTextDocumentNotification,
  DidChangeTextDocumentNotification,
  DidCloseTextDocumentNotification,
  PublishDiagnosticsNotification,
  LogTraceNotification,
  RegistrationRequest,
  WorkspaceFoldersRequest,
  ConfigurationRequest,
  WorkDoneProgressCreateRequest,
  DiagnosticRefreshRequest,
} from 'vscode-languageserver-protocol/node';

export const uriOf = (p) => pathToFileURL(p).href;

export class ServerGone extends Error {
  constructor(session, what) {
    super(`cellscope lsp exited (${session.exitStatus}) while waiting for ${what}`);
    this.kind = 'crash';
  }
}

export class Hang extends Error {
  constructor(what, ms) {
    super(`no answer after ${ms} ms waiting for ${what}`);
    this.kind = 'hang';
  }
}

// VS Code's capabilities, as far as these runs need them (UTF-16 positions: VS Code offers no
// other encoding).
const CAPABILITIES = {
  general: { positionEncodings: ['utf-16'] },
  textDocument: {
    synchronization: { didSave: true, dynamicRegistration: false },
    publishDiagnostics: { relatedInformation: true, versionSupport: true, codeDescriptionSupport: true, dataSupport: true },
  },
  workspace: { workspaceFolders: true },
  window: { workDoneProgress: true },
};

export class LspSession {
  // bin: the cellscope binary; root: the workspace folder (or null); debounceMs: 0 measures
  // the server's own latency (as cellscope-lsp-bench does).
  constructor({ bin, root = null, debounceMs = 0 }) {
    this.root = root;
    this.child = spawn(bin, ['lsp', '--debounce-ms', String(debounceMs)], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.pid = this.child.pid;
    this.stderrTail = '';
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (d) => {
      this.stderrTail = (this.stderrTail + d).slice(-8000);
    });
    this.child.stdin.on('error', () => {});
    this.exitStatus = null;
    this.stopping = false;
    this.child.on('exit', (code, signal) => {
      this.exitStatus = signal ? `signal ${signal}` : `code ${code}`;
      this.wake();
    });
    this.conn = createMessageConnection(new StreamMessageReader(this.child.stdout), new StreamMessageWriter(this.child.stdin));
    this.latest = new Map(); // uri -> last publish {version, diagnostics, at}
    this.published = new Map(); // `${uri}#${version}` -> {diagnostics, at}
    this.timings = new Map(); // `${path}#${version}` -> {ms, cpu}
    this.versionOrderErrors = [];
    this.waiters = [];
    this.conn.onNotification(PublishDiagnosticsNotification.type, (p) => {
      const at = performance.now();
      const prev = this.latest.get(p.uri);
      if (prev && p.version != null && prev.version != null && p.version < prev.version) {
        this.versionOrderErrors.push(`${p.uri}: version ${p.version} published after ${prev.version}`);
      }
      const rec = { version: p.version, diagnostics: p.diagnostics, at };
      this.latest.set(p.uri, rec);
      this.published.set(`${p.uri}#${p.version}`, rec);
      this.wake();
    });
    this.conn.onNotification(LogTraceNotification.type, (p) => {
      // "analysed /path/x.py v12 in 6.10 ms (cpu 5.80 ms)"
      const m = /^analysed (.*) v(-?\d+) in ([\d.]+) ms \(cpu ([\d.]+) ms\)/.exec(p.message);
      if (m) this.timings.set(`${m[1]}#${m[2]}`, { ms: Number(m[3]), cpu: Number(m[4]) });
    });
    const answer = (type, result) => this.conn.onRequest(type, (params) => (typeof result === 'function' ? result(params) : result));
    answer(RegistrationRequest.type, null);
    answer(WorkDoneProgressCreateRequest.type, null);
    answer(DiagnosticRefreshRequest.type, null);
    answer(WorkspaceFoldersRequest.type, () => (this.root ? [{ uri: uriOf(this.root), name: path.basename(this.root) }] : []));
    answer(ConfigurationRequest.type, (p) => p.items.map(() => null));
    this.conn.onNotification('$/progress', () => {});
    this.conn.onNotification('window/logMessage', () => {});
    this.conn.onError(() => {});
    this.conn.onClose(() => this.wake());
    this.conn.listen();
  }

  get alive() {
    return this.exitStatus === null;
  }

  wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  // Resolves with predicate()'s first truthy value; rejects with ServerGone if the process
  // exits first, with Hang after `ms`.
  until(predicate, what, ms) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(check);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new Hang(what, ms));
      }, ms);
      const check = () => {
        const v = predicate();
        if (v) {
          clearTimeout(timer);
          resolve(v);
        } else if (!this.alive) {
          clearTimeout(timer);
          reject(new ServerGone(this, what));
        } else {
          this.waiters.push(check);
        }
      };
      check();
    });
  }

  // `promise`, unless the server exits first (ServerGone) or `ms` pass (Hang).
  guard(promise, what, ms) {
    let done = false;
    const settle = () => {
      done = true;
      this.wake();
    };
    const watch = this.until(() => done, what, ms);
    return Promise.race([promise.finally(settle), watch]);
  }

  async initialize(ms = 30000) {
    const params = {
      processId: process.pid,
      clientInfo: { name: 'cellscope-reliability', version: '1' },
      rootUri: this.root ? uriOf(this.root) : null,
      capabilities: CAPABILITIES,
      workspaceFolders: this.root ? [{ uri: uriOf(this.root), name: path.basename(this.root) }] : null,
      trace: 'messages', // $/logTrace carries each analysis' wall and CPU time
    };
    await this.guard(this.conn.sendRequest(InitializeRequest.type, params), 'initialize', ms);
    await this.conn.sendNotification(InitializedNotification.type, {});
  }

  open(uri, text, version) {
    this.conn.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId: 'python', version, text },
    });
    return performance.now();
  }

  change(uri, version, contentChanges) {
    this.conn.sendNotification(DidChangeTextDocumentNotification.type, { textDocument: { uri, version }, contentChanges });
    return performance.now();
  }

  close(uri) {
    this.conn.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } });
  }

  // The publishDiagnostics of `uri` at exactly `version`.
  waitPublish(uri, version, ms) {
    const key = `${uri}#${version}`;
    return this.until(() => this.published.get(key), `publishDiagnostics of ${uri} version ${version}`, ms);
  }

  // Forget what was recorded for a document (keeps memory flat in long runs).
  forget(uri) {
    for (const k of this.published.keys()) if (k.startsWith(`${uri}#`)) this.published.delete(k);
    this.latest.delete(uri);
    const p = decodeURIComponent(new URL(uri).pathname);
    for (const k of this.timings.keys()) if (k.startsWith(`${p}#`)) this.timings.delete(k);
  }

  timing(file, version) {
    return this.timings.get(`${file}#${version}`);
  }

  // VmRSS of the server process in kB, from /proc/<pid>/status.
  rssKb() {
    const status = fs.readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return m ? Number(m[1]) : NaN;
  }

  async stop() {
    this.stopping = true;
    if (this.alive) {
      try {
        await this.guard(this.conn.sendRequest(ShutdownRequest.type), 'shutdown', 5000);
        await this.conn.sendNotification(ExitNotification.type);
        await this.until(() => !this.alive, 'exit', 5000).catch(() => {});
      } catch {
        // killed below
      }
    }
    if (this.alive) this.child.kill('SIGKILL');
    this.conn.dispose();
  }
}

// The diagnostics of `text` opened as `file` in a fresh server (workspace folder `root`).
export async function freshDiagnostics({ bin, root, file, text, ms }) {
  const s = new LspSession({ bin, root });
  try {
    await s.initialize(ms);
    const uri = uriOf(file);
    s.open(uri, text, 1);
    const p = await s.waitPublish(uri, 1, ms);
    return p.diagnostics;
  } finally {
    await s.stop();
  }
}

// The analysis CPU time of `text` opened as `file` in a fresh server, as typing pays it: the
// minimum over `runs` re-analyses of the same text (didChange replacing it with itself) after
// the first one; ms of CPU, from the server's $/logTrace.
export async function analysisCpu({ bin, root, file, text, ms, runs = 3 }) {
  const s = new LspSession({ bin, root });
  try {
    await s.initialize(ms);
    const uri = uriOf(file);
    s.open(uri, text, 1);
    await s.waitPublish(uri, 1, ms);
    let best = Infinity;
    for (let v = 2; v < 2 + runs; v++) {
      s.change(uri, v, [{ text }]);
      await s.waitPublish(uri, v, ms);
      const t = s.timing(file, v);
      if (t) best = Math.min(best, t.cpu);
    }
    return best;
  } finally {
    await s.stop();
  }
}
