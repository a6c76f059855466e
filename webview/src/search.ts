// Search: a query language over the drawn nodes of one layer, pure (no DOM; searchbar.ts is the
// box). A query is whitespace-separated terms, all of which must hold:
//   text            node id, op, API, scope, a failed call's message (substring; /regex/ too)
//   op:Conv2D       the operator (whole name); a kernel also matches the ops it was made from
//   type:X, cell:X  an enclosing Cell instance: its path (layer1.0) or class (Bottleneck, nn.Conv2d)
//   attr:k, attr:k=v, attr:k>=v   an attribute (name; value equal, or compared as a number:
//                   = != < <= > >=; kernel_size=3 also matches (3, 3))
//   shape:56x56     part of an output shape (x, × or , between dims); shape:[1,64,56,56] whole
//   dtype:float16   an output dtype        bound:memory, unit:cube   a hardware kernel's
//   id:, api:       substring of the id / API
// Whole-name values are case-insensitive, `*` is a wildcard and /…/ a regular expression;
// "quotes" keep spaces; a leading `-` negates a term.
import type { AttrValue, Cell, HardwareKernel, Node, Tensor } from './protocol';
import type { VNode, ViewGraph } from './model';
import { dimText } from './format';
import { scopeClasses } from './groups';

export type FilterKey = 'op' | 'cell' | 'attr' | 'shape' | 'dtype' | 'bound' | 'unit' | 'id' | 'api';

/** The filter keys the box accepts (aliases included), for the hint and the parser. */
export const FILTER_KEYS: Record<string, FilterKey> = {
  op: 'op', type: 'cell', cell: 'cell', class: 'cell', attr: 'attr', shape: 'shape', dtype: 'dtype',
  bound: 'bound', unit: 'unit', id: 'id', name: 'id', api: 'api',
};

/** One line per filter, for the box's tooltip. */
export const QUERY_HELP = [
  'Search nodes: words match the id, op, API and scope (all words must match; /regex/ works).',
  'Filters, combinable with words:',
  '  op:Conv2D            operator (whole name; * wildcard, /regex/); kernels: also what they fuse',
  '  type:Bottleneck      enclosing Cell class or instance path (also cell:layer1.0)',
  '  attr:kernel_size=3   attribute, optionally its value (= != < <= > >=)',
  '  shape:56x56          part of an output shape ([1,64,56,56]: the whole shape)',
  '  dtype:float16        output dtype',
  '  bound:memory         hardware kernel bound (compute, memory, dispatch); unit:cube',
  '  id:…, api:…          part of the node id / API',
  '"Quotes" keep spaces; -op:ReLU excludes. Enter / Shift+Enter: next / previous match;',
  'Alt+Enter: select all matches; Esc: clear.',
].join('\n');

type Cmp = '=' | '!=' | '<' | '<=' | '>' | '>=';

export interface TextTerm { kind: 'text'; text: string; re: RegExp | null; neg: boolean }
export interface FilterTerm {
  kind: 'filter';
  key: FilterKey;
  raw: string;          // as typed after the colon
  neg: boolean;
  test: (s: string) => boolean;   // the value (attr: the attribute name)
  cmp?: Cmp;            // attr: the comparison, when a value is given
  value?: string;       // attr: the value compared with
}
export type Term = TextTerm | FilterTerm;

export interface Query {
  terms: Term[];
  /** Terms that could not be read (a bad regex, `attr:` without a name); they are left out. */
  errors: string[];
  /** Terms read as text although they look like filters (`ops:Conv2D`). */
  notes: string[];
}

/** Splits on whitespace outside double quotes; the quotes are dropped. */
export function tokenize(q: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  let any = false;
  for (const ch of q) {
    if (ch === '"') { quoted = !quoted; any = true; continue; }
    if (!quoted && /\s/.test(ch)) {
      if (any) out.push(cur);
      cur = ''; any = false;
      continue;
    }
    cur += ch; any = true;
  }
  if (any) out.push(cur);
  return out;
}

function regexOf(s: string): RegExp | null | undefined {
  if (s.length > 2 && s.startsWith('/') && s.endsWith('/')) {
    try { return new RegExp(s.slice(1, -1), 'i'); } catch { return null; }
  }
  return undefined;
}

/** A whole-name matcher: case-insensitive equality, `*` wildcards, or /regex/ (null: a bad regex). */
export function nameMatcher(v: string): ((s: string) => boolean) | null {
  const re = regexOf(v);
  if (re === null) return null;
  if (re) return (s) => re.test(s);
  if (v.includes('*')) {
    const g = new RegExp('^' + v.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$', 'i');
    return (s) => g.test(s);
  }
  const l = v.toLowerCase();
  return (s) => s.toLowerCase() === l;
}

function substringMatcher(v: string): ((s: string) => boolean) | null {
  const re = regexOf(v);
  if (re === null) return null;
  if (re) return (s) => re.test(s);
  const l = v.toLowerCase();
  return (s) => s.toLowerCase().includes(l);
}

/** A shape as the search compares it: dims joined by ',' ("1,64,N,(H-1)//2+1"). */
export function shapeKey(t: Tensor | undefined): string {
  if (!t) return '';
  if (t.unranked) return '*';
  return (t.shape ?? []).map(dimText).join(',').toLowerCase();
}

/** A shape typed in the box ("56x56", "1×64", "[1, 64, 56, 56]") in shapeKey's form; whole: brackets. */
export function shapeQuery(v: string): { key: string; whole: boolean } {
  let s = v.trim();
  const whole = /^[[(].*[\])]$/.test(s);
  if (whole) s = s.slice(1, -1);
  s = s.replace(/\s+/g, '').replace(/×/g, ',').replace(/(?<=[\dA-Z?)])[xX](?=[\dA-Z?(])/g, ',');
  return { key: s.toLowerCase().replace(/,$/, ''), whole };
}

const ATTR_RE = /^([^=!<>]*)(=|!=|<=|>=|<|>)(.*)$/;

function readFilter(key: FilterKey, raw: string, neg: boolean): FilterTerm | string | null {
  if (raw === '') return null;  // still being typed
  if (key === 'attr') {
    const m = ATTR_RE.exec(raw);
    const name = (m ? m[1] : raw).trim();
    if (!name) return `attr:${raw}: no attribute name`;
    const test = nameMatcher(name);
    if (!test) return `attr:${raw}: bad regular expression`;
    if (!m) return { kind: 'filter', key, raw, neg, test };
    const cmp = m[2] as Cmp;
    const value = m[3].trim();
    if (value === '') return null;  // "attr:k=" while typing
    if (cmp !== '=' && cmp !== '!=' && !Number.isFinite(Number(value))) return `attr:${raw}: ${cmp} needs a number`;
    return { kind: 'filter', key, raw, neg, test, cmp, value };
  }
  if (key === 'shape') {
    const { key: k, whole } = shapeQuery(raw);
    if (!k) return null;
    return { kind: 'filter', key, raw, neg, test: whole ? (s) => s === k : (s) => s.includes(k) };
  }
  const test = key === 'id' || key === 'api' ? substringMatcher(raw) : nameMatcher(raw);
  if (!test) return `${key}:${raw}: bad regular expression`;
  return { kind: 'filter', key, raw, neg, test };
}

/** Reads a query (see the top of this file). */
export function parseQuery(q: string): Query {
  const terms: Term[] = [];
  const errors: string[] = [];
  const notes: string[] = [];
  for (let tok of tokenize(q)) {
    let neg = false;
    if (tok.length > 1 && tok.startsWith('-')) { neg = true; tok = tok.slice(1); }
    const m = /^([A-Za-z]+):(.*)$/.exec(tok);
    const key = m ? FILTER_KEYS[m[1].toLowerCase()] : undefined;
    if (m && key) {
      const f = readFilter(key, m[2], neg);
      if (typeof f === 'string') errors.push(f);
      else if (f) terms.push(f);
      continue;
    }
    if (m && m[2] !== '' && !/^\d/.test(m[2])) notes.push(`${m[1]}: is not a filter, searched as text`);
    const re = regexOf(tok);
    if (re === null) { errors.push(`${tok}: bad regular expression`); continue; }
    terms.push({ kind: 'text', text: tok.toLowerCase(), re: re ?? null, neg });
  }
  return { terms, errors, notes };
}

/** What the matcher needs besides the drawn graph: per Cell, not per layer. */
export interface SearchContext {
  classes: ReadonlyMap<string, string>;                  // Cell instance path -> class
  kernelsOf: ReadonlyMap<string, HardwareKernel[]>;      // semantic node id -> its kernels
  semantic: ReadonlyMap<string, Node>;                   // semantic node by id
}

export function searchContext(cell: Cell | undefined): SearchContext {
  const kernelsOf = new Map<string, HardwareKernel[]>();
  for (const o of cell?.optimized?.nodes ?? []) {
    const ks = o.hardware ?? [];
    if (ks.length === 0) continue;
    for (const id of o.origins ?? []) {
      const l = kernelsOf.get(id);
      if (l) l.push(...ks); else kernelsOf.set(id, [...ks]);
    }
  }
  return {
    classes: cell ? scopeClasses(cell) : new Map(),
    kernelsOf,
    semantic: new Map((cell?.nodes ?? []).map((n) => [n.id, n] as const)),
  };
}

const EMPTY_CONTEXT: SearchContext = { classes: new Map(), kernelsOf: new Map(), semantic: new Map() };

/** The attributes the panel shows for a node: the kernel's own, else its main origin's. */
export function nodeAttrs(n: VNode): Record<string, AttrValue> {
  const own = n.optimized?.attrs;
  if (own && Object.keys(own).length) return own;
  return n.semantic?.attrs ?? {};
}

/** The hardware kernels of a drawn node: its own (optimized layers), else those made from it. */
function kernelsOf(n: VNode, ctx: SearchContext): HardwareKernel[] {
  if (n.optimized) return n.optimized.hardware ?? [];
  return ctx.kernelsOf.get(n.id) ?? [];
}

/** The Cell instances around a node, innermost last: every prefix of its scope path. */
function enclosing(scope: string): string[] {
  if (!scope) return [''];
  const parts = scope.split('.');
  const out = [''];
  for (let i = 1; i <= parts.length; i++) out.push(parts.slice(0, i).join('.'));
  return out;
}

function attrList(v: AttrValue): AttrValue[] | null {
  return Array.isArray(v) ? v : null;
}

function scalarText(v: AttrValue): string {
  if (v === null) return 'none';
  if (typeof v === 'string') return v.toLowerCase();
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return JSON.stringify(v).toLowerCase();
}

/** Whether an attribute value equals what was typed: "3" is 3 and also (3, 3); "3,3" is (3, 3). */
export function attrEquals(v: AttrValue, typed: string): boolean {
  const t = typed.trim().replace(/^["']|["']$/g, '');
  const list = attrList(v);
  const parts = t.replace(/^[[(]|[\])]$/g, '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  const eq1 = (x: AttrValue, s: string): boolean => {
    if (typeof x === 'number') return Number(s) === x && s !== '';
    if (typeof x === 'boolean' || x === null) return scalarText(x) === s.toLowerCase();
    return scalarText(x) === s.toLowerCase();
  };
  if (list) {
    if (parts.length === list.length && list.every((x, i) => eq1(x, parts[i]))) return true;
    return parts.length === 1 && list.length > 0 && list.every((x) => eq1(x, parts[0]));
  }
  if (parts.length === 1) return eq1(v, parts[0]);
  return scalarText(v) === t.toLowerCase();
}

function attrCompare(v: AttrValue, cmp: Cmp, typed: string): boolean {
  if (cmp === '=') return attrEquals(v, typed);
  if (cmp === '!=') return !attrEquals(v, typed);
  const num = Number(typed);
  const vals = attrList(v) ?? [v];
  if (vals.length === 0 || !vals.every((x) => typeof x === 'number')) return false;
  return (vals as number[]).every((x) => cmp === '<' ? x < num : cmp === '<=' ? x <= num : cmp === '>' ? x > num : x >= num);
}

function filterHolds(f: FilterTerm, n: VNode, ctx: SearchContext): boolean {
  const fl = n.failure;
  switch (f.key) {
    case 'op':
      if (f.test(fl ? fl.op ?? '' : n.op)) return true;
      // A kernel also matches the operators it was made from (op:BatchNorm finds the convs it was folded into).
      return !!n.optimized && (n.optimized.origins ?? []).some((o) => f.test(ctx.semantic.get(o)?.op ?? ''));
    case 'id': return f.test(fl ? fl.id : n.id) || (!!n.optimized && (n.optimized.origins ?? []).some((o) => f.test(o)));
    case 'api': return f.test((fl ? fl.api : n.semantic?.api) ?? '');
    case 'cell': {
      for (const p of enclosing(n.scope)) {
        if (p && f.test(p)) return true;
        const cls = ctx.classes.get(p);
        if (cls && (f.test(cls) || f.test(cls.slice(cls.lastIndexOf('.') + 1)))) return true;
      }
      return false;
    }
    case 'attr': {
      const attrs = nodeAttrs(n);
      return Object.keys(attrs).some((k) => f.test(k) && (f.cmp === undefined || attrCompare(attrs[k], f.cmp, f.value ?? '')));
    }
    case 'shape': return n.outputs.some((t) => f.test(shapeKey(t)));
    case 'dtype': return n.outputs.some((t) => !!t.dtype && f.test(t.dtype));
    case 'bound': return kernelsOf(n, ctx).some((k) => !!k.bound && f.test(k.bound));
    case 'unit': return kernelsOf(n, ctx).some((k) => !!k.unit && f.test(k.unit));
  }
}

export interface SearchHit { id: string; score: number; field: 'id' | 'op' | 'api' | 'scope' | 'message' | 'filter' }

/** How well a text term matches a node: the best field, or null. */
function textScore(t: TextTerm, n: VNode): { score: number; field: SearchHit['field'] } | null {
  const f = n.failure;
  const fields: [SearchHit['field'], string, number][] = [
    ['id', f ? f.id : n.id, 4], ['op', n.op, 3], ['api', (f ? f.api : n.semantic?.api) ?? '', 2], ['scope', n.scope, 1],
  ];
  if (f) fields.push(['message', `${f.code ?? ''} ${f.message ?? ''}`, 0]);
  let best: { score: number; field: SearchHit['field'] } | null = null;
  for (const [field, s, w] of fields) {
    if (!s) continue;
    let m: number;
    if (t.re) m = t.re.test(s) ? 1 : -1;
    else {
      const l = s.toLowerCase();
      m = l === t.text ? 3 : l.startsWith(t.text) ? 2 : l.includes(t.text) ? 1 : -1;
    }
    if (m < 0) continue;
    const score = m * 10 + w;
    if (!best || score > best.score) best = { score, field };
  }
  return best;
}

/**
 * The nodes of `g` a query matches (all its terms hold), best first (text terms score by the
 * field they hit: id, op, API, scope; then execution order). Lazy placeholders never match.
 */
export function search(g: ViewGraph, query: string | Query, ctx: SearchContext = EMPTY_CONTEXT, limit = Infinity): SearchHit[] {
  const q = typeof query === 'string' ? parseQuery(query) : query;
  if (q.terms.length === 0) return [];
  const hits: SearchHit[] = [];
  for (const n of g.nodes) {
    if (n.kind === 'lazy') continue;
    let score = 0, best = -1;
    let field: SearchHit['field'] = 'filter';
    let ok = true;
    for (const t of q.terms) {
      if (t.kind === 'text') {
        const m = textScore(t, n);
        if (t.neg ? m !== null : m === null) { ok = false; break; }
        if (m && !t.neg) {
          score += m.score;
          if (m.score > best) { best = m.score; field = m.field; }
        }
      } else if (filterHolds(t, n, ctx) === t.neg) { ok = false; break; }
    }
    if (ok) hits.push({ id: n.id, score, field });
  }
  const order = new Map(g.nodes.map((n) => [n.id, n.order] as const));
  hits.sort((a, b) => b.score - a.score || (order.get(a.id)! - order.get(b.id)!));
  return Number.isFinite(limit) ? hits.slice(0, limit) : hits;
}

/** The groups holding the given nodes (their ancestors below the root), to mark collapsed ones. */
export function groupsHolding(g: ViewGraph, ids: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const id of ids) {
    let p = g.parentOf.get(id);
    while (p && p !== g.root.id && !out.has(p)) { out.add(p); p = g.parentOf.get(p); }
  }
  return out;
}
