#!/usr/bin/env node
// Soak (issue 14): one long-lived `cellscope lsp` takes N edits -- the typing simulation of
// lib/typist.mjs over a fixed cycle of model files, each opened, typed into and closed in turn --
// while its resident memory (VmRSS from /proc/<pid>/status) is sampled every K edits and at the
// end of every cycle. After the warm-up the RSS must stay flat within 10 % (below), the server
// must never die or stop answering, and the final text of the first file of every cycle must
// get the diagnostics a fresh server gives it.
//
// Usage: node tests/reliability/soak.mjs [options]
//   --edits N          didChange notifications in all (default 10000; the full soak: 100000)
//   --sample-every K   RSS sample period in edits (default N / 20)
//   --warmup F         fraction of the edits that is warm-up (default 0.1), and at least two
//                      whole cycles over the files (the heap grows to the largest file's working
//                      set during the first one)
//   Flat means: the highest every-K sample of the last window (10 %
//   of the edits after the warm-up, at least one cycle) exceeds the highest of the first window
//   by no more than the tolerance (a sample mid-cycle depends on which file is being analysed)
//   --tolerance F      allowed growth over the first sample after warm-up (default 0.10)
//   --per-file E       keystrokes typed into each file per visit (default 120)
//   --files F          .py files or directories (repeatable; default tests/corpus/models), opened
//                      under the workspace folder --root (default: tests/corpus)
//   --seed S           RNG seed (default: random; always printed). Every cycle over the files
//                      replays the same edits (the RNG restarts from the seed), so that a cycle
//                      needs no more memory than the one before unless something leaks
//   --vary             a new edit sequence every cycle instead
//   --goal-ms MS       the p99 latency goal reported against (default 30)
//   --bin PATH         default $CELLSCOPE_BIN or build/cellscope
//   --out DIR          reproductions of findings (default $BUILD_DIR/reliability)
//   --json-out FILE    the summary, with the whole RSS series, as JSON
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { LspSession } from './lib/lsp.mjs';
import { Record, percentile, rngOf, typeFile } from './lib/typist.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const buildDir = path.resolve(repo, process.env.BUILD_DIR || 'build');

function parseArgs(argv) {
  const o = {
    edits: 10000,
    sampleEvery: null,
    warmup: 0.1,
    tolerance: 0.1,
    perFile: 120,
    files: [],
    root: path.join(repo, 'tests', 'corpus'),
    seed: null,
    goalMs: 30,
    timeoutMs: 30000,
    bin: process.env.CELLSCOPE_BIN || path.join(buildDir, 'cellscope'),
    out: path.join(buildDir, 'reliability'),
    jsonOut: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--edits') o.edits = Number(v());
    else if (a === '--sample-every') o.sampleEvery = Number(v());
    else if (a === '--warmup') o.warmup = Number(v());
    else if (a === '--tolerance') o.tolerance = Number(v());
    else if (a === '--per-file') o.perFile = Number(v());
    else if (a === '--files') o.files.push(path.resolve(v()));
    else if (a === '--root') o.root = path.resolve(v());
    else if (a === '--seed') o.seed = Number(v());
    else if (a === '--vary') o.vary = true;
    else if (a === '--goal-ms') o.goalMs = Number(v());
    else if (a === '--bin') o.bin = path.resolve(v());
    else if (a === '--out') o.out = path.resolve(v());
    else if (a === '--json-out') o.jsonOut = path.resolve(v());
    else if (a === '-h' || a === '--help') {
      process.stdout.write(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\nimport ')[0]);
      process.exit(0);
    } else throw new Error(`unknown option ${a}`);
  }
  o.sampleEvery ??= Math.max(1, Math.round(o.edits / 20));
  o.seed ??= Math.floor(Math.random() * 2 ** 31);
  if (!o.files.length) o.files = [path.join(repo, 'tests', 'corpus', 'models')];
  const files = [];
  for (const f of o.files) {
    if (fs.statSync(f).isDirectory()) {
      for (const n of fs.readdirSync(f).sort()) if (n.endsWith('.py')) files.push(path.join(f, n));
    } else files.push(f);
  }
  o.files = files;
  return o;
}

const mb = (kb) => kb / 1024;
const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(o.bin)) throw new Error(`${o.bin} is not built`);
  let rng = rngOf(o.seed);
  console.log(`soak: seed ${o.seed}; ${o.edits} edits into one server over ${o.files.length} files (${o.perFile} keystrokes per visit), RSS every ${o.sampleEvery} edits, warm-up ${o.warmup * 100} %, tolerance ${o.tolerance * 100} %`);
  const t0 = Date.now();
  const session = new LspSession({ bin: o.bin, root: o.root });
  await session.initialize(o.timeoutMs);
  const rec = new Record(o.goalMs);
  const series = [{ edits: 0, rss_kb: session.rssKb(), seconds: 0 }];
  console.log(`  idle: ${fmt(mb(series[0].rss_kb))} MB`);
  let next = o.sampleEvery;
  const onWait = () => {
    if (rec.edits >= next) {
      const s = { edits: rec.edits, rss_kb: session.rssKb(), seconds: (Date.now() - t0) / 1000 };
      series.push(s);
      next += o.sampleEvery;
      console.log(`  ${s.edits} edits: ${fmt(mb(s.rss_kb))} MB (${fmt(s.seconds, 0)} s)`);
    }
  };
  let failure = null;
  let warmEnd = Infinity; // until two cycles are done
  let cycleEdits = NaN;
  const cycleEnds = []; // RSS at the end of every cycle: the same point of the same workload
  try {
    for (let visit = 0; rec.edits < o.edits; visit++) {
      if (visit > 0 && visit % o.files.length === 0) {
        cycleEnds.push({ edits: rec.edits, rss_kb: session.rssKb() });
        if (visit === o.files.length) cycleEdits = rec.edits;
      }
      if (visit === 2 * o.files.length) warmEnd = Math.max(o.warmup * o.edits, rec.edits);
      if (visit % o.files.length === 0 && !o.vary) rng = rngOf(o.seed);
      const file = o.files[visit % o.files.length];
      const compare = visit % o.files.length === 0 ? 'final' : false;
      await typeFile(session, { file, root: o.root }, { ...o, edits: o.perFile, compare, onWait, outDir: o.out }, rng, rec);
    }
  } catch (e) {
    failure = { file: e.file, kind: e.kind ?? 'error', error: e.message, repro: e.repro, stderr: session.stderrTail.slice(-2000) };
    console.log(`  FAILED: ${e.message}\n    reproduction: ${e.repro}`);
  }
  const last = { edits: rec.edits, rss_kb: session.alive ? session.rssKb() : NaN, seconds: (Date.now() - t0) / 1000 };
  console.log(`  ${last.edits} edits (end): ${fmt(mb(last.rss_kb))} MB`);
  if (series[series.length - 1].edits !== last.edits) series.push(last);
  await session.stop();

  // Flatness after the warm-up, two ways: (1) the RSS at the ends of the cycles (comparable
  // samples), last third against first third; (2) the
  // every-K series: its highest sample over the last window (10 % of the post-warm-up edits, at
  // least one cycle) against its highest over the first window -- high-water marks, since a
  // sample mid-cycle depends on which file is being analysed.
  const warm = series.filter((s) => s.edits >= warmEnd && s.edits > 0);
  const max = Math.max(...warm.map((s) => s.rss_kb));
  const min = Math.min(...warm.map((s) => s.rss_kb));
  const ends = cycleEnds.filter((s) => s.edits >= warmEnd);
  // Cycle ends compared by the median of the first and of the last third: the allocator takes
  // and returns a few MB around a cycle's end now and then (one such sample failed a 10,000-edit
  // run with either binary), while retained growth moves the whole last third.
  const median = (xs) => {
    const v = [...xs].sort((a, b) => a - b);
    return v.length ? v[Math.floor((v.length - 1) / 2)] : NaN;
  };
  const third = Math.max(1, Math.floor(ends.length / 3));
  const endBase = median(ends.slice(0, third).map((s) => s.rss_kb));
  const endGrowth = (median(ends.slice(-third).map((s) => s.rss_kb)) - endBase) / endBase;
  const span = warm.length ? warm[warm.length - 1].edits - warm[0].edits : 0;
  const win = Math.max(0.1 * span, cycleEdits || 0);
  const first = warm.filter((s) => s.edits <= warm[0].edits + win);
  const lastWin = warm.filter((s) => s.edits >= warm[warm.length - 1].edits - win);
  const base = Math.max(...first.map((s) => s.rss_kb));
  const growth = (Math.max(...lastWin.map((s) => s.rss_kb)) - base) / base;
  // Least-squares slope over the post-warm-up samples, MB per 10,000 edits.
  let slope = NaN;
  if (warm.length > 1) {
    const n = warm.length;
    const mx = warm.reduce((a, s) => a + s.edits, 0) / n;
    const my = warm.reduce((a, s) => a + s.rss_kb, 0) / n;
    const sxy = warm.reduce((a, s) => a + (s.edits - mx) * (s.rss_kb - my), 0);
    const sxx = warm.reduce((a, s) => a + (s.edits - mx) ** 2, 0);
    slope = mb((sxy / sxx) * 10000);
  }
  // Judged on the high-water marks only: the cycle-end samples swing by 10 % from one cycle to
  // the next with the allocator (28.1 -> 31.6 MB in a 10,000-edit run whose high-water marks
  // moved 1 %), so they are reported, not judged.
  const flat = warm.length > 1 && ends.length > 1 && growth <= o.tolerance;
  const result = {
    seed: o.seed,
    edits: rec.edits,
    files_visited: rec.files,
    files: o.files.map((f) => path.relative(repo, f)),
    seconds: (Date.now() - t0) / 1000,
    rss: {
      idle_mb: mb(series[0].rss_kb),
      warmup_edits: Number.isFinite(warmEnd) ? Math.round(warmEnd) : null,
      cycle_edits: cycleEdits,
      window_edits: Math.round(win),
      first_window_max_mb: mb(base),
      last_window_max_mb: mb(Math.max(...lastWin.map((s) => s.rss_kb))),
      cycle_end_first_third_median_mb: mb(endBase),
      cycle_end_max_mb: mb(Math.max(...ends.map((s) => s.rss_kb))),
      cycle_end_last_mb: ends.length ? mb(ends[ends.length - 1].rss_kb) : NaN,
      cycle_end_growth: endGrowth,
      min_after_warmup_mb: mb(min),
      max_after_warmup_mb: mb(max),
      final_mb: mb(last.rss_kb),
      growth_over_baseline: growth,
      slope_mb_per_10k_edits: slope,
      flat,
      series: series.map((s) => [s.edits, +mb(s.rss_kb).toFixed(2)]),
      cycle_end_series: cycleEnds.map((s) => [s.edits, +mb(s.rss_kb).toFixed(2)]),
    },
    latency_ms: { p50: percentile(rec.latency, 50), p90: percentile(rec.latency, 90), p99: percentile(rec.latency, 99), max: Math.max(...rec.latency) },
    analysis_cpu_ms: { p50: percentile(rec.cpu.filter(Number.isFinite), 50), p99: percentile(rec.cpu.filter(Number.isFinite), 99), max: Math.max(...rec.cpu.filter(Number.isFinite)) },
    publishes_awaited: rec.waits,
    slowest: [...rec.slow].sort((a, b) => b.ms - a.ms).slice(0, 20),
    compared: rec.compared,
    mismatches: rec.mismatches,
    version_order: rec.versionOrder,
    failure,
  };
  const failures = [];
  if (failure) failures.push(`${failure.kind}: ${failure.error}`);
  if (!Number.isFinite(warmEnd)) failures.push('too few edits for two cycles of warm-up over the files');
  else if (!flat) failures.push(`RSS grew after the warm-up: ${fmt(growth * 100)} % (high-water marks; cycle ends ${fmt(endGrowth * 100)} %, not judged); limit ${o.tolerance * 100} %`);
  if (rec.mismatches.length) failures.push(`${rec.mismatches.length} incremental/fresh mismatches`);
  if (rec.versionOrder.length) failures.push(`${rec.versionOrder.length} publishes out of version order`);
  result.failures = failures;
  const r = result.rss;
  console.log(
    `soak: ${rec.edits} edits in ${fmt(result.seconds, 0)} s (${rec.files} file visits, ${rec.waits} publishes awaited); ` +
      `RSS idle ${fmt(r.idle_mb)} MB; after the warm-up (${r.warmup_edits} edits) min ${fmt(r.min_after_warmup_mb)} / max ${fmt(r.max_after_warmup_mb)} / final ${fmt(r.final_mb)} MB, ` +
      `high-water first ${fmt(r.first_window_max_mb)} -> last ${fmt(r.last_window_max_mb)} MB (${fmt(growth * 100)} %), ` +
      `cycle ends ${fmt(r.cycle_end_first_third_median_mb)} -> ${fmt(r.cycle_end_last_mb)} MB (max ${fmt(r.cycle_end_max_mb)}, ${fmt(endGrowth * 100)} %), slope ${fmt(slope, 2)} MB per 10k edits; ` +
      `latency p50 ${fmt(result.latency_ms.p50)} / p99 ${fmt(result.latency_ms.p99)} / max ${fmt(result.latency_ms.max)} ms; ` +
      `fresh comparisons ${rec.compared}, mismatches ${rec.mismatches.length}`,
  );
  console.log(`soak: seed ${o.seed}: ${failures.length ? `FAIL (${failures.join('; ')})` : 'PASS'}`);
  if (o.jsonOut) fs.writeFileSync(o.jsonOut, JSON.stringify(result, null, 1));
  process.exitCode = failures.length ? 1 : 0;
}

main().catch((e) => {
  console.error(`soak: ${e.stack || e}`);
  process.exit(2);
});
