// Before/after comparison of two versions of a Cell's layer, by node id.
import type { ViewGraph } from './model';

export interface GraphDiff {
  added: Set<string>;
  removed: string[];
  changed: Set<string>;
}

function inputsSig(g: ViewGraph, id: string): string {
  return g.byId.get(id)!.inputs.map((e) => `${e.src}:${e.output}`).join(',');
}

export function diffGraphs(before: ViewGraph | null, after: ViewGraph): GraphDiff {
  const d: GraphDiff = { added: new Set(), removed: [], changed: new Set() };
  if (!before) return d;
  for (const n of after.nodes) {
    const o = before.byId.get(n.id);
    if (!o) { d.added.add(n.id); continue; }
    if (o.semantic === n.semantic && o.optimized === n.optimized) continue;
    const sameAttrs = JSON.stringify(o.semantic?.attrs ?? o.optimized?.attrs ?? {}) ===
      JSON.stringify(n.semantic?.attrs ?? n.optimized?.attrs ?? {});
    if (o.sig !== n.sig || !sameAttrs || inputsSig(before, n.id) !== inputsSig(after, n.id)) d.changed.add(n.id);
  }
  for (const n of before.nodes) if (!after.byId.has(n.id)) d.removed.push(n.id);
  return d;
}
