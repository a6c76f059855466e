// The overview (minimap): the whole laid-out graph, small, in the pane's bottom-right corner, with
// the viewport's rectangle; a click or drag in it moves the view there, arrow keys pan, Home/End
// go to the graph's start/end. Cheap at 10k nodes: the graph (frames and boxes only, no edges or
// text) is drawn into a cached low-resolution bitmap, redrawn at most every REDRAW_MS when the
// scene changes; a pan or zoom only copies the bitmap and strokes the viewport rectangle.
import type { DrawItem, Scene } from './layout';
import { opCategory } from './metrics';
import type { Camera } from './fit';
import type { GraphView, Theme } from './view';

export interface Rect { x: number; y: number; w: number; h: number }

/** World → overview: (ox + x·kx, oy + y·ky), in the overview's CSS px. */
export interface MiniGeo { w: number; h: number; kx: number; ky: number; ox: number; oy: number }

export const MINIMAP_PAD = 4;
/** A graph longer than this (aspect) is squeezed along its length, not shrunk to a hairline. */
export const MINIMAP_MAX_ASPECT = 3;
export const REDRAW_MS = 120;

/** The largest overview box for a pane (CSS px), or null when the pane is too small for one. */
export function minimapBounds(paneW: number, paneH: number): { maxW: number; maxH: number } | null {
  if (paneW < 360 || paneH < 260) return null;
  const clamp = (v: number, lo: number, hi: number): number => Math.max(lo, Math.min(hi, Math.round(v)));
  return { maxW: clamp(paneW * 0.2, 100, 240), maxH: clamp(paneH * 0.3, 80, 240) };
}

/**
 * The overview's box and scales for a scene: the scene's aspect (kept between 1:MAX_ASPECT and
 * MAX_ASPECT:1, beyond which the long axis is scaled down more than the short one) fitted into
 * maxW × maxH.
 */
export function minimapGeometry(sceneW: number, sceneH: number, maxW: number, maxH: number,
                                maxAspect = MINIMAP_MAX_ASPECT, pad = MINIMAP_PAD): MiniGeo {
  const W = Math.max(1, sceneW), H = Math.max(1, sceneH);
  const a = Math.max(1 / maxAspect, Math.min(maxAspect, W / H));
  let w = maxW, h = w / a;
  if (h > maxH) { h = maxH; w = h * a; }
  w = Math.max(2 * pad + 8, Math.round(w));
  h = Math.max(2 * pad + 8, Math.round(h));
  return { w, h, kx: (w - 2 * pad) / W, ky: (h - 2 * pad) / H, ox: pad, oy: pad };
}

/** The pane's visible part of the world, in overview px (not clipped). */
export function viewportRect(geo: MiniGeo, cam: Camera, paneW: number, paneH: number): Rect {
  const x0 = -cam.tx / cam.scale, y0 = -cam.ty / cam.scale;
  return { x: geo.ox + x0 * geo.kx, y: geo.oy + y0 * geo.ky, w: (paneW / cam.scale) * geo.kx, h: (paneH / cam.scale) * geo.ky };
}

/** `r` inside 0..w × 0..h, or null when none of it is. */
export function clipRect(r: Rect, w: number, h: number): Rect | null {
  const x0 = Math.max(0, r.x), y0 = Math.max(0, r.y);
  const x1 = Math.min(w, r.x + r.w), y1 = Math.min(h, r.y + r.h);
  return x1 > x0 && y1 > y0 ? { x: x0, y: y0, w: x1 - x0, h: y1 - y0 } : null;
}

/** The world point under overview point (mx, my). */
export function worldAt(geo: MiniGeo, mx: number, my: number): [number, number] {
  return [(mx - geo.ox) / geo.kx, (my - geo.oy) / geo.ky];
}

/** The camera (zoom kept) centring the pane on the world point under overview point (mx, my). */
export function cameraAt(geo: MiniGeo, mx: number, my: number, cam: Camera, paneW: number, paneH: number): Camera {
  const [wx, wy] = worldAt(geo, mx, my);
  return { scale: cam.scale, tx: paneW / 2 - wx * cam.scale, ty: paneH / 2 - wy * cam.scale };
}

/** What the overview draws: frames (outlined), and the boxes batched by colour (flat x,y,w,h). */
export interface MiniDrawing { frames: number[]; boxes: Map<string, number[]>; marks: Map<string, number[]> }

export interface MiniColours {
  box(it: DrawItem): string;
  mark(id: string): string | null;  // selection, search match: drawn on top, at least 4 px
}

/** Pure: the overview's rectangles for a scene (every box at least 1 px). */
export function minimapDrawing(scene: Scene, geo: MiniGeo, colours: MiniColours): MiniDrawing {
  const frames: number[] = [];
  const boxes = new Map<string, number[]>();
  const marks = new Map<string, number[]>();
  const { kx, ky, ox, oy } = geo;
  for (const it of scene.items) {
    const x = ox + it.x * kx, y = oy + it.y * ky;
    const w = Math.max(1, it.w * kx), h = Math.max(1, it.h * ky);
    if (it.type === 'frame') { frames.push(x, y, it.w * kx, it.h * ky); continue; }
    const c = colours.box(it);
    let list = boxes.get(c);
    if (!list) { list = []; boxes.set(c, list); }
    list.push(x, y, w, h);
    const m = colours.mark(it.id);
    if (m) {
      let ml = marks.get(m);
      if (!ml) { ml = []; marks.set(m, ml); }
      const mw = Math.max(4, w), mh = Math.max(4, h);
      ml.push(x + w / 2 - mw / 2, y + h / 2 - mh / 2, mw, mh);
    }
  }
  return { frames, boxes, marks };
}

export function themeColours(th: Theme, view: Pick<GraphView, 'selection' | 'highlight'> & Partial<Pick<GraphView, 'boxColour' | 'multi'>>): MiniColours {
  return {
    box: (it) => {
      if (view.boxColour) return view.boxColour(it);
      if (it.type === 'group') return th.frameBorder;
      const n = it.node;
      if (!n) return th.nodeBorder;
      if (n.failure) return th.danger;
      return th.cat[opCategory(n)] ?? th.nodeBorder;
    },
    mark: (id) => (id === view.selection || view.multi?.has(id) ? th.accent : view.highlight.has(id) ? th.highlight : null),
  };
}

export class Minimap {
  readonly el: HTMLDivElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly bitmap: HTMLCanvasElement;
  private geo: MiniGeo | null = null;   // the bitmap's
  private drawnScene: Scene | null = null;
  private drawnTheme: Theme | null = null;
  private drawnMarks = '';
  private timer: ReturnType<typeof setTimeout> | null = null;
  private lastDraw = -Infinity;
  private enabled = true;
  private dpr = 1;
  private widthVar = '';
  private drag: { dx: number; dy: number } | null = null;
  /** Bitmap redraws so far and the last one's duration (ms). */
  sceneDraws = 0;
  lastSceneMs = 0;

  constructor(private host: HTMLElement, private view: GraphView) {
    this.el = document.createElement('div');
    this.el.className = 'minimap hidden';
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'minimap-canvas';
    this.el.tabIndex = 0;
    this.el.setAttribute('role', 'application');
    this.el.setAttribute('aria-roledescription', 'overview');
    this.el.setAttribute('aria-label', 'Overview of the graph: click or drag to move the view; arrow keys pan, Home and End go to the start and the end');
    this.el.appendChild(this.canvas);
    this.bitmap = document.createElement('canvas');
    host.appendChild(this.el);
    view.onPaint(() => this.update());
    view.onScene(() => this.place());
    this.bind();
  }

  setEnabled(on: boolean): void {
    this.enabled = on;
    this.update();
  }

  get isEnabled(): boolean { return this.enabled; }

  /** Shown, sized for the current scene and pane (or hidden); whether it is shown. */
  private place(): boolean {
    const s = this.view.scene;
    const { w: pw, h: ph } = this.view.paneSize();
    const b = minimapBounds(pw, ph);
    const show = this.enabled && !!s && s.width > 0 && s.height > 0 && b !== null;
    if (this.el.classList.contains('hidden') === show) {
      this.el.classList.toggle('hidden', !show);
      this.host.classList.toggle('has-minimap', show);
    }
    if (!show || !s || !b) return false;
    const g = minimapGeometry(s.width, s.height, b.maxW, b.maxH);
    const w = `${g.w}px`, h = `${g.h}px`;
    if (this.canvas.style.width !== w) this.canvas.style.width = w;
    if (this.canvas.style.height !== h) this.canvas.style.height = h;
    if (this.widthVar !== w) { this.widthVar = w; this.host.style.setProperty('--cs-minimap-w', w); }
    return true;
  }

  /** After each paint of the view: the viewport rectangle now, the graph's bitmap when it changed (throttled). */
  update(): void {
    if (!this.place()) return;
    const s = this.view.scene!;
    const marks = this.marksKey();
    if (s !== this.drawnScene || this.view.theme !== this.drawnTheme || marks !== this.drawnMarks || !this.geo) {
      const wait = this.lastDraw + REDRAW_MS - performance.now();
      if (wait <= 0 || !this.geo) this.redraw();
      else if (!this.timer) this.timer = setTimeout(() => { this.timer = null; this.redraw(); this.overlay(); }, wait);
    }
    this.overlay();
  }

  private marksKey(): string {
    const v = this.view;
    let k = `${v.metric}|${v.selection ?? ''}|${v.highlight.size}|${v.multi.size}`;
    for (const id of v.highlight) { k += '|' + id; if (k.length > 200) break; }
    return k;
  }

  /** Redraws the graph's bitmap for the current scene. */
  redraw(): void {
    if (!this.place()) return;
    const t0 = performance.now();
    const s = this.view.scene!;
    const { w: pw, h: ph } = this.view.paneSize();
    const b = minimapBounds(pw, ph)!;
    const geo = minimapGeometry(s.width, s.height, b.maxW, b.maxH);
    const th = this.view.theme;
    const dpr = Math.min(2, window.devicePixelRatio || 1);
    this.dpr = dpr;
    for (const c of [this.bitmap, this.canvas]) {
      const cw = Math.round(geo.w * dpr), ch = Math.round(geo.h * dpr);
      if (c.width !== cw) c.width = cw;
      if (c.height !== ch) c.height = ch;
    }
    const ctx = this.bitmap.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, geo.w, geo.h);
    const d = minimapDrawing(s, geo, themeColours(th, this.view));
    const frames = new Path2D();
    for (let i = 0; i < d.frames.length; i += 4) frames.rect(d.frames[i], d.frames[i + 1], d.frames[i + 2], d.frames[i + 3]);
    ctx.fillStyle = th.frame;
    ctx.fill(frames);
    ctx.strokeStyle = th.frameBorder;
    ctx.lineWidth = 1 / dpr;
    ctx.stroke(frames);
    const fill = (m: Map<string, number[]>): void => {
      for (const [col, r] of m) {
        const p = new Path2D();
        for (let i = 0; i < r.length; i += 4) p.rect(r[i], r[i + 1], r[i + 2], r[i + 3]);
        ctx.fillStyle = col;
        ctx.fill(p);
      }
    };
    fill(d.boxes);
    fill(d.marks);
    this.geo = geo;
    this.drawnScene = s;
    this.drawnTheme = th;
    this.drawnMarks = this.marksKey();
    this.lastDraw = performance.now();
    this.sceneDraws++;
    this.lastSceneMs = this.lastDraw - t0;
  }

  /** The bitmap and the viewport rectangle on the shown canvas. */
  private overlay(): void {
    const geo = this.geo;
    if (!geo) return;
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    const th = this.view.theme;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(this.bitmap, 0, 0);
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    const vr = this.viewport();
    if (!vr) return;
    ctx.globalAlpha = 0.14;
    ctx.fillStyle = th.accent;
    ctx.fillRect(vr.x, vr.y, vr.w, vr.h);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = th.accent;
    ctx.lineWidth = 1.5;
    const inset = 0.75;
    ctx.strokeRect(vr.x + inset, vr.y + inset, Math.max(1, vr.w - 2 * inset), Math.max(1, vr.h - 2 * inset));
  }

  /** The viewport rectangle (overview px, clipped to the overview; at least 3 px), or null. */
  viewport(): Rect | null {
    const geo = this.geo;
    if (!geo) return null;
    const { w, h } = this.view.paneSize();
    const r = clipRect(viewportRect(geo, this.view.camera(), w, h), geo.w, geo.h);
    if (!r) return null;
    const mw = Math.max(3, r.w), mh = Math.max(3, r.h);
    return {
      x: Math.max(0, Math.min(geo.w - mw, r.x - (mw - r.w) / 2)), y: Math.max(0, Math.min(geo.h - mh, r.y - (mh - r.h) / 2)),
      w: mw, h: mh,
    };
  }

  /** For tests: the overview and its viewport rectangle in client coordinates. */
  info(): { visible: boolean; rect: Rect | null; viewport: Rect | null; sceneDraws: number; lastSceneMs: number } {
    const visible = !this.el.classList.contains('hidden');
    if (!visible || !this.geo) return { visible, rect: null, viewport: null, sceneDraws: this.sceneDraws, lastSceneMs: this.lastSceneMs };
    const r = this.canvas.getBoundingClientRect();
    const v = this.viewport();
    return {
      visible, rect: { x: r.left, y: r.top, w: r.width, h: r.height },
      viewport: v ? { x: r.left + v.x, y: r.top + v.y, w: v.w, h: v.h } : null,
      sceneDraws: this.sceneDraws, lastSceneMs: this.lastSceneMs,
    };
  }

  private moveTo(mx: number, my: number): void {
    const geo = this.geo;
    if (!geo) return;
    const { w, h } = this.view.paneSize();
    const cam = cameraAt(geo, mx, my, this.view.camera(), w, h);
    this.view.setCamera(cam);
  }

  private bind(): void {
    const c = this.canvas;
    const local = (e: PointerEvent): [number, number] => {
      const r = c.getBoundingClientRect();
      return [e.clientX - r.left, e.clientY - r.top];
    };
    c.addEventListener('pointerdown', (e) => {
      if (e.button !== 0 || !this.geo) return;
      e.preventDefault();
      this.el.focus({ preventScroll: true });
      c.setPointerCapture(e.pointerId);
      const [mx, my] = local(e);
      // Grabbing the viewport rectangle drags it from where it was taken; elsewhere it jumps there.
      const vr = this.viewport();
      const inside = vr && mx >= vr.x && mx <= vr.x + vr.w && my >= vr.y && my <= vr.y + vr.h;
      this.drag = inside && vr ? { dx: mx - (vr.x + vr.w / 2), dy: my - (vr.y + vr.h / 2) } : { dx: 0, dy: 0 };
      this.moveTo(mx - this.drag.dx, my - this.drag.dy);
      this.el.classList.add('dragging');
    });
    c.addEventListener('pointermove', (e) => {
      if (!this.drag) return;
      const [mx, my] = local(e);
      this.moveTo(mx - this.drag.dx, my - this.drag.dy);
    });
    const end = (): void => { this.drag = null; this.el.classList.remove('dragging'); };
    c.addEventListener('pointerup', end);
    c.addEventListener('pointercancel', end);
    c.addEventListener('wheel', (e) => { e.preventDefault(); this.view.zoom(Math.exp(-e.deltaY * 0.0018)); }, { passive: false });
    this.el.addEventListener('keydown', (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const { w, h } = this.view.paneSize();
      const step = e.shiftKey ? 0.5 : 0.2;
      switch (e.key) {
        case 'ArrowLeft': this.view.pan(w * step, 0); break;
        case 'ArrowRight': this.view.pan(-w * step, 0); break;
        case 'ArrowUp': this.view.pan(0, h * step); break;
        case 'ArrowDown': this.view.pan(0, -h * step); break;
        case 'Home': this.view.jump('start'); break;
        case 'End': this.view.jump('end'); break;
        default: return;
      }
      e.preventDefault();
      e.stopPropagation();
    });
  }
}
