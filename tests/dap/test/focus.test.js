// The graph view focus of `cellscope dap`: every stop sends the custom event `cellscope.focus`
// (view.proto's DebugFocus in JSON: the program, the root Cell, the semantic node id, op, line and
// the live tensor's statistics), every resume a cleared one (empty node), terminate too. Driven by
// @vscode/debugadapter-testsupport's DebugClient against the real binary.
import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import testsupport from '@vscode/debugadapter-testsupport';

const { DebugClient } = testsupport;
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const BIN = process.env.CELLSCOPE_BIN || path.join(repo, 'build/cellscope');
const LENET = path.join(repo, 'tests/corpus/models/lenet5.py');
const NAN_MODEL = path.join(repo, 'tests/dap/fixtures/nan_model.py');

function lineOf(file, re) {
  const i = fs.readFileSync(file, 'utf8').split('\n').findIndex((l) => re.test(l));
  assert.ok(i >= 0, `no line matching ${re} in ${file}`);
  return i + 1;
}
const CONV2 = lineOf(LENET, /x = self\.conv2\(x\)/);
const FC3 = lineOf(LENET, /x = self\.fc3\(x\)/);

let dc;
let focuses;
beforeEach(async () => {
  dc = new DebugClient(BIN, 'dap', 'mindspore');
  dc.defaultTimeout = 60000;
  focuses = [];
  dc.on('cellscope.focus', (e) => focuses.push(e.body));
  await dc.start();
});
afterEach(async () => {
  await dc.stop();
});

async function start(launchArgs, { breakpoints = [], filters = [] } = {}) {
  await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
  const launched = dc.launchRequest(launchArgs);
  if (breakpoints.length) {
    await dc.setBreakpointsRequest({ source: { path: launchArgs.program }, breakpoints: breakpoints.map((line) => ({ line })) });
  }
  await dc.setExceptionBreakpointsRequest({ filters });
  await launched;
}

async function stopped(reason, request) {
  const [ev] = await Promise.all([dc.waitForEvent('stopped'), request()]);
  assert.equal(ev.body.reason, reason, JSON.stringify(ev.body));
  return ev;
}

const evalNumber = async (expr) => Number((await dc.evaluateRequest({ expression: expr, context: 'watch' })).body.result);
const close = (a, b) => Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(b));

describe('cellscope dap: graph view focus', () => {
  test('a breakpoint stop names the node with the statistics of the tensor flowing into it; continue clears it', async () => {
    await start({ program: LENET, inputs: ['1,1,32,32'], seed: 1 }, { breakpoints: [CONV2, FC3] });
    assert.equal(focuses.length, 0, 'no focus before the run stops');
    await stopped('breakpoint', () => dc.configurationDoneRequest());
    assert.equal(focuses.length, 1, JSON.stringify(focuses));
    const f = focuses[0];
    assert.equal(f.file, fs.realpathSync(LENET));
    assert.equal(f.cell, 'LeNet5');
    assert.equal(f.node, 'conv2');  // the semantic id graphcore gives the view
    assert.equal(f.op, 'Conv2D');
    assert.equal(f.scope, 'conv2');
    assert.equal(f.line, CONV2);
    assert.equal(f.source, fs.realpathSync(LENET));
    assert.equal(f.reason, 'breakpoint');
    assert.equal(f.ran, false);  // stopped before the line runs: the stats are its input's
    assert.match(f.tensor, /max_pool2d/);
    assert.deepEqual(f.shape, [1, 6, 14, 14]);
    assert.equal(f.dtype, 'float32');
    assert.equal(f.stats.numel, 6 * 14 * 14);
    assert.equal(f.stats.nan, 0);
    assert.equal(f.stats.inf, 0);
    // The same numbers as the debugger's own evaluation of that tensor.
    for (const k of ['min', 'max', 'mean', 'std']) {
      const v = await evalNumber(`${f.tensor}.${k}()`);
      assert.ok(close(f.stats[k], v), `${k}: focus ${f.stats[k]}, evaluate ${v}`);
    }
    assert.ok(f.stats.min >= 0, 'after a ReLU and a max pool');

    // Continue: cleared as the run resumes, then the next breakpoint focuses fc3.
    await stopped('breakpoint', () => dc.continueRequest({ threadId: 1 }));
    assert.equal(focuses.length, 3, JSON.stringify(focuses.map((x) => x.node)));
    assert.equal(focuses[1].node ?? '', '');
    assert.equal(focuses[1].file, f.file);
    assert.equal(focuses[2].node, 'fc3');
    assert.equal(focuses[2].line, FC3);
    assert.deepEqual(focuses[2].shape, [1, 84]);

    // Continue to the end: cleared before the session terminates.
    await Promise.all([dc.waitForEvent('terminated'), dc.continueRequest({ threadId: 1 })]);
    assert.equal(focuses.length, 4);
    assert.equal(focuses[3].node ?? '', '');
  });

  test('a step focuses each node in turn; terminate while paused clears it', async () => {
    await start({ program: LENET, inputs: ['1,1,32,32'], stopOnEntry: true });
    await stopped('entry', () => dc.configurationDoneRequest());
    assert.equal(focuses.at(-1).node, 'conv1');
    assert.equal(focuses.at(-1).reason, 'entry');
    assert.deepEqual(focuses.at(-1).shape, [1, 1, 32, 32]);  // the graph input
    await stopped('step', () => dc.nextRequest({ threadId: 1 }));
    const stepped = focuses.at(-1);
    assert.equal(focuses.at(-2).node ?? '', '', 'cleared between the stops');
    assert.equal(stepped.reason, 'step');
    assert.equal(stepped.line, lineOf(LENET, /x = self\.relu\(x\)/));
    assert.equal(stepped.op, 'ReLU');
    assert.match(stepped.tensor, /conv1/);
    assert.deepEqual(stepped.shape, [1, 6, 28, 28]);
    assert.ok(stepped.stats.min < 0, 'the convolution output before the ReLU has negatives');
    await Promise.all([dc.waitForEvent('terminated'), dc.terminateRequest({})]);
    assert.equal(focuses.at(-1).node ?? '', '');
  });

  test('an exception filter stop focuses the node after it ran, with its output statistics', async () => {
    await start({ program: NAN_MODEL, cell: 'NanNet', inputs: ['2,4'], input: 'ones' }, { filters: ['nan'] });
    await stopped('exception', () => dc.configurationDoneRequest());
    const f = focuses.at(-1);
    assert.match(f.node, /^inner\/Log/);
    assert.equal(f.op, 'Log');
    assert.equal(f.ran, true);
    assert.equal(f.tensor, f.node);
    assert.equal(f.reason, 'exception');
    assert.match(f.description, /^NaN in the output of node/);
    assert.equal(f.stats.nan, 8);
    assert.equal(f.stats.numel, 8);
    assert.equal(f.stats.min, undefined, 'no finite value: min is left out');
    await dc.setExceptionBreakpointsRequest({ filters: [] });
    await Promise.all([dc.waitForEvent('terminated'), dc.continueRequest({ threadId: 1 })]);
    assert.equal(focuses.at(-1).node ?? '', '');
  });
});
