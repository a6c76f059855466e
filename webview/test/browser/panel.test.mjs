// The view tier, the side panel (issue 16: "a tabbed details panel with copy buttons"): the real
// `cellscope view` of ResNet-50 in Debian's chromium (playwright-core). Tabs as the WAI-ARIA
// pattern (arrow keys, Home/End, focus kept), the chosen tab kept across selections, a live edit
// and the Cell summary; copy buttons writing the clipboard (and, when the Clipboard API refuses,
// the execCommand fallback) with visible feedback; the Debug tab while paused; the article model
// in both themes. Screenshots in $CELLSCOPE_ARTIFACTS.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { artifacts, corpus, newPage, startView, useBrowser } from './lib.mjs';

const resnet = path.join(corpus, 'models', 'resnet50.py');
const browser = useBrowser(test);
const hook = (page, fn, arg) => page.evaluate(fn, arg);
const idle = (page) => hook(page, () => window.cellscopeView.idle());
const tabs = (page) => hook(page, () => window.cellscopeView.panelTabs());

async function open(t, model, args, options = {}) {
  const { url, file } = await startView(t, model, args);
  const page = await newPage(browser, t, options);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  return { page, file, url };
}

const clipboard = (page) => page.evaluate(() => navigator.clipboard.readText());

test('tabs: keyboard, kept across selections, live updates and the Cell summary; each tab\'s content', async (t) => {
  const { page, file } = await open(t, resnet, ['--target', 'ascend910']);
  await hook(page, () => window.__noReload = true);
  const pos = await hook(page, () => window.cellscopeView.nodeScreenPosition('conv1'));
  await page.mouse.click(pos.x, pos.y);
  let tb = await tabs(page);
  assert.deepEqual(tb.tabs.map((x) => x.label), ['Node', 'Cost', 'Fusion · Memory']);
  assert.equal(tb.tabs.find((x) => x.selected).id, 'node');
  assert.equal(await page.locator('.panel [role="tablist"]').getAttribute('aria-label'), 'Node details');
  // Node: op, attributes, inputs / outputs with shapes and dtypes, the source as file:line:col.
  let shown = await hook(page, () => window.cellscopeView.panelText('shown'));
  assert.match(shown, /op\s+Conv2D/);
  assert.match(shown, /kernel_size\s+7/);
  assert.match(shown, /x:0\s+1×3×224×224 float32/);
  assert.match(shown, /#0\s+1×64×112×112 float32/);
  assert.match(shown, /resnet50\.py:\d+:\d+/);
  assert.doesNotMatch(shown, /Kernels made from it/, 'the other tabs are hidden');

  // The keyboard: focus the selected tab, arrows move and select, Home / End, the graph keeps its selection.
  await page.locator('.panel [role="tab"][aria-selected="true"]').focus();
  await page.keyboard.press('ArrowRight');
  tb = await tabs(page);
  assert.equal(tb.chosen, 'cost');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.tab), 'cost', 'the focus follows');
  assert.equal(await page.locator('#pt-panel-cost').isVisible(), true);
  assert.equal(await page.locator('#pt-panel-node').isVisible(), false);
  assert.equal(await page.locator('#pt-panel-cost').getAttribute('aria-labelledby'), 'pt-tab-cost');
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, 'conv1', 'arrow keys on a tab do not move the selection');
  await page.keyboard.press('End');
  assert.equal((await tabs(page)).chosen, 'opt');
  await page.keyboard.press('ArrowRight');
  assert.equal((await tabs(page)).chosen, 'node', 'wraps');
  await page.keyboard.press('ArrowLeft');
  assert.equal((await tabs(page)).chosen, 'opt');
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowRight');
  assert.equal((await tabs(page)).chosen, 'cost');
  shown = await hook(page, () => window.cellscopeView.panelText('shown'));
  assert.match(shown, /FLOPs\s+236M/);
  assert.match(shown, /intensity\s+[\d.]+ FLOPs\/byte/);
  assert.match(shown, /Kernels made from it[\s\S]*conv\/conv1\s+cube\s+(compute|memory|dispatch)/i);
  await page.screenshot({ path: path.join(artifacts, 'panel-cost-semantic.png') });

  // Another node: the Cost tab stays; a live edit re-renders it, still the Cost tab, focus on it.
  await hook(page, () => window.cellscopeView.select('layer2.0.conv2'));
  assert.equal((await tabs(page)).tabs.find((x) => x.selected).id, 'cost');
  assert.match(await hook(page, () => window.cellscopeView.panelText('shown')), /Kernels made from it[\s\S]*conv\/layer2\.0\.conv2/i);
  await page.locator('.panel [role="tab"][aria-selected="true"]').focus();
  const seq0 = await hook(page, () => window.cellscopeView.lastUpdateSeq());
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('out = self.mean(c5, (2, 3))', 'out = self.mean(c5, (2, 3))\n        out = out * 2'));
  await page.waitForFunction((s) => window.cellscopeView.lastUpdateSeq() > s, seq0, { timeout: 15000 });
  await idle(page);
  assert.ok(await hook(page, () => window.__noReload));
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, 'layer2.0.conv2');
  assert.equal((await tabs(page)).tabs.find((x) => x.selected).id, 'cost', 'a live update keeps the tab');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.tab), 'cost', 'and the focus on it');

  // The Fusion · Memory tab of a semantic node: the kernel it became, the decision and why.
  await page.locator('.panel [role="tab"][data-tab="opt"]').click();
  shown = await hook(page, () => window.cellscopeView.panelText('shown'));
  assert.match(shown, /became\s+conv\/layer2\.0\.conv2 FusedConv2D/);
  assert.match(shown, /FUSED fuse-conv \(conv\)[\s\S]*BatchNorm folded into the weights/i);
  // "Show in the layer" links: the optimized kernel, selected there.
  await page.locator('#pt-panel-opt a.goto-layer[data-layer="optimized"][data-id="conv/layer2.0.conv2"]').first().click();
  await idle(page);
  assert.equal((await hook(page, () => window.cellscopeView.state())).layer, 'optimized');
  assert.equal((await hook(page, () => window.cellscopeView.state())).selection, 'conv/layer2.0.conv2');
  shown = await hook(page, () => window.cellscopeView.panelText('shown'));
  assert.match(shown, /origins\s+layer2\.0\.conv2 Conv2D\s+layer2\.0\.bn2 BatchNorm\s+layer2\.0\.relu#2 ReLU/);
  assert.match(shown, /Memory placement[\s\S]*Shares its buffer with/i);
  await page.screenshot({ path: path.join(artifacts, 'panel-fusion-optimized.png') });

  // The hardware layer's Cost tab: unit, bound (explained), cycles, tiling and schedule from the server.
  await hook(page, () => window.cellscopeView.setLayer('hardware'));
  await hook(page, () => window.cellscopeView.setPanelTab('cost'));
  await page.waitForFunction(() => /Tiling[\s\S]*Instruction schedule/.test(window.cellscopeView.panelText('shown')), null, { timeout: 10000 });
  shown = await hook(page, () => window.cellscopeView.panelText('shown'));
  assert.match(shown, /unit\s+Cube/);
  assert.match(shown, /µs of the [\d.]+ µs estimate/);
  assert.match(await page.locator('.panel .bound').first().getAttribute('title'), /-bound: /);
  await page.screenshot({ path: path.join(artifacts, 'panel-cost-hardware.png') });

  // Nothing selected: the Cell summary, on the tab chosen (Cost: the estimate, the slowest kernels).
  await hook(page, () => window.cellscopeView.select(null));
  tb = await tabs(page);
  assert.deepEqual(tb.tabs.map((x) => x.label), ['Cell', 'Cost', 'Fusion · Memory']);
  assert.equal(tb.tabs.find((x) => x.selected).id, 'cost');
  shown = await hook(page, () => window.cellscopeView.panelText('shown'));
  assert.match(shown, /latency\s+[\d.]+ ms/);
  assert.match(shown, /Slowest kernels \(estimated time\)/i);
  // The input box is on the Cell tab, one click away; the whole panel's text has every tab.
  assert.equal(await page.locator('form.inputs-form input[name="shapes"]').isVisible(), false);
  assert.match(await hook(page, () => window.cellscopeView.panelText()), /inputs\s+1×3×224×224 float32/);
  await page.locator('.panel [role="tab"][data-tab="node"]').click();
  assert.equal(await page.locator('form.inputs-form input[name="shapes"]').isVisible(), true);
  await page.locator('.panel [role="tab"][data-tab="opt"]').click();
  shown = await hook(page, () => window.cellscopeView.panelText('shown'));
  assert.match(shown, /Not fused \(\d+\)[\s\S]*left alone/i);
  assert.match(shown, /buffer reuse\s+saves/);
  // Remembered across a reload.
  await page.reload();
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  assert.equal((await tabs(page)).tabs.find((x) => x.selected).id, 'opt');
  assert.deepEqual(page.errors, []);
});

test('copy buttons: id, shape, source location, attribute, JSON; "Copied" shown; the execCommand fallback', async (t) => {
  const { page, url } = await open(t, resnet, ['--target', 'ascend910']);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(url).origin });
  await hook(page, () => window.cellscopeView.select('layer1.0.conv2'));
  await page.locator('.panel .ph button.copy[aria-label="Copy node id"]').click();
  assert.equal(await clipboard(page), 'layer1.0.conv2');
  assert.equal(await page.locator('.panel .ph button.copy[aria-label="Copy node id"]').getAttribute('data-feedback'), 'Copied');
  assert.equal(await page.locator('.panel .copy-status').innerText(), 'Copied node id');
  // Visible: it fades in.
  await page.waitForFunction(() => Number(getComputedStyle(document.querySelector('.panel .copy-status')).opacity) > 0.5, null, { timeout: 2000 });
  await page.screenshot({ path: path.join(artifacts, 'panel-copied.png'), clip: { x: 1000, y: 40, width: 400, height: 500 } });
  await page.locator('.panel tr:has-text("#0") button.copy[aria-label="Copy shape"]').click();
  assert.equal(await clipboard(page), '(1, 64, 56, 56)');
  await page.locator('.panel tr:has(th:text-is("source")) button.copy').click();
  assert.match(await clipboard(page), /resnet50\.py:\d+$/);
  const line = Number((await clipboard(page)).split(':').pop());
  assert.match(fs.readFileSync(resnet, 'utf8').split('\n')[line - 1], /self\.conv2\(/, 'the line of the call');
  await page.locator('.panel tr:has(th:text-is("kernel_size")) button.copy').click();
  assert.equal(await clipboard(page), '3');
  await page.locator('.panel button.copy-json').click();
  const json = JSON.parse(await clipboard(page));
  assert.equal(json.id, 'layer1.0.conv2');
  assert.equal(json.op, 'Conv2D');
  assert.equal(json.attrs.kernel_size, 3);
  // The feedback goes after a moment.
  await page.waitForFunction(() => !document.querySelector('.panel .copy-status.show'), null, { timeout: 5000 });

  // The Clipboard API refuses (as in some webviews): the textarea + execCommand fallback copies.
  await hook(page, () => { navigator.clipboard.writeText = () => Promise.reject(new Error('denied')); });
  await page.locator('.panel .ph button.copy[aria-label="Copy node id"]').click();
  await page.waitForFunction(() => document.querySelector('.panel .copy-status')?.textContent === 'Copied node id');
  assert.equal(await clipboard(page), 'layer1.0.conv2');
  assert.deepEqual(page.errors, []);
});

test('the Debug tab while paused: the strip above the tabs, the statistics, cleared on resume', async (t) => {
  const { page, file } = await open(t, resnet, ['--target', 'ascend910']);
  const cell = (await hook(page, () => window.cellscopeView.details())).cell;
  await hook(page, () => window.cellscopeView.select('layer3.2.conv2'));
  await hook(page, (f) => window.cellscopeView.setDebugFocus(f), {
    file, cell, node: 'layer3.2.conv2', op: 'Conv2D', scope: 'layer3.2.conv2', line: 57, reason: 'breakpoint', ran: true,
    shape: ['1', '256', '14', '14'], dtype: 'float32', stats: { numel: 50176, min: -1.5, max: 4.75, mean: 0.3125, std: 0.5, nan: 3, inf: 0, zeros: 20000 },
  });
  await idle(page);
  const tb = await tabs(page);
  assert.deepEqual(tb.tabs.map((x) => x.id), ['node', 'cost', 'opt', 'debug']);
  assert.equal(tb.tabs.find((x) => x.selected).id, 'node', 'pausing does not take the tab');
  assert.equal(await page.locator('.panel [role="tab"][data-tab="debug"] .tab-mark').count(), 1, 'marked: the selection is the paused node');
  const strip = await page.locator('.panel .debug-strip').innerText();
  assert.match(strip, /Paused here/);
  assert.match(strip, /\(1, 256, 14, 14\) float32 · min -1\.5 · max 4\.75 · mean 0\.3125 · std 0\.5/);
  assert.match(strip, /3 NaN/);
  await page.locator('.panel .debug-strip a.show-tab').click();
  assert.equal((await tabs(page)).chosen, 'debug');
  const shown = await hook(page, () => window.cellscopeView.panelText('shown'));
  assert.match(shown, /numel\s+50176/);
  assert.match(shown, /zeros\s+20000/);
  await page.screenshot({ path: path.join(artifacts, 'panel-debug.png') });
  // Resumed: no Debug tab, the Node tab shows; paused again: the Debug tab is back (the choice was kept).
  await hook(page, (f) => window.cellscopeView.setDebugFocus(f), { file, cell, node: '' });
  await idle(page);
  assert.deepEqual((await tabs(page)).tabs.map((x) => x.id), ['node', 'cost', 'opt']);
  assert.equal((await tabs(page)).tabs.find((x) => x.selected).id, 'node');
  assert.doesNotMatch(await hook(page, () => window.cellscopeView.panelText()), /Paused here/);
  await hook(page, (f) => window.cellscopeView.setDebugFocus(f), { file, cell, node: 'layer3.2.bn2', op: 'BatchNorm', scope: 'layer3.2.bn2', line: 58, reason: 'step' });
  await idle(page);
  assert.equal((await tabs(page)).tabs.find((x) => x.selected).id, 'debug');
  assert.equal(await page.locator('.panel [role="tab"][data-tab="debug"] .tab-mark').count(), 0, 'paused elsewhere: no mark');
  assert.deepEqual(page.errors, []);
});

test('the article model in light and dark: every tab readable', async (t) => {
  for (const colorScheme of ['light', 'dark']) {
    const { page } = await open(t, path.join(corpus, 'models', 'mnist_article.py'), [], { colorScheme });
    await hook(page, () => window.cellscopeView.setLayer('hardware'));
    await hook(page, () => window.cellscopeView.select('conv/conv2'));
    for (const tab of ['node', 'cost', 'opt']) {
      await hook(page, (id) => window.cellscopeView.setPanelTab(id), tab);
      await page.waitForTimeout(50);
      const shown = await hook(page, () => window.cellscopeView.panelText('shown'));
      assert.ok(shown.length > 80, `${colorScheme} ${tab}: ${shown}`);
      if (tab === 'cost') assert.doesNotMatch(shown, /\bcube\b|AI core/i, 'no Ascend words on the CPU target');
      await page.screenshot({ path: path.join(artifacts, `panel-article-${tab}-${colorScheme}.png`) });
    }
    await hook(page, () => window.cellscopeView.select(null));
    await hook(page, () => window.cellscopeView.setPanelTab('cost'));
    const summary = await hook(page, () => window.cellscopeView.panelText('shown'));
    assert.match(summary, /CPU · overhead/);
    assert.doesNotMatch(summary, /cube/);
    await page.screenshot({ path: path.join(artifacts, `panel-article-summary-${colorScheme}.png`) });
    assert.deepEqual(page.errors, []);
  }
});
