// Bundles the extension (dist/extension.js, `vscode` external) and copies the graph view app
// (../webview/dist) into dist/webview/. With --tests: bundles test/unit/*.test.ts into dist-test/.
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tests = process.argv.includes('--tests');
const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  sourcemap: false,
  logLevel: 'warning',
  // ws loads these optional native helpers inside try/catch.
  external: ['vscode', 'bufferutil', 'utf-8-validate'],
};

if (tests) {
  const dir = join(root, 'test', 'unit');
  const entryPoints = readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => join(dir, f));
  rmSync(join(root, 'dist-test'), { recursive: true, force: true });
  await build({ ...common, entryPoints, outdir: join(root, 'dist-test'), outExtension: { '.js': '.cjs' } });
} else {
  const t0 = Date.now();
  await build({ ...common, entryPoints: [join(root, 'src', 'extension.ts')], outfile: join(root, 'dist', 'extension.js'), minify: true });
  const web = join(root, '..', 'webview', 'dist');
  const files = ['app.js', 'app.css', 'layout-worker.js'];
  const missing = files.filter((f) => !existsSync(join(web, f)));
  if (missing.length) {
    console.error(`webview/dist is not built (missing ${missing.join(', ')}): run \`npm ci && npm run build\` in webview/ first`);
    process.exit(1);
  }
  mkdirSync(join(root, 'dist', 'webview'), { recursive: true });
  for (const f of files) copyFileSync(join(web, f), join(root, 'dist', 'webview', f));
  console.log(`extension built in ${Date.now() - t0} ms: dist/extension.js, dist/webview/`);
}
