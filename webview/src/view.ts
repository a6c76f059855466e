// One graph canvas: hierarchical layout (through the layout engine), 2D-canvas rendering with
// viewport culling and level of detail, pan/zoom, hit testing and selection.
import { attachDragPan } from './dragpan';
import {
  ROOT_ID, ancestors, defaultExpansion, visibleRep, type VEdge, type ViewGraph,
} from './model';
import {
  aggregateEdges, composeScene, computePorts, type AggEdge, type Ports, type DrawEdge, type DrawItem, type LayoutEngine, type Scene,
} from './layout';
import { GROUP_PAD_TOP, type Direction } from './layout-types';
import {
  fitAround, jumpCamera, keepCentre, overlayInsets, panToShow, sceneOnScreen, type Camera, type FitInput, type Insets,
} from './fit';
import { groupHeader, headerFont, headerLayout, type HeaderLayout } from './groups';
import {
  computeScale, groupScaleFor, groupSums, metricDef, opCategory, rampColor, rampTextColor, type MetricId, type MetricScale,
} from './metrics';
import { isFirstBelow, type DriftIndex } from './train';
import type { GraphDiff } from './diff';
import { LABEL_FONT, LABEL_LINE, LABEL_MIN_SCALE, LABEL_PAD, headerBand, placeEdgeLabels, type Box, type LabelPlace } from './labels';
import { accessibleName, groupTip, hardwareLine, nodeTip, vocabOf } from './vocab';
import { GHOST_PREFIX } from './model';
import { SPLIT_H, STAGE_PALETTE, commMarker, commOf, deviceEdgeLabel, frameSplit, onRank, shardingOf, stageColor, stageOf } from './parallel';
import type { ParallelSummary } from './protocol';

export interface Theme {
  bg: string; fg: string; muted: string; node: string; nodeBorder: string; edge: string; edgeLabel: string;
  frame: string; frameBorder: string; frameHeader: string; accent: string; highlight: string;
  added: string; changed: string; fused: string; move: string; grid: string; mapped: string;
  debug: string; debugFg: string;
  danger: string; dangerFg: string;  // failed calls (Cell.failures): border, glyph and its mark
  shard: string; comm: string;  // sharded nodes' dashed frame, communication nodes (parallel.ts)
  stages: string[];  // pipeline stage colours (colour-blind-safe, parallel.ts STAGE_PALETTE)
  line: number;  // line-width factor: 1, more in the high-contrast themes
  cat: Record<string, string>;
}

export function readTheme(el: HTMLElement): Theme {
  const cs = getComputedStyle(el);
  const v = (name: string, fb: string): string => cs.getPropertyValue(name).trim() || fb;
  return {
    bg: v('--cs-canvas', '#ffffff'), fg: v('--cs-fg', '#1f2328'), muted: v('--cs-muted', '#6e7781'),
    node: v('--cs-node', '#ffffff'), nodeBorder: v('--cs-node-border', '#8c959f'), edge: v('--cs-edge', '#8c959f'),
    edgeLabel: v('--cs-edge-label', '#57606a'), frame: v('--cs-frame', 'rgba(84,174,255,0.06)'),
    frameBorder: v('--cs-frame-border', 'rgba(84,174,255,0.45)'), frameHeader: v('--cs-frame-header', '#0969da'),
    accent: v('--cs-accent', '#0969da'), highlight: v('--cs-highlight', '#d4a72c'), added: v('--cs-added', '#1a7f37'),
    changed: v('--cs-changed', '#bc4c00'), fused: v('--cs-fused', '#8250df'), move: v('--cs-move', '#d4a72c'),
    grid: v('--cs-grid', 'rgba(128,128,128,0.08)'), mapped: v('--cs-mapped', '#d63384'),
    debug: v('--cs-debug', '#d4380d'), debugFg: v('--cs-debug-fg', '#ffffff'),
    danger: v('--cs-danger', '#cf222e'), dangerFg: v('--cs-danger-fg', '#ffffff'),
    shard: v('--cs-shard', '#d1242f'), comm: v('--cs-comm', '#a0218c'),
    stages: STAGE_PALETTE.map((c, i) => v(`--cs-stage-${i}`, c)),
    line: Math.min(3, Math.max(1, Number.parseFloat(v('--cs-line', '1')) || 1)),
    cat: {
      input: v('--cs-cat-input', '#57606a'), const: v('--cs-cat-const', '#8c959f'), move: v('--cs-cat-move', '#d4a72c'),
      compute: v('--cs-cat-compute', '#0969da'), norm: v('--cs-cat-norm', '#1a7f37'), act: v('--cs-cat-act', '#cf222e'),
      pool: v('--cs-cat-pool', '#8250df'), shape: v('--cs-cat-shape', '#bf8700'), dropout: v('--cs-cat-dropout', '#6e7781'),
      elem: v('--cs-cat-elem', '#1b7c83'),
    },
  };
}

export interface ViewCallbacks {
  onSelect(id: string | null, from: 'click' | 'key' | 'api'): void;
  onLayout(): void;
  onHover?(id: string | null): void;
  /** Before each layout: the groups about to be drawn expanded (lazy Cells load their nodes). */
  onExpand?(expanded: ReadonlySet<string>): void;
}

/** A tooltip shows after the pointer rests this long on a node (a failed call's at once). */
export const TIP_DELAY_MS = 280;
let tipIds = 0;

export class GraphView {
  readonly canvas: HTMLCanvasElement;
  private ctx: CanvasRenderingContext2D;
  graph: ViewGraph | null = null;
  private agg = new Map<string, Map<string, AggEdge>>();
  private ports = new Map<string, Ports>();
  expanded = new Set<string>();
  scene: Scene | null = null;
  scale = 1;
  tx = 0;
  ty = 0;
  selection: string | null = null;
  highlight = new Set<string>();
  /** A multi-selection (the search's "select all matches"): outlined as selected. */
  multi = new Set<string>();
  secondary = new Set<string>();  // buffer mates, mapped nodes
  diff: GraphDiff | null = null;
  metric: MetricId = 'none';
  private mscale: MetricScale | null = null;
  private gsums = new Map<string, number>();
  // Collapsed groups' Σ on a scale of their own (metrics.ts groupScale), for the groups of `gscaleOf`.
  private gscale: MetricScale | null = null;
  private gscaleOf: Scene | null = null;
  // The edge labels of the scene (labels.ts), placed the first time they are drawn.
  private labels: LabelPlace[] | null = null;
  private labelsOf: Scene | null = null;
  private tipTimer = 0;
  private pendingTip: (() => void) | null = null;
  private pointer: [number, number] = [0, 0];
  /** Announces the node selected from the keyboard (a polite live region). */
  readonly live: HTMLDivElement;
  theme: Theme;
  lastPaintMs = 0;
  lastRenderAt = 0;
  private dirty = false;
  private fitted = false;
  private busy: Promise<void> = Promise.resolve();
  private dpr = 1;
  private cssW = 0;
  private cssH = 0;
  frames = 0;
  /** The drawn nodes the debugger is paused on (DebugFocus; outlined with a "paused" badge). */
  debugNodes = new Set<string>();
  /** The device picker's rank (null: global shapes) and the program's parallel configuration. */
  device: number | null = null;
  parallel: ParallelSummary | undefined = undefined;
  layoutError: string | null = null;
  /** The node under the pointer; a failed call's message shows in `tip`. */
  hovered: string | null = null;
  readonly tip: HTMLDivElement;
  /** The layout's main axis (the layout worker gets it; edges and ports follow). */
  direction: Direction = 'DOWN';
  // The scene the camera was fitted to while the user has not moved it since (null: moved): a
  // resize, or an overlay (legend, overview) changing size, fits it again.
  private fittedScene: Scene | null = null;
  private fitMax = 1;
  private refitNext = false;  // the next scene is fitted (another layer, the camera untouched since Fit)
  private overlayObserver: ResizeObserver;
  private paintListeners: (() => void)[] = [];
  private sceneListeners: (() => void)[] = [];

  constructor(private host: HTMLElement, private engine: LayoutEngine, private cb: ViewCallbacks) {
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'graph-canvas';
    this.canvas.tabIndex = 0;
    host.appendChild(this.canvas);
    this.tip = document.createElement('div');
    this.tip.className = 'node-tip hidden';
    this.tip.setAttribute('role', 'tooltip');
    this.tip.id = `node-tip-${++tipIds}`;
    host.appendChild(this.tip);
    this.live = document.createElement('div');
    this.live.className = 'sr-only';
    this.live.setAttribute('aria-live', 'polite');
    host.appendChild(this.live);
    // The canvas is one widget: its name says what it shows and how to move in it; the node
    // selected (or hovered) is its description, and keyboard selections are announced.
    this.canvas.setAttribute('role', 'application');
    this.canvas.setAttribute('aria-roledescription', 'graph');
    this.canvas.setAttribute('aria-label', 'Graph');
    const ctx = this.canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('2D canvas unavailable');
    this.ctx = ctx;
    this.theme = readTheme(host);
    new ResizeObserver(() => this.resize()).observe(host);
    this.overlayObserver = new ResizeObserver(() => this.overlaysChanged());
    this.resize();
    this.bindInput();
  }

  // ---- model -------------------------------------------------------------------------------

  /**
   * Shows a new graph. Expanded groups that still exist stay expanded; the camera stays, unless
   * `refit` (another layer) and it is still as Fit left it, or it was fitted to the graph before:
   * then the new drawing is fitted; or what an edit added or changed (`changed`) would be out of
   * view: then it moves the least that shows it (showChanged).
   */
  async setGraph(g: ViewGraph, opts: { reset?: boolean; focus?: string; refit?: boolean; changed?: readonly string[] } = {}): Promise<void> {
    const prev = this.graph;
    const wasFitted = !!prev && !opts.reset && this.scene !== null && this.fittedScene === this.scene;
    this.graph = g;
    this.hoverAt(null);
    this.agg = aggregateEdges(g);
    this.ports = computePorts(g, this.agg);
    if (!prev || opts.reset) {
      this.expanded = defaultExpansion(g);
      this.fitted = false;
    } else {
      const keep = new Set<string>();
      for (const id of this.expanded) if (g.groups.has(id)) keep.add(id);
      // New groups (an edit added a Cell): open them when their parent is open and they are small.
      for (const grp of g.groups.values()) {
        if (!prev.groups.has(grp.id) && grp.parent && (grp.parent === ROOT_ID || keep.has(grp.parent)) && grp.leafCount <= 60 &&
            g.byId.get(grp.children[0] ?? '')?.kind !== 'lazy') keep.add(grp.id);  // not loaded: opens when asked
      }
      this.expanded = keep;
    }
    if (this.selection && !g.byId.has(this.selection)) this.selection = null;
    this.mscale = null;
    if (opts.refit && this.fitted && this.scene && this.fittedScene === this.scene) this.refitNext = true;
    this.describe();
    await this.relayout();
    if (this.graph !== g) return;
    // A fitted view is fitted again (Fit keeps clear of the overlays its own way: fitAround); only
    // a camera the user placed is moved to show what the edit changed.
    if (wasFitted) this.applyFit(this.fitMax);
    else if (opts.changed?.length) this.showChanged(opts.changed);
    if (opts.focus) this.reveal(opts.focus);
  }

  /**
   * Brings the drawn items of these nodes (a collapsed group for a node inside one) into view,
   * clear of the overlays, with the least change of the camera (fit.ts panToShow: a pan, or as
   * little zoom out as needed). Whether the camera moved.
   */
  showChanged(ids: Iterable<string>): boolean {
    const g = this.graph, s = this.scene;
    if (!g || !s) return false;
    let box: Box | null = null;
    for (const id of ids) {
      if (!g.byId.has(id)) continue;
      const it = s.byId.get(visibleRep(g, id, this.expanded));
      if (!it) continue;
      if (!box) { box = { x: it.x, y: it.y, w: it.w, h: it.h }; continue; }
      const x1 = Math.max(box.x + box.w, it.x + it.w), y1 = Math.max(box.y + box.h, it.y + it.h);
      box.x = Math.min(box.x, it.x);
      box.y = Math.min(box.y, it.y);
      box.w = x1 - box.x;
      box.h = y1 - box.y;
    }
    if (!box) return false;
    const c = panToShow(this.camera(), box, this.cssW, this.cssH, this.insets());
    if (!c) return false;
    this.setCamera(c);
    return true;
  }

  setMetric(m: MetricId): void {
    this.metric = m;
    this.mscale = null;
    this.gscale = null;
    this.invalidate();
  }

  /** The precision drift (train.ts) the "drift" metric colours by and the first layer under its threshold. */
  drift: DriftIndex | null = null;

  setDrift(d: DriftIndex | null): void {
    this.drift = d;
    this.mscale = null;
    this.gscale = null;
    this.invalidate();
  }

  /** The drawn items that are (made from) the first node under the drift threshold, with the drift metric shown. */
  driftFirstItems(): string[] {
    const g = this.graph, d = this.drift, s = this.scene;
    if (!g || !d || !d.firstBelow || this.metric !== 'drift' || !s) return [];
    const out = new Set<string>();
    for (const n of g.nodes) if (isFirstBelow(n, d)) out.add(visibleRep(g, n.id, this.expanded));
    return [...out].filter((id) => s.byId.has(id));
  }

  private ensureScale(): MetricScale | null {
    if (!this.graph) return null;
    if (!this.mscale || this.mscale.metric !== this.metric) {
      this.mscale = computeScale(this.graph, this.metric, this.drift);
      this.gsums = groupSums(this.graph, this.mscale);
      this.gscale = null;
    }
    return this.mscale;
  }

  metricScale(): MetricScale | null { return this.ensureScale(); }

  /** The collapsed groups' scale for the scene drawn (null without a metric or a scene). */
  groupMetricScale(): MetricScale | null {
    const ms = this.ensureScale();
    const s = this.scene;
    if (!ms || !s || this.metric === 'none') return null;
    if (!this.gscale || this.gscaleOf !== s || this.gscale.metric !== this.metric) {
      const drawn: string[] = [];
      for (const it of s.items) if (it.type === 'group') drawn.push(it.id);
      this.gscale = groupScaleFor(ms, this.gsums, drawn);
      this.gscaleOf = s;
    }
    return this.gscale;
  }

  /** Whether any collapsed group is drawn (the legend then shows the groups' own scale). */
  hasCollapsedGroups(): boolean { return (this.scene?.groupsDrawn ?? 0) > 0; }

  /** A group's Σ of the metric shown (0 when none). */
  groupSum(id: string): number { this.ensureScale(); return this.gsums.get(id) ?? 0; }

  /** The edge labels of the scene shown, placed (once per scene) clear of nodes, headers and each other. */
  edgeLabels(): LabelPlace[] {
    const s = this.scene;
    if (!s) return [];
    if (this.labelsOf !== s || !this.labels) {
      const ctx = this.ctx;
      ctx.save();
      ctx.font = LABEL_FONT;
      const widths = new Map<string, number>();
      const headers = new Map<DrawItem, Box>();
      for (const it of s.items) if (it.type === 'frame') headers.set(it, this.headerLayoutOf(it).chip);
      ctx.font = LABEL_FONT;
      this.labels = placeEdgeLabels(s, (t) => {
        let w = widths.get(t);
        if (w === undefined) { w = ctx.measureText(t).width; widths.set(t, w); }
        return w;
      }, (f) => headers.get(f as DrawItem) ?? headerBand(f));
      ctx.restore();
      this.labelsOf = s;
    }
    return this.labels;
  }

  /** The headers of the expanded groups drawn (their text's chip, world units at full text size), which edge labels keep clear of. */
  headerBoxes(): { id: string; box: Box }[] {
    return (this.scene?.items ?? []).filter((it) => it.type === 'frame').map((it) => ({ id: it.id, box: this.headerLayoutOf(it).chip }));
  }

  relayout(): Promise<void> {
    if (this.graph) this.cb.onExpand?.(this.expanded);
    const run = async (): Promise<void> => {
      const g = this.graph;
      if (!g) return;
      const expanded = new Set(this.expanded);
      let keys: Awaited<ReturnType<LayoutEngine['ensure']>>;
      try {
        keys = await this.engine.ensure(g, expanded, this.agg, this.ports, this.direction);
      } catch (e) {
        // Keep the previous drawing; the error is reported once per failed layout.
        console.error('cellscope: layout failed:', e);
        this.layoutError = String(e);
        return;
      }
      this.layoutError = null;
      if (this.graph !== g) return;
      const rank = this.device;
      const label = rank === null ? undefined : (e: VEdge, two: boolean): string[] => deviceEdgeLabel(g, e, rank, two);
      this.scene = composeScene(g, expanded, keys, this.engine.cache, this.agg, this.direction, label);
      for (const f of this.sceneListeners) f();
      if (!this.fitted && this.scene.width > 0) { this.fitInitial(); this.fitted = true; }
      else if (this.refitNext && this.scene.width > 0) this.applyFit(this.fitMax);
      this.refitNext = false;
      this.paintNow();
      this.cb.onLayout();
    };
    this.busy = this.busy.then(run, run);
    return this.busy;
  }

  idle(): Promise<void> { return this.busy; }

  /**
   * Shows the shapes one device holds (rank `rank`), or the global ones (null): the edge labels are
   * placed again; nodes of another pipeline stage than the rank's are faded.
   */
  setDevice(rank: number | null, parallel: ParallelSummary | undefined): Promise<void> {
    const same = rank === this.device && parallel === this.parallel;
    this.device = rank;
    this.parallel = parallel;
    if (same) return this.busy;
    return this.relayout();
  }

  /** Lays the graph out along another axis and fits it again. */
  setDirection(d: Direction): Promise<void> {
    if (d === this.direction) return this.busy;
    this.direction = d;
    this.fitted = false;
    return this.relayout();
  }

  /** Called after every paint (the overview follows the camera and the scene). */
  onPaint(f: () => void): void { this.paintListeners.push(f); }
  /** Called when a new scene is composed, before the first fit (overlays size themselves). */
  onScene(f: () => void): void { this.sceneListeners.push(f); }

  toggleGroup(id: string): Promise<void> {
    if (this.expanded.has(id)) {
      // Collapse the group and everything inside it.
      for (const e of [...this.expanded]) if (e === id || this.isInside(e, id)) this.expanded.delete(e);
    } else {
      this.expanded.add(id);
    }
    return this.relayout();
  }

  private isInside(id: string, groupId: string): boolean {
    let p = this.graph?.parentOf.get(id);
    while (p !== undefined) { if (p === groupId) return true; p = this.graph?.parentOf.get(p); }
    return false;
  }

  expandAll(): Promise<void> {
    if (!this.graph) return Promise.resolve();
    for (const id of this.graph.groups.keys()) if (id !== ROOT_ID) this.expanded.add(id);
    return this.relayout();
  }

  collapseAll(): Promise<void> {
    this.expanded.clear();
    return this.relayout();
  }

  /** Expands the ancestors of `id`, then centres it. */
  async reveal(id: string, center = true): Promise<void> {
    const g = this.graph;
    if (!g || (!g.byId.has(id) && !g.groups.has(id))) return;
    let changed = false;
    for (const a of ancestors(g, id)) if (a !== ROOT_ID && !this.expanded.has(a)) { this.expanded.add(a); changed = true; }
    if (changed) await this.relayout();
    if (center) this.centerOn(id);
  }

  select(id: string | null, from: 'click' | 'key' | 'api' = 'api'): void {
    this.selection = id;
    this.invalidate();
    this.describe();
    if (from === 'key') this.live.textContent = id ? this.accessibleNameOf(id) : 'Selection cleared';
    this.cb.onSelect(id, from);
  }

  /** A drawn item's accessible name: a node's (vocab.ts), or a group's header. */
  accessibleNameOf(id: string): string {
    const g = this.graph;
    if (!g) return id;
    const n = g.byId.get(id);
    if (n) return accessibleName(g.vocab, n, g.layer);
    const grp = g.groups.get(id);
    if (!grp) return id;
    const hd = groupHeader(grp);
    return `Group ${hd.path}, ${hd.rest}, ${this.expanded.has(id) ? 'expanded' : 'collapsed'}`;
  }

  /** The canvas's name (the Cell, layer, size and keys) and description (the selection). */
  private describe(): void {
    const g = this.graph;
    const c = this.canvas;
    if (!g) { c.setAttribute('aria-label', 'Graph'); return; }
    const layer = g.layer === 'optimized' ? 'optimization' : g.layer;
    c.setAttribute('aria-label', `Graph of ${g.cell}, ${layer} layer, ${g.nodes.length} nodes. ` +
      'Arrow keys move along the edges, Enter centres the selection, Escape clears it, plus and minus zoom, 0 fits.');
    const id = this.selection ?? this.hovered;
    if (id) c.setAttribute('aria-description', this.accessibleNameOf(id));
    else c.removeAttribute('aria-description');
  }

  // ---- camera ------------------------------------------------------------------------------

  /**
   * The pane changed size (a split, the side panel, the editor's pane un-maximised): the canvas
   * follows and is repainted at once. A camera still fitted to this scene is fitted again; else
   * what was in the middle stays there (the graph never ends up outside a shrunken pane).
   */
  private resize(): void {
    const r = this.host.getBoundingClientRect();
    const w0 = this.cssW, h0 = this.cssH;
    this.dpr = window.devicePixelRatio || 1;
    this.cssW = Math.max(1, Math.floor(r.width));
    this.cssH = Math.max(1, Math.floor(r.height));
    this.canvas.width = Math.floor(this.cssW * this.dpr);
    this.canvas.height = Math.floor(this.cssH * this.dpr);
    this.canvas.style.width = this.cssW + 'px';
    this.canvas.style.height = this.cssH + 'px';
    const s = this.scene;
    if (s && s.width > 0 && (w0 !== this.cssW || h0 !== this.cssH)) {
      if (this.fittedScene === s) this.applyFit(this.fitMax);
      else if (w0 > 1 && h0 > 1) {
        // (from 1×1, a hidden pane shown again: the camera was set for this size)
        const c = keepCentre(this.camera(), w0, h0, this.cssW, this.cssH);
        this.tx = c.tx;
        this.ty = c.ty;
        if (!sceneOnScreen(this.camera(), s.width, s.height, this.cssW, this.cssH)) this.applyFit(this.fitMax);
      }
    }
    this.paintNow();
  }

  /** The pane's size (CSS px). */
  paneSize(): { w: number; h: number } { return { w: this.cssW, h: this.cssH }; }

  camera(): Camera { return { scale: this.scale, tx: this.tx, ty: this.ty }; }

  /** Moves the camera (the overview's click and drag). */
  setCamera(c: Camera): void {
    this.scale = c.scale;
    this.tx = c.tx;
    this.ty = c.ty;
    this.fittedScene = null;
    this.invalidate();
  }

  /** Fit: the whole graph, or its start at a readable zoom (fit.ts); overlays are kept clear. */
  fit(): void { this.applyFit(this.fitted ? 1.5 : 1); }

  /** First view: as Fit, never magnified. */
  private fitInitial(): void { this.applyFit(1); }

  private applyFit(maxScale: number): void {
    const s = this.scene;
    if (!s || s.width <= 0) return;
    const { boxes, pane } = this.overlayBoxes();
    const cam = fitAround({ ...this.fitInput(), maxScale, startCross: this.crossOf('start') }, pane, boxes);
    this.scale = cam.scale;
    this.tx = cam.tx;
    this.ty = cam.ty;
    this.fittedScene = s;
    this.fitMax = maxScale;
    this.invalidate();
  }

  /** Moves (zoom kept) to the graph's start or end along the layout's axis, clear of the overlays. */
  jump(where: 'start' | 'end'): void {
    const s = this.scene;
    if (!s || s.width <= 0) return;
    this.setCamera(jumpCamera(this.camera(), where, { ...this.fitInput(), crossAt: this.crossOf(where) }));
  }

  private fitInput(): FitInput {
    const s = this.scene!;
    return { sceneW: s.width, sceneH: s.height, paneW: this.cssW, paneH: this.cssH, insets: this.insets(), dir: this.direction };
  }

  /** Across the main axis (world): the centre of the first (last) item drawn along it. */
  private crossOf(where: 'start' | 'end'): number | undefined {
    const s = this.scene;
    if (!s) return undefined;
    const right = this.direction === 'RIGHT';
    let best: DrawItem | null = null, bestV = 0;
    for (const it of s.items) {
      if (it.type === 'frame') continue;
      const v = right ? (where === 'start' ? -it.x : it.x + it.w) : (where === 'start' ? -it.y : it.y + it.h);
      if (!best || v > bestV) { best = it; bestV = v; }
    }
    if (!best) return undefined;
    return right ? best.y + best.h / 2 : best.x + best.w / 2;
  }

  /** What the pane's overlays (legend, title, notes, overview) cover, as insets; they are watched. */
  insets(): Insets {
    const { boxes, pane } = this.overlayBoxes();
    return overlayInsets(pane, boxes);
  }

  /** The boxes of the pane's overlays (client px), watched for size changes, and the pane's. */
  private overlayBoxes(): { boxes: DOMRect[]; pane: DOMRect } {
    const boxes: DOMRect[] = [];
    for (const el of this.host.querySelectorAll<HTMLElement>(':scope > .legend, :scope > .pane-title, :scope > .pane-note, :scope > .minimap')) {
      this.overlayObserver.observe(el);
      boxes.push(el.getBoundingClientRect());
    }
    return { boxes, pane: this.host.getBoundingClientRect() };
  }

  private overlaysChanged(): void {
    if (this.scene && this.fittedScene === this.scene) this.applyFit(this.fitMax);
  }

  /** An overlay moved without changing size (the legend docked elsewhere): a fitted view is fitted again. */
  overlaysMoved(): void { this.overlaysChanged(); }

  zoomAt(f: number, sx: number, sy: number): void {
    const ns = Math.min(4, Math.max(0.01, this.scale * f));
    const k = ns / this.scale;
    this.tx = sx - (sx - this.tx) * k;
    this.ty = sy - (sy - this.ty) * k;
    this.scale = ns;
    this.fittedScene = null;
    this.invalidate();
  }

  zoom(f: number): void { this.zoomAt(f, this.cssW / 2, this.cssH / 2); }

  pan(dx: number, dy: number): void { this.tx += dx; this.ty += dy; this.fittedScene = null; this.invalidate(); }

  centerOn(id: string): void {
    const it = this.scene?.byId.get(id);
    if (!it) return;
    this.fittedScene = null;
    if (this.scale < 0.6) this.scale = 0.9;
    this.tx = this.cssW / 2 - (it.x + it.w / 2) * this.scale;
    this.ty = this.cssH / 2 - (it.y + it.h / 2) * this.scale;
    this.invalidate();
  }

  /** Centre of an item in client (page viewport) coordinates, or null when not drawn/on screen. */
  screenPosition(id: string): { x: number; y: number; visible: boolean } | null {
    const it = this.scene?.byId.get(id);
    if (!it) return null;
    const r = this.canvas.getBoundingClientRect();
    const cx = it.type === 'frame' ? it.x + 40 : it.x + it.w / 2;
    const cy = it.type === 'frame' ? it.y + 14 : it.y + it.h / 2;
    const x = r.left + cx * this.scale + this.tx, y = r.top + cy * this.scale + this.ty;
    return { x, y, visible: x >= r.left && x <= r.right && y >= r.top && y <= r.bottom };
  }

  // ---- input -------------------------------------------------------------------------------

  private bindInput(): void {
    const c = this.canvas;
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      this.hoverAt(null);
      const r = c.getBoundingClientRect();
      if (!e.shiftKey && Math.abs(e.deltaY) >= Math.abs(e.deltaX)) {
        const f = Math.exp(-e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0018));
        this.zoomAt(f, e.clientX - r.left, e.clientY - r.top);
      } else {
        this.pan(-e.deltaX, -e.deltaY);
      }
    }, { passive: false });
    c.addEventListener('pointerleave', () => this.hoverAt(null));
    attachDragPan(c, {
      hover: (x, y) => this.hoverAt(x, y),
      dragStart: () => this.hoverAt(null),
      pan: (dx, dy) => this.pan(dx, dy),
      click: (x, y) => {
        const r = c.getBoundingClientRect();
        this.clickAt(x - r.left, y - r.top);
      },
    });
  }

  /**
   * The pointer at client (x, y), or gone (null). Hovering a node shows its tooltip (nodeTip: what
   * it is, its tensors, and in the hardware layer its kernels with the sentences behind its text);
   * a failed call's message at once, anything else after a short rest; a collapsed group its Σ.
   */
  hoverAt(cx: number | null, cy = 0): void {
    let it: DrawItem | null = null;
    const r = this.canvas.getBoundingClientRect();
    if (cx !== null) { it = this.hitTest(cx - r.left, cy - r.top); this.pointer = [cx, cy]; }
    const g = this.graph;
    const tipFor = it && it.type !== 'frame' ? it.id : null;
    if (tipFor !== this.tip.dataset.for || cx === null) {
      window.clearTimeout(this.tipTimer);
      this.pendingTip = null;
      this.hideTip();
      if (tipFor && g && it && cx !== null) {
        const lines = it.node ? nodeTip(g.vocab, it.node, g.layer) : this.groupTipLines(it);
        // Shown where the pointer rests by then.
        const show = (): void => { this.pendingTip = null; this.showTip(tipFor, lines, !!it?.node?.failure, this.pointer[0], this.pointer[1]); };
        if (it.node?.failure) show();
        else { this.pendingTip = show; this.tipTimer = window.setTimeout(show, TIP_DELAY_MS); }
      }
    } else if (tipFor && !this.tip.classList.contains('hidden')) {
      this.moveTip(cx, cy);
    }
    const id = it?.type === 'node' ? it.id : null;
    if (id !== this.hovered) {
      this.hovered = id;
      this.describe();
      this.cb.onHover?.(id);
    }
  }

  /** The tooltip of a drawn item, as hovering its centre shows it (at once); '' for none. null: the pointer leaves. */
  hoverItem(id: string | null): string {
    if (id === null) { this.hoverAt(null); return ''; }
    const p = this.screenPosition(id);
    if (!p) return '';
    this.hoverAt(p.x, p.y);
    this.pendingTip?.();
    return this.tip.classList.contains('hidden') ? '' : this.tip.innerText;
  }

  /** The fill colour a drawn item has (a node's or collapsed group's), or null. */
  colourOf(id: string): string | null {
    const it = this.scene?.byId.get(id);
    if (!it || it.type === 'frame') return null;
    const ms = this.ensureScale();
    return this.fillFor(it, this.metric !== 'none' && ms !== null && ms.max > 0, ms).fill;
  }

  private groupTipLines(it: DrawItem): string[] {
    const grp = it.group!;
    const hd = groupHeader(grp);
    const sum = this.metric !== 'none' ? this.groupSum(grp.id) : 0;
    return groupTip(hd.path, hd.rest, grp.leafCount, sum > 0 ? metricDef(this.metric).format(sum) : undefined);
  }

  private showTip(id: string, lines: string[], failure: boolean, cx: number, cy: number): void {
    const t = this.tip;
    t.dataset.for = id;
    t.classList.toggle('failed', failure);
    t.textContent = '';
    lines.forEach((l, i) => {
      const d = document.createElement('div');
      d.textContent = l;
      if (i === 0) d.className = 'tt';
      t.appendChild(d);
    });
    t.classList.remove('hidden');
    this.canvas.setAttribute('aria-describedby', t.id);
    this.moveTip(cx, cy);
  }

  private hideTip(): void {
    delete this.tip.dataset.for;
    if (!this.tip.classList.contains('hidden')) this.tip.classList.add('hidden');
    this.canvas.removeAttribute('aria-describedby');
  }

  private moveTip(cx: number, cy: number): void {
    const hr = this.host.getBoundingClientRect();
    const w = this.tip.offsetWidth, h = this.tip.offsetHeight;
    let x = cx - hr.left + 14, y = cy - hr.top + 16;
    if (x + w > hr.width - 4) x = Math.max(4, hr.width - 4 - w);
    if (y + h > hr.height - 4) y = Math.max(4, cy - hr.top - 12 - h);
    this.tip.style.left = `${x}px`;
    this.tip.style.top = `${y}px`;
  }

  hitTest(sx: number, sy: number): DrawItem | null {
    const s = this.scene;
    if (!s) return null;
    const x = (sx - this.tx) / this.scale, y = (sy - this.ty) / this.scale;
    for (let i = s.items.length - 1; i >= 0; i--) {
      const it = s.items[i];
      if (x < it.x || y < it.y || x > it.x + it.w || y > it.y + it.h) continue;
      if (it.type === 'frame' && y > it.y + GROUP_PAD_TOP) continue;
      return it;
    }
    return null;
  }

  private clickAt(sx: number, sy: number): void {
    this.canvas.focus();
    const it = this.hitTest(sx, sy);
    if (!it) { this.select(null, 'click'); return; }
    if (it.type === 'node') { this.select(it.id, 'click'); return; }
    void this.toggleGroup(it.id);
  }

  /** Moves the selection along edges: down = a consumer, up = a producer, left/right = siblings. */
  step(key: 'up' | 'down' | 'left' | 'right'): void {
    const g = this.graph;
    if (!g) return;
    // Left to right, the arrows follow the layout: right = a consumer, left = a producer.
    const lr: Record<typeof key, typeof key> = { right: 'down', left: 'up', down: 'right', up: 'left' };
    const dir = this.direction === 'RIGHT' ? lr[key] : key;
    if (!this.selection) {
      const first = g.nodes[0];
      if (first) { void this.reveal(first.id).then(() => this.select(first.id, 'key')); }
      return;
    }
    const cur = this.selection;
    let next: string | undefined;
    if (dir === 'down') next = g.succ.get(cur)?.[0];
    else if (dir === 'up') next = g.pred.get(cur)?.[0];
    else {
      const p = g.pred.get(cur)?.[0];
      const sibs = p !== undefined ? g.succ.get(p) ?? [] : [];
      const uniq = [...new Set(sibs)];
      const i = uniq.indexOf(cur);
      if (uniq.length > 1 && i >= 0) next = uniq[(i + (dir === 'right' ? 1 : uniq.length - 1)) % uniq.length];
    }
    if (next === undefined) return;
    const n = next;
    void this.reveal(n, false).then(() => {
      this.select(n, 'key');
      this.ensureVisible(n);
    });
  }

  /**
   * Pans (never zooms) so that item `id` lies inside the viewport with a margin; nothing moves when
   * it already does. Whether the camera moved.
   */
  panIntoView(id: string, margin = 48): boolean {
    const it = this.scene?.byId.get(id);
    if (!it) return false;
    const x0 = it.x * this.scale + this.tx, y0 = it.y * this.scale + this.ty;
    const x1 = x0 + it.w * this.scale, y1 = y0 + it.h * this.scale;
    const m = Math.min(margin, this.cssW / 4, this.cssH / 4);
    if (x0 >= m && y0 >= m && x1 <= this.cssW - m && y1 <= this.cssH - m) return false;
    this.fittedScene = null;
    this.tx = this.cssW / 2 - (it.x + it.w / 2) * this.scale;
    this.ty = this.cssH / 2 - (it.y + it.h / 2) * this.scale;
    this.invalidate();
    return true;
  }

  /** What is drawn for the debug focus: the nodes, or the collapsed groups holding them. */
  private debugItems(): Set<string> {
    const out = new Set<string>();
    const g = this.graph;
    if (!g) return out;
    for (const id of this.debugNodes) if (g.byId.has(id)) out.add(visibleRep(g, id, this.expanded));
    return out;
  }

  private ensureVisible(id: string): void {
    const it = this.scene?.byId.get(id);
    if (!it) return;
    const x0 = it.x * this.scale + this.tx, y0 = it.y * this.scale + this.ty;
    const x1 = x0 + it.w * this.scale, y1 = y0 + it.h * this.scale;
    const m = 40;
    if (x0 < m || y0 < m || x1 > this.cssW - m || y1 > this.cssH - m) this.centerOn(id);
  }

  // ---- painting ----------------------------------------------------------------------------

  invalidate(): void {
    if (this.dirty) return;
    this.dirty = true;
    requestAnimationFrame(() => { if (this.dirty) this.paintNow(); });
  }

  setTheme(t: Theme): void { this.theme = t; this.invalidate(); }

  paintNow(): void {
    this.dirty = false;
    const t0 = performance.now();
    const ctx = this.ctx;
    const th = this.theme;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, this.cssW, this.cssH);
    const s = this.scene;
    if (s) {
      ctx.setTransform(this.dpr * this.scale, 0, 0, this.dpr * this.scale, this.dpr * this.tx, this.dpr * this.ty);
      const vx0 = -this.tx / this.scale, vy0 = -this.ty / this.scale;
      const vx1 = vx0 + this.cssW / this.scale, vy1 = vy0 + this.cssH / this.scale;
      this.drawScene(ctx, s, vx0, vy0, vx1, vy1, this.scale);
    }
    this.frames++;
    this.lastPaintMs = performance.now() - t0;
    this.lastRenderAt = performance.now();
    for (const f of this.paintListeners) f();
  }

  /** Draws the scene in world coordinates (shared by the canvas, PNG export). */
  drawScene(ctx: CanvasRenderingContext2D, s: Scene, vx0: number, vy0: number, vx1: number, vy1: number, scale: number): void {
    const th = this.theme;
    const ms = this.ensureScale();
    const useMetric = this.metric !== 'none' && ms !== null && ms.max > 0;
    const inView = (x: number, y: number, w: number, h: number): boolean =>
      x + w >= vx0 && y + h >= vy0 && x <= vx1 && y <= vy1;
    const text = scale >= 0.38;
    const detail = scale >= 0.16;
    const px = 1 / scale;
    const paused = this.debugItems();
    const driftFirst = new Set(this.driftFirstItems());
    const vocab = this.graph?.vocab ?? vocabOf(undefined);
    // Frames (expanded groups).
    for (const it of s.items) {
      if (it.type !== 'frame') continue;
      if (!inView(it.x, it.y, it.w, it.h)) continue;
      ctx.fillStyle = th.frame;
      ctx.strokeStyle = it.group?.artificial ? th.muted : th.frameBorder;
      ctx.lineWidth = Math.max(1, px) * th.line;
      ctx.setLineDash(it.group?.artificial ? [6, 4] : []);
      ctx.beginPath();
      ctx.roundRect(it.x, it.y, it.w, it.h, 8);
      ctx.fill();
      ctx.stroke();
      ctx.setLineDash([]);
      if (this.selection === it.id) this.outline(ctx, it, th.accent, 2.5 * px);
    }
    // Edges.
    ctx.lineJoin = 'round';
    const sel = this.selection;
    const plain = new Path2D();
    const ghostly = new Path2D();  // edges of a comparison's removed nodes: dashed
    let ghosts = 0;
    const hot: DrawEdge[] = [];
    for (const e of s.edges) {
      if (e.maxX < vx0 || e.maxY < vy0 || e.minX > vx1 || e.minY > vy1) continue;
      if (sel !== null && (e.src === sel || e.tgt === sel)) { hot.push(e); continue; }
      if (e.tgt.startsWith(GHOST_PREFIX) || e.src.startsWith(GHOST_PREFIX)) { addPolyline(ghostly, e.pts, detail ? 10 : 0); ghosts++; continue; }
      addPolyline(plain, e.pts, detail ? 10 : 0);
    }
    ctx.strokeStyle = th.edge;
    ctx.lineWidth = Math.max(1.2, px) * th.line;
    ctx.stroke(plain);
    if (ghosts) {
      ctx.setLineDash([6 * Math.max(1, px), 4 * Math.max(1, px)]);
      ctx.strokeStyle = th.danger;
      ctx.globalAlpha = 0.55;
      ctx.stroke(ghostly);
      ctx.globalAlpha = 1;
      ctx.setLineDash([]);
    }
    if (detail) {
      ctx.fillStyle = th.edge;
      const heads = new Path2D();
      for (const e of s.edges) {
        if (e.maxX < vx0 || e.maxY < vy0 || e.minX > vx1 || e.minY > vy1) continue;
        addArrow(heads, e.pts, 7);
      }
      ctx.fill(heads);
    }
    if (hot.length) {
      const p = new Path2D();
      const heads = new Path2D();
      for (const e of hot) { addPolyline(p, e.pts, 10); addArrow(heads, e.pts, 8); }
      ctx.strokeStyle = th.accent;
      ctx.lineWidth = Math.max(2.2, 2 * px);
      ctx.stroke(p);
      ctx.fillStyle = th.accent;
      ctx.fill(heads);
    }
    // Group headers over the edges that enter their frames (the line passes under the title).
    if (text || scale >= 0.12) {
      for (const it of s.items) {
        if (it.type !== 'frame' || !inView(it.x, it.y, it.w, GROUP_PAD_TOP)) continue;
        this.drawFrameHeader(ctx, it, text ? 12 : 12 * 0.38 / scale);
      }
    }
    // Edge labels (tensor shape, dtype, format) when they are readable, where labels.ts placed them.
    if (scale >= LABEL_MIN_SCALE) {
      ctx.font = LABEL_FONT;
      ctx.textBaseline = 'middle';
      for (const l of this.edgeLabels()) {
        const b = l.box;
        if (!inView(b.x, b.y, b.w, b.h)) continue;
        ctx.fillStyle = th.bg;
        ctx.globalAlpha = 0.85;
        ctx.fillRect(b.x, b.y, b.w, b.h);
        ctx.globalAlpha = 1;
        ctx.fillStyle = th.edgeLabel;
        l.lines.forEach((t, i) => ctx.fillText(t, b.x + LABEL_PAD, b.y + 1 + LABEL_LINE * (i + 0.5)));
      }
    }
    // Nodes and collapsed groups.
    if (!detail) {
      // Far zoom: batched rectangles per colour, no text.
      const batches = new Map<string, Path2D>();
      for (const it of s.items) {
        if (it.type === 'frame' || !inView(it.x, it.y, it.w, it.h)) continue;
        const stage = !useMetric && it.node ? stageOf(it.node) : null;
        const col = it.node?.failure || it.node?.ghost ? th.danger
          : stage !== null ? stageColor(stage, th.stages) : this.fillFor(it, useMetric, ms).fill;
        let p = batches.get(col);
        if (!p) { p = new Path2D(); batches.set(col, p); }
        p.rect(it.x, it.y, it.w, it.h);
      }
      for (const [col, p] of batches) { ctx.fillStyle = col; ctx.fill(p); }
      for (const it of s.items) {
        if (it.type === 'frame' || !inView(it.x, it.y, it.w, it.h)) continue;
        const mark = this.markColor(it.id);
        if (mark) this.outline(ctx, it, mark, 3 * px);
        if (it.node && shardingOf(it.node)) this.drawShardFrame(ctx, it, px, false);
        if (driftFirst.has(it.id)) this.drawDriftFirst(ctx, it, px, false);
        if (paused.has(it.id)) this.drawPaused(ctx, it, px, false);
      }
      return;
    }
    ctx.textBaseline = 'middle';
    for (const it of s.items) {
      if (it.type === 'frame' || !inView(it.x, it.y, it.w, it.h)) continue;
      const { fill, fg, bar } = this.fillFor(it, useMetric, ms);
      if (it.type === 'group') {
        // A collapsed group: stacked cards.
        ctx.fillStyle = fill;
        ctx.strokeStyle = th.frameBorder;
        ctx.lineWidth = Math.max(1, px) * th.line;
        ctx.beginPath();
        ctx.roundRect(it.x + 5, it.y - 4, it.w - 10, it.h, 7);
        ctx.fill(); ctx.stroke();
        ctx.beginPath();
        ctx.roundRect(it.x, it.y, it.w, it.h, 7);
        ctx.fill(); ctx.stroke();
        if (text) {
          const g = it.group!;
          ctx.fillStyle = useMetric ? fg : th.frameHeader;
          ctx.font = '600 12px system-ui, sans-serif';
          ctx.fillText(clip('▸ ' + g.label, Math.floor((it.w - 16) / 6.8)), it.x + 10, it.y + 17, it.w - 16);
          ctx.font = '11px system-ui, sans-serif';
          ctx.fillStyle = useMetric ? fg : th.muted;
          let sub = groupHeader(g).rest;
          const sum = this.gsums.get(g.id);
          if (useMetric && sum) sub = `${this.metric === 'drift' ? 'worst' : 'Σ'} ${metricDef(this.metric).format(sum)} · ${sub}`;
          ctx.fillText(clip(sub, Math.floor((it.w - 16) / 5.6)), it.x + 10, it.y + 34, it.w - 16);
        }
      } else if (it.node?.failure) {
        this.drawFailure(ctx, it, px, text);
      } else if (it.node?.ghost) {
        this.drawGhost(ctx, it, px, text);
      } else {
        const n = it.node!;
        // A sharded node: its card inside the red dashed frame, the split written under it.
        const sharded = shardingOf(n) !== undefined;
        const box = sharded ? { x: it.x + 3, y: it.y + 3, w: it.w - 6, h: it.h - SPLIT_H - 3 } : it;
        const faded = this.device !== null && !onRank(this.parallel, n, this.device);
        if (faded) ctx.globalAlpha = 0.3;
        const comm = commOf(n);
        const stage = useMetric ? null : stageOf(n);
        ctx.fillStyle = fill;
        ctx.beginPath();
        if (comm) hexagon(ctx, box.x, box.y, box.w, box.h);
        else ctx.roundRect(box.x, box.y, box.w, box.h, 6);
        ctx.fill();
        if (stage !== null) {
          // The pipeline stage: a tint of its colour and a stripe along the top.
          const col = stageColor(stage, th.stages);
          const a = ctx.globalAlpha;
          ctx.globalAlpha = a * 0.2;
          ctx.fillStyle = col;
          ctx.fill();
          ctx.globalAlpha = a;
          ctx.save();
          ctx.clip();
          ctx.fillStyle = col;
          ctx.fillRect(box.x, box.y, box.w, 4);
          ctx.restore();
        }
        const tint = this.diff?.tint ? this.markTint(n.id) : null;
        if (tint) {
          const a = ctx.globalAlpha;
          ctx.globalAlpha = a * 0.16;
          ctx.fillStyle = tint;
          ctx.fill();
          ctx.globalAlpha = a;
        }
        ctx.strokeStyle = comm ? th.comm : n.fused ? th.fused : th.nodeBorder;
        ctx.lineWidth = (comm ? Math.max(2, 2 * px) : n.fused ? Math.max(1.6, 1.5 * px) : Math.max(1, px)) * th.line;
        if (n.fused) ctx.setLineDash([5, 3]);
        ctx.stroke();
        ctx.setLineDash([]);
        if (bar && !comm) {
          ctx.fillStyle = bar;
          ctx.beginPath();
          ctx.roundRect(box.x, box.y, 5, box.h, [6, 0, 0, 6]);
          ctx.fill();
        }
        if (text) {
          const base = ctx.globalAlpha;
          ctx.fillStyle = comm ? th.comm : fg;
          ctx.font = '600 12px system-ui, sans-serif';
          const cx = box.x + (comm ? 14 : 11);
          const w = box.w - (comm ? 24 : 16);
          const maxc = Math.floor(w / 6.7);
          if (box.h > 48) {
            ctx.fillText(clip(n.label, maxc), cx, box.y + 14, w);
            ctx.font = '10.5px system-ui, sans-serif';
            ctx.globalAlpha = base * 0.8;
            ctx.fillText(clip(hardwareLine(vocab, n.optimized?.hardware), Math.floor(w / 5.6)), cx, box.y + 29, w);
            ctx.fillText(clip(n.sub, Math.floor(w / 5.6)), cx, box.y + 43, w);
          } else {
            ctx.fillText(clip(n.label, maxc), cx, box.y + 14, w);
            ctx.font = '10.5px system-ui, sans-serif';
            ctx.globalAlpha = base * 0.75;
            ctx.fillText(clip(n.sub, Math.floor(w / 5.6)), cx, box.y + 29, w);
          }
          ctx.globalAlpha = base;
        }
        if (sharded) this.drawShardFrame(ctx, it, px, text);
        ctx.globalAlpha = 1;
      }
      const mark = this.markColor(it.id);
      if (mark) this.outline(ctx, it, mark, (mark === th.accent ? 3 : 2.5) * px);
      if (driftFirst.has(it.id)) this.drawDriftFirst(ctx, it, px, text);
      if (paused.has(it.id)) this.drawPaused(ctx, it, px, text);
    }
  }

  /**
   * A sharded node's frame: red, dashed, around its card, with the split (and the communication
   * MindSpore inserts for it, as a marker) written in the band under the card.
   */
  private drawShardFrame(ctx: CanvasRenderingContext2D, it: DrawItem, px: number, text: boolean): void {
    const th = this.theme;
    const n = it.node!;
    ctx.strokeStyle = th.shard;
    ctx.lineWidth = Math.max(1.5, 1.4 * px) * th.line;
    ctx.setLineDash([6, 3]);
    ctx.beginPath();
    ctx.roundRect(it.x, it.y, it.w, it.h, 8);
    ctx.stroke();
    ctx.setLineDash([]);
    if (!text) return;
    const marker = commMarker(n);
    const split = frameSplit(shardingOf(n)!);
    const y = it.y + it.h - SPLIT_H / 2 - 1;
    ctx.font = '600 10.5px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.fillStyle = th.shard;
    const room = it.w - 12;
    const shown = clip(split, Math.floor(room / 5.8));
    ctx.fillText(shown, it.x + 7, y, room);
    if (marker) {
      // Communication inserted for this operator: a diamond in the communication colour, then its kind.
      const x0 = it.x + 7 + Math.min(room, ctx.measureText(shown).width) + 6;
      const left = it.x + it.w - 6 - x0;
      if (left > 24) {
        ctx.fillStyle = th.comm;
        ctx.beginPath();
        ctx.moveTo(x0 + 4, y - 4); ctx.lineTo(x0 + 8, y); ctx.lineTo(x0 + 4, y + 4); ctx.lineTo(x0, y);
        ctx.closePath();
        ctx.fill();
        ctx.font = '10.5px system-ui, sans-serif';
        ctx.fillText(clip(marker, Math.floor((left - 12) / 5.6)), x0 + 11, y, left - 12);
      }
    }
  }

  /**
   * An expanded group's header: "▾ path" in the header colour, then its class and size, muted. The
   * text sits on its frame's own colour (the canvas under `depth` frame fills), so an edge entering
   * the frame passes under the title instead of striking through it.
   */
  private drawFrameHeader(ctx: CanvasRenderingContext2D, it: DrawItem, size: number): void {
    const th = this.theme;
    const hl = this.headerLayoutOf(it, size);
    const room = it.w - 16;
    // The chip: the header's background as drawn (canvas, then one frame fill per nesting level).
    const c = hl.chip;
    ctx.fillStyle = th.bg;
    ctx.fillRect(c.x, c.y, c.w, c.h);
    ctx.fillStyle = th.frame;
    for (let d = 0; d < Math.max(1, it.depth); d++) ctx.fillRect(c.x, c.y, c.w, c.h);
    ctx.textBaseline = 'middle';
    ctx.font = headerFont(size, true);
    ctx.fillStyle = th.frameHeader;
    ctx.fillText(hl.head, hl.headX, hl.y, room);
    if (!hl.rest) return;
    ctx.font = headerFont(size, false);
    ctx.fillStyle = th.muted;
    ctx.fillText(hl.rest, hl.restX, hl.y, it.x + it.w - 6 - hl.restX);
  }

  private headerLayoutOf(it: DrawItem, size = 12): HeaderLayout {
    const ctx = this.ctx;
    return headerLayout(it, size, GROUP_PAD_TOP, (font, t) => { ctx.font = font; return ctx.measureText(t).width; }, clip);
  }

  /**
   * A failed call (Cell.failures): the theme's error colour as border and tint, an error glyph
   * (a disc with "!"), "id · api" and the diagnostic's code. Never coloured by a metric.
   */
  private drawFailure(ctx: CanvasRenderingContext2D, it: DrawItem, px: number, text: boolean): void {
    const th = this.theme;
    const n = it.node!;
    ctx.fillStyle = th.node;
    ctx.beginPath();
    ctx.roundRect(it.x, it.y, it.w, it.h, 6);
    ctx.fill();
    ctx.globalAlpha = 0.14;
    ctx.fillStyle = th.danger;
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.strokeStyle = th.danger;
    ctx.lineWidth = Math.max(2, 2 * px);
    ctx.stroke();
    drawErrorGlyph(ctx, it.x + 17, it.y + it.h / 2, 8, th.danger, th.dangerFg);
    if (!text) return;
    const cx = it.x + 31;
    const w = it.w - 36;
    const top = it.y + (it.h - 40) / 2;
    ctx.textBaseline = 'middle';
    ctx.fillStyle = th.fg;
    ctx.font = '600 12px system-ui, sans-serif';
    ctx.fillText(clip(n.label, Math.floor(w / 6.7)), cx, top + 14, w);
    ctx.fillStyle = th.danger;
    ctx.font = '10.5px system-ui, sans-serif';
    ctx.fillText(clip(n.sub, Math.floor(w / 5.6)), cx, top + 29, w);
  }

  /**
   * A node of a comparison's base that the graph no longer has (a ghost): faded, a dashed border
   * in the theme's error colour, its label struck through. Never coloured by a metric.
   */
  private drawGhost(ctx: CanvasRenderingContext2D, it: DrawItem, px: number, text: boolean): void {
    const th = this.theme;
    const n = it.node!;
    ctx.beginPath();
    ctx.roundRect(it.x, it.y, it.w, it.h, 6);
    ctx.fillStyle = th.bg;
    ctx.fill();
    ctx.globalAlpha = 0.08;
    ctx.fillStyle = th.danger;
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.setLineDash([5, 3]);
    ctx.strokeStyle = th.danger;
    ctx.lineWidth = Math.max(1.6, 1.5 * px);
    ctx.stroke();
    ctx.setLineDash([]);
    if (!text) return;
    const cx = it.x + 11;
    const w = it.w - 16;
    ctx.textBaseline = 'middle';
    ctx.globalAlpha = 0.7;
    ctx.fillStyle = th.fg;
    ctx.font = '600 12px system-ui, sans-serif';
    const label = clip(n.label, Math.floor(w / 6.7));
    ctx.fillText(label, cx, it.y + 14, w);
    const lw = Math.min(w, ctx.measureText(label).width);
    ctx.fillRect(cx, it.y + 14, lw, Math.max(1, px));  // struck through
    ctx.font = '10.5px system-ui, sans-serif';
    ctx.fillStyle = th.danger;
    ctx.fillText(clip(`removed · ${n.sub}`, Math.floor(w / 5.6)), cx, it.y + 29, w);
    ctx.globalAlpha = 1;
  }

  /** The first layer under the drift threshold: a dashed outline in the error colour and, with text, a badge under it. */
  private drawDriftFirst(ctx: CanvasRenderingContext2D, it: DrawItem, px: number, badge: boolean): void {
    const th = this.theme;
    const w = 3 * px;
    ctx.save();
    ctx.strokeStyle = th.danger;
    ctx.lineWidth = w;
    ctx.setLineDash([8 * px, 4 * px]);
    ctx.beginPath();
    ctx.roundRect(it.x - 2 * w, it.y - 2 * w, it.w + 4 * w, it.h + 4 * w, 9);
    ctx.stroke();
    ctx.restore();
    if (!badge || !this.drift) return;
    const label = `first under cos ${this.drift.threshold}`;
    ctx.font = '600 10.5px system-ui, sans-serif';
    const tw = ctx.measureText(label).width + 12;
    const bx = it.x, by = it.y + it.h + 2 * w + 2;
    ctx.fillStyle = th.danger;
    ctx.beginPath();
    ctx.roundRect(bx, by, tw, 16, 4);
    ctx.fill();
    ctx.fillStyle = th.dangerFg;
    ctx.textBaseline = 'middle';
    ctx.fillText(label, bx + 6, by + 8.5);
  }

  /** The debug focus: a thick outline and, when text is drawn, a "paused here" badge on top. */
  private drawPaused(ctx: CanvasRenderingContext2D, it: DrawItem, px: number, badge: boolean): void {
    const th = this.theme;
    const w = 3.5 * px;
    ctx.strokeStyle = th.debug;
    ctx.lineWidth = w;
    ctx.beginPath();
    ctx.roundRect(it.x - 2 * w, it.y - 2 * w, it.w + 4 * w, it.h + 4 * w, 9);
    ctx.stroke();
    if (!badge) return;
    const label = 'paused here';
    ctx.font = '600 10.5px system-ui, sans-serif';
    const tw = ctx.measureText(label).width + 22;
    const bx = it.x, by = it.y - 2 * w - 18;
    ctx.fillStyle = th.debug;
    ctx.beginPath();
    ctx.roundRect(bx, by, tw, 16, 4);
    ctx.fill();
    ctx.fillStyle = th.debugFg;
    // A pause sign (two bars), then the label.
    ctx.fillRect(bx + 6, by + 4, 2.5, 8);
    ctx.fillRect(bx + 10.5, by + 4, 2.5, 8);
    ctx.textBaseline = 'middle';
    ctx.fillText(label, bx + 17, by + 8.5);
  }

  /** One colour for an item at a glance (the overview): its metric's, else its category's. */
  boxColour(it: DrawItem): string {
    const th = this.theme;
    if (it.node?.failure || it.node?.ghost) return th.danger;
    const ms = this.ensureScale();
    const useMetric = this.metric !== 'none' && ms !== null && ms.max > 0;
    const f = this.fillFor(it, useMetric, ms);
    if (it.type === 'group') return useMetric && f.fill !== th.node ? f.fill : th.frameBorder;
    return useMetric ? f.fill : f.bar ?? th.nodeBorder;
  }

  private markColor(id: string): string | null {
    const th = this.theme;
    if (id === this.selection || this.multi.has(id)) return th.accent;
    if (this.highlight.has(id)) return th.highlight;
    if (this.secondary.has(id)) return th.mapped;
    if (this.diff) {
      if (this.diff.added.has(id)) return th.added;
      if (this.diff.changed.has(id) || this.diff.groups?.has(id)) return th.changed;
    }
    return null;
  }

  /** A comparison's tint of a node: added or changed. */
  private markTint(id: string): string | null {
    const th = this.theme;
    if (this.diff?.added.has(id)) return th.added;
    if (this.diff?.changed.has(id)) return th.changed;
    return null;
  }

  private fillFor(it: DrawItem, useMetric: boolean, ms: MetricScale | null): { fill: string; fg: string; bar: string | null } {
    const th = this.theme;
    if (it.type === 'group') {
      const gs = useMetric && ms ? this.groupMetricScale() : null;
      if (gs) {
        const v = this.gsums.get(it.id) ?? 0;
        if (v > 0) {
          const t = gs.norm(v);
          return { fill: (gs.color ?? rampColor)(t), fg: (gs.textColor ?? rampTextColor)(t), bar: null };
        }
      }
      return { fill: th.node, fg: th.fg, bar: null };
    }
    const n = it.node!;
    if (useMetric && ms) {
      const v = ms.values.get(n.id);
      if (v !== undefined) {
        const t = ms.norm(v);
        return { fill: (ms.color ?? rampColor)(t), fg: (ms.textColor ?? rampTextColor)(t), bar: null };
      }
      return { fill: th.node, fg: th.muted, bar: null };
    }
    const cat = th.cat[opCategory(n)] ?? th.nodeBorder;
    if (n.dataMove) return { fill: th.move, fg: '#111', bar: cat };
    return { fill: th.node, fg: th.fg, bar: cat };
  }

  private outline(ctx: CanvasRenderingContext2D, it: DrawItem, color: string, w: number): void {
    ctx.strokeStyle = color;
    ctx.lineWidth = w;
    ctx.beginPath();
    ctx.roundRect(it.x - w / 2, it.y - w / 2, it.w + w, it.h + w, 7);
    ctx.stroke();
  }

  /** Renders the whole scene (or a part) to an offscreen canvas for PNG export. */
  renderToCanvas(maxPixels = 12000): HTMLCanvasElement | null {
    const s = this.scene;
    if (!s) return null;
    const m = 20;
    const k = Math.min(2, maxPixels / (s.width + 2 * m), maxPixels / (s.height + 2 * m));
    const c = document.createElement('canvas');
    c.width = Math.ceil((s.width + 2 * m) * k);
    c.height = Math.ceil((s.height + 2 * m) * k);
    const ctx = c.getContext('2d');
    if (!ctx) return null;
    ctx.fillStyle = this.theme.bg;
    ctx.fillRect(0, 0, c.width, c.height);
    ctx.setTransform(k, 0, 0, k, m * k, m * k);
    this.drawScene(ctx, s, -m, -m, s.width + m, s.height + m, Math.max(k, 0.8));
    return c;
  }
}

/** The error glyph: a disc of `bg` with a "!" of `fg` (drawn, so no font is needed). */
export function drawErrorGlyph(ctx: CanvasRenderingContext2D, cx: number, cy: number, r: number, bg: string, fg: string): void {
  ctx.fillStyle = bg;
  ctx.beginPath();
  ctx.arc(cx, cy, r, 0, 2 * Math.PI);
  ctx.fill();
  ctx.fillStyle = fg;
  const k = r / 8;
  ctx.beginPath();
  ctx.roundRect(cx - 1.3 * k, cy - 5 * k, 2.6 * k, 6.2 * k, 1.2 * k);
  ctx.fill();
  ctx.beginPath();
  ctx.arc(cx, cy + 3.7 * k, 1.45 * k, 0, 2 * Math.PI);
  ctx.fill();
}

/** A communication node's outline: a hexagon with its points on the sides. */
function hexagon(ctx: CanvasRenderingContext2D, x: number, y: number, w: number, h: number): void {
  const d = Math.min(10, h / 2);
  ctx.moveTo(x + d, y); ctx.lineTo(x + w - d, y); ctx.lineTo(x + w, y + h / 2);
  ctx.lineTo(x + w - d, y + h); ctx.lineTo(x + d, y + h); ctx.lineTo(x, y + h / 2);
  ctx.closePath();
}

export function clip(s: string, n: number): string {
  if (n <= 1) return '';
  return s.length > n ? s.slice(0, Math.max(1, n - 1)) + '…' : s;
}

function addPolyline(p: Path2D, pts: number[], r: number): void {
  p.moveTo(pts[0], pts[1]);
  const n = pts.length / 2;
  for (let i = 1; i < n - 1; i++) {
    if (r > 0) p.arcTo(pts[2 * i], pts[2 * i + 1], pts[2 * i + 2], pts[2 * i + 3], r);
    else p.lineTo(pts[2 * i], pts[2 * i + 1]);
  }
  p.lineTo(pts[2 * n - 2], pts[2 * n - 1]);
}

function addArrow(p: Path2D, pts: number[], size: number): void {
  const n = pts.length;
  const x1 = pts[n - 2], y1 = pts[n - 1];
  let x0 = pts[n - 4], y0 = pts[n - 3];
  for (let i = n - 4; i >= 0 && x0 === x1 && y0 === y1; i -= 2) { x0 = pts[i]; y0 = pts[i + 1]; }
  const a = Math.atan2(y1 - y0, x1 - x0);
  p.moveTo(x1, y1);
  p.lineTo(x1 - size * Math.cos(a - 0.4), y1 - size * Math.sin(a - 0.4));
  p.lineTo(x1 - size * Math.cos(a + 0.4), y1 - size * Math.sin(a + 0.4));
  p.closePath();
}
