// The spine layout (spine.ts): residual blocks, shortcuts, parallel projections and constants
// laid out without elkjs; never a box on another, never an edge through a node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GroupLayout, LayoutChild, LayoutJob } from '../src/layout-types';
import { chainLayout, GAP } from '../src/chain';
import { LANE_GAP, segmentHitsBox, spineLayout } from '../src/spine';

type E = [string, string];
const box = (id: string, w = 100, h = 40): LayoutChild => ({ id, w, h });
const pin = (id: string): LayoutChild => ({ id, w: 8, h: 2, port: 'in' });
const pout = (id: string): LayoutChild => ({ id, w: 8, h: 2, port: 'out' });
const job = (children: LayoutChild[], edges: E[], dir?: 'RIGHT'): LayoutJob => ({
  group: 'g:t', key: 'k', children, edges: edges.map(([s, t], i) => ({ id: 'e' + i, s, t })), ...(dir ? { dir } : {}),
});
const centreX = (l: GroupLayout, id: string) => l.pos[id][0] + l.pos[id][2] / 2;
const edgeOf = (j: LayoutJob, l: GroupLayout, s: string, t: string) => l.edges[j.edges.find((e) => e.s === s && e.t === t)!.id];

/** The invariants of any layout: boxes apart, every edge from its source's exit to its target's entry, no edge through a node. */
function checkLayout(j: LayoutJob, l: GroupLayout): void {
  const nodes = j.children.filter((c) => !c.port);
  for (const c of j.children) {
    const p = l.pos[c.id];
    assert.ok(p, `${c.id} placed`);
    assert.deepEqual([p[2], p[3]], [c.w, c.h], `${c.id} keeps its size`);
    assert.ok(p[0] >= -1e-9 && p[1] >= -1e-9 && p[0] + p[2] <= l.width + 1e-9 && p[1] + p[3] <= l.height + 1e-9,
      `${c.id} inside: ${p.join(',')} in ${l.width}x${l.height}`);
  }
  for (let a = 0; a < nodes.length; a++) {
    for (let b = a + 1; b < nodes.length; b++) {
      const [ax, ay, aw, ah] = l.pos[nodes[a].id], [bx, by, bw, bh] = l.pos[nodes[b].id];
      assert.ok(ax + aw <= bx || bx + bw <= ax || ay + ah <= by || by + bh <= ay, `${nodes[a].id} and ${nodes[b].id} overlap`);
    }
  }
  for (const e of j.edges) {
    const pts = l.edges[e.id];
    assert.ok(pts && pts.length >= 4, `${e.id} routed`);
    const [sx, sy, sw, sh] = l.pos[e.s], [tx, ty, tw] = l.pos[e.t];
    assert.deepEqual([pts[0], pts[1]], [sx + sw / 2, sy + sh], `${e.id} leaves ${e.s} at its bottom`);
    assert.deepEqual([pts.at(-2), pts.at(-1)], [tx + tw / 2, ty], `${e.id} enters ${e.t} at its top`);
    for (let i = 1; i + 2 < pts.length; i += 2) assert.ok(pts[i + 2] >= pts[i], `${e.id} never goes up`);
    for (const c of nodes) {
      if (c.id === e.s || c.id === e.t) continue;
      const [x, y, w, h] = l.pos[c.id];
      for (let i = 0; i + 3 < pts.length; i += 2) {
        assert.ok(!segmentHitsBox(pts[i], pts[i + 1], pts[i + 2], pts[i + 3], x + 1, y + 1, x + w - 1, y + h - 1),
          `${e.id} (${e.s}->${e.t}) crosses ${c.id}: ${pts.join(',')}`);
      }
    }
  }
}

test('a chain: the same geometry as the chain layout', () => {
  const j = job([box('a'), box('b', 140), box('c', 100, 50), pin('pi'), pout('po')], [['pi', 'a'], ['a', 'b'], ['b', 'c'], ['c', 'po']]);
  assert.deepEqual(spineLayout(j), chainLayout(j));
});

test('a residual block: one column, the identity in a lane right of it', () => {
  const kids = ['conv1', 'bn1', 'relu', 'conv2', 'bn2', 'add', 'relu2'];
  const edges: E[] = kids.slice(1).map((k, i) => [kids[i], k]);
  const j = job([...kids.map((k) => box(k)), pin('p0'), pin('p1'), pout('po')], [...edges, ['p0', 'conv1'], ['p1', 'add'], ['relu2', 'po']]);
  const l = spineLayout(j)!;
  assert.ok(l);
  checkLayout(j, l);
  for (const k of kids) assert.equal(centreX(l, k), 50, `${k} on the spine`);
  for (let i = 1; i < kids.length; i++) assert.equal(l.pos[kids[i]][1], l.pos[kids[i - 1]][1] + 40 + GAP);
  const id = edgeOf(j, l, 'p1', 'add');
  // From the port to the lane, down the lane, into the Add.
  assert.equal(id.length, 8, id.join(','));
  const laneX = id[2];
  assert.equal(laneX, 100 + LANE_GAP, 'the lane just right of the spine');
  assert.equal(id[4], laneX);
  assert.ok(id[3] < l.pos.conv1[1] && id[5] > l.pos.bn2[1] + 40, 'alongside the spine from the first node to the Add');
  assert.equal(l.width, laneX);
  assert.deepEqual(edgeOf(j, l, 'conv1', 'bn1'), [50, l.pos.conv1[1] + 40, 50, l.pos.bn1[1]], 'straight down');
});

test('a shortcut block: the shortcut beside the first layer, down its column into the Add', () => {
  const main = ['conv1', 'bn1', 'relu', 'conv2', 'bn2', 'conv3', 'bn3'];
  const j = job([...main.map((k) => box(k)), box('down', 170, 140), box('add'), box('relu3'), pin('p0'), pin('p1'), pout('po')],
    [...main.slice(1).map((k, i): E => [main[i], k]), ['bn3', 'add'], ['down', 'add'], ['add', 'relu3'], ['p0', 'conv1'], ['p1', 'down'], ['relu3', 'po']]);
  const l = spineLayout(j)!;
  assert.ok(l);
  checkLayout(j, l);
  assert.equal(l.pos.down[1], l.pos.conv1[1], 'the shortcut starts beside the first node');
  assert.ok(l.pos.down[0] > 100, 'right of the spine');
  assert.equal(l.pos.bn1[1], l.pos.conv1[1] + 40 + GAP, 'the spine is not stretched by the tall shortcut');
  const e = edgeOf(j, l, 'down', 'add');
  assert.equal(e[2], e[0], 'down its column');
  assert.ok(e[3] < l.pos.add[1] && e[3] > l.pos.bn3[1] + 40, 'then across in the gap above the Add');
});

test('a shortcut taller than the spine beside it pushes the node it feeds down', () => {
  const j = job([box('a'), box('b'), box('side', 120, 300), box('m'), pin('p0'), pin('p1')],
    [['a', 'b'], ['b', 'm'], ['side', 'm'], ['p0', 'a'], ['p1', 'side']]);
  const l = spineLayout(j)!;
  checkLayout(j, l);
  assert.ok(l.pos.m[1] >= l.pos.side[1] + 300 + GAP, `${l.pos.m[1]} below the shortcut`);
});

test('parallel projections (q, k, v): the first on the spine, the others in columns in model order', () => {
  const j = job([box('q'), box('qt'), box('k'), box('kt'), box('v'), box('vt'), box('mm'), box('sm'), box('mm2'), pin('p0'), pin('p1'), pin('p2')],
    [['q', 'qt'], ['k', 'kt'], ['v', 'vt'], ['qt', 'mm'], ['kt', 'mm'], ['mm', 'sm'], ['sm', 'mm2'], ['vt', 'mm2'], ['p0', 'q'], ['p1', 'k'], ['p2', 'v']]);
  const l = spineLayout(j)!;
  assert.ok(l);
  checkLayout(j, l);
  assert.equal(centreX(l, 'q'), centreX(l, 'mm'));
  assert.ok(centreX(l, 'q') < centreX(l, 'k') && centreX(l, 'k') < centreX(l, 'v'), 'q | k | v');
  assert.equal(l.pos.k[1], l.pos.q[1]);
  assert.equal(l.pos.v[1], l.pos.q[1]);
});

test('a constant is placed right before the node reading it', () => {
  const j = job([box('a'), box('b'), box('c'), box('d'), box('w'), pin('p')], [['p', 'a'], ['a', 'b'], ['b', 'c'], ['c', 'd'], ['w', 'd']]);
  const l = spineLayout(j)!;
  checkLayout(j, l);
  assert.equal(l.pos.w[1], l.pos.c[1], 'beside the node before its reader');
});

test('bypasses of one source share a lane; bypasses whose spans overlap get lanes of their own', () => {
  const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
  const chain: E[] = ids.slice(1).map((k, i) => [ids[i], k]);
  const j = job(ids.map((k) => box(k)), [...chain, ['a', 'd'], ['a', 'f'], ['b', 'e']]);
  const l = spineLayout(j)!;
  checkLayout(j, l);
  const ad = edgeOf(j, l, 'a', 'd'), af = edgeOf(j, l, 'a', 'f'), be = edgeOf(j, l, 'b', 'e');
  assert.equal(ad[4], af[4], 'one lane for a');
  assert.notEqual(be[4], ad[4], 'b crosses a\'s span: another lane');
});

test('left to right: the spine along x, lanes below it', () => {
  const kids = ['a', 'b', 'c', 'd'];
  const j = job([...kids.map((k) => box(k)), pin('p0'), pin('p1')], [['a', 'b'], ['b', 'c'], ['c', 'd'], ['p0', 'a'], ['p1', 'd']], 'RIGHT');
  const l = spineLayout(j)!;
  for (let i = 1; i < kids.length; i++) assert.ok(l.pos[kids[i]][0] > l.pos[kids[i - 1]][0] + 100);
  const lane = edgeOf(j, l, 'p1', 'd');
  assert.ok(Math.max(...lane.filter((_, i) => i % 2 === 1)) > 40, 'below the spine');
});

test('what is not a spine goes to elkjs', () => {
  // A node with two side inputs (a diamond of chains meeting twice).
  assert.equal(spineLayout(job([box('a'), box('b'), box('c'), box('d'), box('e'), box('f')],
    [['a', 'b'], ['a', 'c'], ['b', 'd'], ['c', 'd'], ['b', 'e'], ['c', 'e'], ['d', 'f'], ['e', 'f']])), null);
  // A cycle.
  assert.equal(spineLayout(job([box('a'), box('b')], [['a', 'b'], ['b', 'a']])), null);
  // Four branches side by side: more columns than the layout takes.
  const fan = ['b1', 'b2', 'b3', 'b4', 'b5'];
  assert.equal(spineLayout(job([box('a'), ...fan.map((k) => box(k)), box('z')],
    [...fan.map((k): E => ['a', k]), ...fan.map((k): E => [k, 'z'])])), null);
});

test('random residual structures: valid layouts whenever one is given', () => {
  let seed = 7;
  const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  let laidOut = 0;
  for (let round = 0; round < 400; round++) {
    const n = 2 + rnd(14);
    const children: LayoutChild[] = [];
    const edges: E[] = [];
    const h = () => [40, 40, 50, 90, 160][rnd(5)];
    for (let i = 0; i < n; i++) children.push(box(`s${i}`, 60 + rnd(120), h()));
    for (let i = 1; i < n; i++) edges.push([`s${i - 1}`, `s${i}`]);
    children.push(pin('pin'));
    edges.push(['pin', 's0']);
    // Side chains, bypasses, constants, extra ports.
    for (let k = rnd(4); k > 0; k--) {
      const from = rnd(n), to = from + 2 + rnd(4);
      if (to >= n) continue;
      const len = rnd(3);
      let prev = `s${from}`;
      if (len === 0 && !edges.some(([s, t]) => s === prev && t === `s${to}`)) { edges.push([prev, `s${to}`]); continue; }
      for (let c = 0; c < len; c++) {
        const id = `x${round}_${k}_${c}`;
        children.push(box(id, 60 + rnd(120), h()));
        edges.push([prev, id]);
        prev = id;
      }
      if (prev !== `s${from}`) edges.push([prev, `s${to}`]);
    }
    if (rnd(2)) { children.push(pin('pin2')); edges.push(['pin2', `s${1 + rnd(n - 1)}`]); }
    if (rnd(2)) { children.push(box('const', 80, 40)); edges.push(['const', `s${n - 1}`]); }
    children.push(pout('pout'));
    edges.push([`s${n - 1}`, 'pout']);
    if (rnd(3) === 0 && n > 2) { children.push(pout('pout2')); edges.push([`s${rnd(n - 1)}`, 'pout2']); }
    const j = job(children, edges, rnd(4) === 0 ? 'RIGHT' : undefined);
    const l = spineLayout(j);
    if (!l) continue;
    laidOut++;
    if (j.dir === 'RIGHT') {
      // (checked top-down: the layout transposed back)
      const t = { ...l, width: l.height, height: l.width, pos: {} as GroupLayout['pos'], edges: {} as GroupLayout['edges'] };
      for (const [id, [x, y, w, hh]] of Object.entries(l.pos)) t.pos[id] = [y, x, hh, w];
      for (const [id, pts] of Object.entries(l.edges)) t.edges[id] = pts.map((_, i) => pts[i % 2 ? i - 1 : i + 1]);
      checkLayout({ ...j, children: j.children.map((c) => ({ ...c, w: c.h, h: c.w })) }, t);
    } else {
      checkLayout(j, l);
    }
  }
  assert.ok(laidOut > 250, `${laidOut} of 400 laid out`);
});
