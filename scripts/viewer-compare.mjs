// The screenshots of docs/view.md: the same ResNet-50 and BERT-base in Netron, Model Explorer
// and Cellscope, each served locally and opened in Debian's chromium (playwright-core from
// webview/node_modules) at 1400x900. Per tool and model: the first paint after opening the file
// (nothing clicked but Netron's one-time cookie notice), then one reasonable interaction (a node
// selected with its properties). Run by scripts/viewer-compare.sh, which exports the models first.
//
//   node scripts/viewer-compare.mjs --venv DIR --models DIR --out DIR [--bin CELLSCOPE]
//
// --venv: a virtualenv with netron, ai-edge-model-explorer and model-explorer-onnx;
// --models: the directory of viewer-compare-export.py's files and targets.json (written by
// viewer-compare.sh: which ONNX file and node stand for each model). Prints one JSON line per
// screenshot (tool, model, file, ms from navigation to the graph drawn).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { chromium } = createRequire(path.join(repo, 'webview', 'package.json'))('playwright-core');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const venv = path.resolve(args.venv);
const models = path.resolve(args.models);
const out = path.resolve(args.out);
const bin = path.resolve(args.bin || path.join(repo, 'build', 'cellscope'));
const only = args.only ? args.only.split(',') : null;  // e.g. --only cellscope,netron
fs.mkdirSync(out, { recursive: true });
const targets = JSON.parse(fs.readFileSync(path.join(models, 'targets.json'), 'utf8'));

const VIEWPORT = { width: 1400, height: 900 };
const MODELS = [
  { key: 'resnet50', source: 'tests/corpus/models/resnet50.py', entry: 'resnet50()', cellscopeNode: 'conv/layer1.0.conv2' },
  { key: 'bert_base', source: 'tests/corpus/models/bert_base.py', entry: 'bert_base()', cellscopeNode: 'encoder.layers.0.attention.query' },
];

const children = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGTERM')));

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Starts a server; resolves with the first URL matching `re` on its stdout or stderr.
function serve(cmd, argv, re) {
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PYTHONUNBUFFERED: '1' } });
  children.push(child);
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${cmd}: no URL after 180 s:\n${text}`)), 180000);
    const on = (d) => {
      text += d;
      const m = text.match(re);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1], child });
      }
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.on('exit', (code) => reject(new Error(`${cmd} exited (${code}):\n${text}`)));
  });
}

function stop(child) {
  child.kill('SIGTERM');
  children.splice(children.indexOf(child), 1);
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});

async function page() {
  const ctx = await browser.newContext({ viewport: VIEWPORT });
  // Served locally: anything else (fonts, analytics) fails at once instead of hanging offline.
  await ctx.route((url) => !['127.0.0.1', 'localhost'].includes(url.hostname) && url.protocol !== 'data:', (route) => route.abort());
  const p = await ctx.newPage();
  p.ctx = ctx;
  // A screenshot waits for pending fonts; under load give it time, then try once more.
  p.shot = async (file) => {
    try {
      await p.screenshot({ path: file, timeout: 90000 });
    } catch {
      await p.waitForTimeout(3000);
      await p.screenshot({ path: file, timeout: 90000 });
    }
  };
  return p;
}

function report(tool, model, file, ms, note = '') {
  console.log(JSON.stringify({ tool, model, file: path.relative(repo, file), ms: ms === null ? null : Math.round(ms), note }));
}

// Netron: `netron --port P FILE`. First paint = the graph at Netron's default zoom after the
// cookie notice a first visit shows; then the target node clicked (properties sidebar).
async function netron(model, file, label, interact) {
  const port = await freePort();
  const { child } = await serve(path.join(venv, 'bin', 'netron'), ['--port', String(port), '--host', '127.0.0.1', file], /Serving .* at (http:\/\/\S+)/);
  const p = await page();
  try {
    const t0 = Date.now();
    await p.goto(`http://127.0.0.1:${port}/`);
    const accept = p.getByRole('button', { name: 'Accept' });
    await accept.click({ timeout: 15000 }).catch(() => {});
    // Netron's page state is the body's class: 'welcome spinner' while loading, 'default' once drawn.
    await p.waitForSelector('body.default g.graph-node', { timeout: 300000 });
    const ms = Date.now() - t0;
    await p.waitForTimeout(1500);
    const first = path.join(out, `${model.key}-${label}-first.png`);
    await p.shot(first);
    report(label, model.key, first, ms);
    if (interact) {
      const node = p.locator(`[id="node-name-${targets[model.key].onnxNode}"]`);
      await node.scrollIntoViewIfNeeded();
      await node.locator('.node-item').first().click();
      await p.waitForTimeout(1500);
      const sel = path.join(out, `${model.key}-${label}-selected.png`);
      await p.shot(sel);
      report(label, model.key, sel, null, `node ${targets[model.key].onnxNode} clicked`);
    }
  } finally {
    await p.ctx.close();
    stop(child);
  }
}

// Model Explorer: `model-explorer FILE --extensions model_explorer_onnx --no_open_in_browser`.
// First paint = what the URL it prints shows; then View on edges -> Tensor shape, and the target
// node found by its weight's name in the search box, Alt+click = locate and select.
async function modelExplorer(model) {
  const port = await freePort();
  const file = path.join(models, targets[model.key].onnx);
  const { child, url } = await serve(path.join(venv, 'bin', 'model-explorer'),
    [file, '--host', '127.0.0.1', '--port', String(port), '--no_open_in_browser', '--extensions', 'model_explorer_onnx'],
    /(http:\/\/127\.0\.0\.1:\d+\/\?data=\S+)/);
  const p = await page();
  try {
    const t0 = Date.now();
    await p.goto(url);
    // The graph is drawn in WebGL: the node count in the graph selector says it is loaded.
    await p.getByText(/\d+ nodes/).first().waitFor({ timeout: 300000 });
    await p.waitForSelector('mat-icon.expand-all', { timeout: 300000 });
    const ms = Date.now() - t0;
    await p.waitForTimeout(2500);
    const first = path.join(out, `${model.key}-model-explorer-first.png`);
    await p.shot(first);
    report('model-explorer', model.key, first, ms);

    await p.locator('mat-icon.toolbar-icon', { hasText: 'visibility' }).click();
    await p.getByText('Tensor shape', { exact: true }).click();
    await p.keyboard.press('Escape');
    await p.waitForTimeout(500);
    const search = p.locator('input[placeholder*="Search"]');
    await search.click();
    await search.fill(targets[model.key].weight.replace(/\./g, '\\.'));
    await p.waitForTimeout(1500);
    // The results list the op (Conv, Gemm) that reads the weight, and the weight's Initializer.
    await p.getByText(targets[model.key].onnxOp, { exact: true }).first().click({ modifiers: ['Alt'] });
    await p.waitForTimeout(1000);
    await p.getByText('Processing. Please wait').waitFor({ state: 'hidden', timeout: 300000 });
    await p.waitForTimeout(1500);
    // Close the results list (it stays open while the query is there): clear the query, the
    // selection stays.
    await p.locator('mat-icon', { hasText: /^close$/ }).filter({ visible: true }).first().click();
    await p.waitForTimeout(1000);
    const sel = path.join(out, `${model.key}-model-explorer-selected.png`);
    await p.shot(sel);
    report('model-explorer', model.key, sel, null, `edge shapes on, ${targets[model.key].weight} searched, its ${targets[model.key].onnxOp} selected`);
  } finally {
    await p.ctx.close();
    stop(child);
  }
}

// Cellscope: `cellscope view FILE --entry E --target ascend910`. First paint = the semantic
// layer as the view opens; then the Hardware button and a click on the target kernel.
async function cellscope(model) {
  const { child, url } = await serve(bin, ['view', path.join(repo, model.source), '--entry', model.entry, '--target', 'ascend910'],
    /(http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{32}&file=\S+)/);
  const p = await page();
  const hook = (fn, arg) => p.evaluate(fn, arg);
  try {
    const t0 = Date.now();
    await p.goto(url);
    await p.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 120000 });
    await hook(() => window.cellscopeView.idle());
    const ms = Date.now() - t0;
    await p.waitForTimeout(500);
    const first = path.join(out, `${model.key}-cellscope-first.png`);
    await p.shot(first);
    report('cellscope', model.key, first, ms);

    await p.getByRole('button', { name: 'Hardware' }).click();
    await hook(() => window.cellscopeView.idle());
    let pos = await hook((id) => window.cellscopeView.nodeScreenPosition(id), model.cellscopeNode);
    if (!pos?.visible) {
      // Off screen at this zoom: find it as a user would, with the search box (/), then click it.
      await p.keyboard.press('/');
      await p.keyboard.type(model.cellscopeNode);
      await p.keyboard.press('Enter');
      await hook(() => window.cellscopeView.idle());
      await p.keyboard.press('Escape');
      pos = await hook((id) => window.cellscopeView.nodeScreenPosition(id), model.cellscopeNode);
    }
    if (pos?.visible) await p.mouse.click(pos.x, pos.y);
    else await hook((id) => window.cellscopeView.select(id), model.cellscopeNode);
    await p.waitForFunction(() => /Tiling/.test(window.cellscopeView.panelText()), null, { timeout: 20000 }).catch(() => {});
    await hook(() => window.cellscopeView.idle());
    await p.waitForTimeout(500);
    const sel = path.join(out, `${model.key}-cellscope-selected.png`);
    await p.shot(sel);
    report('cellscope', model.key, sel, null, `hardware layer, ${model.cellscopeNode} ${pos?.visible ? 'clicked' : 'selected'}`);
  } finally {
    await p.ctx.close();
    stop(child);
  }
}

try {
  for (const model of MODELS) {
    const t = targets[model.key];
    if (!only || only.includes('netron')) await netron(model, path.join(models, t.onnx), 'netron', true);
    if (!only || only.includes('netron-mindir')) await netron(model, path.join(models, t.mindir), 'netron-mindir', false);
    if (!only || only.includes('model-explorer')) await modelExplorer(model);
    if (!only || only.includes('cellscope')) await cellscope(model);
  }
} finally {
  await browser.close();
}
