#!/usr/bin/env node
// Debugging overhead of the train mode with no breakpoints (the goal: at most 10% over
// `cellscope train` on the same file and steps), and the time from launch to the first
// `cellscope.trainStep` event, on LeNet-5 (tests/training/scripts/lenet_model_train.py, batch 32)
// with generated MNIST-like data (mnist_data.mjs).
//
// For each run, alternately (so both see the same machine load):
//   plain  `cellscope train FILE --data DIR --steps N --format json`: the steps' own times (the
//          `ms` of each step, data loading included) summed, and the process' wall time;
//   debug  a `cellscope dap` session driven by DebugClient: initialize, launch {mode: "train",
//          same data and steps}, no breakpoints or filters, configurationDone, wait for
//          `terminated`; the steps' `stepMs` summed (hooks, events and Debug Console lines
//          included), the wall time from launch to the first trainStep event and to terminated.
// Reported: medians over --runs; overhead = debug step time / plain step time - 1.
//
//   node tests/dap/bench-train.mjs [--bin build/cellscope] [--runs 5] [--steps 40]
// Prints PASS/MISS against the goal; informational, exits 1 only when a run fails.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { writeMnist } from './mnist_data.mjs';

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
const RUNS = Number(arg('runs', '5'));
const STEPS = Number(arg('steps', '40'));
const LIMIT_PCT = 10;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cellscope-bench-train-'));
const FILE = path.join(tmp, 'lenet_model_train.py');
fs.copyFileSync(path.join(repo, 'tests/training/scripts/lenet_model_train.py'), FILE);
const DATA = writeMnist(path.join(tmp, 'mnist'), { train: 32 * STEPS, test: 64 });

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

function plain() {
  const t0 = performance.now();
  const r = spawnSync(BIN, ['train', FILE, '--data', DATA, '--steps', String(STEPS), '--format', 'json'],
    { encoding: 'utf8', maxBuffer: 64 << 20 });
  const wall = performance.now() - t0;
  if (r.status !== 0) throw new Error(`cellscope train failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout);
  if (out.steps.length !== STEPS) throw new Error(`cellscope train ran ${out.steps.length} steps`);
  return { steps: sum(out.steps.map((s) => s.ms)), wall, losses: out.steps.map((s) => s.loss) };
}

async function debug() {
  const dc = new DebugClient(BIN, 'dap', 'mindspore');
  dc.defaultTimeout = 600000;
  const events = [];
  let first = 0;
  dc.on('cellscope.trainStep', (ev) => {
    if (!events.length) first = performance.now();
    events.push(ev.body);
  });
  await dc.start();
  try {
    await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
    const t0 = performance.now();
    await dc.launchRequest({ program: FILE, mode: 'train', data: DATA, steps: STEPS });
    await dc.setExceptionBreakpointsRequest({ filters: [] });
    const terminated = dc.waitForEvent('terminated');
    await dc.configurationDoneRequest();
    await terminated;
    const end = performance.now();
    if (events.length !== STEPS) throw new Error(`the session sent ${events.length} trainStep events`);
    return { steps: sum(events.map((e) => e.stepMs)), first: first - t0, wall: end - t0, losses: events.map((e) => e.loss) };
  } finally {
    await dc.stop();
  }
}

const plains = [];
const debugs = [];
try {
  for (let i = 0; i < RUNS; ++i) {
    plains.push(plain());
    debugs.push(await debug());
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
// Same model, same batches, same numbers: the losses agree.
for (let k = 0; k < STEPS; ++k) {
  if (Math.abs(plains[0].losses[k] - debugs[0].losses[k]) > 1e-6 * Math.max(1, Math.abs(plains[0].losses[k]))) {
    console.error(`step ${k + 1}: cellscope train's loss ${plains[0].losses[k]} != the session's ${debugs[0].losses[k]}`);
    process.exit(1);
  }
}
const p = median(plains.map((r) => r.steps));
const d = median(debugs.map((r) => r.steps));
const overhead = (100 * (d / p - 1));
const fmt = (v) => v.toFixed(1);
console.log(`LeNet-5 (lenet_model_train.py, batch 32), ${STEPS} steps, median of ${RUNS} runs`);
console.log('| | cellscope train | cellscope dap, mode train |');
console.log('| --- | --- | --- |');
console.log(`| steps (sum of step times) | ${fmt(p)} ms | ${fmt(d)} ms |`);
console.log(`| process / session wall time | ${fmt(median(plains.map((r) => r.wall)))} ms | ${fmt(median(debugs.map((r) => r.wall)))} ms (launch -> terminated) |`);
console.log(`| launch -> first trainStep event | | ${fmt(median(debugs.map((r) => r.first)))} ms |`);
console.log(`overhead of the debugger's steps: ${overhead.toFixed(1)} % (goal <= ${LIMIT_PCT} %): ${overhead <= LIMIT_PCT ? 'PASS' : 'MISS'}`);
