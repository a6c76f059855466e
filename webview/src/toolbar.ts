// The toolbar's buttons: an icon (inline SVG in the bundle, drawn in the text colour: nothing is
// fetched), a tooltip saying what the button does, an accessible name, and aria-pressed on toggles.
// The text labels stay; when the toolbar would wrap, the tool buttons show their icons only.

const svg = (body: string): string =>
  `<svg class="ico" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" focusable="false" fill="none" stroke="currentColor" ` +
  `stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round">${body}</svg>`;

export const ICONS: Record<string, string> = {
  fit: svg('<path d="M2 6V2h4M10 2h4v4M14 10v4h-4M6 14H2v-4"/><rect x="5.5" y="5.5" width="5" height="5" rx="1"/>'),
  expand: svg('<rect x="2.5" y="2.5" width="11" height="11" rx="2"/><path d="M8 5.2v5.6M5.2 8h5.6"/>'),
  collapse: svg('<rect x="2.5" y="2.5" width="11" height="11" rx="2"/><path d="M5.2 8h5.6"/>'),
  changes: svg('<path d="M8 2.5v6M5 5.5h6M5 12.5h6"/>'),
  split: svg('<rect x="1.8" y="2.5" width="12.4" height="11" rx="1.5"/><path d="M8 2.5v11"/>'),
  memory: svg('<path d="M2.5 13.5h11M4 13.5V9M7 13.5V4M10 13.5V7M13 13.5V10"/>'),
  png: svg('<rect x="2" y="2.5" width="12" height="11" rx="1.5"/><circle cx="6" cy="6.3" r="1.2"/><path d="M2.5 12l3.8-3.6 2.5 2.2 2-1.6 2.7 2.4"/>'),
  svg: svg('<path d="M3 12.5C4.5 3 11.5 13 13 3.5"/><rect x="1.5" y="11" width="3" height="3" rx=".5"/><rect x="11.5" y="2" width="3" height="3" rx=".5"/>'),
  theme: svg('<circle cx="8" cy="8" r="5.8"/><path d="M8 2.2a5.8 5.8 0 0 1 0 11.6z" fill="currentColor"/>'),
  overview: svg('<rect x="1.5" y="2.5" width="13" height="11" rx="1.5"/><rect x="8" y="8" width="4.5" height="3.5" rx=".5" fill="currentColor" stroke="none"/>'),
  down: svg('<path d="M8 2v11M4 9l4 4 4-4"/>'),
  right: svg('<path d="M2 8h11M9 4l4 4-4 4"/>'),
  timeline: svg('<path d="M2 4h6M5 8h8M3 12h5"/>'),
  legend: svg('<rect x="2" y="2.5" width="12" height="11" rx="1.5"/><path d="M4.5 6h1.5M8 6h3.5M4.5 10h1.5M8 10h3.5"/>'),
  compare: svg('<circle cx="4" cy="3.8" r="1.8"/><circle cx="12" cy="12.2" r="1.8"/><path d="M4 5.6V10a2 2 0 0 0 2 2h3.2M7.8 10.5 9.5 12l-1.7 1.5M12 10.4V6a2 2 0 0 0-2-2H6.8M8.2 2.5 6.5 4l1.7 1.5"/>'),
};

/** Per button (by its label): the icon, the accessible name and what the tooltip explains. */
const KNOWN: Record<string, { icon?: string; name?: string; title?: string; toggle?: boolean }> = {
  Semantic: { title: 'Semantic layer: the graph of construct as written, one node per operator call', toggle: true },
  Optimization: { title: 'Optimization layer: the graph after the optimization passes (fusions, layout conversions, memory plan)', toggle: true },
  Hardware: { title: 'Hardware layer: the kernels on the target with their unit, cycles and tiling', toggle: true },
  Fit: { icon: 'fit', title: 'Fit: the whole graph, or its start at a readable zoom when it is too long (key 0; Home/End: start/end)' },
  Expand: { icon: 'expand', title: 'Expand all groups (Cell instances)' },
  Collapse: { icon: 'collapse', title: 'Collapse all groups (Cell instances)' },
  Changes: { icon: 'changes', title: 'Changes: highlight the nodes added or changed by the last edit', toggle: true },
  'Side by side': { icon: 'split', title: 'Side by side: the semantic graph beside the optimized one (above it in a narrow view), with synchronized selection', toggle: true },
  Memory: { icon: 'memory', title: 'Memory: the timeline of buffer lifetimes and the peak', toggle: true },
  PNG: { icon: 'png', name: 'Export PNG', title: 'Export PNG: save the whole graph as an image (with the core timeline below it when the timeline is open)' },
  SVG: { icon: 'svg', name: 'Export SVG', title: 'Export SVG: save the whole graph as a vector drawing (with the core timeline below it when the timeline is open)' },
  '◐': { icon: 'theme', name: 'Theme', title: 'Theme: light, dark, high contrast (dark), high contrast (light)' },
  Timeline: { icon: 'timeline', toggle: true },
  'Compare…': { icon: 'compare', name: 'Compare…', title: 'Compare…: the graph against the last commit (HEAD) or another model file; added nodes green, changed amber, removed ones drawn dashed where they were' },
};

/** The button's label: its text without a badge. */
function labelOf(b: HTMLButtonElement): string {
  const t = b.dataset.label ?? [...b.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent ?? '').join('').trim();
  return t;
}

/**
 * Gives one button its icon, tooltip and accessible name (from the table above, else from its
 * title and label); the label is kept in a span (hidden in a compact toolbar). Idempotent.
 */
export function decorateButton(b: HTMLButtonElement, opts: { icon?: string; name?: string; title?: string; toggle?: boolean } = {}): void {
  if (b.dataset.decorated) return;
  const label = labelOf(b);
  const k = { ...KNOWN[label], ...opts };
  b.dataset.label = label;
  b.dataset.decorated = '1';
  if (k.title) b.title = k.title;
  if (!b.title) b.title = k.name ?? label;
  b.setAttribute('aria-label', k.name ?? (label.length > 1 ? label : b.title.split(':')[0]));
  const icon = k.icon ? ICONS[k.icon] : undefined;
  const iconOnly = label.length <= 1 && !!icon;  // a glyph button (the theme's)
  const rest = [...b.childNodes].filter((n) => n.nodeType !== Node.TEXT_NODE);
  b.textContent = '';
  if (icon) b.insertAdjacentHTML('beforeend', icon);
  if (!iconOnly) {
    const span = document.createElement('span');
    span.className = 'btn-text';
    span.textContent = label;
    b.appendChild(span);
  }
  for (const n of rest) b.appendChild(n);
  b.classList.toggle('has-icon', !!icon);
  if (k.toggle) {
    const sync = (): void => b.setAttribute('aria-pressed', String(b.classList.contains('on')));
    sync();
    new MutationObserver(sync).observe(b, { attributes: true, attributeFilter: ['class'] });
  }
}

/** Decorates every button of the toolbar, and switches it to icons only when it would wrap. */
export function decorateToolbar(bar: HTMLElement): void {
  for (const b of bar.querySelectorAll<HTMLButtonElement>('button')) decorateButton(b);
  for (const s of bar.querySelectorAll<HTMLSelectElement>('select')) if (!s.getAttribute('aria-label')) s.setAttribute('aria-label', s.title);
  for (const i of bar.querySelectorAll<HTMLInputElement>('input')) if (!i.getAttribute('aria-label')) i.setAttribute('aria-label', 'Search nodes (/)');
  // Buttons added later (another tool) are decorated too.
  new MutationObserver((ms) => {
    for (const m of ms) for (const n of m.addedNodes) {
      if (n instanceof HTMLButtonElement) decorateButton(n);
      else if (n instanceof HTMLElement) for (const b of n.querySelectorAll<HTMLButtonElement>('button')) decorateButton(b);
    }
  }).observe(bar, { childList: true, subtree: true });
  const fitBar = (): void => {
    bar.classList.remove('compact');
    if (bar.scrollHeight > 60) bar.classList.add('compact');
  };
  new ResizeObserver(fitBar).observe(bar);
}

/** A button's count badge (the Changes button's), keeping its icon and label. */
export function setButtonBadge(b: HTMLButtonElement, n: number): void {
  let badge = b.querySelector<HTMLElement>('.badge');
  if (n) {
    if (!badge) { badge = document.createElement('span'); badge.className = 'badge'; b.appendChild(badge); }
    badge.textContent = String(n);
  } else badge?.remove();
  const name = b.dataset.label ?? labelOf(b);
  b.setAttribute('aria-label', n ? `${name} (${n})` : name);
}

/** Sets a decorated button's label and icon (a button whose state is its label: the direction). */
export function setButtonFace(b: HTMLButtonElement, label: string, icon: string, title: string, name: string): void {
  b.dataset.label = label;
  b.title = title;
  b.setAttribute('aria-label', name);
  b.innerHTML = `${ICONS[icon] ?? ''}<span class="btn-text">${label}</span>`;
  b.classList.add('has-icon');
}
