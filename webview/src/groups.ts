// Group headers: a group is a Cell instance (its path, "layer1.0") and, when the document says
// which, the Cell's class. The graph document (graph.proto) names the class of every Cell
// instance whose construct ran (Cell.scopeClasses: "layer1.0" → "Bottleneck", "layer1" →
// "SequentialCell"), the root's (Cell.className) and, through Node.api, the MindSpore layer behind
// a leaf-Cell call (a node whose id is its scope: "layer1.0.conv1" → "nn.Conv2d"). Nothing is
// guessed from names.
import type { Cell } from './protocol';
import type { Group } from './model';

/** The class of each Cell instance path the document names ('' is the root). */
export function scopeClasses(cell: Cell): Map<string, string> {
  const m = new Map<string, string>(Object.entries(cell.scopeClasses ?? {}));
  if (cell.className && !m.has('')) m.set('', cell.className);
  for (const n of cell.nodes ?? []) {
    const sc = n.scope ?? '';
    if (sc && n.api && !m.has(sc) && (n.id === sc || n.id.startsWith(sc + '#'))) m.set(sc, n.api);
  }
  return m;
}

/** Sets `cls` on the groups whose instance the document names (artificial parts: their parent's). */
export function annotateClasses(groups: Iterable<Group>, classes: ReadonlyMap<string, string>): void {
  for (const g of groups) {
    const c = classes.get(g.path);
    if (c !== undefined) g.cls = c;
  }
}

/** A group's header: the instance path, then its class and size ("layer1.0", "Bottleneck · 12 nodes"). */
export function groupHeader(g: Pick<Group, 'label' | 'id' | 'leafCount' | 'cls'>): { path: string; rest: string } {
  const n = g.leafCount;
  return { path: g.label || g.id, rest: `${g.cls ? g.cls + '  ·  ' : ''}${n} node${n === 1 ? '' : 's'}` };
}
