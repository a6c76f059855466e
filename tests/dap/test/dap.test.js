// `cellscope dap` driven by @vscode/debugadapter-testsupport's DebugClient (the real client
// library VS Code's own adapters are tested with), against the real binary.
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
const RESNET = path.join(repo, 'tests/corpus/models/resnet50.py');
const NAN_MODEL = path.join(repo, 'tests/dap/fixtures/nan_model.py');

// 1-based line of the first line of `file` matching `re` after `after` (a regexp too).
function lineOf(file, re, after) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  let start = 0;
  if (after) start = lines.findIndex((l) => after.test(l));
  const i = lines.findIndex((l, k) => k >= start && re.test(l));
  assert.ok(i >= 0, `no line matching ${re} in ${file}`);
  return i + 1;
}

const BLOCK_CONV1 = lineOf(RESNET, /out = self\.conv1\(x\)/, /class ResidualBlock/);
const ROOT_LAYER1 = lineOf(RESNET, /c2 = self\.layer1\(c1\)/);
const NAN_LOG = lineOf(NAN_MODEL, /ops\.log\(/);
const OVERFLOW = path.join(repo, 'tests/dap/fixtures/overflow_model.py');
const LOOKUP = path.join(repo, 'tests/dap/fixtures/lookup_model.py');
const LOOKUP_IDS = path.join(repo, 'tests/dap/fixtures/ids_off_by_one.npy');
const NAN_INNER_CALL = lineOf(NAN_MODEL, /self\.inner\(x\)/);

let dc;
beforeEach(async () => {
  dc = new DebugClient(BIN, 'dap', 'mindspore');
  dc.defaultTimeout = 60000;
  await dc.start();
});
afterEach(async () => {
  await dc.stop();
});

async function start(launchArgs, { breakpoints = {}, filters = [] } = {}) {
  await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
  const launched = dc.launchRequest(launchArgs);
  const bpResponses = {};
  for (const [file, lines] of Object.entries(breakpoints)) {
    bpResponses[file] = await dc.setBreakpointsRequest({
      source: { path: file },
      breakpoints: lines.map((l) => (typeof l === 'number' ? { line: l } : l)),
    });
  }
  await dc.setExceptionBreakpointsRequest({ filters });
  await launched;
  return bpResponses;
}

const go = () => dc.configurationDoneRequest();
const cont = () => dc.continueRequest({ threadId: 1 });
const next = () => dc.nextRequest({ threadId: 1 });
const stepIn = () => dc.stepInRequest({ threadId: 1 });
const stepOut = () => dc.stepOutRequest({ threadId: 1 });

async function runToEnd(request) {
  await Promise.all([dc.waitForEvent('terminated'), request()]);
}

// Sends `request` (a function returning the request's promise, or nothing) and waits for the
// `stopped` event it causes; the listener is attached first, since the event can arrive in the same
// chunk as the response.
async function stopped(reason, request) {
  const [ev] = await Promise.all([dc.waitForEvent('stopped'), request ? request() : undefined]);
  assert.equal(ev.body.reason, reason, JSON.stringify(ev.body));
  const st = await dc.stackTraceRequest({ threadId: ev.body.threadId });
  return { ev, frames: st.body.stackFrames };
}

async function variables(ref, extra = {}) {
  return (await dc.variablesRequest({ variablesReference: ref, ...extra })).body.variables;
}

async function scope(frameId, name) {
  const scopes = (await dc.scopesRequest({ frameId })).body.scopes;
  const s = scopes.find((x) => x.name === name);
  assert.ok(s, `no scope ${name}`);
  return variables(s.variablesReference);
}

// Values [start, start+count) of a tensor variable, through its `values` child (paging).
async function tensorValues(v, start, count) {
  const kids = await variables(v.variablesReference);
  const vals = kids.find((k) => k.name === 'values');
  assert.ok(vals && vals.indexedVariables > 0);
  const page = await variables(vals.variablesReference, { filter: 'indexed', start, count });
  assert.equal(page.length, count);
  return page.map((p) => Number(p.value));
}

describe('cellscope dap', () => {
  test('initialize answers honest capabilities and the four tensor filters', async () => {
    const [resp] = await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
    const caps = resp.body;
    assert.equal(caps.supportsConfigurationDoneRequest, true);
    assert.equal(caps.supportsConditionalBreakpoints, true);
    assert.equal(caps.supportsHitConditionalBreakpoints, true);
    assert.equal(caps.supportsLogPoints, true);
    assert.equal(caps.supportsEvaluateForHovers, true);
    assert.equal(caps.supportsTerminateRequest, true);
    assert.deepEqual(
      caps.exceptionBreakpointFilters.map((f) => f.filter),
      ['nan', 'inf', 'fp16-overflow', 'all-zero', 'loss-nan', 'loss-spike', 'grad-nan', 'grad-inf',
        'grad-explode', 'grad-vanish', 'weight-unchanged', 'kernel-error'],
    );
    // Only kernel-error is on by default (a kernel error of a training step stops there).
    assert.deepEqual(caps.exceptionBreakpointFilters.filter((f) => f.default).map((f) => f.filter), ['kernel-error']);
    // The training filters with a number as their condition (filterOptions).
    assert.equal(caps.supportsExceptionFilterOptions, true);
    assert.deepEqual(
      caps.exceptionBreakpointFilters.filter((f) => f.supportsCondition).map((f) => f.filter),
      ['loss-spike', 'grad-explode', 'grad-vanish'],
    );
  });

  test('a breakpoint in a sub-Cell (ResNet-50 ResidualBlock) stops with the Cell call chain', async () => {
    const bps = await start(
      { program: RESNET, inputs: ['1,3,224,224'], seed: 3 },
      { breakpoints: { [RESNET]: [BLOCK_CONV1, BLOCK_CONV1 + 3, 1] } },
    );
    const b = bps[RESNET].body.breakpoints;
    assert.equal(b[0].verified, true);
    assert.equal(b[0].line, BLOCK_CONV1);
    // a blank line: moved to the next line that produces a node
    assert.equal(b[1].verified, true);
    assert.equal(b[1].line, BLOCK_CONV1 + 4);
    assert.match(b[1].message, /moved from line/);
    // a comment/import line before any construct: unverified with a reason
    assert.equal(b[2].verified, false);
    assert.match(b[2].message, /produces no graph node/);

    const { ev, frames } = await stopped('breakpoint', go);
    assert.deepEqual(ev.body.hitBreakpointIds, [b[0].id]);
    assert.equal(frames.length, 2);
    assert.equal(frames[0].name, 'layer1.0 (ResidualBlock).construct');
    assert.equal(frames[0].line, BLOCK_CONV1);
    assert.equal(frames[0].source.path, RESNET);
    assert.equal(frames[1].name, 'ResNet.construct');
    assert.equal(frames[1].line, ROOT_LAYER1);

    const threads = await dc.threadsRequest();
    assert.deepEqual(threads.body.threads, [{ id: 1, name: 'construct' }]);

    // The same line stops again in the next instance of the block.
    // The moved breakpoint (conv2) in the same instance, then the same line in the next instance.
    const moved = await stopped('breakpoint', cont);
    assert.equal(moved.frames[0].name, 'layer1.0 (ResidualBlock).construct');
    assert.equal(moved.frames[0].line, BLOCK_CONV1 + 4);
    assert.deepEqual(moved.ev.body.hitBreakpointIds, [b[1].id]);
    const second = await stopped('breakpoint', cont);
    assert.equal(second.frames[0].name, 'layer1.1 (ResidualBlock).construct');
    assert.equal(second.frames[0].line, BLOCK_CONV1);
  });

  test("conv1's output equals an independent convolution of the input and conv1.weight", async () => {
    await start(
      { program: RESNET, inputs: ['1,3,224,224'], input: 'random:11', seed: 5 },
      { breakpoints: { [RESNET]: [BLOCK_CONV1] } },
    );
    const { frames } = await stopped('breakpoint', go);
    const root = frames[1].id;
    const locals = await scope(root, 'Locals');
    const names = locals.map((v) => v.name);
    for (const n of ['conv1', 'bn1', 'relu', 'maxpool']) assert.ok(names.includes(n), names.join());
    const input = locals.find((v) => v.name === 'x' && /Tensor\(1, 3, 224, 224\)/.test(v.value))
      ?? locals.find((v) => /Tensor\(1, 3, 224, 224\)/.test(v.value));
    assert.ok(input, 'the input tensor is a local of the root frame');
    const conv1 = locals.find((v) => v.name === 'conv1');
    assert.match(conv1.value, /^Tensor\(1, 64, 112, 112\) float32 min=/);
    const kids = await variables(conv1.variablesReference);
    const kv = Object.fromEntries(kids.map((k) => [k.name, k.value]));
    assert.equal(kv.shape, '(1, 64, 112, 112)');
    assert.equal(kv.dtype, 'float32');
    assert.equal(kv.nan, '0');
    for (const k of ['min', 'max', 'mean', 'std', 'first values']) assert.ok(k in kv, k);

    const params = await scope(root, 'Parameters');
    const weight = params.find((v) => v.name === 'conv1.weight');
    assert.match(weight.value, /^Tensor\(64, 3, 7, 7\)/);

    // out[0, o, i, j] = sum_c,kh,kw w[o, c, kh, kw] * x[0, c, 2i + kh - 3, 2j + kw - 3]
    // (kernel 7, stride 2, padding 3, no bias), for a few output elements.
    const W = 224;
    for (const [o, i, j] of [[0, 0, 0], [5, 10, 20], [63, 111, 57]]) {
      const w = await tensorValues(weight, o * 147, 147);
      let acc = 0;
      for (let c = 0; c < 3; ++c) {
        for (let kh = 0; kh < 7; ++kh) {
          const y = 2 * i + kh - 3;
          if (y < 0 || y >= W) continue;
          const x0 = Math.max(0, 2 * j - 3);
          const x1 = Math.min(W - 1, 2 * j + 3);
          const row = await tensorValues(input, c * W * W + y * W + x0, x1 - x0 + 1);
          for (let xx = x0; xx <= x1; ++xx) acc += w[c * 49 + kh * 7 + (xx - (2 * j - 3))] * row[xx - x0];
        }
      }
      const [got] = await tensorValues(conv1, o * 112 * 112 + i * 112 + j, 1);
      assert.ok(Math.abs(got - acc) <= 1e-4 * Math.max(1, Math.abs(acc)), `conv1[0,${o},${i},${j}] = ${got}, reference ${acc}`);
    }

    // Hover / evaluate in the top frame and the root frame.
    const ev = await dc.evaluateRequest({ expression: 'conv1', frameId: root, context: 'hover' });
    assert.equal(ev.body.result, conv1.value);
    const mx = await dc.evaluateRequest({ expression: 'conv1.max()', frameId: root, context: 'watch' });
    assert.ok(Number.isFinite(Number(mx.body.result)));
    await assert.rejects(dc.evaluateRequest({ expression: 'nope', frameId: root, context: 'hover' }), /not a computed tensor/);
  });

  test('next, stepIn and stepOut follow construct', async () => {
    await start(
      { program: RESNET, inputs: ['1,3,224,224'] },
      { breakpoints: { [RESNET]: [BLOCK_CONV1 + 1] } },
    );
    let s = await stopped('breakpoint', go);
    assert.equal(s.frames[0].name, 'layer1.0 (ResidualBlock).construct');
    assert.equal(s.frames[0].line, BLOCK_CONV1 + 1); // out = self.bn1(out)
    // conv1 of the block has run: `out` is a local of the frame
    const locals = await scope(s.frames[0].id, 'Locals');
    assert.ok(locals.some((v) => v.name === 'out' && /Tensor\(1, 64, 56, 56\)/.test(v.value)), JSON.stringify(locals.map((v) => v.name)));
    s = await stopped('step', next);
    assert.equal(s.frames[0].name, 'layer1.0 (ResidualBlock).construct');
    assert.equal(s.frames[0].line, BLOCK_CONV1 + 2); // out = self.relu(out)
    s = await stopped('step', next);
    assert.equal(s.frames[0].line, BLOCK_CONV1 + 4); // out = self.conv2(out) (blank line skipped)
    s = await stopped('step', stepIn);
    assert.equal(s.frames[0].line, BLOCK_CONV1 + 5); // out = self.bn2(out)
    s = await stopped('step', stepOut);
    // layer1.0 returned; layer1 (a SequentialCell, no frame of its own) runs layer1.1 next
    assert.equal(s.frames[0].name, 'layer1.1 (ResidualBlock).construct');
    assert.equal(s.frames[0].line, BLOCK_CONV1);
    assert.equal(s.frames.length, 2);
    s = await stopped('breakpoint', cont); // layer1.1 hits the breakpoint
    assert.equal(s.frames[0].name, 'layer1.1 (ResidualBlock).construct');
    assert.equal(s.frames[0].line, BLOCK_CONV1 + 1);
  });

  test('next over a sub-Cell call and stepOut to the root', async () => {
    await start({ program: NAN_MODEL, cell: 'NanNet', inputs: ['2,4'], input: 'ones', stopOnEntry: true });
    let s = await stopped('entry', go);
    assert.equal(s.frames[0].name, 'NanNet.construct');
    assert.equal(s.frames[0].line, NAN_INNER_CALL - 1); // x = ops.exp(x)
    s = await stopped('step', stepIn);
    assert.equal(s.frames[0].name, 'inner (Inner).construct'); // into the sub-Cell
    assert.equal(s.frames[1].line, NAN_INNER_CALL);
    s = await stopped('step', stepOut);
    assert.equal(s.frames[0].name, 'NanNet.construct');
    assert.equal(s.frames[0].line, NAN_INNER_CALL + 1); // return x * x
    await runToEnd(cont);
  });

  test('a planted NaN (log of a negative) stops on the nan filter at the Log node', async () => {
    await start({ program: NAN_MODEL, cell: 'NanNet', inputs: ['2,4'], input: 'ones' }, { filters: ['nan'] });
    const { ev, frames } = await stopped('exception', go);
    assert.match(ev.body.description, /^NaN in the output of node 'inner\/Log[^']*' \(Log\) at nan_model\.py:16: 8 of 8 elements, first at index \[0, 0\]/);
    assert.equal(frames[0].name, 'inner (Inner).construct');
    assert.equal(frames[0].line, NAN_LOG);
    assert.equal(frames[1].name, 'NanNet.construct');
    assert.equal(frames[1].line, NAN_INNER_CALL);
    const info = await dc.exceptionInfoRequest({ threadId: 1 });
    assert.equal(info.body.exceptionId, 'NaN');
    const locals = await scope(frames[0].id, 'Locals');
    const z = locals.find((v) => v.name === 'z');
    assert.ok(z, JSON.stringify(locals.map((v) => v.name)));
    const kids = await variables(z.variablesReference);
    assert.equal(kids.find((k) => k.name === 'nan').value, '8');
    // The NaN propagates: the next node (return z + y) stops too.
    const again = await stopped('exception', cont);
    assert.equal(again.frames[0].line, NAN_LOG + 1);
    assert.match(again.ev.body.description, /^NaN in the output of node 'inner\/Add/);
    // With the filter off, the run completes.
    await dc.setExceptionBreakpointsRequest({ filters: [] });
    await runToEnd(cont);
  });

  test('fp16-overflow and all-zero filters', async () => {
    const C = lineOf(OVERFLOW, /c = ops\.exp\(b\)/);
    await start({ program: OVERFLOW, inputs: ['1,5'], input: 'ones' }, { filters: ['fp16-overflow', 'all-zero', 'inf'] });
    let s = await stopped('exception', go);
    assert.equal(s.frames[0].line, C);
    assert.match(s.ev.body.description, /^fp16 overflow in the output of node '[^']*' \(Exp\) at overflow_model\.py:\d+: 5 of 5 elements, first at index \[0, 0\]/);
    s = await stopped('exception', cont);
    assert.equal(s.frames[0].line, C + 1);
    assert.match(s.ev.body.description, /^all-zero output in the output of node '[^']*' \(ReLU\)/);
    await dc.setExceptionBreakpointsRequest({ filters: [] });
    await runToEnd(cont);
  });

  test('precision "target": fp16 storage turns the overflow into an inf', async () => {
    const C = lineOf(OVERFLOW, /c = ops\.exp\(b\)/);
    await start({ program: OVERFLOW, inputs: ['1,5'], input: 'ones', precision: 'target' }, { filters: ['inf'] });
    const s = await stopped('exception', go);
    assert.equal(s.frames[0].line, C);
    assert.match(s.ev.body.description, /^Inf in the output of node '[^']*' \(Exp\)/);
    const locals = await scope(s.frames[0].id, 'Locals');
    assert.match(locals.find((v) => v.name === 'c').value, /inf=5/);
    await dc.setExceptionBreakpointsRequest({ filters: [] });
    await runToEnd(cont);
  });

  test('a runtime error stops at the failing node, then ends the session', async () => {
    // An embedding lookup with an id past the end of the table (lookup_model.py): the Gather
    // kernel's bounds check, located at the construct line that applies the layer.
    const EMB = lineOf(LOOKUP, /emb = self\.embedding\(shifted\)/);
    await start({ program: LOOKUP, inputs: [LOOKUP_IDS] });
    const s = await stopped('exception', go);
    assert.match(
      s.ev.body.description,
      new RegExp(`^RuntimeError: node 'embedding' \\(Gather, nn\\.Embedding\\) at lookup_model\\.py:${EMB}: ` +
        'index 8 at \\[1, 2\\] is out of range \\[0, 8\\)'),
    );
    assert.equal(s.frames[0].line, EMB);
    const info = await dc.exceptionInfoRequest({ threadId: 1 });
    assert.equal(info.body.exceptionId, 'RuntimeError');
    const locals = await scope(s.frames[0].id, 'Locals');
    assert.ok(locals.some((v) => v.name === 'shifted'), JSON.stringify(locals.map((v) => v.name)));
    const [exited] = await Promise.all([dc.waitForEvent('exited'), dc.waitForEvent('terminated'), cont()]);
    assert.equal(exited.body.exitCode, 1);
  });

  test('a run without breakpoints reports a summary and terminates', async () => {
    const out = [];
    dc.on('output', (e) => out.push(e.body.output));
    await start({ program: NAN_MODEL, cell: 'NanNet', inputs: ['2,4'], input: 'ones' });
    await Promise.all([dc.waitForEvent('exited'), dc.waitForEvent('terminated'), go()]);
    assert.ok(out.some((o) => /ran \d+ nodes in [\d.e+-]+ ms/.test(o)), out.join(''));
  });

  test('stopOnEntry, logpoints and hit counts', async () => {
    const out = [];
    dc.on('output', (e) => out.push(e.body.output));
    await start(
      { program: RESNET, inputs: ['1,3,224,224'], stopOnEntry: true },
      { breakpoints: { [RESNET]: [{ line: BLOCK_CONV1, logMessage: 'block input {x}' }, { line: BLOCK_CONV1 + 1, hitCondition: '3' }] } },
    );
    const entry = await stopped('entry', go);
    assert.equal(entry.frames[0].name, 'ResNet.construct');
    const s = await stopped('breakpoint', cont);
    assert.equal(s.frames[0].name, 'layer1.2 (ResidualBlock).construct');
    assert.equal(s.frames[0].line, BLOCK_CONV1 + 1);
    assert.equal(out.filter((o) => o.startsWith('block input ')).length, 3, out.join(''));
  });

  test('a condition over tensor statistics', async () => {
    await start(
      { program: NAN_MODEL, cell: 'NanNet', inputs: ['2,4'], input: 'ones' },
      { breakpoints: { [NAN_MODEL]: [{ line: NAN_LOG - 1, condition: 'x.max() > 100' }, { line: NAN_LOG, condition: 'y.max() > 5' }] } },
    );
    const s = await stopped('breakpoint', go);
    assert.equal(s.frames[0].line, NAN_LOG);
    const ev = await dc.evaluateRequest({ expression: 'y.max()', frameId: s.frames[0].id });
    const v = Number(ev.body.result);
    assert.ok(Math.abs(v - 2 * Math.E) < 1e-4, ev.body.result); // relu(exp(1)) doubled
    await runToEnd(cont);
  });

  test('terminate while stopped ends the run cleanly', async () => {
    await start({ program: RESNET, inputs: ['1,3,224,224'] }, { breakpoints: { [RESNET]: [BLOCK_CONV1] } });
    await stopped('breakpoint', go);
    await Promise.all([dc.waitForEvent('terminated'), dc.terminateRequest({})]);
    await assert.rejects(dc.stackTraceRequest({ threadId: 1 }), /not stopped/);
  });

  test('pause interrupts a running model', async () => {
    // stopOnEntry, then `pause` is answered and the next resume can be interrupted; an
    // interrupted run stops with reason "pause" before some node of construct.
    await start({ program: RESNET, inputs: ['1,3,224,224'], stopOnEntry: true });
    await stopped('entry', go);
    await dc.pauseRequest({ threadId: 1 }); // sets the interrupt flag: the next node stops
    const s = await stopped('pause', cont);
    assert.ok(s.frames[0].line > 0);
    // afterEach disconnects while stopped: the adapter ends the run and exits.
  });

  test('setBreakpoints with members of the wrong type: a located error; a bad hit condition is refused', async () => {
    await start({ program: NAN_MODEL, cell: 'NanNet', inputs: ['2,4'] });
    await assert.rejects(
      dc.setBreakpointsRequest({ source: { path: NAN_MODEL }, breakpoints: [{ line: 'abc' }] }),
      (e) => e.message === 'setBreakpoints failed: arguments.breakpoints[0].line must be a number, but is a string',
    );
    await assert.rejects(
      dc.setBreakpointsRequest({ source: { path: NAN_MODEL }, breakpoints: { line: 3 } }),
      (e) => e.message === 'setBreakpoints failed: arguments.breakpoints must be an array, but is an object',
    );
    const r = await dc.setBreakpointsRequest({ source: { path: NAN_MODEL }, breakpoints: [{ line: NAN_LOG, hitCondition: '%0' }, { line: NAN_LOG, hitCondition: 'often' }] });
    for (const bp of r.body.breakpoints) {
      assert.equal(bp.verified, false);
      assert.match(bp.message, /^invalid hit condition `(%0|often)`: expected a count N, =N, >N, >=N or %N/);
    }
    await runToEnd(go); // a refused hit condition is no breakpoint: the run ends
  });

  for (const [what, args, re] of [
    ['a missing file', { program: path.join(repo, 'tests/dap/fixtures/missing.py') }, /does not exist/],
    ['an unknown cell', { program: NAN_MODEL, cell: 'NoSuchCell', inputs: ['2,4'] }, /unknown cell 'NoSuchCell'.*NanNet/],
    ['a wrong input shape', { program: RESNET, inputs: ['1,3,224'] }, /does not compile with the given inputs:\n.*rank 4, but receives rank 3/],
    ['an input of the wrong size', { program: NAN_MODEL, cell: 'NanNet', inputs: ['2,4'], input: path.join(repo, 'tests/dap/fixtures/ones_3x3.npy') }, /shape|match/],
    ['a malformed input shape', { program: RESNET, inputs: ['1,3,,224'] }, /bad input shape/],
    ['an unknown precision', { program: NAN_MODEL, inputs: ['2,4'], precision: 'fp8' }, /precision must be/],
    // issue 14: numbers that are not numbers, or too large, are named; none of std::stoull's or
    // nlohmann::json's wording reaches the user.
    ['an input shape with an x', { program: NAN_MODEL, cell: 'NanNet', inputs: ['2x4'] }, /launch: bad input shape "2x4": bad dimension `2x4` in `2x4` \(use e\.g\. 1,3,224,224 or N,128:int32\)$/],
    ['a dimension beyond int64', { program: NAN_MODEL, cell: 'NanNet', inputs: ['99999999999999999999,4'] }, /launch: bad input shape "99999999999999999999,4": dimension `99999999999999999999` is too large$/],
    ['a random seed that is not a number', { program: NAN_MODEL, cell: 'NanNet', inputs: ['2,4'], input: 'random:abc' }, /the seed in `random:abc` must be an integer from 0 to 18446744073709551615/],
    ['a random seed beyond uint64', { program: NAN_MODEL, cell: 'NanNet', inputs: ['2,4'], input: 'random:99999999999999999999' }, /the seed in `random:99999999999999999999` must be an integer/],
    // MindSpore 2.10 raises TypeError for an int8 input to a float32 Conv2d (PyNative and graph
    // mode); the runtime never runs it.
    ['an int8 input to Conv2d', { program: RESNET, inputs: ['1,3,64,64:int8'] }, /does not compile with the given inputs:\n.*nn\.Conv2d receives an input of dtype int8 but its weight is float32/],
  ]) {
    test(`a bad launch (${what}) fails clearly and terminates`, async () => {
      await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
      const terminated = dc.waitForEvent('terminated');
      await assert.rejects(dc.launchRequest(args), re);
      await terminated;
    });
  }
});
