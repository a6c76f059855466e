// "MindSpore: Export MindIR" / "Export ONNX" and the "Export now" code lens: the request sent to
// the server's `cellscope.export` command and what the user is told about its answer. Pure (no
// `vscode` import): extension.ts shows the progress notification and the messages.
import * as path from 'node:path';

export type ExportFormat = 'mindir' | 'onnx';

export const FORMAT_TITLES: Record<ExportFormat, string> = { mindir: 'Export MindIR', onnx: 'Export ONNX' };

/** The argument object of `cellscope.export` (docs/export.md, "In the editor"). */
export interface ExportArgs {
  uri: string;
  format: ExportFormat;
  position?: { line: number; character: number };
  cell?: string;
  output?: string;
  checkpoint?: string;
}

export interface ExportWritten {
  status: 'written';
  path: string;
  format: ExportFormat;
  cell: string;
  nodes: number;
  bytes: number;
  summary: string;
}
export interface ExportRefused {
  status: 'refused';
  format: ExportFormat;
  cell?: string;
  messages: string[];
  diagnostics?: number;
}
export interface ExportCancelled {
  status: 'cancelled';
}
export type ExportResult = ExportWritten | ExportRefused | ExportCancelled;

/** The arguments for the Cell under the cursor of `uri`. */
export function exportArgs(uri: string, format: ExportFormat, position?: { line: number; character: number }): ExportArgs {
  return position ? { uri, format, position: { line: position.line, character: position.character } } : { uri, format };
}

/** The argument a code lens carries (checked: it comes from the server). */
export function isExportArgs(x: unknown): x is ExportArgs {
  if (typeof x !== 'object' || x === null) return false;
  const o = x as Record<string, unknown>;
  return typeof o.uri === 'string' && (o.format === 'mindir' || o.format === 'onnx');
}

export function isExportResult(x: unknown): x is ExportResult {
  if (typeof x !== 'object' || x === null) return false;
  const o = x as Record<string, unknown>;
  if (o.status === 'written') {
    return typeof o.path === 'string' && typeof o.nodes === 'number' && typeof o.bytes === 'number';
  }
  if (o.status === 'refused') return Array.isArray(o.messages) && o.messages.every((m) => typeof m === 'string');
  return o.status === 'cancelled';
}

/** 251920 -> "246 KB", 102400000 -> "97.7 MB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  if (n < 1024 * 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MB`;
  return `${(n / (1024 * 1024 * 1024)).toFixed(2)} GB`;
}

/**
 * What "Open in graph view" shows after an export: the exported Cell. A MindIR file is opened
 * itself (the `cellscope.mindir` viewer imports it): the graph that was written, with the inputs
 * it was written with (an `ms.export` call's, the config's), whatever the cursor is on. Cellscope
 * reads no ONNX, so an ONNX export shows the source Cell it was written from, by the name the
 * server answered (`resnet50()` for a factory root).
 */
export type GraphTarget = { kind: 'model'; path: string } | { kind: 'source'; uri: string; cell: string };

export function graphTarget(result: ExportWritten, args: ExportArgs): GraphTarget {
  return result.format === 'mindir'
    ? { kind: 'model', path: result.path }
    : { kind: 'source', uri: args.uri, cell: result.cell };
}

export const REVEAL = 'Reveal';
export const OPEN_GRAPH = 'Open in graph view';
export const SHOW_PROBLEMS = 'Show Problems';

/** What the user is shown for a result: an information or error message and its buttons. */
export interface ExportMessage {
  kind: 'info' | 'error' | 'none';
  text: string;
  actions: string[];
}

export function exportMessage(result: ExportResult, workspaceFolders: readonly string[]): ExportMessage {
  switch (result.status) {
    case 'written': {
      const label = result.format === 'onnx' ? 'ONNX' : 'MindIR';
      return {
        kind: 'info',
        text: `Exported ${result.cell} as ${label}: ${displayPath(result.path, workspaceFolders)} (${result.nodes} nodes, ${formatBytes(result.bytes)})`,
        actions: [REVEAL, OPEN_GRAPH],
      };
    }
    case 'refused': {
      const label = result.format === 'onnx' ? 'ONNX' : 'MindIR';
      const count = result.messages.length;
      const first = count ? result.messages[0] : 'the server gave no reason';
      const more = count > 1 ? ` (+${count - 1} more)` : '';
      const where = (result.diagnostics ?? 0) > 0 ? ' See the Problems panel.' : '';
      return {
        kind: 'error',
        text: `Export ${label} refused${result.cell ? ` for ${result.cell}` : ''}, nothing written: ${stripDir(first, workspaceFolders)}${more}.${where}`,
        actions: (result.diagnostics ?? 0) > 0 ? [SHOW_PROBLEMS] : [],
      };
    }
    case 'cancelled':
      return { kind: 'none', text: 'Export cancelled: nothing written', actions: [] };
  }
}

/** `file` relative to the workspace folder holding it, else as it is. */
export function displayPath(file: string, workspaceFolders: readonly string[]): string {
  for (const f of workspaceFolders) {
    const rel = path.relative(f, file);
    if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel;
  }
  return file;
}

/** Whether `file` lies inside a workspace folder (the Explorer can reveal it there). */
export function inWorkspace(file: string, workspaceFolders: readonly string[]): boolean {
  return displayPath(file, workspaceFolders) !== file;
}

function stripDir(message: string, workspaceFolders: readonly string[]): string {
  let out = message;
  for (const f of workspaceFolders) out = out.split(f + path.sep).join('');
  return out;
}
