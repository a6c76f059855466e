// The status bar's text: target backend · MindSpore version · analysis state. Pure.

export const TARGETS = ['cpu', 'gpu', 'ascend910', 'ascend910b', 'ascend310', 'ascend310p'] as const;

export const TARGET_LABELS: Record<string, string> = {
  cpu: 'CPU',
  gpu: 'GPU',
  ascend910: 'Ascend 910',
  ascend910b: 'Ascend 910B',
  ascend310: 'Ascend 310',
  ascend310p: 'Ascend 310P',
};

export const DEFAULT_TARGET = 'cpu';
export const DEFAULT_MINDSPORE_VERSION = '2.10.0';

/** As the server's normalize_target: case-insensitive, `ascend` = ascend910b; undefined if unknown. */
export function normalizeTarget(name: unknown): string | undefined {
  if (typeof name !== 'string') return undefined;
  const n = name.trim().toLowerCase();
  if (n === 'ascend') return 'ascend910b';
  return (TARGETS as readonly string[]).includes(n) ? n : undefined;
}

export interface Effective {
  target: string;
  targetFrom: 'setting' | 'mindspore_config.json' | 'default' | 'server';
  version: string;
  versionFrom: 'setting' | 'mindspore_config.json' | 'default';
}

/**
 * The target and MindSpore version the server uses, computed as it does: the editor setting, else
 * mindspore_config.json (`target`, else `graph_visualization.backend`; its optional `cellscope`
 * object wins over its top level), else the defaults.
 */
export function effectiveSettings(
  settings: { target?: unknown; mindsporeVersion?: unknown },
  config: unknown,
): Effective {
  const cfg = (config && typeof config === 'object' ? config : {}) as Record<string, unknown>;
  const inner = (cfg.cellscope && typeof cfg.cellscope === 'object' ? cfg.cellscope : {}) as Record<string, unknown>;
  const gv = (cfg.graph_visualization && typeof cfg.graph_visualization === 'object'
    ? cfg.graph_visualization : {}) as Record<string, unknown>;

  let target = normalizeTarget(settings.target);
  let targetFrom: Effective['targetFrom'] = 'setting';
  if (!target) {
    target = normalizeTarget(inner.target) ?? normalizeTarget(cfg.target) ?? normalizeTarget(gv.backend);
    targetFrom = 'mindspore_config.json';
  }
  if (!target) {
    target = DEFAULT_TARGET;
    targetFrom = 'default';
  }

  const ver = (v: unknown): string | undefined =>
    typeof v === 'string' && /^\d+\.\d+(\.\d+)?$/.test(v.trim()) ? v.trim() : undefined;
  let version = ver(settings.mindsporeVersion);
  let versionFrom: Effective['versionFrom'] = 'setting';
  if (!version) {
    version = ver(inner.mindsporeVersion) ?? ver(inner.mindspore_version) ??
      ver(cfg.mindsporeVersion) ?? ver(cfg.mindspore_version);
    versionFrom = 'mindspore_config.json';
  }
  if (!version) {
    version = DEFAULT_MINDSPORE_VERSION;
    versionFrom = 'default';
  }
  return { target, targetFrom, version, versionFrom };
}

export type AnalysisState =
  | { kind: 'starting' }
  | { kind: 'analysing' }
  | { kind: 'done'; errors: number; warnings: number }
  | { kind: 'restarting'; reason: string }
  | { kind: 'stopped'; reason: string };

export interface StatusText {
  text: string;
  tooltip: string;
  error: boolean;
}

export function statusText(eff: Effective, state: AnalysisState): StatusText {
  const label = TARGET_LABELS[eff.target] ?? eff.target;
  let stateText: string;
  let icon = '$(circuit-board)';
  let error = false;
  switch (state.kind) {
    case 'starting': stateText = 'starting…'; icon = '$(loading~spin)'; break;
    case 'analysing': stateText = 'analysing…'; icon = '$(loading~spin)'; break;
    case 'done':
      if (state.errors > 0) {
        stateText = `${state.errors} error${state.errors === 1 ? '' : 's'}`;
        icon = '$(error)';
        error = true;
      } else if (state.warnings > 0) {
        stateText = `${state.warnings} warning${state.warnings === 1 ? '' : 's'}`;
        icon = '$(warning)';
      } else {
        stateText = 'no errors';
        icon = '$(check)';
      }
      break;
    case 'restarting': stateText = 'restarting…'; icon = '$(sync~spin)'; break;
    case 'stopped': stateText = 'stopped'; icon = '$(debug-disconnect)'; error = true; break;
  }
  const text = `${icon} ${label} · MindSpore ${eff.version} · ${stateText}`;
  const from = (f: string) => (f === 'default' ? 'default' : f === 'setting' ? 'editor setting' : f);
  const tooltip = [
    `Cellscope: graphs compiled for ${label} (${eff.target}, from ${from(eff.targetFrom)})`,
    `MindSpore API ${eff.version} (from ${from(eff.versionFrom)})`,
    state.kind === 'stopped' ? `Language server stopped: ${state.reason}`
      : state.kind === 'restarting' ? `Language server ${state.reason}` : `Analysis: ${stateText}`,
    state.kind === 'stopped' || state.kind === 'restarting'
      ? 'Click to restart the language server' : 'Click to select the target backend',
  ].join('\n');
  return { text, tooltip, error };
}
