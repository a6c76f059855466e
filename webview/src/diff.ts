// Before/after comparison of two versions of a Cell's layer, by node id.
import { nodeSig, type ViewGraph } from './model';

export interface GraphDiff {
  added: Set<string>;
  removed: string[];
  changed: Set<string>;
  /** Collapsed groups holding an added, changed or removed node are marked too (comparisons). */
  groups?: Set<string>;
  /** Nodes are tinted with their mark's colour, not only outlined (comparisons). */
  tint?: boolean;
}

function inputsSig(g: ViewGraph, id: string): string {
  return g.byId.get(id)!.inputs.map((e) => `${e.src}:${e.output}`).join(',');
}

/** JSON with object keys sorted: attribute maps arrive in no particular order. */
export function stableJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return '[' + v.map(stableJson).join(',') + ']';
  const o = v as Record<string, unknown>;
  return '{' + Object.keys(o).sort().map((k) => JSON.stringify(k) + ':' + stableJson(o[k])).join(',') + '}';
}

export function diffGraphs(before: ViewGraph | null, after: ViewGraph): GraphDiff {
  const d: GraphDiff = { added: new Set(), removed: [], changed: new Set() };
  if (!before) return d;
  for (const n of after.nodes) {
    if (n.ghost) continue;  // a comparison's removed node: not part of either version
    const o = before.byId.get(n.id);
    if (!o) { d.added.add(n.id); continue; }
    if (o.semantic === n.semantic && o.optimized === n.optimized && o.failure === n.failure) continue;
    const sameAttrs = stableJson(o.semantic?.attrs ?? o.optimized?.attrs ?? {}) ===
      stableJson(n.semantic?.attrs ?? n.optimized?.attrs ?? {});
    const sameError = (o.failure?.message ?? '') === (n.failure?.message ?? '');  // failed calls
    if (nodeSig(o) !== nodeSig(n) || !sameAttrs || !sameError || inputsSig(before, n.id) !== inputsSig(after, n.id)) d.changed.add(n.id);
  }
  for (const n of before.nodes) if (!n.ghost && !after.byId.has(n.id)) d.removed.push(n.id);
  return d;
}
