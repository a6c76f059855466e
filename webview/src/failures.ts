// What a Cell's failed calls (Cell.failures) mean for each layer: where the graph stops, and
// whether the optimization and hardware figures are unavailable (no kernel compiled) or cover the
// graph only up to the failure.
import type { Cell, FailedCall } from './protocol';
import type { Layer } from './model';

/** "fc1 (nn.Dense, line 22)": the call, its API and its 1-based line (and file, if another one). */
export function failurePlace(cell: Cell, f: FailedCall): string {
  const what = [f.api || f.op || ''];
  if (f.range) {
    const line = `line ${f.range.start.line + 1}`;
    const other = f.file && cell.file && f.file !== cell.file ? ` of ${f.file.split(/[\\/]/).pop()}` : '';
    what.push(line + other);
  }
  const inside = what.filter((s) => s !== '').join(', ');
  return inside ? `${f.id} (${inside})` : f.id;
}

/** "fc1 (nn.Dense, line 22): <message>", and "(+N more)" for further failures; null: none. */
export function stopsAt(cell: Cell): string | null {
  const fs = cell.failures ?? [];
  if (fs.length === 0) return null;
  const f = fs[0];
  const more = fs.length > 1 ? ` (+${fs.length - 1} more)` : '';
  return `${failurePlace(cell, f)}${f.message ? ': ' + f.message : ''}${more}`;
}

export type LayerStateKind = 'complete' | 'stops' | 'partial' | 'unavailable';

export interface LayerState {
  kind: LayerStateKind;
  /** What to say about the layer ('' when complete), with the first failure's message. */
  text: string;
  /** The same without the message: "Unavailable: construct stops at fc1 (nn.Dense, line 22)". */
  short: string;
  /** The first failure (drawn as FAILED_PREFIX + its id). */
  failure: FailedCall | null;
}

/**
 * The layer's state: complete (no failure); the semantic graph "stops" at the failure; the
 * optimization and hardware figures are "unavailable" when no kernel was compiled (everything
 * depended on the failed call, so dead-code elimination removed it), else "partial".
 */
export function layerState(cell: Cell, layer: Layer): LayerState {
  const text = stopsAt(cell);
  const failure = cell.failures?.[0] ?? null;
  if (text === null || !failure) return { kind: 'complete', text: '', short: '', failure: null };
  const place = failurePlace(cell, failure);
  const more = (cell.failures?.length ?? 0) > 1 ? ` (+${(cell.failures?.length ?? 0) - 1} more)` : '';
  const hasLayer = layer === 'optimized' ? !!cell.optimized : layer === 'hardware' ? !!cell.hardware : false;
  if (layer === 'semantic' || !hasLayer) {
    return { kind: 'stops', text: 'Graph stops at ' + text, short: `Graph stops at ${place}${more}`, failure };
  }
  const kernels = cell.optimized?.kernels ?? cell.hardware?.kernels ?? 0;
  const kind = kernels === 0 ? 'unavailable' : 'partial';
  const head = kernels === 0 ? 'Unavailable: construct stops at ' : 'Partial: construct stops at ';
  return { kind, text: head + text, short: `${head}${place}${more}`, failure };
}
