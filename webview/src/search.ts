// Search over node names, op types, APIs and scopes (and a failed call's message).
import type { ViewGraph } from './model';

export interface SearchHit { id: string; score: number; field: 'id' | 'op' | 'api' | 'scope' | 'message' }

export function search(g: ViewGraph, query: string, limit = 200): SearchHit[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  let re: RegExp | null = null;
  if (q.length > 2 && q.startsWith('/') && q.endsWith('/')) {
    try { re = new RegExp(q.slice(1, -1), 'i'); } catch { re = null; }
  }
  const test = (s: string): number => {
    if (!s) return -1;
    if (re) return re.test(s) ? 1 : -1;
    const l = s.toLowerCase();
    if (l === q) return 3;
    if (l.startsWith(q)) return 2;
    return l.includes(q) ? 1 : -1;
  };
  const hits: SearchHit[] = [];
  for (const n of g.nodes) {
    const f = n.failure;
    const fields: [SearchHit['field'], string, number][] = [
      ['id', f ? f.id : n.id, 4], ['op', n.op, 3], ['api', (f ? f.api : n.semantic?.api) ?? '', 2], ['scope', n.scope, 1],
    ];
    if (f) fields.push(['message', `${f.code ?? ''} ${f.message ?? ''}`, 0]);
    let best: SearchHit | null = null;
    for (const [field, s, w] of fields) {
      const m = test(s);
      if (m < 0) continue;
      const score = m * 10 + w;
      if (!best || score > best.score) best = { id: n.id, score, field };
    }
    if (best) hits.push(best);
  }
  const order = new Map(g.nodes.map((n) => [n.id, n.order] as const));
  hits.sort((a, b) => b.score - a.score || (order.get(a.id)! - order.get(b.id)!));
  return hits.slice(0, limit);
}
