// The training dock: a live chart of loss, learning rate and gradient norm against the global step,
// drawn with uPlot (a maintained, small canvas time-series library; see webview/README.md), and the
// precision drift's summary. Opens when a run's first step (or a drift) arrives, collapses to its
// header line (remembered, localStorage `cellscope-train`), closes until the next run.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

import { driftSummary, type DriftIndex, TrainModel } from './train';
import { escapeHtml as h } from './format';

const KEY = 'cellscope-train';
const CHART_HEIGHT = 170;

function stored(): string | null {
  try { return localStorage.getItem(KEY); } catch { return null; }
}

export class TrainPanel {
  readonly host = document.createElement('section');
  readonly model = new TrainModel();
  private head = document.createElement('div');
  private fold = document.createElement('button');
  private sum = document.createElement('span');
  private close = document.createElement('button');
  private driftLine = document.createElement('div');
  private chartHost = document.createElement('div');
  private chart: uPlot | null = null;
  private drawn = -1;       // the model version the chart shows
  private gradSeries = false;  // the chart was made with a grad-norm series
  private collapsed = stored() === 'collapsed';
  private closed = false;
  private frame = 0;
  drift: DriftIndex | null = null;

  constructor(private readonly onToggle: () => void) {
    this.host.className = 'train hidden';
    this.host.setAttribute('aria-label', 'Training');
    this.head.className = 'train-head';
    this.fold.type = 'button';
    this.fold.className = 'btn icon train-fold';
    this.fold.addEventListener('click', () => this.setCollapsed(!this.collapsed));
    const title = document.createElement('span');
    title.className = 'train-title';
    title.textContent = 'Training';
    this.sum.className = 'train-sum';
    this.sum.setAttribute('aria-live', 'off');
    this.close.type = 'button';
    this.close.className = 'btn icon train-close';
    this.close.textContent = '×';
    this.close.title = 'Close the training chart (it opens again with the next run)';
    this.close.setAttribute('aria-label', 'Close the training chart');
    this.close.addEventListener('click', () => { this.closed = true; this.sync(); });
    this.head.append(this.fold, title, this.sum, this.close);
    this.driftLine.className = 'train-drift hidden';
    this.chartHost.className = 'train-chart';
    this.host.append(this.head, this.driftLine, this.chartHost);
    new ResizeObserver(() => this.resize()).observe(this.chartHost);
    this.sync();
  }

  get open(): boolean { return !this.host.classList.contains('hidden'); }
  get isCollapsed(): boolean { return this.collapsed; }

  /** A TrainProgress arrived (already applied to the model by the caller through apply()). */
  apply(p: Parameters<TrainModel['apply']>[0]): boolean {
    const reset = this.model.apply(p);
    if (reset) {
      // A new run: it opens again even if the last one was closed.
      if (!p.steps?.length || this.model.session !== this.lastSession) this.closed = false;
      this.lastSession = this.model.session;
    }
    this.schedule();
    return reset;
  }
  private lastSession = '';

  setDrift(d: DriftIndex | null): void {
    this.drift = d;
    if (d) this.closed = false;
    this.schedule();
  }

  setCollapsed(c: boolean): void {
    this.collapsed = c;
    try { localStorage.setItem(KEY, c ? 'collapsed' : 'open'); } catch { /* private mode */ }
    this.sync();
  }

  /** Redraws at the next frame (steps arrive faster than frames). */
  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.sync(); });
  }

  /** Draws now (tests; a snapshot's first paint). */
  flush(): void {
    if (this.frame) { cancelAnimationFrame(this.frame); this.frame = 0; }
    this.sync();
  }

  private sync(): void {
    const has = this.model.steps.length > 0 || this.drift !== null;
    const show = has && !this.closed;
    const was = this.open;
    this.host.classList.toggle('hidden', !show);
    this.host.classList.toggle('collapsed', this.collapsed);
    this.fold.textContent = this.collapsed ? '▸' : '▾';
    this.fold.title = this.collapsed ? 'Show the training chart (remembered)' : 'Collapse the training chart to its summary line (remembered)';
    this.fold.setAttribute('aria-expanded', String(!this.collapsed));
    this.fold.setAttribute('aria-label', this.collapsed ? 'Expand the training chart' : 'Collapse the training chart');
    this.sum.textContent = this.model.steps.length ? this.model.summary() : 'no steps';
    this.sum.title = this.model.file ? `${this.model.cell ? this.model.cell + ' · ' : ''}${this.model.file}` : '';
    this.driftLine.classList.toggle('hidden', !this.drift);
    this.driftLine.innerHTML = this.drift
      ? `<b>Precision drift</b> ${h(driftSummary(this.drift))} <a href="#" class="show-drift">Colour nodes by drift</a>` : '';
    this.chartHost.classList.toggle('hidden', this.collapsed || this.model.steps.length === 0);
    if (show && !this.collapsed && this.model.steps.length) this.draw();
    if (was !== this.open) this.onToggle();
  }

  private colours(): { loss: string; lr: string; grad: string; axis: string; grid: string } {
    const cs = getComputedStyle(this.host);
    const v = (n: string, d: string): string => cs.getPropertyValue(n).trim() || d;
    return { loss: v('--cs-train-loss', '#0969da'), lr: v('--cs-train-lr', '#bf8700'), grad: v('--cs-train-grad', '#8250df'),
      axis: v('--cs-muted', '#666'), grid: v('--cs-train-grid', 'rgba(128,128,128,0.18)') };
  }

  private draw(): void {
    if (this.drawn === this.model.version && this.chart) return;
    const d = this.model.chartData();
    const grad = this.model.hasGradNorm();
    const data: uPlot.AlignedData = grad ? [d.x, d.loss, d.lr, d.gradNorm] : [d.x, d.loss, d.lr];
    if (this.chart && this.gradSeries !== grad) { this.chart.destroy(); this.chart = null; }
    if (!this.chart) {
      this.gradSeries = grad;
      this.chart = new uPlot(this.options(grad), data, this.chartHost);
    } else {
      this.chart.setData(data);
    }
    this.drawn = this.model.version;
  }

  private options(grad: boolean): uPlot.Options {
    const c = this.colours();
    const axis = (scale: string, side: number, stroke: string, label: string): uPlot.Axis => ({
      scale, side, stroke, label, labelSize: 16, size: side === 1 ? 62 : 52, labelFont: '11px system-ui, sans-serif', font: '10px system-ui, sans-serif',
      grid: { show: scale === 'loss', stroke: c.grid, width: 1 }, ticks: { stroke: c.grid, width: 1 },
      values: (_u, vals) => vals.map((v) => (v === null ? '' : Math.abs(v) !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5) ? v.toExponential(1) : String(+v.toPrecision(4)))),
    });
    const series: uPlot.Series[] = [
      { label: 'step' },
      { label: 'loss', scale: 'loss', stroke: c.loss, width: 1.5, spanGaps: false, points: { show: false } },
      { label: 'lr', scale: 'lr', stroke: c.lr, width: 1.25, dash: [6, 3], points: { show: false } },
    ];
    const axes: uPlot.Axis[] = [
      { stroke: c.axis, grid: { stroke: c.grid, width: 1 }, ticks: { stroke: c.grid, width: 1 }, font: '10px system-ui, sans-serif', size: 28 },
      axis('loss', 3, c.loss, 'loss'),
      axis('lr', 1, c.lr, 'lr'),
    ];
    if (grad) {
      series.push({ label: 'grad norm', scale: 'grad', stroke: c.grad, width: 1.25, points: { show: false } });
      axes.push(axis('grad', 1, c.grad, 'grad norm'));
    }
    return {
      width: Math.max(200, this.chartHost.clientWidth || 600), height: CHART_HEIGHT,
      scales: { x: { time: false }, loss: { auto: true }, lr: { auto: true }, grad: { auto: true } },
      series, axes, legend: { show: true, live: true }, cursor: { drag: { x: true, y: false } },
    };
  }

  private resize(): void {
    if (!this.chart || this.collapsed) return;
    const w = this.chartHost.clientWidth;
    if (w > 0 && Math.abs(w - this.chart.width) > 1) this.chart.setSize({ width: w, height: CHART_HEIGHT });
  }

  /** The theme changed: the chart is made again with its colours. */
  invalidate(): void {
    this.chart?.destroy();
    this.chart = null;
    this.drawn = -1;
    this.schedule();
  }

  /** What the chart draws (the test hook): its series and their data as uPlot holds them. */
  state(): { open: boolean; collapsed: boolean; messages: number; points: number; summary: string; drift: string;
    series: string[]; data: (number | null)[][]; width: number; height: number } {
    const u = this.chart;
    return {
      open: this.open, collapsed: this.collapsed, messages: this.model.messages, points: this.model.steps.length,
      summary: this.sum.textContent ?? '', drift: this.driftLine.textContent ?? '',
      series: u ? u.series.map((s) => String(s.label ?? '')) : [],
      data: u ? u.data.map((col) => Array.from(col as ArrayLike<number | null>)) : [],
      width: u?.width ?? 0, height: u?.height ?? 0,
    };
  }

  /** The chart's canvas (the test hook: its pixels). */
  canvas(): HTMLCanvasElement | null { return this.chartHost.querySelector('canvas'); }
}
