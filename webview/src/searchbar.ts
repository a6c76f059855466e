// The toolbar's search box (the query language is search.ts): the matches highlighted on the
// canvas (collapsed groups holding one outlined too), a count in the box ("3 of 17"), next /
// previous (Enter / Shift+Enter, or the arrows atop the results list), "select all matches"
// (Alt+Enter, or the list's button: a multi-selection the panel lists), Escape clears. The list
// drops down while the box has the focus (an empty box shows the syntax); the box itself stays
// as narrow as the toolbar needs. Live updates and layer switches re-run the query.
import type { GraphView } from './view';
import type { ViewGraph } from './model';
import { groupsHolding, parseQuery, QUERY_HELP, search, type Query, type SearchContext, type SearchHit } from './search';
import { escapeHtml as h } from './format';
import { ERROR_ICON } from './panel';

export interface SearchHost {
  /** The view searched (the active pane). */
  view(): GraphView;
  /** Every view (their marks are cleared when the search changes). */
  views(): GraphView[];
  context(): SearchContext;
  /** Reveals and selects a node of the active view. */
  goTo(id: string): void;
  /** The multi-selection changed (the panel lists it). */
  onMulti(): void;
  /** A note on what the search covers ('' when everything: a lazy Cell has loaded scopes only). */
  coverage(): string;
}

const svg = (d: string): string => `<svg class="ico" viewBox="0 0 16 16" width="14" height="14" aria-hidden="true" focusable="false" fill="none" ` +
  `stroke="currentColor" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round">${d}</svg>`;
const ICON_PREV = svg('<path d="M4 10l4-4 4 4"/>');
const ICON_NEXT = svg('<path d="M4 6l4 4 4-4"/>');
const ICON_ALL = svg('<rect x="2" y="2" width="5" height="5" rx="1"/><rect x="9" y="2" width="5" height="5" rx="1"/><rect x="2" y="9" width="5" height="5" rx="1"/><rect x="9" y="9" width="5" height="5" rx="1"/>');

/** Examples the syntax help offers (click: put in the box). */
const EXAMPLES: [string, string][] = [
  ['op:Conv2D', 'operator'], ['type:Bottleneck', 'inside a Cell class (or cell:layer1.0)'], ['attr:kernel_size=3', 'attribute (= != < <= > >=)'],
  ['shape:56x56', 'part of an output shape'], ['dtype:float16', 'output dtype'], ['bound:memory', 'hardware kernel bound'],
  ['op:Conv2D attr:stride>1', 'combined'], ['-op:ReLU layer4', 'excluded, and text'],
];

const RESULT_ROWS = 200;

export class SearchBar {
  readonly root = document.createElement('div');
  readonly input = document.createElement('input');
  private count = document.createElement('span');
  readonly results = document.createElement('div');
  private query: Query = { terms: [], errors: [], notes: [] };
  private hits: SearchHit[] = [];
  private index = -1;
  private current: string | null = null;   // the match gone to last (kept across updates)
  private multiQuery: string | null = null;
  private multiIds: string[] = [];
  private searched: ViewGraph | null = null;

  constructor(private host: SearchHost) {
    this.root.className = 'search';
    this.root.setAttribute('role', 'search');
    const wrap = document.createElement('div');
    wrap.className = 'search-field';
    this.input.className = 'search-input';
    this.input.type = 'search';
    this.input.placeholder = 'Search  op:Conv2D  attr:kernel_size=3 …  (/)';
    this.input.title = QUERY_HELP;
    this.input.setAttribute('aria-label', 'Search nodes (filters: op:, type:, attr:, shape:, dtype:, bound:)');
    // A combobox over the list of matches (WAI-ARIA 1.2): the active match is aria-activedescendant.
    this.input.setAttribute('role', 'combobox');
    this.input.setAttribute('aria-autocomplete', 'list');
    this.input.setAttribute('aria-expanded', 'false');
    this.input.setAttribute('aria-controls', 'search-list');
    this.input.spellcheck = false;
    this.input.autocomplete = 'off';
    this.count.className = 'search-count';
    this.count.setAttribute('aria-live', 'polite');
    wrap.append(this.input, this.count);
    this.results.className = 'results hidden';
    this.results.id = 'search-results';
    this.results.setAttribute('role', 'region');
    this.results.setAttribute('aria-label', 'Search results');
    this.root.append(wrap, this.results);
    this.input.addEventListener('input', () => { this.index = -1; this.current = null; this.run(); this.open(); });
    this.input.addEventListener('keydown', (e) => this.onKey(e));
    this.input.addEventListener('focus', () => this.open());
    this.results.addEventListener('mousedown', (e) => e.preventDefault());  // keep the focus in the box
    this.results.addEventListener('click', (e) => this.onResultsClick(e));
    document.addEventListener('click', (e) => { if (!this.root.contains(e.target as Node)) this.close(); });
    this.sync();
  }

  /** Focuses the box (the / and Ctrl+F keys). */
  focus(): void {
    this.input.focus();
    this.input.select();
  }

  // ---- running the query -------------------------------------------------------------------

  /** Re-runs the query on the active view's graph (after typing, a live update, a layer switch). */
  run(): void {
    const v = this.host.view();
    for (const w of this.host.views()) { w.highlight.clear(); w.multi.clear(); w.invalidate(); }
    const text = this.input.value;
    this.query = parseQuery(text);
    const g = v.graph;
    this.searched = g;
    const ctx = this.host.context();
    this.hits = g && text.trim() ? search(g, this.query, ctx) : [];
    if (this.current !== null) {
      this.index = this.hits.findIndex((x) => x.id === this.current);
      if (this.index < 0) this.current = null;
    }
    if (g) {
      const ids = this.hits.map((x) => x.id);
      for (const id of ids) v.highlight.add(id);
      for (const id of groupsHolding(g, ids)) v.highlight.add(id);
      if (this.multiQuery !== null) {
        this.multiIds = search(g, parseQuery(this.multiQuery), ctx).map((x) => x.id);
        for (const id of this.multiIds) v.multi.add(id);
        for (const id of groupsHolding(g, this.multiIds)) v.multi.add(id);
      }
    }
    v.invalidate();
    this.sync();
    this.renderResults();
  }

  /** The graph changed under the box (a live update, another layer or Cell): the same query on it. */
  refresh(): void {
    if (this.input.value.trim() || this.multiQuery !== null) this.run();
    else if (this.searched !== null) {
      for (const w of this.host.views()) { w.highlight.clear(); w.multi.clear(); w.invalidate(); }
      this.searched = null;
    }
  }

  /** Goes to the next (+1) or previous (-1) match. */
  step(dir: 1 | -1): void {
    if (this.hits.length === 0) { if (this.input.value.trim()) this.run(); if (this.hits.length === 0) return; }
    const n = this.hits.length;
    this.index = this.index < 0 ? (dir > 0 ? 0 : n - 1) : (this.index + dir + n) % n;
    this.goToIndex(this.index);
  }

  private goToIndex(i: number): void {
    const hit = this.hits[i];
    if (!hit) return;
    this.index = i;
    this.current = hit.id;
    this.host.goTo(hit.id);
    this.sync();
    this.markActive();
  }

  /** Selects every match (a multi-selection, listed in the panel); again with no query: clears it. */
  selectAll(): void {
    const text = this.input.value.trim();
    if (!text) { this.clearMulti(); return; }
    if (this.hits.length === 0) return;
    this.multiQuery = text;
    this.run();
    this.close();
    // The panel lists the selection: no single node stays selected over it.
    const v = this.host.view();
    if (v.selection !== null) v.select(null, 'api');
    this.host.onMulti();
  }

  clearMulti(): void {
    if (this.multiQuery === null) return;
    this.multiQuery = null;
    this.multiIds = [];
    for (const w of this.host.views()) { w.multi.clear(); w.invalidate(); }
    this.sync();
    this.host.onMulti();
  }

  /** Escape in the box: the query, the marks and the multi-selection go. */
  clear(): void {
    this.input.value = '';
    this.index = -1;
    this.current = null;
    this.multiQuery = null;
    this.multiIds = [];
    this.run();
    this.close();
    this.host.onMulti();
  }

  /** The multi-selection ("select all matches"): its query and node ids, or null. */
  multi(): { query: string; ids: string[] } | null {
    return this.multiQuery === null ? null : { query: this.multiQuery, ids: [...this.multiIds] };
  }

  /** For the test hook. */
  state(): Record<string, unknown> {
    const g = this.searched;
    return {
      query: this.input.value, count: this.hits.length, index: this.index, current: this.current, text: this.count.textContent,
      matches: this.hits.map((x) => x.id), groups: g ? [...groupsHolding(g, this.hits.map((x) => x.id))] : [],
      errors: [...this.query.errors], notes: [...this.query.notes], open: !this.results.classList.contains('hidden'),
      multi: this.multi(),
    };
  }

  // ---- the box's parts ----------------------------------------------------------------------

  private onKey(e: KeyboardEvent): void {
    if (e.key === 'Enter') {
      e.preventDefault();
      if (e.altKey) this.selectAll();
      else { this.step(e.shiftKey ? -1 : 1); this.close(); }
    } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      if (!this.hits.length) return;
      e.preventDefault();
      this.open();
      this.step(e.key === 'ArrowDown' ? 1 : -1);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      this.clear();
      this.input.blur();
      this.host.view().canvas.focus();
    }
  }

  private onResultsClick(e: MouseEvent): void {
    const t = e.target as HTMLElement;
    const ex = t.closest<HTMLElement>('[data-example]');
    if (ex) {
      this.input.value = ex.dataset.example ?? '';
      this.index = -1;
      this.current = null;
      this.run();
      this.open();
      this.input.focus();
      return;
    }
    if (t.closest('.rc-all')) { this.selectAll(); return; }
    if (t.closest('.rc-prev')) { this.step(-1); return; }
    if (t.closest('.rc-next')) { this.step(1); return; }
    const hit = t.closest<HTMLElement>('.hit');
    if (!hit?.dataset.i) return;
    this.goToIndex(Number(hit.dataset.i));
    this.close();
  }

  private open(): void {
    this.renderResults();
    this.results.classList.remove('hidden');
    this.input.setAttribute('aria-expanded', 'true');
  }

  close(): void {
    this.results.classList.add('hidden');
    this.input.setAttribute('aria-expanded', 'false');
  }

  private sync(): void {
    const text = this.input.value.trim();
    const n = this.hits.length;
    let c = '';
    if (text) c = this.query.terms.length === 0 && this.query.errors.length ? 'invalid' : n === 0 ? 'No matches' : this.index >= 0 ? `${this.index + 1} of ${n}` : `${n} match${n === 1 ? '' : 'es'}`;
    this.count.textContent = c;
    this.count.classList.toggle('none', !!text && n === 0);
    this.root.classList.toggle('has-query', !!text);
    this.root.classList.toggle('has-multi', this.multiQuery !== null);
    const head = this.results.querySelector('.rc-count');
    if (head) head.textContent = this.countText(n);
  }

  private countText(n: number): string {
    return this.index >= 0 && n > 0 ? `${this.index + 1} of ${n}` : `${n}${n === 1 ? ' match' : ' matches'}`;
  }

  private markActive(): void {
    for (const r of this.results.querySelectorAll<HTMLElement>('.hit')) {
      const on = Number(r.dataset.i) === this.index;
      r.classList.toggle('active', on);
      r.setAttribute('aria-selected', String(on));
      if (on && !this.results.classList.contains('hidden')) r.scrollIntoView({ block: 'nearest' });
    }
    const act = this.results.querySelector<HTMLElement>('.hit.active');
    if (act) this.input.setAttribute('aria-activedescendant', act.id);
    else this.input.removeAttribute('aria-activedescendant');
  }

  private renderResults(): void {
    const text = this.input.value.trim();
    if (!text) {
      this.results.innerHTML = `<div class="rc">Search by name, op or scope, or filter:</div><div role="listbox" id="search-list" aria-label="Examples">` +
        EXAMPLES.map(([q, what]) => `<div class="example" data-example="${h(q)}" role="option" aria-selected="false"><span class="mono">${h(q)}</span> <span class="muted">${h(what)}</span></div>`).join('') + '</div>' +
        `<div class="rc foot">Enter / Shift+Enter: next / previous · Alt+Enter: select all · Esc: clear</div>`;
      return;
    }
    const g = this.searched;
    const n = this.hits.length;
    const msgs = [...this.query.errors.map((m) => `<div class="rc err">${h(m)}</div>`), ...this.query.notes.map((m) => `<div class="rc note">${h(m)}</div>`)];
    const cover = this.host.coverage();
    const btn = (cls: string, icon: string, label: string, key: string): string =>
      `<button type="button" class="rc-btn ${cls}" title="${label} (${key})" aria-label="${label}" data-decorated="1"${n ? '' : ' disabled'}>${icon}</button>`;
    const head = `<div class="rc"><span class="rc-count">${this.countText(n)}</span>` +
      `<span class="rc-tools">${btn('rc-prev', ICON_PREV, 'Previous match', 'Shift+Enter')}${btn('rc-next', ICON_NEXT, 'Next match', 'Enter')}` +
      `<button type="button" class="rc-all" title="Select all matches: outline them all and list them in the panel (Alt+Enter)" data-decorated="1"${n ? '' : ' disabled'}>` +
      `${ICON_ALL}<span>Select all</span></button></span></div>` +
      msgs.join('') + (cover ? `<div class="rc note">${h(cover)}</div>` : '');
    const rows = this.hits.slice(0, RESULT_ROWS).map((x, i) => {
      const node = g?.byId.get(x.id);
      if (!node) return '';
      const f = node.failure;
      const act = i === this.index;
      const attrs = `class="hit${f ? ' failed' : ''}${act ? ' active' : ''}" id="search-hit-${i}" data-i="${i}" data-id="${h(x.id)}" role="option" aria-selected="${act}"`;
      if (f) {
        return `<div ${attrs} title="${h(f.message ?? '')}">${ERROR_ICON}<b>${h(f.api || node.op)}</b> <span class="mono">${h(f.id)}</span>` +
          `<span class="muted"> ${h(f.message ?? '')}</span></div>`;
      }
      return `<div ${attrs}><b>${h(node.op)}</b> <span class="mono">${h(x.id)}</span><span class="muted"> ${h(node.scope)}</span></div>`;
    }).join('');
    const more = n > RESULT_ROWS ? `<div class="rc foot">… ${n - RESULT_ROWS} more: Select all lists every match in the panel</div>` : '';
    this.results.innerHTML = `${head}<div role="listbox" id="search-list" aria-label="Matches">${rows}</div>${more}`;
  }
}
