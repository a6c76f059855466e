// The view tier, parallel strategies (issue 21): the real `cellscope view` on the repository's
// parallel cases (tests/parallel/cases) in Debian's chromium. A sharded operator is drawn inside a
// red dashed frame with its split written on it; nodes are coloured by pipeline stage, with a
// legend; the device picker switches the edge labels from global to one device's shapes.
// Screenshots in $CELLSCOPE_ARTIFACTS.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { artifacts, newPage, repo, startView, useBrowser } from './lib.mjs';

const browser = useBrowser(test);
const cases = path.join(repo, 'tests', 'parallel', 'cases');

async function open(t, name) {
  const { url } = await startView(t, path.join(cases, name));
  const page = await newPage(browser, t);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await page.evaluate(() => window.cellscopeView.expandAll());
  return page;
}

const parallel = (page) => page.evaluate(() => window.cellscopeView.parallel());

// Canvas pixels (device pixels) of the active pane within a client-coordinate box.
async function pixels(page, box) {
  return page.evaluate((b) => {
    const c = document.querySelector('canvas.graph-canvas');
    const r = c.getBoundingClientRect();
    const k = c.width / r.width;
    const x = Math.round((b.x - r.left) * k), y = Math.round((b.y - r.top) * k);
    const w = Math.max(1, Math.round(b.w * k)), h = Math.max(1, Math.round(b.h * k));
    return Array.from(c.getContext('2d').getImageData(x, y, w, h).data);
  }, box);
}

function near(data, hex, tol = 40) {
  const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (Math.abs(data[i] - want[0]) + Math.abs(data[i + 1] - want[1]) + Math.abs(data[i + 2] - want[2]) <= tol) n++;
  }
  return n;
}

test('a sharded MatMul: red dashed frame with its split, and the device picker switches edge shapes', async (t) => {
  const page = await open(t, 'matmul_valid.py');
  let p = await parallel(page);
  const framed = p.items.filter((it) => it.frame);
  assert.equal(framed.length, 1, 'one sharded operator');
  const mm = framed[0];
  assert.equal(mm.frame, 'split ((2, 4), (4, 1)) · AllReduce ×4');
  // The frame is drawn in the shard colour: its left side, a dashed line.
  const left = await pixels(page, { x: mm.x - 1, y: mm.y + 2, w: 3, h: mm.h - 4 });
  assert.ok(near(left, p.shard) > 4, 'red pixels on the frame\'s left side');
  // The split is written in the band under the card, in the same colour.
  const band = await pixels(page, { x: mm.x + 4, y: mm.y + mm.h * 0.75, w: mm.w * 0.6, h: mm.h * 0.22 });
  assert.ok(near(band, p.shard, 90) > 10, 'the split text is drawn in the band');
  await page.screenshot({ path: path.join(artifacts, 'parallel-matmul-global.png') });

  // The picker: global and ranks 0..7 (device_num=8 in the script), the tooltip on repeats.
  assert.equal(p.picker, true);
  assert.deepEqual(p.options, ['global', ...Array.from({ length: 8 }, (_, i) => `rank ${i}`)]);
  assert.match(p.tip, /same shape on every rank/);
  assert.match(p.tip, /strategy repeats/);
  const labelInto = async (id) => (await page.evaluate(() => window.cellscopeView.edges())).filter((e) => e.tgt === id).map((e) => e.label);
  const global = await labelInto(mm.id);
  assert.ok(global.some((l) => /^16×64 f32/.test(l)), `global x: ${global}`);
  assert.ok(global.some((l) => /^64×32 f32/.test(l)), `global w: ${global}`);
  await page.selectOption('.device-picker', '3');
  await page.waitForFunction(() => window.cellscopeView.parallel().rank === 3);
  const local = await labelInto(mm.id);
  assert.ok(local.some((l) => /^8×16 f32/.test(l)), `per device x: ${local}`);
  assert.ok(local.some((l) => /^16×32 f32/.test(l)), `per device w: ${local}`);
  p = await parallel(page);
  const legend = await page.evaluate(() => window.cellscopeView.legend().text);
  assert.match(legend, /sharded \(split\)/);
  assert.match(legend, /shapes of rank 3/);
  await page.screenshot({ path: path.join(artifacts, 'parallel-matmul-rank3.png') });
  await page.selectOption('.device-picker', '');
  await page.waitForFunction(() => window.cellscopeView.parallel().rank === null);
  assert.deepEqual(await labelInto(mm.id), global);
  assert.deepEqual(page.errors, []);
});

test('pipeline stages: nodes coloured per stage with a legend; a rank fades the other stage', async (t) => {
  const page = await open(t, 'pipeline_valid.py');
  let p = await parallel(page);
  const staged = p.items.filter((it) => it.stage !== null);
  const stages = [...new Set(staged.map((it) => it.stage))].sort();
  assert.deepEqual(stages, [0, 1]);
  const colour = new Map(staged.map((it) => [it.stage, it.stageColour]));
  assert.notEqual(colour.get(0), colour.get(1));
  // Each staged node carries its stage's colour (the stripe along its top).
  for (const s of [0, 1]) {
    const it = staged.find((x) => x.stage === s && x.w > 40);
    const top = await pixels(page, { x: it.x + 8, y: it.y + 1, w: it.w - 16, h: 2 });
    assert.ok(near(top, colour.get(s)) > 10, `stage ${s}'s colour on ${it.id}`);
  }
  const legend = await page.evaluate(() => window.cellscopeView.legend().text);
  assert.match(legend, /stage 0/);
  assert.match(legend, /stage 1/);
  assert.ok(p.options.includes('rank 5 (stage 1)'), p.options.join(','));
  await page.evaluate(() => window.cellscopeView.setDevice(5));
  p = await parallel(page);
  assert.ok(p.items.filter((it) => it.stage === 0).every((it) => !it.onRank), 'stage 0 is not on rank 5');
  assert.ok(p.items.filter((it) => it.stage === 1).every((it) => it.onRank));
  await page.screenshot({ path: path.join(artifacts, 'parallel-pipeline-rank5.png') });
  assert.deepEqual(page.errors, []);
});
