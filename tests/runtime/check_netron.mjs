// The netron tier: what `cellscope export` writes opens in Netron (PyPI `netron` serves its
// viewer) in Debian's headless chromium, and Netron draws every node of the file. For LeNet-5 and
// ResNet-50, .mindir and .onnx: the file's nodes are counted from its bytes (ModelProto.graph = 7,
// GraphProto.node = 1, NodeProto.op_type = 4 in both formats), the nodes Netron draws are counted
// in its SVG (`.graph-node`), and the two must agree, MindIR's `Constant` nodes aside (Netron shows
// a constant as an input of the node that reads it, as it does ONNX initializers). A screenshot
// of each graph goes to $CELLSCOPE_ARTIFACTS (default build/test-artifacts/netron), with
// netron.json (the counts).
//
//   node tests/runtime/check_netron.mjs --python VENV/bin/python   (CELLSCOPE_BIN: the binary)
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(repo, 'webview', 'package.json'));
const { chromium } = require('playwright-core');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const python = arg('--python', 'python3');
const bin = resolve(process.env.CELLSCOPE_BIN ?? join(repo, 'build', 'cellscope'));
const artifacts = resolve(process.env.CELLSCOPE_ARTIFACTS ?? join(repo, 'build', 'test-artifacts', 'netron'));

// ---- the file's nodes, from its protobuf bytes -------------------------------------------------

function varint(buf, pos) {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++];
    v |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [v, pos];
    shift += 7n;
  }
}

// The length-delimited fields numbered `field` of a message.
function fields(buf, field) {
  const out = [];
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = varint(buf, pos);
    const num = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) [, pos] = varint(buf, pos);
    else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else if (wire === 2) {
      let len;
      [len, pos] = varint(buf, pos);
      const end = pos + Number(len);
      if (num === field) out.push(buf.subarray(pos, end));
      pos = end;
    } else throw new Error(`wire type ${wire} not expected`);
  }
  return out;
}

function opTypes(file) {
  const model = readFileSync(file);
  const [graph] = fields(model, 7);
  if (!graph) throw new Error(`${file}: no graph`);
  return fields(graph, 1).map((node) => (fields(node, 4)[0] ?? Buffer.alloc(0)).toString('utf8'));
}

// ---- Netron ----------------------------------------------------------------------------------

// Serves `file` with netron.serve on a free port; resolves with the URL and the process.
function serveNetron(file) {
  const code = [
    'import sys, netron',
    "addr = netron.serve(sys.argv[1], None, ('127.0.0.1', 0), browse=False)",
    "print('http://%s:%d/' % (addr[0], addr[1]), flush=True)",
    'sys.stdin.read()',
  ].join('\n');
  const child = spawn(python, ['-c', code, file], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((res, rej) => {
    child.stdout.once('data', (d) => res({ url: String(d).trim().split('\n')[0], child }));
    child.once('exit', (c) => rej(new Error(`netron exited (${c}): ${err}`)));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The number of nodes Netron has drawn, once it stops changing (the graph laid out).
async function drawnNodes(page, timeoutMs) {
  const end = Date.now() + timeoutMs;
  let last = -1;
  let stableSince = 0;
  while (Date.now() < end) {
    // The first visit asks for consent before showing anything.
    const accept = page.getByText('Accept', { exact: true });
    if (await accept.isVisible().catch(() => false)) await accept.click().catch(() => {});
    const n = await page.locator('svg .graph-node').count();
    if (n > 0 && n === last) {
      if (Date.now() - stableSince > 1500) return n;
    } else {
      last = n;
      stableSince = Date.now();
    }
    await sleep(250);
  }
  throw new Error(`Netron drew no stable graph in ${timeoutMs / 1000} s (last count ${last})`);
}

// ---- the models --------------------------------------------------------------------------------

const models = [
  { name: 'lenet5', file: join(repo, 'tests', 'corpus', 'models', 'lenet5.py'), args: ['--input', '1,1,32,32'] },
  { name: 'resnet50', file: join(repo, 'tests', 'corpus', 'models', 'resnet50.py'), args: ['--entry', 'resnet50()', '--input', '1,3,224,224'] },
];

const work = mkdtempSync(join(tmpdir(), 'cellscope-netron-'));
mkdirSync(artifacts, { recursive: true });
let failed = 0;
const results = [];
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  for (const m of models) {
    for (const format of ['mindir', 'onnx']) {
      const out = join(work, `${m.name}.${format}`);
      execFileSync(bin, ['export', m.file, ...m.args, '-o', out], { stdio: ['ignore', 'ignore', 'pipe'] });
      const ops = opTypes(out);
      const constants = ops.filter((t) => t === 'Constant').length;
      const expected = ops.length - constants;
      const { url, child } = await serveNetron(out);
      const t0 = Date.now();
      let drawn = -1;
      let error = '';
      try {
        await page.goto(url);
        drawn = await drawnNodes(page, 120000);
        const title = await page.title();
        if (!title.endsWith(`${m.name}.${format}`)) error = `the page shows "${title}", not ${m.name}.${format}`;
      } catch (e) {
        error = e.message;
      } finally {
        child.stdin.end();
        child.kill();
      }
      const shot = join(artifacts, `${m.name}-${format}.png`);
      await page.screenshot({ path: shot }).catch(() => {});
      const ok = !error && drawn === expected;
      if (!ok) failed++;
      const detail = `${ops.length} nodes in the file (${constants} Constant), Netron draws ${drawn}, ${Date.now() - t0} ms`;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${m.name}.${format}: ${detail}${error ? `: ${error}` : ''}`);
      results.push({ model: m.name, format, fileNodes: ops.length, constants, netronNodes: drawn, ok, screenshot: shot, error });
    }
  }
} finally {
  await browser.close();
  rmSync(work, { recursive: true, force: true });
}
writeFileSync(join(artifacts, 'netron.json'), JSON.stringify(results, null, 2));
console.log(`netron: ${results.length - failed}/${results.length} files drawn with every node; screenshots in ${artifacts}`);
process.exit(failed ? 1 : 0);
