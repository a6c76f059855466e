// The memory timeline: every planned tensor as a bar from the step that writes it to the last
// step that reads it (x, execution order), at its arena offset (y). Tensors sharing a buffer
// share a colour; the peak step is marked.
import type { Cell } from './protocol';
import { fmtBytes } from './format';

export interface MemBar {
  node: string; output: number; first: number; last: number; offset: number; size: number; buffer: number;
}

export interface MemTimeline {
  bars: MemBar[];
  steps: number;
  arena: number;       // peak bytes (arena size)
  peakStep: number;    // the step with most live bytes
  peakLive: number;
  live: number[];      // live bytes per step
  stepNode: string[];  // optimized node id at each step
}

export function buildTimeline(cell: Cell | undefined): MemTimeline | null {
  const opt = cell?.optimized;
  if (!opt || !opt.nodes || opt.nodes.length === 0) return null;
  const bars: MemBar[] = [];
  const steps = opt.nodes.length;
  for (const n of opt.nodes) for (const p of n.memory ?? []) {
    bars.push({
      node: n.id, output: p.output ?? 0, first: p.first ?? 0, last: Math.max(p.first ?? 0, p.last ?? 0),
      offset: p.offset ?? 0, size: p.size ?? p.bytes ?? 0, buffer: p.buffer ?? 0,
    });
  }
  if (bars.length === 0) return null;
  const live = new Array<number>(steps + 1).fill(0);
  let arena = opt.memory?.peakBytes ?? 0;
  for (const b of bars) {
    arena = Math.max(arena, b.offset + b.size);
    for (let s = b.first; s <= Math.min(b.last, steps); s++) live[s] += b.size;
  }
  let peakStep = 0;
  for (let s = 1; s < live.length; s++) if (live[s] > live[peakStep]) peakStep = s;
  return { bars, steps, arena, peakStep, peakLive: live[peakStep], live, stepNode: opt.nodes.map((n) => n.id) };
}

export class MemoryPanel {
  readonly canvas: HTMLCanvasElement;
  private tl: MemTimeline | null = null;
  private selected: string | null = null;
  private hover: MemBar | null = null;
  private tip: HTMLDivElement;

  constructor(private host: HTMLElement, private onPick: (node: string) => void) {
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'mem-canvas';
    host.appendChild(this.canvas);
    this.tip = document.createElement('div');
    this.tip.className = 'mem-tip';
    host.appendChild(this.tip);
    new ResizeObserver(() => this.paint()).observe(host);
    this.canvas.addEventListener('mousemove', (e) => {
      const b = this.barAt(e.offsetX, e.offsetY);
      this.hover = b;
      if (b) {
        this.tip.style.display = 'block';
        this.tip.style.left = Math.min(e.offsetX + 12, this.host.clientWidth - 260) + 'px';
        this.tip.style.top = Math.max(0, e.offsetY - 40) + 'px';
        this.tip.textContent = `${b.node}:${b.output} · ${fmtBytes(b.size)} @ ${fmtBytes(b.offset)} · steps ${b.first}–${b.last} · buffer ${b.buffer}`;
      } else this.tip.style.display = 'none';
      this.paint();
    });
    this.canvas.addEventListener('mouseleave', () => { this.hover = null; this.tip.style.display = 'none'; this.paint(); });
    this.canvas.addEventListener('click', (e) => {
      const b = this.barAt(e.offsetX, e.offsetY);
      if (b) this.onPick(b.node);
    });
  }

  /** The texts of the last paint and where (test hook: nothing is cut at the chart's edges). */
  labels: { text: string; x: number; w: number }[] = [];

  /** The chart's size and its texts (test hook). */
  state(): { width: number; canvasWidth: number; labels: { text: string; x: number; w: number }[] } {
    return { width: this.host.clientWidth, canvasWidth: this.canvas.clientWidth, labels: this.labels };
  }

  set(tl: MemTimeline | null, selected: string | null): void {
    this.tl = tl;
    this.selected = selected;
    this.paint();
  }

  private geom(): { l: number; t: number; w: number; h: number } {
    const l = 70, t = 18, r = 12, b = 22;
    return { l, t, w: Math.max(10, this.host.clientWidth - l - r), h: Math.max(10, this.host.clientHeight - t - b) };
  }

  private barAt(x: number, y: number): MemBar | null {
    const tl = this.tl;
    if (!tl) return null;
    const g = this.geom();
    const sx = g.w / Math.max(1, tl.steps), sy = g.h / Math.max(1, tl.arena);
    for (let i = tl.bars.length - 1; i >= 0; i--) {
      const b = tl.bars[i];
      const x0 = g.l + b.first * sx, x1 = g.l + (b.last + 1) * sx;
      const y1 = g.t + g.h - b.offset * sy, y0 = y1 - Math.max(2, b.size * sy);
      if (x >= x0 && x <= x1 && y >= y0 && y <= y1) return b;
    }
    return null;
  }

  paint(): void {
    const dpr = window.devicePixelRatio || 1;
    const W = this.host.clientWidth, H = this.host.clientHeight;
    this.canvas.width = Math.max(1, W * dpr);
    this.canvas.height = Math.max(1, H * dpr);
    this.canvas.style.width = W + 'px';
    this.canvas.style.height = H + 'px';
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const cs = getComputedStyle(this.host);
    const fg = cs.getPropertyValue('--cs-fg').trim() || '#222';
    const muted = cs.getPropertyValue('--cs-muted').trim() || '#777';
    const accent = cs.getPropertyValue('--cs-accent').trim() || '#0969da';
    ctx.clearRect(0, 0, W, H);
    this.labels = [];
    const tl = this.tl;
    ctx.font = '11px system-ui, sans-serif';
    if (!tl) {
      ctx.fillStyle = muted;
      ctx.fillText('No memory plan for this Cell (optimization layer needed).', 12, 20);
      return;
    }
    const g = this.geom();
    const sx = g.w / Math.max(1, tl.steps), sy = g.h / Math.max(1, tl.arena);
    ctx.strokeStyle = muted;
    ctx.globalAlpha = 0.4;
    ctx.strokeRect(g.l, g.t, g.w, g.h);
    ctx.globalAlpha = 1;
    ctx.fillStyle = muted;
    ctx.textBaseline = 'middle';
    for (let i = 0; i <= 4; i++) {
      const v = (tl.arena * i) / 4;
      const y = g.t + g.h - v * sy;
      ctx.fillText(fmtBytes(Math.round(v)), 4, y);
    }
    ctx.textBaseline = 'top';
    // The axis: 0 at its start, the step count right-aligned at its end, its name before that
    // when there is room (a narrow pane: none), every text inside the chart.
    const text = (t: string, x: number, y: number): void => {
      ctx.fillText(t, x, y);
      this.labels.push({ text: t, x, w: ctx.measureText(t).width });
    };
    const steps = String(tl.steps);
    const sw = ctx.measureText(steps).width;
    text('0', g.l, g.t + g.h + 6);
    text(steps, g.l + g.w - sw, g.t + g.h + 6);
    const axis = 'execution step →';
    const ax = g.l + g.w - sw - 12 - ctx.measureText(axis).width;
    if (ax > g.l + 20) text(axis, ax, g.t + g.h + 6);
    const selBuffers = new Set<number>();
    for (const b of tl.bars) if (b.node === this.selected) selBuffers.add(b.buffer);
    for (const b of tl.bars) {
      const x0 = g.l + b.first * sx, w = Math.max(1.5, (b.last + 1 - b.first) * sx);
      const h = Math.max(1.5, b.size * sy), y0 = g.t + g.h - b.offset * sy - h;
      const hue = (b.buffer * 47) % 360;
      const isSel = b.node === this.selected;
      const mate = selBuffers.has(b.buffer);
      ctx.fillStyle = `hsla(${hue}, 60%, 55%, ${this.selected ? (isSel ? 1 : mate ? 0.8 : 0.18) : 0.75})`;
      ctx.fillRect(x0, y0, w, h);
      if (isSel || this.hover === b) {
        ctx.strokeStyle = isSel ? accent : fg;
        ctx.lineWidth = 2;
        ctx.strokeRect(x0, y0, w, h);
      }
    }
    // Peak marker.
    const px = g.l + (tl.peakStep + 0.5) * sx;
    ctx.strokeStyle = '#cf222e';
    ctx.setLineDash([4, 3]);
    ctx.lineWidth = 1.5;
    ctx.beginPath(); ctx.moveTo(px, g.t); ctx.lineTo(px, g.t + g.h); ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = '#cf222e';
    ctx.textBaseline = 'bottom';
    // The peak's label: in full when it fits, else shorter; never past the chart's edges.
    const long = `peak ${fmtBytes(tl.peakLive)} live at step ${tl.peakStep} (${tl.stepNode[tl.peakStep] ?? 'end'}) · arena ${fmtBytes(tl.arena)}`;
    const lbl = [long, `peak ${fmtBytes(tl.peakLive)} at step ${tl.peakStep}`, `peak ${fmtBytes(tl.peakLive)}`]
      .find((t) => ctx.measureText(t).width <= W - 8) ?? `peak ${fmtBytes(tl.peakLive)}`;
    const lw = ctx.measureText(lbl).width;
    text(lbl, Math.max(4, Math.min(px - lw / 2, W - 4 - lw)), g.t - 2);
  }
}
