#!/usr/bin/env node
// browser-check.mjs URL CONTROL_BASE [OUTDIR] — drives the live view (mock-server.mjs or the real
// server) in Debian's chromium: click a node and check the panel, hardware details round trip,
// a pushed delta without reload, a failed analysis, a wrong delta base, a dropped socket, collapse/expand, PNG export.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';

const [url, control, outdir = '/tmp'] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
const p = await ctx.newPage();
p.on('pageerror', (e) => console.log('pageerror:', e.message));
const hook = (expr, arg) => p.evaluate(expr, arg);
const idle = () => hook(() => window.cellscopeView.idle());
const ctl = (path) => fetch(control + path).then((r) => r.text());
const step = (name) => console.log('ok -', name);

await p.goto(url);
await p.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
await idle();
await hook(() => { window.__noReload = true; });
step('loaded: ' + JSON.stringify(await hook(() => window.cellscopeView.state())));

// Click a node on the canvas.
const pos = await hook(() => window.cellscopeView.nodeScreenPosition('conv1'));
assert.ok(pos && pos.visible, 'conv1 on screen');
await p.mouse.click(pos.x, pos.y);
assert.equal((await hook(() => window.cellscopeView.state())).selection, 'conv1');
assert.match(await hook(() => window.cellscopeView.panelText()), /Conv2D[\s\S]*out_channels/);
step('click a node: panel shows op and attributes');
await p.screenshot({ path: `${outdir}/view-selected.png` });

// Hardware layer: details request for the tiling.
await hook(() => window.cellscopeView.setLayer('hardware'));
await idle();
await hook(() => window.cellscopeView.select('conv/conv1'));
await p.waitForFunction(() => /Tiling[\s\S]*Instruction schedule/.test(window.cellscopeView.panelText()), null, { timeout: 5000 });
assert.equal((await hook(() => window.cellscopeView.state())).layer, 'hardware');
step('hardware layer: NodeDetails shown (tiling, schedule)');
await p.screenshot({ path: `${outdir}/view-hardware.png` });
await hook(() => window.cellscopeView.setLayer('semantic'));
await idle();

// A pushed delta: the view updates without reload.
const seq0 = await hook(() => window.cellscopeView.lastUpdateSeq());
await ctl('/push');
await p.waitForFunction((s) => window.cellscopeView.lastUpdateSeq() > s, seq0, { timeout: 5000 });
await idle();
assert.ok(await hook(() => window.__noReload));
const d = await hook(() => window.cellscopeView.details().diff);
step(`delta applied without reload (seq ${await hook(() => window.cellscopeView.lastUpdateSeq())}; diff +${d.added.length} ~${d.changed.length} -${d.removed.length})`);
await p.screenshot({ path: `${outdir}/view-after-edit.png` });

// A failed analysis keeps the graph and shows the diagnostics.
const drawn = (await hook(() => window.cellscopeView.state())).nodesDrawn;
await ctl('/fail');
await p.waitForFunction(() => /Analysis failed/.test(window.cellscopeView.bannerText()), null, { timeout: 5000 });
assert.equal((await hook(() => window.cellscopeView.state())).nodesDrawn, drawn);
assert.match(await hook(() => window.cellscopeView.bannerText()), /:12:5[\s\S]*expected ':'/);
step('failed analysis: banner with file:line, graph kept');
await p.screenshot({ path: `${outdir}/view-failed.png` });

// A delta with a wrong base: the view reconnects and gets a full document.
await ctl('/bad-delta');
await p.waitForTimeout(800);
await idle();
assert.ok(await hook(() => window.__noReload));
assert.equal(await hook(() => window.cellscopeView.details().connection), 'open');
step('wrong delta base: resynchronised with a full document');

// Dropped socket: reconnect with back-off.
await ctl('/drop');
await p.waitForFunction(() => window.cellscopeView.details().connection !== 'open', null, { timeout: 3000 });
await p.waitForFunction(() => window.cellscopeView.details().connection === 'open', null, { timeout: 10000 });
assert.ok(await hook(() => window.__noReload));
step('socket dropped: reconnected without reload');

// Collapse and expand a group.
const g = await hook(() => window.cellscopeView.groups().find((x) => x.id === 'g:layer1'));
assert.ok(g && g.expanded);
const before = (await hook(() => window.cellscopeView.state())).nodesDrawn;
const gp = await hook(() => window.cellscopeView.nodeScreenPosition('g:layer1'));
if (gp?.visible) await p.mouse.click(gp.x, gp.y); else await hook(() => window.cellscopeView.toggleGroup('g:layer1'));
await idle();
const after = (await hook(() => window.cellscopeView.state())).nodesDrawn;
assert.ok(after < before, `collapse: ${before} -> ${after}`);
await hook(() => window.cellscopeView.toggleGroup('g:layer1'));
await idle();
assert.ok((await hook(() => window.cellscopeView.state())).nodesDrawn > after);
step(`collapse/expand a group (${before} -> ${after} -> expanded again)`);

// Export PNG.
const [download] = await Promise.all([p.waitForEvent('download'), p.click('button[title="Export PNG"]')]);
const file = `${outdir}/view-export.png`;
await download.saveAs(file);
step('export PNG: ' + download.suggestedFilename());
await browser.close();
