// The view's start-up milestones, for the cold "Visualize Graph" → first paint measurement (the
// code-server end-to-end test) and for finding where that time goes. Every time is an epoch
// timestamp in ms (performance.timeOrigin + performance.now()), so a test can compare it with an
// event of another page (the workbench's Enter) in the same clock.

export type Milestone =
  | 'script'        // app.js started executing (after the page's HTML, CSS and the script were parsed)
  | 'transport'     // the transport started (in VS Code: the "ready" posted to the extension)
  | 'hello'         // the first hello received
  | 'document'      // the first full document received
  | 'built'         // the first drawable graph built from it
  | 'laidOut'       // its first layout composed into a scene
  | 'firstPaint'    // the first canvas paint that drew nodes finished
  | 'firstFrame';   // the animation frame after it began (the painted canvas goes to the screen)

const marks = new Map<Milestone, number>();

export function now(): number {
  return performance.timeOrigin + performance.now();
}

/** Records a milestone the first time it is reached (later calls keep the first time). */
export function mark(m: Milestone): void {
  if (!marks.has(m)) marks.set(m, now());
}

export function reached(m: Milestone): boolean {
  return marks.has(m);
}

/**
 * The milestones reached, with the page's navigation start (`navigation`: performance.timeOrigin)
 * and, when the browser has them, its navigation timing (`domInteractive`, `domContentLoaded`:
 * also as epoch ms).
 */
export function milestones(): Record<string, number> {
  const out: Record<string, number> = { navigation: performance.timeOrigin };
  const nav = performance.getEntriesByType?.('navigation')[0] as PerformanceNavigationTiming | undefined;
  if (nav && nav.domInteractive > 0) out.domInteractive = performance.timeOrigin + nav.domInteractive;
  if (nav && nav.domContentLoadedEventEnd > 0) out.domContentLoaded = performance.timeOrigin + nav.domContentLoadedEventEnd;
  for (const [k, v] of marks) out[k] = v;
  return out;
}

/** After the paint that first drew nodes: records it and the frame that shows it. */
export function firstPaintDone(): void {
  if (marks.has('firstPaint')) return;
  mark('firstPaint');
  requestAnimationFrame(() => mark('firstFrame'));
}
