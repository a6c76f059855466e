// Packages the extension: builds it, bundles the cellscope executable into bin/ when one is built
// (CELLSCOPE_BIN, else ../build/cellscope; stripped of debug info), then runs @vscode/vsce.
// Output: cellscope-<version>.vsix in this directory (its path is printed last).
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const t0 = Date.now();

execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { stdio: 'inherit' });

const binDir = join(root, 'bin');
rmSync(binDir, { recursive: true, force: true });
const source = resolve(process.env.CELLSCOPE_BIN || join(root, '..', 'build', 'cellscope'));
if (process.env.CELLSCOPE_BUNDLE !== '0' && existsSync(source) && statSync(source).isFile()) {
  mkdirSync(binDir, { recursive: true });
  const dest = join(binDir, 'cellscope');
  try {
    execFileSync('strip', ['--strip-debug', '-o', dest, source]);
  } catch {
    copyFileSync(source, dest);
  }
  chmodSync(dest, 0o755);
  console.log(`bundled ${relative(process.cwd(), source) || source} as bin/cellscope (${(statSync(dest).size / 1e6).toFixed(1)} MB)`);
} else {
  console.log(`no cellscope executable at ${source}: the .vsix uses cellscope.path or PATH`);
}

const out = join(root, `${pkg.name}-${pkg.version}.vsix`);
const vsce = join(root, 'node_modules', '@vscode', 'vsce', 'vsce');
execFileSync(process.execPath, [vsce, 'package', '--no-dependencies', '--allow-missing-repository',
  '--skip-license', '--out', out], { cwd: root, stdio: 'inherit' });
console.log(`packaged in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
console.log(out);
