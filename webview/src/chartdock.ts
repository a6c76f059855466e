// A dock under the graph holding one live uPlot chart: the training chart (trainpanel.ts) and the
// device chart (devicepanel.ts) are two of them. The dock owns what both share: the header line
// (fold, title, summary, close), collapsing (remembered in localStorage under the dock's key),
// closing until the next run, redrawing at most once a frame, resizing the chart with its host,
// and re-making the chart when the theme changes. A subclass says when it has something to show
// and renders its own lines and chart.
import type uPlot from 'uplot';

export const CHART_HEIGHT = 170;

/** The words of a dock: its storage key, title and the noun its buttons name ("training chart"). */
export interface DockText {
  key: string;
  title: string;
  noun: string;
  closeTitle: string;
  hostClass: string;
  chartClass: string;
}

function stored(key: string): string | null {
  try { return localStorage.getItem(key); } catch { return null; }
}

export abstract class ChartDock {
  readonly host = document.createElement('section');
  protected readonly head = document.createElement('div');
  protected readonly fold = document.createElement('button');
  protected readonly sum = document.createElement('span');
  protected readonly close = document.createElement('button');
  protected readonly chartHost = document.createElement('div');
  protected chart: uPlot | null = null;
  protected drawn = -1;  // the model version the chart shows
  protected collapsed: boolean;
  protected closed = false;
  private frame = 0;

  /** The subclass calls `sync()` at the end of its constructor (its own fields exist by then). */
  constructor(private readonly text: DockText, private readonly onToggle: () => void) {
    this.collapsed = stored(text.key) === 'collapsed';
    this.host.className = `${text.hostClass} hidden`;
    this.host.setAttribute('aria-label', text.title);
    this.head.className = 'train-head';
    this.fold.type = 'button';
    this.fold.className = 'btn icon train-fold';
    this.fold.addEventListener('click', () => this.setCollapsed(!this.collapsed));
    const title = document.createElement('span');
    title.className = 'train-title';
    title.textContent = text.title;
    this.sum.className = 'train-sum';
    this.sum.setAttribute('aria-live', 'off');
    this.close.type = 'button';
    this.close.className = 'btn icon train-close';
    this.close.textContent = '×';
    this.close.title = text.closeTitle;
    this.close.setAttribute('aria-label', `Close the ${text.noun}`);
    this.close.addEventListener('click', () => { this.closed = true; this.sync(); });
    this.head.append(this.fold, title, this.sum, this.close);
    this.chartHost.className = text.chartClass;
    this.host.append(this.head, this.chartHost);
    new ResizeObserver(() => this.resize()).observe(this.chartHost);
  }

  get open(): boolean { return !this.host.classList.contains('hidden'); }
  get isCollapsed(): boolean { return this.collapsed; }

  setCollapsed(c: boolean): void {
    this.collapsed = c;
    try { localStorage.setItem(this.text.key, c ? 'collapsed' : 'open'); } catch { /* private mode */ }
    this.sync();
  }

  /** Redraws at the next frame (messages arrive faster than frames). */
  protected schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.sync(); });
  }

  /** Draws now (tests; a snapshot's first paint). */
  flush(): void {
    if (this.frame) { cancelAnimationFrame(this.frame); this.frame = 0; }
    this.sync();
  }

  /** The theme changed: the chart is made again with its colours. */
  invalidate(): void {
    this.chart?.destroy();
    this.chart = null;
    this.drawn = -1;
    this.schedule();
  }

  /** The chart's canvas (the test hook: its pixels). */
  canvas(): HTMLCanvasElement | null { return this.chartHost.querySelector('canvas'); }

  /** Something to show (the dock is hidden otherwise). */
  protected abstract hasContent(): boolean;
  /** Fills the summary, the dock's own lines and the chart; `show`: the dock is visible. */
  protected abstract render(has: boolean, show: boolean): void;

  protected sync(): void {
    const has = this.hasContent();
    const show = has && !this.closed;
    const was = this.open;
    this.host.classList.toggle('hidden', !show);
    this.host.classList.toggle('collapsed', this.collapsed);
    this.fold.textContent = this.collapsed ? '▸' : '▾';
    this.fold.title = this.collapsed
      ? `Show the ${this.text.noun} (remembered)`
      : `Collapse the ${this.text.noun} to its summary line (remembered)`;
    this.fold.setAttribute('aria-expanded', String(!this.collapsed));
    this.fold.setAttribute('aria-label', `${this.collapsed ? 'Expand' : 'Collapse'} the ${this.text.noun}`);
    this.render(has, show);
    if (was !== this.open) this.onToggle();
  }

  private resize(): void {
    if (!this.chart || this.collapsed) return;
    const w = this.chartHost.clientWidth;
    if (w > 0 && Math.abs(w - this.chart.width) > 1) this.chart.setSize({ width: w, height: CHART_HEIGHT });
  }
}
