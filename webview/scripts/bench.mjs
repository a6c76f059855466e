#!/usr/bin/env node
// bench.mjs PAGE.html [--expand] — first paint, then pan/zoom frame rate (rAF-driven) in headless
// chromium. With --expand, every group is expanded before measuring the frame rate.
import { chromium } from 'playwright-core';
import { resolve } from 'node:path';

const page = process.argv[2];
const expand = process.argv.includes('--expand');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const p = await (await browser.newContext({ viewport: { width: 1500, height: 900 } })).newPage();
p.on('pageerror', (e) => console.log('pageerror:', e.message));
const t0 = Date.now();
await p.goto('file://' + resolve(page), { timeout: 120000 });
await p.waitForFunction(() => window.cellscopeView && window.cellscopeView.state().nodesDrawn > 0, null, { timeout: 120000, polling: 20 });
const first = Date.now() - t0;
const st = await p.evaluate(() => window.cellscopeView.details());
console.log(JSON.stringify(await p.evaluate(() => window.cellscopeView.timings())));
console.log(`first paint ${first} ms; nodes ${st.nodes}, drawn ${st.leafNodesDrawn} + ${st.groupsCollapsed} collapsed groups`);
if (expand) {
  const ms = await p.evaluate(async () => { const t = performance.now(); await window.cellscopeView.expandAll(); return performance.now() - t; });
  const s2 = await p.evaluate(() => window.cellscopeView.details());
  console.log(`expand all ${ms.toFixed(0)} ms; drawn ${s2.leafNodesDrawn}`);
}
const r = await p.evaluate(async () => {
  const v = window.cellscopeView;
  v.fit();
  const res = {};
  for (const [name, zoom] of [['fit', 1], ['mid', 6], ['close', 30]]) {
    v.fit(); v.zoom(zoom);
    const times = [];
    const t = performance.now();
    let frames = 0;
    await new Promise((done) => {
      const tick = () => {
        v.pan(7, 3); v.zoom(frames % 2 ? 1.02 : 1 / 1.02);
        times.push(v.paintNow());
        frames++;
        if (performance.now() - t < 1500) requestAnimationFrame(tick); else done();
      };
      requestAnimationFrame(tick);
    });
    times.sort((a, b) => a - b);
    res[name] = { fps: +(frames / ((performance.now() - t) / 1000)).toFixed(1), paintMedianMs: +times[times.length >> 1].toFixed(2), paintP95Ms: +times[Math.floor(times.length * 0.95)].toFixed(2) };
  }
  return res;
});
console.log(JSON.stringify(r));
await browser.close();
