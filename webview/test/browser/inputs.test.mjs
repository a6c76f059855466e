// The view tier: the input box of the Cell summary (view.proto's InputsRequest, issue 16: "there
// is no way to set the input shape from the view"). Typing shapes and Apply re-analyses the
// graph with them; a spec that does not parse is reported in the banner; "Settings" goes back.
// Screenshots go to $CELLSCOPE_ARTIFACTS (default build/test-artifacts/view).
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { artifacts, corpus, newPage as openPage, startView, useBrowser } from './lib.mjs';

const browser = useBrowser(test);
const hook = (page, fn, arg) => page.evaluate(fn, arg);

test('the input box sets the shapes the graph is analysed with, reports a bad spec, and resets', async (t) => {
  const { url } = await startView(t, path.join(corpus, 'models', 'lenet5.py'));
  const page = await openPage(browser, t);
  await page.goto(url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await hook(page, () => window.cellscopeView.idle());
  const box = page.locator('form.inputs-form input[name="shapes"]');
  assert.equal(await box.inputValue(), '1,1,32,32');
  assert.equal(await box.getAttribute('aria-label'), 'Input shapes');
  const seq0 = await hook(page, () => window.cellscopeView.lastUpdateSeq());

  await box.fill('4,1,32,32');
  await page.locator('form.inputs-form button[type="submit"]').click();
  await page.waitForFunction((s) => window.cellscopeView.lastUpdateSeq() > s, seq0, { timeout: 15000 });
  await hook(page, () => window.cellscopeView.idle());
  assert.match(await hook(page, () => window.cellscopeView.panelText()), /inputs\s+4×1×32×32 float32/);
  assert.equal(await page.locator('form.inputs-form input[name="shapes"]').inputValue(), '4,1,32,32');
  await page.screenshot({ path: path.join(artifacts, 'inputs-set.png') });

  await page.locator('form.inputs-form input[name="shapes"]').fill('4,x y');
  await page.locator('form.inputs-form button[type="submit"]').click();
  await page.waitForFunction(() => /input '4,x y'/.test(window.cellscopeView.bannerText()), null, { timeout: 15000 });

  const seq1 = await hook(page, () => window.cellscopeView.lastUpdateSeq());
  await page.locator('form.inputs-form button.inputs-reset').click();
  await page.waitForFunction((s) => window.cellscopeView.lastUpdateSeq() > s, seq1, { timeout: 15000 });
  await hook(page, () => window.cellscopeView.idle());
  assert.equal(await page.locator('form.inputs-form input[name="shapes"]').inputValue(), '1,1,32,32');
});
