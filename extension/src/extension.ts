// The Cellscope VS Code extension: starts `cellscope lsp` through vscode-languageclient and adds
// the graph view panel, the target backend picker and the status bar. The daemon does the work.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  TransportKind,
  type CloseHandlerResult,
  type ErrorHandler,
  type ErrorHandlerResult,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { findBinary, FIX_HINT, type Discovery } from './binary';
import { DebugFocusRelay, type FocusBody } from './debugfocus';
import { GraphPanel, type VisualizeResult } from './panel';
import { serverSettings } from './settings';
import { effectiveSettings, statusText, TARGETS, TARGET_LABELS, type AnalysisState } from './status';

const SECTION = 'cellscope';

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let statusItem: vscode.StatusBarItem;
let analysis: AnalysisState = { kind: 'starting' };
let serverTarget: string | undefined; // the target the server answered to setTarget
let analysingTimer: ReturnType<typeof setTimeout> | undefined;
let lastPythonEditor: vscode.TextEditor | undefined;
let extensionUri: vscode.Uri;
let extensionPath: string;

function isExecutable(p: string): boolean {
  try {
    const st = fs.statSync(p);
    if (!st.isFile()) return false;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function discover(): Discovery {
  // A .vsix extracted without the executable bit on the bundled copy: restore it.
  const bundled = path.join(extensionPath, 'bin', process.platform === 'win32' ? 'cellscope.exe' : 'cellscope');
  try {
    if (fs.statSync(bundled).isFile() && !isExecutable(bundled)) fs.chmodSync(bundled, 0o755);
  } catch {
    /* not bundled */
  }
  return findBinary({
    setting: vscode.workspace.getConfiguration(SECTION).get<string>('path', ''),
    extensionPath,
    workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
    envPath: process.env.PATH ?? '',
    home: os.homedir(),
    platform: process.platform,
    isExecutable,
  });
}

function currentServerSettings() {
  return serverSettings(vscode.workspace.getConfiguration(SECTION) as unknown as Record<string, unknown>);
}

// ---- status bar ---------------------------------------------------------------------------------

function readProjectConfig(): unknown {
  for (const f of vscode.workspace.workspaceFolders ?? []) {
    try {
      return JSON.parse(fs.readFileSync(path.join(f.uri.fsPath, 'mindspore_config.json'), 'utf8'));
    } catch {
      /* none or invalid: the server reports an invalid one */
    }
  }
  return undefined;
}

function updateStatus(): void {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const eff = effectiveSettings(
    { target: cfg.get('target'), mindsporeVersion: cfg.get('mindsporeVersion') },
    readProjectConfig(),
  );
  if (serverTarget && !cfg.get<string>('target')) {
    eff.target = serverTarget;
    eff.targetFrom = 'server';
  }
  const st = statusText(eff, analysis);
  statusItem.text = st.text;
  statusItem.tooltip = st.tooltip;
  statusItem.backgroundColor = analysis.kind === 'stopped'
    ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  statusItem.show();
}

function countDiagnostics(): void {
  let errors = 0;
  let warnings = 0;
  for (const [, diags] of vscode.languages.getDiagnostics()) {
    for (const d of diags) {
      if (d.source !== 'cellscope') continue;
      if (d.severity === vscode.DiagnosticSeverity.Error) errors++;
      else if (d.severity === vscode.DiagnosticSeverity.Warning) warnings++;
    }
  }
  if (analysingTimer) clearTimeout(analysingTimer);
  analysingTimer = undefined;
  if (analysis.kind !== 'stopped') analysis = { kind: 'done', errors, warnings };
  updateStatus();
}

function markAnalysing(): void {
  if (!client || analysis.kind === 'stopped') return;
  analysis = { kind: 'analysing' };
  updateStatus();
  if (analysingTimer) clearTimeout(analysingTimer);
  // Diagnostics normally arrive within the debounce + analysis time; never spin forever.
  analysingTimer = setTimeout(countDiagnostics, 10000);
}

// ---- language client ----------------------------------------------------------------------------

class RestartingErrorHandler implements ErrorHandler {
  private restarts: number[] = [];
  constructor(private readonly binary: string) {}
  error(_error: Error, _message: unknown, count: number | undefined): ErrorHandlerResult {
    return { action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown };
  }
  closed(): CloseHandlerResult {
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < 3 * 60 * 1000);
    this.restarts.push(now);
    if (this.restarts.length <= 4) {
      output.appendLine(`cellscope lsp exited; restarting (${this.restarts.length} of 4 in 3 minutes)`);
      return { action: CloseAction.Restart, handled: true };
    }
    analysis = { kind: 'stopped', reason: 'crashed 5 times in 3 minutes' };
    updateStatus();
    return {
      action: CloseAction.DoNotRestart,
      message: `Cellscope: the language server (${this.binary} lsp) stopped 5 times in 3 minutes and is not ` +
        `restarted. See "MindSpore: Show Output". ${FIX_HINT} Then run "Developer: Reload Window".`,
    };
  }
}

async function startClient(): Promise<void> {
  const found = discover();
  if (!found.ok) {
    analysis = { kind: 'stopped', reason: 'cellscope not found' };
    updateStatus();
    output.appendLine(found.message);
    output.appendLine(`tried: ${found.tried.join(', ')}`);
    const pick = await vscode.window.showErrorMessage(`Cellscope: ${found.message}`, 'Open Settings', 'Show Output');
    if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'cellscope.path');
    if (pick === 'Show Output') output.show(true);
    return;
  }
  output.appendLine(`cellscope: ${found.path} (${found.source})`);
  const serverOptions: ServerOptions = {
    command: found.path,
    args: ['lsp'],
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    // The server analyses file: URIs only (imports are resolved on disk).
    documentSelector: [{ scheme: 'file', language: 'python' }],
    initializationOptions: { cellscope: currentServerSettings() },
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    errorHandler: new RestartingErrorHandler(found.path),
    middleware: {
      // The server asks for section `cellscope`: only the values it reads, unset ones left out.
      workspace: {
        configuration: async (params, token, next) => {
          const res = await next(params, token);
          if (!Array.isArray(res)) return res;
          return params.items.map((item, i) =>
            item.section === SECTION ? currentServerSettings() : (res as unknown[])[i]);
        },
      },
      // The "Visualize Graph" code lens runs the server's command: open the panel with its result.
      executeCommand: async (command, args, next) => {
        const result = await next(command, args);
        if (command === 'cellscope.visualizeGraph' && isVisualizeResult(result)) {
          showPanel(result);
        }
        return result;
      },
    },
  };
  client = new LanguageClient('cellscope', 'Cellscope', serverOptions, clientOptions);
  client.onDidChangeState((e) => {
    if (e.newState === State.Running) {
      if (analysis.kind !== 'analysing') analysis = { kind: 'starting' };
      countDiagnostics();
    }
  });
  analysis = { kind: 'starting' };
  updateStatus();
  try {
    await client.start();
  } catch (e) {
    analysis = { kind: 'stopped', reason: String(e) };
    updateStatus();
    void vscode.window.showErrorMessage(
      `Cellscope: could not start ${found.path} lsp: ${String(e)}. ${FIX_HINT}`, 'Show Output',
    ).then((p) => { if (p) output.show(true); });
  }
}

async function restartClient(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) {
    try { await c.stop(); } catch { /* already stopped */ }
  }
  await startClient();
}

function isVisualizeResult(r: unknown): r is VisualizeResult {
  return !!r && typeof r === 'object' && typeof (r as VisualizeResult).port === 'number' &&
    typeof (r as VisualizeResult).token === 'string' && typeof (r as VisualizeResult).file === 'string';
}

// ---- commands -----------------------------------------------------------------------------------

function requireClient(): LanguageClient | undefined {
  if (client && client.state === State.Running) return client;
  void vscode.window.showErrorMessage(
    'Cellscope: the language server is not running. See "MindSpore: Show Output".', 'Show Output',
  ).then((p) => { if (p) output.show(true); });
  return undefined;
}

function pythonEditor(): vscode.TextEditor | undefined {
  const a = vscode.window.activeTextEditor;
  if (a && a.document.languageId === 'python') return a;
  if (lastPythonEditor && vscode.window.visibleTextEditors.includes(lastPythonEditor)) return lastPythonEditor;
  return vscode.window.visibleTextEditors.find((e) => e.document.languageId === 'python');
}

async function visualize(editor: vscode.TextEditor): Promise<VisualizeResult | undefined> {
  const c = client;
  if (!c || c.state !== State.Running) return undefined;
  const pos = editor.selection.active;
  const result: unknown = await c.sendRequest(ExecuteCommandRequest.type, {
    command: 'cellscope.visualizeGraph',
    arguments: [c.code2ProtocolConverter.asUri(editor.document.uri), { line: pos.line, character: pos.character }],
  });
  return isVisualizeResult(result) ? result : undefined;
}

function showPanel(result: VisualizeResult, column?: vscode.ViewColumn): void {
  const col = column ?? pythonEditor()?.viewColumn;
  GraphPanel.show(extensionUri, output, result, col);
}

async function cmdShowGraph(): Promise<void> {
  const editor = pythonEditor();
  if (!editor) {
    void vscode.window.showInformationMessage('MindSpore: Visualize Graph shows the Cell under the cursor: open a Python model file first.');
    return;
  }
  if (!requireClient()) return;
  try {
    const result = await visualize(editor);
    if (!result) throw new Error('the server returned no view');
    showPanel(result, editor.viewColumn);
  } catch (e) {
    void vscode.window.showErrorMessage(`Cellscope: cannot show the graph: ${errorText(e)}`);
  }
}

async function cmdSelectTarget(): Promise<void> {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const eff = effectiveSettings({ target: cfg.get('target'), mindsporeVersion: cfg.get('mindsporeVersion') }, readProjectConfig());
  const current = serverTarget ?? eff.target;
  const items: (vscode.QuickPickItem & { target: string })[] = TARGETS.map((t) => ({
    label: TARGET_LABELS[t] ?? t,
    description: t === current ? `${t} (current)` : t,
    target: t,
  }));
  const pick = await vscode.window.showQuickPick(items, {
    title: 'MindSpore: Select Target Backend',
    placeHolder: `Backend the graphs are compiled for (now ${TARGET_LABELS[current] ?? current})`,
  });
  if (!pick) return;
  const c = requireClient();
  if (!c) return;
  try {
    const r = (await c.sendRequest(ExecuteCommandRequest.type, {
      command: 'cellscope.setTarget',
      arguments: [pick.target],
    })) as { target?: string } | null;
    serverTarget = r?.target ?? pick.target;
    // Kept as the editor setting, so it survives a restart (and wins over mindspore_config.json).
    const where = vscode.workspace.workspaceFolders?.length
      ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await cfg.update('target', serverTarget, where);
    updateStatus();
    // The open graph view follows the new target on its next analysis; re-target it now.
    void followEditor();
  } catch (e) {
    void vscode.window.showErrorMessage(`Cellscope: cannot set the target: ${errorText(e)}`);
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

// ---- the view follows the editor ----------------------------------------------------------------

let followTimer: ReturnType<typeof setTimeout> | undefined;

function scheduleFollow(): void {
  if (!GraphPanel.current) return;
  if (!vscode.workspace.getConfiguration(SECTION).get<boolean>('graph.followCursor', true)) return;
  if (followTimer) clearTimeout(followTimer);
  followTimer = setTimeout(() => void followEditor(), 300);
}

async function followEditor(): Promise<void> {
  followTimer = undefined;
  const panel = GraphPanel.current;
  const editor = vscode.window.activeTextEditor;
  if (!panel || !editor || editor.document.languageId !== 'python' || editor.document.uri.scheme !== 'file') return;
  try {
    const result = await visualize(editor);
    if (result && GraphPanel.current === panel) {
      panel.sourceColumn = editor.viewColumn ?? panel.sourceColumn;
      panel.follow(result);
    }
  } catch (e) {
    output.appendLine(`graph view: cannot follow ${editor.document.uri.fsPath}: ${errorText(e)}`);
  }
}

// ---- debug type: `cellscope dap` ----------------------------------------------------------------

class MindSporeDebugFactory implements vscode.DebugAdapterDescriptorFactory {
  createDebugAdapterDescriptor(): vscode.ProviderResult<vscode.DebugAdapterDescriptor> {
    const found = discover();
    if (!found.ok) throw new Error(`The MindSpore debugger needs the cellscope executable. ${FIX_HINT}`);
    return new vscode.DebugAdapterExecutable(found.path, ['dap']);
  }
}

/** The configuration F5 runs without a launch.json, and the one a generated launch.json holds. */
function defaultDebugConfiguration(): vscode.DebugConfiguration {
  return { type: 'mindspore', request: 'launch', name: 'MindSpore: Debug Cell', program: '${file}', input: 'random', precision: 'fp32', stopOnEntry: true };
}

class MindSporeDebugConfigurations implements vscode.DebugConfigurationProvider {
  // "create a launch.json file": the generated configuration.
  provideDebugConfigurations(): vscode.ProviderResult<vscode.DebugConfiguration[]> {
    return [defaultDebugConfiguration()];
  }

  resolveDebugConfiguration(
    _folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): vscode.ProviderResult<vscode.DebugConfiguration> {
    // F5 with no launch.json: debug the model file in the editor.
    if (!config.type && !config.request && !config.name) {
      const editor = pythonEditor();
      if (!editor) {
        void vscode.window.showInformationMessage('MindSpore debugging runs a model file: open one (or add a launch.json with `program`).');
        return undefined;
      }
      return defaultDebugConfiguration();
    }
    if (!config.program) config.program = '${file}';
    return config;
  }
}

// The "Select Launch Configuration" list VS Code shows after "MindSpore (Cellscope)" is picked as
// the debugger (F5 with no launch.json): debug the model file in the editor.
class MindSporeDynamicConfigurations implements vscode.DebugConfigurationProvider {
  provideDebugConfigurations(): vscode.ProviderResult<vscode.DebugConfiguration[]> {
    const editor = pythonEditor();
    if (!editor || editor.document.uri.scheme !== 'file') return [];
    const file = editor.document.uri.fsPath;
    return [{ ...defaultDebugConfiguration(), name: `MindSpore: Debug Cell (${path.basename(file)})`, program: file }];
  }
}

// The paused node, relayed from `cellscope dap` to the graph view through the language server.
async function sendDebugFocus(focus: FocusBody): Promise<void> {
  const c = client;
  if (!c || c.state !== State.Running) return;
  await c.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.debugFocus', arguments: [focus] });
}

// ---- activation ---------------------------------------------------------------------------------

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extensionUri = context.extensionUri;
  extensionPath = context.extensionPath;
  output = vscode.window.createOutputChannel('Cellscope');
  statusItem = vscode.window.createStatusBarItem('cellscope.status', vscode.StatusBarAlignment.Left, 50);
  statusItem.name = 'Cellscope target backend';
  statusItem.command = 'cellscope.selectTarget';
  context.subscriptions.push(output, statusItem);
  updateStatus();
  const debugFocus = new DebugFocusRelay(sendDebugFocus, (line) => output.appendLine(line));

  const reg = (id: string, fn: (...args: unknown[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  reg('cellscope.showGraph', () => cmdShowGraph());
  reg('cellscope.selectTarget', () => cmdSelectTarget());
  reg('cellscope.showOutput', () => output.show(true));
  reg('cellscope.deployToDevice', () =>
    vscode.window.showInformationMessage('MindSpore: Deploy to Ascend Device needs the device deployment support of cellscope, which this version does not include yet.'));
  reg('cellscope.exportMindIR', () =>
    vscode.window.showInformationMessage('MindSpore: Export MindIR needs the MindIR exporter of cellscope, which this version does not include yet.'));

  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory('mindspore', new MindSporeDebugFactory()),
    vscode.debug.registerDebugConfigurationProvider('mindspore', new MindSporeDebugConfigurations()),
    vscode.debug.registerDebugConfigurationProvider('mindspore', new MindSporeDynamicConfigurations(),
      vscode.DebugConfigurationProviderTriggerKind.Dynamic),
    vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
      debugFocus.onCustomEvent(e.session.id, e.session.type, e.event, e.body);
    }),
    vscode.debug.onDidTerminateDebugSession((s) => debugFocus.onTerminated(s.id, s.type)),
    vscode.languages.onDidChangeDiagnostics(() => countDiagnostics()),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document.languageId === 'python' && e.contentChanges.length > 0) markAnalysing();
    }),
    vscode.window.onDidChangeActiveTextEditor((e) => {
      if (e && e.document.languageId === 'python') {
        lastPythonEditor = e;
        scheduleFollow();
      }
    }),
    vscode.window.onDidChangeTextEditorSelection((e) => {
      if (e.textEditor.document.languageId === 'python') {
        lastPythonEditor = e.textEditor;
        scheduleFollow();
      }
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration(SECTION)) return;
      if (e.affectsConfiguration('cellscope.path')) {
        void restartClient();
        return;
      }
      if (e.affectsConfiguration('cellscope.target')) serverTarget = undefined;
      updateStatus();
      if (client && client.state === State.Running) {
        void client.sendNotification(DidChangeConfigurationNotification.type, {
          settings: { cellscope: currentServerSettings() },
        });
      }
    }),
    { dispose: () => { GraphPanel.current?.dispose(); } },
  );
  const watcher = vscode.workspace.createFileSystemWatcher('**/mindspore_config.json');
  context.subscriptions.push(watcher, watcher.onDidChange(updateStatus), watcher.onDidCreate(updateStatus), watcher.onDidDelete(updateStatus));
  if (vscode.window.activeTextEditor?.document.languageId === 'python') lastPythonEditor = vscode.window.activeTextEditor;

  await startClient();
}

export async function deactivate(): Promise<void> {
  GraphPanel.current?.dispose();
  const c = client;
  client = undefined;
  if (c) await c.stop();
}
