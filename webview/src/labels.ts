// Edge labels (the tensor's shape, dtype and format) placed once per scene, in world units: each
// label goes beside one of its edge's segments where it covers no node, no collapsed group, no
// group's header band and no label placed before it; a label with no such place is not drawn
// (the panel still lists the tensor). The canvas, the PNG and the SVG export draw what this places.
import type { DrawEdge, DrawItem, Scene } from './layout';
import { GROUP_PAD_TOP } from './layout-types';

export interface Box { x: number; y: number; w: number; h: number }
/** An obstacle: a box, and the edge it is a piece of the line of (-1: not a line). */
interface Obstacle extends Box { edge: number }

export interface LabelPlace {
  edge: number;      // index in scene.edges
  lines: string[];
  box: Box;          // the label's background (world units)
}

/** The label's font (monospace: shapes line up) and its metrics, in world units. */
export const LABEL_FONT = '10px ui-monospace, SFMono-Regular, Menlo, monospace';
export const LABEL_LINE = 12;
export const LABEL_PAD = 3;
/** Between the edge's line and the label's box. */
export const LABEL_GAP = 4;
/** Labels are drawn from this zoom on (10 px text is 7.5 px on screen there). */
export const LABEL_MIN_SCALE = 0.75;

/** What an edge's label says: its tensor, or how many tensors it stands for when they differ. */
export function labelLines(e: Pick<DrawEdge, 'label' | 'count'>): string[] {
  if (e.label) return e.label.split('\n');
  return e.count > 1 ? [`${e.count} tensors`] : [];
}

/** The header band of an expanded group's frame: its title row (the whole of it, when the title's
 * own box is not known). */
export function headerBand(f: { x: number; y: number; w: number }): Box {
  return { x: f.x, y: f.y, w: f.w, h: GROUP_PAD_TOP };
}

export function intersects(a: Box, b: Box): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/** Boxes in a uniform grid: "does this box touch any?" in about constant time. */
class BoxGrid {
  private cells = new Map<number, Obstacle[]>();
  constructor(private size = 96) {}
  private range(b: Box): [number, number, number, number] {
    const s = this.size;
    return [Math.floor(b.x / s), Math.floor(b.y / s), Math.floor((b.x + b.w) / s), Math.floor((b.y + b.h) / s)];
  }
  private static key(ix: number, iy: number): number { return (ix + 4096) * 4194304 + (iy + 4096); }
  add(b: Box, edge = -1): void {
    const o: Obstacle = { x: b.x, y: b.y, w: b.w, h: b.h, edge };
    const [x0, y0, x1, y1] = this.range(b);
    for (let ix = x0; ix <= x1; ix++) for (let iy = y0; iy <= y1; iy++) {
      const k = BoxGrid.key(ix, iy);
      const c = this.cells.get(k);
      if (c) c.push(o); else this.cells.set(k, [o]);
    }
  }
  /** Whether `b` touches an obstacle (the pieces of line of edge `own` excepted). */
  hits(b: Box, own = -2): boolean {
    const [x0, y0, x1, y1] = this.range(b);
    for (let ix = x0; ix <= x1; ix++) for (let iy = y0; iy <= y1; iy++) {
      const c = this.cells.get(BoxGrid.key(ix, iy));
      if (c) for (const o of c) if (o.edge !== own && intersects(b, o)) return true;
    }
    return false;
  }
}

/** An edge's line as small boxes: a straight segment as one thin box, a slanted one in pieces. */
function addLine(grid: BoxGrid, pts: readonly number[], edge: number): void {
  for (let i = 0; i + 3 < pts.length; i += 2) {
    const x0 = pts[i], y0 = pts[i + 1], x1 = pts[i + 2], y1 = pts[i + 3];
    const dx = x1 - x0, dy = y1 - y0;
    if (Math.abs(dx) < 1 || Math.abs(dy) < 1) {
      grid.add({ x: Math.min(x0, x1) - 1, y: Math.min(y0, y1) - 1, w: Math.abs(dx) + 2, h: Math.abs(dy) + 2 }, edge);
      continue;
    }
    const n = Math.max(1, Math.ceil(Math.hypot(dx, dy) / 12));
    for (let k = 0; k < n; k++) {
      const ax = x0 + (dx * k) / n, ay = y0 + (dy * k) / n, bx = x0 + (dx * (k + 1)) / n, by = y0 + (dy * (k + 1)) / n;
      grid.add({ x: Math.min(ax, bx) - 1, y: Math.min(ay, by) - 1, w: Math.abs(bx - ax) + 2, h: Math.abs(by - ay) + 2 }, edge);
    }
  }
}

/** Where along a segment a label is tried: the middle first, then towards either end. */
const ALONG = [0.5, 0.3, 0.7, 0.15, 0.85, 0];

/**
 * Candidate boxes beside segment (x0,y0)-(x1,y1) for a w×h label: beside a vertical-ish segment
 * (right, then left of the line over the label's height), over or under a horizontal-ish one;
 * the box stays within the segment's extent along it when the segment is long enough.
 */
function candidates(x0: number, y0: number, x1: number, y1: number, w: number, h: number, out: Box[]): void {
  const vertical = Math.abs(y1 - y0) >= Math.abs(x1 - x0);
  const lerp = (a0: number, a1: number, b0: number, b1: number, a: number): number =>
    a1 === a0 ? b0 : b0 + ((b1 - b0) * (Math.min(Math.max(a, Math.min(a0, a1)), Math.max(a0, a1)) - a0)) / (a1 - a0);
  if (vertical) {
    const lo = Math.min(y0, y1), hi = Math.max(y0, y1);
    const room = hi - lo - h - 4;
    for (const t of ALONG) {
      if (room < 0 && t !== 0.5) continue;
      const top = room < 0 ? (lo + hi - h) / 2 : lo + 2 + room * t;
      const xa = lerp(y0, y1, x0, x1, top), xb = lerp(y0, y1, x0, x1, top + h);
      out.push({ x: Math.max(xa, xb) + LABEL_GAP, y: top, w, h });
      out.push({ x: Math.min(xa, xb) - LABEL_GAP - w, y: top, w, h });
    }
  } else {
    const lo = Math.min(x0, x1), hi = Math.max(x0, x1);
    const room = hi - lo - w - 4;
    for (const t of ALONG) {
      if (room < 0 && t !== 0.5) continue;
      const left = room < 0 ? (lo + hi - w) / 2 : lo + 2 + room * t;
      const ya = lerp(x0, x1, y0, y1, left), yb = lerp(x0, x1, y0, y1, left + w);
      out.push({ x: left, y: Math.min(ya, yb) - LABEL_GAP - h, w, h });
      out.push({ x: left, y: Math.max(ya, yb) + LABEL_GAP, w, h });
    }
  }
}

/**
 * Places the labels of a scene's edges (in their order): per edge, its four longest segments are
 * tried, longest first, at the candidates above; the first box clear of every node, collapsed
 * group, group header (`header`: its title's box), other edge's line (a label over another line would read as its) and earlier
 * label wins, preferring one that does not straddle a frame's border either. `measure` gives a
 * line's width in LABEL_FONT.
 */
export function placeEdgeLabels(scene: Pick<Scene, 'items' | 'edges'>, measure: (text: string) => number,
                                header: (frame: DrawItem) => Box = headerBand): LabelPlace[] {
  const grid = new BoxGrid();
  const borders = new BoxGrid();
  for (const it of scene.items) {
    if (it.type === 'frame') {
      grid.add(header(it));
      borders.add({ x: it.x, y: it.y - 1, w: it.w, h: 2 });
      borders.add({ x: it.x - 1, y: it.y, w: 2, h: it.h });
      borders.add({ x: it.x + it.w - 1, y: it.y, w: 2, h: it.h });
      borders.add({ x: it.x, y: it.y + it.h - 1, w: it.w, h: 2 });
    } else grid.add({ x: it.x - 1, y: it.y - 1, w: it.w + 2, h: it.h + 2 });
  }
  scene.edges.forEach((e, i) => addLine(grid, e.pts, i));
  const out: LabelPlace[] = [];
  const segs: number[] = [];
  const cand: Box[] = [];
  scene.edges.forEach((e, index) => {
    const lines = labelLines(e);
    if (lines.length === 0 || e.pts.length < 4) return;
    let tw = 0;
    for (const l of lines) tw = Math.max(tw, measure(l));
    const w = Math.ceil(tw) + 2 * LABEL_PAD, h = lines.length * LABEL_LINE + 2;
    segs.length = 0;
    for (let i = 0; i + 3 < e.pts.length; i += 2) segs.push(i);
    const len = (i: number): number => Math.hypot(e.pts[i + 2] - e.pts[i], e.pts[i + 3] - e.pts[i + 1]);
    segs.sort((a, b) => len(b) - len(a));
    for (let s = 0; s < Math.min(4, segs.length); s++) {
      const i = segs[s];
      if (len(i) < 6) break;
      cand.length = 0;
      candidates(e.pts[i], e.pts[i + 1], e.pts[i + 2], e.pts[i + 3], w, h, cand);
      let ok: Box | undefined;
      let straddling: Box | undefined;
      for (const b of cand) {
        if (grid.hits(b, index)) continue;
        if (!borders.hits(b)) { ok = b; break; }
        straddling ??= b;
      }
      const b = ok ?? straddling;
      if (b) {
        grid.add(b);
        out.push({ edge: index, lines, box: b });
        return;
      }
    }
  });
  return out;
}
