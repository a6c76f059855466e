// Applying a GraphDelta (view.proto) to the previous document. Unchanged nodes keep their object
// identity, which the diff and the layout cache rely on.
import type { Cell, CellDelta, GraphDelta, GraphDocument, Node, OptimizedNode } from './protocol';

interface HasId { id: string }

export function mergeById<T extends HasId>(old: readonly T[], upserts: readonly T[] | undefined,
                                           removed: readonly string[] | undefined,
                                           order: readonly string[] | undefined): T[] {
  const gone = new Set(removed ?? []);
  const byId = new Map<string, T>();
  const seq: string[] = [];
  for (const n of old) {
    if (gone.has(n.id) || byId.has(n.id)) continue;
    byId.set(n.id, n);
    seq.push(n.id);
  }
  for (const n of upserts ?? []) {
    if (gone.has(n.id)) continue;
    if (!byId.has(n.id)) seq.push(n.id);
    byId.set(n.id, n);
  }
  if (order && order.length > 0) {
    const out: T[] = [];
    const used = new Set<string>();
    for (const id of order) {
      const n = byId.get(id);
      if (n && !used.has(id)) { out.push(n); used.add(id); }
    }
    // Nodes the order does not name (should not happen) stay, after the ordered ones.
    for (const id of seq) if (!used.has(id)) out.push(byId.get(id)!);
    return out;
  }
  return seq.map((id) => byId.get(id)!);
}

export function applyCellDelta(old: Cell | undefined, d: CellDelta): Cell {
  const header: Cell = d.header ? { ...d.header } : { name: d.name };
  header.name = d.name;
  const nodes = mergeById<Node>(old?.nodes ?? [], d.nodes, d.removed, d.order);
  const cell: Cell = { ...header, nodes };
  if (header.optimized) {
    const oldOpt: OptimizedNode[] = old?.optimized?.nodes ?? [];
    cell.optimized = {
      ...header.optimized,
      nodes: mergeById<OptimizedNode>(oldOpt, d.optimizedNodes, d.optimizedRemoved, d.optimizedOrder),
    };
  } else {
    delete cell.optimized;
  }
  return cell;
}

export function applyDelta(doc: GraphDocument, delta: GraphDelta): GraphDocument {
  const oldCells = new Map<string, Cell>();
  for (const c of doc.cells ?? []) oldCells.set(c.name, c);
  const cells = (delta.cells ?? []).map((cd) => applyCellDelta(oldCells.get(cd.name), cd));
  const header: GraphDocument = { ...(delta.header ?? {}) };
  return { ...header, cells };
}
