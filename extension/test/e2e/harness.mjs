// What the code-server end-to-end scripts (run.mjs, train.mjs) share: the packaged .vsix and
// code-server found, a temporary user-data dir / extensions dir / workspace / XDG dirs (code-server's
// IPC and git sockets go to TMPDIR: inside the work dir, removed with it, not left in /tmp), the
// user settings, the counted checks and their log, polling, the overall deadline, code-server
// started on a free 127.0.0.1 port with the .vsix installed, Debian's chromium through
// playwright-core, numbered screenshots, and the clean-up (code-server's process group, the work
// dir unless KEEP_E2E=1, code-server's log kept in the artifacts).
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const here = dirname(fileURLToPath(import.meta.url));  // test/e2e
export const extRoot = resolve(here, '..', '..');
export const repo = resolve(extRoot, '..');
export const pkg = JSON.parse(readFileSync(join(extRoot, 'package.json'), 'utf8'));

const baseSettings = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'editor.minimap.enabled': false,
  'security.workspace.trust.enabled': false,
  'extensions.ignoreRecommendations': true,
  'telemetry.telemetryLevel': 'off',
  'files.autoSave': 'off',
  'window.commandCenter': false,
};

export const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns something truthy; throws (with its last error) after `timeout`. */
export async function until(what, fn, timeout = 30000, every = 200) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await wait(every);
  }
}

/**
 * Opens the quick input with `key` (Control+Shift+P: the Command Palette, Control+P: Quick Open)
 * and waits for it. A key pressed while a webview (the graph view, a custom editor being closed)
 * still holds the focus never reaches the workbench, and the widget does not open: seen in CI and
 * locally after closing the .mindir view. Then the active editor group's text or tab is clicked
 * (the focus back in the workbench) and the key pressed again, up to four times.
 */
export async function openQuickInput(page, key) {
  const widget = page.locator('.quick-input-widget input');
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press(key);
    try {
      await widget.waitFor({ state: 'visible', timeout: attempt < 4 ? 2500 : 10000 });
      return;
    } catch (e) {
      if (attempt >= 4) throw new Error(`${key} opened no quick input in ${attempt} tries: ${e.message}`);
    }
    console.log(`        (${key} opened no quick input: the focus back in the active editor group, try ${attempt + 1})`);
    const text = page.locator('.editor-group-container.active .editor-instance .view-lines').first();
    if (await text.isVisible().catch(() => false)) await text.click().catch(() => {});
    else await page.locator('.editor-group-container.active .tabs-container .tab.active').first().click().catch(() => {});
  }
}

/** Runs a command from the command palette (typed, waited for in the list, Enter). */
export async function runCommand(page, command) {
  await openQuickInput(page, 'Control+Shift+P');
  await page.keyboard.type(command);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: command }).first().waitFor({ timeout: 10000 });
  await page.keyboard.press('Enter');
}

/**
 * Quick Open (Ctrl+P) with `name` typed, its row listed (the caller presses Enter). The active
 * tab is clicked first, and openQuickInput tries again when a webview took the key.
 */
export async function quickOpen(page, name) {
  await page.locator('.tabs-container .tab.active').first().click();
  await openQuickInput(page, 'Control+P');
  await page.keyboard.type(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 10000 });
}

/**
 * Opens `name` from the Explorer, waits for `marker` in its editor and for the status bar's
 * analysis of it: returns the editor's lines locator and the status text ("... no errors").
 */
export async function openAnalysed(page, name, marker) {
  const norm = (t) => (t ?? '').replace(/\u00a0/g, ' ');
  const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: name });
  await row.waitFor({ timeout: 20000 });
  await row.click();
  const editorLines = page.locator('.editor-instance .view-lines').first();
  await until(`${name} in the editor`, async () => norm(await editorLines.innerText()).includes(marker), 20000);
  const status = page.locator('[id$="cellscope.status"]').first();
  const analysed = await until(`${name} analysed`, async () => {
    const t = norm(await status.innerText());
    return /no errors|error/.test(t) ? t : null;
  }, 30000);
  return { editorLines, analysed };
}

/** Puts the cursor on `line` of the editor whose lines are `editorLines` (Go to Line). */
export async function gotoLine(page, editorLines, line) {
  await editorLines.click();
  await page.keyboard.press('Control+G');
  await page.keyboard.type(String(line));
  await page.keyboard.press('Enter');
}

export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
    s.on('error', rej);
  });
}

/**
 * One end-to-end run. `artifacts`: the folder emptied for its screenshots and logs; `tmpPrefix`:
 * the work dir's prefix; `deadlineMs` / `what`: the whole run's limit and how its failure reads;
 * `settings`: user settings added to the common ones. Exits 2 when the .vsix (argv[2] or the
 * package's), code-server or chromium is missing.
 */
export function createE2E({ artifacts, tmpPrefix, deadlineMs, what, settings = {} }) {
  const T0 = Date.now();
  const vsix = resolve(process.argv[2] ?? join(extRoot, `${pkg.name}-${pkg.version}.vsix`));
  const codeServer = join(here, 'node_modules', '.bin', 'code-server');
  const keep = process.env.KEEP_E2E === '1';
  if (!existsSync(vsix)) { console.error(`no .vsix at ${vsix}: run scripts/extension.sh package first`); process.exit(2); }
  if (!existsSync(codeServer)) { console.error('code-server is not installed: run scripts/extension.sh e2e-setup'); process.exit(2); }
  if (!existsSync('/usr/bin/chromium')) { console.error('/usr/bin/chromium is missing (apt-get install -y chromium)'); process.exit(2); }

  rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), tmpPrefix));
  const ud = join(work, 'user-data');
  const exts = join(work, 'extensions');
  const ws = join(work, 'workspace');
  const env = { ...process.env, XDG_CONFIG_HOME: join(work, 'xdg-config'), XDG_DATA_HOME: join(work, 'xdg-data'), XDG_CACHE_HOME: join(work, 'xdg-cache'), TMPDIR: join(work, 'tmp') };
  for (const d of [ud, join(ud, 'User'), exts, ws, env.XDG_CONFIG_HOME, env.XDG_DATA_HOME, env.TMPDIR]) mkdirSync(d, { recursive: true });
  writeFileSync(join(ud, 'User', 'settings.json'), JSON.stringify({ ...baseSettings, ...settings }, null, 2));

  const e = {
    T0, vsix, artifacts, work, ud, exts, ws, env,
    installed: join(exts, `${pkg.publisher}.${pkg.name}-${pkg.version}`),
    passed: 0,
    failed: 0,
    server: null,
    browser: null,
    page: null,
    serverLog: [],
    shots: 0,
  };
  e.log = (s) => console.log(`[${((Date.now() - T0) / 1000).toFixed(1).padStart(5)} s] ${s}`);
  e.check = (name, ok, detail = '') => {
    if (ok) { e.passed++; e.log(`ok   ${name}${detail ? ` (${detail})` : ''}`); }
    else { e.failed++; e.log(`FAIL ${name}${detail ? ` (${detail})` : ''}`); }
    return ok;
  };
  /** A screenshot of the page, numbered in the order taken: artifacts/NN-name.png. */
  e.shot = async (name) => {
    const file = `${String(++e.shots).padStart(2, '0')}-${name}.png`;
    try { await e.page.screenshot({ path: join(artifacts, file) }); } catch (err) { e.log(`screenshot ${file} failed: ${err.message}`); }
  };
  e.cleanup = async () => {
    try { await e.browser?.close(); } catch { /* gone */ }
    const server = e.server;
    if (server && server.exitCode === null) {
      try { process.kill(-server.pid, 'SIGTERM'); } catch { /* gone */ }
      await new Promise((r) => { const t = setTimeout(r, 3000); server.once('exit', () => { clearTimeout(t); r(); }); });
      try { process.kill(-server.pid, 'SIGKILL'); } catch { /* gone */ }
    }
    writeFileSync(join(artifacts, 'code-server.log'), e.serverLog.join(''));
    if (!keep) rmSync(work, { recursive: true, force: true });
    else e.log(`kept ${work}`);
  };
  const deadline = setTimeout(async () => {
    e.log(`FAIL ${what} exceeded ${deadlineMs / 1000} s`);
    await e.cleanup();
    process.exit(1);
  }, deadlineMs);

  /**
   * Installs the .vsix (a check), starts code-server on a free port, launches chromium and opens
   * the workspace: returns the port; `e.page` is the workbench page, `e.pageErrors` its uncaught
   * errors.
   */
  e.start = async () => {
    const ti = Date.now();
    execFileSync(codeServer, ['--user-data-dir', ud, '--extensions-dir', exts, '--install-extension', vsix], { env, stdio: 'pipe' });
    e.check('the .vsix installs into code-server', existsSync(e.installed), `${Date.now() - ti} ms`);
    const port = await freePort();
    e.server = spawn(codeServer, ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry',
      '--disable-update-check', '--disable-workspace-trust', '--user-data-dir', ud, '--extensions-dir', exts, ws],
    { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    e.server.stdout.on('data', (d) => e.serverLog.push(d.toString()));
    e.server.stderr.on('data', (d) => e.serverLog.push(d.toString()));
    await until('code-server to listen', () => e.serverLog.join('').includes('HTTP server listening'), 30000, 100);
    e.browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    const context = await e.browser.newContext({ viewport: { width: 1600, height: 1000 } });
    e.page = await context.newPage();
    e.pageErrors = [];
    e.page.on('pageerror', (err) => e.pageErrors.push(String(err)));
    await e.page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await e.page.waitForSelector('.monaco-workbench', { timeout: 30000 });
    return port;
  };

  /** After the scenario: an exception counts as a failure (with a screenshot). */
  e.failWith = async (err) => {
    e.failed++;
    e.log(`FAIL ${err.message}`);
    await e.shot('failure');
  };
  /** Clean-up, the counts, and the exit code (0 only when something passed and nothing failed). */
  e.finish = async (lines = []) => {
    clearTimeout(deadline);
    await e.cleanup();
    e.log(`screenshots in ${artifacts}`);
    for (const l of lines) e.log(l);
    console.log(`${e.passed} passed, ${e.failed} failed`);
    process.exit(e.failed === 0 && e.passed > 0 ? 0 : 1);
  };
  return e;
}
