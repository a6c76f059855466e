#!/usr/bin/env node
// edit-bench.mjs PAGE.html AFTER.json [LAYER] — loads a snapshot page, then injects AFTER.json as
// update #2 (as the server pushes it after an edit) and reports the update-to-repaint time.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const [page, after, layer] = process.argv.slice(2);
const doc = JSON.parse(readFileSync(after, 'utf8'));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const p = await (await browser.newContext({ viewport: { width: 1500, height: 900 } })).newPage();
p.on('pageerror', (e) => console.log('pageerror:', e.message));
await p.goto('file://' + resolve(page));
await p.waitForFunction(() => window.cellscopeView && window.cellscopeView.state().nodesDrawn > 0, null, { timeout: 60000 });
if (layer) await p.evaluate((l) => window.cellscopeView.setLayer(l), layer);
await p.evaluate(() => window.cellscopeView.idle());
// Alternate between the edited document and the original one (an edit, then its undo, ...).
for (let i = 0; i < 4; i++) {
  const r = await p.evaluate(async ({ doc, seq, undo }) => {
    const v = window.cellscopeView;
    const orig = JSON.parse(document.getElementById('cellscope-snapshot').textContent)[1].update.document;
    const d = undo ? orig : doc;
    const t0 = performance.now();
    v.injectMessage({ update: { seq, document: d } });
    await new Promise((r) => setTimeout(r, 0));
    await v.idle();
    await new Promise((r) => requestAnimationFrame(() => r()));
    return { ms: performance.now() - t0, timings: v.timings(), diff: v.details().diff, state: v.state() };
  }, { doc, seq: i + 2, undo: i % 2 === 1 });
  console.log(`update ${i + 2} (${i % 2 ? 'undo' : 'edit'}): ${r.ms.toFixed(0)} ms to repaint; build ${r.timings.buildMs.toFixed(0)}, diff ${r.timings.diffMs.toFixed(0)}, layout ${r.timings.layoutMs.toFixed(0)} ms; ` +
    `added ${r.diff?.added.length}, changed ${r.diff?.changed.length}, removed ${r.diff?.removed.length}; drawn ${r.state.nodesDrawn}`);
}
await browser.close();
