// Which palette the view uses: light, dark, or one of the two high-contrast ones.
//
// Inside VS Code the editor's theme decides (the webview's body carries `vscode-light`,
// `vscode-dark`, `vscode-high-contrast` or `vscode-high-contrast-light`, and VS Code changes the
// class when the user switches theme); the view's own toggle is hidden there. In a plain browser
// the user's choice (saved) wins, then the system: forced colours or "more contrast" give a
// high-contrast palette, `prefers-color-scheme` light or dark.

export type ThemeKind = 'light' | 'dark' | 'hc-dark' | 'hc-light';

/** The editor's theme from a VS Code webview body's classes; null outside VS Code. */
export function vscodeThemeKind(classes: Iterable<string>): ThemeKind | null {
  const set = new Set(classes);
  if (set.has('vscode-high-contrast-light')) return 'hc-light';
  if (set.has('vscode-high-contrast')) return 'hc-dark';
  if (set.has('vscode-dark')) return 'dark';
  if (set.has('vscode-light')) return 'light';
  return null;
}

export interface BrowserPrefs {
  saved: string | null;     // the toggle's last choice, if any
  prefersDark: boolean;     // (prefers-color-scheme: dark)
  moreContrast: boolean;    // (prefers-contrast: more) or (forced-colors: active)
}

/** The palette in a plain browser. */
export function browserThemeKind(p: BrowserPrefs): ThemeKind {
  if (p.saved === 'light' || p.saved === 'dark' || p.saved === 'hc-dark' || p.saved === 'hc-light') return p.saved;
  if (p.moreContrast) return p.prefersDark ? 'hc-dark' : 'hc-light';
  return p.prefersDark ? 'dark' : 'light';
}

/** What the toggle switches to: light → dark → high contrast (dark) → high contrast (light) → light. */
export function nextThemeKind(t: ThemeKind): ThemeKind {
  switch (t) {
    case 'light': return 'dark';
    case 'dark': return 'hc-dark';
    case 'hc-dark': return 'hc-light';
    case 'hc-light': return 'light';
  }
}

export function isHighContrast(t: ThemeKind): boolean {
  return t === 'hc-dark' || t === 'hc-light';
}

export function themeLabel(t: ThemeKind): string {
  switch (t) {
    case 'light': return 'light';
    case 'dark': return 'dark';
    case 'hc-dark': return 'high contrast (dark)';
    case 'hc-light': return 'high contrast (light)';
  }
}
