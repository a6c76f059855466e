// Builds dist/{index.html,app.js,app.css,layout-worker.js}; with --tests also bundles test/*.test.ts
// into dist-test/ for `node --test`.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tests = process.argv.includes('--tests');
const dev = process.argv.includes('--dev');

if (tests) {
  const out = join(root, 'dist-test');
  rmSync(out, { recursive: true, force: true });
  const entries = readdirSync(join(root, 'test')).filter((f) => f.endsWith('.test.ts')).map((f) => join(root, 'test', f));
  await esbuild.build({
    entryPoints: entries, outdir: out, bundle: true, platform: 'node', format: 'esm', target: 'node20',
    outExtension: { '.js': '.mjs' }, packages: 'external', logLevel: 'warning',
  });
} else {
  const out = join(root, 'dist');
  mkdirSync(out, { recursive: true });
  const common = { bundle: true, minify: !dev, sourcemap: dev ? 'inline' : false, target: ['chrome100', 'firefox100', 'safari16'],
    legalComments: 'none', logLevel: 'warning' };
  await esbuild.build({ ...common, entryPoints: { app: join(root, 'src/main.ts') }, outdir: out, format: 'iife' });
  await esbuild.build({ ...common, entryPoints: { 'layout-worker': join(root, 'src/layout-worker.ts') }, outdir: out, format: 'iife' });
  copyFileSync(join(root, 'src/index.html'), join(out, 'index.html'));
}
