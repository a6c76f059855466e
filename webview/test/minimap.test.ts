import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MINIMAP_MAX_ASPECT, MINIMAP_PAD, cameraAt, clipRect, minimapBounds, minimapDrawing, minimapGeometry, viewportRect, worldAt,
} from '../src/minimap';
import type { DrawItem, Scene } from '../src/layout';

const close = (a: number, b: number, eps = 1e-6): void => assert.ok(Math.abs(a - b) <= eps, `${a} ≈ ${b}`);

test('the overview keeps the graph\'s aspect, up to MINIMAP_MAX_ASPECT', () => {
  const g = minimapGeometry(2000, 1000, 200, 150);
  assert.equal(g.w, 200);
  assert.equal(g.h, 100);
  close(g.kx, (200 - 2 * MINIMAP_PAD) / 2000);
  close(g.kx, g.ky, 5e-3);  // uniform (but for the padding)
  // A tall column (ResNet-50 top-down, ~1:40): a MAX_ASPECT box, the length squeezed more.
  const t = minimapGeometry(400, 16000, 200, 150);
  assert.equal(t.h, 150);
  assert.equal(t.w, Math.round(150 / MINIMAP_MAX_ASPECT));
  assert.ok(t.kx > t.ky * 5, `${t.kx} vs ${t.ky}`);
  // Left to right, the same graph: a wide box.
  const w = minimapGeometry(16000, 400, 200, 150);
  assert.equal(w.w, 200);
  assert.equal(w.h, Math.round(200 / MINIMAP_MAX_ASPECT));
  // The whole scene maps inside the box.
  for (const geo of [g, t, w]) {
    const [sw, sh] = geo === g ? [2000, 1000] : geo === t ? [400, 16000] : [16000, 400];
    close(geo.ox + sw * geo.kx, geo.w - MINIMAP_PAD);
    close(geo.oy + sh * geo.ky, geo.h - MINIMAP_PAD);
  }
});

test('no overview in a small pane; bounds grow with the pane, capped', () => {
  assert.equal(minimapBounds(300, 600), null);
  assert.equal(minimapBounds(800, 200), null);
  const b = minimapBounds(1000, 800)!;
  assert.ok(b.maxW >= 100 && b.maxW <= 240 && b.maxH >= 80 && b.maxH <= 240, JSON.stringify(b));
  assert.deepEqual(minimapBounds(5000, 5000), { maxW: 240, maxH: 240 });
});

test('the viewport rectangle is the pane\'s visible world part, scaled', () => {
  const geo = minimapGeometry(2000, 1000, 200, 150);  // k = 0.096
  // Zoom 0.5, the world's (100, 50) at the pane's top-left: the pane (800×400) shows 1600×800 world units.
  const r = viewportRect(geo, { scale: 0.5, tx: -50, ty: -25 }, 800, 400);
  close(r.x, geo.ox + 100 * geo.kx);
  close(r.y, geo.oy + 50 * geo.ky);
  close(r.w, 1600 * geo.kx);
  close(r.h, 800 * geo.ky);
  // Panned off the graph: clipped to the box, or nothing.
  const off = viewportRect(geo, { scale: 1, tx: 5000, ty: 0 }, 800, 400);
  assert.equal(clipRect(off, geo.w, geo.h), null);
  const part = clipRect({ x: -10, y: 20, w: 30, h: 500 }, geo.w, geo.h)!;
  assert.deepEqual(part, { x: 0, y: 20, w: 20, h: geo.h - 20 });
});

test('a click in the overview centres the pane on the world point under it, zoom kept', () => {
  const geo = minimapGeometry(400, 16000, 200, 150);
  const cam = { scale: 0.8, tx: 10, ty: 20 };
  const [wx, wy] = worldAt(geo, 20, 75);
  close(wx, (20 - geo.ox) / geo.kx);
  close(wy, (75 - geo.oy) / geo.ky);
  const c = cameraAt(geo, 20, 75, cam, 1000, 700);
  assert.equal(c.scale, 0.8);
  // The pane's centre now shows (wx, wy) ...
  close((500 - c.tx) / c.scale, wx);
  close((350 - c.ty) / c.scale, wy);
  // ... and the viewport rectangle is centred on the click.
  const r = viewportRect(geo, c, 1000, 700);
  close(r.x + r.w / 2, 20);
  close(r.y + r.h / 2, 75);
  // Clicking the centre of the current rectangle does not move the camera.
  const r0 = viewportRect(geo, cam, 1000, 700);
  const same = cameraAt(geo, r0.x + r0.w / 2, r0.y + r0.h / 2, cam, 1000, 700);
  close(same.tx, cam.tx, 1e-6);
  close(same.ty, cam.ty, 1e-6);
});

function bigScene(n: number): Scene {
  const items: DrawItem[] = [];
  for (let g = 0; g < n / 400; g++) items.push({ id: `g${g}`, type: 'frame', x: 0, y: g * 20000, w: 300, h: 19000, depth: 1 });
  for (let i = 0; i < n; i++) {
    const node = { id: `n${i}`, kind: 'op', op: i % 3 ? 'Conv2D' : 'ReLU', label: '', sub: '', group: '', order: i, width: 120, height: 40,
      inputs: [], outputs: [], fused: false, dataMove: false, scope: '' };
    items.push({ id: `n${i}`, type: 'node', x: 20, y: i * 50, w: 120, h: 40, node, depth: 2 });
  }
  return { items, byId: new Map(items.map((it) => [it.id, it])), edges: [], width: 300, height: n * 50, nodesDrawn: n, groupsDrawn: 0 };
}

test('the overview draws boxes batched by colour, every box at least 1 px, marks at least 4 px; 10k nodes stay cheap', () => {
  const s = bigScene(10000);
  const geo = minimapGeometry(s.width, s.height, 200, 200);
  const t0 = performance.now();
  const d = minimapDrawing(s, geo, { box: (it) => (it.node?.op === 'ReLU' ? 'red' : 'blue'), mark: (id) => (id === 'n5' ? 'accent' : null) });
  const ms = performance.now() - t0;
  assert.equal(d.frames.length / 4, 25);
  assert.deepEqual([...d.boxes.keys()].sort(), ['blue', 'red']);
  assert.equal((d.boxes.get('red')!.length + d.boxes.get('blue')!.length) / 4, 10000);
  for (const list of d.boxes.values()) for (let i = 2; i < list.length; i += 4) assert.ok(list[i] >= 1 && list[i + 1] >= 1);
  const m = d.marks.get('accent')!;
  assert.equal(m.length, 4);
  assert.ok(m[2] >= 4 && m[3] >= 4);
  assert.ok(ms < 100, `${ms.toFixed(1)} ms for 10k boxes`);
});
