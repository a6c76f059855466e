// The training dock: a live chart of loss, learning rate and gradient norm against the global step,
// drawn with uPlot (a maintained, small canvas time-series library; see webview/README.md), and the
// precision drift's summary. Opens when a run's first step (or a drift) arrives, collapses to its
// header line (remembered, localStorage `cellscope-train`), closes until the next run.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

import { CHART_HEIGHT, ChartDock } from './chartdock';
import { driftSummary, type DriftIndex, TrainModel } from './train';
import { escapeHtml as h } from './format';

export class TrainPanel extends ChartDock {
  readonly model = new TrainModel();
  private driftLine = document.createElement('div');
  private gradSeries = false;  // the chart was made with a grad-norm series
  private lastSession = '';
  drift: DriftIndex | null = null;

  constructor(onToggle: () => void) {
    super({ key: 'cellscope-train', title: 'Training', noun: 'training chart',
      closeTitle: 'Close the training chart (it opens again with the next run)', hostClass: 'train',
      chartClass: 'train-chart' }, onToggle);
    this.driftLine.className = 'train-drift hidden';
    this.host.insertBefore(this.driftLine, this.chartHost);
    this.sync();
  }

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

  setDrift(d: DriftIndex | null): void {
    this.drift = d;
    if (d) this.closed = false;
    this.schedule();
  }

  protected hasContent(): boolean { return this.model.steps.length > 0 || this.drift !== null; }

  protected render(_has: boolean, show: boolean): void {
    this.sum.textContent = this.model.steps.length ? this.model.summary() : 'no steps';
    this.sum.title = this.model.file ? `${this.model.cell ? this.model.cell + ' · ' : ''}${this.model.file}` : '';
    this.driftLine.classList.toggle('hidden', !this.drift);
    this.driftLine.innerHTML = this.drift
      ? `<b>Precision drift</b> ${h(driftSummary(this.drift))} <a href="#" class="show-drift">Colour nodes by drift</a>` : '';
    this.chartHost.classList.toggle('hidden', this.collapsed || this.model.steps.length === 0);
    if (show && !this.collapsed && this.model.steps.length) this.draw();
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
}
