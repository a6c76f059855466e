// Shared by the view tier's browser tests: the repository's paths, Debian's chromium through
// playwright-core, and the real `cellscope view` server.
//   CELLSCOPE_BIN        the binary (default build/cellscope)
//   CELLSCOPE_ARTIFACTS  screenshots (default build/test-artifacts/view)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const bin = path.resolve(repo, process.env.CELLSCOPE_BIN || 'build/cellscope');
export const artifacts = path.resolve(repo, process.env.CELLSCOPE_ARTIFACTS || 'build/test-artifacts/view');
fs.mkdirSync(artifacts, { recursive: true });
export const corpus = path.join(repo, 'tests', 'corpus');

// Headless chromium for the whole file: call from the test file's top level.
export function useBrowser(test) {
  const holder = { browser: null };
  test.before(async () => {
    holder.browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
    });
  });
  test.after(async () => holder.browser?.close());
  return holder;
}

// A page in a fresh context (closed after test `t`); page.errors collects uncaught page errors.
export async function newPage(holder, t, options = {}) {
  const ctx = await holder.browser.newContext({ viewport: { width: 1400, height: 900 }, ...options });
  t.after(() => ctx.close());
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.errors = errors;
  return page;
}

// `cellscope view FILE ARGS...` (with ENV added) on a copy of `model` in a fresh directory; resolves with its URL.
// `prepare(dir, file)`, when given, runs before the server starts (a git repository, other files).
export async function startView(t, model, args = [], env = {}, prepare = null) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellscope-view-'));
  const file = path.join(dir, path.basename(model));
  fs.copyFileSync(model, file);
  if (prepare) prepare(dir, file);
  const child = spawn(bin, ['view', file, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  t.after(() => {
    child.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no URL from cellscope view: ' + out)), 20000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{32}&file=\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`cellscope view exited (${code}): ${out}`)));
  });
  return { url, file, child, dir };
}
