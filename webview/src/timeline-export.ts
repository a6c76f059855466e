// The core timeline in the PNG and SVG exports: the schedule's rows (every row, not only those
// scrolled into the dock) over the time window shown, as one list of shapes that both a canvas
// and an SVG writer draw. Bars narrower than a pixel share their pixel column, as on screen.
import { escapeHtml } from './format';
import { BOUNDS, BOUND_LABEL, firstBarEndingAfter, fmtUs, ticks, type Bound, type TimelineModel, type TimeWindow } from './timeline';

export interface TimelineColours {
  bg: string; fg: string; muted: string; border: string; accent: string; stripe: string;
  bound: Record<Bound, string>;
}

type Shape =
  | { kind: 'rect'; x: number; y: number; w: number; h: number; fill: string; alpha?: number; stroke?: string }
  | { kind: 'text'; x: number; y: number; text: string; fill: string; size: number; weight?: number };

export interface TimelinePicture { width: number; height: number; shapes: Shape[]; bars: number }

const GUTTER = 96;
const TITLE_H = 24;
const AXIS_H = 20;
const SECTION_H = 16;
const ROW_H = 12;

/**
 * The timeline as shapes, `width` wide: a title (what it is: an analytical estimate) with the
 * bound colours, the time axis of `win`, then per section its title and rows, each row its
 * label and its bars in the window; with a selection, the other bars dimmed and the selected
 * ones outlined, as on screen.
 */
export function timelinePicture(m: TimelineModel, win: TimeWindow, width: number, col: TimelineColours,
                                selected: ReadonlySet<number> = new Set()): TimelinePicture {
  const shapes: Shape[] = [];
  const pw = Math.max(40, width - GUTTER - 8);
  const span = Math.max(1e-9, win.t1 - win.t0);
  const rows = m.sections.reduce((n, s) => n + s.rows.length, 0);
  const height = TITLE_H + AXIS_H + m.sections.length * SECTION_H + rows * ROW_H + 6;
  shapes.push({ kind: 'rect', x: 0, y: 0, w: width, h: height, fill: col.bg });
  shapes.push({ kind: 'text', x: 6, y: 15, text: `Core timeline · ${m.target} · ${fmtUs(win.t0)}–${fmtUs(win.t1)}`, fill: col.fg, size: 12, weight: 600 });
  shapes.push({ kind: 'text', x: 6 + 250, y: 15, text: 'analytical estimate, not a measurement', fill: col.muted, size: 10.5 });
  let lx = Math.max(520, width - 4 * 110);
  for (const b of BOUNDS) {
    shapes.push({ kind: 'rect', x: lx, y: 7, w: 10, h: 10, fill: col.bound[b] });
    shapes.push({ kind: 'text', x: lx + 14, y: 16, text: BOUND_LABEL[b], fill: col.muted, size: 10.5 });
    lx += 110;
  }
  // The axis.
  let y = TITLE_H;
  shapes.push({ kind: 'text', x: 6, y: y + 13, text: 'time →', fill: col.muted, size: 10.5 });
  for (const tk of ticks(win, pw)) {
    if (tk.x < 0 || tk.x > pw) continue;
    shapes.push({ kind: 'rect', x: GUTTER + tk.x, y: y + AXIS_H - 5, w: 1, h: height - y - AXIS_H + 5, fill: col.border, alpha: 0.6 });
    shapes.push({ kind: 'text', x: GUTTER + tk.x + 3, y: y + 13, text: tk.label, fill: col.muted, size: 10.5 });
  }
  y += AXIS_H;
  shapes.push({ kind: 'rect', x: 0, y: y - 1, w: width, h: 1, fill: col.border });
  const dim = selected.size > 0;
  let bars = 0;
  for (const s of m.sections) {
    shapes.push({ kind: 'rect', x: 0, y, w: width, h: SECTION_H, fill: col.stripe });
    shapes.push({ kind: 'text', x: 6, y: y + 12, text: `${s.title} · ${s.rows.length} row${s.rows.length === 1 ? '' : 's'}`, fill: col.fg, size: 10.5, weight: 600 });
    y += SECTION_H;
    s.rows.forEach((ri, pos) => {
      const row = m.rows[ri];
      if (pos % 2 === 1) shapes.push({ kind: 'rect', x: GUTTER, y, w: pw, h: ROW_H, fill: col.stripe });
      shapes.push({ kind: 'text', x: 8, y: y + 10, text: row.label, fill: col.muted, size: 9.5 });
      const n = row.start.length;
      let lastPx = -Infinity;
      for (let i = firstBarEndingAfter(row, win.t0); i < n && row.start[i] <= win.t1; i++) {
        const k = m.kernels[row.kernel[i]];
        const x0 = Math.max(0, ((row.start[i] - win.t0) / span) * pw), x1 = Math.min(pw, ((row.end[i] - win.t0) / span) * pw);
        const sel = selected.has(k.index);
        // (under a pixel: one bar per pixel column, unless selected)
        if (x1 - x0 < 1 && Math.floor(x0) === lastPx && !sel) continue;
        lastPx = Math.floor(x0);
        let hh = ROW_H - 2;
        if (row.bytes && row.maxBytes > 0) hh = Math.max(2, hh * Math.max(0.3, Math.sqrt(row.bytes[i] / row.maxBytes)));
        shapes.push({
          kind: 'rect', x: GUTTER + x0, y: y + 1 + (ROW_H - 2 - hh), w: Math.max(1, x1 - x0), h: hh, fill: col.bound[k.bound],
          alpha: dim && !sel ? 0.3 : 0.9, ...(sel ? { stroke: col.accent } : {}),
        });
        bars++;
      }
      y += ROW_H;
    });
  }
  shapes.push({ kind: 'rect', x: GUTTER - 1, y: TITLE_H + AXIS_H, w: 1, h: height - TITLE_H - AXIS_H, fill: col.border });
  return { width, height, shapes, bars };
}

/** Draws the picture with its top-left corner at (ox, oy). */
export function drawTimelinePicture(ctx: CanvasRenderingContext2D, p: TimelinePicture, ox: number, oy: number): void {
  ctx.save();
  ctx.translate(ox, oy);
  for (const s of p.shapes) {
    if (s.kind === 'rect') {
      ctx.globalAlpha = s.alpha ?? 1;
      ctx.fillStyle = s.fill;
      ctx.fillRect(s.x, s.y, s.w, s.h);
      ctx.globalAlpha = 1;
      if (s.stroke) { ctx.strokeStyle = s.stroke; ctx.lineWidth = 1.5; ctx.strokeRect(s.x - 0.75, s.y - 0.75, s.w + 1.5, s.h + 1.5); }
    } else {
      ctx.fillStyle = s.fill;
      ctx.font = `${s.weight ?? 400} ${s.size}px system-ui, sans-serif`;
      ctx.fillText(s.text, s.x, s.y);
    }
  }
  ctx.restore();
}

/** The picture as an SVG group at (ox, oy). */
export function timelineSvg(p: TimelinePicture, ox: number, oy: number): string {
  const out: string[] = [`<g class="core-timeline" transform="translate(${ox},${oy})">`];
  const n = (v: number) => Number(v.toFixed(2));
  for (const s of p.shapes) {
    if (s.kind === 'rect') {
      out.push(`<rect x="${n(s.x)}" y="${n(s.y)}" width="${n(s.w)}" height="${n(s.h)}" fill="${s.fill}"` +
        `${s.alpha !== undefined && s.alpha !== 1 ? ` fill-opacity="${s.alpha}"` : ''}${s.stroke ? ` stroke="${s.stroke}" stroke-width="1.5"` : ''}/>`);
    } else {
      out.push(`<text x="${n(s.x)}" y="${n(s.y)}" font-size="${s.size}"${s.weight ? ` font-weight="${s.weight}"` : ''} fill="${s.fill}">${escapeHtml(s.text)}</text>`);
    }
  }
  out.push('</g>');
  return out.join('\n');
}
