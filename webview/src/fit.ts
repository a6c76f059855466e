// The camera rules of "Fit" and of the start/end jumps, as pure functions (view.ts applies them):
// the whole graph when it is readable so, else a readable zoom from the graph's start (the user
// scrolls on); the panes' overlays (legend, titles, notes, the overview) are kept clear.
import type { Direction } from './layout-types';

/**
 * The smallest zoom Fit chooses: node labels (12 px) are drawn from 38 % (view.ts) and read from
 * about half size. A graph that would need less to fit whole is shown from its start at a
 * readable zoom instead of as a sliver.
 */
export const READABLE_SCALE = 0.5;
/** Empty space kept around the graph (CSS px). */
export const FIT_MARGIN = 24;

export interface Insets { top: number; right: number; bottom: number; left: number }
export const NO_INSETS: Insets = { top: 0, right: 0, bottom: 0, left: 0 };

export interface Camera { scale: number; tx: number; ty: number }

export interface FitInput {
  sceneW: number; sceneH: number;   // the laid-out graph (world units)
  paneW: number; paneH: number;     // the canvas (CSS px)
  insets?: Insets;                  // overlays to keep clear
  dir?: Direction;                  // the main axis
  maxScale?: number;                // 1 for the first view, more for Fit on a small graph
  minScale?: number;                // READABLE_SCALE
  margin?: number;
  /** Where the graph starts across the main axis (world): the first item's centre. */
  startCross?: number;
}

export interface FitResult extends Camera { whole: boolean }

/** The rectangle (CSS px) free of overlays, with the margin. */
export function freeRect(paneW: number, paneH: number, ins: Insets, margin: number): { x: number; y: number; w: number; h: number } {
  const x = ins.left + margin, y = ins.top + margin;
  return { x, y, w: Math.max(1, paneW - ins.right - margin - x), h: Math.max(1, paneH - ins.bottom - margin - y) };
}

/**
 * Fit: the whole graph centred in the free rectangle when that zoom is at least `minScale`;
 * else the graph's start (top, or left for 'RIGHT') at the zoom that fits its breadth (across the
 * main axis), kept between `minScale` and 1: labels stay readable and the rest is scrolled to.
 */
export function fitCamera(i: FitInput): FitResult {
  const ins = i.insets ?? NO_INSETS;
  const m = i.margin ?? FIT_MARGIN;
  const maxScale = i.maxScale ?? 1;
  const minScale = Math.min(i.minScale ?? READABLE_SCALE, maxScale);
  const r = freeRect(i.paneW, i.paneH, ins, m);
  const W = Math.max(1, i.sceneW), H = Math.max(1, i.sceneH);
  const whole = Math.min(maxScale, r.w / W, r.h / H);
  if (whole >= minScale) {
    return { scale: whole, tx: r.x + (r.w - W * whole) / 2, ty: r.y + (r.h - H * whole) / 2, whole: true };
  }
  const right = i.dir === 'RIGHT';
  const breadth = right ? r.h / H : r.w / W;
  const scale = Math.max(minScale, Math.min(1, maxScale, breadth));
  // Along the main axis: the start at the free rectangle's edge. Across: centred when the graph's
  // breadth fits, else centred on where it starts, without leaving space beside the graph.
  const cross = (len: number, room: number, at: number): number => {
    if (len * scale <= room) return at + (room - len * scale) / 2;
    const c = i.startCross ?? len / 2;
    const t = at + room / 2 - c * scale;
    return Math.min(at, Math.max(at + room - len * scale, t));
  };
  return right
    ? { scale, tx: r.x, ty: cross(H, r.h, r.y), whole: false }
    : { scale, tx: cross(W, r.w, r.x), ty: r.y, whole: false };
}

/**
 * The camera moved (zoom kept) so that the graph's start ('start') or end ('end') lies at the
 * free rectangle's edge along the main axis; across, `crossAt` (world) is centred, clamped as Fit.
 */
export function jumpCamera(cam: Camera, where: 'start' | 'end', i: FitInput & { crossAt?: number }): Camera {
  const ins = i.insets ?? NO_INSETS;
  const m = i.margin ?? FIT_MARGIN;
  const r = freeRect(i.paneW, i.paneH, ins, m);
  const s = cam.scale;
  const W = Math.max(1, i.sceneW), H = Math.max(1, i.sceneH);
  const cross = (len: number, room: number, at: number, c: number): number => {
    if (len * s <= room) return at + (room - len * s) / 2;
    return Math.min(at, Math.max(at + room - len * s, at + room / 2 - c * s));
  };
  if (i.dir === 'RIGHT') {
    const tx = where === 'start' ? r.x : r.x + r.w - W * s;
    return { scale: s, tx, ty: cross(H, r.h, r.y, i.crossAt ?? H / 2) };
  }
  const ty = where === 'start' ? r.y : r.y + r.h - H * s;
  return { scale: s, tx: cross(W, r.w, r.x, i.crossAt ?? W / 2), ty };
}

/**
 * How far each overlay reaches into the pane, as insets: an overlay counts on the side it hugs
 * (the one needing the smallest inset), e.g. the legend at the bottom, the overview bottom or right.
 */
export function overlayInsets(pane: { left: number; top: number; width: number; height: number },
                              boxes: readonly { left: number; top: number; width: number; height: number }[], gap = 6): Insets {
  const out: Insets = { ...NO_INSETS };
  for (const b of boxes) {
    if (b.width <= 0 || b.height <= 0) continue;
    const top = b.top + b.height - pane.top + gap;
    const bottom = pane.top + pane.height - b.top + gap;
    const left = b.left + b.width - pane.left + gap;
    const right = pane.left + pane.width - b.left + gap;
    const min = Math.min(top, bottom, left, right);
    if (min === bottom) out.bottom = Math.max(out.bottom, bottom);
    else if (min === top) out.top = Math.max(out.top, top);
    else if (min === right) out.right = Math.max(out.right, right);
    else out.left = Math.max(out.left, left);
  }
  return out;
}

export type Side = keyof Insets;
const SIDES: readonly Side[] = ['bottom', 'top', 'right', 'left'];

/** The inset an overlay box needs when counted on each side of the pane. */
export function overlaySideInsets(pane: { left: number; top: number; width: number; height: number },
                                  b: { left: number; top: number; width: number; height: number }, gap = 6): Insets {
  return {
    top: b.top + b.height - pane.top + gap,
    bottom: pane.top + pane.height - b.top + gap,
    left: b.left + b.width - pane.left + gap,
    right: pane.left + pane.width - b.left + gap,
  };
}

export interface FitAround extends FitResult { insets: Insets }

/**
 * Fit, choosing for each overlay the side of the pane it is kept clear on (the legend at the
 * bottom left can be cleared from below or from the left): the whole graph at the largest zoom;
 * when it cannot be shown whole, its start at a readable zoom with its breadth beside as many
 * overlays as possible (cleared from the sides across the graph's axis, no node passes under them
 * while scrolling along it), else as `fitCamera` with the sides the overlays hug.
 */
export function fitAround(i: FitInput, pane: { left: number; top: number; width: number; height: number },
                          boxes: readonly { left: number; top: number; width: number; height: number }[], gap = 6): FitAround {
  const shown = boxes.filter((b) => b.width > 0 && b.height > 0).slice(0, 6);
  const sides = shown.map((b) => overlaySideInsets(pane, b, gap));
  // The sides each overlay hugs come first: ties keep the usual choice.
  const order = sides.map((o) => [...SIDES].sort((a, b) => o[a] - o[b]));
  const m = i.margin ?? FIT_MARGIN;
  let best: FitAround | null = null;
  let bestScore = -Infinity;
  const pick = new Array<number>(shown.length).fill(0);
  for (;;) {
    const ins: Insets = { ...NO_INSETS };
    pick.forEach((k, j) => { const side = order[j][k]; ins[side] = Math.max(ins[side], sides[j][side]); });
    const r = fitCamera({ ...i, insets: ins });
    let score = r.scale;
    if (r.whole) score += 4;
    else {
      // Shown from its start, the graph runs on past the pane along its axis: an overlay is clear of
      // it only when cleared from a side across the axis, with the graph's breadth fitting beside it.
      const free = freeRect(i.paneW, i.paneH, ins, m);
      const right = i.dir === 'RIGHT';
      const breadth = right ? Math.max(1, i.sceneH) * r.scale <= free.h + 0.5 : Math.max(1, i.sceneW) * r.scale <= free.w + 0.5;
      const across = pick.filter((k, j) => {
        const side = order[j][k];
        return right ? side === 'top' || side === 'bottom' : side === 'left' || side === 'right';
      }).length;
      if (breadth) score = 2 + across / Math.max(1, pick.length) + 0.5 * r.scale;
    }
    if (score > bestScore + 1e-9) { bestScore = score; best = { ...r, insets: ins }; }
    // The next combination (an odometer over the overlays' four sides).
    let j = 0;
    while (j < pick.length && ++pick[j] === SIDES.length) { pick[j] = 0; j++; }
    if (j === pick.length) break;
  }
  return best ?? { ...fitCamera({ ...i, insets: NO_INSETS }), insets: { ...NO_INSETS } };
}

/**
 * After the pane changed size (w0×h0 → w1×h1): the camera keeping the world point at the pane's
 * centre in place, so a shrinking pane keeps showing what was in its middle.
 */
export function keepCentre(cam: Camera, w0: number, h0: number, w1: number, h1: number): Camera {
  return { scale: cam.scale, tx: cam.tx + (w1 - w0) / 2, ty: cam.ty + (h1 - h0) / 2 };
}

/** Whether any of the scene (world box 0..W × 0..H) is inside the pane at this camera. */
export function sceneOnScreen(cam: Camera, sceneW: number, sceneH: number, paneW: number, paneH: number): boolean {
  const x0 = cam.tx, y0 = cam.ty, x1 = cam.tx + sceneW * cam.scale, y1 = cam.ty + sceneH * cam.scale;
  return x1 > 0 && y1 > 0 && x0 < paneW && y0 < paneH;
}

/** A box in world coordinates. */
export interface Box { x: number; y: number; w: number; h: number }

/**
 * After an edit: the least change of the camera that brings `box` (world: what the edit added or
 * changed) inside the free rectangle, so that the user's place moves no more than it must: a pan
 * at the same zoom when the box fits at it, else the zoom out it needs (keeping the pane's centre
 * where it is) down to `minScale`, then the pan; a box still larger than the rectangle along an
 * axis shows its start there. null when the box is in view already.
 */
export function panToShow(cam: Camera, box: Box, paneW: number, paneH: number, ins: Insets = NO_INSETS,
                          margin = FIT_MARGIN, minScale = READABLE_SCALE): Camera | null {
  const r = freeRect(paneW, paneH, ins, margin);
  let c = cam;
  const fits = Math.min(r.w / Math.max(1, box.w), r.h / Math.max(1, box.h));
  if (fits < cam.scale) {
    const s = Math.max(Math.min(minScale, cam.scale), fits);
    const k = s / cam.scale;
    c = { scale: s, tx: paneW / 2 - (paneW / 2 - cam.tx) * k, ty: paneH / 2 - (paneH / 2 - cam.ty) * k };
  }
  const shift = (a0: number, len: number, lo: number, room: number): number => {
    if (len > room || a0 < lo) return lo - a0;
    if (a0 + len > lo + room) return lo + room - (a0 + len);
    return 0;
  };
  const dx = shift(c.tx + box.x * c.scale, box.w * c.scale, r.x, r.w);
  const dy = shift(c.ty + box.y * c.scale, box.h * c.scale, r.y, r.h);
  if (dx === 0 && dy === 0 && c === cam) return null;
  return { scale: c.scale, tx: c.tx + dx, ty: c.ty + dy };
}
