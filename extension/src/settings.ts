// The `cellscope` settings object sent to the server (initializationOptions,
// workspace/didChangeConfiguration, workspace/configuration). The server replaces its client
// settings wholesale and reports every value it cannot use, so unset values ('' / {}) and the
// extension's own keys (path, trace, graph) are left out. Pure.
import { normalizeTarget } from './status';

export interface ServerSettings {
  target?: string;
  mindsporeVersion?: string;
  inputs?: Record<string, string[]>;
  debounceMs?: number;
}

export function serverSettings(raw: Record<string, unknown> | undefined | null): ServerSettings {
  const out: ServerSettings = {};
  if (!raw) return out;
  if (typeof raw.target === 'string' && raw.target.trim()) {
    // An unknown name is passed on as written: the server says what is wrong with it.
    out.target = normalizeTarget(raw.target) ?? raw.target.trim();
  }
  if (typeof raw.mindsporeVersion === 'string' && raw.mindsporeVersion.trim()) {
    out.mindsporeVersion = raw.mindsporeVersion.trim();
  }
  if (raw.inputs && typeof raw.inputs === 'object' && !Array.isArray(raw.inputs) &&
      Object.keys(raw.inputs).length > 0) {
    out.inputs = raw.inputs as Record<string, string[]>;
  }
  if (typeof raw.debounceMs === 'number' && Number.isInteger(raw.debounceMs)) {
    out.debounceMs = raw.debounceMs;
  }
  return out;
}
