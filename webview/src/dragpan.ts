// Drag to pan, click to pick, on a canvas: the pointer handling the graph and the core timeline
// share. A press that moves less than 4 px is a click; more, and every move pans by its delta
// (the canvas gets the `panning` class meanwhile). Hover is reported while no button is down.

export interface DragPanHandlers {
  /** The pointer moved with no button down (client coordinates). */
  hover(clientX: number, clientY: number): void;
  /** A drag started: whatever hover shows goes. */
  dragStart(): void;
  pan(dx: number, dy: number): void;
  /** A press released without a drag (client coordinates). */
  click(clientX: number, clientY: number): void;
}

/** Attaches the handlers to `canvas`; returns whether a drag is in progress (for leave handlers). */
export function attachDragPan(canvas: HTMLElement, h: DragPanHandlers): () => boolean {
  let drag: { x: number; y: number; moved: boolean } | null = null;
  canvas.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    drag = { x: e.clientX, y: e.clientY, moved: false };
    canvas.setPointerCapture(e.pointerId);
  });
  canvas.addEventListener('pointermove', (e) => {
    if (!drag) { h.hover(e.clientX, e.clientY); return; }
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    if (!drag.moved) h.dragStart();
    drag.moved = true;
    drag.x = e.clientX; drag.y = e.clientY;
    canvas.classList.add('panning');
    h.pan(dx, dy);
  });
  canvas.addEventListener('pointerup', (e) => {
    const d = drag;
    drag = null;
    canvas.classList.remove('panning');
    if (!d || d.moved) return;
    h.click(e.clientX, e.clientY);
  });
  return () => drag !== null;
}
