// The view tier, the search box (issue 16: "search filters (op type, attribute) with select all
// matches"): the real `cellscope view` of ResNet-50 in Debian's chromium (playwright-core). The
// counts are checked against the graph `cellscope graph` writes for the same model and target,
// never against numbers written here: op:Conv2D, a Cell class with an op, an attribute value, a
// hardware bound; the count "i of n", Enter / Shift+Enter, the matches outlined on the canvas
// (collapsed groups holding one too), Alt+Enter selecting them all (outlined as selected, listed
// in the panel, a row goes to its node), Escape clearing everything. Light and dark screenshots
// in $CELLSCOPE_ARTIFACTS.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

import { artifacts, bin, corpus, newPage, startView, useBrowser } from './lib.mjs';

const resnet = path.join(corpus, 'models', 'resnet50.py');
const browser = useBrowser(test);
const hook = (page, fn, arg) => page.evaluate(fn, arg);
const idle = (page) => hook(page, () => window.cellscopeView.idle());

/** The graph document `cellscope graph` writes for ResNet-50 (the same analysis the view shows). */
function graphDocument(layer) {
  const r = spawnSync(bin, ['graph', resnet, '--layer', layer, '--target', 'ascend910', '--compact'], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout).cells.find((c) => c.name === 'resnet50()');
}

async function open(t, colorScheme = 'light') {
  const { url } = await startView(t, resnet, ['--target', 'ascend910']);
  const page = await newPage(browser, t, { colorScheme });
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  return page;
}

// The colour nearest `cssVar` across the top edge of a drawn item (where its outline is), and its distance.
async function outline(page, id, cssVar) {
  return hook(page, ({ id, cssVar }) => {
    const box = window.cellscopeView.nodeRect(id);
    if (!box) return null;
    const canvas = document.querySelector('.graph-canvas');
    const r = canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const ctx = canvas.getContext('2d');
    const probe = document.createElement('div');
    probe.style.color = getComputedStyle(canvas.parentElement).getPropertyValue(cssVar).trim();
    document.body.appendChild(probe);
    const want = getComputedStyle(probe).color.match(/\d+/g).map(Number).slice(0, 3);
    probe.remove();
    let best = 999;
    for (let dy = -3; dy <= 0.5; dy += 0.5) {
      for (const fx of [0.3, 0.5, 0.7]) {
        const d = ctx.getImageData(Math.round((box.x + box.w * fx - r.left) * dpr), Math.round((box.y + dy - r.top) * dpr), 1, 1).data;
        best = Math.min(best, Math.max(...[0, 1, 2].map((i) => Math.abs(d[i] - want[i]))));
      }
    }
    return best;
  }, { id, cssVar });
}

test('search filters on ResNet-50: counts from the graph, next / previous, marks, select all, Escape', async (t) => {
  const sem = graphDocument('semantic');
  const convs = sem.nodes.filter((n) => n.op === 'Conv2D').map((n) => n.id);
  assert.ok(convs.length > 0);
  const page = await open(t);

  // op:Conv2D: every Conv2D of the document, in execution order, outlined in the match colour.
  await page.locator('.search-input').fill('op:Conv2D');
  let s = await hook(page, () => window.cellscopeView.searchState());
  assert.deepEqual(s.matches, convs);
  assert.equal(s.text, `${convs.length} matches`);
  assert.equal(await page.locator('.search-count').innerText(), `${convs.length} matches`);
  assert.match(await page.locator('.results').innerText(), new RegExp(`^${convs.length} matches`));
  await hook(page, () => window.cellscopeView.paintNow());
  assert.ok((await outline(page, 'conv1', '--cs-highlight')) <= 40, 'conv1 is outlined in the match colour');
  assert.ok((await outline(page, 'bn1', '--cs-highlight')) > 60, 'bn1 is not');
  await page.screenshot({ path: path.join(artifacts, 'search-op-conv2d.png') });

  // Enter / Shift+Enter: next and previous, the count says which; the node is selected and in view.
  await page.locator('.search-input').press('Enter');
  s = await hook(page, () => window.cellscopeView.searchState());
  assert.equal(s.text, `1 of ${convs.length}`);
  await page.locator('.search-input').press('Enter');
  await idle(page);
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, convs[1]);
  assert.equal(await page.locator('.search-count').innerText(), `2 of ${convs.length}`);
  assert.ok((await hook(page, (id) => window.cellscopeView.nodeScreenPosition(id), convs[1]))?.visible);
  await page.locator('.search-input').press('Shift+Enter');
  await page.locator('.search-input').press('Shift+Enter');
  await idle(page);
  assert.equal((await hook(page, () => window.cellscopeView.searchState())).text, `${convs.length} of ${convs.length}`, 'wraps around');
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, convs[convs.length - 1]);
  assert.equal(await page.locator('.search-input').evaluate((e) => e === document.activeElement), true, 'the box keeps the focus');

  // Collapsed groups holding matches are outlined too.
  await hook(page, () => window.cellscopeView.select(null));
  await hook(page, () => window.cellscopeView.collapseAll());
  await idle(page);
  await hook(page, () => window.cellscopeView.fit());
  s = await hook(page, () => window.cellscopeView.searchState());
  assert.ok(s.groups.includes('g:layer1') && s.groups.includes('g:layer4.2'), JSON.stringify(s.groups));
  await hook(page, () => window.cellscopeView.paintNow());
  assert.ok((await outline(page, 'g:layer1', '--cs-highlight')) <= 40, 'the collapsed layer1 is outlined in the match colour');

  // Alt+Enter: every match selected (outlined as selected, the groups too), listed in the panel.
  await page.locator('.search-input').focus();
  await page.locator('.search-input').press('Alt+Enter');
  s = await hook(page, () => window.cellscopeView.searchState());
  assert.deepEqual(s.multi, { query: 'op:Conv2D', ids: convs });
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, null);
  await hook(page, () => window.cellscopeView.paintNow());
  assert.ok((await outline(page, 'g:layer2', '--cs-accent')) <= 40, 'a collapsed group holding selected nodes is outlined as selected');
  const panel = await hook(page, () => window.cellscopeView.panelText('shown'));
  assert.match(panel, new RegExp(`^${convs.length} selected`));
  assert.match(panel, /matches of op:Conv2D/);
  assert.equal(await page.locator('.panel table.matches tr.match').count(), convs.length);
  const flops = sem.nodes.filter((n) => n.op === 'Conv2D').reduce((a, n) => a + (n.flops ?? 0), 0);
  assert.match(panel, new RegExp(`FLOPs\\s+${(flops / 1e9).toPrecision(3)}G`));
  await hook(page, () => window.cellscopeView.expandAll());
  await idle(page);
  await hook(page, (id) => window.cellscopeView.select(id).then(() => window.cellscopeView.select(null)), convs[5]);  // brought into view
  await hook(page, () => window.cellscopeView.paintNow());
  assert.ok((await outline(page, convs[5], '--cs-accent')) <= 40, `${convs[5]} is outlined as selected`);
  assert.ok((await outline(page, convs[5].replace(/conv\d$/, 'bn1'), '--cs-accent')) > 60, 'its BatchNorm is not');
  await page.screenshot({ path: path.join(artifacts, 'search-select-all.png') });

  // A row of the list goes to its node; the panel then leads back to the list.
  const target = convs[7];
  await page.locator(`.panel tr.match[data-id="${target}"] a.goto`).click();
  await idle(page);
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, target);
  assert.ok((await hook(page, (id) => window.cellscopeView.nodeScreenPosition(id), target))?.visible);
  assert.match(await page.locator('.panel .back-matches').innerText(), new RegExp(`${convs.length} selected`));
  await page.locator('.panel .back-matches').click();
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, null);
  assert.match(await hook(page, () => window.cellscopeView.panelText('shown')), new RegExp(`^${convs.length} selected`));

  // Escape in the box: the query, the marks and the selection go; the panel is the Cell's again.
  await page.locator('.search-input').focus();
  await page.locator('.search-input').press('Escape');
  s = await hook(page, () => window.cellscopeView.searchState());
  assert.equal(s.query, '');
  assert.equal(s.multi, null);
  assert.deepEqual((await hook(page, () => window.cellscopeView.details())).highlighted, []);
  assert.match(await hook(page, () => window.cellscopeView.panelText('shown')), /^ResNet/);
  assert.deepEqual(page.errors, []);
});

test('search filters combine: a Cell class with an op, an attribute value, a hardware bound; errors are said', async (t) => {
  const sem = graphDocument('semantic');
  const hw = graphDocument('hardware');
  const page = await open(t, 'dark');
  const search = (q) => hook(page, (q) => window.cellscopeView.search(q), q);

  // type:ResidualBlock op:Add: the Adds inside a ResidualBlock instance (the class from scopeClasses).
  const inBlock = (scope) => {
    const parts = (scope ?? '').split('.');
    for (let i = 1; i <= parts.length; i++) if (sem.scopeClasses?.[parts.slice(0, i).join('.')] === 'ResidualBlock') return true;
    return false;
  };
  const adds = sem.nodes.filter((n) => n.op === 'Add' && inBlock(n.scope)).map((n) => n.id);
  assert.ok(adds.length > 0);
  assert.deepEqual((await search('type:ResidualBlock op:Add')).matches, adds);

  // attr:kernel_size=3 op:Conv2D: 3 and (3, 3) alike.
  const k3 = sem.nodes.filter((n) => n.op === 'Conv2D' && [3, '[3,3]'].includes(Array.isArray(n.attrs?.kernel_size) ? JSON.stringify(n.attrs.kernel_size) : n.attrs?.kernel_size)).map((n) => n.id);
  assert.ok(k3.length > 0 && k3.length < sem.nodes.filter((n) => n.op === 'Conv2D').length);
  assert.deepEqual((await search('op:Conv2D attr:kernel_size=3')).matches, k3);
  assert.deepEqual((await search('op:Conv2D -attr:kernel_size=3')).matches.length,
    sem.nodes.filter((n) => n.op === 'Conv2D').length - k3.length);

  // bound:memory in the hardware layer: the kernels the hardware model says are memory-bound.
  await hook(page, () => window.cellscopeView.setLayer('hardware'));
  await idle(page);
  const memory = hw.optimized.nodes.filter((n) => (n.hardware ?? []).some((k) => k.bound === 'memory')).map((n) => n.id);
  assert.ok(memory.length > 0);
  const s = await search('bound:memory');
  assert.deepEqual([...s.matches].sort(), [...memory].sort());
  assert.equal(s.text, `${memory.length} match${memory.length === 1 ? '' : 'es'}`);
  // op:Conv2D in the hardware layer: the kernels made from a Conv2D (FusedConv2D).
  const convKernels = hw.optimized.nodes.filter((n) => n.op === 'Conv2D' ||
    (n.origins ?? []).some((o) => hw.nodes.find((x) => x.id === o)?.op === 'Conv2D')).map((n) => n.id);
  assert.deepEqual((await search('op:Conv2D')).matches.sort(), convKernels.sort());
  await page.locator('.search-input').focus();
  await page.locator('.search-input').press('Alt+Enter');
  await page.screenshot({ path: path.join(artifacts, 'search-select-all-hardware-dark.png') });

  // What cannot be read is said in the list, and matches nothing.
  await page.locator('.search-input').fill('op:/(/');
  assert.equal(await page.locator('.search-count').innerText(), 'invalid');
  assert.match(await page.locator('.results').innerText(), /bad regular expression/);
  await page.locator('.search-input').fill('ops:Conv2D');
  assert.match(await page.locator('.results').innerText(), /ops: is not a filter, searched as text/);
  // An empty box, focused, shows the syntax; an example goes into the box.
  await page.locator('.search-input').fill('');
  assert.match(await page.locator('.results').innerText(), /op:Conv2D[\s\S]*attr:kernel_size=3[\s\S]*bound:memory/);
  assert.match(await page.locator('.search-input').getAttribute('title'), /type:Bottleneck[\s\S]*Alt\+Enter/);
  await page.locator('.results .example[data-example="dtype:float16"]').click();
  assert.equal(await page.locator('.search-input').inputValue(), 'dtype:float16');
  assert.ok((await hook(page, () => window.cellscopeView.searchState())).count > 0);
  assert.deepEqual(page.errors, []);
});
