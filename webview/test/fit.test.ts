import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FIT_MARGIN, READABLE_SCALE, fitCamera, jumpCamera, keepCentre, overlayInsets, panToShow, sceneOnScreen } from '../src/fit';

const close = (a: number, b: number, eps = 1e-6): void => assert.ok(Math.abs(a - b) <= eps, `${a} ≈ ${b}`);

test('a graph readable when whole is fitted whole, centred in the part free of overlays', () => {
  const legend = { top: 0, right: 0, bottom: 50, left: 0 };
  const c = fitCamera({ sceneW: 600, sceneH: 1000, paneW: 1000, paneH: 800, insets: legend });
  assert.ok(c.whole);
  close(c.scale, (800 - 50 - 2 * FIT_MARGIN) / 1000);
  assert.ok(c.scale >= READABLE_SCALE);
  // Its bottom stays above the legend (with the margin), its top below the pane's top.
  close(c.ty + 1000 * c.scale, 800 - 50 - FIT_MARGIN);
  close(c.ty, FIT_MARGIN);
  close(c.tx + 300 * c.scale, 500);
  // Never magnified past maxScale.
  assert.equal(fitCamera({ sceneW: 100, sceneH: 100, paneW: 1000, paneH: 800 }).scale, 1);
  assert.equal(fitCamera({ sceneW: 100, sceneH: 100, paneW: 1000, paneH: 800, maxScale: 1.5 }).scale, 1.5);
});

test('a long graph is not a sliver: its start at a readable zoom (top-down)', () => {
  // ResNet-50 top-down: about 400 × 16000.
  const c = fitCamera({ sceneW: 400, sceneH: 16000, paneW: 1040, paneH: 830, insets: { top: 0, right: 0, bottom: 40, left: 0 } });
  assert.equal(c.whole, false);
  assert.ok(c.scale >= READABLE_SCALE, `${c.scale}`);
  assert.equal(c.scale, 1);  // its breadth fits at 100 %
  close(c.ty, FIT_MARGIN);   // the top
  close(c.tx + 200, 520);    // centred across
  // A graph too broad as well: the readable minimum, centred on where it starts, no space left beside it.
  const b = fitCamera({ sceneW: 5000, sceneH: 16000, paneW: 1000, paneH: 800, startCross: 4900 });
  assert.equal(b.scale, READABLE_SCALE);
  close(b.tx, 1000 - FIT_MARGIN - 5000 * READABLE_SCALE);  // right edge at the margin, not past it
  const b2 = fitCamera({ sceneW: 5000, sceneH: 16000, paneW: 1000, paneH: 800, startCross: 2500 });
  close(b2.tx + 2500 * READABLE_SCALE, 500);
});

test('left to right: the start is the left edge, the breadth is the height', () => {
  const c = fitCamera({ sceneW: 30000, sceneH: 500, paneW: 1040, paneH: 830, dir: 'RIGHT', insets: { top: 0, right: 0, bottom: 60, left: 0 } });
  assert.equal(c.whole, false);
  assert.equal(c.scale, 1);
  close(c.tx, FIT_MARGIN);
  // Centred vertically in the part above the legend.
  close(c.ty + 250, FIT_MARGIN + (830 - 60 - 2 * FIT_MARGIN) / 2);
  const tall = fitCamera({ sceneW: 30000, sceneH: 3000, paneW: 1040, paneH: 830, dir: 'RIGHT' });
  assert.equal(tall.scale, READABLE_SCALE);
  close(tall.tx, FIT_MARGIN);
});

test('End puts the graph\'s end at the free part\'s edge; Home its start', () => {
  const ins = { top: 0, right: 0, bottom: 48, left: 0 };
  const cam = { scale: 0.8, tx: 0, ty: 0 };
  const e = jumpCamera(cam, 'end', { sceneW: 400, sceneH: 16000, paneW: 1000, paneH: 800, insets: ins });
  close(e.ty + 16000 * 0.8, 800 - 48 - FIT_MARGIN);  // the last node just above the legend
  assert.equal(e.scale, 0.8);
  const s = jumpCamera(cam, 'start', { sceneW: 400, sceneH: 16000, paneW: 1000, paneH: 800, insets: ins });
  close(s.ty, FIT_MARGIN);
  const r = jumpCamera(cam, 'end', { sceneW: 16000, sceneH: 400, paneW: 1000, paneH: 800, insets: { ...ins, right: 120 }, dir: 'RIGHT' });
  close(r.tx + 16000 * 0.8, 1000 - 120 - FIT_MARGIN);
});

test('overlays count on the side they hug', () => {
  const pane = { left: 100, top: 50, width: 1000, height: 800 };
  const legend = { left: 110, top: 800, width: 700, height: 40 };      // bottom-left band
  const overview = { left: 900, top: 650, width: 190, height: 190 };   // bottom-right corner
  const title = { left: 110, top: 58, width: 80, height: 20 };        // top-left
  const tall = { left: 1040, top: 60, width: 50, height: 780 };      // along the right side
  const ins = overlayInsets(pane, [legend, overview, title, tall], 0);
  assert.equal(ins.bottom, 200);  // the overview reaches higher than the legend
  assert.equal(ins.top, 28);
  assert.equal(ins.right, 60);
  assert.equal(ins.left, 0);
  assert.deepEqual(overlayInsets(pane, [{ left: 0, top: 0, width: 0, height: 0 }]), { top: 0, right: 0, bottom: 0, left: 0 });
});

test('a resize keeps the middle; whether any of the graph is on screen', () => {
  const c = keepCentre({ scale: 0.5, tx: 800, ty: 100 }, 1900, 1000, 700, 1000);
  assert.deepEqual(c, { scale: 0.5, tx: 200, ty: 100 });
  // A graph fitted in a maximised pane (x 800..1100) is gone from a 700 px pane unless the middle is kept.
  assert.equal(sceneOnScreen({ scale: 0.5, tx: 800, ty: 100 }, 600, 1000, 700, 1000), false);
  assert.equal(sceneOnScreen(c, 600, 1000, 700, 1000), true);
});

test('after an edit: the least pan that brings the changed box into view, the zoom kept', () => {
  const cam = { scale: 1, tx: 0, ty: 0 };
  // In view already: nothing moves.
  assert.equal(panToShow(cam, { x: 100, y: 100, w: 50, h: 40 }, 800, 600), null);
  // Below the pane: up just enough for its bottom to clear the margin (and the legend's inset).
  const below = panToShow(cam, { x: 100, y: 900, w: 120, h: 40 }, 800, 600, { top: 0, right: 0, bottom: 60, left: 0 }, 24)!;
  assert.deepEqual(below, { scale: 1, tx: 0, ty: 600 - 60 - 24 - 940 });
  // Left of the pane, at half zoom: right just enough.
  const left = panToShow({ scale: 0.5, tx: 0, ty: 0 }, { x: -400, y: 100, w: 100, h: 40 }, 800, 600, undefined, 24)!;
  assert.deepEqual(left, { scale: 0.5, tx: 24 + 200, ty: 0 });
  // Taller than the pane at this zoom, not at a readable one: zoomed out just enough, then shown whole.
  const zoomed = panToShow({ scale: 2, tx: 0, ty: 0 }, { x: 100, y: 400, w: 100, h: 400 }, 800, 600, undefined, 24)!;
  close(zoomed.scale, (600 - 48) / 400);
  close(zoomed.ty + 400 * zoomed.scale, 24, 1e-6);
  // Taller even at the readable zoom: at that zoom, its start at the top edge.
  const tall = panToShow(cam, { x: 100, y: 1000, w: 100, h: 2000 }, 800, 600, undefined, 24)!;
  assert.equal(tall.scale, READABLE_SCALE);
  close(tall.ty + 1000 * READABLE_SCALE, 24);
  // Never zooms in.
  const small = panToShow({ scale: 0.3, tx: 0, ty: 0 }, { x: 0, y: 3000, w: 100, h: 2000 }, 800, 600, undefined, 24)!;
  assert.equal(small.scale, 0.3);
});
