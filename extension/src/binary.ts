// Finding the `cellscope` executable: the `cellscope.path` setting, then the copy bundled in the
// extension (bin/cellscope), then PATH. Pure over the injected file-system and environment probes,
// so it is unit-tested without VS Code.
import * as path from 'node:path';

export interface DiscoveryInput {
  /** The `cellscope.path` setting ('' when unset). */
  setting: string;
  /** The extension's install directory (holds bin/ when the .vsix bundles the binary). */
  extensionPath: string;
  /** The first workspace folder, for a relative `cellscope.path` and `${workspaceFolder}`. */
  workspaceFolder?: string;
  /** The PATH environment variable. */
  envPath: string;
  /** HOME, for `~` in the setting. */
  home: string;
  platform: NodeJS.Platform;
  /** True when `p` is an existing regular file we may execute. */
  isExecutable(p: string): boolean;
}

export type BinarySource = 'setting' | 'bundled' | 'path';

export type Discovery =
  | { ok: true; path: string; source: BinarySource }
  | { ok: false; message: string; tried: string[] };

export function executableName(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'cellscope.exe' : 'cellscope';
}

/** Expands `~` and `${workspaceFolder}`, and makes a relative path absolute (workspace folder). */
export function expandSetting(value: string, home: string, workspaceFolder?: string): string {
  let v = value.trim();
  if (v === '~') v = home;
  else if (v.startsWith('~/')) v = path.join(home, v.slice(2));
  if (workspaceFolder) v = v.split('${workspaceFolder}').join(workspaceFolder);
  if (!path.isAbsolute(v) && (v.includes('/') || v.includes(path.sep))) {
    v = path.resolve(workspaceFolder ?? process.cwd(), v);
  }
  return v;
}

function searchPath(name: string, input: DiscoveryInput, tried: string[]): string | undefined {
  const sep = input.platform === 'win32' ? ';' : ':';
  for (const dir of input.envPath.split(sep)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    tried.push(p);
    if (input.isExecutable(p)) return p;
  }
  return undefined;
}

export const FIX_HINT =
  'Set "cellscope.path" to the cellscope executable (File > Preferences > Settings, search "cellscope.path"), ' +
  'or put cellscope on PATH (build it with `make build` in the Cellscope repository, or install a .vsix that bundles it).';

export function findBinary(input: DiscoveryInput): Discovery {
  const tried: string[] = [];
  const name = executableName(input.platform);
  const setting = input.setting.trim();
  if (setting) {
    const expanded = expandSetting(setting, input.home, input.workspaceFolder);
    if (path.isAbsolute(expanded)) {
      tried.push(expanded);
      if (input.isExecutable(expanded)) return { ok: true, path: expanded, source: 'setting' };
      return {
        ok: false,
        tried,
        message: `cellscope.path is set to "${setting}", but ${expanded} is not an executable file. ` +
          'Fix the setting, or clear it to use the bundled copy or the one on PATH.',
      };
    }
    // A bare name ("cellscope-dev"): looked up on PATH.
    const found = searchPath(expanded, input, tried);
    if (found) return { ok: true, path: found, source: 'setting' };
    return {
      ok: false,
      tried,
      message: `cellscope.path is set to "${setting}", which is not found on PATH. ` +
        'Set it to the full path of the executable, or clear it to use the bundled copy.',
    };
  }
  const bundled = path.join(input.extensionPath, 'bin', name);
  tried.push(bundled);
  if (input.isExecutable(bundled)) return { ok: true, path: bundled, source: 'bundled' };
  const onPath = searchPath(name, input, tried);
  if (onPath) return { ok: true, path: onPath, source: 'path' };
  return {
    ok: false,
    tried,
    message: 'The cellscope executable was not found (no cellscope.path setting, no copy bundled with ' +
      `the extension, none on PATH). ${FIX_HINT}`,
  };
}
