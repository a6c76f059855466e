// End-to-end test of "MindSpore: Deploy to Ascend Device" (issue 20) with the packaged extension
// in a real VS Code: code-server + Debian's chromium (harness.mjs), and a real `cellscope agent`
// (the .vsix's bundled binary) inside a network namespace this test makes: a veth pair in
// 10.214.x.0/30 and a blackhole route for it, so nothing leaves the machine (as
// tests/deploy/test_deploy.py does; needs root). Screenshots go to test/e2e/artifacts/deploy/.
//
//   node test/e2e/deploy.mjs [path/to/cellscope-x.y.z.vsix]
//
// Scenario: a workspace with the article's MNIST network, its bug fixed
// (tests/training/scripts/article_net.py, the file train.mjs trains) and a mindspore_config.json
// with its input (1,1,28,28) and two devices: the agent (address + token file) and a second one nobody serves, so the
// device QuickPick is shown. Checked:
//  (a) the command palette's "MindSpore: Deploy to Ascend Device" with the cursor in Net asks
//      for the device; the agent is picked; the model is exported and deployed (the agent serves
//      a new bundle, the status item names it);
//  (b) while the test sends inferences to the device (POST /v1/infer over the veth), the status
//      bar shows "MindSpore: <model> on <device> — N FPS" with N > 0;
//  (c) "MindSpore: Visualize Graph" opens the view, whose Device chart (read from the page, as
//      train.mjs reads its chart) has at least 5 points with FPS and latency values, the device,
//      model, precision and backend as text, and power either measured or "n/a" (never 0);
//  (d) Stop (the status item's actions) ends the watch: the status item goes away.
// The run's duration is printed at the end.
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';

import { createE2E, here, repo, wait, until, runCommand, gotoLine, openAnalysed } from './harness.mjs';

if (process.getuid?.() !== 0) {
  console.error('deploy.mjs makes a network namespace and a veth pair: run it as root (the extension tier does)');
  process.exit(2);
}

const e2e = createE2E({
  artifacts: join(here, 'artifacts', 'deploy'),
  tmpPrefix: 'cellscope-e2e-deploy-',
  deadlineMs: Number(process.env.E2E_DEADLINE_MS ?? 300000),
  what: 'the deploy e2e test',
});
const { log, check, work, ws, T0 } = e2e;
const shot = e2e.shot;
const norm = (t) => (t ?? '').replace(/\u00a0/g, ' ');

// The namespace: names and addresses from the pid, as tests/deploy does (its 10.213/16; here 10.214/16).
const NS = `cse2edep${process.pid}`;
const VETH_HOST = `csedh${process.pid % 100000}`;
const VETH_NS = `csedn${process.pid % 100000}`;
const OCTET = 1 + (process.pid % 250);
const HOST_IP = `10.214.${OCTET}.1`;
const AGENT_IP = `10.214.${OCTET}.2`;
const PORT = 18443;
const TOKEN = `e2e-deploy-token-${process.pid}-${'y'.repeat(16)}`;
const DEVICE = 'edge-e2e';
const ip = (...args) => execFileSync('ip', args, { stdio: 'pipe' });
const tryIp = (...args) => { try { ip(...args); } catch { /* already gone */ } };

let agent = null;
let load = null;
const agentErr = [];
function teardown() {
  load?.stop();
  if (agent && agent.exitCode === null) agent.kill('SIGTERM');
  tryIp('route', 'del', 'blackhole', `10.214.${OCTET}.0/30`, 'metric', '4000');
  tryIp('link', 'del', VETH_HOST);
  tryIp('netns', 'del', NS);
}
process.on('exit', teardown);

/** POST /v1/infer {fill: "ones"} to the agent over and over (the device's traffic), until stopped. */
function inferenceLoad() {
  let stopped = false;
  let sent = 0;
  let ok = 0;
  const once = () => new Promise((resolve) => {
    const body = JSON.stringify({ fill: 'ones' });
    const req = request({
      host: AGENT_IP, port: PORT, path: '/v1/infer', method: 'POST', rejectUnauthorized: false, timeout: 10000,
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    }, (res) => { res.resume(); res.on('end', () => { if (res.statusCode === 200) ok++; resolve(); }); });
    req.on('error', () => resolve());
    req.on('timeout', () => req.destroy());
    req.end(body);
    sent++;
  });
  const run = (async () => { while (!stopped) { await once(); await wait(20); } })();
  return { stop: () => { stopped = true; return run; }, counts: () => ({ sent, ok }) };
}

try {
  // ---- the device: a network namespace with the agent ----------------------------------------------
  ip('netns', 'add', NS);
  ip('link', 'add', VETH_HOST, 'type', 'veth', 'peer', 'name', VETH_NS);
  ip('link', 'set', VETH_NS, 'netns', NS);
  ip('addr', 'add', `${HOST_IP}/30`, 'dev', VETH_HOST);
  ip('link', 'set', VETH_HOST, 'up');
  ip('route', 'add', 'blackhole', `10.214.${OCTET}.0/30`, 'metric', '4000');
  ip('netns', 'exec', NS, 'ip', 'addr', 'add', `${AGENT_IP}/30`, 'dev', VETH_NS);
  ip('netns', 'exec', NS, 'ip', 'link', 'set', VETH_NS, 'up');
  ip('netns', 'exec', NS, 'ip', 'link', 'set', 'lo', 'up');
  const bin = join(e2e.installed, 'bin', 'cellscope');

  // ---- the workspace: the article's network (fixed), two devices ------------------------------------
  const script = join(ws, 'article_net.py');
  copyFileSync(join(repo, 'tests', 'training', 'scripts', 'article_net.py'), script);
  writeFileSync(join(ws, 'edge.token'), TOKEN + '\n', { mode: 0o600 });
  // The export's input: one 28x28 MNIST image (construct's `x` is otherwise (N, 1, H, W): refused).
  writeFileSync(join(ws, 'mindspore_config.json'), JSON.stringify({
    inputs: { Net: ['1,1,28,28'] },
    devices: [
      { name: 'spare', address: `${AGENT_IP}:${PORT + 1}`, target: 'ascend310', token_file: 'edge.token' },
      { name: DEVICE, address: `${AGENT_IP}:${PORT}`, target: 'cpu', token_file: 'edge.token' },
    ],
  }, null, 2));
  const lines = readFileSync(script, 'utf8').split('\n');
  const constructLine = lines.findIndex((l) => l.includes('def construct(self, x):')) + 1;
  log(`workspace: article_net.py, mindspore_config.json with devices spare and ${DEVICE} (${AGENT_IP}:${PORT}, namespace ${NS})`);

  // ---- code-server (installs the .vsix: its bundled binary is the agent) -----------------------------
  const port = await e2e.start();
  const page = e2e.page;
  log(`code-server on 127.0.0.1:${port}, workbench loaded`);
  const state = join(work, 'agent-state');
  mkdirSync(state, { recursive: true });
  agent = spawn('ip', ['netns', 'exec', NS, bin, '--log-level', 'info', 'agent', '--listen', `${AGENT_IP}:${PORT}`, '--state-dir', state],
    { env: { ...process.env, CELLSCOPE_AGENT_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] });
  let agentOut = '';
  agent.stdout.on('data', (d) => { agentOut += d; });
  agent.stderr.on('data', (d) => agentErr.push(d.toString()));
  const listening = await until('the agent to listen', () => agentOut.match(/listening on (\S+)/)?.[1], 20000, 100);
  check('the agent listens inside the network namespace', listening === `https://${AGENT_IP}:${PORT}`, listening);

  // ---- open the model ---------------------------------------------------------------------------------
  const { editorLines, analysed } = await openAnalysed(page, 'article_net.py', 'class Net');
  check('the article\'s network (bug fixed) is analysed without errors', /no errors/.test(analysed), analysed.trim());
  const goto = (line) => gotoLine(page, editorLines, line);
  const palette = (command) => runCommand(page, command);
  await goto(constructLine + 1);

  // ---- (a) deploy through the command palette -----------------------------------------------------------
  const td = Date.now();
  await palette('MindSpore: Deploy to Ascend Device');
  const pickRows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
  await until('the device QuickPick', async () => (await pickRows.count()) >= 2, 10000);
  const offered = await pickRows.evaluateAll((els) => els.map((e) => e.innerText.replace(/\s+/g, ' ').trim()));
  check('(a) the command asks for the device: both configured devices offered', offered.some((t) => t.startsWith(DEVICE)) && offered.some((t) => t.startsWith('spare')),
    offered.join(' | '));
  await shot('device-quickpick');
  await pickRows.filter({ hasText: DEVICE }).first().click();
  // Then the precision the device serves at: fp32, target, int8 (this scenario deploys fp32).
  await until('the precision QuickPick', async () => {
    const rows = await pickRows.evaluateAll((els) => els.map((e) => e.innerText.replace(/\s+/g, ' ').trim()));
    return rows.length === 3 && rows[0].startsWith('fp32') ? rows : null;
  }, 10000);
  const precisions = await pickRows.evaluateAll((els) => els.map((e) => e.innerText.replace(/\s+/g, ' ').trim()));
  check('(a) then the precision: fp32, target and int8 offered', ['fp32', 'target', 'int8'].every((p, i) => precisions[i]?.startsWith(p)),
    precisions.join(' | '));
  await pickRows.filter({ hasText: 'as exported' }).first().click();
  // Deployed: the status item appears (startWatch runs only after `cellscope deploy` exited 0 with
  // its `done` line); a refusal or failure is a notification.
  const item = page.locator('[id$="cellscope.device"]').first();
  const served = await until('the deployment to finish', async () => {
    const toasts = await page.locator('.notifications-toasts .notification-list-item-message').allInnerTexts();
    const failed = toasts.map(norm).find((t) => /failed|refused/.test(t));
    if (failed) throw new Error(failed);
    const t = (await item.count()) > 0 ? norm(await item.innerText()).trim() : '';
    return t.includes(`on ${DEVICE}`) ? t : null;
  }, 120000, 250);
  const bundles = readdirSync(join(state, 'bundles'));
  const current = readFileSync(join(state, 'current', 'manifest.json'), 'utf8');
  check('(a) the model is exported and deployed: the agent serves a new bundle, the status item shows it', bundles.length === 1 &&
    JSON.parse(current).name === bundles[0].replace(/^\d+-/, '') && served.includes(bundles[0].replace(/^\d+-/, '').replace(/\.mindir$/, '')),
  `${Date.now() - td} ms; "${served}"; bundles: ${bundles.join(', ')}`);
  await shot('deployed');

  // ---- (b) the status bar, with traffic ------------------------------------------------------------------
  load = inferenceLoad();
  const text = await until('the status bar at N FPS > 0', async () => {
    const t = norm(await item.innerText()).trim();
    const m = t.match(/on (\S+) — (\d+) FPS/);
    return m && m[1] === DEVICE && Number(m[2]) > 0 ? t : null;
  }, 30000, 250);
  check('(b) the status bar shows "… on <device> — N FPS" (N > 0 while inferences run)', /^MindSpore: \S+ on edge-e2e — \d+ FPS$/.test(text.replace(/^\$\([^)]*\)\s*/, '')), text);

  // ---- (c) the graph view's Device chart -----------------------------------------------------------------
  await goto(constructLine + 1);
  await palette('MindSpore: Visualize Graph');
  const view = await until('the graph view webview', async () => {
    for (const f of page.frames()) {
      try {
        if (await f.evaluate(() => typeof window.cellscopeView === 'object' && window.cellscopeView.state().nodesDrawn > 0)) return f;
      } catch { /* detached or cross-origin while loading */ }
    }
    return null;
  }, 30000, 100);
  const chart = await until('the Device chart at 5 points with FPS and latency', async () => {
    const d = await view.evaluate(() => window.cellscopeView.deviceFlush());
    const col = (name) => d.data[d.series.indexOf(name)] ?? [];
    const withFps = col('FPS').filter((v) => typeof v === 'number' && v > 0).length;
    const withLatency = col('p50 ms').filter((v) => typeof v === 'number' && v > 0).length;
    return withFps >= 5 && withLatency >= 5 ? { d, withFps, withLatency } : null;
  }, 60000, 500).catch(async () => ({ d: await view.evaluate(() => window.cellscopeView.deviceFlush()), withFps: 0, withLatency: 0 }));
  const d = chart.d;
  check('(c) the view\'s Device chart has >= 5 points with FPS and latency', chart.withFps >= 5 && chart.withLatency >= 5 && d.open,
    `${d.points} points, ${chart.withFps} with FPS, ${chart.withLatency} with latency; "${d.summary}"`);
  check('(c) the Device panel names the device, model, precision and backend',
    d.facts.device === `${DEVICE} (${AGENT_IP}:${PORT})` && d.facts.model === `${bundles[0].replace(/^\d+-/, '').replace(/\.mindir$/, '')} (${bundles[0]})` && d.facts.precision === 'fp32' && d.facts.backend === 'cellscope-cpu',
    JSON.stringify({ device: d.facts.device, model: d.facts.model, precision: d.facts.precision, backend: d.facts.backend, quality: d.facts.quality }));
  const power = d.data[d.series.findIndex((s) => s.startsWith('power'))] ?? [];
  const powerOk = power.every((v) => v === null || v > 0) && (power.every((v) => v === null) ? /^n\/a/.test(d.facts.power) && /power n\/a/.test(d.summary) : /W/.test(d.facts.power));
  check('(c) power is measured or "n/a" (a gap, never 0)', powerOk, `${d.facts.power}; series "${d.series.find((s) => s.startsWith('power'))}"`);
  const ink = await view.evaluate(() => window.cellscopeView.deviceInk());
  check('the Device chart is drawn (its canvas has ink)', ink > 0.005, `ink ${ink.toFixed(3)}, ${d.width}x${d.height} px`);
  await view.evaluate(() => window.cellscopeView.idle());
  await shot('device-chart');
  const { sent, ok } = load.counts();
  log(`the test sent ${sent} inferences to the device (${ok} answered 200)`);

  // ---- (d) Stop ------------------------------------------------------------------------------------------
  await item.click();
  const actions = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
  await actions.filter({ hasText: 'Stop' }).first().waitFor({ timeout: 10000 });
  await shot('device-actions');
  await actions.filter({ hasText: 'Stop' }).first().click();
  await until('the status item gone', async () => (await item.count()) === 0 || !(await item.isVisible()), 10000)
    .then(() => check('(d) Stop ends the watch: the status item goes away', true))
    .catch((err) => check('(d) Stop ends the watch: the status item goes away', false, err.message));
  await shot('stopped');
  const unexpected = e2e.pageErrors.filter((err) => !/vsda|marketplace|Canceled/i.test(err));
  check('no uncaught errors in the workbench page', unexpected.length === 0, unexpected.slice(0, 3).join(' | '));
} catch (err) {
  await e2e.failWith(err);
} finally {
  await load?.stop();
  teardown();
  writeFileSync(join(e2e.artifacts, 'agent.log'), agentErr.join(''));
  await e2e.finish([`the deploy e2e test took ${((Date.now() - T0) / 1000).toFixed(1)} s`]);
}
