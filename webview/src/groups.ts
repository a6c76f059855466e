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

/** How an expanded group's header is drawn at text size `size` (world px): the title ("▾ path"),
 * the muted rest (class and size) when it fits, where each starts, and the chip behind them. */
export interface HeaderLayout {
  head: string;
  rest: string;
  headX: number;
  restX: number;
  y: number;                                   // the text's middle
  chip: { x: number; y: number; w: number; h: number };
}

/** Header fonts: the title's and the rest's, at `size` px. */
export const headerFont = (size: number, bold: boolean): string => `${bold ? '600 ' : ''}${size}px system-ui, sans-serif`;

export function headerLayout(frame: { x: number; y: number; w: number; group?: Group }, size: number, bandH: number,
                             measure: (font: string, text: string) => number, clipText: (s: string, n: number) => string): HeaderLayout {
  const hd = frame.group ? groupHeader(frame.group) : { path: '', rest: '' };
  const room = frame.w - 16;
  const k = size / 12;  // characters are about 6.6 px wide at 12 px
  const head = clipText(`▾ ${hd.path}`, Math.floor(room / (6.6 * k)));
  const used = Math.min(room, measure(headerFont(size, true), head));
  const left = room - used - 6 * k;
  const rest = hd.rest && left >= 30 * k && !head.endsWith('…') ? clipText(`·  ${hd.rest}`, Math.floor(left / (6.2 * k))) : '';
  const restW = rest ? Math.min(left, measure(headerFont(size, false), rest)) + 6 * k : 0;
  const chipH = Math.min(bandH - 6, size * 1.5);
  const y = frame.y + 16;
  return {
    head, rest, headX: frame.x + 10, restX: frame.x + 10 + used + 6 * k, y,
    chip: { x: frame.x + 6, y: y - chipH / 2, w: Math.min(frame.w - 10, used + restW + 8), h: chipH },
  };
}
