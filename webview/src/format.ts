// Small formatting helpers shared by the panel, the canvas and the SVG export.
import type { Dim, Range, Tensor } from './protocol';

export function dimText(d: Dim): string {
  return d === null ? '?' : String(d);
}

/** A dim as a factor of `a×b×c`: an expression ("(H-3)//8+1") in parentheses, so that the
 * shape reads as its factors. */
export function dimFactor(d: Dim): string {
  const s = dimText(d);
  return /[-+*/ ]/.test(s) && !/^\((?:[^()]|\([^()]*\))*\)$/.test(s) ? `(${s})` : s;
}

export function shapeText(t: Tensor | undefined): string {
  if (!t) return '';
  if (t.unranked) return '[*]';
  const s = t.shape ?? [];
  return s.length === 0 ? '[]' : s.map(dimFactor).join('×');
}

/** Short dtype names, as the compiler writes them (graphcore's dtype_short_name, the CLI's text
 * form and the inlay hints): "f32", "f16", "bf16", "i64", "u8", "bool", "c64"; "?" unknown. */
const DTYPE_SHORT: Record<string, string> = {
  float64: 'f64', float32: 'f32', float16: 'f16', bfloat16: 'bf16', int64: 'i64', int32: 'i32', int16: 'i16', int8: 'i8',
  uint8: 'u8', uint16: 'u16', uint32: 'u32', uint64: 'u64', bool: 'bool', complex64: 'c64', complex128: 'c128', unknown: '?',
};

export function dtypeShort(dtype: string | undefined): string {
  if (!dtype) return '';
  return DTYPE_SHORT[dtype] ?? dtype;
}

/** Longest shape text an edge label shows (a symbolic shape can be long: it is cut with "…"). */
export const EDGE_SHAPE_MAX = 40;

/**
 * An edge's label, one or two lines: the tensor's shape, its dtype abbreviated ("1×64×56×56 f16")
 * and, where the layout pass recorded one (optimization and hardware layers), its format
 * ("1×64×56×56 f16 NC1HWC0"). `twoLines` puts dtype and format on a line of their own (left to
 * right layouts, where labels sit in the narrow gap between layers). [] for no tensor.
 */
export function edgeLabelLines(t: Tensor | undefined, twoLines = false): string[] {
  if (!t) return [];
  let shape = shapeText(t);
  if (shape.length > EDGE_SHAPE_MAX) shape = shape.slice(0, EDGE_SHAPE_MAX - 1) + '…';
  const rest: string[] = [];
  const dt = t.dtype && t.dtype !== 'unknown' ? dtypeShort(t.dtype) : '';
  if (dt) rest.push(dt);
  if (t.format) rest.push(t.format);
  if (rest.length === 0) return [shape];
  return twoLines ? [shape, rest.join(' ')] : [`${shape} ${rest.join(' ')}`];
}

export function tensorText(t: Tensor | undefined): string {
  if (!t) return '';
  const parts = [shapeText(t)];
  if (t.dtype && t.dtype !== 'unknown') parts.push(t.dtype);
  if (t.format) parts.push(t.format);
  return parts.join(' ');
}

const DTYPE_BYTES: Record<string, number> = {
  float64: 8, float32: 4, float16: 2, bfloat16: 2, int64: 8, int32: 4, int16: 2, int8: 1, uint8: 1,
  uint16: 2, uint32: 4, uint64: 8, bool: 1, complex64: 8, complex128: 16,
};

export function tensorBytes(t: Tensor | undefined): number {
  if (!t || t.unranked) return 0;
  let n = 1;
  for (const d of t.shape ?? []) {
    if (typeof d !== 'number') return 0;
    n *= d;
  }
  return n * (DTYPE_BYTES[t.dtype ?? ''] ?? 4);
}

/** Operator categories that compute no FLOPs (graph.proto's Node.category). */
const NO_FLOPS = new Set(['shape', 'index', 'creation', 'cast', 'data-move']);

/** FLOPs as the panel shows them: a count, or "?" when they are 0 only because a shape they
 * depend on is symbolic (the analyser counts FLOPs of fully known shapes); `category`: the
 * node's, when it is one node (a reshape's 0 is a real 0). */
export function flopsText(flops: number, tensors: readonly (Tensor | undefined)[], category?: string): string {
  if (flops > 0 || (category !== undefined && NO_FLOPS.has(category))) return fmtNum(flops);
  const symbolic = tensors.some((t) => !!t && (t.unranked || (t.shape ?? []).some((d) => typeof d !== 'number')));
  return symbolic ? '? (symbolic shape)' : fmtNum(flops);
}

export function fmtNum(v: number, digits = 3): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e12) return (v / 1e12).toPrecision(digits) + 'T';
  if (a >= 1e9) return (v / 1e9).toPrecision(digits) + 'G';
  if (a >= 1e6) return (v / 1e6).toPrecision(digits) + 'M';
  if (a >= 1e4) return (v / 1e3).toPrecision(digits) + 'k';
  if (Number.isInteger(v)) return String(v);
  return v.toPrecision(digits);
}

export function fmtBytes(v: number): string {
  const a = Math.abs(v);
  if (a >= 1 << 30) return (v / (1 << 30)).toFixed(2) + ' GiB';
  if (a >= 1 << 20) return (v / (1 << 20)).toFixed(2) + ' MiB';
  if (a >= 1 << 10) return (v / (1 << 10)).toFixed(1) + ' KiB';
  return `${v} B`;
}

export function rangeText(file: string | undefined, r: Range | undefined): string {
  if (!file) return '';
  if (!r) return file;
  // proto3 JSON leaves out zeros: a range on the first line or column has no line / character.
  return `${file}:${(r.start?.line ?? 0) + 1}:${(r.start?.character ?? 0) + 1}`;
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;');
}
