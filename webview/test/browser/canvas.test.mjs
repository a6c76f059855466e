// The view tier, the graph canvas (issue 16): edge labels with dtype and layout format placed clear
// of group headers, nodes and each other (ResNet-50, every layer, both directions); the target's
// own vocabulary on CPU and Ascend targets (node text, tooltips, legend, summary); the collapsed
// groups' own colour scale; tooltips and accessible names; the dockable, hideable legend and Fit
// around it. The real `cellscope view` in Debian's chromium; screenshots in $CELLSCOPE_ARTIFACTS.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { artifacts, corpus, newPage, startView, useBrowser } from './lib.mjs';

const resnet = path.join(corpus, 'models', 'resnet50.py');
const mnist = path.join(corpus, 'models', 'mnist_article.py');
const browser = useBrowser(test);

async function open(t, model, args, options = {}) {
  const { url } = await startView(t, model, args);
  const page = await newPage(browser, t, options);
  await page.goto(url);
  await ready(page);
  return { page, url, v: (fn, arg) => page.evaluate(fn, arg) };
}

async function ready(page) {
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await page.evaluate(() => window.cellscopeView.idle());
  await frame(page);
}

const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
const box = async (page, sel) => {
  const b = await page.locator(sel).first().boundingBox();
  return b && { x: b.x, y: b.y, w: b.width, h: b.height };
};
const overlap = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
const LEGEND = '.views > .pane:first-child > .legend';
const ASCEND_WORDS = /\bcube\b|\bvector\b|ai ?core|ai cpu|dispatch|\bGM\b|MTE|fractal/i;

test('edge labels on ResNet-50: shape, dtype and format, never over a group header, a node or another label', async (t) => {
  const { page, v } = await open(t, resnet, ['--target', 'ascend910']);
  for (const layer of ['semantic', 'optimized', 'hardware']) {
    await v((l) => window.cellscopeView.setLayer(l), layer);
    for (const dir of ['DOWN', 'RIGHT']) {
      await v((d) => window.cellscopeView.setDirection(d), dir);
      await v(() => window.cellscopeView.idle());
      const { labelled, labels } = await v(() => window.cellscopeView.edgeLabels());
      const headers = await v(() => window.cellscopeView.headerBoxes());
      const items = await v(() => window.cellscopeView.items());
      const what = `${layer} ${dir}`;
      assert.ok(headers.length >= 16, `${what}: the blocks are expanded (${headers.length} headers)`);
      assert.ok(labelled > 60, `${what}: ${labelled} labelled edges`);
      assert.ok(labels.length >= 0.9 * labelled, `${what}: ${labels.length} of ${labelled} labels placed`);
      for (const l of labels) {
        for (const hd of headers) assert.ok(!overlap(l, hd), `${what}: "${l.text}" (${l.src} -> ${l.tgt}) over the header of ${hd.id}`);
        for (const it of items) assert.ok(!overlap(l, it), `${what}: "${l.text}" over ${it.id}`);
      }
      for (let i = 0; i < labels.length; i++) {
        for (let j = i + 1; j < labels.length; j++) assert.ok(!overlap(labels[i], labels[j]), `${what}: "${labels[i].text}" overprints "${labels[j].text}"`);
      }
      // Every label is a shape and a short dtype, plus the layout pass's format in the optimized layers.
      const texts = labels.map((l) => l.text.replace('\n', ' '));
      const re = layer === 'semantic' ? /^[\d×]+ (f32|i32|i64)$/ : /^[\d×]+ (f32|f16) (NCHW|NC1HWC0|FRACTAL_NZ|ND)$/;
      for (const s of texts) assert.match(s, re, `${what}: ${s}`);
      if (dir === 'RIGHT') assert.ok(labels.every((l) => l.text.split('\n').length === 2), 'left to right: two lines between the layers');
    }
  }
  await v(() => window.cellscopeView.setDirection('DOWN'));
  await v(() => window.cellscopeView.idle());
  const byEdge = async () => new Map((await v(() => window.cellscopeView.edgeLabels())).labels.map((l) => [`${l.src}>${l.tgt}`, l]));
  // The optimized layers: the format the layout pass chose, per tensor.
  let m = await byEdge();
  assert.equal(m.get('TransData/Cast/x:0/float16:0/NC1HWC0>conv/conv1')?.text, '1×3×224×224 f16 NC1HWC0');
  assert.equal(m.get('Cast/x:0/float16>TransData/Cast/x:0/float16:0/NC1HWC0')?.text, '1×3×224×224 f16 NCHW');
  assert.ok([...m.values()].some((l) => / FRACTAL_NZ$/.test(l.text)), 'the Dense input in FRACTAL_NZ');
  // The semantic layer: shapes and dtypes.
  await v(() => window.cellscopeView.setLayer('semantic'));
  m = await byEdge();
  assert.equal(m.get('x>conv1')?.text, '1×3×224×224 f32');
  assert.equal(m.get('conv1>bn1')?.text, '1×64×112×112 f32');
  // At 100 % they are drawn: ink in a label's box, and the block's header drawn clear of it.
  await v(() => window.cellscopeView.select('layer1.0.conv2'));
  await v(() => window.cellscopeView.idle());
  await frame(page);
  const shown = (await v(() => window.cellscopeView.edgeLabels())).labels.filter((l) => l.drawn && l.y > 60 && l.y + l.h < 800 && l.x > 0 && l.x + l.w < 1000);
  assert.ok(shown.length >= 5, `${shown.length} labels on screen`);
  const ink = await v((b) => {
    const c = document.querySelector('.graph-canvas');
    const r = c.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const d = c.getContext('2d').getImageData(Math.round((b.x - r.left) * dpr), Math.round((b.y - r.top) * dpr), Math.max(1, Math.round(b.w * dpr)), Math.max(1, Math.round(b.h * dpr))).data;
    let dark = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 3 * 160) dark++;
    return dark;
  }, shown[0]);
  assert.ok(ink > 20, `text drawn in "${shown[0].text}" (${ink} dark pixels)`);
  await page.screenshot({ path: path.join(artifacts, 'edge-labels-resnet50-semantic.png') });
  await v(() => window.cellscopeView.setLayer('optimized'));
  await v(() => window.cellscopeView.select('conv/layer1.0.conv2'));
  await v(() => window.cellscopeView.idle());
  await page.screenshot({ path: path.join(artifacts, 'edge-labels-resnet50-optimized.png') });
  // Zoomed out below a readable size: no labels are drawn.
  await v(() => window.cellscopeView.zoom(0.5));
  assert.ok((await v(() => window.cellscopeView.edgeLabels())).labels.every((l) => !l.drawn));
  assert.deepEqual(page.errors, []);
});

test('a CPU target in CPU words, an Ascend target in Ascend words: node text, tooltips, legend, summary', async (t) => {
  const cpu = await open(t, mnist, ['--target', 'cpu']);
  await cpu.v(() => window.cellscopeView.setLayer('hardware'));
  await frame(cpu.page);
  // Another layer, taller nodes: the view, still as Fit left it, is fitted again clear of the legend.
  const lg = await box(cpu.page, LEGEND);
  for (const it of await cpu.v(() => window.cellscopeView.items())) assert.ok(!overlap(it, lg), `${it.id} under the legend`);
  const pool = await cpu.v(() => window.cellscopeView.hover('pool'));
  assert.match(pool, /^MaxPool · pool/);
  assert.match(pool, /CPU on \d+ cores · [\d.k]+ cyc · [\d.]+ µs/);
  assert.match(pool, /overhead-bound: the CPU executor's per-operator overhead takes longer than the work itself \([\d.]+ µs against [\d.]+ µs of work\)/);
  assert.match(pool, /cyc: clock cycles per CPU core at 3000 MHz/);
  await cpu.page.screenshot({ path: path.join(artifacts, 'vocab-mnist-cpu.png') });
  const fc1 = await cpu.v(() => window.cellscopeView.hover('dense/fc1'));
  assert.match(fc1, /memory-bound: moving its bytes \([\d.k]+ cycles; .* read, .* written in DRAM\) takes longer than its arithmetic/);
  const legend = (await cpu.v(() => window.cellscopeView.legend())).text;
  assert.match(legend, /overhead\s+the CPU executor's per-operator overhead/);
  const summary = await cpu.v(() => window.cellscopeView.panelText());
  assert.match(summary, /CPU · overhead/);
  assert.match(summary, /DRAM traffic/);
  await cpu.v(() => window.cellscopeView.select('pool'));
  const a11y = await cpu.v(() => window.cellscopeView.a11y());
  assert.match(a11y.description, /^MaxPool pool; output 1×64×12×12 float32 NCHW; CPU, [\d.k]+ cycles, overhead$/);
  for (const [what, s] of [['pool', pool], ['fc1', fc1], ['legend', legend], ['name', a11y.description],
    ['summary', summary.replace(/Analytical model:[^\n]*/, '')]]) assert.doesNotMatch(s, ASCEND_WORDS, `${what}: ${s}`);
  // The core timeline's bound words follow the target too.
  await cpu.v(() => window.cellscopeView.setTimeline(true));
  assert.match(await cpu.page.innerText('.tl-legend'), /overhead-bound/);
  assert.doesNotMatch(await cpu.page.innerText('.tl-legend'), /dispatch/);

  const asc = await open(t, mnist, ['--target', 'ascend910b'], { colorScheme: 'dark' });
  await asc.v(() => window.cellscopeView.setLayer('hardware'));
  const conv = await asc.v(() => window.cellscopeView.hover('conv/conv1'));
  assert.match(conv, /Cube on \d+ AI cores · [\d.k]+ cyc/);
  assert.match(conv, /dispatch-bound: launching the kernel takes longer than running it \(2 µs against [\d.]+ µs of work\)/);
  assert.match(conv, /cyc: clock cycles per AI core at [\d.]+ MHz/);
  assert.match((await asc.v(() => window.cellscopeView.legend())).text, /dispatch\s+launching the kernel on the AI cores/);
  assert.match(await asc.v(() => window.cellscopeView.panelText()), /cube · vector · dispatch/);
  await asc.page.screenshot({ path: path.join(artifacts, 'vocab-mnist-ascend910b-dark.png') });
  assert.deepEqual([...cpu.page.errors, ...asc.page.errors], []);
});

test('collapsed groups are coloured on their own scale and their tooltip explains Σ', async (t) => {
  const { page, v } = await open(t, resnet, ['--target', 'ascend910']);
  await v(() => window.cellscopeView.setLayer('hardware'));
  await v(() => window.cellscopeView.collapseAll());
  await v(() => window.cellscopeView.idle());
  await v(() => window.cellscopeView.fit());
  await frame(page);
  const stages = ['g:layer1', 'g:layer2', 'g:layer3', 'g:layer4'];
  const colours = await v((ids) => ids.map((id) => window.cellscopeView.groupColour(id)), stages);
  // On the nodes' scale every group was the top colour; on their own the four stages differ.
  assert.ok(new Set(colours).size >= 3, `group colours ${colours}`);
  assert.ok(colours.filter((c) => c === 'rgb(253,231,37)').length <= 1, `saturated: ${colours}`);
  const nodeColours = await v(() => ['conv/conv1', 'maxpool'].map((id) => window.cellscopeView.groupColour(id)));
  assert.notDeepEqual(nodeColours[0], nodeColours[1], 'nodes keep their own scale');
  const legend = (await v(() => window.cellscopeView.legend())).text;
  assert.match(legend, /Σ per collapsed group \(own scale\)/);
  const tip = await v(() => window.cellscopeView.hover('g:layer3'));
  assert.match(tip, /^layer3 · SequentialCell/);
  assert.match(tip, /Σ [\d.k]+ cyc/);
  assert.match(tip, /Σ: the sum over the \d+ nodes inside this group\./);
  await page.screenshot({ path: path.join(artifacts, 'group-scale-resnet50.png') });
  // Hovering waits a moment before the tooltip shows, then hides it when the pointer leaves.
  await v(() => window.cellscopeView.hover(null));
  const p = await v(() => window.cellscopeView.nodeScreenPosition('g:layer2'));
  await page.mouse.move(p.x, p.y);
  assert.equal(await v(() => window.cellscopeView.tipText()), '');
  await page.waitForFunction(() => /Σ: the sum over/.test(window.cellscopeView.tipText()), null, { timeout: 3000 });
  await page.mouse.move(5, 400);
  assert.equal(await v(() => window.cellscopeView.tipText()), '');
  assert.deepEqual(page.errors, []);
});

test('the canvas has an accessible name; a node chosen from the keyboard is announced', async (t) => {
  const { page, v } = await open(t, resnet, ['--target', 'ascend910']);
  let a = await v(() => window.cellscopeView.a11y());
  assert.equal(a.role, 'application');
  assert.match(a.label, /^Graph of resnet50\(\), semantic layer, 176 nodes\. Arrow keys move along the edges/);
  await page.locator('.graph-canvas').focus();
  await page.keyboard.press('ArrowDown');  // the first node
  await v(() => window.cellscopeView.idle());
  await page.keyboard.press('ArrowDown');  // its consumer
  await v(() => window.cellscopeView.idle());
  a = await v(() => window.cellscopeView.a11y());
  assert.equal(a.live, 'Conv2D conv1; output 1×64×112×112 float32');
  assert.equal(a.description, a.live);
  assert.deepEqual(page.errors, []);
});

test('the legend: hidden from the toolbar, docked in each corner, collapsed to a strip, remembered; Fit keeps the graph clear of it', async (t) => {
  const { page, url, v } = await open(t, resnet, ['--target', 'ascend910']);
  const btn = page.locator('button[aria-label="Legend"]');
  assert.equal(await btn.getAttribute('aria-pressed'), 'true');
  assert.ok(await page.locator(LEGEND).isVisible());
  await btn.click();
  assert.equal(await btn.getAttribute('aria-pressed'), 'false');
  assert.ok(!(await page.locator(LEGEND).isVisible()));
  await page.goto(url);
  await ready(page);
  assert.ok(!(await page.locator(LEGEND).isVisible()), 'still hidden after a reload');
  await page.locator('button[aria-label="Legend"]').click();
  assert.ok(await page.locator(LEGEND).isVisible());
  await v(() => window.cellscopeView.setLayer('hardware'));

  const clearOfLegend = async (what) => {
    await page.keyboard.press('0');
    await frame(page);
    const lg = await box(page, LEGEND);
    const pane = await box(page, '.pane');
    const mm = (await v(() => window.cellscopeView.minimap())).rect;
    assert.ok(lg.x >= pane.x && lg.y >= pane.y && lg.x + lg.w <= pane.x + pane.w && lg.y + lg.h <= pane.y + pane.h, `${what}: inside the pane`);
    assert.ok(!overlap(lg, mm), `${what}: legend ${JSON.stringify(lg)} over the overview ${JSON.stringify(mm)}`);
    const items = (await v(() => window.cellscopeView.items())).filter((it) => overlap(it, pane));
    assert.ok(items.length >= 5, `${what}: ${items.length} items shown`);
    for (const it of items) assert.ok(!overlap(it, lg), `${what}: ${it.id} ${JSON.stringify(it)} under the legend ${JSON.stringify(lg)}`);
    assert.ok((await v(() => window.cellscopeView.camera())).scale >= 0.5, `${what}: readable`);
    return { lg, pane };
  };
  // The blocks expanded (a long graph, shown from its start) and collapsed (shown whole), per corner.
  const where = { bl: [false, true], tl: [false, false], tr: [true, false], br: [true, true] };
  for (const corner of ['bl', 'tl', 'tr', 'br']) {
    assert.equal((await v(() => window.cellscopeView.legend())).prefs.corner, corner);
    for (const collapsed of [false, true]) {
      await v((c) => (c ? window.cellscopeView.collapseAll() : window.cellscopeView.expandAll()), collapsed);
      await v(() => window.cellscopeView.idle());
      const { lg, pane } = await clearOfLegend(`${corner}${collapsed ? ' collapsed' : ''}`);
      const [right, bottom] = where[corner];
      assert.equal(lg.x + lg.w / 2 > pane.x + pane.w / 2, right, `${corner}: left/right`);
      assert.equal(lg.y + lg.h / 2 > pane.y + pane.h / 2, bottom, `${corner}: top/bottom`);
    }
    await page.screenshot({ path: path.join(artifacts, `legend-${corner}.png`) });
    await page.locator(LEGEND + ' .lg-dock').click();  // the next corner
  }
  // Collapsed to a strip, in the top left; both remembered.
  await page.locator(LEGEND + ' .lg-dock').click();
  await page.locator(LEGEND + ' .lg-fold').click();
  let lg = await box(page, LEGEND);
  assert.ok(lg.h < 36, `a strip: ${lg.h} px`);
  await clearOfLegend('strip');
  await page.goto(url);
  await ready(page);
  const prefs = (await v(() => window.cellscopeView.legend())).prefs;
  assert.deepEqual(prefs, { shown: true, corner: 'tl', collapsed: true, explain: true });
  lg = await box(page, LEGEND);
  assert.ok(lg.h < 36 && lg.y < 100, JSON.stringify(lg));
  await page.locator(LEGEND + ' .lg-fold').click();
  assert.ok((await box(page, LEGEND)).h > 36);
  await page.screenshot({ path: path.join(artifacts, 'legend-tl-reloaded.png') });
  assert.deepEqual(page.errors, []);
});
