// The view tier: comparing the graph with a fixed base (issue 16) against the real `cellscope
// view`: --compare-with HEAD on a temporary git repository (the banner, added nodes green, changed
// amber, removed ones drawn dashed where they were, the panel's before → after, stepping through
// the changes, live edits, the hardware totals, closing and reopening from the Compare… menu); a
// file outside git gets a message and another file can be typed in; inside VS Code the menu asks
// the extension for a file. Screenshots go to $CELLSCOPE_ARTIFACTS (default build/test-artifacts/view).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { artifacts, corpus, newPage as openPage, startView, useBrowser } from './lib.mjs';

const browser = useBrowser(test);
const newPage = (t) => openPage(browser, t);
const hook = (page, fn, arg) => page.evaluate(fn, arg);
const idle = (page) => hook(page, () => window.cellscopeView.idle());
const LENET = path.join(corpus, 'models', 'lenet5.py');
const GHOST = 'removed:fc2';

function git(dir, ...args) {
  const env = { ...process.env };
  delete env.GIT_DIR;
  delete env.GIT_WORK_TREE;
  const r = spawnSync('git', ['-C', dir, '-c', 'user.name=Cellscope Test', '-c', 'user.email=test@cellscope.invalid',
    '-c', 'commit.gpgsign=false', ...args], { encoding: 'utf8', env });
  assert.equal(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

/** LeNet without fc2 (and the ReLU after it), a Dropout before fc3, which now reads 120 features. */
function edited(text) {
  const out = text.replace('nn.Dense(84, num_class,', 'nn.Dense(120, num_class,')
    .replace('        x = self.relu(self.fc2(x))\n', '        x = self.drop(x)\n')
    .replace('            self.fc3 = nn.Dense(', '            self.drop = nn.Dropout(p=0.5)\n            self.fc3 = nn.Dense(');
  assert.notEqual(out, text);
  return out;
}

async function open(t, model, args, prepare) {
  const view = await startView(t, model, args, {}, prepare);
  const page = await newPage(t);
  await page.goto(view.url);
  await page.waitForFunction(() => window.cellscopeView?.state().nodesDrawn > 0, null, { timeout: 30000 });
  await idle(page);
  return { page, ...view };
}

/** Waits until the view's comparison (the test hook's) satisfies `pred`, and the view is idle. */
async function comparisonWhere(page, pred, arg) {
  const until = Date.now() + 20000;
  for (;;) {
    await idle(page);
    const c = await hook(page, () => window.cellscopeView.comparison());
    // A comparison that has arrived is shown by the view's next render: until then the banner may
    // still say the base is being analysed.
    const settled = !c || c.pending || !/analysing the base/.test(c.banner ?? '');
    if (c && settled && pred(c, arg)) return c;
    if (Date.now() > until) throw new Error(`the comparison never satisfied ${pred}: ${JSON.stringify(c)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// The colour on the canvas at a client point, and a theme colour, as [r, g, b].
async function pixelAndVar(page, x, y, name) {
  return hook(page, ([px, py, v]) => {
    const canvas = document.querySelector('.graph-canvas');
    const r = canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const d = canvas.getContext('2d').getImageData(Math.round((px - r.left) * dpr), Math.round((py - r.top) * dpr), 1, 1).data;
    const probe = document.createElement('div');
    probe.style.color = getComputedStyle(canvas.parentElement).getPropertyValue(v).trim();
    document.body.appendChild(probe);
    const m = getComputedStyle(probe).color.match(/\d+/g).map(Number);
    probe.remove();
    return { pixel: [d[0], d[1], d[2]], colour: m.slice(0, 3) };
  }, [x, y, name]);
}

const dist = (a, b) => Math.max(...a.map((v, i) => Math.abs(v - b[i])));

// The pixel nearest `name`'s colour along the top edge of a node's box (its ring).
async function ringColour(page, id, name) {
  const box = await hook(page, (i) => window.cellscopeView.nodeRect(i), id);
  assert.ok(box, `${id} is drawn`);
  let best = null;
  for (let dy = -4; dy <= 2; dy += 0.5) {
    const p = await pixelAndVar(page, box.x + box.w / 2, box.y + dy, name);
    if (!best || dist(p.pixel, p.colour) < dist(best.pixel, best.colour)) best = p;
  }
  return best;
}

test('--compare-with HEAD: the edits against the last commit, marked in place, live, closed and reopened', async (t) => {
  let commit = '';
  const { page, file } = await open(t, LENET, ['--compare-with', 'HEAD'], (dir, f) => {
    git(dir, 'init', '-q');
    git(dir, 'add', path.basename(f));
    git(dir, 'commit', '-q', '-m', 'LeNet');
    commit = git(dir, 'rev-parse', '--short', 'HEAD');
    fs.writeFileSync(f, edited(fs.readFileSync(f, 'utf8')));
  });
  const v = (fn, arg) => hook(page, fn, arg);
  let c = await comparisonWhere(page, (x) => x && !x.pending && x.seq > 0);
  assert.equal(c.base.label, `HEAD (${commit})`);
  assert.equal(c.error, '');
  assert.deepEqual(c.added, ['drop']);
  assert.deepEqual(c.changed, ['fc3']);
  assert.deepEqual(c.removed, ['fc2', 'relu#4']);
  assert.deepEqual(c.ghosts, [GHOST, 'removed:relu#4']);
  assert.match(c.banner, new RegExp(`^Comparing with HEAD \\(${commit}\\)\\s+\\+1 −2 ~1 nodes\\s+params 61\\.7k → 62\\.0k \\(\\+0\\.58%\\)\\s+FLOPs 846k → 826k`));
  assert.match(c.banner, /Removed \(2\) drawn where they were/);
  // The Changes button stands aside while comparing; Compare… is on.
  assert.ok(await page.locator('button[aria-label^="Changes"]').isDisabled());
  assert.match(await page.locator('button[aria-label="Compare…"]').getAttribute('class'), /\bon\b/);

  // Colours: the added Dropout green, the changed fc3 amber, the removed fc2 dashed in the error colour.
  const added = await ringColour(page, 'drop', '--cs-added');
  assert.ok(dist(added.pixel, added.colour) <= 40, `drop ${added.pixel} vs ${added.colour}`);
  const changed = await ringColour(page, 'fc3', '--cs-changed');
  assert.ok(dist(changed.pixel, changed.colour) <= 40, `fc3 ${changed.pixel} vs ${changed.colour}`);
  const ghost = await v((id) => window.cellscopeView.nodeRect(id), GHOST);
  assert.equal(ghost.kind, 'removed');
  const dashed = await ringColour(page, GHOST, '--cs-danger');
  assert.ok(dist(dashed.pixel, dashed.colour) <= 60, `ghost ${dashed.pixel} vs ${dashed.colour}`);
  const plain = await ringColour(page, 'fc1', '--cs-changed');
  assert.ok(dist(plain.pixel, plain.colour) > 60, `an unchanged node is not marked (${plain.pixel})`);
  assert.ok((await v(() => window.cellscopeView.edges())).some((e) => e.src === 'relu#3' && e.tgt === GHOST), 'the ghost hangs where fc2 was');
  assert.match(await page.innerText('.legend'), /removed/);
  await page.screenshot({ path: path.join(artifacts, 'compare-head-semantic.png') });

  // The panel: before → after of the changed node; a ghost says what it is.
  await v(() => window.cellscopeView.select('fc3'));
  let panel = await v(() => window.cellscopeView.panelText());
  assert.match(panel, new RegExp(`Changed since HEAD \\(${commit}\\)`));
  assert.match(panel, /in_channels\s+84 → 120/);
  assert.match(panel, /parameters\s+850 → 1210/);
  assert.match(panel, /inputs\s+relu#4:0 → drop:0/);
  await page.screenshot({ path: path.join(artifacts, 'compare-head-details.png') });
  await page.locator('.compare-banner summary').click();
  await page.locator(`.compare-banner a.goto[data-id="${GHOST}"]`).click();
  await idle(page);
  assert.equal((await v(() => window.cellscopeView.state())).selection, GHOST);
  panel = await v(() => window.cellscopeView.panelText());
  assert.match(panel, /Removed since HEAD/);
  assert.match(panel, /MatMul/);

  // Next/previous change: in execution order, ghosts included.
  const steps = [];
  for (let i = 0; i < 5; i++) {
    await page.locator('.compare-banner .cmp-next').click();
    await idle(page);
    steps.push((await v(() => window.cellscopeView.state())).selection);
  }
  assert.deepEqual(steps, [GHOST, 'removed:relu#4', 'drop', 'fc3', GHOST]);
  assert.match(await v(() => window.cellscopeView.comparison().banner), /‹\s*1\/4\s*›/);

  // The hardware layer: kernels, latency and memory.
  await v(() => window.cellscopeView.setLayer('hardware'));
  c = await comparisonWhere(page, (x) => /latency/.test(x.banner));
  assert.match(c.banner, /kernels\s+params[\s\S]*latency [\d.]+ ms → [\d.]+ ms \(−[\d.]+%\)\s+memory/);
  assert.deepEqual(c.ghosts, []);
  assert.ok(c.changed.length > 0, JSON.stringify(c));
  await page.screenshot({ path: path.join(artifacts, 'compare-head-hardware.png') });
  await v(() => window.cellscopeView.setLayer('semantic'));

  // Live: a save compares the new text with the same commit (fc3 now has 12 outputs).
  const seq = c.seq;
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('num_class: int = 10', 'num_class: int = 12'));
  c = await comparisonWhere(page, (x, s) => x.seq > s, seq);
  assert.equal(c.base.label, `HEAD (${commit})`);
  await v(() => window.cellscopeView.select('fc3'));
  assert.match(await v(() => window.cellscopeView.panelText()), /output shape\s+1×10 → 1×12/);

  // Close: the comparison ends, the last edit's changes come back.
  await page.locator('.compare-banner .cmp-close').click();
  await page.waitForFunction(() => window.cellscopeView.comparison() === null);
  await idle(page);
  assert.ok(await page.locator('.compare-banner').isHidden());
  assert.ok(!(await page.locator('button[aria-label^="Changes"]').isDisabled()));
  assert.equal(await v((id) => window.cellscopeView.nodeRect(id), GHOST), null);

  // Reopen from the toolbar: Compare… → Last commit (HEAD).
  await page.locator('button[aria-label="Compare…"]').click();
  assert.equal(await page.locator('button[aria-label="Compare…"]').getAttribute('aria-expanded'), 'true');
  const menu = page.getByRole('menu', { name: 'Compare the graph with' });
  assert.match(await menu.innerText(), /Last commit \(HEAD\)[\s\S]*Another file/);
  await menu.getByRole('menuitem', { name: 'Last commit (HEAD)' }).click();
  c = await comparisonWhere(page, (x) => x && !x.pending && x.seq > 0);
  assert.deepEqual(c.added, ['drop']);
  assert.ok(await menu.isHidden());
  assert.deepEqual(page.errors, []);
});

test('outside git: a message, the graph stays; another file typed in the menu is compared instead', async (t) => {
  const { page, dir } = await open(t, LENET, [], (d) => {
    fs.mkdirSync(path.join(d, 'v1'));
    fs.writeFileSync(path.join(d, 'v1', 'lenet_v1.py'), edited(fs.readFileSync(LENET, 'utf8')));
  });
  const v = (fn, arg) => hook(page, fn, arg);
  await page.locator('button[aria-label="Compare…"]').click();
  await page.getByRole('menuitem', { name: 'Last commit (HEAD)' }).click();
  let c = await comparisonWhere(page, (x) => x && !x.pending);
  assert.equal(c.error, 'lenet5.py is not in a git repository');
  assert.match(await page.innerText('.compare-banner'), /Cannot compare with HEAD:\s+lenet5\.py is not in a git repository/);
  const d = await v(() => window.cellscopeView.details());
  assert.equal(d.status, 'ok', 'not an error state of the view');
  assert.ok((await v(() => window.cellscopeView.state())).nodesDrawn > 0);
  await page.screenshot({ path: path.join(artifacts, 'compare-not-in-git.png') });

  // Another file, relative to the model's directory: the base is that file (the edited LeNet), so
  // the model shown has fc2 where the base had a Dropout.
  await page.locator('button[aria-label="Compare…"]').click();
  await page.fill('.compare-menu input[name="path"]', 'v1/lenet_v1.py');
  await page.press('.compare-menu input[name="path"]', 'Enter');
  // The banner is redrawn with the view's next render after the comparison arrives: wait for both.
  c = await comparisonWhere(page, (x) => x && !x.pending && x.base.kind === 'file' && x.seq > 0 && !/analysing the base/.test(x.banner));
  assert.equal(c.base.label, 'lenet_v1.py');
  assert.equal(c.base.file, path.join(dir, 'v1', 'lenet_v1.py'));
  assert.deepEqual(c.added.sort(), ['fc2', 'relu#4']);
  assert.deepEqual(c.removed, ['drop']);
  assert.deepEqual(c.ghosts, ['removed:drop']);
  assert.match(c.banner, /^Comparing with lenet_v1\.py\s+\+2 −1 ~1 nodes/);
  // The removed Dropout keeps its line in the other file.
  await v(() => window.cellscopeView.select('removed:drop'));
  assert.match(await v(() => window.cellscopeView.panelText()), /lenet_v1\.py:\d+:\d+/);
  await page.screenshot({ path: path.join(artifacts, 'compare-other-file.png') });
  assert.deepEqual(page.errors, []);
});

test('inside VS Code: the banner and marks from relayed messages; the menu asks the extension for a file', async (t) => {
  // A real comparison, as the daemon sends it (captured from a plain view of `cellscope view --compare-with`).
  const { url } = await startView(t, LENET, ['--compare-with', 'HEAD'], {}, (dir, f) => {
    git(dir, 'init', '-q');
    git(dir, 'add', path.basename(f));
    git(dir, 'commit', '-q', '-m', 'LeNet');
    fs.writeFileSync(f, edited(fs.readFileSync(f, 'utf8')));
  });
  const frames = [];
  const probe = await newPage(t);
  probe.on('websocket', (ws) => ws.on('framereceived', (f) => frames.push(JSON.parse(f.payload))));
  await probe.goto(url);
  await probe.waitForFunction(() => window.cellscopeView?.comparison()?.seq > 0, null, { timeout: 30000 });
  const messages = frames.filter((m) => m.hello || m.update || m.comparison);
  assert.ok(messages.some((m) => m.comparison?.cells), 'a comparison was sent');

  const page = await newPage(t);
  await page.addInitScript(() => {
    window.__posted = [];
    window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m) });
    document.addEventListener('DOMContentLoaded', () => document.body.classList.add('vscode-dark'));
  });
  await page.goto(url);
  await page.waitForFunction(() => window.__posted?.some((m) => m.ready));
  await hook(page, (ms) => { for (const m of ms) window.postMessage({ type: 'cellscope', message: m }, '*'); }, messages);
  const c = await comparisonWhere(page, (x) => x && x.seq > 0 && x.ghosts.length > 0);
  assert.deepEqual(c.added, ['drop']);
  assert.equal((await hook(page, () => window.cellscopeView.details())).connection, 'vscode');
  await page.screenshot({ path: path.join(artifacts, 'compare-vscode.png') });

  await hook(page, () => { window.__posted.length = 0; });
  await page.locator('button[aria-label="Compare…"]').click();
  await page.getByRole('menuitem', { name: 'Another file…' }).click();
  await page.locator('button[aria-label="Compare…"]').click();
  await page.getByRole('menuitem', { name: /^Stop comparing with HEAD/ }).click();
  await page.locator('button[aria-label="Compare…"]').click();
  await page.getByRole('menuitem', { name: 'Last commit (HEAD)' }).click();
  const requests = await hook(page, () => window.__posted.filter((m) => m.request).map((m) => m.request));
  assert.deepEqual(requests, [{ comparePick: {} }, { compare: { base: '' } }, { compare: { base: 'HEAD' } }]);
  assert.deepEqual(page.errors, []);
});
