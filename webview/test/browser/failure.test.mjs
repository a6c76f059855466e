// The view tier: a model whose construct fails (issue 16). The failed call is drawn where the
// graph stops, in the theme's error colour, connected from what it received; the optimization
// and hardware figures say they are unavailable (no kernel) or partial instead of "0 ms".
// Screenshots go to $CELLSCOPE_ARTIFACTS (default build/test-artifacts/view).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { artifacts, corpus, newPage as openPage, startView, useBrowser } from './lib.mjs';

const browser = useBrowser(test);
const newPage = (t) => openPage(browser, t);

const hook = (page, fn, arg) => page.evaluate(fn, arg);
const idle = (page) => hook(page, () => window.cellscopeView.idle());
const FAILED = 'failed:fc1';

async function open(t, model, args = []) {
  const { url, file } = await startView(t, model, args);
  const page = await newPage(t);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  return { page, file };
}

// The colours drawn on the canvas at client points, and the theme's error colour, as [r, g, b].
async function pixelsAndDanger(page, points) {
  return hook(page, (pts) => {
    const canvas = document.querySelector('.graph-canvas');
    const r = canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const ctx = canvas.getContext('2d');
    const pixels = pts.map(([px, py]) => {
      const d = ctx.getImageData(Math.round((px - r.left) * dpr), Math.round((py - r.top) * dpr), 1, 1).data;
      return [d[0], d[1], d[2]];
    });
    const probe = document.createElement('div');
    probe.style.color = getComputedStyle(canvas.parentElement).getPropertyValue('--cs-danger').trim();
    document.body.appendChild(probe);
    const m = getComputedStyle(probe).color.match(/\d+/g).map(Number);
    probe.remove();
    return { pixels, danger: m.slice(0, 3) };
  }, points);
}

// Across the top edge of a box (its border): the pixel nearest the error colour.
async function topEdge(page, box) {
  const pts = [];
  for (let dy = -2; dy <= 2; dy += 0.5) pts.push([box.x + box.w / 2, box.y + dy]);
  const { pixels, danger } = await pixelsAndDanger(page, pts);
  const dist = (p) => Math.max(...p.map((c, i) => Math.abs(c - danger[i])));
  return { pixel: pixels.reduce((a, b) => (dist(b) < dist(a) ? b : a)), danger };
}

const near = (a, b, tol = 24) => a.every((v, i) => Math.abs(v - b[i]) <= tol);

test('a model cut off by an error: the failed call is drawn, selectable, and the hardware layer says "Unavailable"', async (t) => {
  const { page } = await open(t, path.join(corpus, 'buggy', 'mnist_article_bug.py'), ['--target', 'ascend910']);
  const v = (fn, arg) => hook(page, fn, arg);

  // Semantic layer: the failure after `flatten`, with an edge from it.
  const box = await v((id) => window.cellscopeView.nodeRect(id), FAILED);
  assert.ok(box, 'the failed call is drawn');
  assert.equal(box.kind, 'failed');
  const edges = await v(() => window.cellscopeView.edges());
  assert.ok(edges.some((e) => e.src === 'flatten' && e.tgt === FAILED), JSON.stringify(edges));
  assert.match(await v(() => window.cellscopeView.paneNote()), /Graph stops at fc1 \(nn\.Dense, line 22\): nn\.Dense expects 1600/);

  // Its error style: the glyph (a disc in the theme's error colour) left of the label, the border.
  const glyph = await pixelsAndDanger(page, [[box.x + (17 - 5) * box.scale, box.y + box.h / 2]]);
  assert.ok(near(glyph.pixels[0], glyph.danger), `glyph ${glyph.pixels[0]} vs --cs-danger ${glyph.danger}`);
  const border = await topEdge(page, box);
  assert.ok(near(border.pixel, border.danger, 40), `border ${border.pixel} vs --cs-danger ${border.danger}`);
  const plain = await v((id) => window.cellscopeView.nodeRect(id), 'flatten');
  const other = await topEdge(page, plain);
  assert.ok(!near(other.pixel, other.danger, 60), `an ordinary node is not drawn in the error colour (${other.pixel})`);

  // Hovering shows the message.
  await page.mouse.move(box.x + box.w / 2, box.y + box.h / 2);
  await page.waitForFunction(() => window.cellscopeView.tipText() !== '', null, { timeout: 5000 });
  assert.match(await v(() => window.cellscopeView.tipText()), /fc1 · nn\.Dense: nn\.Dense expects 1600 input features.*receives 9216/);

  // Clicking selects it: the panel shows the code, the message, the api/op and the source.
  await page.mouse.click(box.x + box.w / 2, box.y + box.h / 2);
  assert.equal((await v(() => window.cellscopeView.state())).selection, FAILED);
  const panel = await v(() => window.cellscopeView.panelText());
  assert.match(panel, /fc1 · nn\.Dense/);
  assert.match(panel, /shape-mismatch nn\.Dense expects 1600 input features \(in_channels=1600\), but receives 9216/);
  assert.match(panel, /api\s+nn\.Dense/);
  assert.match(panel, /op\s+MatMul/);
  assert.match(panel, /mnist_article_bug\.py:22:23/);  // no editor: the location as file:line:col
  assert.match(panel, /flatten:0\s+1×9216/);
  await page.screenshot({ path: path.join(artifacts, 'failure-semantic-selected.png') });

  // The search box finds it by its message.
  await page.fill('.search-input', 'expects 1600');
  assert.match(await page.innerText('.results'), /1 match[\s\S]*nn\.Dense\s+fc1/);
  await page.fill('.search-input', '');

  // Hardware layer: everything was dead code; no "0 ms" anywhere, the failure is still drawn.
  await v(() => window.cellscopeView.setLayer('hardware'));
  await idle(page);
  assert.equal((await v(() => window.cellscopeView.state())).selection, FAILED, 'the selection stays across layers');
  await v(() => window.cellscopeView.select(null));
  const summary = await v(() => window.cellscopeView.panelText());
  assert.match(summary, /Unavailable: construct stops at fc1 \(nn\.Dense, line 22\): nn\.Dense expects 1600/);
  assert.doesNotMatch(summary, /\b0 ms|\b0 \/ s|kernels\s+0/);
  assert.match(await v(() => window.cellscopeView.paneNote()), /^Unavailable: construct stops at fc1 \(nn\.Dense, line 22\)/);
  assert.ok(await v((id) => window.cellscopeView.nodeRect(id), FAILED), 'drawn in the hardware layer');
  assert.deepEqual((await v(() => window.cellscopeView.edges())).filter((e) => e.tgt === FAILED), [],
    'flatten was eliminated: no edge');
  assert.match(await page.innerText('.legend'), /Cycles: unavailable, construct stops at fc1/);
  await page.screenshot({ path: path.join(artifacts, 'failure-hardware-unavailable.png') });

  await v(() => window.cellscopeView.setLayer('optimized'));
  await idle(page);
  assert.match(await v(() => window.cellscopeView.panelText()), /Unavailable: construct stops at fc1/);
  assert.deepEqual(page.errors, []);
});

test('a failure beside compiled kernels: the figures are shown, labelled partial, the edge comes from the fused kernel', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellscope-failure-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const model = path.join(dir, 'two_heads.py');
  fs.writeFileSync(model, `import mindspore as ms
from mindspore import nn


class TwoHeads(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = nn.Dense(64, 32)
        self.relu = nn.ReLU()
        self.good = nn.Dense(32, 10)
        self.bad = nn.Dense(16, 10)

    def construct(self, x):
        h = self.relu(self.body(x))
        return self.good(h), self.bad(h)


net = TwoHeads()
net(ms.Tensor(ms.numpy.ones((4, 64)), ms.float32))
`);
  const { page } = await open(t, model, ['--target', 'ascend910']);
  const v = (fn, arg) => hook(page, fn, arg);
  const id = 'failed:bad';
  assert.ok((await v(() => window.cellscopeView.edges())).some((e) => e.src === 'relu' && e.tgt === id));
  await v(() => window.cellscopeView.setLayer('hardware'));
  await idle(page);
  // relu was fused into the body's dense kernel: the edge comes from it.
  const edges = await v(() => window.cellscopeView.edges());
  assert.ok(edges.some((e) => e.src === 'dense/body' && e.tgt === id), JSON.stringify(edges));
  const summary = await v(() => window.cellscopeView.panelText());
  assert.match(summary, /Hardware estimate \(partial\)/i);
  assert.match(summary, /Partial: construct stops at bad \(nn\.Dense, line 15\)/);
  assert.match(summary, /latency\s+[\d.]+ ms/);
  assert.match(await v(() => window.cellscopeView.paneNote()), /^Partial: construct stops at bad/);
  assert.match(await page.innerText('.legend'), /partial: construct stops at bad/);
  await page.screenshot({ path: path.join(artifacts, 'failure-hardware-partial.png') });
  assert.deepEqual(page.errors, []);
});
