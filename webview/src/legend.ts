// The legend of a graph pane: what the colours mean (op categories and marks, or the metric's
// ramp for nodes and the collapsed groups' own ramp for Σ) and, in the hardware layer, what a
// node's text says ("compute / memory / dispatch", "cyc", "Σ") in the target's own words.
// Hideable (toolbar), dockable to any corner of the pane, collapsible to a strip; the choice is
// remembered. It stacks with the pane's other overlays (title, note, overview) in its corner and
// the view's Fit keeps the graph clear of it (GraphView.insets).
import { commMarker, commOf, shardingOf, stageColor, stagesIn } from './parallel';
import type { Cell } from './protocol';
import type { GraphView } from './view';
import { layerState } from './failures';
import { metricDef, rampColor } from './metrics';
import { badness, driftColor, driftSummary, fmtCos } from './train';
import { boundDefinition, boundWord, cycSentence, sigmaSentence } from './vocab';
import { ERROR_ICON } from './panel';
import { escapeHtml as h } from './format';

export type Corner = 'bl' | 'tl' | 'tr' | 'br';
export const CORNERS: readonly Corner[] = ['bl', 'tl', 'tr', 'br'];
export const CORNER_NAME: Record<Corner, string> = { bl: 'bottom left', tl: 'top left', tr: 'top right', br: 'bottom right' };

export interface LegendPrefs {
  shown: boolean;      // the toolbar's Legend toggle
  corner: Corner;      // where it is docked
  collapsed: boolean;  // a strip (its title and controls) instead of the whole legend
  explain: boolean;    // the "reading a node" entry open (hardware layer)
}

export const DEFAULT_LEGEND: LegendPrefs = { shown: true, corner: 'bl', collapsed: false, explain: true };
export const LEGEND_KEY = 'cellscope-legend';

/** The preferences as stored (JSON), with defaults for whatever is missing or invalid. */
export function parseLegendPrefs(raw: string | null): LegendPrefs {
  let o: Partial<Record<keyof LegendPrefs, unknown>> = {};
  try { o = raw ? JSON.parse(raw) as typeof o : {}; } catch { o = {}; }
  if (typeof o !== 'object' || o === null) o = {};
  const bool = (v: unknown, d: boolean): boolean => (typeof v === 'boolean' ? v : d);
  return {
    shown: bool(o.shown, DEFAULT_LEGEND.shown),
    corner: CORNERS.includes(o.corner as Corner) ? o.corner as Corner : DEFAULT_LEGEND.corner,
    collapsed: bool(o.collapsed, DEFAULT_LEGEND.collapsed),
    explain: bool(o.explain, DEFAULT_LEGEND.explain),
  };
}

/** The corner after `c`, clockwise from the bottom left. */
export function nextCorner(c: Corner): Corner {
  return CORNERS[(CORNERS.indexOf(c) + 1) % CORNERS.length];
}

const GAP = 6;
const EDGE = 10;

/** Where the legend goes in its corner: below the title or note at the top, above the overview at the bottom right. */
export function legendOffsets(corner: Corner, pane: DOMRect, others: { title?: DOMRect | null; note?: DOMRect | null; minimap?: DOMRect | null }):
    { top?: number; bottom?: number; left?: number; right?: number } {
  const below = (r: DOMRect | null | undefined): number => (r && r.height > 0 ? r.bottom - pane.top + GAP : EDGE);
  switch (corner) {
    case 'tl': return { top: below(others.title), left: EDGE };
    case 'tr': return { top: below(others.note), right: EDGE };
    case 'br': return { bottom: others.minimap && others.minimap.height > 0 ? pane.bottom - others.minimap.top + GAP : EDGE, right: EDGE };
    default: return { bottom: EDGE, left: EDGE };
  }
}

/** The legend's body for a view (the Cell for where its figures stop). */
export function legendBody(v: GraphView, cell: Cell | undefined, explain: boolean): string {
  const g = v.graph;
  if (!g) return '';
  const th = v.theme;
  if (v.metric === 'none') {
    const cats: [string, string][] = [['compute', 'Conv / MatMul'], ['norm', 'Norm'], ['act', 'Activation'], ['pool', 'Pool'],
      ['shape', 'Shape'], ['elem', 'Elementwise'], ['move', 'TransData / Cast'], ['input', 'Input']];
    let html = cats.map(([k, l]) => `<span class="chip"><i style="background:${th.cat[k]}"></i>${l}</span>`).join('');
    if (g.layer !== 'semantic') html += '<span class="chip"><i class="dashed"></i>fused kernel</span>';
    if (g.nodes.some((n) => n.failure)) html += `<span class="chip">${ERROR_ICON}failed call</span>`;
    if (g.nodes.some((n) => n.ghost)) html += `<span class="chip"><i class="ghost" style="border-color:${th.danger}"></i>removed</span>`;
    const marks: [string, string][] = [[th.accent, 'selected'], [th.highlight, 'search match'],
      [th.mapped, g.layer === 'semantic' ? 'mapped' : 'shared buffer / mapped']];
    if (v.diff && (v.diff.added.size || v.diff.changed.size)) marks.push([th.added, 'added'], [th.changed, 'changed']);
    if (v.debugNodes.size) marks.push([th.debug, 'paused here']);
    html += `<span class="marks">${marks.map(([c, l]) => `<span class="chip"><i class="ring" style="border-color:${c}"></i>${l}</span>`).join('')}</span>`;
    html += parallelChips(v);
    return `<div class="lg-chips">${html}</div>${g.layer === 'hardware' ? explainHtml(v, explain) : ''}`;
  }
  if (v.metric === 'drift') return driftLegend(v);
  const s = v.metricScale();
  const def = metricDef(v.metric);
  const st = cell ? layerState(cell, g.layer) : null;
  const failed = st?.failure ? `construct stops at ${st.failure.id}` : '';
  if (!s || s.max <= 0) {
    return `<span class="muted">${h(def.label)}: ${st?.kind === 'unavailable' ? h('unavailable, ' + failed) : 'no data'}</span>`;
  }
  const stops = [0, 0.25, 0.5, 0.75, 1].map((t) => `${rampColor(t)} ${t * 100}%`).join(',');
  const ramp = (title: string, min: string, max: string, cls: string, tip: string): string =>
    `<div class="lg-ramp ${cls}" title="${h(tip)}"><div class="ramp-title">${h(title)}</div><div class="ramp" style="background:linear-gradient(90deg,${stops})"></div>` +
    `<div class="ramp-lbl"><span>${h(min)}</span><span>${h(max)}</span></div></div>`;
  let html = ramp(`${def.label} (log scale)${failed ? `, partial: ${failed}` : ''}`, def.format(s.min), def.format(s.max), 'nodes',
    `Nodes: ${def.label.toLowerCase()} from ${def.format(s.min)} (darkest) to ${def.format(s.max)} (lightest), log scale.`);
  const gs = v.hasCollapsedGroups() ? v.groupMetricScale() : null;
  if (gs && gs.max > 0) {
    html += ramp(`Σ per collapsed group (own scale)`, def.format(gs.min), def.format(gs.max), 'groups',
      `${sigmaSentence()} Their Σ are coloured on this scale, from the smallest to the largest Σ of the groups shown.`);
  }
  return `<div class="lg-ramps">${html}</div>${g.layer === 'hardware' ? explainHtml(v, explain) : ''}`;
}

/** Parallel strategies: the pipeline stages' colours, the sharded frame, communication nodes. */
export function parallelChips(v: GraphView): string {
  const g = v.graph;
  if (!g) return '';
  const th = v.theme;
  const chips = stagesIn(g).map((s) => `<span class="chip stage"><i style="background:${stageColor(s, th.stages)}"></i>stage ${s}</span>`);
  if (g.nodes.some((n) => shardingOf(n))) chips.push('<span class="chip"><i class="shard"></i>sharded (split)</span>');
  if (g.nodes.some((n) => commOf(n) || commMarker(n))) chips.push('<span class="chip"><i class="comm"></i>communication</span>');
  if (v.device !== null) chips.push(`<span class="chip">${h(`shapes of rank ${v.device}`)}</span>`);
  return chips.length ? `<span class="marks parallel">${chips.join('')}</span>` : '';
}

/** The drift metric's legend: the cosine ramp (best layer → threshold), no data, the first layer under the threshold. */
function driftLegend(v: GraphView): string {
  const d = v.drift;
  const th = v.theme;
  if (!d) {
    return '<span class="muted">Drift: no data. A joint debug session (F5, mode "joint") or <code>cellscope train --drift</code> measures each layer at the chosen precision against fp32.</span>';
  }
  const stops = [0, 0.25, 0.5, 0.75, 1].map((t) => `${driftColor(t)} ${t * 100}%`).join(',');
  const best = fmtCos(1 - Math.min(d.bestBadness, badness(d.threshold) / 1000));
  const tip = `Each node's colour is the cosine similarity of its output at ${d.precision} to fp32, on a log scale of 1 − cosine: green the best, red at or under the threshold ${d.threshold}. A kernel shows the worst of the nodes it was made from; a collapsed group its worst node.`;
  const chips = [`<span class="chip"><i style="background:${th.node};border:1px solid ${th.nodeBorder}"></i>no data</span>`];
  if (d.firstBelow) chips.push(`<span class="chip"><i class="ring dashed-ring" style="border-color:${th.danger}"></i>first under ${d.threshold}: ${h(d.firstBelow)}</span>`);
  return `<div class="lg-ramps"><div class="lg-ramp nodes drift" title="${h(tip)}"><div class="ramp-title">Drift: cosine to fp32 (log of 1 − cos)</div>` +
    `<div class="ramp" style="background:linear-gradient(90deg,${stops})"></div>` +
    `<div class="ramp-lbl"><span>${h('cos ' + best)}</span><span>${h('≤ cos ' + d.threshold)}</span></div></div>` +
    `<div class="lg-chips">${chips.join('')}</div><div class="lg-drift muted">${h(driftSummary(d))}</div></div>`;
}

/** "Reading a node" (hardware layer): the bound words, "cyc" and "Σ", one sentence each. */
function explainHtml(v: GraphView, open: boolean): string {
  const voc = v.graph!.vocab;
  const term = (word: string, sentence: string): string =>
    `<li><b class="term" title="${h(sentence)}">${h(word)}</b> <span>${h(sentence.slice(sentence.indexOf(':') + 1).trim())}</span></li>`;
  const rows = [
    term(boundWord(voc, 'compute'), boundDefinition(voc, 'compute')),
    term(boundWord(voc, 'memory'), boundDefinition(voc, 'memory')),
    term(boundWord(voc, 'dispatch'), boundDefinition(voc, 'dispatch')),
    term('cyc', cycSentence(voc)),
    term('Σ', sigmaSentence()),
  ];
  const sample = `${voc.ascend ? 'Cube' : 'CPU'} · 1.2k cyc · ${boundWord(voc, 'memory')}`;
  return `<details class="lg-explain"${open ? ' open' : ''}><summary title="What a node's text says: its unit, its cycles and what bounds it">` +
    `Reading a node: <span class="lg-sample">${h(sample)}</span></summary><ul>${rows.join('')}</ul></details>`;
}

export interface LegendHost {
  /** The preferences changed by the legend's own controls (dock, collapse, hide, explain). */
  change(p: Partial<LegendPrefs>): void;
}

/** One pane's legend box: its controls, its body, and its place in the pane. */
export class Legend {
  readonly el: HTMLDivElement;
  private body: HTMLDivElement;
  private dockBtn: HTMLButtonElement;
  private foldBtn: HTMLButtonElement;
  private prefs: LegendPrefs = DEFAULT_LEGEND;
  private html = '';

  constructor(private pane: HTMLElement, private host: LegendHost) {
    this.el = document.createElement('div');
    this.el.className = 'legend';
    this.el.setAttribute('role', 'region');
    this.el.setAttribute('aria-label', 'Legend');
    const head = document.createElement('div');
    head.className = 'lg-head';
    const title = document.createElement('span');
    title.className = 'lg-title';
    title.textContent = 'Legend';
    const btn = (cls: string, onClick: () => void): HTMLButtonElement => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = `lg-btn ${cls}`;
      b.addEventListener('click', (e) => { e.stopPropagation(); onClick(); });
      return b;
    };
    this.dockBtn = btn('lg-dock', () => this.host.change({ corner: nextCorner(this.prefs.corner) }));
    this.foldBtn = btn('lg-fold', () => this.host.change({ collapsed: !this.prefs.collapsed }));
    const hide = btn('lg-hide', () => this.host.change({ shown: false }));
    hide.textContent = '×';
    hide.title = 'Hide the legend (the toolbar\'s Legend button shows it again)';
    hide.setAttribute('aria-label', 'Hide the legend');
    head.append(title, this.dockBtn, this.foldBtn, hide);
    this.body = document.createElement('div');
    this.body.className = 'lg-body';
    this.body.addEventListener('toggle', (e) => {
      const d = e.target as HTMLDetailsElement;
      if (d.classList.contains('lg-explain') && d.open !== this.prefs.explain) this.host.change({ explain: d.open });
    }, true);
    this.el.append(head, this.body);
    // The wheel over the legend still zooms the graph under it.
    this.el.addEventListener('wheel', (e) => {
      const c = this.pane.querySelector('canvas.graph-canvas');
      if (!c) return;
      e.preventDefault();
      c.dispatchEvent(new WheelEvent('wheel', e));
    }, { passive: false });
    pane.appendChild(this.el);
    // The pane, or an overlay of its corner (the overview sizes itself to the graph), resized.
    this.watch = new ResizeObserver(() => this.place());
    this.watch.observe(pane);
  }

  private watch: ResizeObserver;

  setPrefs(p: LegendPrefs): void {
    this.prefs = p;
    this.el.classList.toggle('hidden', !p.shown || this.html === '');
    this.el.classList.toggle('collapsed', p.collapsed);
    for (const c of CORNERS) this.el.classList.toggle(`dock-${c}`, c === p.corner);
    const next = nextCorner(p.corner);
    this.dockBtn.textContent = { bl: '◱', tl: '◰', tr: '◳', br: '◲' }[next];
    this.dockBtn.title = `Dock the legend in the ${CORNER_NAME[next]} corner (now ${CORNER_NAME[p.corner]}; remembered)`;
    this.dockBtn.setAttribute('aria-label', `Dock the legend ${CORNER_NAME[next]}`);
    this.foldBtn.textContent = p.collapsed ? '▸' : '▾';
    this.foldBtn.title = p.collapsed ? 'Expand the legend' : 'Collapse the legend to a strip';
    this.foldBtn.setAttribute('aria-label', p.collapsed ? 'Expand the legend' : 'Collapse the legend');
    this.foldBtn.setAttribute('aria-expanded', String(!p.collapsed));
    const ex = this.body.querySelector<HTMLDetailsElement>('details.lg-explain');
    if (ex && ex.open !== p.explain) ex.open = p.explain;
    this.place();
  }

  /** Renders the body for a view (null: nothing drawn in this pane). */
  render(v: GraphView | null, cell: Cell | undefined): void {
    this.html = v ? legendBody(v, cell, this.prefs.explain) : '';
    if (this.body.innerHTML !== this.html) this.body.innerHTML = this.html;
    this.el.classList.toggle('hidden', !this.prefs.shown || this.html === '');
    this.place();
  }

  /** Puts the legend in its corner, stacked with the title, the note or the overview there. */
  place(): void {
    const visible = (sel: string): DOMRect | null => {
      const e = this.pane.querySelector<HTMLElement>(`:scope > ${sel}`);
      if (e) this.watch.observe(e);
      if (!e || e.classList.contains('hidden') || e.offsetParent === null) return null;
      return e.getBoundingClientRect();
    };
    const o = legendOffsets(this.prefs.corner, this.pane.getBoundingClientRect(),
      { title: visible('.pane-title'), note: visible('.pane-note'), minimap: visible('.minimap') });
    const px = (n: number | undefined): string => (n === undefined ? 'auto' : `${Math.round(n)}px`);
    const st = this.el.style;
    st.top = px(o.top); st.bottom = px(o.bottom); st.left = px(o.left); st.right = px(o.right);
  }
}
