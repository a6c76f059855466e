// The device dock, beside the training dock: a deployed model's live telemetry (FPS, latency p50 /
// p99, RSS, power) against time, drawn with uPlot, and the device, model, precision, backend and
// quality figures as text. Opens when the first sample arrives, collapses to its header line
// (remembered, localStorage `cellscope-device`), closes until the next watch. Power the device
// cannot measure is a gap labelled "n/a", never a 0; when no sample measured it, the chart has
// no power series or axis but one line "power: n/a (no npu-smi, RAPL or hwmon reading on the device)". Where the
// deployment stopped, was rolled back or lost its agent, a dashed vertical mark with its word.
import uPlot from 'uplot';

import { CHART_HEIGHT, ChartDock } from './chartdock';
import { DeviceModel, fmtPower, POWER_NA_LINE } from './device';
import type { DeviceProgress } from './protocol';
import { escapeHtml as h } from './format';

export class DevicePanel extends ChartDock {
  readonly model = new DeviceModel();
  private factsLine = document.createElement('div');
  private powerLine = document.createElement('div');
  private powerLabel = '';  // the power series' label the chart was made with ('' : none)
  private lastSession = '';

  constructor(onToggle: () => void) {
    super({ key: 'cellscope-device', title: 'Device', noun: 'device chart',
      closeTitle: 'Close the device chart (it opens again with the next deployment)',
      hostClass: 'train device', chartClass: 'train-chart device-chart' }, onToggle);
    this.factsLine.className = 'device-facts';
    this.host.insertBefore(this.factsLine, this.chartHost);
    this.powerLine.className = 'device-power-na hidden';
    this.powerLine.textContent = POWER_NA_LINE;
    this.host.append(this.powerLine);
    this.sync();
  }

  /** A DeviceProgress arrived. */
  apply(p: DeviceProgress): boolean {
    const reset = this.model.apply(p);
    if (reset && this.model.session !== this.lastSession) this.closed = false;  // a new watch opens it again
    this.lastSession = this.model.session;
    this.schedule();
    return reset;
  }

  protected hasContent(): boolean { return this.model.samples.length > 0; }

  protected render(has: boolean, show: boolean): void {
    this.sum.textContent = this.model.summary();
    this.sum.title = this.model.file;
    this.factsLine.classList.toggle('hidden', this.collapsed || !has);
    this.factsLine.innerHTML = this.model.facts()
      .map(([k, v]) => `<span class="device-fact" data-fact="${h(k)}"><b>${h(k)}</b> ${h(v)}</span>`).join(' ');
    this.chartHost.classList.toggle('hidden', this.collapsed || !has);
    this.powerLine.classList.toggle('hidden', this.collapsed || !has || !this.model.powerNA());
    if (show && !this.collapsed && has) this.draw();
  }

  private colours(): { fps: string; p50: string; p99: string; rss: string; power: string; mark: string; axis: string; grid: string } {
    const cs = getComputedStyle(this.host);
    const v = (n: string, d: string): string => cs.getPropertyValue(n).trim() || d;
    return {
      fps: v('--cs-dev-fps', '#1a7f37'), p50: v('--cs-dev-lat', '#0969da'), p99: v('--cs-dev-lat', '#0969da'),
      rss: v('--cs-dev-rss', '#8250df'), power: v('--cs-dev-power', '#cf222e'), mark: v('--cs-dev-mark', '#9a6700'),
      axis: v('--cs-muted', '#666'), grid: v('--cs-train-grid', 'rgba(128,128,128,0.18)'),
    };
  }

  /** The power series' label; '' while no sample measured it (no series, no axis: a line says n/a). */
  private powerSeriesLabel(): string { return this.model.powerNA() ? '' : 'power W'; }

  private draw(): void {
    if (this.drawn === this.model.version && this.chart) return;
    const d = this.model.chartData();
    this.marks = d.marks;
    const label = this.powerSeriesLabel();
    const data: uPlot.AlignedData = label ? [d.x, d.fps, d.p50, d.p99, d.rss, d.power] : [d.x, d.fps, d.p50, d.p99, d.rss];
    if (this.chart && this.powerLabel !== label) { this.chart.destroy(); this.chart = null; }
    if (!this.chart) {
      this.powerLabel = label;
      this.chart = new uPlot(this.options(label), data, this.chartHost);
    } else {
      this.chart.setData(data);
    }
    this.drawn = this.model.version;
  }

  private marks: { x: number; label: string }[] = [];

  /** A mark's column in canvas pixels; one after the last sample sits at the plot's right edge. */
  private markPx(u: uPlot, x: number): number {
    const { left, width } = u.bbox;
    return Math.min(left + width, Math.max(left, Math.round(u.valToPos(x, 'x', true))));
  }

  /** The marks: a dashed vertical line at each one's time, its word at the top of the plot. */
  private drawMarks(u: uPlot): void {
    if (this.marks.length === 0) return;
    const ctx = u.ctx;
    const c = this.colours();
    const pr = devicePixelRatio || 1;
    ctx.save();
    ctx.strokeStyle = c.mark;
    ctx.fillStyle = c.mark;
    ctx.lineWidth = 1.5 * pr;
    ctx.setLineDash([4 * pr, 3 * pr]);
    ctx.font = `${Math.round(10 * pr)}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    const { left, top, height } = u.bbox;
    for (const m of this.marks) {
      const x = this.markPx(u, m.x);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      const w = ctx.measureText(m.label).width;
      ctx.fillText(m.label, x - w - 3 * pr >= left ? x - w - 3 * pr : x + 3 * pr, top + 2 * pr);
    }
    ctx.restore();
  }

  private options(powerLabel: string): uPlot.Options {
    const c = this.colours();
    const axis = (scale: string, side: number, stroke: string, label: string): uPlot.Axis => ({
      scale, side, stroke, label, labelSize: 16, size: side === 1 ? 52 : 48, labelFont: '11px system-ui, sans-serif', font: '10px system-ui, sans-serif',
      grid: { show: scale === 'fps', stroke: c.grid, width: 1 }, ticks: { stroke: c.grid, width: 1 },
      values: (_u, vals) => vals.map((v) => (v === null ? '' : String(+v.toPrecision(4)))),
    });
    // A gap where a value is missing (spanGaps false): power "n/a", latency without inferences.
    const line = (label: string, scale: string, stroke: string, extra: Partial<uPlot.Series> = {}): uPlot.Series => ({
      label, scale, stroke, width: 1.5, spanGaps: false, points: { show: false }, ...extra,
    });
    const series: uPlot.Series[] = [
      { label: 't (s)' },
      line('FPS', 'fps', c.fps),
      line('p50 ms', 'ms', c.p50),
      line('p99 ms', 'ms', c.p99, { dash: [6, 3], width: 1.25 }),
      line('RSS MB', 'mb', c.rss, { width: 1.25 }),
    ];
    const axes: uPlot.Axis[] = [
      { stroke: c.axis, grid: { stroke: c.grid, width: 1 }, ticks: { stroke: c.grid, width: 1 }, font: '10px system-ui, sans-serif', size: 28 },
      axis('fps', 3, c.fps, 'FPS'),
      axis('ms', 1, c.p50, 'latency ms'),
      axis('mb', 1, c.rss, 'RSS MB'),
    ];
    if (powerLabel) {
      // At the cursor: the point's power, "n/a" where it was not measured ("--" with no point).
      series.push(line(powerLabel, 'w', c.power, { width: 1.25, value: (_u, v, _s, idx) => (idx === null ? '--' : fmtPower(v ?? undefined)) }));
      axes.push(axis('w', 1, c.power, powerLabel));
    }
    return {
      width: Math.max(200, this.chartHost.clientWidth || 600), height: CHART_HEIGHT,
      scales: { x: { time: false }, fps: { auto: true }, ms: { auto: true }, mb: { auto: true }, w: { auto: true } },
      series, axes, legend: { show: true, live: true }, cursor: { drag: { x: true, y: false } },
      hooks: { draw: [(u) => this.drawMarks(u)] },
    };
  }

  /** What the panel shows (the test hook): the chart's series and data as uPlot holds them, the
   * text figures, the power's label in the legend. */
  state(): { open: boolean; collapsed: boolean; messages: number; points: number; summary: string;
    facts: Record<string, string>; series: string[]; axes: string[]; data: (number | null)[][]; legend: string;
    marks: { x: number; label: string; px: number }[]; powerLine: string; width: number; height: number } {
    const u = this.chart;
    const facts: Record<string, string> = {};
    for (const [k, v] of this.model.facts()) facts[k] = v;
    return {
      open: this.open, collapsed: this.collapsed, messages: this.model.messages, points: this.model.samples.length,
      summary: this.sum.textContent ?? '', facts,
      series: u ? u.series.map((s) => String(s.label ?? '')) : [],
      axes: u ? u.axes.map((a) => String(a.label ?? '')) : [],
      // px: the mark's column in the canvas's pixels (where drawMarks drew it).
      marks: u ? this.marks.map((m) => ({ ...m, px: this.markPx(u, m.x) })) : [],
      powerLine: this.powerLine.classList.contains('hidden') ? '' : this.powerLine.textContent ?? '',
      data: u ? u.data.map((col) => Array.from(col as ArrayLike<number | null>)) : [],
      legend: this.chartHost.querySelector('.u-legend')?.textContent ?? '',
      width: u?.width ?? 0, height: u?.height ?? 0,
    };
  }
}
