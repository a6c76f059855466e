// The Cellscope graph view application: transport, document state, toolbar, panels, test hook.
import { commOf, deviceRanks, frameText, onRank, pickerTip, rankStage, stageColor, stageOf } from './parallel';
import './styles.css';
import type { Cell, CellSkeleton, Comparison, DebugFocus, DeviceProgress, Diagnostic, GraphDocument, Range, HardwareKernel, PrecisionDrift, ScopeNodes, TrainProgress, ViewHello, ViewMessage, ViewRequest } from './protocol';
import { seqNumber } from './protocol';
import { applyDelta } from './delta';
import { FAILED_PREFIX, LAYERS, LAZY_PREFIX, buildViewGraph, countVisible, type Layer, type LazyInput, type ViewGraph } from './model';
import { LayoutEngine } from './layout';
import { GraphView, readTheme } from './view';
import { METRICS, type MetricId } from './metrics';
import { LEGEND_KEY, Legend, parseLegendPrefs, type LegendPrefs } from './legend';
import { LABEL_MIN_SCALE, labelLines } from './labels';
import { searchContext, type SearchContext } from './search';
import { SearchBar } from './searchbar';
import { diffGraphs, type GraphDiff } from './diff';
import { bannerHtml, baseLabel, cellComparison, changeSteps, compareDetailsHtml, compareDiff, ghostsFor, isComparing } from './compare';
import { ERROR_ICON, bufferMates, cellJson, debugStrip, matchRows, nodeJson, renderCellSummary, renderMatches, renderPanel, sourceLink } from './panel';
import { bindTabs, showTab } from './tabs';
import { copyWithFeedback } from './copy';
import { layerState } from './failures';
import { debugPanelHtml, debugTargets, isPaused, scopesToLoad } from './debug';
import { buildTimeline, MemoryPanel } from './memory';
import { exportPng, exportSvg, buildSvg } from './export';
import { TimelinePanel, graphNodeForKernel, kernelSource, type TimelineModel } from './timeline';
import { makeLayoutWorker, pickTransport, snapshotParseMs, type ConnectionState, type Transport } from './transport';
import { Minimap } from './minimap';
import { decorateToolbar, setButtonBadge, setButtonFace } from './toolbar';
import type { Direction } from './layout-types';
import { escapeHtml as h, fmtNum, rangeText } from './format';
import { type ThemeKind, browserThemeKind, nextThemeKind, themeLabel, vscodeThemeKind } from './theme';
import { firstPaintDone, mark, milestones } from './startup';
import { TrainPanel } from './trainpanel';
import { DevicePanel } from './devicepanel';
import { driftCardHtml, driftIndex, type DriftIndex } from './train';

mark('script');

/** A lazy Cell (view.proto's CellSkeleton): the scopes loaded so far, and the Cell they make. */
interface LazyCell {
  skeleton: CellSkeleton;
  chunks: Map<string, ScopeNodes>;
  pending: Set<string>;
  merged: Cell | null;  // the document's Cell header with the loaded nodes, in execution order
}

function mergeLazy(header: Cell, lz: LazyCell): Cell {
  const sem: [number, NonNullable<Cell['nodes']>[number]][] = [];
  const opt: [number, NonNullable<NonNullable<Cell['optimized']>['nodes']>[number]][] = [];
  for (const c of lz.chunks.values()) {
    (c.nodes ?? []).forEach((n, i) => sem.push([c.index?.[i] ?? 0, n]));
    (c.optimizedNodes ?? []).forEach((n, i) => opt.push([c.optimizedIndex?.[i] ?? 0, n]));
  }
  sem.sort((a, b) => a[0] - b[0]);
  opt.sort((a, b) => a[0] - b[0]);
  const cell: Cell = { ...header, nodes: sem.map((x) => x[1]) };
  if (header.optimized) cell.optimized = { ...header.optimized, nodes: opt.map((x) => x[1]) };
  return cell;
}

const LAYER_LABEL: Record<Layer, string> = { semantic: 'Semantic', optimized: 'Optimization', hardware: 'Hardware' };

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, html?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (html !== undefined) e.innerHTML = html;
  return e;
}

/** The specs typed in an input box, one per construct input (';' between). */
function inputBoxSpecs(form: HTMLFormElement): string[] {
  const text = (form.elements.namedItem('shapes') as HTMLInputElement | null)?.value ?? '';
  return text.split(';').map((s) => s.trim()).filter((s) => s !== '');
}

class App {
  private transport: Transport;
  private engine: LayoutEngine;
  private viewA: GraphView;
  private viewB: GraphView | null = null;
  private active: 'A' | 'B' = 'A';
  private doc: GraphDocument | null = null;
  private prevDoc: GraphDocument | null = null;
  private seq = 0;
  private hello: ViewHello = {};
  private cellName = '';
  private layer: Layer = 'semantic';
  private metric: MetricId = 'none';
  private split = false;
  private showDiff = true;
  private showMem = false;
  private diff: GraphDiff | null = null;
  private details = new Map<string, HardwareKernel[]>();
  private detailsPending = new Set<string>();
  private status: { state: string; message: string; diagnostics: Diagnostic[] } = { state: 'ok', message: '', diagnostics: [] };
  private conn: ConnectionState = 'connecting';
  private lastUpdateMs = 0;
  private updateCount = 0;
  private renderSeq = 0;
  private urlCell: string | null;
  private lastGraph: { cell: Cell; layer: Layer; graph: ViewGraph } | null = null;
  private timings = { buildMs: 0, diffMs: 0, layoutMs: 0 };
  private lazy = new Map<string, LazyCell>();  // by Cell name
  // After a new skeleton: the groups that were expanded, re-opened as their scopes load again.
  private reopen: Set<string> | null = null;
  // The debugger's focus (DebugFocus): the paused node, highlighted in every layer.
  private focus: DebugFocus | null = null;
  private focusSeq = 0;               // one per focus received
  private focusCellSeq = 0;           // the focus whose Cell the view switched to
  private focusPanned = new Map<GraphView, string>();  // per view: the focus/layer it panned to
  private focusWork: Promise<void> = Promise.resolve();
  // The comparison with a fixed base (view.proto's Comparison) while one is in force, its marks
  // per pane (they take the place of the last edit's), and the change the banner stepped to.
  private comparison: Comparison | null = null;
  private cmpDiffA: GraphDiff | null = null;
  private cmpDiffB: GraphDiff | null = null;
  private cmpPos = -1;

  // DOM
  private root = el('div', 'app');
  private cellSel = el('select', 'cell-select');
  private layerSeg = el('div', 'seg');
  private metricSel = el('select');
  // The device picker (parallel.ts): global shapes, or rank k's per-device shapes.
  private deviceSel = el('select', 'device-picker');
  private deviceLbl = el('label', 'lbl hidden', 'Shapes ');
  private rank: number | null = null;
  // The search box (searchbar.ts): matches, next / previous, select all (a multi-selection).
  private search = new SearchBar({
    view: () => this.activeView(),
    views: () => (this.viewB ? [this.viewA, this.viewB] : [this.viewA]),
    context: () => this.searchContext(),
    goTo: (id) => { const v = this.activeView(); void v.reveal(id).then(() => v.select(id, 'click')); },
    onMulti: () => this.renderPanel(),
    coverage: () => this.searchCoverage(),
  });
  private searchCtx: { cell: Cell; ctx: SearchContext } | null = null;
  // The side panel's tab (tabs.ts), kept across selections, updates and reloads.
  private panelTab = App.stored('cellscope-panel-tab') ?? 'node';
  private banner = el('div', 'banner hidden');
  private compareBanner = el('div', 'compare-banner hidden');
  private compareMenu = el('div', 'compare-menu hidden');
  private views = el('div', 'views');
  private paneA = el('div', 'pane');
  private paneB = el('div', 'pane hidden');
  private panel = el('aside', 'panel');
  private panelBody = el('div', 'panel-body');
  private copyStatus = el('div', 'copy-status');
  private memHost = el('div', 'mem hidden');
  private statusBar = el('footer', 'statusbar');
  private connEl = el('span', 'conn');
  private btnDiff!: HTMLButtonElement;
  private btnSplit!: HTMLButtonElement;
  private btnMem!: HTMLButtonElement;
  private themeBtn!: HTMLButtonElement;
  private btnCompare!: HTMLButtonElement;
  private mem: MemoryPanel;
  // The core timeline (timeline.ts): a dock below the graph, toggled from the toolbar.
  private tl = new TimelinePanel({
    onPick: (m, i) => this.pickKernel(m, i),
    onReveal: (m, i) => this.revealKernel(m, i),
    onToggle: () => this.renderTimeline(),
    sourceLink: (file, range) => sourceLink(file, range, !!this.hello.editor),
  });
  // The training run (TrainProgress) as a live chart, and the precision drift (PrecisionDrift) the
  // "drift" metric colours nodes by (trainpanel.ts, train.ts).
  private train = new TrainPanel(() => this.onTrainToggle());
  // A deployed model's device telemetry (DeviceProgress) as a live chart (devicepanel.ts, device.ts).
  private device = new DevicePanel(() => this.onTrainToggle());
  private drift: DriftIndex | null = null;
  // The legend per pane (legend.ts): shown, docked and collapsed alike, remembered (localStorage).
  private legendPrefs: LegendPrefs = parseLegendPrefs(App.stored(LEGEND_KEY));
  private legendA = new Legend(this.paneA, { change: (p) => this.setLegend(p) });
  private legendB = new Legend(this.paneB, { change: (p) => this.setLegend(p) });
  private btnLegend!: HTMLButtonElement;
  private titleA = el('div', 'pane-title');
  private titleB = el('div', 'pane-title');
  // Where the graph stops (Cell.failures), per pane: its layer's state.
  private noteA = el('div', 'pane-note hidden');
  private noteB = el('div', 'pane-note hidden');
  private empty = el('div', 'empty', 'Waiting for the graph…');
  // The overview (minimap) per pane and the layout direction, both remembered (localStorage).
  private minimapA!: Minimap;
  private minimapB: Minimap | null = null;
  private showMinimap = App.stored('cellscope-minimap') !== 'off';
  private direction: Direction = App.stored('cellscope-direction') === 'RIGHT' ? 'RIGHT' : 'DOWN';
  private btnMinimap!: HTMLButtonElement;
  private btnDirection!: HTMLButtonElement;

  constructor() {
    const params = new URLSearchParams(location.search);
    this.urlCell = params.get('cell');
    const cores = navigator.hardwareConcurrency || 2;
    this.engine = new LayoutEngine(makeLayoutWorker, Math.min(4, Math.max(2, cores - 1)), cores >= 4 ? 2 : 1);
    this.transport = pickTransport();
    if (this.transport.kind === 'vscode') document.body.classList.add('in-vscode');
    this.initTheme();
    this.buildDom();
    this.viewA = new GraphView(this.paneA, this.engine, {
      onSelect: (id, from) => this.onSelect('A', id, from),
      onLayout: () => this.onLayout(),
      onExpand: (ex) => this.loadExpanded(this.viewA, ex),
    });
    this.paneA.append(this.titleA, this.noteA, this.legendA.el, this.empty);
    this.minimapA = this.setupView(this.viewA, this.paneA);
    // Start-up milestones (startup.ts): the first scene and the first paint with nodes in it.
    this.viewA.onScene(() => { if (this.viewA.scene?.items.length) mark('laidOut'); });
    this.viewA.onPaint(() => {
      const s = this.viewA.scene;
      if (s && s.nodesDrawn + s.groupsDrawn > 0) firstPaintDone();
    });
    this.noteA.addEventListener('click', (e) => this.onNoteClick(e, this.viewA));
    this.mem = new MemoryPanel(this.memHost, (id) => this.selectNode(id));
    new ResizeObserver(() => this.layoutSplit()).observe(this.views);
    this.bindKeys();
    this.transport.start((m) => this.onMessage(m), (s, info) => this.onConn(s, info));
    mark('transport');
    this.renderStatus();
  }

  // ---- DOM ---------------------------------------------------------------------------------

  private initTheme(): void {
    const media = (q: string): MediaQueryList | null => window.matchMedia?.(q) ?? null;
    const saved = (): string | null => {
      try { return localStorage.getItem('cellscope-theme'); } catch { return null; }
    };
    const pick = (): ThemeKind => vscodeThemeKind(document.body.classList) ?? browserThemeKind({
      saved: saved(),
      prefersDark: !!media('(prefers-color-scheme: dark)')?.matches,
      moreContrast: !!media('(prefers-contrast: more)')?.matches || !!media('(forced-colors: active)')?.matches,
    });
    document.documentElement.dataset.theme = pick();
    for (const q of ['(prefers-color-scheme: dark)', '(prefers-contrast: more)', '(forced-colors: active)']) {
      media(q)?.addEventListener?.('change', () => this.setTheme(pick()));
    }
    // VS Code switches theme by changing the body's classes.
    new MutationObserver(() => this.setTheme(pick())).observe(document.body, { attributes: true, attributeFilter: ['class'] });
  }

  private setTheme(t: ThemeKind): void {
    if (document.documentElement.dataset.theme !== t) document.documentElement.dataset.theme = t;
    if (this.themeBtn) this.themeBtn.title = `Theme: ${themeLabel(t)} (click for ${themeLabel(nextThemeKind(t))})`;
    this.refreshTheme();
  }

  private refreshTheme(): void {
    if (!this.viewA) return;
    this.viewA.setTheme(readTheme(this.paneA));
    this.viewB?.setTheme(readTheme(this.paneB));
    this.mem?.paint();
    this.tl.invalidate();
    this.train.invalidate();
    this.device.invalidate();
    this.renderLegend();
  }

  private button(label: string, title: string, onClick: () => void, cls = ''): HTMLButtonElement {
    const b = el('button', 'btn ' + cls, label);
    b.title = title;
    b.type = 'button';
    b.addEventListener('click', onClick);
    return b;
  }

  private buildDom(): void {
    document.body.appendChild(this.root);
    const bar = el('header', 'toolbar');
    const brand = el('div', 'brand', '<span class="logo">◆</span> Cellscope');
    this.cellSel.title = 'Cell';
    this.cellSel.addEventListener('change', () => { this.cellName = this.cellSel.value; void this.render({ reset: true }); });
    for (const l of LAYERS) {
      const b = this.button(LAYER_LABEL[l], `${LAYER_LABEL[l]} layer`, () => this.setLayer(l));
      b.dataset.layer = l;
      this.layerSeg.appendChild(b);
    }
    this.metricSel.title = 'Colour nodes by';
    this.metricSel.addEventListener('change', () => this.setMetric(this.metricSel.value as MetricId));
    const metricLbl = el('label', 'lbl', 'Colour ');
    metricLbl.appendChild(this.metricSel);
    this.deviceSel.title = 'Shapes on the edges: global, or one device\'s';
    this.deviceSel.addEventListener('change', () => void this.setDevice(this.deviceSel.value === '' ? null : Number(this.deviceSel.value)));
    this.deviceLbl.appendChild(this.deviceSel);
    const sbox = this.search.root;
    const tools = el('div', 'tools');
    this.themeBtn = this.button('◐', 'Theme', () => {
      const t = nextThemeKind((document.documentElement.dataset.theme ?? 'light') as ThemeKind);
      try { localStorage.setItem('cellscope-theme', t); } catch { /* private mode */ }
      this.setTheme(t);
    }, 'icon');
    this.btnDiff = this.button('Changes', 'Highlight nodes added/changed by the last edit', () => { this.showDiff = !this.showDiff; this.applyDiff(); this.syncButtons(); });
    this.btnSplit = this.button('Side by side', 'Semantic vs optimized, with synchronized selection', () => this.setSplit(!this.split));
    this.btnMem = this.button('Memory', 'Memory timeline (buffer lifetimes, peak)', () => this.setMem(!this.showMem));
    this.btnCompare = this.button('Compare…', 'Compare the graph with the last commit or another file', () => this.toggleCompareMenu());
    this.btnCompare.setAttribute('aria-haspopup', 'menu');
    this.btnCompare.setAttribute('aria-expanded', 'false');
    tools.append(
      this.button('Fit', 'Fit to view (0)', () => this.activeView().fit()),
      this.button('Expand', 'Expand all groups', () => void this.activeView().expandAll()),
      this.button('Collapse', 'Collapse all groups', () => void this.activeView().collapseAll()),
      this.btnDiff, this.btnCompare, this.btnSplit, this.btnMem, this.tl.button,
      this.button('PNG', 'Export PNG', () => void exportPng(this.activeView(), this.exportName('png'), this.tl)),
      this.button('SVG', 'Export SVG', () => exportSvg(this.activeView(), this.exportName('svg'), this.tl)),
      this.themeBtn,
    );
    // Inside VS Code the editor's theme rules: no toggle.
    if (vscodeThemeKind(document.body.classList)) this.themeBtn.classList.add('hidden');
    bar.append(brand, this.cellSel, this.layerSeg, metricLbl, this.deviceLbl, sbox, tools);
    tools.before(this.viewTools());
    this.paneB.append(this.titleB, this.legendB.el);
    this.views.append(this.paneA, this.paneB);
    const main = el('main', 'main');
    const left = el('div', 'left');
    left.append(this.views, this.train.host, this.device.host, this.memHost, this.tl.host);
    this.train.host.addEventListener('click', (e) => {
      if ((e.target as HTMLElement).closest('.show-drift')) { e.preventDefault(); this.setMetric('drift'); }
    });
    this.tl.host.addEventListener('click', (e) => this.onPanelClick(e));  // its source link
    main.append(left, this.panel);
    this.root.append(bar, this.banner, this.compareBanner, main, this.statusBar);
    this.panel.setAttribute('aria-label', 'Details');
    this.copyStatus.setAttribute('role', 'status');
    this.copyStatus.setAttribute('aria-live', 'polite');
    this.panel.append(this.panelBody, this.copyStatus);
    bindTabs(this.panelBody, (id) => { this.panelTab = id; App.store('cellscope-panel-tab', id); });
    this.compareMenu.setAttribute('role', 'menu');
    this.compareMenu.setAttribute('aria-label', 'Compare the graph with');
    document.body.appendChild(this.compareMenu);
    this.compareMenu.addEventListener('click', (e) => this.onCompareMenuClick(e));
    this.compareMenu.addEventListener('submit', (e) => this.onCompareMenuSubmit(e));
    this.compareMenu.addEventListener('keydown', (e) => { if (e.key === 'Escape') { this.toggleCompareMenu(false); this.btnCompare.focus(); } });
    this.compareBanner.addEventListener('click', (e) => this.onCompareBannerClick(e));
    this.panel.addEventListener('click', (e) => this.onPanelClick(e));
    this.panel.addEventListener('submit', (e) => this.onInputsSubmit(e));
    this.banner.addEventListener('click', (e) => this.onPanelClick(e));
    this.syncButtons();
    decorateToolbar(bar);
    const theme = (document.documentElement.dataset.theme ?? 'light') as ThemeKind;
    this.themeBtn.title = `Theme: ${themeLabel(theme)} (click for ${themeLabel(nextThemeKind(theme))})`;
  }

  // ---- the overview and the layout direction -------------------------------------------------

  private static stored(key: string): string | null {
    try { return localStorage.getItem(key); } catch { return null; }
  }

  private static store(key: string, value: string): void {
    try { localStorage.setItem(key, value); } catch { /* private mode */ }
  }

  /** The toolbar's view group: the layout direction and the overview toggle. */
  private viewTools(): HTMLElement {
    const box = el('div', 'tools view-tools');
    this.btnDirection = this.button('', '', () => void this.setDirection(this.direction === 'DOWN' ? 'RIGHT' : 'DOWN'));
    this.btnMinimap = this.button('', '', () => this.setMinimap(!this.showMinimap));
    setButtonFace(this.btnMinimap, 'Overview', 'overview',
      'Overview: a small map of the whole graph and of the part shown; click or drag in it to move there (remembered)', 'Overview');
    // The legend's toggle: an icon only (the toolbar keeps its labels on a wide window).
    this.btnLegend = this.button('', '', () => this.setLegend({ shown: !this.legendPrefs.shown }), 'icon');
    setButtonFace(this.btnLegend, 'Legend', 'legend',
      'Legend: what the colours and the node text mean; dock it in another corner or collapse it from its own buttons (remembered)', 'Legend');
    this.btnLegend.querySelector('.btn-text')?.remove();
    for (const b of [this.btnDirection, this.btnMinimap, this.btnLegend]) b.dataset.decorated = '1';
    box.append(this.btnDirection, this.btnMinimap, this.btnLegend);
    this.syncViewTools();
    return box;
  }

  private syncViewTools(): void {
    const lr = this.direction === 'RIGHT';
    setButtonFace(this.btnDirection, lr ? 'Left-right' : 'Top-down', lr ? 'right' : 'down',
      `Layout direction: ${lr ? 'left to right' : 'top down'} (click for ${lr ? 'top down' : 'left to right'}; remembered)`,
      `Layout direction: ${lr ? 'left to right' : 'top down'}`);
    this.btnMinimap.classList.toggle('on', this.showMinimap);
    this.btnMinimap.setAttribute('aria-pressed', String(this.showMinimap));
    this.btnLegend.classList.toggle('on', this.legendPrefs.shown);
    this.btnLegend.setAttribute('aria-pressed', String(this.legendPrefs.shown));
  }

  /** Shows, hides, docks or collapses the legends (both panes alike); remembered. Fit follows. */
  private setLegend(p: Partial<LegendPrefs>): void {
    this.legendPrefs = { ...this.legendPrefs, ...p };
    App.store(LEGEND_KEY, JSON.stringify(this.legendPrefs));
    this.legendA.setPrefs(this.legendPrefs);
    this.legendB.setPrefs(this.legendPrefs);
    this.syncViewTools();
    // A legend that moved without changing size: a fitted view is fitted again around it.
    this.viewA.overlaysMoved();
    this.viewB?.overlaysMoved();
  }

  /** A graph view's overview and direction (pane A at start, pane B when split). */
  private setupView(v: GraphView, pane: HTMLElement): Minimap {
    v.direction = this.direction;
    const m = new Minimap(pane, v);
    m.setEnabled(this.showMinimap);
    return m;
  }

  private setMinimap(on: boolean): void {
    this.showMinimap = on;
    App.store('cellscope-minimap', on ? 'on' : 'off');
    this.minimapA.setEnabled(on);
    this.minimapB?.setEnabled(on);
    this.legendA.place();
    this.legendB.place();
    this.syncViewTools();
  }

  private setDirection(d: Direction): Promise<unknown> {
    this.direction = d;
    App.store('cellscope-direction', d);
    this.syncViewTools();
    return Promise.all([this.viewA.setDirection(d), this.viewB?.setDirection(d)]);
  }

  private exportName(ext: string): string {
    const base = (this.doc?.file ?? 'graph').split('/').pop()!.replace(/\.py$/, '');
    return `${base}-${this.cellName.replace(/[^\w.-]+/g, '_')}-${this.layer}.${ext}`;
  }

  private activeView(): GraphView {
    return this.active === 'B' && this.viewB ? this.viewB : this.viewA;
  }

  private syncButtons(): void {
    for (const b of this.layerSeg.querySelectorAll<HTMLButtonElement>('button')) {
      b.classList.toggle('on', b.dataset.layer === this.layer);
      const l = b.dataset.layer as Layer;
      const cell = this.currentCell();
      b.disabled = l !== 'semantic' && !(l === 'optimized' ? cell?.optimized : cell?.hardware);
    }
    this.btnDiff.classList.toggle('on', this.showDiff && !this.cmpDiffA);
    this.btnDiff.disabled = !!this.cmpDiffA;  // a comparison's marks take the place of the last edit's
    this.btnCompare.classList.toggle('on', isComparing(this.comparison));
    this.btnCompare.disabled = this.transport.kind === 'snapshot';
    if (this.transport.kind === 'snapshot') this.btnCompare.title = 'Compare needs the live view (cellscope view, or the graph panel in VS Code)';
    this.btnSplit.classList.toggle('on', this.split);
    this.btnMem.classList.toggle('on', this.showMem);
    this.btnMem.disabled = !this.currentCell()?.optimized;
    this.btnSplit.disabled = !this.currentCell()?.optimized;
    const d = this.cmpDiffA ? null : this.diff;
    const n = d ? d.added.size + d.changed.size + d.removed.length : 0;
    setButtonBadge(this.btnDiff, n);
    // Metric list for the layer.
    const want = METRICS.filter((m) => m.layers.includes(this.layer));
    const cur = [...this.metricSel.options].map((o) => o.value).join(',');
    if (cur !== want.map((m) => m.id).join(',')) {
      this.metricSel.innerHTML = want.map((m) => `<option value="${m.id}">${h(m.label)}</option>`).join('');
    }
    if (!want.some((m) => m.id === this.metric)) this.metric = 'none';
    this.metricSel.value = this.metric;
    this.syncDevicePicker();
  }

  /** The device picker: shown when the program runs on more than one device (GraphDocument.parallel). */
  private syncDevicePicker(): void {
    const p = this.doc?.parallel;
    const ranks = deviceRanks(p);
    if (this.rank !== null && !ranks.includes(this.rank)) this.rank = null;
    this.deviceLbl.classList.toggle('hidden', ranks.length === 0);
    const want = ['', ...ranks.map(String)].join(',');
    if ([...this.deviceSel.options].map((o) => o.value).join(',') !== want) {
      this.deviceSel.innerHTML = '<option value="">global</option>' +
        ranks.map((r) => `<option value="${r}">rank ${r}${rankStage(p, r) !== null ? ` (stage ${rankStage(p, r)})` : ''}</option>`).join('');
    }
    this.deviceSel.value = this.rank === null ? '' : String(this.rank);
    this.deviceSel.title = pickerTip(p);
    this.deviceSel.setAttribute('aria-label', 'Shapes: global or one device\'s');
  }

  /** Shows rank `rank`'s per-device shapes (null: the global ones) in every pane. */
  private setDevice(rank: number | null): Promise<void> {
    this.rank = rank;
    this.syncDevicePicker();
    const p = this.doc?.parallel;
    const jobs = [this.viewA.setDevice(this.rank, p)];
    if (this.viewB) jobs.push(this.viewB.setDevice(this.rank, p));
    return Promise.all(jobs).then(() => { this.renderLegend(); this.renderPanel(); });
  }

  // ---- messages ----------------------------------------------------------------------------

  private onConn(s: ConnectionState, info?: string): void {
    this.conn = s;
    const txt: Record<ConnectionState, string> = {
      snapshot: 'snapshot', connecting: 'connecting…', open: 'live', closed: 'reconnecting…', vscode: 'VS Code',
    };
    this.connEl.textContent = txt[s];
    this.connEl.className = 'conn ' + s;
    this.connEl.title = info ?? '';
  }

  private onMessage(m: ViewMessage): void {
    if (m.hello) {
      mark('hello');
      // A hello for another file (the VS Code panel follows the active editor): start afresh, so
      // the next full document is drawn and fitted as a first one.
      if (this.hello.file !== undefined && m.hello.file !== this.hello.file) this.restart();
      this.hello = m.hello;
      if (this.hello.focusCell && !this.urlCell) this.cellName = this.hello.focusCell;
      if (this.urlCell) this.cellName = this.urlCell;
    }
    if (m.update) this.onUpdate(m.update);
    if (m.nodes) this.onNodes(m.nodes);
    if (m.status) {
      this.status = { state: m.status.state ?? 'ok', message: m.status.message ?? '', diagnostics: m.status.diagnostics ?? [] };
      this.renderStatus();
      this.renderBanner();
    }
    if (m.details) {
      const d = m.details;
      const key = `${d.cell ?? ''}|${d.node ?? ''}`;
      this.detailsPending.delete(key);
      if (!d.error) this.details.set(key, d.kernels ?? []);
      this.renderPanel();
    }
    if (m.debug) this.onDebug(m.debug);
    if (m.comparison) this.onComparison(m.comparison);
    if (m.train) this.onTrain(m.train);
    if (m.drift) this.onDrift(m.drift);
    if (m.device) this.onDevice(m.device);
  }

  private onDevice(p: DeviceProgress): void {
    this.device.apply(p);
  }

  // ---- training: the live chart and the drift overlay ----------------------------------------

  private onTrain(p: TrainProgress): void {
    // A reset (a new run, or the whole history): the drift of the run before goes too (a view that
    // connects gets the drift again just after).
    if (this.train.apply(p) && this.drift) this.onDrift({});
  }

  private onDrift(d: PrecisionDrift): void {
    this.drift = driftIndex(d);
    this.train.setDrift(this.drift);
    this.viewA.setDrift(this.drift);
    this.viewB?.setDrift(this.drift);
    this.renderLegend();
    this.renderPanel();
  }

  private onTrainToggle(): void {
    // The graph pane changed height: the views' ResizeObserver repaints them.
    this.renderLegend();
  }

  // ---- the comparison with a fixed base ------------------------------------------------------

  private onComparison(c: Comparison): void {
    const before = this.comparison;
    this.comparison = isComparing(c) ? c : null;
    if (!this.comparison || before?.base?.spec !== this.comparison.base?.spec) this.cmpPos = -1;
    // The comparison of a document not here yet: drawn with it (its update follows at once).
    if (this.comparison?.cells && seqNumber(this.comparison.seq) > this.seq) return;
    void this.render();
  }

  /** Compare with `base` ("HEAD", a .py path; "" stops): for every view of the file, by the server. */
  requestCompare(base: string): boolean {
    const sent = this.transport.send({ compare: { base } });
    if (sent && base === '' && this.comparison) {
      this.comparison = null;
      void this.render();
    }
    return sent;
  }

  private toggleCompareMenu(open = this.compareMenu.classList.contains('hidden')): void {
    this.btnCompare.setAttribute('aria-expanded', String(open));
    if (!open) { this.compareMenu.classList.add('hidden'); return; }
    const c = this.comparison;
    const items = [`<button type="button" role="menuitem" data-cmp="HEAD" title="The file as of the last git commit, analysed with the same settings">Last commit (HEAD)</button>`];
    if (this.transport.kind === 'vscode') {
      items.push(`<button type="button" role="menuitem" data-cmp-pick="1" title="Choose a model file to compare with">Another file…</button>`);
    } else {
      const last = c?.base?.kind === 'file' ? c.base.spec ?? '' : '';
      items.push(`<form class="cmp-file" title="A model file, analysed with its own settings"><label>Another file ` +
        `<input name="path" class="mono" spellcheck="false" value="${h(last)}" placeholder="other.py (absolute, or relative to this file)" aria-label="Model file to compare with"></label>` +
        `<button type="submit">Compare</button></form>`);
    }
    if (isComparing(c)) items.push(`<button type="button" role="menuitem" data-cmp="" title="Back to the last edit's changes">Stop comparing with ${h(baseLabel(c))}</button>`);
    this.compareMenu.innerHTML = items.join('');
    const r = this.btnCompare.getBoundingClientRect();
    this.compareMenu.style.left = `${Math.max(4, Math.min(r.left, window.innerWidth - 340))}px`;
    this.compareMenu.style.top = `${r.bottom + 4}px`;
    this.compareMenu.classList.remove('hidden');
    this.compareMenu.querySelector<HTMLElement>('button')?.focus();
  }

  private onCompareMenuClick(e: MouseEvent): void {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>('button');
    if (!b || b.type === 'submit') return;
    if (b.dataset.cmpPick) this.transport.send({ comparePick: {} });
    else if (b.dataset.cmp !== undefined) this.requestCompare(b.dataset.cmp);
    this.toggleCompareMenu(false);
  }

  private onCompareMenuSubmit(e: SubmitEvent): void {
    e.preventDefault();
    const input = (e.target as HTMLFormElement).elements.namedItem('path') as HTMLInputElement | null;
    const path = input?.value.trim() ?? '';
    if (!path) { input?.focus(); return; }
    this.requestCompare(path);
    this.toggleCompareMenu(false);
  }

  private onCompareBannerClick(e: MouseEvent): void {
    const t = e.target as HTMLElement;
    if (t.closest('.cmp-close')) { this.requestCompare(''); return; }
    if (t.closest('.cmp-next')) { this.stepChange(1); return; }
    if (t.closest('.cmp-prev')) { this.stepChange(-1); return; }
    const a = t.closest<HTMLElement>('a.goto');
    if (a?.dataset.id) { e.preventDefault(); this.selectNode(a.dataset.id); }
  }

  /** The marked items of the active pane, in execution order. */
  private compareSteps(): string[] {
    const v = this.activeView();
    const d = v === this.viewB && this.split ? this.cmpDiffB : this.cmpDiffA;
    return d && v.graph ? changeSteps(d, v.graph) : [];
  }

  /** The next (1) or previous (-1) change: revealed, selected and shown in the panel. */
  stepChange(dir: number): string | null {
    const steps = this.compareSteps();
    if (steps.length === 0) return null;
    const n = steps.length;
    this.cmpPos = this.cmpPos < 0 ? (dir > 0 ? 0 : n - 1) : (this.cmpPos + dir + n) % n;
    const id = steps[this.cmpPos];
    const v = this.activeView();
    void v.reveal(id).then(() => v.select(id, 'click'));
    this.renderCompareBanner();
    return id;
  }

  private renderCompareBanner(): void {
    const c = this.comparison;
    if (!c) {
      this.compareBanner.className = 'compare-banner hidden';
      this.compareBanner.innerHTML = '';
      return;
    }
    const v = this.activeView();
    const g = v.graph;
    const steps = this.compareSteps();
    if (this.cmpPos >= steps.length) this.cmpPos = -1;
    this.compareBanner.innerHTML = bannerHtml(c, cellComparison(c, this.cellName), {
      cell: this.cellName, layer: g?.layer ?? this.layer, drawn: new Set(g ? g.byId.keys() : []),
      position: this.cmpPos, steps: steps.length,
    });
    this.compareBanner.className = 'compare-banner ' + (c.error ? 'error' : c.pending ? 'pending' : 'ok');
    this.compareBanner.setAttribute('role', 'status');
  }

  // ---- the debugger's focus ----------------------------------------------------------------

  private onDebug(f: DebugFocus): void {
    if (!isPaused(f)) {
      this.focus = null;
    } else {
      this.focus = f;
      this.focusSeq++;
      if (this.switchToFocusCell()) {
        void this.render({ reset: true });
        return;  // the render applies the focus
      }
    }
    this.applyDebugFocus();
  }

  /** A new focus on another Cell of the document than the one shown: show that Cell (once per focus). */
  private switchToFocusCell(): boolean {
    const f = this.focus;
    if (!f || !f.cell || this.focusCellSeq === this.focusSeq) return false;
    if (!this.doc?.cells?.some((c) => c.name === f.cell)) return false;
    this.focusCellSeq = this.focusSeq;
    if (f.cell === this.cellName) return false;
    this.cellName = f.cell;
    this.cellSel.value = f.cell;
    return true;
  }

  /** Whether the focus is on the Cell shown (or on a Cell the document does not name). */
  private focusOnCell(): boolean {
    const f = this.focus;
    if (!f) return false;
    return !f.cell || f.cell === this.cellName || !this.doc?.cells?.some((c) => c.name === f.cell);
  }

  /**
   * Highlights the focused node in each drawn layer; the first time a focus reaches a view (per
   * layer), expands the groups around it and pans it into view (the zoom stays). A lazy Cell loads
   * the scopes down to it first.
   */
  private applyDebugFocus(): void {
    const f = this.focus;
    const on = this.focusOnCell();
    const views = this.split && this.viewB ? [this.viewA, this.viewB] : [this.viewA];
    for (const v of views) {
      const targets = f && on && v.graph ? debugTargets(v.graph, f) : [];
      v.debugNodes = new Set(targets);
      v.invalidate();
      if (!targets.length || !v.graph) continue;
      const key = `${this.focusSeq}|${this.cellName}|${v.graph.layer}`;
      if (this.focusPanned.get(v) === key) continue;
      this.focusPanned.set(v, key);
      const t = targets[0];
      this.focusWork = this.focusWork.then(() => v.reveal(t, false)).then(() => { v.panIntoView(t); });
    }
    if (f && on) {
      const lz = this.lazy.get(this.cellName);
      if (lz) for (const scope of scopesToLoad(f, lz)) this.requestScope(this.cellName, lz, scope);
    }
    this.renderPanel();
    this.renderLegend();
  }

  private debugCard(): string {
    const f = this.focus;
    if (!f || !this.focusOnCell()) return '';
    const editor = !!this.hello.editor;
    return debugPanelHtml(f, (file, line) => sourceLink(file, { start: { line: line - 1, character: 0 }, end: { line: line - 1, character: 0 } }, editor));
  }

  private restart(): void {
    this.doc = null;
    this.prevDoc = null;
    this.seq = 0;
    this.updateCount = 0;
    this.lastGraph = null;
    this.details.clear();
    this.detailsPending.clear();
    this.lazy.clear();
    this.focus = null;  // the server sends the new file's focus, if any
    this.comparison = null;  // and its comparison, if any
    this.cmpPos = -1;
  }

  // ---- lazy Cells --------------------------------------------------------------------------

  /** A new full update: the skeletons of its lazy Cells; the scopes loaded before are asked again. */
  private setSkeletons(skeletons: CellSkeleton[]): void {
    const before = this.lazy;
    this.lazy = new Map();
    this.reopen = before.size > 0 ? new Set([...this.viewA.expanded, ...(this.viewB?.expanded ?? [])]) : null;
    for (const sk of skeletons) {
      const lz: LazyCell = { skeleton: sk, chunks: new Map([['', sk.root ?? {}]]), pending: new Set(), merged: null };
      this.lazy.set(sk.name, lz);
      const old = before.get(sk.name);
      if (!old) continue;
      const exists = new Set((sk.scopes ?? []).map((s) => s.scope ?? ''));
      const again = [...old.chunks.keys(), ...old.pending].filter((p) => p !== '' && exists.has(p));
      again.sort((a, b) => a.length - b.length);
      for (const p of new Set(again)) this.requestScope(sk.name, lz, p);
    }
  }

  private requestScope(cell: string, lz: LazyCell, scope: string): boolean {
    if (lz.chunks.has(scope) || lz.pending.has(scope)) return false;
    if (!this.transport.send({ nodes: { cell, scope } })) return false;
    lz.pending.add(scope);
    return true;
  }

  /** Expanded groups of a lazy Cell whose nodes are not loaded: ask for them (drawn "loading…"). */
  private loadExpanded(v: GraphView, expanded: ReadonlySet<string>): void {
    const lz = this.lazy.get(this.cellName);
    const g = v.graph;
    if (!lz || !g) return;
    for (const id of expanded) {
      if (!id.startsWith('g:') || id.includes('#')) continue;
      const scope = id.slice(2);
      const ph = g.byId.get(LAZY_PREFIX + scope);
      if (ph && this.requestScope(this.cellName, lz, scope)) ph.sub = 'loading…';
    }
  }

  private onNodes(n: ScopeNodes): void {
    const lz = this.lazy.get(n.cell ?? '');
    const scope = n.scope ?? '';
    if (!lz || seqNumber(n.seq) !== this.seq) return;
    lz.pending.delete(scope);
    if (n.error) { console.warn('cellscope: nodes of', scope, n.error); return; }
    lz.chunks.set(scope, n);
    lz.merged = null;
    if ((n.cell ?? '') === this.cellName) void this.render();
  }

  private lazyInput(name: string): LazyInput | undefined {
    return this.lazy.get(name);
  }

  private pendingScopes(): number {
    let n = 0;
    for (const lz of this.lazy.values()) n += lz.pending.size;
    return n;
  }

  private onUpdate(u: NonNullable<ViewMessage['update']>): void {
    const t0 = performance.now();
    const seq = seqNumber(u.seq);
    let next: GraphDocument | null = null;
    if (u.document) {
      mark('document');
      next = u.document;
      this.seq = seq;  // the skeletons' requests belong to this update
      this.setSkeletons(u.skeletons ?? []);
    } else if (u.delta) {
      if (!this.doc || seqNumber(u.delta.base) !== this.seq) {
        this.transport.resync();
        return;
      }
      next = applyDelta(this.doc, u.delta);
    }
    if (!next) return;
    this.prevDoc = this.doc;
    this.doc = next;
    this.seq = seq;
    this.updateCount++;
    this.details.clear();
    this.detailsPending.clear();
    if (u.focusCell && this.updateCount === 1 && !this.urlCell) this.cellName = u.focusCell;
    if (this.status.state === 'failed') this.status = { state: 'ok', message: '', diagnostics: [] };
    const cells = next.cells ?? [];
    if (!cells.some((c) => c.name === this.cellName)) {
      const byClass = cells.find((c) => c.className === this.cellName || c.name.startsWith(this.cellName + '('));
      this.cellName = byClass?.name ?? cells[0]?.name ?? '';
    }
    this.switchToFocusCell();
    this.cellSel.innerHTML = cells.map((c) => `<option value="${h(c.name)}">${h(c.name)}${c.compiled === false ? ' (not compiled)' : ''}</option>`).join('');
    this.cellSel.value = this.cellName;
    this.cellSel.style.display = cells.length > 1 ? '' : 'none';
    if (this.updateCount === 1) {
      const cell = this.currentCell();
      const want = new URLSearchParams(location.search).get('layer') as Layer | null;
      if (want && LAYERS.includes(want)) this.layer = want;
      if (this.layer !== 'semantic' && !(this.layer === 'optimized' ? cell?.optimized : cell?.hardware)) this.layer = 'semantic';
    }
    // A different Cell than the one drawn (a new focus Cell from the server): fit it as a first one.
    const cellChanged = !!this.lastGraph && this.lastGraph.cell.name !== this.cellName;
    void this.render({ reset: this.updateCount === 1 || cellChanged, update: true }).then(() => {
      this.lastUpdateMs = performance.now() - t0;
      this.renderStatus(u.analysisMs);
    });
    this.renderBanner();
  }

  currentCell(): Cell | undefined {
    const header = this.doc?.cells?.find((c) => c.name === this.cellName);
    const lz = this.lazy.get(this.cellName);
    if (!header || !lz) return header;
    if (!lz.merged) lz.merged = mergeLazy(header, lz);
    return lz.merged;
  }

  private prevCell(): Cell | undefined {
    return this.prevDoc?.cells?.find((c) => c.name === this.cellName);
  }

  // ---- rendering ---------------------------------------------------------------------------

  private layerB(): Layer { return this.layer === 'semantic' ? 'optimized' : this.layer; }

  /**
   * Draws the Cell shown. `refit`: another layer is shown, so a camera still fitted (not moved
   * since) is fitted to it; `update`: a new document (what it added or changed is brought into view).
   */
  private async render(opts: { reset?: boolean; refit?: boolean; update?: boolean } = {}): Promise<void> {
    const cell = this.currentCell();
    const my = ++this.renderSeq;
    this.syncButtons();
    // The page title and the error banner follow the Cell shown.
    const base = (this.doc?.file ?? '').split(/[\\/]/).pop() ?? '';
    document.title = cell ? `${cell.name} — ${base} · Cellscope` : 'Cellscope';
    this.renderBanner();
    if (!cell) {
      this.empty.textContent = this.doc ? 'This document has no Cell.' : 'Waiting for the graph…';
      this.empty.classList.remove('hidden');
      return;
    }
    const la: Layer = this.split ? 'semantic' : this.layer;
    const tb = performance.now();
    const lazy = this.lazyInput(cell.name);
    const cmp = this.comparison;
    const cc = cellComparison(cmp, cell.name);
    const ga = buildViewGraph(cell, la, undefined, lazy, cmp ? ghostsFor(cmp, cc, la, !!lazy) : undefined);
    this.timings.buildMs = performance.now() - tb;
    if (ga.nodes.length > 0) mark('built');
    if (lazy && this.reopen) {
      for (const id of this.reopen) if (ga.groups.has(id)) this.viewA.expanded.add(id);
      if (lazy.pending.size === 0) this.reopen = null;
    }

    // Lazy Cells: the previous document's nodes are not all at hand, so no comparison.
    const prev = lazy ? undefined : this.prevCell();
    const td = performance.now();
    const before = prev && this.lastGraph && this.lastGraph.cell === prev && this.lastGraph.layer === la
      ? this.lastGraph.graph : prev ? buildViewGraph(prev, la) : null;
    this.diff = before ? diffGraphs(before, ga) : null;
    this.cmpDiffA = cc ? compareDiff(cc, ga) : null;
    this.cmpDiffB = null;
    this.lastGraph = { cell, layer: la, graph: ga };
    this.timings.diffMs = performance.now() - td;
    const tl = performance.now();
    this.empty.classList.toggle('hidden', ga.nodes.length > 0);
    if (ga.nodes.length === 0) this.empty.textContent = cell.compiled === false ? 'This Cell did not compile: see the diagnostics.' : 'Empty graph.';
    this.viewA.setMetric(this.split ? 'none' : this.metric);
    this.applyDiff();
    this.titleA.textContent = this.split ? 'Semantic' : '';
    this.titleA.classList.toggle('hidden', !this.split);
    this.renderNote(this.noteA, cell, la);
    this.renderNote(this.noteB, cell, this.layerB());
    const changed = opts.update && !opts.reset && this.diff ? [...this.diff.added, ...this.diff.changed] : undefined;
    this.viewA.device = this.rank;
    this.viewA.parallel = this.doc?.parallel;
    const jobs: Promise<void>[] = [this.viewA.setGraph(ga, { reset: opts.reset, refit: opts.refit, changed })];
    if (this.split && this.viewB) {
      this.viewB.device = this.rank;
      this.viewB.parallel = this.doc?.parallel;
      const gb = buildViewGraph(cell, this.layerB(), undefined, lazy, cmp ? ghostsFor(cmp, cc, this.layerB(), !!lazy) : undefined);
      this.cmpDiffB = cc ? compareDiff(cc, gb) : null;
      this.viewB.diff = this.cmpDiffB;
      this.viewB.setMetric(this.metric);
      this.titleB.textContent = LAYER_LABEL[this.layerB()];
      jobs.push(this.viewB.setGraph(gb, { reset: opts.reset, refit: opts.refit }));
    }
    await Promise.all(jobs);
    this.timings.layoutMs = performance.now() - tl;
    if (my !== this.renderSeq) return;
    this.search.refresh();   // the query on the new graph
    this.applyDebugFocus();  // also renders the panel and the legend
    this.renderMem();
    this.renderTimeline();
    this.renderCompareBanner();
    this.syncButtons();
  }

  /** A pane's note on where the graph stops: the layer's state (layerState), linking to the failure. */
  private renderNote(box: HTMLElement, cell: Cell, layer: Layer): void {
    const st = layerState(cell, layer);
    box.classList.toggle('hidden', st.kind === 'complete');
    if (st.kind === 'complete' || !st.failure) { box.innerHTML = ''; return; }
    box.innerHTML = `${ERROR_ICON}<span class="nt">${h(st.text)}</span> <a href="#" class="goto" data-id="${h(FAILED_PREFIX + st.failure.id)}">show</a>`;
    box.title = st.text;
  }

  private onNoteClick(e: MouseEvent, v: GraphView): void {
    const a = (e.target as HTMLElement).closest<HTMLElement>('a.goto');
    if (!a?.dataset.id) return;
    e.preventDefault();
    const id = a.dataset.id;
    void v.reveal(id).then(() => v.select(id, 'click'));
  }

  private applyDiff(): void {
    this.viewA.diff = this.cmpDiffA ?? (this.showDiff ? this.diff : null);
    this.viewA.invalidate();
    this.renderLegend();
    this.syncButtons();
  }

  private setLayer(l: Layer): Promise<void> {
    if (l === this.layer) return Promise.resolve();
    const sel = this.activeView().selection;
    const wasLayer = this.split ? this.layerB() : this.layer;
    this.layer = l;
    if (l === 'hardware' && this.metric === 'none') this.metric = 'cycles';
    if (l !== 'hardware' && !METRICS.find((m) => m.id === this.metric)?.layers.includes(l)) this.metric = 'none';
    return this.render({ refit: true }).then(() => {
      // Keep the selection across layers through the origins mapping.
      if (!sel) return;
      const v = this.activeView();
      const g = v.graph;
      if (!g) return;
      let target: string | undefined = g.byId.has(sel) ? sel : undefined;
      if (!target && wasLayer !== 'semantic' && l === 'semantic') {
        const old = this.currentCell()?.optimized?.nodes?.find((n) => n.id === sel);
        target = old?.origins?.[0];
      } else if (!target) target = g.semanticToOptimized.get(sel)?.[0];
      if (target) { const t = target; return v.reveal(t).then(() => v.select(t, 'api')); }
      return undefined;
    });
  }

  private setMetric(m: MetricId): void {
    this.metric = m;
    this.metricSel.value = m;
    (this.split && this.viewB ? this.viewB : this.viewA).setMetric(m);
    this.renderLegend();
  }

  /** Side by side, each pane at least this wide; a narrower view puts one above the other. */
  private static readonly MIN_SPLIT_PANE = 340;

  private layoutSplit(): void {
    const stacked = this.split && this.views.clientWidth < 2 * App.MIN_SPLIT_PANE;
    this.views.classList.toggle('stacked', stacked);
  }

  private setSplit(on: boolean): void {
    this.split = on;
    this.paneB.classList.toggle('hidden', !on);
    this.views.classList.toggle('split', on);
    this.layoutSplit();
    if (on && !this.viewB) {
      this.viewB = new GraphView(this.paneB, this.engine, {
        onSelect: (id, from) => this.onSelect('B', id, from),
        onLayout: () => this.onLayout(),
        onExpand: (ex) => { if (this.viewB) this.loadExpanded(this.viewB, ex); },
      });
      this.paneB.append(this.titleB, this.noteB, this.legendB.el);
      this.viewB.setDrift(this.drift);
      this.minimapB = this.setupView(this.viewB, this.paneB);
      this.noteB.addEventListener('click', (e) => { if (this.viewB) this.onNoteClick(e, this.viewB); });
    }
    if (!on) this.active = 'A';
    void this.render({ reset: true });
  }

  private setMem(on: boolean): void {
    this.showMem = on;
    this.memHost.classList.toggle('hidden', !on);
    this.syncButtons();
    this.renderMem();
  }

  private renderMem(): void {
    if (!this.showMem) return;
    const sel = this.selectedOptimized();
    this.mem.set(buildTimeline(this.currentCell()), sel);
  }

  private selectedOptimized(): string | null {
    const v = this.activeView();
    if (v.graph && v.graph.layer !== 'semantic') return v.selection;
    return null;
  }

  private renderLegend(): void {
    const cell = this.currentCell();
    this.legendA.setPrefs(this.legendPrefs);
    this.legendB.setPrefs(this.legendPrefs);
    this.legendA.render(this.viewA.graph ? this.viewA : null, cell);
    this.legendB.render(this.viewB?.graph && this.split ? this.viewB : null, cell);
  }

  // Whether a diagnostic is in a Cell's code: its class, or a line one of its nodes comes from.
  private static claims(c: Cell, d: Diagnostic): boolean {
    const line = d.range?.start.line;
    if (line === undefined) return false;
    const inRange = (file: string | undefined, r: Range | undefined) =>
      !!r && (file ?? '') === (d.file ?? '') && line >= r.start.line && line <= r.end.line;
    if (inRange(c.file, c.range)) return true;
    return (c.nodes ?? []).some((n) => inRange(n.file ?? c.file, n.range));
  }

  private renderBanner(): void {
    const st = this.status;
    const all = (this.doc?.diagnostics ?? []).filter((d) => d.severity === 'error');
    // Errors of the Cell shown, and those no Cell claims (imports, module code); errors only in
    // other Cells' code are counted, not listed.
    const cell = this.currentCell();
    const cells = this.doc?.cells ?? [];
    const docErrors = cell ? all.filter((d) => App.claims(cell, d) || !cells.some((c) => App.claims(c, d))) : all;
    const elsewhere = all.length - docErrors.length;
    const more = elsewhere ? ` (and ${elsewhere} in other Cells)` : '';
    if (st.state === 'failed') {
      const list = st.diagnostics.map((d) => this.diagHtml(d)).join('');
      this.banner.innerHTML = `<div class="bt"><b>Analysis failed</b> — showing the last good graph${st.message ? ': ' + h(st.message) : ''}</div><ul>${list}</ul>`;
      this.banner.className = 'banner failed';
    } else if (docErrors.length) {
      this.banner.innerHTML = `<div class="bt"><b>${docErrors.length} error${docErrors.length > 1 ? 's' : ''}</b> in ${h(cell?.name ?? 'the model')}${h(more)}</div><ul>${docErrors.slice(0, 20).map((d) => this.diagHtml(d)).join('')}</ul>`;
      this.banner.className = 'banner warn';
    } else {
      this.banner.className = 'banner hidden';
      this.banner.innerHTML = '';
    }
  }

  private diagHtml(d: Diagnostic): string {
    const loc = rangeText(d.file, d.range);
    const link = this.hello.editor && d.file
      ? `<a href="#" class="reveal" data-reveal="${h(JSON.stringify({ file: d.file, range: d.range }))}">${h(loc)}</a>`
      : `<span class="src">${h(loc)}</span>`;
    return `<li class="diag ${h(d.severity ?? '')}">${link} <span class="sev">${h(d.severity ?? '')}</span> ${h(d.message ?? '')}${d.code ? ` <span class="muted">[${h(d.code)}]</span>` : ''}</li>`;
  }

  private renderStatus(analysisMs?: number): void {
    const cell = this.currentCell();
    const parts: string[] = [];
    if (this.doc) {
      parts.push(h(this.doc.file ?? ''));
      if (cell) {
        const v = this.activeView();
        const c = v.graph ? countVisible(v.graph, v.expanded) : { nodes: 0, groups: 0 };
        parts.push(`${v.graph?.nodes.length ?? 0} nodes · ${c.nodes} drawn · ${c.groups} collapsed groups`);
      }
      if (this.doc.target) parts.push(`target ${h(this.doc.target)}`);
      parts.push(`update #${this.seq}`);
      if (analysisMs) parts.push(`analysis ${fmtNum(analysisMs)} ms`);
      if (this.lastUpdateMs) parts.push(`view ${this.lastUpdateMs.toFixed(0)} ms`);
    }
    if (this.status.state === 'analysing') parts.push('<span class="analysing">analysing…</span>');
    this.statusBar.innerHTML = parts.join('<span class="sep">│</span>');
    this.statusBar.prepend(this.connEl);
  }

  private onLayout(): void {
    this.renderStatus();
    this.renderLegend();  // the collapsed groups' scale follows what is drawn
  }

  // ---- selection and panel -----------------------------------------------------------------

  private onSelect(which: 'A' | 'B', id: string | null, from: 'click' | 'key' | 'api'): void {
    const paneChanged = this.active !== which;
    this.active = which;
    if (paneChanged) this.search.refresh();  // the search follows the active pane
    const v = which === 'A' ? this.viewA : this.viewB!;
    const other = which === 'A' ? this.viewB : this.viewA;
    v.secondary.clear();
    // Memory reuse: highlight the tensors sharing a buffer with the selection.
    const mates = this.bufferMates(v, id);
    for (const t of mates) v.secondary.add(t.slice(0, t.lastIndexOf(':')));
    if (id) v.secondary.delete(id);
    if (this.split && other && other.graph && from !== 'api') {
      other.secondary.clear();
      const og = other.graph;
      let mapped: string[] = [];
      if (id?.startsWith(FAILED_PREFIX)) mapped = og.byId.has(id) ? [id] : [];  // drawn in every layer
      else if (v.graph?.layer === 'semantic') mapped = og.semanticToOptimized.get(id ?? '') ?? [];
      else if (id) mapped = (v.graph?.byId.get(id)?.optimized?.origins ?? []).filter((o) => og.byId.has(o));
      for (const m of mapped) other.secondary.add(m);
      other.selection = null;
      if (mapped.length) void other.reveal(mapped[0]);
      other.invalidate();
    }
    this.requestDetails(v, id);
    this.renderPanel();
    this.renderMem();
    this.renderTimeline();
  }

  // ---- the core timeline -------------------------------------------------------------------

  /** The timeline follows the Cell shown and the active pane's selection. */
  private renderTimeline(): void {
    const v = this.activeView();
    this.tl.update(this.currentCell(), v.selection, v.graph?.layer ?? this.layer);
  }

  /** A bar clicked on the timeline: its node selected in the graph (the pane drawing kernels when side by side). */
  private pickKernel(m: TimelineModel, index: number): void {
    const v = this.split && this.viewB?.graph && this.viewB.graph.layer !== 'semantic' ? this.viewB : this.viewA;
    const id = graphNodeForKernel(m, index, v.graph?.layer ?? 'semantic');
    if (id && v.graph?.byId.has(id)) void v.reveal(id).then(() => v.select(id, 'click'));
    else this.renderTimeline();
  }

  /** Double-click / Enter on a bar: the editor reveals its source line (as the panel's link does). */
  private revealKernel(m: TimelineModel, index: number): void {
    const src = kernelSource(m, index);
    if (src && this.hello.editor) this.transport.send({ reveal: { file: src.file, range: src.range ?? { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } } } });
  }

  private bufferMates(v: GraphView, id: string | null): string[] {
    if (!id || !v.graph || v.graph.layer === 'semantic') return [];
    const n = v.graph.byId.get(id)?.optimized;
    const cell = this.currentCell();
    return n && cell ? bufferMates(cell, n) : [];
  }

  private requestDetails(v: GraphView, id: string | null): void {
    if (!id || v.graph?.layer !== 'hardware' || this.transport.kind === 'snapshot') return;
    const n = v.graph.byId.get(id)?.optimized;
    const ks = n?.hardware ?? [];
    if (ks.length === 0 || ks.some((k) => (k.tiling?.length ?? 0) > 0 || (k.schedule?.length ?? 0) > 0)) return;
    const key = `${this.cellName}|${id}`;
    if (this.details.has(key) || this.detailsPending.has(key)) return;
    if (this.transport.send({ details: { cell: this.cellName, node: id } })) this.detailsPending.add(key);
  }

  private renderPanel(): void {
    const cell = this.currentCell();
    const v = this.activeView();
    const id = v.selection;
    const body = this.panelBody;
    if (!cell) { body.innerHTML = ''; return; }
    // What a re-render must keep: the scroll, a focused tab, what is being typed in the input box.
    const scroll = this.panel.scrollTop;
    const active = document.activeElement as HTMLElement | null;
    const focusTab = active && body.contains(active) && active.getAttribute('role') === 'tab';
    const typing = active instanceof HTMLInputElement && active.name === 'shapes' && body.contains(active)
      ? { value: active.value, start: active.selectionStart, end: active.selectionEnd } : null;
    const n = id ? v.graph?.byId.get(id) : undefined;
    const f = this.focus && this.focusOnCell() ? this.focus : null;
    const card = this.debugCard();
    const multi = this.search.multi();
    let html: string;
    if (!n || !v.graph) {
      if (multi && v.graph) {
        const nodes = multi.ids.map((x) => v.graph!.byId.get(x)).filter((x): x is NonNullable<typeof x> => !!x);
        html = renderMatches(multi.query, matchRows(nodes), cell, v.graph.layer);
      } else {
        html = renderCellSummary(cell, this.split ? this.layerB() : this.layer, {
          tab: this.panelTab, debugCard: card, editor: !!this.hello.editor, partialNodes: this.lazy.has(this.cellName),
        });
      }
    } else {
      const key = `${this.cellName}|${n.id}`;
      const pausedHere = v.debugNodes.has(n.id);
      html = renderPanel({
        cell, layer: v.graph.layer, node: n, editor: !!this.hello.editor,
        kernels: this.details.get(key) ?? null, detailsPending: this.detailsPending.has(key),
        semanticById: new Map((cell.nodes ?? []).map((x) => [x.id, x] as const)),
        bufferMates: this.bufferMates(v, n.id),
        tab: this.panelTab, consumers: v.graph.succ.get(n.id) ?? [], debugCard: card, pausedHere,
      });
      if (multi) {
        html = `<a href="#" class="back-matches">‹ ${multi.ids.length} selected: <span class="mono">${h(multi.query)}</span></a>` + html;
      }
    }
    const strip = f ? debugStrip(f, (file, line) => sourceLink(file, { start: { line: line - 1, character: 0 }, end: { line: line - 1, character: 0 } }, !!this.hello.editor),
      !!n && v.debugNodes.has(n.id)) : '';
    const removed = this.showDiff && !this.cmpDiffA && this.diff && this.diff.removed.length && v === this.viewA
      ? `<details class="sec" open><summary>Removed by the last edit</summary><ul class="origins">${this.diff.removed.slice(0, 50).map((r) => `<li class="removed">${h(r)}</li>`).join('')}</ul></details>` : '';
    // The comparison's before → after of the selected node (compare.ts).
    const cmp = n && v.graph ? compareDetailsHtml(this.comparison, cellComparison(this.comparison, this.cellName), v.graph.layer, n.id) : '';
    const drift = n ? driftCardHtml(n, this.drift) : '';
    body.innerHTML = strip + cmp + drift + html + removed;
    this.panel.scrollTop = scroll;
    if (focusTab) body.querySelector<HTMLElement>('[role="tab"][aria-selected="true"]')?.focus();
    if (typing) {
      const box = body.querySelector<HTMLInputElement>('form.inputs-form input[name="shapes"]');
      if (box) { box.value = typing.value; box.focus(); box.setSelectionRange(typing.start, typing.end); }
    }
  }

  /** The panel's text: every tab's (a hidden tab panel is laid out off screen for innerText), or only what is shown. */
  private panelText(which?: string): string {
    if (which === 'shown') return this.panelBody.innerText;
    const clone = this.panelBody.cloneNode(true) as HTMLElement;
    for (const p of clone.querySelectorAll<HTMLElement>('[role="tabpanel"]')) p.hidden = false;
    for (const d of clone.querySelectorAll<HTMLDetailsElement>('details')) d.open = true;
    clone.style.cssText = `position:fixed;left:-20000px;top:0;width:${this.panel.clientWidth || 360}px;visibility:visible`;
    this.panel.appendChild(clone);
    const text = clone.innerText;
    clone.remove();
    return text;
  }

  private searchContext(): SearchContext {
    const cell = this.currentCell();
    if (!cell) return searchContext(undefined);
    if (this.searchCtx?.cell !== cell) this.searchCtx = { cell, ctx: searchContext(cell) };
    return this.searchCtx.ctx;
  }

  private searchCoverage(): string {
    const lz = this.lazy.get(this.cellName);
    if (!lz) return '';
    const loaded = this.currentCell()?.nodes?.length ?? 0;
    const total = lz.skeleton.nodes ?? 0;
    return loaded < total ? `Searched the ${loaded} of ${total} nodes loaded: open a group to load its nodes.` : '';
  }

  /** The input box: its shapes go to the server, which answers with a new document (or a
   * failed status naming the spec it could not read). */
  private onInputsSubmit(e: SubmitEvent): void {
    const form = (e.target as HTMLElement).closest<HTMLFormElement>('form.inputs-form');
    if (!form) return;
    e.preventDefault();
    this.transport.send({ inputs: { inputs: inputBoxSpecs(form) } });
  }

  private onPanelClick(e: MouseEvent): void {
    const copy = (e.target as HTMLElement).closest<HTMLElement>('button.copy');
    if (copy) {
      e.preventDefault();
      const text = copy.dataset.copy ?? this.copyJson(copy.dataset.copyJson ?? '');
      void copyWithFeedback(copy, text, this.copyStatus);
      return;
    }
    if ((e.target as HTMLElement).closest('button.clear-multi')) { this.search.clearMulti(); return; }
    const button = (e.target as HTMLElement).closest<HTMLElement>('button.inputs-reset, button.inputs-save');
    if (button) {
      const form = button.closest<HTMLFormElement>('form.inputs-form');
      if (button.classList.contains('inputs-reset')) this.transport.send({ inputs: { inputs: [] } });
      else if (form) this.transport.send({ saveInputs: { inputs: inputBoxSpecs(form) } });
      return;
    }
    const t = (e.target as HTMLElement).closest<HTMLElement>('a');
    if (!t) {
      // A row of the multi-selection's list: go to its node.
      const tr = (e.target as HTMLElement).closest<HTMLElement>('tr.match');
      if (tr?.dataset.id) this.selectNode(tr.dataset.id);
      return;
    }
    e.preventDefault();
    if (t.classList.contains('back-matches')) { this.activeView().select(null, 'click'); return; }
    if (t.classList.contains('show-tab') && t.dataset.tab) {
      this.panelTab = t.dataset.tab;
      App.store('cellscope-panel-tab', t.dataset.tab);
      showTab(this.panelBody, t.dataset.tab);
      this.panelBody.querySelector<HTMLElement>(`[role="tab"][data-tab="${t.dataset.tab}"]`)?.focus();
      return;
    }
    if (t.classList.contains('goto-focus') && t.dataset.id) {
      const v = this.activeView();
      const target = v.graph && this.focus ? debugTargets(v.graph, this.focus)[0] : undefined;
      if (target) void v.reveal(target).then(() => v.select(target, 'click'));
      return;
    }
    if (t.classList.contains('goto-layer') && t.dataset.layer && t.dataset.id) {
      const id = t.dataset.id;
      const layer = t.dataset.layer as Layer;
      if (this.split) { this.selectNode(id); return; }
      void this.setLayer(layer).then(() => {
        const v = this.activeView();
        if (v.graph?.byId.has(id)) void v.reveal(id).then(() => v.select(id, 'click'));
      });
      return;
    }
    if (t.classList.contains('reveal') && t.dataset.reveal) {
      const req = JSON.parse(t.dataset.reveal) as NonNullable<ViewRequest['reveal']>;
      this.transport.send({ reveal: req });
      return;
    }
    const id = t.dataset.id;
    if (!id) return;
    if (t.classList.contains('goto-sem')) {
      if (this.split) { void this.viewA.reveal(id).then(() => this.viewA.select(id, 'click')); return; }
      void this.setLayer('semantic').then(() => this.viewA.reveal(id)).then(() => this.viewA.select(id, 'api'));
      return;
    }
    this.selectNode(id);
  }

  /** The JSON a "Copy as JSON" button copies: the node shown, or the Cell's summary. */
  private copyJson(what: string): string {
    const v = this.activeView();
    const n = v.selection ? v.graph?.byId.get(v.selection) : undefined;
    if (what === 'node' && n && v.graph) {
      return nodeJson({ node: n, layer: v.graph.layer, kernels: this.details.get(`${this.cellName}|${n.id}`) ?? null });
    }
    const cell = this.currentCell();
    return cell ? cellJson(cell) : '';
  }

  private selectNode(id: string): void {
    const v = this.viewB && this.split && this.viewB.graph?.byId.has(id) && this.viewB.graph.layer !== 'semantic' ? this.viewB : this.viewA;
    void v.reveal(id).then(() => v.select(id, 'click'));
  }

  // ---- search and keys ---------------------------------------------------------------------

  private bindKeys(): void {
    window.addEventListener('keydown', (e) => {
      const t = e.target as HTMLElement;
      if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA')) return;
      if ((e.key === 'Enter' || e.key === ' ') && t?.closest?.('button, a, summary')) return;  // the control's own
      if (e.key.startsWith('Arrow') && t?.closest?.('.panel')) return;  // scrolls the panel, not the graph
      const v = this.activeView();
      if ((e.key === 'f' && (e.ctrlKey || e.metaKey)) || e.key === '/') { e.preventDefault(); this.search.focus(); return; }
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      switch (e.key) {
        case '+': case '=': v.zoom(1.25); break;
        case '-': case '_': v.zoom(0.8); break;
        case '0': v.fit(); break;
        case 'Home': v.jump('start'); break;
        case 'End': v.jump('end'); break;
        case 'ArrowDown': v.step('down'); break;
        case 'ArrowUp': v.step('up'); break;
        case 'ArrowLeft': v.step('left'); break;
        case 'ArrowRight': v.step('right'); break;
        case 'Escape':
          // Step by step: the selection, then the multi-selection.
          this.search.close();
          if (v.selection !== null || !this.search.multi()) v.select(null, 'key');
          else this.search.clearMulti();
          break;
        case 'Enter': if (v.selection) v.centerOn(v.selection); break;
        default: return;
      }
      e.preventDefault();
    });
    document.addEventListener('click', (e) => {
      const t = e.target as HTMLElement;
      if (!t.closest('.compare-menu') && t.closest('button') !== this.btnCompare) this.toggleCompareMenu(false);
    });
  }

  // ---- test hook ---------------------------------------------------------------------------

  hook(): Record<string, unknown> {
    const app = this;
    const viewOf = (which?: string): GraphView => (which === 'B' && app.viewB ? app.viewB : app.viewA);
    return {
      state: () => {
        const v = app.activeView();
        const s = v.scene;
        return { nodesDrawn: s ? s.nodesDrawn + s.groupsDrawn : 0, layer: v.graph?.layer ?? app.layer, selection: v.selection };
      },
      details: () => {
        const v = app.activeView();
        const c = v.graph ? countVisible(v.graph, v.expanded) : { nodes: 0, groups: 0 };
        return {
          file: app.doc?.file ?? null, cell: app.cellName, layer: app.layer, split: app.split, metric: app.metric,
          nodes: v.graph?.nodes.length ?? 0, leafNodesDrawn: c.nodes, groupsCollapsed: c.groups,
          expanded: [...v.expanded], scale: v.scale, connection: app.conn, status: app.status.state,
          diagnostics: app.status.diagnostics.length, diff: app.diff ? { added: [...app.diff.added], changed: [...app.diff.changed], removed: app.diff.removed } : null,
          highlighted: [...v.highlight], secondary: [...v.secondary], transport: app.transport.kind,
          layoutError: v.layoutError, debug: [...v.debugNodes],
        };
      },
      nodeScreenPosition: (id: string, which?: string) => viewOf(which).screenPosition(id),
      groups: () => {
        const v = app.activeView();
        if (!v.graph) return [];
        return [...v.graph.groups.values()].filter((g) => g.parent !== null).map((g) => ({
          id: g.id, label: g.label, parent: g.parent, children: g.children.length, leaves: g.leafCount,
          artificial: g.artificial, expanded: v.expanded.has(g.id), drawn: !!v.scene?.byId.get(g.id),
        }));
      },
      lastUpdateSeq: () => app.seq,
      // The overview, the layout direction, Fit and the pane's overlays.
      minimap: (which?: string) => (which === 'B' ? app.minimapB : app.minimapA)?.info() ?? null,
      setMinimap: (on: boolean) => app.setMinimap(on),
      direction: () => app.direction,
      setDirection: (d: Direction) => app.setDirection(d),
      jump: (where: 'start' | 'end') => app.activeView().jump(where),
      camera: (which?: string) => ({ ...viewOf(which).camera(), ...viewOf(which).paneSize() }),
      insets: (which?: string) => viewOf(which).insets(),
      // Items of the drawing: their ids and boxes in client coordinates (the last along the layout's axis last).
      items: (which?: string) => {
        const v = viewOf(which);
        const r = v.canvas.getBoundingClientRect();
        return (v.scene?.items ?? []).filter((it) => it.type !== 'frame').map((it) => ({
          id: it.id, type: it.type, x: r.left + it.x * v.scale + v.tx, y: r.top + it.y * v.scale + v.ty, w: it.w * v.scale, h: it.h * v.scale,
        }));
      },
      // The share of the canvas's sampled pixels that differ from the background (0: blank).
      ink: (which?: string) => {
        const v = viewOf(which);
        const ctx = v.canvas.getContext('2d');
        if (!ctx || v.canvas.width < 2) return 0;
        const d = ctx.getImageData(0, 0, v.canvas.width, v.canvas.height).data;
        const bg = [d[0], d[1], d[2]];
        let n = 0, k = 0;
        for (let i = 0; i < d.length; i += 4 * 97) { k++; if (Math.abs(d[i] - bg[0]) + Math.abs(d[i + 1] - bg[1]) + Math.abs(d[i + 2] - bg[2]) > 24) n++; }
        return k ? n / k : 0;
      },
      // Start-up milestones as epoch ms (startup.ts): navigation, script, transport, hello,
      // document, built, laidOut, firstPaint, firstFrame.
      milestones: () => milestones(),
      timings: () => ({ ...app.timings, snapshotParseMs, updateMs: app.lastUpdateMs, layoutJobs: app.engine.jobsRun, sinceNavigationMs: performance.now() }),
      lastUpdateMs: () => app.lastUpdateMs,
      lastPaintMs: () => app.activeView().lastPaintMs,
      lastLayoutMs: () => app.engine.lastLayoutMs,
      frames: () => app.activeView().frames,
      // Also waits for the nodes of expanded lazy groups to arrive and be drawn.
      idle: async () => {
        for (;;) {
          while (app.pendingScopes() > 0) await new Promise((r) => setTimeout(r, 20));
          const work = app.focusWork;
          await Promise.all([app.viewA.idle(), app.viewB?.idle(), work]);
          // A render finishing now may apply the debug focus (more work): wait for that too.
          await new Promise((r) => setTimeout(r, 0));
          if (app.pendingScopes() === 0 && work === app.focusWork) {
            await Promise.all([app.viewA.idle(), app.viewB?.idle()]);
            return true;
          }
        }
      },
      // The debugger's focus: what the view holds, and what each drawn view highlights for it.
      debugFocus: () => ({
        focus: app.focus, cell: app.cellName,
        highlighted: [...app.viewA.debugNodes], highlightedB: app.split && app.viewB ? [...app.viewB.debugNodes] : [],
        panel: app.panel.querySelector('.debug-card')?.textContent ?? '',
      }),
      // Semantic nodes the view holds for the current Cell (all of them unless the Cell is lazy).
      loadedNodes: () => app.currentCell()?.nodes?.length ?? 0,
      lazy: () => {
        const lz = app.lazy.get(app.cellName);
        return lz ? { loaded: [...lz.chunks.keys()], pending: [...lz.pending], nodes: lz.skeleton.nodes ?? 0 } : null;
      },
      // The panel's text, every tab's ('shown': only what is on screen); its tabs; the search box.
      panelText: (which?: string) => app.panelText(which),
      panelTabs: () => ({
        chosen: app.panelTab,
        tabs: [...app.panelBody.querySelectorAll<HTMLElement>('[role="tab"]')].map((t) => ({
          id: t.dataset.tab, label: t.textContent, selected: t.getAttribute('aria-selected') === 'true' })),
      }),
      setPanelTab: (id: string) => { app.panelTab = id; App.store('cellscope-panel-tab', id); showTab(app.panelBody, id); },
      searchState: () => app.search.state(),
      search: (q: string) => { app.search.input.value = q; app.search.input.dispatchEvent(new Event('input')); return app.search.state(); },
      searchStep: (dir: 1 | -1) => { app.search.step(dir); return app.search.state(); },
      selectAllMatches: () => { app.search.selectAll(); return app.search.state(); },
      // The edges drawn (between visible items) and an item's box in client coordinates.
      edges: (which?: string) => (viewOf(which).scene?.edges ?? []).map((e) => ({ src: e.src, tgt: e.tgt, label: e.label })),
      nodeRect: (id: string, which?: string) => {
        const v = viewOf(which);
        const it = v.scene?.byId.get(id);
        if (!it) return null;
        const r = v.canvas.getBoundingClientRect();
        return { x: r.left + it.x * v.scale + v.tx, y: r.top + it.y * v.scale + v.ty, w: it.w * v.scale, h: it.h * v.scale, scale: v.scale, kind: it.node?.kind ?? it.type };
      },
      // Edge labels as placed (drawn from LABEL_MIN_SCALE on) and the group header bands, in client
      // coordinates: {src, tgt, text, x, y, w, h, drawn}; {id, x, y, w, h}. `labelled`: edges with a label.
      edgeLabels: (which?: string) => {
        const v = viewOf(which);
        const r = v.canvas.getBoundingClientRect();
        const es = v.scene?.edges ?? [];
        const drawn = v.scale >= LABEL_MIN_SCALE;
        return {
          labelled: es.filter((e) => labelLines(e).length > 0).length,
          labels: v.edgeLabels().map((l) => ({
            src: es[l.edge].src, tgt: es[l.edge].tgt, text: l.lines.join('\n'), drawn,
            x: r.left + l.box.x * v.scale + v.tx, y: r.top + l.box.y * v.scale + v.ty, w: l.box.w * v.scale, h: l.box.h * v.scale,
          })),
        };
      },
      headerBoxes: (which?: string) => {
        const v = viewOf(which);
        const r = v.canvas.getBoundingClientRect();
        return v.headerBoxes().map(({ id, box: b }) => ({ id, x: r.left + b.x * v.scale + v.tx, y: r.top + b.y * v.scale + v.ty, w: b.w * v.scale, h: b.h * v.scale }));
      },
      // The canvas's accessible name and description, the live region's last announcement.
      a11y: (which?: string) => {
        const v = viewOf(which);
        return { label: v.canvas.getAttribute('aria-label'), description: v.canvas.getAttribute('aria-description'), live: v.live.textContent, role: v.canvas.getAttribute('role') };
      },
      // A drawn item's node text line in the hardware layer, and its hover tooltip (as if hovered, without the delay).
      hover: (id: string | null, which?: string) => viewOf(which).hoverItem(id),
      legend: () => ({ prefs: app.legendPrefs, text: app.legendA.el.innerText, hidden: app.legendA.el.classList.contains('hidden') }),
      setLegend: (p: Partial<LegendPrefs>) => app.setLegend(p),
      groupColour: (id: string, which?: string) => viewOf(which).colourOf(id),
      // The training dock: its state and the chart's data as uPlot holds it; the drift.
      train: () => app.train.state(),
      trainFlush: () => { app.train.flush(); return app.train.state(); },
      setTrainCollapsed: (c: boolean) => { app.train.setCollapsed(c); return app.train.state(); },
      // Parallel strategies (parallel.ts): the device picker, and each drawn sharded / staged /
      // communication node with its frame text, stage colour and on-screen box.
      parallel: (which?: string) => {
        const v = viewOf(which);
        const r = v.canvas.getBoundingClientRect();
        const items = (v.scene?.items ?? []).filter((it) => it.node).map((it) => {
          const n = it.node!;
          const stage = stageOf(n);
          return {
            id: it.id, frame: frameText(n), stage, stageColour: stage === null ? null : stageColor(stage, v.theme.stages),
            comm: commOf(n), onRank: v.device === null || onRank(v.parallel, n, v.device),
            x: r.left + it.x * v.scale + v.tx, y: r.top + it.y * v.scale + v.ty, w: it.w * v.scale, h: it.h * v.scale,
          };
        });
        return {
          rank: app.rank, picker: !app.deviceLbl.classList.contains('hidden'),
          options: [...app.deviceSel.options].map((o) => o.textContent), tip: app.deviceSel.title,
          shard: v.theme.shard, items,
        };
      },
      setDevice: (rank: number | null) => app.setDevice(rank),
      // The device dock: its state, the chart's data as uPlot holds it, the text figures.
      device: () => app.device.state(),
      deviceFlush: () => { app.device.flush(); return app.device.state(); },
      deviceInk: () => {
        const c = app.device.canvas();
        if (!c || !c.width) return 0;
        const data = c.getContext('2d')?.getImageData(0, 0, c.width, c.height).data;
        if (!data) return 0;
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
        return n / (c.width * c.height);
      },
      trainInk: () => {
        const c = app.train.canvas();
        if (!c || !c.width) return 0;
        const data = c.getContext('2d')?.getImageData(0, 0, c.width, c.height).data;
        if (!data) return 0;
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
        return n / (c.width * c.height);
      },
      drift: () => (app.drift ? {
        threshold: app.drift.threshold, firstBelow: app.drift.firstBelow, layers: app.drift.byNode.size,
        firstDrawn: app.activeView().driftFirstItems(),
      } : null),
      paneNote: (which?: string) => (which === 'B' ? app.noteB : app.noteA).innerText,
      tipText: (which?: string) => { const t = viewOf(which).tip; return t.classList.contains('hidden') ? '' : t.textContent; },
      bannerText: () => app.banner.innerText,
      // The comparison with a fixed base: what the view holds and draws for it in the active pane.
      comparison: () => {
        const c = app.comparison;
        if (!c) return null;
        const v = app.activeView();
        const d = v === app.viewB && app.split ? app.cmpDiffB : app.cmpDiffA;
        return {
          base: c.base ?? null, pending: !!c.pending, error: c.error ?? '', seq: seqNumber(c.seq),
          cell: cellComparison(c, app.cellName)?.cell ?? null,
          added: d ? [...d.added] : [], changed: d ? [...d.changed] : [], removed: d ? [...d.removed] : [],
          groups: d ? [...(d.groups ?? [])] : [], ghosts: (v.graph?.nodes ?? []).filter((n) => n.ghost).map((n) => n.id),
          banner: app.compareBanner.innerText, position: app.cmpPos,
        };
      },
      compare: (base: string) => app.requestCompare(base),
      stepChange: (dir: number) => app.stepChange(dir),
      svg: () => buildSvg(app.activeView(), app.tl),
      // Actions (for tests and benchmarks).
      select: (id: string | null) => { const v = app.activeView(); if (id) return v.reveal(id).then(() => v.select(id, 'click')); v.select(null); return Promise.resolve(); },
      toggleGroup: (id: string) => app.activeView().toggleGroup(id),
      expandAll: () => app.activeView().expandAll(),
      collapseAll: () => app.activeView().collapseAll(),
      setLayer: (l: Layer) => app.setLayer(l).then(() => app.viewA.idle()),
      setMetric: (m: MetricId) => app.setMetric(m),
      setSplit: (on: boolean) => { app.setSplit(on); return Promise.resolve(); },
      setMemory: (on: boolean) => app.setMem(on),
      // The memory chart's size and its texts ({width, canvasWidth, labels: [{text, x, w}]}).
      memory: () => app.mem.state(),
      // The core timeline (timeline.ts): its rows, bars, window, selection; a kernel's bar on screen; a click on it.
      setTimeline: (on: boolean) => { app.renderTimeline(); app.tl.setOpen(on); return app.tl.open; },
      timelineState: () => app.tl.state(),
      timelineBar: (id: string) => app.tl.barRect(id),
      clickBar: (id: string) => app.tl.clickBar(id),
      timelineZoom: (f: number) => app.tl.zoom(f),
      timelinePaint: () => { app.tl.paint(); return app.tl.lastPaintMs; },
      fit: () => app.activeView().fit(),
      zoom: (f: number) => app.activeView().zoom(f),
      pan: (dx: number, dy: number) => app.activeView().pan(dx, dy),
      paintNow: () => { const v = app.activeView(); v.paintNow(); return v.lastPaintMs; },
      injectMessage: (m: ViewMessage) => app.onMessage(m),
      setDebugFocus: (f: DebugFocus) => app.onDebug(f),
    };
  }
}

declare global {
  interface Window { cellscopeView?: Record<string, unknown> }
}

function boot(): void {
  const app = new App();
  window.cellscopeView = app.hook();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
else boot();
