// PNG and SVG export of the current (laid out) graph, with the core timeline below it when the
// timeline is shown (its rows over the time window shown).
import { SPLIT_H, commOf, frameText, stageColor, stageOf } from './parallel';
import type { GraphView, Theme } from './view';
import type { VNode } from './model';
import { clip } from './view';
import { LABEL_LINE, LABEL_PAD } from './labels';
import type { TimelinePanel } from './timeline';
import { drawTimelinePicture, timelinePicture, timelineSvg, type TimelinePicture } from './timeline-export';
import { groupHeader } from './groups';
import { escapeHtml } from './format';
import { opCategory } from './metrics';

export function download(name: string, blob: Blob): void {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

/** The timeline's picture for an export `width` wide (at least 720 px), or null when it is not shown. */
function timelineFor(tl: TimelinePanel | null | undefined, width: number): TimelinePicture | null {
  const st = tl?.exportState();
  return st ? timelinePicture(st.model, st.win, Math.max(720, width), st.colours, st.selected) : null;
}

/** The PNG: the graph, and the timeline below it when it is shown. */
export function renderPng(view: GraphView, tl?: TimelinePanel | null): HTMLCanvasElement | null {
  const g = view.renderToCanvas();
  if (!g) return null;
  const pic = timelineFor(tl, g.width);
  if (!pic) return g;
  const c = document.createElement('canvas');
  c.width = Math.max(g.width, Math.ceil(pic.width));
  c.height = g.height + Math.ceil(pic.height);
  const ctx = c.getContext('2d');
  if (!ctx) return g;
  ctx.fillStyle = view.theme.bg;
  ctx.fillRect(0, 0, c.width, c.height);
  ctx.drawImage(g, 0, 0);
  drawTimelinePicture(ctx, pic, 0, g.height);
  return c;
}

export function exportPng(view: GraphView, name: string, tl?: TimelinePanel | null): Promise<Blob | null> {
  const c = renderPng(view, tl);
  if (!c) return Promise.resolve(null);
  return new Promise((resolve) => c.toBlob((b) => {
    if (b) download(name, b);
    resolve(b);
  }, 'image/png'));
}

export function buildSvg(view: GraphView, tl?: TimelinePanel | null): string {
  const s = view.scene;
  const th = view.theme;
  if (!s) return '<svg xmlns="http://www.w3.org/2000/svg"/>';
  const m = 20;
  const out: string[] = [];
  const gw = Math.ceil(s.width + 2 * m), gh = Math.ceil(s.height + 2 * m);
  const pic = timelineFor(tl, gw);
  const W = Math.max(gw, Math.ceil(pic?.width ?? 0)), H = gh + Math.ceil(pic?.height ?? 0);
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" ` +
    `viewBox="${-m} ${-m} ${W} ${H}" font-family="system-ui, sans-serif">`);
  out.push(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">` +
    `<path d="M0,0 L10,5 L0,10 z" fill="${th.edge}"/></marker></defs>`);
  out.push(`<rect x="${-m}" y="${-m}" width="100%" height="100%" fill="${th.bg}"/>`);
  for (const it of s.items) {
    if (it.type !== 'frame') continue;
    out.push(`<rect x="${it.x}" y="${it.y}" width="${it.w}" height="${it.h}" rx="8" fill="${th.frame}" stroke="${th.frameBorder}"` +
      `${it.group?.artificial ? ' stroke-dasharray="6 4"' : ''}/>`);
  }
  for (const e of s.edges) {
    const d: string[] = [];
    for (let i = 0; i < e.pts.length; i += 2) d.push(`${i === 0 ? 'M' : 'L'}${e.pts[i].toFixed(1)},${e.pts[i + 1].toFixed(1)}`);
    out.push(`<path d="${d.join(' ')}" fill="none" stroke="${th.edge}" stroke-width="1.2" marker-end="url(#arrow)"/>`);
  }
  // Group headers over the edges entering their frames, on the frame's own colour.
  for (const it of s.items) {
    if (it.type !== 'frame') continue;
    const head = `${it.group?.label ?? it.id}${it.group?.cls ? `  ·  ${it.group.cls}` : ''}`;
    const w = Math.min(it.w - 10, head.length * 6.8 + 12);
    const chip = [th.bg, ...Array.from({ length: Math.max(1, it.depth) }, () => th.frame)]
      .map((f) => `<rect x="${it.x + 6}" y="${it.y + 7}" width="${w.toFixed(1)}" height="18" fill="${f}"/>`).join('');
    out.push(`<g>${chip}<text x="${it.x + 10}" y="${it.y + 20}" font-size="12" font-weight="600" fill="${th.frameHeader}">${escapeHtml(it.group?.label ?? it.id)}` +
      `${it.group?.cls ? `<tspan font-weight="400" fill="${th.muted}">  ·  ${escapeHtml(it.group.cls)}</tspan>` : ''}</text></g>`);
  }
  // Edge labels where the canvas places them (clear of nodes, group headers and each other).
  for (const l of view.edgeLabels()) {
    const b = l.box;
    out.push(`<rect x="${b.x.toFixed(1)}" y="${b.y.toFixed(1)}" width="${b.w.toFixed(1)}" height="${b.h}" fill="${th.bg}" fill-opacity="0.85"/>` +
      l.lines.map((t, i) => `<text x="${(b.x + LABEL_PAD).toFixed(1)}" y="${(b.y + 1 + LABEL_LINE * (i + 0.5) + 3.5).toFixed(1)}" font-size="10" ` +
        `font-family="ui-monospace, SFMono-Regular, Menlo, monospace" fill="${th.edgeLabel}">${escapeHtml(t)}</text>`).join(''));
  }
  for (const it of s.items) {
    if (it.type === 'frame') continue;
    if (it.type === 'group') {
      out.push(`<g><rect x="${it.x}" y="${it.y}" width="${it.w}" height="${it.h}" rx="7" fill="${th.node}" stroke="${th.frameBorder}"/>` +
        `<text x="${it.x + 10}" y="${it.y + 20}" font-size="12" font-weight="600" fill="${th.frameHeader}">${escapeHtml(clip('▸ ' + (it.group?.label ?? ''), 34))}</text>` +
        `<text x="${it.x + 10}" y="${it.y + 37}" font-size="11" fill="${th.muted}">${escapeHtml(it.group ? groupHeader(it.group).rest : '')}</text></g>`);
      continue;
    }
    const n = it.node!;
    if (n.failure) {
      // A failed call: the error colour's border and tint, the error glyph, "id · api" and the code.
      const gx = it.x + 17, gy = it.y + it.h / 2, ty = it.y + (it.h - 40) / 2;
      out.push(`<g><title>${escapeHtml(`${n.failure.id}: ${n.failure.message ?? ''}`)}</title>` +
        `<rect x="${it.x}" y="${it.y}" width="${it.w}" height="${it.h}" rx="6" fill="${th.node}"/>` +
        `<rect x="${it.x}" y="${it.y}" width="${it.w}" height="${it.h}" rx="6" fill="${th.danger}" fill-opacity="0.14" stroke="${th.danger}" stroke-width="2"/>` +
        `<circle cx="${gx}" cy="${gy}" r="8" fill="${th.danger}"/>` +
        `<rect x="${gx - 1.3}" y="${gy - 5}" width="2.6" height="6.2" rx="1.2" fill="${th.dangerFg}"/>` +
        `<circle cx="${gx}" cy="${gy + 3.7}" r="1.45" fill="${th.dangerFg}"/>` +
        `<text x="${it.x + 31}" y="${ty + 18}" font-size="12" font-weight="600" fill="${th.fg}">${escapeHtml(clip(n.label, 32))}</text>` +
        `<text x="${it.x + 31}" y="${ty + 32}" font-size="10" fill="${th.danger}">${escapeHtml(clip(n.sub, 38))}</text></g>`);
      continue;
    }
    if (n.ghost) {
      // A comparison's removed node: dashed, in the error colour, struck through.
      out.push(`<g opacity="0.75"><title>${escapeHtml(`removed: ${n.semantic?.id ?? n.id}`)}</title>` +
        `<rect x="${it.x}" y="${it.y}" width="${it.w}" height="${it.h}" rx="6" fill="${th.node}" stroke="${th.danger}" stroke-width="1.5" stroke-dasharray="5 3"/>` +
        `<text x="${it.x + 11}" y="${it.y + 18}" font-size="12" font-weight="600" fill="${th.fg}" text-decoration="line-through">${escapeHtml(clip(n.label, 32))}</text>` +
        `<text x="${it.x + 11}" y="${it.y + 32}" font-size="10" fill="${th.danger}">${escapeHtml(clip(`removed · ${n.sub}`, 38))}</text></g>`);
      continue;
    }
    const bar = th.cat[opCategory(n)] ?? th.nodeBorder;
    // A comparison's mark: added (green) or changed (amber) outline.
    const mark = view.diff?.tint ? (view.diff.added.has(n.id) ? th.added : view.diff.changed.has(n.id) ? th.changed : null) : null;
    out.push(`<g><title>${escapeHtml(n.id)}</title><rect x="${it.x}" y="${it.y}" width="${it.w}" height="${it.h}" rx="6" ` +
      `fill="${n.dataMove ? th.move : th.node}" stroke="${mark ?? (n.fused ? th.fused : th.nodeBorder)}"${mark ? ' stroke-width="2.5"' : n.fused ? ' stroke-dasharray="5 3"' : ''}/>` +
      `<rect x="${it.x}" y="${it.y}" width="5" height="${it.h}" fill="${bar}"/>` +
      `<text x="${it.x + 11}" y="${it.y + 18}" font-size="12" font-weight="600" fill="${th.fg}">${escapeHtml(clip(n.label, 32))}</text>` +
      `<text x="${it.x + 11}" y="${it.y + 32}" font-size="10" fill="${th.muted}">${escapeHtml(clip(n.sub, 38))}</text>` +
      parallelSvg(n, it, th) + '</g>');
  }
  if (pic) out.push(timelineSvg(pic, -m, gh - m));
  out.push('</svg>');
  return out.join('\n');
}

/** What parallel.ts adds to a node: its stage's stripe, a communication outline, the sharded frame and its split. */
function parallelSvg(n: VNode, it: { x: number; y: number; w: number; h: number }, th: Theme): string {
  let out = '';
  const stage = stageOf(n);
  if (stage !== null) out += `<rect x="${it.x}" y="${it.y}" width="${it.w}" height="4" fill="${stageColor(stage, th.stages)}"><title>pipeline stage ${stage}</title></rect>`;
  if (commOf(n)) out += `<rect x="${it.x}" y="${it.y}" width="${it.w}" height="${it.h}" rx="6" fill="none" stroke="${th.comm}" stroke-width="2"/>`;
  const text = frameText(n);
  if (text) {
    out += `<rect x="${it.x - 1}" y="${it.y - 1}" width="${it.w + 2}" height="${it.h + 2}" rx="8" fill="none" stroke="${th.shard}" stroke-width="1.5" stroke-dasharray="6 3"/>` +
      `<text x="${it.x + 7}" y="${it.y + it.h - SPLIT_H / 2 + 3}" font-size="10.5" font-weight="600" fill="${th.shard}">${escapeHtml(clip(text, Math.floor((it.w - 12) / 5.8)))}</text>`;
  }
  return out;
}

export function exportSvg(view: GraphView, name: string, tl?: TimelinePanel | null): Blob {
  const b = new Blob([buildSvg(view, tl)], { type: 'image/svg+xml' });
  download(name, b);
  return b;
}
