#!/usr/bin/env node
// Typing simulation on real code (issue 14): model files replayed into `cellscope lsp` one
// keystroke at a time (lib/typist.mjs: incremental didChange edits as VS Code sends them, typos,
// random deletions with undo, undo/redo of words, bursts), checking that
//   - the server never dies and never stops answering (a crash or a hang fails the run),
//   - the edit -> publishDiagnostics latency (debounce 0) has its p50 / p99 / max reported and no
//     publish is slower than the p99 goal: a publish whose analysis took more CPU time than the
//     goal is re-measured (the same text re-analysed in a fresh server, best of 3) and fails the
//     run unless its file is in known-slow.txt and within twice its worst listed there
//     (wall-clock latencies over the goal are listed too: on a shared machine they include
//     waiting for a core),
//   - publishes of a document never go back in version,
//   - the diagnostics published for the final text (and for one broken text mid-way through
//     each file) equal those a fresh server publishes when that text is opened.
//
// Usage: node tests/reliability/typing.mjs [options]
//   --set ci|full       ci (default): every corpus model + a seeded sample of mindcv and mindocr
//                       model files, 100 keystrokes each; full: every corpus model and every
//                       mindcv and mindocr model file, 400 keystrokes each
//   --files F           corpus | mindcv | mindocr | a .py file | a directory (repeatable;
//                       replaces the set's libraries)
//   --sample N          model files per library (0 = all; ci: 5)
//   --edits N           keystrokes per file (sizes the windows that are cut and retyped)
//   --whole             type each file from empty instead (every character of it)
//   --seed S            RNG seed (default: random; always printed)
//   --goal-ms MS        the p99 goal (default 30: ResNet-50 file, docs/benchmarks.md)
//   --timeout-ms MS     a publish slower than this is a hang (default 30000)
//   --no-compare        skip the fresh-server comparisons
//   --bin PATH          default $CELLSCOPE_BIN or build/cellscope
//   --src DIR           unpacked wheels (default $BUILD_DIR/realworld/src, as tests/realworld/run.sh
//                       leaves them)
//   --out DIR           reproductions of findings (default $BUILD_DIR/reliability)
//   --json-out FILE     the summary as JSON
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { LspSession, analysisCpu } from './lib/lsp.mjs';
import { Record, percentile, rngOf, typeFile } from './lib/typist.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const buildDir = path.resolve(repo, process.env.BUILD_DIR || 'build');

function parseArgs(argv) {
  const o = {
    set: 'ci',
    files: [],
    sample: null,
    edits: null,
    whole: false,
    seed: null,
    goalMs: 30,
    timeoutMs: 30000,
    compare: true,
    bin: process.env.CELLSCOPE_BIN || path.join(buildDir, 'cellscope'),
    src: path.join(buildDir, 'realworld', 'src'),
    out: path.join(buildDir, 'reliability'),
    jsonOut: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--set') o.set = v();
    else if (a === '--files') o.files.push(v());
    else if (a === '--sample') o.sample = Number(v());
    else if (a === '--edits') o.edits = Number(v());
    else if (a === '--whole') o.whole = true;
    else if (a === '--seed') o.seed = Number(v());
    else if (a === '--goal-ms') o.goalMs = Number(v());
    else if (a === '--timeout-ms') o.timeoutMs = Number(v());
    else if (a === '--no-compare') o.compare = false;
    else if (a === '--bin') o.bin = path.resolve(v());
    else if (a === '--src') o.src = path.resolve(v());
    else if (a === '--out') o.out = path.resolve(v());
    else if (a === '--json-out') o.jsonOut = path.resolve(v());
    else if (a === '-h' || a === '--help') {
      process.stdout.write(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\nimport ')[0]);
      process.exit(0);
    } else throw new Error(`unknown option ${a}`);
  }
  if (!['ci', 'full'].includes(o.set)) throw new Error('--set is ci or full');
  o.sample ??= o.set === 'ci' ? 5 : 0;
  o.edits ??= o.set === 'ci' ? 100 : 400;
  o.seed ??= Math.floor(Math.random() * 2 ** 31);
  if (!o.files.length) o.files = ['corpus', 'mindcv', 'mindocr'];
  return o;
}

const CONSTRUCT = /^\s*def construct\(/m;
function pyFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((x, y) => (x.name < y.name ? -1 : 1))) {
      if (e.name.startsWith('.') || e.name === '__pycache__' || e.name === 'node_modules') continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.py')) out.push(p);
    }
  };
  walk(dir);
  return out;
}

// [{name, root, files}]: the workspace folder each group of files is opened under.
function groups(o, rng) {
  const out = [];
  for (const f of o.files) {
    if (f === 'corpus') {
      const root = path.join(repo, 'tests', 'corpus');
      out.push({ name: 'corpus', root, files: pyFiles(root) }); // every corpus model, never sampled
    } else if (f === 'mindcv' || f === 'mindocr') {
      const root = path.join(o.src, f);
      if (!fs.existsSync(path.join(root, f))) {
        throw new Error(`${root}/${f} is missing: run tests/realworld/run.sh or tests/reliability/run.sh (they fetch the wheels), or pass --src`);
      }
      let files = pyFiles(path.join(root, f)).filter((p) => CONSTRUCT.test(fs.readFileSync(p, 'utf8')));
      if (o.sample > 0 && files.length > o.sample) {
        const pool = [...files];
        files = [];
        while (files.length < o.sample) files.push(...pool.splice(rng.int(pool.length), 1));
        files.sort();
      }
      out.push({ name: f, root, files });
    } else {
      const p = path.resolve(f);
      if (fs.statSync(p).isDirectory()) out.push({ name: f, root: p, files: pyFiles(p) });
      else out.push({ name: f, root: path.dirname(p), files: [p] });
    }
  }
  for (const g of out) {
    g.files = g.files.filter((p) => {
      if (!fs.readFileSync(p, 'utf8').includes('\r')) return true;
      console.log(`  not typed (CR line endings): ${p}`);
      return false;
    });
  }
  return out;
}

// known-slow.txt: `library/path  worst-ms` per line (# comments): files whose analysis is known
// to take more CPU than the goal, with the worst CPU time measured while typing into them.
function readKnownSlow(file) {
  const m = new Map();
  if (!fs.existsSync(file)) return m;
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const l = raw.replace(/#.*/, '').trim();
    if (!l) continue;
    const [k, worst] = l.split(/\s+/);
    m.set(k, Number(worst));
  }
  return m;
}

const fmt = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-');

function summary(rec) {
  return {
    files: rec.files,
    edits: rec.edits,
    publishes_awaited: rec.waits,
    latency_ms: { p50: percentile(rec.latency, 50), p90: percentile(rec.latency, 90), p99: percentile(rec.latency, 99), max: Math.max(...rec.latency) },
    analysis_cpu_ms: {
      p50: percentile(rec.cpu.filter(Number.isFinite), 50),
      p99: percentile(rec.cpu.filter(Number.isFinite), 99),
      max: Math.max(...rec.cpu.filter(Number.isFinite)),
    },
    over_goal_wall: rec.slow.length,
    over_goal_cpu: rec.slowCpu.length,
    compared: rec.compared,
    mismatches: rec.mismatches.length,
    crashes: rec.crashes.length,
    hangs: rec.hangs.length,
  };
}

function line(name, s, goal) {
  const l = s.latency_ms;
  const c = s.analysis_cpu_ms;
  return (
    `${name}: ${s.files} files, ${s.edits} edits, ${s.publishes_awaited} publishes awaited; ` +
    `latency p50 ${fmt(l.p50)} / p90 ${fmt(l.p90)} / p99 ${fmt(l.p99)} / max ${fmt(l.max)} ms ` +
    `(analysis CPU p50 ${fmt(c.p50)} / p99 ${fmt(c.p99)} / max ${fmt(c.max)} ms); ` +
    `over ${goal} ms: ${s.over_goal_wall} wall, ${s.over_goal_cpu} CPU; ` +
    `fresh comparisons ${s.compared}, mismatches ${s.mismatches}; crashes ${s.crashes}, hangs ${s.hangs}`
  );
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(o.bin)) throw new Error(`${o.bin} is not built`);
  const rng = rngOf(o.seed);
  console.log(`typing: seed ${o.seed} (replay: node tests/reliability/typing.mjs ${process.argv.slice(2).filter((a, i, xs) => a !== '--seed' && xs[i - 1] !== '--seed').join(' ')} --seed ${o.seed})`);
  console.log(`typing: ${o.whole ? 'whole files' : `${o.edits} keystrokes per file`}, goal p99 < ${o.goalMs} ms, binary ${o.bin}`);
  const t0 = Date.now();
  const gs = groups(o, rng);
  const total = new Record(o.goalMs);
  const per = {};
  for (const g of gs) {
    const rec = new Record(o.goalMs);
    per[g.name] = rec;
    console.log(`typing: ${g.name}: ${g.files.length} files under ${g.root}`);
    let session = null;
    for (const file of g.files) {
      if (!session) {
        session = new LspSession({ bin: o.bin, root: g.root });
        await session.initialize(o.timeoutMs);
      }
      const ft = Date.now();
      const e0 = rec.edits;
      try {
        await typeFile(session, { file, root: g.root }, { ...o, outDir: o.out }, rng, rec);
        console.log(`  ok ${path.relative(g.root, file)}: ${rec.edits - e0} edits, ${((Date.now() - ft) / 1000).toFixed(1)} s`);
      } catch (e) {
        const finding = { file, error: e.message, repro: e.repro, stderr: session.stderrTail.slice(-2000) };
        if (e.kind === 'hang') rec.hangs.push(finding);
        else rec.crashes.push(finding);
        console.log(`  FAILED ${path.relative(g.root, file)}: ${e.message}\n    reproduction: ${e.repro}\n    stderr: ${finding.stderr.trim().split('\n').slice(-5).join('\n    ')}`);
        await session.stop();
        session = null;
      }
    }
    if (session) await session.stop();
  }
  for (const rec of Object.values(per)) {
    for (const k of ['latency', 'cpu', 'slow', 'mismatches', 'crashes', 'hangs', 'versionOrder']) total[k].push(...rec[k]);
    for (const k of ['files', 'edits', 'waits', 'compared']) total[k] += rec[k];
  }
  const result = { seed: o.seed, set: o.set, edits_per_file: o.whole ? 'whole' : o.edits, goal_ms: o.goalMs, seconds: (Date.now() - t0) / 1000, groups: {}, total: summary(total) };
  console.log('\ntyping: summary');
  for (const [name, rec] of Object.entries(per)) {
    result.groups[name] = summary(rec);
    console.log('  ' + line(name, result.groups[name], o.goalMs));
  }
  console.log('  ' + line('all', result.total, o.goalMs));
  const slowWall = total.slow.length;
  if (slowWall) {
    const worst = [...total.slow].sort((a, b) => b.ms - a.ms).slice(0, 5);
    console.log(`  ${slowWall} publishes over ${o.goalMs} ms wall; slowest: ${worst.map((s) => `${path.basename(s.file)} v${s.version} ${s.ms} ms (CPU ${fmt(s.cpu)})`).join(', ')}`);
  }
  for (const m of total.mismatches) console.log(`  MISMATCH (incremental vs fresh, ${m.kind}): ${m.file} v${m.version}: ${m.repro}`);
  for (const v of total.versionOrder) console.log(`  VERSION ORDER: ${v}`);
  // Re-measure the analyses that took more CPU than the goal: a fresh server, the same text,
  // best of three (the machine is shared; the goal is judged on CPU time, docs/benchmarks.md).
  const known = readKnownSlow(path.join(here, 'known-slow.txt'));
  const keyOf = (s) => `${path.basename(s.root)}/${path.relative(s.root, s.file)}`;
  const seen = new Map();
  for (const s of total.slow.filter((x) => x.text)) {
    const k = `${s.file}\0${s.text}`;
    if (!seen.has(k) && seen.size < 40) {
      try {
        seen.set(k, await analysisCpu({ bin: o.bin, root: s.root, file: s.file, text: s.text, ms: o.timeoutMs }));
      } catch (e) {
        seen.set(k, NaN);
        console.log(`  re-measuring ${s.file} v${s.version} failed: ${e.message}`);
      }
    }
    if (seen.has(k)) s.cpu_remeasured = seen.get(k);
  }
  const confirmed = total.slow.filter((s) => s.cpu_remeasured > o.goalMs);
  const perFile = new Map();
  for (const s of confirmed) {
    const k = keyOf(s);
    const e = perFile.get(k) ?? { file: k, publishes: 0, cpu_ms: 0, known: known.get(k) ?? null, repro: null };
    e.publishes++;
    if (s.cpu_remeasured > e.cpu_ms) {
      e.cpu_ms = s.cpu_remeasured;
      e.version = s.version;
      e.text = s.text;
    }
    perFile.set(k, e);
  }
  const slowFiles = [...perFile.values()];
  for (const e of slowFiles) {
    if (o.out) {
      fs.mkdirSync(o.out, { recursive: true });
      e.repro = path.join(o.out, `slow-${e.file.replace(/[/\\]/g, '_')}`);
      fs.writeFileSync(e.repro, e.text);
    }
    delete e.text;
    e.regressed = e.known !== null && e.cpu_ms > 2 * e.known;
    const tag = e.known === null ? 'SLOW' : e.regressed ? 'SLOWER' : 'known slow';
    console.log(`  ${tag}: ${e.file}: ${e.publishes} publishes over ${o.goalMs} ms CPU re-measured, worst ${fmt(e.cpu_ms)} ms (v${e.version}; text: ${e.repro})${e.known !== null ? `; known-slow.txt: ${e.known} ms` : ''}`);
  }
  for (const s of total.slow) delete s.text;
  result.slow = total.slow;
  result.slow_files = slowFiles;
  result.mismatches = total.mismatches;
  result.crashes = total.crashes;
  result.hangs = total.hangs;
  const p99 = result.total.latency_ms.p99;
  const failures = [];
  if (total.crashes.length) failures.push(`${total.crashes.length} crashes`);
  if (total.hangs.length) failures.push(`${total.hangs.length} hangs`);
  if (total.mismatches.length) failures.push(`${total.mismatches.length} incremental/fresh mismatches`);
  if (total.versionOrder.length) failures.push(`${total.versionOrder.length} publishes out of version order`);
  const unknownSlow = slowFiles.filter((e) => e.known === null);
  if (unknownSlow.length) failures.push(`${unknownSlow.length} files with analyses over ${o.goalMs} ms CPU not in known-slow.txt`);
  const slower = slowFiles.filter((e) => e.regressed);
  if (slower.length) failures.push(`${slower.length} files over twice their worst in known-slow.txt`);
  result.failures = failures;
  console.log(`typing: ${result.seconds.toFixed(0)} s, seed ${o.seed}, p99 ${fmt(p99)} ms (goal ${o.goalMs}): ${failures.length ? `FAIL (${failures.join(', ')})` : 'PASS'}`);
  if (o.jsonOut) fs.writeFileSync(o.jsonOut, JSON.stringify(result, null, 1));
  process.exitCode = failures.length ? 1 : 0;
}

main().catch((e) => {
  console.error(`typing: ${e.stack || e}`);
  process.exit(2);
});
