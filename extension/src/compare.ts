// "MindSpore: Compare Graph with Last Commit" / "… with File…": what the graph panel sends the
// daemon's view server (view.proto's CompareRequest, relayed like the webview's own requests), and
// the file picker's options. Independent of VS Code, so it is unit-tested.
import * as path from 'node:path';

/** The base of the last commit. */
export const HEAD = 'HEAD';

/** The view request comparing the panel's file with `base` ("HEAD", a .py path; "" stops). */
export function compareRequest(base: string): { compare: { base: string } } {
  return { compare: { base } };
}

export interface PickerOptions {
  title: string;
  openLabel: string;
  canSelectMany: false;
  canSelectFolders: false;
  filters: Record<string, string[]>;
  /** The directory to start in: the compared file's. */
  defaultDir: string | undefined;
}

/** The file picker of "Compare Graph with File…" for the graph of `file`. */
export function pickerOptions(file: string | undefined): PickerOptions {
  return {
    title: file ? `Compare the graph of ${path.basename(file)} with…` : 'Compare the graph with…',
    openLabel: 'Compare',
    canSelectMany: false,
    canSelectFolders: false,
    filters: { 'Python model files': ['py'] },
    defaultDir: file ? path.dirname(file) : undefined,
  };
}

/** The base picked in the dialog: the first file, or null when the dialog was cancelled. */
export function pickedBase(paths: readonly string[] | undefined): string | null {
  return paths && paths.length > 0 && paths[0] ? paths[0] : null;
}
