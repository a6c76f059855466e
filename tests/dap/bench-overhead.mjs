#!/usr/bin/env node
// Debugging overhead with no breakpoints set (the goal: under 10% over a plain run).
//
// For each model, alternately (so both see the same machine load):
//   plain  `cellscope-run FILE --input-shape S --seed 0 --timing`: a fresh process that analyses
//          the file, initialises the parameters and random input, runs the graph once; it prints
//          its own analysis / bind / run times;
//   debug  a full `cellscope dap` session driven by @vscode/debugadapter-testsupport's DebugClient
//          (the client the protocol tests use): initialize, launch (same model, inputs, seed),
//          setExceptionBreakpoints with no filter, no setBreakpoints, configurationDone, wait for
//          `terminated`.
// Both runtimes are single-threaded (Eigen without OpenMP): 1 thread on each side.
// Reported, medians over --runs sessions:
//   fixed cost  plain: analysis + bind; debug: process start + initialize + launch (analysis,
//               compile, parameters) as the client sees it;
//   run         plain: the run as timed by cellscope-run; debug: the run as timed by the adapter
//               ("cellscope: ran N nodes in X ms", hooks included) and, as the client sees it,
//               configurationDone -> terminated (adds the output statistics and the events);
//   overhead    debug run / plain run - 1, for the adapter-timed and the client-timed run.
//
//   node tests/dap/bench-overhead.mjs [--bin build/cellscope] [--run build/bench/cellscope-run]
//        [--runs 10] [--format markdown|json] [--only lenet5|resnet50]
// Prints PASS/MISS against the goal (adapter-timed run overhead < 10%), informational like the
// other benchmarks; exits 1 only if the two runs disagree on the output (not the same model run).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const require = createRequire(path.join(here, 'package.json'));
const { DebugClient } = require('@vscode/debugadapter-testsupport');

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}
const abs = (p) => (path.isAbsolute(p) ? p : path.join(repo, p));
const BIN = abs(arg('bin', process.env.CELLSCOPE_BIN || 'build/cellscope'));
const RUN = abs(arg('run', path.join(path.dirname(BIN), 'bench/cellscope-run')));
const RUNS = Number(arg('runs', '10'));
const FORMAT = arg('format', 'markdown');
const ONLY = arg('only', '');
const LIMIT_PCT = 10;

const CASES = [
  { name: 'LeNet-5, batch 64', key: 'lenet5', file: 'tests/corpus/models/lenet5.py', shape: '64,1,32,32' },
  { name: 'ResNet-50, batch 1', key: 'resnet50', file: 'tests/corpus/models/resnet50.py', shape: '1,3,224,224' },
].filter((c) => !ONLY || c.key === ONLY);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function plainRun(c) {
  const t0 = performance.now();
  const r = spawnSync(RUN, [abs(c.file), '--input-shape', c.shape, '--seed', '0', '--timing'], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  const wall = performance.now() - t0;
  if (r.status !== 0) throw new Error(`cellscope-run failed (${r.status}): ${r.stderr}`);
  const line = r.stdout.split('\n').find((l) => l.startsWith('timing '));
  const t = JSON.parse(line.slice(7));
  return { fixed: t.analysis_ms + t.bind_ms, run: t.run_ms, wall, output: r.stdout.split('\n').find((l) => l.startsWith('output 0:')) };
}

async function debugRun(c) {
  const dc = new DebugClient(BIN, 'dap', 'mindspore');
  dc.defaultTimeout = 600000;
  const outputs = [];
  dc.on('output', (ev) => outputs.push(ev.body.output));
  const t0 = performance.now();
  await dc.start();
  try {
    await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
    await dc.launchRequest({ program: abs(c.file), inputs: [c.shape], seed: 0 });
    await dc.setExceptionBreakpointsRequest({ filters: [] });
    const t1 = performance.now();
    await Promise.all([dc.waitForEvent('terminated'), dc.configurationDoneRequest()]);
    const t2 = performance.now();
    const ran = outputs.map((o) => /cellscope: ran (\d+) nodes in ([\d.e+-]+) ms/.exec(o)).find(Boolean);
    if (!ran) throw new Error(`no run report in the session's output:\n${outputs.join('')}`);
    return { fixed: t1 - t0, run: Number(ran[2]), client: t2 - t1, output: outputs.find((o) => o.startsWith('output 0:'))?.trim() };
  } finally {
    await dc.stop();
  }
}

const results = [];
for (const c of CASES) {
  const plain = [], debug = [];
  plainRun(c); // warm-up: page cache, lazy binding
  for (let i = 0; i < RUNS; i++) {
    plain.push(plainRun(c));
    debug.push(await debugRun(c));
  }
  // Same model, seed and input on both sides: the same numbers (min/max of output 0).
  const stat = (line, k) => Number(new RegExp(`${k}=(\\S+)`).exec(line ?? '')?.[1]);
  const same = ['min', 'max'].every((k) => {
    const a = stat(plain[0].output, k), b = stat(debug[0].output, k);
    return Number.isFinite(a) && Math.abs(a - b) <= 1e-4 * Math.max(1e-6, Math.abs(a));
  });
  const r = {
    model: c.name,
    runs: RUNS,
    threads: 1,
    plain_fixed_ms: median(plain.map((p) => p.fixed)),
    plain_run_ms: median(plain.map((p) => p.run)),
    debug_fixed_ms: median(debug.map((d) => d.fixed)),
    debug_run_ms: median(debug.map((d) => d.run)),
    debug_run_client_ms: median(debug.map((d) => d.client)),
    same_output: same,
  };
  r.overhead_pct = 100 * (r.debug_run_ms / r.plain_run_ms - 1);
  r.overhead_client_pct = 100 * (r.debug_run_client_ms / r.plain_run_ms - 1);
  results.push(r);
  process.stderr.write(`bench-overhead: ${c.name} done\n`);
}

const f = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(1));
if (FORMAT === 'json') {
  console.log(JSON.stringify(results, null, 1));
} else {
  console.log(`Debugging overhead, no breakpoints (median of ${RUNS} sessions each; 1 thread; goal: run overhead < ${LIMIT_PCT}%)\n`);
  console.log('| model | plain: analysis+bind ms | debug: start+initialize+launch ms | plain run ms | debug run ms (adapter) | overhead | debug run ms (client: configurationDone -> terminated) | overhead (client) | same output |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const r of results)
    console.log(`| ${r.model} | ${f(r.plain_fixed_ms)} | ${f(r.debug_fixed_ms)} | ${f(r.plain_run_ms)} | ${f(r.debug_run_ms)} | ${r.overhead_pct.toFixed(1)}% | ${f(r.debug_run_client_ms)} | ${r.overhead_client_pct.toFixed(1)}% | ${r.same_output ? 'yes' : 'NO'} |`);
}
for (const r of results)
  process.stderr.write(`bench-overhead: ${r.model}: run overhead ${r.overhead_pct.toFixed(1)}% (adapter-timed): ${r.overhead_pct < LIMIT_PCT ? 'PASS' : 'MISS'} (goal < ${LIMIT_PCT}%)\n`);
const differ = results.filter((r) => !r.same_output);
if (differ.length) {
  process.stderr.write(`bench-overhead: the plain and the debug run gave different outputs: ${differ.map((r) => r.model).join(', ')}\n`);
  process.exit(1);
}
