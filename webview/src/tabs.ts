// The side panel's tabs (WAI-ARIA tabs pattern): a tablist of buttons (role tab, aria-selected,
// aria-controls, roving tabindex) over tabpanels (role tabpanel, aria-labelledby, hidden but the
// chosen one). Arrow keys, Home and End move between tabs and select them (automatic activation).
// The markup is a pure function of the tabs and the chosen id; switching toggles the DOM in place
// (no re-render, the focus stays on the tab).
import { escapeHtml as h } from './format';

export interface Tab {
  id: string;       // stable across nodes and updates ("node", "cost", "opt", "debug")
  label: string;
  html: string;     // the panel's content
  title?: string;   // tooltip of the tab
  mark?: boolean;   // a dot on the tab (e.g. the selection is the paused node)
}

/** The tab shown: the chosen one when the set has it, else the first. */
export function shownTab(tabs: readonly Pick<Tab, 'id'>[], chosen: string): string {
  return tabs.some((t) => t.id === chosen) ? chosen : tabs[0]?.id ?? '';
}

/** The tablist and the tabpanels; `prefix` keeps ids unique in the page. */
export function tabsHtml(tabs: readonly Tab[], chosen: string, label: string, prefix = 'pt'): string {
  const shown = shownTab(tabs, chosen);
  const list = tabs.map((t) => {
    const on = t.id === shown;
    return `<button type="button" role="tab" class="tab${on ? ' on' : ''}" id="${prefix}-tab-${h(t.id)}" data-tab="${h(t.id)}" ` +
      `aria-selected="${on}" aria-controls="${prefix}-panel-${h(t.id)}" tabindex="${on ? 0 : -1}"` +
      `${t.title ? ` title="${h(t.title)}"` : ''}>${h(t.label)}${t.mark ? '<i class="tab-mark" aria-hidden="true"></i>' : ''}</button>`;
  }).join('');
  const panels = tabs.map((t) => `<div role="tabpanel" class="tabpanel" id="${prefix}-panel-${h(t.id)}" data-tab="${h(t.id)}" ` +
    `aria-labelledby="${prefix}-tab-${h(t.id)}" tabindex="0"${t.id === shown ? '' : ' hidden'}>${t.html}</div>`).join('');
  return `<div class="tabs" role="tablist" aria-label="${h(label)}">${list}</div>${panels}`;
}

/** Shows tab `id` of the tab set in `root` (in place). False when there is no such tab. */
export function showTab(root: ParentNode, id: string): boolean {
  const tabs = [...root.querySelectorAll<HTMLElement>('[role="tab"]')];
  if (!tabs.some((t) => t.dataset.tab === id)) return false;
  for (const t of tabs) {
    const on = t.dataset.tab === id;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
    t.classList.toggle('on', on);
  }
  for (const p of root.querySelectorAll<HTMLElement>('[role="tabpanel"]')) p.hidden = p.dataset.tab !== id;
  return true;
}

/** The tab a key moves to from `current` (Left/Right wrap, Home/End), or null for other keys. */
export function tabForKey(ids: readonly string[], current: string, key: string): string | null {
  const i = ids.indexOf(current);
  if (i < 0 || ids.length === 0) return null;
  switch (key) {
    case 'ArrowRight': return ids[(i + 1) % ids.length];
    case 'ArrowLeft': return ids[(i - 1 + ids.length) % ids.length];
    case 'Home': return ids[0];
    case 'End': return ids[ids.length - 1];
    default: return null;
  }
}

/**
 * Wires a container whose content holds tab sets (re-rendered at will): a click on a tab or an
 * arrow key on it selects it and calls `onChoose` (the choice outlives re-renders).
 */
export function bindTabs(container: HTMLElement, onChoose: (id: string) => void): void {
  container.addEventListener('click', (e) => {
    const tab = (e.target as HTMLElement).closest<HTMLElement>('[role="tab"]');
    if (!tab?.dataset.tab || !container.contains(tab)) return;
    const list = tab.closest<HTMLElement>('[role="tablist"]')?.parentElement ?? container;
    if (showTab(list, tab.dataset.tab)) onChoose(tab.dataset.tab);
  });
  container.addEventListener('keydown', (e) => {
    const tab = (e.target as HTMLElement).closest<HTMLElement>('[role="tab"]');
    if (!tab?.dataset.tab) return;
    const tablist = tab.closest<HTMLElement>('[role="tablist"]');
    const ids = [...(tablist?.querySelectorAll<HTMLElement>('[role="tab"]') ?? [])].map((t) => t.dataset.tab ?? '');
    const next = tabForKey(ids, tab.dataset.tab, e.key);
    if (next === null) return;
    e.preventDefault();
    e.stopPropagation();  // not the graph's arrow keys
    const root = tablist?.parentElement ?? container;
    showTab(root, next);
    root.querySelector<HTMLElement>(`[role="tab"][data-tab="${CSS.escape(next)}"]`)?.focus();
    onChoose(next);
  });
}
