// The debugger's focus (view.proto's DebugFocus, from `cellscope dap` through the editor): which
// drawn nodes stand for the paused node in a layer, which scopes of a lazy Cell must be loaded to
// reach it, and the side panel's "paused here" card with the live tensor statistics.
import type { DebugFocus } from './protocol';
import { scopeGroupPath, type LazyInput, type ViewGraph } from './model';
import { escapeHtml as h } from './format';

/** Whether `f` names a paused node (an empty node clears the focus). */
export function isPaused(f: DebugFocus | null | undefined): f is DebugFocus & { node: string } {
  return !!f && typeof f.node === 'string' && f.node !== '';
}

/**
 * The drawn nodes of `g` the focus stands for: the semantic node itself in the semantic layer; in
 * the optimized and hardware layers, the kernels whose origins include it (a fused kernel holds
 * several semantic nodes; a node folded away has none).
 */
export function debugTargets(g: ViewGraph, f: DebugFocus): string[] {
  if (!isPaused(f)) return [];
  if (g.layer === 'semantic') return g.byId.has(f.node) && g.byId.get(f.node)?.kind !== 'lazy' ? [f.node] : [];
  return (g.semanticToOptimized.get(f.node) ?? []).filter((id) => g.byId.has(id));
}

/** The view group path of the focused node (its Cell scope, or the parent for a leaf-Cell call). */
export function focusGroupPath(f: DebugFocus): string {
  return isPaused(f) ? scopeGroupPath(f.node, f.scope ?? '') : '';
}

/**
 * The scopes of a lazy Cell to ask for so that the focused node is loaded: every scope from the
 * root down to the node's group that is neither loaded nor already asked for, outermost first.
 */
export function scopesToLoad(f: DebugFocus, lz: LazyInput): string[] {
  if (!isPaused(f)) return [];
  const path = focusGroupPath(f);
  if (path === '') return [];
  const known = new Set((lz.skeleton.scopes ?? []).map((s) => s.scope ?? ''));
  const parts = path.split('.');
  const out: string[] = [];
  for (let i = 1; i <= parts.length; i++) {
    const p = parts.slice(0, i).join('.');
    if (!known.has(p) || lz.chunks.has(p) || lz.pending.has(p)) continue;
    out.push(p);
  }
  return out;
}

/** proto3 JSON prints int64 as strings: the shape as numbers. */
export function focusShape(f: DebugFocus): number[] {
  return (f.shape ?? []).map((d) => Number(d));
}

function shapeStr(s: number[]): string {
  return `(${s.join(', ')}${s.length === 1 ? ',' : ''})`;
}

function statNum(v: number | undefined): string {
  if (v === undefined) return '—';
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(3) : v.toPrecision(5).replace(/\.?0+$/, '');
}

const REASONS: Record<string, string> = {
  entry: 'on entry', breakpoint: 'at a breakpoint', step: 'after a step', pause: 'paused',
  exception: 'on an exception', 'data breakpoint': 'at a watchpoint',
};

/**
 * The side panel's card for the paused node: badge, node, source line, and the live tensor's
 * statistics. `reveal` renders a source link (the editor opens the line).
 */
export function debugPanelHtml(f: DebugFocus, reveal: (file: string, line: number) => string): string {
  if (!isPaused(f)) return '';
  const st = f.stats ?? {};
  const shape = focusShape(f);
  const rows: string[] = [];
  const row = (k: string, v: string, cls = ''): void => {
    rows.push(`<tr${cls ? ` class="${cls}"` : ''}><th>${h(k)}</th><td>${v}</td></tr>`);
  };
  const what = f.ran ? 'output' : `input${f.tensor ? ` <span class="mono">${h(f.tensor)}</span>` : ''} (before the node runs)`;
  if (f.tensor || shape.length || f.dtype) {
    row('tensor', what);
    row('shape', h(shapeStr(shape)) + (f.dtype ? ` ${h(f.dtype)}` : ''));
    if (st.numel !== undefined) row('numel', statNum(st.numel));
    for (const k of ['min', 'max', 'mean', 'std']) row(k, statNum(st[k]));
    row('nan', statNum(st.nan ?? 0), (st.nan ?? 0) > 0 ? 'bad' : '');
    row('inf', statNum(st.inf ?? 0), (st.inf ?? 0) > 0 ? 'bad' : '');
    if (st.zeros !== undefined) row('zeros', statNum(st.zeros));
  } else {
    row('tensor', '<span class="muted">no value at hand</span>');
  }
  const where = f.line ? reveal(f.source || f.file || '', f.line) : '';
  const reason = REASONS[f.reason ?? ''] ?? (f.reason ? h(f.reason) : '');
  return `<div class="debug-card">` +
    `<div class="dh"><span class="paused-badge"><i class="pause-icon"></i>Paused here</span>${reason ? ` <span class="muted">${reason}</span>` : ''}</div>` +
    `<div class="dn"><span class="op">${h(f.op ?? '')}</span> <span class="id">${h(f.node)}</span></div>` +
    (where ? `<div class="dl">${where}</div>` : '') +
    (f.description ? `<div class="dx">${h(f.description)}</div>` : '') +
    `<table class="kv">${rows.join('')}</table></div>`;
}
