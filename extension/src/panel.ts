// "MindSpore: Visualize Graph": a webview panel beside the editor hosting the webview/ app. The
// extension host holds the WebSocket to the daemon's view server and relays it (relay.ts).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import WebSocket from 'ws';
import { compareRequest, pickedBase, pickerOptions } from './compare';
import { withInputs } from './config';
import { viewHtml, makeNonce, type ViewAssets } from './html';
import { ViewRelay, wsUrlFor, type RevealRange, type SocketLike, type ViewTarget } from './relay';

export interface VisualizeResult {
  url: string;
  port: number;
  token: string;
  file: string;
  cell: string;
  target: string;
}

/** A `ws` client socket in the relay's shape. No Origin header: the daemon accepts local tools. */
export function wsSocket(url: string): SocketLike {
  const ws = new WebSocket(url, { perMessageDeflate: true, maxPayload: 256 * 1024 * 1024 });
  const s: SocketLike = {
    send: (data) => ws.send(data),
    close: (code, reason) => ws.close(code, reason),
    onopen: null,
    onmessage: null,
    onclose: null,
    onerror: null,
  };
  ws.on('open', () => s.onopen?.());
  ws.on('message', (data, isBinary) => {
    if (!isBinary) s.onmessage?.(data.toString());
  });
  ws.on('close', (code, reason) => s.onclose?.(code, reason.toString()));
  ws.on('error', (err) => s.onerror?.(err));
  return s;
}

let assetsCache: Omit<ViewAssets, 'workerUrl'> | null = null;

/** The view's page assets: app.js and app.css inlined, the layout worker by URL. */
function loadAssets(root: vscode.Uri, webview: vscode.Webview): ViewAssets {
  if (!assetsCache) {
    const read = (f: string) => fs.readFileSync(path.join(root.fsPath, f), 'utf8');
    assetsCache = { appJs: read('app.js'), appCss: read('app.css') };
  }
  return { ...assetsCache, workerUrl: webview.asWebviewUri(vscode.Uri.joinPath(root, 'layout-worker.js')).toString() };
}

export class GraphPanel {
  static readonly viewType = 'cellscope.graph';
  static current: GraphPanel | undefined;

  private readonly relay: ViewRelay;
  private readonly disposables: vscode.Disposable[] = [];
  /** The column of the editor the view follows: reveals open there. */
  sourceColumn: vscode.ViewColumn;
  target: ViewTarget | null = null;

  private constructor(
    readonly panel: vscode.WebviewPanel,
    webviewRoot: vscode.Uri,
    private readonly log: vscode.OutputChannel,
    sourceColumn: vscode.ViewColumn,
  ) {
    this.sourceColumn = sourceColumn;
    this.relay = new ViewRelay(wsSocket, {
      post: (msg) => this.panel.webview.postMessage(msg),
      reveal: (file, range) => void this.reveal(file, range),
      saveInputs: (file, specs) => void this.saveInputs(file, specs),
      pickCompareFile: (file) => void this.pickCompareFile(file),
      state: (s, info) => {
        if (s === 'closed') this.log.appendLine(`graph view: connection closed (${info ?? ''}), reconnecting`);
      },
      log: (line) => this.log.appendLine(line),
    });
    const nonce = makeNonce();
    panel.webview.html = viewHtml(loadAssets(webviewRoot, panel.webview), nonce, panel.webview.cspSource);
    panel.webview.onDidReceiveMessage((m) => this.relay.fromWebview(m), null, this.disposables);
    panel.onDidDispose(() => this.dispose(), null, this.disposables);
  }

  static show(
    extensionUri: vscode.Uri,
    log: vscode.OutputChannel,
    result: VisualizeResult,
    sourceColumn: vscode.ViewColumn | undefined,
  ): GraphPanel {
    const p = GraphPanel.open(extensionUri, log, sourceColumn).panel;
    p.follow(result);
    return p;
  }

  /**
   * The graph panel beside the editor, created (with the view's page) when there is none; whether
   * it was. "Visualize Graph" opens it before asking the server for the view, so that the
   * webview's page loads while the server answers.
   */
  static open(
    extensionUri: vscode.Uri,
    log: vscode.OutputChannel,
    sourceColumn: vscode.ViewColumn | undefined,
  ): { panel: GraphPanel; created: boolean } {
    const column = sourceColumn ?? vscode.ViewColumn.One;
    const p = GraphPanel.current;
    if (p) {
      p.sourceColumn = column;
      p.panel.reveal(undefined, true);
      return { panel: p, created: false };
    }
    const webviewRoot = vscode.Uri.joinPath(extensionUri, 'dist', 'webview');
    const panel = vscode.window.createWebviewPanel(
      GraphPanel.viewType,
      'Graph',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      {
        enableScripts: true,
        retainContextWhenHidden: true,
        localResourceRoots: [webviewRoot],
        enableFindWidget: false,
      },
    );
    const created = new GraphPanel(panel, webviewRoot, log, column);
    GraphPanel.current = created;
    return { panel: created, created: true };
  }

  /**
   * The graph view in a panel VS Code made for a model file (the .mindir custom editor: mindir.ts),
   * following `result`. Not the panel "Visualize Graph" reuses and the cursor moves: it stays on
   * its model until it is closed.
   */
  static attach(
    panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    log: vscode.OutputChannel,
    result: VisualizeResult,
  ): GraphPanel {
    const webviewRoot = vscode.Uri.joinPath(extensionUri, 'dist', 'webview');
    const p = new GraphPanel(panel, webviewRoot, log, vscode.ViewColumn.One);
    p.follow(result);
    return p;
  }

  /** Follows the file and Cell of a visualizeGraph result (a new connection when they change). */
  follow(result: VisualizeResult): void {
    // Outside any Cell the server names none: keep the Cell shown, unless the server is a new one
    // (restarted after a crash: another port), whose view must be connected to.
    const wsUrl = wsUrlFor(result);
    if (!result.cell && this.target && this.target.file === result.file && this.target.wsUrl === wsUrl) return;
    const t: ViewTarget = { wsUrl, file: result.file, cell: result.cell };
    this.target = t;
    this.relay.retarget(t);
    const base = path.basename(result.file);
    this.panel.title = result.cell ? `Graph: ${result.cell} (${base})` : `Graph: ${base}`;
  }

  private async reveal(file: string, range: RevealRange | undefined): Promise<void> {
    let abs = file;
    if (!path.isAbsolute(abs)) {
      const base = this.target ? path.dirname(this.target.file) : vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
      abs = path.resolve(base ?? '.', file);
    }
    const pos = (p: { line?: number; character?: number } | undefined) =>
      new vscode.Position(Math.max(0, p?.line ?? 0), Math.max(0, p?.character ?? 0));
    const selection = range ? new vscode.Range(pos(range.start), pos(range.end ?? range.start)) : undefined;
    try {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(abs));
      const editor = await vscode.window.showTextDocument(doc, {
        viewColumn: this.sourceColumn,
        selection,
        preserveFocus: false,
      });
      if (selection) editor.revealRange(selection, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    } catch (e) {
      void vscode.window.showErrorMessage(`Cellscope: cannot open ${abs}: ${String(e)}`);
    }
  }

  /** Writes the view's input shapes for `file` to its workspace folder's mindspore_config.json,
   * after the user agreed; atomically (a temporary file renamed over it). The server watches the
   * file and re-analyses. */
  private async saveInputs(file: string, specs: string[]): Promise<void> {
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(file));
    if (!folder) {
      void vscode.window.showWarningMessage(`Cellscope: ${path.basename(file)} is not in a workspace folder; there is no mindspore_config.json to write.`);
      return;
    }
    const configPath = path.join(folder.uri.fsPath, 'mindspore_config.json');
    const key = path.relative(folder.uri.fsPath, file).split(path.sep).join('/');
    let next: string;
    try {
      const text = fs.existsSync(configPath) ? fs.readFileSync(configPath, 'utf8') : undefined;
      next = withInputs(text, key, specs);
    } catch (e) {
      void vscode.window.showErrorMessage(`Cellscope: cannot update ${configPath}: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    const answer = await vscode.window.showInformationMessage(
      `Write the input shapes of ${key} (${specs.join('; ')}) to mindspore_config.json?`,
      { modal: true, detail: `${configPath}: "inputs" → "${key}". Other settings in the file are kept.` },
      'Write',
    );
    if (answer !== 'Write') return;
    const tmp = `${configPath}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(tmp, next, 'utf8');
      fs.renameSync(tmp, configPath);
      this.log.appendLine(`graph view: wrote the inputs of ${key} to ${configPath}`);
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      void vscode.window.showErrorMessage(`Cellscope: cannot write ${configPath}: ${String(e)}`);
    }
  }

  /** Compares the graph of the followed file with `base` ("HEAD", a .py path; "" stops), for
   * every view of the file: the daemon analyses the base and sends the comparison. */
  compare(base: string): void {
    this.log.appendLine(`graph view: compare ${this.target?.file ?? ''} with ${base || '(nothing: stop)'}`);
    this.relay.request(compareRequest(base));
  }

  /** "Compare Graph with File…": the file picker, then the comparison with the file picked. */
  async pickCompareFile(file: string | undefined = this.target?.file): Promise<void> {
    const o = pickerOptions(file);
    const picked = await vscode.window.showOpenDialog({
      title: o.title,
      openLabel: o.openLabel,
      canSelectMany: o.canSelectMany,
      canSelectFolders: o.canSelectFolders,
      filters: o.filters,
      defaultUri: o.defaultDir ? vscode.Uri.file(o.defaultDir) : undefined,
    });
    const base = pickedBase(picked?.map((u) => u.fsPath));
    if (base) this.compare(base);
  }

  dispose(): void {
    if (GraphPanel.current === this) GraphPanel.current = undefined;
    this.relay.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
