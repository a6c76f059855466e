// "MindSpore: Launch on Cluster (msrun)" and launch configurations with "mode": "msrun": the pure
// parts (no `vscode` import, unit-tested). extension.ts runs `cellscope launch --msrun` as the
// process of an integrated terminal named "MindSpore msrun", so every rank's log streams there
// (docs/parallel.md, "Launching on a cluster").

export const MSRUN_TERMINAL = 'MindSpore msrun';

/** The msrun attributes of a launch configuration ({"type": "mindspore", "request": "launch",
 * "mode": "msrun"}); every cluster field overrides mindspore_config.json's `cluster`. */
export interface MsrunLaunch {
  program: string;
  args?: unknown;
  force?: unknown;
  workerNum?: unknown;
  localWorkerNum?: unknown;
  masterAddr?: unknown;
  masterPort?: unknown;
  nodeRank?: unknown;
  hostfile?: unknown;
  logDir?: unknown;
  python?: unknown;
}

/** `cellscope launch --msrun PROGRAM [options] [-- ARGS]` for a launch configuration, or the
 * problem with one of its fields. */
export function msrunLaunchArgs(cfg: MsrunLaunch): { args: string[] } | { error: string } {
  if (typeof cfg.program !== 'string' || cfg.program === '') return { error: '"program" must name the training script' };
  const out = ['launch', '--msrun', cfg.program];
  const ints: [keyof MsrunLaunch, string, number, number][] = [
    ['workerNum', '--worker-num', 1, 65536],
    ['localWorkerNum', '--local-worker-num', 1, 65536],
    ['masterPort', '--master-port', 1024, 65535],
    ['nodeRank', '--node-rank', 0, 65535],
  ];
  for (const [key, flag, lo, hi] of ints) {
    const v = cfg[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
      return { error: `"${key}" must be an integer from ${lo} to ${hi}` };
    }
    out.push(flag, String(v));
  }
  const texts: [keyof MsrunLaunch, string][] = [
    ['masterAddr', '--master-addr'], ['hostfile', '--hostfile'], ['logDir', '--log-dir'], ['python', '--python'],
  ];
  for (const [key, flag] of texts) {
    const v = cfg[key];
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string') return { error: `"${key}" must be a string` };
    out.push(flag, v);
  }
  if (cfg.force !== undefined && typeof cfg.force !== 'boolean') return { error: '"force" must be true or false' };
  if (cfg.force === true) out.push('--force');
  const args = cfg.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) return { error: '"args" must be a list of strings' };
  if (args.length > 0) out.push('--', ...(args as string[]));
  return { args: out };
}

/** The launch configuration the snippet and the command use for `program`. */
export function msrunConfiguration(program: string): Record<string, unknown> {
  return { type: 'mindspore', request: 'launch', name: 'MindSpore: Launch on Cluster (msrun)', mode: 'msrun', program, args: [] };
}

/** Output of `cellscope launch` for the terminal: bare newlines as CR LF (a Pseudoterminal has no
 * line discipline). */
export function terminalText(chunk: string): string {
  return chunk.replace(/\r?\n/g, '\r\n');
}

/** The line the terminal keeps after the job: VS Code would close a terminal whose process
 * exits 0, and the log with it, so the launch runs in a terminal of the extension's own that
 * stays open until the user closes it. */
export function exitLine(code: number | null, signal: string | null): string {
  const how = signal !== null ? `stopped by ${signal}` : `exit code ${code ?? '?'}`;
  return `\r\n[cellscope launch ended: ${how}. The log stays here; close the terminal when done.]\r\n`;
}
