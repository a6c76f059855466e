// Opening a .mindir in VS Code: a read-only custom editor (package.json customEditors, view type
// `cellscope.mindir`) that shows the model in the graph view. The language server imports the file
// from the disk (`cellscope.visualizeGraph` with the model's URI: docs/export.md "Import") and the
// editor's webview hosts the same view app as "Visualize Graph" (panel.ts), connected to the
// daemon's view server for the model's path. Everything the provider needs from the extension
// comes through ModelViewHost, so this file has no runtime dependency on `vscode` (unit-tested
// with fakes).
import * as path from 'node:path';
import type * as vscode from 'vscode';
import type { VisualizeResult } from './panel';

export const MINDIR_VIEW_TYPE = 'cellscope.mindir';

export interface ModelViewHost {
  /** Where the view's page assets are (dist/webview): the only resources the webview may load. */
  readonly webviewRoot: vscode.Uri;
  /** The server's answer to cellscope.visualizeGraph for the model file; rejects with why not. */
  visualize(model: vscode.Uri): Promise<unknown>;
  /** Hosts the graph view in `panel`, following `result`; disposed with the panel. */
  show(panel: vscode.WebviewPanel, result: VisualizeResult): void;
  log(line: string): void;
}

/** The model file itself is the document: read-only, nothing to save or back up. */
export interface ModelDocument extends vscode.CustomDocument {
  readonly uri: vscode.Uri;
}

export function isVisualizeResult(r: unknown): r is VisualizeResult {
  if (!r || typeof r !== 'object') return false;
  const o = r as Record<string, unknown>;
  return typeof o.url === 'string' && typeof o.port === 'number' && typeof o.token === 'string' &&
    typeof o.file === 'string' && typeof o.cell === 'string';
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A page with one message (while importing, or why the model cannot be shown): no script. */
export function messageHtml(title: string, detail = ''): string {
  return [
    '<!DOCTYPE html><html><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    '<style>body{font-family:var(--vscode-font-family);color:var(--vscode-foreground);padding:2em}',
    'pre{white-space:pre-wrap;color:var(--vscode-errorForeground)}</style></head><body>',
    `<h3>${escapeHtml(title)}</h3>`,
    detail ? `<pre>${escapeHtml(detail)}</pre>` : '',
    '</body></html>',
  ].join('');
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class MindIRViewer implements vscode.CustomReadonlyEditorProvider<ModelDocument> {
  constructor(private readonly host: ModelViewHost) {}

  openCustomDocument(uri: vscode.Uri): ModelDocument {
    return { uri, dispose: () => {} };
  }

  async resolveCustomEditor(document: ModelDocument, panel: vscode.WebviewPanel): Promise<void> {
    const name = path.basename(document.uri.fsPath);
    panel.webview.options = { enableScripts: true, localResourceRoots: [this.host.webviewRoot] };
    panel.webview.html = messageHtml(`Importing ${name}…`);
    let result: unknown;
    try {
      result = await this.host.visualize(document.uri);
    } catch (e) {
      this.host.log(`graph view: cannot show ${document.uri.fsPath}: ${errorText(e)}`);
      panel.webview.html = messageHtml(`Cellscope cannot show ${name}`, errorText(e));
      return;
    }
    if (!isVisualizeResult(result)) {
      this.host.log(`graph view: unexpected answer for ${document.uri.fsPath}: ${JSON.stringify(result)}`);
      panel.webview.html = messageHtml(`Cellscope cannot show ${name}`, 'the language server gave no graph view for it');
      return;
    }
    this.host.show(panel, result);
  }
}
