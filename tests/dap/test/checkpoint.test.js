// `cellscope dap` with the `checkpoint` launch attribute: TinyNet
// (tests/fixtures/checkpoints/tiny_net.py) launched with the weights real MindSpore saved
// (tiny.ckpt, written by make_checkpoints.py there). The expected values come from the same
// weights in MindSpore's safetensors file, parsed here, and from MindSpore's own forward output
// (tiny_output.npy): neither goes through the adapter's checkpoint reader.
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
const DIR = path.join(repo, 'tests/fixtures/checkpoints');
const TINY = path.join(DIR, 'tiny_net.py');
const CKPT = path.join(DIR, 'tiny.ckpt');
const INPUT = path.join(DIR, 'tiny_input.npy');

// float32 tensors of a safetensors file: { name: Float32Array }.
function readSafetensors(file) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    assert.equal(t.dtype, 'F32');
    const [b, e] = t.data_offsets;
    const bytes = buf.subarray(8 + n + b, 8 + n + e);
    out[name] = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  }
  return out;
}

// A little-endian float32 .npy file (version 1).
function readNpyF32(file) {
  const buf = fs.readFileSync(file);
  const hlen = buf.readUInt16LE(8);
  const header = buf.subarray(10, 10 + hlen).toString('latin1');
  assert.match(header, /'descr': '<f4'/);
  const data = buf.subarray(10 + hlen);
  return new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length));
}

function lineOf(file, re) {
  const i = fs.readFileSync(file, 'utf8').split('\n').findIndex((l) => re.test(l));
  assert.ok(i >= 0, `no line matching ${re} in ${file}`);
  return i + 1;
}
const RETURN_LINE = lineOf(TINY, /return self\.dense\(self\.flatten\(x\)\)/);

let dc;
let outputs;
beforeEach(async () => {
  dc = new DebugClient(BIN, 'dap', 'mindspore');
  dc.defaultTimeout = 60000;
  outputs = [];
  dc.on('output', (ev) => outputs.push(ev.body.output));
  await dc.start();
});
afterEach(async () => {
  await dc.stop();
});

async function variables(ref, extra = {}) {
  return (await dc.variablesRequest({ variablesReference: ref, ...extra })).body.variables;
}

describe('cellscope dap: checkpoint', () => {
  test('launch loads the checkpoint: parameters in the variables and the output are MindSpore\'s', async () => {
    await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
    const launched = dc.launchRequest({ program: TINY, inputs: [INPUT], checkpoint: CKPT });
    await dc.setBreakpointsRequest({ source: { path: TINY }, breakpoints: [{ line: RETURN_LINE }] });
    await dc.setExceptionBreakpointsRequest({ filters: [] });
    await launched;
    assert.ok(outputs.some((o) => /loaded 8 of 8 parameters from .*tiny\.ckpt \(ckpt\)/.test(o)), outputs.join(''));

    const [ev] = await Promise.all([dc.waitForEvent('stopped'), dc.configurationDoneRequest()]);
    assert.equal(ev.body.reason, 'breakpoint');
    const frames = (await dc.stackTraceRequest({ threadId: 1 })).body.stackFrames;
    const scopes = (await dc.scopesRequest({ frameId: frames[0].id })).body.scopes;
    const params = await variables(scopes.find((s) => s.name === 'Parameters').variablesReference);
    const want = readSafetensors(path.join(DIR, 'tiny.safetensors'));
    for (const name of ['conv.weight', 'bn.moving_variance', 'dense.weight']) {
      const v = params.find((p) => p.name === name);
      assert.ok(v, `no parameter ${name} in ${JSON.stringify(params.map((p) => p.name))}`);
      const kids = await variables(v.variablesReference);
      const vals = kids.find((k) => k.name === 'values');
      assert.equal(vals.indexedVariables, want[name].length);
      const count = Math.min(want[name].length, 40);
      const page = await variables(vals.variablesReference, { filter: 'indexed', start: 0, count });
      for (let i = 0; i < count; i++) {
        const got = Number(page[i].value);
        // The adapter prints 6 significant digits.
        assert.ok(Math.abs(got - want[name][i]) <= 1e-5 * Math.abs(want[name][i]) + 1e-12,
          `${name}[${i}]: ${got} != ${want[name][i]}`);
      }
    }

    await Promise.all([dc.waitForEvent('terminated'), dc.continueRequest({ threadId: 1 })]);
    const line = outputs.find((o) => o.startsWith('output 0:'));
    assert.ok(line, outputs.join(''));
    const y = readNpyF32(path.join(DIR, 'tiny_output.npy'));
    const min = Math.min(...y), max = Math.max(...y);
    const num = (key) => Number(new RegExp(`${key}=(\\S+)`).exec(line)[1]);
    const tol = 1e-4 * Math.max(Math.abs(min), Math.abs(max));
    assert.ok(Math.abs(num('min') - min) <= tol, `${line} vs MindSpore min ${min}`);
    assert.ok(Math.abs(num('max') - max) <= tol, `${line} vs MindSpore max ${max}`);
  });

  for (const [what, checkpoint, re] of [
    ['a missing checkpoint', path.join(DIR, 'missing.ckpt'), /checkpoint '.*missing\.ckpt' does not exist/],
    ['a truncated checkpoint', path.join(DIR, 'corrupt_truncated.ckpt'), /corrupt_truncated\.ckpt is not a readable MindSpore checkpoint.*truncated/],
    ['an encrypted checkpoint', path.join(DIR, 'encrypted.ckpt'), /is encrypted/],
    ['a checkpoint of another shape', path.join(DIR, 'tiny_badshape.ckpt'), /parameter 'conv\.weight': shape \(3, 2, 3, 3\) in the model, \(3, 2, 5, 5\) in the checkpoint/],
    ['a checkpoint that is not a string', 42, /'checkpoint' must be a string/],
  ]) {
    test(`a bad launch (${what}) fails clearly and terminates`, async () => {
      await Promise.all([dc.initializeRequest(), dc.waitForEvent('initialized')]);
      const terminated = dc.waitForEvent('terminated');
      await assert.rejects(dc.launchRequest({ program: TINY, inputs: [INPUT], checkpoint }), re);
      await terminated;
    });
  }
});
