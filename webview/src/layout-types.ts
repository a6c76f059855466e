// Messages between the layout manager (main thread) and the layout worker.

export interface LayoutChild {
  id: string;
  w: number;
  h: number;
  /** A port proxy: placed in the first ('in') or last ('out') layer. */
  port?: 'in' | 'out';
}

export interface LayoutEdgeIn { id: string; s: string; t: string }

/** The layout's main axis: layers top to bottom ('DOWN') or left to right ('RIGHT'). */
export type Direction = 'DOWN' | 'RIGHT';

/**
 * One layout: children and edges with canonical ids (`c<i>` in the group's child order, ports
 * after them; `e<j>`), so that groups of the same structure share it (see LayoutCache).
 */
export interface LayoutJob {
  /** The group it is laid out for (the first of those sharing it). */
  group: string;
  key: string;
  children: LayoutChild[];
  edges: LayoutEdgeIn[];
  /** Absent: 'DOWN'. */
  dir?: Direction;
}

export interface LayoutRequest { id: number; jobs: LayoutJob[] }

export interface GroupLayout {
  group: string;
  key: string;
  width: number;
  height: number;
  /** child id -> [x, y, w, h] relative to the group's content origin */
  pos: Record<string, [number, number, number, number]>;
  /** aggregated edge id -> flat list of points x0,y0,x1,y1,... */
  edges: Record<string, number[]>;
  ms: number;
}

export interface LayoutResponse { id: number; layouts: GroupLayout[]; error?: string; ms: number }

export const GROUP_PAD_X = 16;
export const GROUP_PAD_TOP = 34;
export const GROUP_PAD_BOTTOM = 16;

export function frameSize(l: { width: number; height: number }): [number, number] {
  return [Math.max(160, l.width + 2 * GROUP_PAD_X), l.height + GROUP_PAD_TOP + GROUP_PAD_BOTTOM];
}
