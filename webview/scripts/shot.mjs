#!/usr/bin/env node
// shot.mjs PAGE.html OUT.png [JS to run before the screenshot] — loads a snapshot page in
// Debian's chromium (playwright-core), waits for the first layout, prints the hook state.
import { chromium } from 'playwright-core';
import { resolve } from 'node:path';

const [page, out, script] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const ctx = await browser.newContext({ viewport: { width: 1500, height: 900 }, colorScheme: process.env.DARK ? 'dark' : 'light' });
const p = await ctx.newPage();
p.on('console', (m) => console.log('console:', m.type(), m.text()));
p.on('pageerror', (e) => console.log('pageerror:', e.message));
const t0 = Date.now();
await p.goto(page.startsWith('http') ? page : 'file://' + resolve(page));
await p.waitForFunction(() => window.cellscopeView && window.cellscopeView.state().nodesDrawn > 0, null, { timeout: 60000 });
await p.evaluate(() => window.cellscopeView.idle());
console.log('first paint ms', Date.now() - t0);
if (script) console.log('script:', JSON.stringify(await p.evaluate(script)));
await p.waitForTimeout(300);
console.log(JSON.stringify(await p.evaluate(() => window.cellscopeView.state())));
await p.screenshot({ path: out });
await browser.close();
