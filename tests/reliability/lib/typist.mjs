// The typing simulation shared by typing.mjs and soak.mjs: replays a real model file into an
// open document of `cellscope lsp` the way an editor sends it -- one didChange per keystroke,
// incremental ranges (UTF-16, with rangeLength, as VS Code sends them) -- with typos and
// backspaces, random deletions anywhere in the file followed by undo, undo/redo of the word
// being typed, and bursts of keystrokes sent without waiting (the server cancels the analyses
// they supersede). Every edit is deterministic given the seed.
import fs from 'node:fs';
import path from 'node:path';

import { freshDiagnostics, uriOf } from './lsp.mjs';

// mulberry32: small, fast, and the same sequence on every platform.
export function rngOf(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  next.int = (n) => Math.floor(next() * n);
  next.pick = (xs) => xs[next.int(xs.length)];
  next.chance = (p) => next() < p;
  return next;
}

// A document as the client holds it: the text and the LSP change for an edit of it.
export class Doc {
  constructor(text) {
    this.text = text;
  }
  // {line, character} of a UTF-16 offset (JS strings are UTF-16, as LSP's default encoding).
  position(offset) {
    let line = 0;
    let lineStart = 0;
    for (let i = this.text.indexOf('\n'); i !== -1 && i < offset; i = this.text.indexOf('\n', i + 1)) {
      line++;
      lineStart = i + 1;
    }
    return { line, character: offset - lineStart };
  }
  // Replaces [start, end) with `text`; returns the TextDocumentContentChangeEvent.
  edit(start, end, text) {
    const change = {
      range: { start: this.position(start), end: this.position(end) },
      rangeLength: end - start,
      text,
    };
    this.text = this.text.slice(0, start) + text + this.text.slice(end);
    return change;
  }
}

const isHigh = (c) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c) => c >= 0xdc00 && c <= 0xdfff;
const isWordChar = (ch) => /[A-Za-z0-9_]/.test(ch);
const TYPOS = 'abcdefghijklmnopqrstuvwxyz0123456789_.,:()[]= ';

// The next keystroke of `t` at `pos` (before `end`): one code point, or Enter with the next
// line's indentation (auto-indent), or a line's leading indentation at once (Tab).
function nextUnit(t, pos, end) {
  const c = t.charCodeAt(pos);
  const ws = (i) => i < end && (t[i] === ' ' || t[i] === '\t');
  if (t[pos] === '\n') {
    let j = pos + 1;
    while (ws(j)) j++;
    return t.slice(pos, j);
  }
  if ((pos === 0 || t[pos - 1] === '\n') && ws(pos)) {
    let j = pos;
    while (ws(j)) j++;
    return t.slice(pos, j);
  }
  if (isHigh(c) && pos + 1 < end && isLow(t.charCodeAt(pos + 1))) return t.slice(pos, pos + 2);
  return t[pos];
}

// Non-overlapping windows of whole lines, in random order, of about `budget` characters in all.
export function pickWindows(text, budget, rng) {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) if (i + 1 < text.length) starts.push(i + 1);
  starts.push(text.length);
  const nLines = starts.length - 1;
  const windows = [];
  let total = 0;
  for (let tries = 0; total < budget && tries < 200; tries++) {
    const want = Math.min(budget - total, 20 + rng.int(400));
    let i = rng.int(nLines);
    let j = i + 1;
    while (j < nLines && starts[j] - starts[i] < want) j++;
    const [a, b] = [starts[i], starts[j]];
    if (b - a > Math.max(want * 2, 200)) continue; // one very long line: try elsewhere
    if (windows.some(([x, y]) => a < y && x < b)) continue;
    windows.push([a, b]);
    total += b - a;
  }
  return windows;
}

// Collects what every run reports.
export class Record {
  constructor(goalMs) {
    this.goalMs = goalMs;
    this.files = 0;
    this.edits = 0; // didChange notifications sent
    this.waits = 0; // edits whose publish was awaited (latency samples)
    this.latency = []; // edit -> publishDiagnostics, ms
    this.cpu = []; // the server's analysis CPU time for the same versions, ms
    this.slow = []; // publishes over the goal: {file, version, ms, cpu}
    this.compared = 0;
    this.mismatches = [];
    this.crashes = [];
    this.hangs = [];
    this.versionOrder = [];
  }
  get slowCpu() {
    return this.slow.filter((s) => s.cpu > this.goalMs);
  }
}

export function percentile(xs, p) {
  if (!xs.length) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

// Types windows of `file` into `session` (a fresh document: didOpen with the whole text, then
// each window cut and typed back, so the text ends equal to the file). Options:
//   edits       budget of keystrokes (sizes the windows); whole: one window, the whole file
//   compare     true: compare with a fresh server at the end and once mid-way (broken text);
//               'final': at the end only; false: never
//   bin         the binary (for the fresh servers); timeoutMs: a publish slower is a hang
//   onWait(rec) called after every awaited publish (the soak samples RSS there)
//   outDir      where repro files go
// Throws ServerGone / Hang (with .repro set) when the server dies or stops answering.
export async function typeFile(session, { file, root }, opts, rng, rec) {
  const original = fs.readFileSync(file, 'utf8');
  const uri = uriOf(file);
  const doc = new Doc(original);
  const log = { file, root, seed: opts.seed, open: original, edits: [] };
  let version = 1;
  rec.files++;
  const pTypo = opts.pTypo ?? 0.04;
  const pDelete = opts.pDelete ?? 0.03;
  const pUndo = opts.pUndo ?? 0.03;

  const fail = (e) => {
    e.repro = writeRepro(opts.outDir, e.kind ?? 'error', log, doc.text);
    e.file = file;
    throw e;
  };
  const wait = async (v, sentAt) => {
    let p;
    try {
      p = await session.waitPublish(uri, v, opts.timeoutMs);
    } catch (e) {
      fail(e);
    }
    const ms = p.at - sentAt;
    const t = session.timing(file, v);
    const cpu = t ? t.cpu : NaN;
    rec.waits++;
    rec.latency.push(ms);
    rec.cpu.push(cpu);
    if (ms > rec.goalMs) {
      const s = { file, root, version: v, ms: +ms.toFixed(2), cpu };
      // The text of an analysis over the goal in CPU time, to re-measure it (the first ones).
      if (cpu > rec.goalMs && rec.slowCpu.length < 50) s.text = doc.text;
      rec.slow.push(s);
    }
    if (opts.onWait) await opts.onWait(rec);
    return p;
  };
  // One didChange (not awaited); returns [version, sentAt].
  const send = (start, end, text) => {
    const change = doc.edit(start, end, text);
    version++;
    log.edits.push([version, start, end, text]);
    rec.edits++;
    return [version, session.change(uri, version, [change])];
  };
  const editAndWait = async (start, end, text) => {
    const [v, at] = send(start, end, text);
    return wait(v, at);
  };
  const compare = async (kind) => {
    const inc = session.published.get(`${uri}#${version}`);
    let fresh;
    try {
      fresh = await freshDiagnostics({ bin: opts.bin, root, file, text: doc.text, ms: opts.timeoutMs });
    } catch (e) {
      e.message = `fresh server: ${e.message}`;
      fail(e);
    }
    rec.compared++;
    const a = JSON.stringify(inc.diagnostics);
    const b = JSON.stringify(fresh);
    if (a !== b) {
      const dir = writeRepro(opts.outDir, 'mismatch', log, doc.text, { incremental: inc.diagnostics, fresh });
      rec.mismatches.push({ file, version, kind, repro: dir });
    }
  };

  session.open(uri, original, 1);
  try {
    await session.waitPublish(uri, 1, opts.timeoutMs);
  } catch (e) {
    fail(e);
  }

  const windows = opts.whole ? [[0, original.length]] : pickWindows(original, opts.edits, rng);
  const mid = opts.compare === true && windows.length ? { w: rng.int(windows.length), f: 0.2 + 0.6 * rng() } : null;
  for (let wi = 0; wi < windows.length; wi++) {
    const [a, b] = windows[wi];
    let midPos = mid && mid.w === wi ? Math.floor(a + mid.f * (b - a)) : -1;
    // Cut the window (a selection deleted), then type it back. The document is always
    // original[0:pos] + (what the disturbances leave, undone before moving on) + original[b:].
    await editAndWait(a, b, '');
    let pos = a;
    let wordStart = a;
    while (pos < b) {
      if (midPos >= 0 && pos >= midPos) {
        await compare('mid-edit');
        midPos = -1;
      }
      const r = rng();
      if (r < pTypo) {
        // A wrong key, then backspace (sometimes both before the server answers).
        const c = rng.pick(TYPOS);
        if (rng.chance(0.5)) {
          send(pos, pos, c);
          await editAndWait(pos, pos + 1, '');
        } else {
          await editAndWait(pos, pos, c);
          await editAndWait(pos, pos + 1, '');
        }
      } else if (r < pTypo + pDelete) {
        // Select something anywhere in the file (a line, or a span), delete it, then undo.
        const t = doc.text;
        let s;
        let e;
        if (rng.chance(0.5)) {
          s = t.lastIndexOf('\n', rng.int(t.length)) + 1;
          e = t.indexOf('\n', s);
          e = e === -1 ? t.length : e + 1;
        } else {
          s = rng.int(t.length + 1);
          e = Math.min(t.length, s + 1 + rng.int(60));
        }
        if (s > 0 && isLow(t.charCodeAt(s))) s--;
        if (e < t.length && isLow(t.charCodeAt(e))) e++;
        const removed = t.slice(s, e);
        await editAndWait(s, e, '');
        await editAndWait(s, s, removed);
      } else if (r < pTypo + pDelete + pUndo && pos > wordStart) {
        // Undo the word being typed (one change, as VS Code's undo sends), maybe redo it.
        const k = pos - wordStart;
        await editAndWait(wordStart, pos, '');
        pos = wordStart;
        if (rng.chance(0.5)) {
          await editAndWait(pos, pos, original.slice(pos, pos + k));
          pos += k;
        }
      } else {
        // A burst of keystrokes: only the last one's publish is awaited.
        const n = rng.chance(0.5) ? 1 : 2 + rng.int(opts.maxBurst ?? 6);
        let last;
        for (let i = 0; i < n && pos < b; i++) {
          const u = nextUnit(original, pos, b);
          last = send(pos, pos, u);
          pos += u.length;
          if (!isWordChar(u[u.length - 1])) wordStart = pos;
        }
        await wait(...last);
      }
    }
  }
  if (doc.text !== original) throw new Error(`internal: ${file} did not end as it began`);
  if (opts.compare) await compare('final');
  session.close(uri);
  session.forget(uri);
  for (const v of session.versionOrderErrors.splice(0)) rec.versionOrder.push(v);
}

let reproCount = 0;
// Writes what reproduces a finding: the file's opening text, every edit since, the text at the
// time, and extra JSON files. Returns the directory.
export function writeRepro(outDir, kind, log, text, extra = {}) {
  if (!outDir) return null;
  const dir = path.join(outDir, `${kind}-${++reproCount}`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'edits.json'), JSON.stringify(log));
  fs.writeFileSync(path.join(dir, 'text.py'), text);
  for (const [k, v] of Object.entries(extra)) fs.writeFileSync(path.join(dir, `${k}.json`), JSON.stringify(v, null, 1));
  return dir;
}
