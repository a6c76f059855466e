// The Cellscope VS Code extension: starts `cellscope lsp` through vscode-languageclient (and
// restarts it when it dies, restart.ts) and adds the graph view panel, the target backend picker
// and the status bar. The daemon does the work.
import * as cp from 'node:child_process';
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
  type CloseHandlerResult,
  type ErrorHandler,
  type ErrorHandlerResult,
  type LanguageClientOptions,
  type ServerOptions,
  WorkDoneProgress,
} from 'vscode-languageclient/node';
import { findBinary, FIX_HINT, type Discovery } from './binary';
import { HEAD } from './compare';
import { DebugFocusRelay, type FocusBody } from './debugfocus';
import { TrainRelay, type TrainBody, type TrainCommand } from './trainrelay';
import { ArtifactsNotifier, type ArtifactAction } from './artifacts';
import {
  exportArgs,
  exportMessage,
  FORMAT_TITLES,
  graphTarget,
  inWorkspace,
  isExportArgs,
  isExportResult,
  OPEN_GRAPH,
  REVEAL,
  SHOW_PROBLEMS,
  type ExportArgs,
  type ExportFormat,
  type ExportResult,
} from './export';
import {
  bundleModel, calibrationDialog, deployArgs, deviceEvent, deviceItem, precisionItems, devicePicks, DeviceRelay, deviceSample, deviceStatusText, deviceStatusTooltip,
  LineSplitter, parseProgressLine, parseTelemetry, progressReport, rollbackArgs, watchArgs, type DevicePick,
} from './deploy';
import { MindIRViewer, MINDIR_VIEW_TYPE } from './mindir';
import { exitLine, MSRUN_TERMINAL, msrunConfiguration, msrunLaunchArgs, terminalText, type MsrunLaunch } from './msrun';
import { GraphPanel, type VisualizeResult } from './panel';
import { CrashHistory, crashReport, describeExit, formatDuration, type ExitInfo } from './restart';
import { serverSettings } from './settings';
import { effectiveSettings, statusText, TARGETS, TARGET_LABELS, type AnalysisState } from './status';

const SECTION = 'cellscope';

let client: CellscopeClient | undefined;
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
    ? new vscode.ThemeColor('statusBarItem.errorBackground')
    : analysis.kind === 'restarting' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  // While the server is down a click restarts it; otherwise it picks the target.
  statusItem.command = analysis.kind === 'stopped' || analysis.kind === 'restarting'
    ? 'cellscope.restartServer' : 'cellscope.selectTarget';
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
  if (analysis.kind !== 'stopped' && analysis.kind !== 'restarting') analysis = { kind: 'done', errors, warnings };
  updateStatus();
}

function markAnalysing(): void {
  if (!client || client.state !== State.Running) return;
  analysis = { kind: 'analysing' };
  updateStatus();
  if (analysingTimer) clearTimeout(analysingTimer);
  // Diagnostics normally arrive within the debounce + analysis time; never spin forever.
  analysingTimer = setTimeout(countDiagnostics, 10000);
}

// ---- language client ----------------------------------------------------------------------------

/** One run of `cellscope lsp`: the process this extension spawned, and how it ended. */
interface ServerRun {
  binary: string;
  /** Why it was started: at activation or by the user, or by the supervisor after a crash. */
  why: 'start' | 'restart';
  proc?: cp.ChildProcess;
  client?: CellscopeClient;
  /** When it was spawned (Date.now()). */
  startedAt: number;
  /** Resolves on the process's 'exit' event. */
  exited: Promise<ExitInfo>;
  onExit: (e: ExitInfo) => void;
  /** Its death has been handled (reported once, whichever of the close handler or start() saw it). */
  ended: boolean;
}

const crashes = new CrashHistory();
let currentRun: ServerRun | undefined;
let restartTimer: ReturnType<typeof setTimeout> | undefined;
/** When the last crash was seen, to log how long the server was down. */
let lastCrashAt: number | undefined;

function newRun(binary: string, why: ServerRun['why']): ServerRun {
  let onExit: (e: ExitInfo) => void = () => {};
  const exited = new Promise<ExitInfo>((resolve) => { onExit = resolve; });
  return { binary, why, startedAt: Date.now(), exited, onExit, ended: false };
}

function runName(run: ServerRun): string {
  return `cellscope lsp${run.proc?.pid !== undefined ? ` (pid ${run.proc.pid})` : ''}`;
}

/**
 * Spawns the server for vscode-languageclient (stdio). Spawned here rather than by the library so
 * that the exit code or signal of a crash is known and reported.
 */
function spawnServer(run: ServerRun): Promise<cp.ChildProcess> {
  return new Promise((resolve, reject) => {
    let proc: cp.ChildProcess;
    try {
      proc = cp.spawn(run.binary, ['lsp'], { stdio: 'pipe' });
    } catch (e) {
      reject(e);
      return;
    }
    proc.on('error', (e) => {
      if (!run.proc) reject(e); // could not be spawned (ENOENT, EACCES)
      else output.appendLine(`${runName(run)}: ${errorText(e)}`);
    });
    proc.once('spawn', () => {
      run.proc = proc;
      run.startedAt = Date.now();
      resolve(proc);
    });
    proc.once('exit', (code, signal) => {
      run.onExit({ code, signal });
      // Its connection normally closes at the same time (closed() handles the death); should the
      // client miss that (output closed before it listened), the exit alone counts.
      setTimeout(() => {
        if (run.ended || run !== currentRun) return;
        void run.client?.stop(); // its diagnostics are stale: cleared
        void onServerDied(run);
      }, 1000);
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The server died (its connection closed, or it failed to start): restart it after the policy's
 * delay, or give up on a crash loop. Reported once per run, to the output channel always and in a
 * notification once per burst (restart.ts).
 */
async function onServerDied(run: ServerRun, failure?: string): Promise<void> {
  if (run.ended || run !== currentRun) return; // already handled, or an older run stopped on purpose
  run.ended = true;
  const now = Date.now();
  client = undefined;
  // The connection closes just before the process's 'exit' event: wait briefly for the exit status.
  // A server that closed its output but lives on is killed.
  let exit: ExitInfo | undefined;
  if (run.proc) {
    exit = await Promise.race([run.exited, sleep(2000).then(() => undefined)]);
    if (!exit) {
      run.proc.kill('SIGKILL');
      output.appendLine(`${runName(run)} did not exit: killed`);
    }
  }
  if (run !== currentRun) return; // the user restarted it meanwhile
  const decision = crashes.crash(run.startedAt, now);
  // A crash's own status (a signal, an error code) says most; else what went wrong here.
  const how = exit && (exit.signal !== null || exit.code !== 0) ? describeExit(exit) : failure ?? describeExit(exit);
  const report = crashReport(decision, how, now - run.startedAt, runName(run));
  output.appendLine(report.log);
  lastCrashAt = now;
  if (decision.action === 'stop') {
    currentRun = undefined;
    analysis = { kind: 'stopped', reason: report.status };
    updateStatus();
    void vscode.window.showErrorMessage(report.notification ?? report.log, 'Restart', 'Show Output').then((pick) => {
      if (pick === 'Restart') void cmdRestartServer();
      if (pick === 'Show Output') output.show(true);
    });
    return;
  }
  analysis = { kind: 'restarting', reason: report.status };
  updateStatus();
  if (report.notification) {
    void vscode.window.showWarningMessage(report.notification, 'Show Output').then((pick) => {
      if (pick) output.show(true);
    });
  }
  if (restartTimer) clearTimeout(restartTimer);
  restartTimer = setTimeout(() => {
    restartTimer = undefined;
    if (run === currentRun) void startClient('restart');
  }, decision.delayMs);
}

class SupervisedErrorHandler implements ErrorHandler {
  constructor(private readonly run: ServerRun) {}
  error(_error: Error, _message: unknown, count: number | undefined): ErrorHandlerResult {
    // Writes to a server that just died fail before its connection closes: closed() decides.
    if (this.run.ended || this.run.proc?.exitCode !== null || this.run.proc?.signalCode !== null) {
      return { action: ErrorAction.Continue, handled: true };
    }
    if (count !== undefined && count <= 3) return { action: ErrorAction.Continue, handled: true };
    // A connection that keeps failing (garbled output?) is shut down and handled as a crash.
    void onServerDied(this.run, 'its connection failed repeatedly');
    return { action: ErrorAction.Shutdown, handled: true };
  }
  closed(): CloseHandlerResult {
    // Restarts are the supervisor's (with backoff): the library only lets this client go.
    void onServerDied(this.run);
    return { action: CloseAction.DoNotRestart, handled: true, message: `the connection to ${runName(this.run)} closed` };
  }
}

/**
 * vscode-languageclient, minus its own notifications for crashes and failed starts: the supervisor
 * reports those (once per burst, with the reason). They stay in the output channel.
 */
class CellscopeClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification?: boolean | 'force'): void {
    super.error(message, data, showNotification === 'force' ? false : showNotification);
  }

  // The library stops a client whose initialize failed, which rejects when it never ran; the
  // process is the supervisor's to end. (Failures of a real stop are logged by the library.)
  override stop(timeout?: number): Promise<void> {
    return super.stop(timeout).catch(() => {});
  }
}

async function startClient(why: ServerRun['why'] = 'start'): Promise<void> {
  if (restartTimer) clearTimeout(restartTimer);
  restartTimer = undefined;
  const found = discover();
  if (!found.ok) {
    currentRun = undefined;
    analysis = { kind: 'stopped', reason: 'cellscope not found' };
    updateStatus();
    output.appendLine(found.message);
    output.appendLine(`tried: ${found.tried.join(', ')}`);
    const pick = await vscode.window.showErrorMessage(`Cellscope: ${found.message}`, 'Open Settings', 'Show Output');
    if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'cellscope.path');
    if (pick === 'Show Output') output.show(true);
    return;
  }
  if (why === 'start') output.appendLine(`cellscope: ${found.path} (${found.source})`);
  const run = newRun(found.path, why);
  currentRun = run;
  const clientOptions: LanguageClientOptions = {
    // The server analyses file: URIs only (imports are resolved on disk).
    documentSelector: [{ scheme: 'file', language: 'python' }],
    initializationOptions: { cellscope: currentServerSettings() },
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    errorHandler: new SupervisedErrorHandler(run),
    // A failed initialize (the server died in it, or refused): the supervisor handles it.
    initializationFailedHandler: () => false,
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
      // "Export now" (the ms.export code lens) runs with the commands' progress and messages.
      executeCommand: async (command, args, next) => {
        if (command === 'cellscope.export' && isExportArgs(args[0])) return runExport(args[0]);
        const result = await next(command, args);
        if (command === 'cellscope.visualizeGraph' && isVisualizeResult(result)) {
          showPanel(result);
        }
        return result;
      },
    },
  };
  const serverOptions: ServerOptions = () => spawnServer(run);
  // A new client per run: one whose server died while starting cannot be started again.
  const c = new CellscopeClient('cellscope', 'Cellscope', serverOptions, clientOptions);
  client = c;
  run.client = c;
  c.onDidChangeState((e) => {
    if (client !== c || e.newState !== State.Running) return;
    analysis = { kind: 'starting' };
    if (run.why === 'restart') {
      const down = lastCrashAt !== undefined ? `, ${formatDuration(Date.now() - lastCrashAt)} after the crash` : '';
      output.appendLine(`${runName(run)} restarted${down}; the open documents are sent to it again`);
    }
    // The client (re)opens every Python document: each is analysed afresh.
    const open = vscode.workspace.textDocuments.some((d) => d.languageId === 'python' && d.uri.scheme === 'file');
    if (open) markAnalysing();
    else countDiagnostics();
  });
  if (why === 'start') {
    analysis = { kind: 'starting' };
    updateStatus();
  }
  try {
    await c.start();
    // An open graph view was connected to the previous server's view server: connect it to this
    // one (after start(): the documents are open there by then).
    if (!run.ended && run === currentRun && GraphPanel.current) void followEditor();
  } catch (e) {
    if (run.ended || run !== currentRun) return; // it died while starting: onServerDied has it
    if (run.proc || why === 'restart') {
      // Spawned but failed to initialize, or (re)spawning failed after a crash (the binary being
      // rebuilt?): a crash like any other, retried with backoff.
      void onServerDied(run, run.proc ? `failed to start: ${errorText(e)}` : `could not be started: ${errorText(e)}`);
      return;
    }
    currentRun = undefined;
    client = undefined;
    analysis = { kind: 'stopped', reason: String(e) };
    updateStatus();
    void vscode.window.showErrorMessage(
      `Cellscope: could not start ${found.path} lsp: ${errorText(e)}. ${FIX_HINT}`, 'Show Output',
    ).then((p) => { if (p) output.show(true); });
  }
}

/** Stops the running server on purpose (no crash handling), if any. */
async function stopClient(): Promise<void> {
  if (restartTimer) clearTimeout(restartTimer);
  restartTimer = undefined;
  const run = currentRun;
  currentRun = undefined;
  const c = client;
  client = undefined;
  const wasRunning = c?.state === State.Running;
  if (c) await c.stop(); // (never rejects: CellscopeClient.stop)
  // The library does not track a process it did not spawn: make sure this one ends, at once if it
  // was still starting (the library cannot stop that client), else after a grace period.
  const proc = run?.proc;
  if (proc && proc.exitCode === null && proc.signalCode === null) {
    const kill = () => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM'); };
    if (!wasRunning) kill();
    else {
      const t = setTimeout(kill, 2000);
      void run.exited.then(() => clearTimeout(t));
    }
  }
}

/** A restart the user asked for (command, notification, setting): a fresh crash history. */
async function restartClient(): Promise<void> {
  crashes.reset();
  await stopClient();
  await startClient();
}

async function cmdRestartServer(): Promise<void> {
  output.appendLine('restarting the language server (requested)');
  await restartClient();
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

/** The running client, waiting while it starts (a .mindir opened with the window). */
async function runningClient(timeoutMs = 30000): Promise<LanguageClient> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const c = client;
    if (c && c.state === State.Running) return c;
    if (Date.now() >= deadline) {
      throw new Error('the Cellscope language server is not running (see "MindSpore: Show Output")');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The graph view of a model file (.mindir) the server imports from the disk. */
async function visualizeModel(model: vscode.Uri): Promise<unknown> {
  const c = await runningClient();
  return c.sendRequest(ExecuteCommandRequest.type, {
    command: 'cellscope.visualizeGraph',
    arguments: [c.code2ProtocolConverter.asUri(model)],
  });
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
  // The panel first: its page loads while the server answers (the cold path to the first paint).
  const t0 = Date.now();
  const { panel, created } = GraphPanel.open(extensionUri, output, editor.viewColumn);
  try {
    const result = await visualize(editor);
    if (!result) throw new Error('the server returned no view');
    output.appendLine(`graph view: the server answered "Visualize Graph" in ${Date.now() - t0} ms` +
      `${created ? ' (the panel was created first)' : ''}`);
    if (GraphPanel.current === panel) panel.follow(result);
  } catch (e) {
    if (created) panel.panel.dispose();
    void vscode.window.showErrorMessage(`Cellscope: cannot show the graph: ${errorText(e)}`);
  }
}

/**
 * "Compare Graph with Last Commit" / "… with File…": the graph panel of the active Python file
 * (opened, or moved to that file, first), then its comparison with the base.
 */
async function cmdCompare(base: 'HEAD' | 'pick'): Promise<void> {
  const editor = pythonEditor();
  let panel = GraphPanel.current;
  if (editor && requireClient()) {
    try {
      const result = await visualize(editor);
      if (!result) throw new Error('the server returned no view');
      showPanel(result, editor.viewColumn);
      panel = GraphPanel.current;
    } catch (e) {
      void vscode.window.showErrorMessage(`Cellscope: cannot show the graph: ${errorText(e)}`);
      return;
    }
  }
  if (!panel) {
    void vscode.window.showInformationMessage('MindSpore: Compare Graph compares the graph of a Python model file: open one first.');
    return;
  }
  if (base === 'pick') await panel.pickCompareFile();
  else panel.compare(HEAD);
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

// ---- export ---------------------------------------------------------------------------------------

// "MindSpore: Export MindIR" / "Export ONNX": the Cell under the cursor (or the one
// mindspore_config.json names), written next to the file as <Cell>.mindir / .onnx.
async function cmdExport(format: ExportFormat): Promise<ExportResult | undefined> {
  const editor = pythonEditor();
  if (!editor) {
    void vscode.window.showInformationMessage(`MindSpore: ${FORMAT_TITLES[format]} exports the Cell under the cursor: open a Python model file first.`);
    return undefined;
  }
  const c = requireClient();
  if (!c) return undefined;
  return runExport(exportArgs(c.code2ProtocolConverter.asUri(editor.document.uri), format, editor.selection.active));
}

let exportCounter = 0;

// Runs cellscope.export with a cancellable progress notification (the server's work-done
// reports go to it through a client-created token), then says what happened.
async function runExport(args: ExportArgs): Promise<ExportResult | undefined> {
  const c = requireClient();
  if (!c) return undefined;
  const title = `MindSpore: ${FORMAT_TITLES[args.format]}`;
  const token = `cellscope-export-ui-${++exportCounter}`;
  let result: ExportResult | undefined;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, cancel) => {
        let last = 0;
        const sub = c.onProgress(WorkDoneProgress.type, token, (v) => {
          if (v.kind === 'end') return;
          const pct = v.kind === 'report' || v.kind === 'begin' ? v.percentage : undefined;
          const increment = typeof pct === 'number' ? Math.max(0, pct - last) : undefined;
          if (typeof pct === 'number') last = Math.max(last, pct);
          progress.report({ message: v.message, increment });
        });
        try {
          const r: unknown = await c.sendRequest(
            ExecuteCommandRequest.type, { command: 'cellscope.export', arguments: [args], workDoneToken: token }, cancel);
          if (!isExportResult(r)) throw new Error('the server gave no export result');
          return r;
        } finally {
          sub.dispose();
        }
      },
    );
  } catch (e) {
    void vscode.window.showErrorMessage(`${title} failed: ${errorText(e)}`);
    return undefined;
  }
  void tellExport(result, args);
  return result;
}

async function tellExport(result: ExportResult, args: ExportArgs): Promise<void> {
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const msg = exportMessage(result, folders);
  output.appendLine(`export: ${msg.text}`);
  if (result.status === 'refused') for (const m of result.messages) output.appendLine(`  ${m}`);
  if (msg.kind === 'none') return;
  const pick = msg.kind === 'info'
    ? await vscode.window.showInformationMessage(msg.text, ...msg.actions)
    : await vscode.window.showErrorMessage(msg.text, ...msg.actions);
  if (result.status !== 'written') {
    if (pick === SHOW_PROBLEMS) void vscode.commands.executeCommand('workbench.actions.view.problems');
    return;
  }
  const file = vscode.Uri.file(result.path);
  if (pick === REVEAL) {
    // The Explorer when the file is in the workspace (also in a remote window), else the OS.
    await vscode.commands.executeCommand(inWorkspace(result.path, folders) ? 'revealInExplorer' : 'revealFileInOS', file);
  } else if (pick === OPEN_GRAPH) {
    const target = graphTarget(result, args);
    if (target.kind === 'model') {
      // The written .mindir in its viewer, beside the source (export.ts graphTarget).
      await vscode.commands.executeCommand('vscode.openWith', vscode.Uri.file(target.path), MINDIR_VIEW_TYPE,
        { viewColumn: vscode.ViewColumn.Beside, preview: false });
      return;
    }
    const c = requireClient();
    if (!c) return;
    const view: unknown = await c.sendRequest(ExecuteCommandRequest.type, {
      command: 'cellscope.visualizeGraph', arguments: [target.uri, target.cell],
    });
    if (isVisualizeResult(view)) showPanel(view);
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
    // The runtime's kernels run on OpenMP threads (oneDNN). libgomp's default spin-waiting makes
    // two threads ~9x slower than one when the cores are busy (VS Code, the language server,
    // builds: docs/benchmarks.md); passive waiting gives the cores back. libgomp reads the policy
    // when it loads, so it is set here, unless the user chose one. VS Code merges `env` with
    // its own environment.
    const env: Record<string, string> = {};
    if (process.env.OMP_WAIT_POLICY === undefined) env.OMP_WAIT_POLICY = 'PASSIVE';
    return new vscode.DebugAdapterExecutable(found.path, ['dap'], { env });
  }
}

/** The configuration F5 runs without a launch.json, and the one a generated launch.json holds. */
function defaultDebugConfiguration(): vscode.DebugConfiguration {
  return { type: 'mindspore', request: 'launch', name: 'MindSpore: Debug Cell', program: '${file}', input: 'random', precision: 'fp32', stopOnEntry: true };
}

/**
 * F5 on a training script: train, then run the trained network (docs/dap.md, "Training") at fp32
 * and as the target computes it (`precision: "target"`: fp16 storage, fp32 accumulation), so that
 * the session ends with the per-layer precision drift (Debug Console table, graph view overlay).
 * With `fp32` the inference half has nothing to compare with and no drift is reported.
 */
function jointDebugConfiguration(): vscode.DebugConfiguration {
  return { type: 'mindspore', request: 'launch', name: 'MindSpore: Train and Infer', program: '${file}', mode: 'joint', precision: 'target', evalBatches: 10 };
}

/**
 * Whether the language server found a training plan in `uri` (its graph document's `training`):
 * F5 then starts mode "joint". Without a running server the answer is no (mode "infer").
 */
async function hasTrainingPlan(uri: vscode.Uri): Promise<boolean> {
  const c = client;
  if (!c || c.state !== State.Running) return false;
  try {
    const doc = await c.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.graphDocument', arguments: [uri.toString()] }) as { training?: unknown[] } | null;
    return Array.isArray(doc?.training) && doc.training.length > 0;
  } catch (e) {
    output.appendLine(`debug: cannot tell whether ${uri.fsPath} trains (${String(e)}); starting mode "infer"`);
    return false;
  }
}

class MindSporeDebugConfigurations implements vscode.DebugConfigurationProvider {
  // "create a launch.json file": the generated configuration.
  provideDebugConfigurations(): vscode.ProviderResult<vscode.DebugConfiguration[]> {
    return [defaultDebugConfiguration()];
  }

  async resolveDebugConfiguration(
    _folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): Promise<vscode.DebugConfiguration | undefined> {
    // F5 with no launch.json: debug the file in the editor; a training script trains then infers.
    if (!config.type && !config.request && !config.name) {
      const editor = pythonEditor();
      if (!editor) {
        void vscode.window.showInformationMessage('MindSpore debugging runs a model file: open one (or add a launch.json with `program`).');
        return undefined;
      }
      return (await hasTrainingPlan(editor.document.uri)) ? jointDebugConfiguration() : defaultDebugConfiguration();
    }
    if (!config.program) config.program = '${file}';
    return config;
  }

  // "mode": "msrun" is no debug session: `cellscope launch --msrun` runs in a terminal instead.
  resolveDebugConfigurationWithSubstitutedVariables(
    folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): vscode.DebugConfiguration | undefined {
    if (config.mode !== 'msrun') return config;
    launchMsrun(config as unknown as MsrunLaunch, folder?.uri.fsPath);
    return undefined;
  }
}

// ---- launch on a cluster: `cellscope launch --msrun` in the "MindSpore msrun" terminal ----------

function launchMsrun(config: MsrunLaunch, folder?: string): void {
  // Unlike everything else Cellscope does, this runs the user's script (under MindSpore).
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showErrorMessage('MindSpore: Launch on Cluster runs the script with MindSpore: trust this workspace first (Restricted Mode).');
    return;
  }
  const found = discover();
  if (!found.ok) {
    void vscode.window.showErrorMessage(`MindSpore: Launch on Cluster needs the cellscope executable. ${FIX_HINT}`);
    return;
  }
  const built = msrunLaunchArgs(config);
  if ('error' in built) {
    void vscode.window.showErrorMessage(`MindSpore: msrun launch configuration: ${built.error}`);
    return;
  }
  // A finished run's terminal is replaced; a running one is left alone (a second run beside it).
  for (const t of finishedMsrun) t.dispose();
  finishedMsrun.clear();
  const cwd = folder ?? vscode.workspace.getWorkspaceFolder(vscode.Uri.file(config.program))?.uri.fsPath
    ?? path.dirname(config.program);
  let terminal: vscode.Terminal | undefined;
  const pty = msrunPty(found.path, built.args, cwd, () => { if (terminal) finishedMsrun.add(terminal); });
  terminal = vscode.window.createTerminal({ name: MSRUN_TERMINAL, pty });
  terminal.show();
}

// The "MindSpore msrun" terminals whose job ended (kept open with their log).
const finishedMsrun = new Set<vscode.Terminal>();

/**
 * `cellscope launch --msrun` in a terminal of the extension's own: its output streamed in, Ctrl+C
 * sent to it as SIGINT (it stops msrun and every worker), closing the terminal hangs it up
 * (SIGHUP: the same). When it ends the terminal stays open with the log and the exit line (VS
 * Code closes a terminal whose own process exits 0).
 */
function msrunPty(bin: string, args: string[], cwd: string, ended: () => void): vscode.Pseudoterminal {
  const write = new vscode.EventEmitter<string>();
  const close = new vscode.EventEmitter<number | void>();
  let child: cp.ChildProcess | undefined;
  return {
    onDidWrite: write.event,
    onDidClose: close.event,
    open: () => {
      const proc = cp.spawn(bin, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
      child = proc;
      const out = (data: Buffer) => write.fire(terminalText(data.toString('utf8')));
      proc.stdout?.on('data', out);
      proc.stderr?.on('data', out);
      proc.on('error', (err) => write.fire(terminalText(`cellscope launch could not start: ${err.message}\n`)));
      proc.on('close', (code, signal) => {
        child = undefined;
        write.fire(exitLine(code, signal));
        ended();
      });
    },
    close: () => { child?.kill('SIGHUP'); },
    handleInput: (data: string) => {
      if (data.includes('\x03')) {
        write.fire('^C\r\n');
        child?.kill('SIGINT');
      }
    },
  };
}

async function cmdLaunchMsrun(): Promise<void> {
  await vscode.workspace.saveAll(false);
  const editor = pythonEditor();
  if (!editor || editor.document.uri.scheme !== 'file') {
    void vscode.window.showInformationMessage('MindSpore: Launch on Cluster runs a training script: open one first.');
    return;
  }
  const file = editor.document.uri.fsPath;
  launchMsrun(msrunConfiguration(file) as unknown as MsrunLaunch, vscode.workspace.getWorkspaceFolder(editor.document.uri)?.uri.fsPath);
}

// The "Select Launch Configuration" list VS Code shows after "MindSpore (Cellscope)" is picked as
// the debugger (F5 with no launch.json): debug the model file in the editor.
class MindSporeDynamicConfigurations implements vscode.DebugConfigurationProvider {
  async provideDebugConfigurations(): Promise<vscode.DebugConfiguration[]> {
    const editor = pythonEditor();
    if (!editor || editor.document.uri.scheme !== 'file') return [];
    const file = editor.document.uri.fsPath;
    const infer = { ...defaultDebugConfiguration(), name: `MindSpore: Debug Cell (${path.basename(file)})`, program: file };
    if (!(await hasTrainingPlan(editor.document.uri))) return [infer];
    return [{ ...jointDebugConfiguration(), name: `MindSpore: Train and Infer (${path.basename(file)})`, program: file }, infer];
  }
}

// The paused node, relayed from `cellscope dap` to the graph view through the language server.
async function sendDebugFocus(focus: FocusBody): Promise<void> {
  const c = client;
  if (!c || c.state !== State.Running) return;
  await c.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.debugFocus', arguments: [focus] });
}

// A training run's steps and drift (and a reset when a session starts), relayed from `cellscope dap`
// to the graph view through the language server.
async function sendTrain(command: TrainCommand, body: TrainBody, session: string): Promise<void> {
  const c = client;
  if (!c || c.state !== State.Running) return;
  await c.sendRequest(ExecuteCommandRequest.type, { command, arguments: [body, { session }] });
}

// The end of a training debug session (cellscope.sessionArtifacts): open what it wrote.
async function runArtifactAction(action: ArtifactAction): Promise<void> {
  const uri = vscode.Uri.file(action.path);
  if (action.kind === 'openModel') {
    await vscode.commands.executeCommand('vscode.openWith', uri, MINDIR_VIEW_TYPE);
  } else if (action.kind === 'showGraph') {
    await vscode.window.showTextDocument(uri, { preview: false });
    await cmdShowGraph();
  } else {
    await vscode.commands.executeCommand('revealFileInOS', uri);
  }
}

// ---- deploy to a device: `cellscope deploy --progress json`, then `--watch` ------------------------

let deviceLog: vscode.OutputChannel | undefined;
let deviceItemBar: vscode.StatusBarItem | undefined;
let watchProc: cp.ChildProcess | undefined;
let watched: { device: DevicePick; model: string; cwd: string; source: string; session: string } | undefined;
let watches = 0;
// Each telemetry line to the graph views of the deployed model's file (cellscope.deviceTelemetry).
const deviceRelay = new DeviceRelay(async (sample, session) => {
  const c = client;
  if (!c || c.state !== State.Running) return;
  await c.sendRequest(ExecuteCommandRequest.type, { command: 'cellscope.deviceTelemetry', arguments: [sample, { session }] });
}, (line) => devLog(line));

function devLog(line: string): void {
  deviceLog ??= vscode.window.createOutputChannel('MindSpore Device');
  deviceLog.appendLine(line);
}

/** The folder whose mindspore_config.json names the devices: the model's workspace folder, else
 * the first that has one. */
function deviceConfigFolder(model: string | undefined): string | undefined {
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const own = model ? vscode.workspace.getWorkspaceFolder(vscode.Uri.file(model))?.uri.fsPath : undefined;
  for (const f of own ? [own, ...folders] : folders) {
    if (fs.existsSync(path.join(f, 'mindspore_config.json'))) return f;
  }
  return undefined;
}

/** Runs `cellscope ARGS` in `cwd`; each stdout line to `onLine`, stderr to the device log.
 * Resolves with the exit code (null when killed). */
function runCellscope(bin: string, args: string[], cwd: string, onLine: (line: string) => void,
  started?: (p: cp.ChildProcess) => void): Promise<number | null> {
  devLog(`$ cellscope ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    const p = cp.spawn(bin, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    started?.(p);
    const out = new LineSplitter();
    const err = new LineSplitter();
    p.stdout.setEncoding('utf8');
    p.stderr.setEncoding('utf8');
    p.stdout.on('data', (d: string) => { for (const l of out.push(d)) onLine(l); });
    p.stderr.on('data', (d: string) => { for (const l of err.push(d)) devLog(l); });
    p.on('error', reject);
    p.on('close', (code) => resolve(code));
  });
}

async function cmdDeploy(): Promise<void> {
  const found = discover();
  if (!found.ok) {
    void vscode.window.showErrorMessage(`MindSpore: Deploy needs the cellscope executable. ${FIX_HINT}`);
    return;
  }
  // The model: an opened .mindir as it is; a .py's Cell under the cursor exported first (the same
  // export as "MindSpore: Export MindIR": the config's inputs, the Cell under the cursor).
  const active = vscode.window.activeTextEditor?.document.uri;
  const tab = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  const opened = tab instanceof vscode.TabInputCustom ? tab.uri : active;
  let model: string | undefined;
  if (opened?.scheme === 'file' && opened.fsPath.endsWith('.mindir')) model = opened.fsPath;
  // The file whose graph views get the telemetry: the .mindir, or the Python model file.
  const source = model ?? pythonEditor()?.document.uri.fsPath;
  const folder = deviceConfigFolder(model ?? pythonEditor()?.document.uri.fsPath);
  const config: unknown = folder
    ? (() => { try { return JSON.parse(fs.readFileSync(path.join(folder, 'mindspore_config.json'), 'utf8')); } catch { return undefined; } })()
    : undefined;
  const { devices, problems } = devicePicks(config ?? {});
  for (const p of problems) devLog(`mindspore_config.json: ${p}`);
  if (devices.length === 0 || !folder) {
    void vscode.window.showErrorMessage(
      'MindSpore: no device to deploy to: add "devices": [{"name", "address", "token_file"}] to mindspore_config.json (docs/deploy.md).');
    return;
  }
  const picked = devices.length === 1 ? deviceItem(devices[0])
    : await vscode.window.showQuickPick(devices.map(deviceItem), { title: 'MindSpore: Deploy to device', placeHolder: 'The device' });
  if (!picked) return;
  const device = picked.device;
  const precisionPick = await vscode.window.showQuickPick(precisionItems(),
    { title: `MindSpore: Deploy to ${device.name}`, placeHolder: 'The precision the device serves at' });
  if (!precisionPick) return;
  const precision = precisionPick.label;
  let calibration: string | undefined;
  if (precision === 'int8') {
    const chosen = await vscode.window.showOpenDialog({
      ...calibrationDialog(), canSelectMany: false, defaultUri: folder ? vscode.Uri.file(folder) : undefined,
    });
    if (!chosen?.length) return;
    calibration = chosen[0].fsPath;
  }
  if (!model) {
    if (!pythonEditor()) {
      void vscode.window.showInformationMessage('MindSpore: Deploy sends an opened .mindir, or the Cell under the cursor of a Python model file: open one first.');
      return;
    }
    const r = await cmdExport('mindir');
    if (!r || r.status !== 'written') return;
    model = r.path;
  }
  const title = `MindSpore: Deploy ${path.basename(model)} to ${device.name}`;
  let failure: { code: string; message: string } | undefined;
  let bundle = '';
  const code = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title, cancellable: true },
    async (progress, cancel) => {
      let last = 0;
      let child: cp.ChildProcess | undefined;
      const sub = cancel.onCancellationRequested(() => { child?.kill('SIGTERM'); });
      try {
        return await runCellscope(found.path, deployArgs(model as string, device.name, precision, calibration), folder, (line) => {
          devLog(line);
          const e = parseProgressLine(line);
          if (!e) return;
          if (e.phase === 'error') failure = { code: e.code, message: e.message };
          if (e.phase === 'done') bundle = e.bundle;
          const r = progressReport(e);
          const increment = r.percent !== undefined ? Math.max(0, r.percent - last) : undefined;
          if (r.percent !== undefined) last = Math.max(last, r.percent);
          if (r.message !== undefined || increment) progress.report({ message: r.message, increment });
        }, (p) => { child = p; });
      } finally {
        sub.dispose();
      }
    },
  ).then((c) => c, (e: unknown) => { failure = { code: 'spawn', message: errorText(e) }; return -1; });
  if (code !== 0) {
    const msg = failure ? `${failure.message} [${failure.code}]` : code === null ? 'cancelled' : `cellscope deploy exited with ${code}`;
    if (code !== null || failure) {
      void vscode.window.showErrorMessage(`${title} failed: ${msg}`, 'Show Log').then((p) => { if (p) deviceLog?.show(true); });
    }
    devLog(`deploy: ${msg}`);
    return;
  }
  void vscode.window.showInformationMessage(`MindSpore: ${device.name} serves ${bundle}.`);
  startWatch(found.path, device, bundleModel(bundle), folder, source ?? model);
}

/** Ends the watch; `mark`: the user's Stop, which the Device chart marks where it happened. */
function stopWatch(mark = false): void {
  const p = watchProc;
  const w = watched;
  watchProc = undefined;
  watched = undefined;
  if (p && p.exitCode === null) p.kill('SIGTERM');
  deviceItemBar?.hide();
  if (mark && w) deviceRelay.push(deviceEvent(w.source, w.device, 'stopped', Date.now()), w.session);
}

function startWatch(bin: string, device: DevicePick, model: string, cwd: string, source: string): void {
  stopWatch();
  const session = `watch-${process.pid}-${++watches}`;
  watched = { device, model, cwd, source, session };
  if (!deviceItemBar) {
    deviceItemBar = vscode.window.createStatusBarItem('cellscope.device', vscode.StatusBarAlignment.Left, 49);
    deviceItemBar.name = 'MindSpore device';
    deviceItemBar.command = 'cellscope.deviceActions';
  }
  deviceItemBar.text = deviceStatusText(model, device.name);
  deviceItemBar.tooltip = deviceStatusTooltip(device.name);
  deviceItemBar.show();
  const me = watched;
  void runCellscope(bin, watchArgs(device.name), cwd, (line) => {
    devLog(line);
    const t = parseTelemetry(line);
    if (!t || watched !== me || !deviceItemBar) return;
    deviceRelay.push(deviceSample(source, device, t, Date.now()), session);
    const shown = bundleModel(t.bundle) || model;
    deviceItemBar.text = deviceStatusText(shown, device.name, t);
    deviceItemBar.tooltip = deviceStatusTooltip(device.name, t);
  }, (p) => { watchProc = p; }).then((code) => {
    if (watched !== me) return;  // stopped, or another watch replaced it
    watched = undefined;
    deviceItemBar?.hide();
    // The watch ended by itself (the agent unreachable past --retry-for, a changed certificate).
    deviceRelay.push(deviceEvent(source, device, 'disconnected', Date.now()), session);
    if (code !== null) {
      void vscode.window.showErrorMessage(
        `MindSpore: the telemetry of ${device.name} stopped (exit ${code}); see the device log.`, 'Show Log',
      ).then((p) => { if (p) deviceLog?.show(true); });
    }
  }, (e: unknown) => devLog(`watch: ${errorText(e)}`));
}

async function cmdDeviceActions(): Promise<void> {
  const w = watched;
  if (!w) return;
  const pick = await vscode.window.showQuickPick(['Show Device Log', 'Stop', 'Roll Back'],
    { title: `MindSpore: ${w.model} on ${w.device.name}` });
  if (pick === 'Show Device Log') deviceLog?.show(true);
  if (pick === 'Stop') stopWatch(true);
  if (pick === 'Roll Back') {
    const found = discover();
    if (!found.ok) return;
    let failure = '';
    let bundle = '';
    const code = await runCellscope(found.path, rollbackArgs(w.device.name), w.cwd, (line) => {
      devLog(line);
      const e = parseProgressLine(line);
      if (e?.phase === 'error') failure = `${e.message} [${e.code}]`;
      if (e?.phase === 'done') bundle = e.bundle;
    }).catch((e: unknown) => { failure = errorText(e); return -1; });
    if (code === 0) {
      // The watch goes on (the next samples say the bundle rolled back to); the chart marks when.
      if (watched === w) deviceRelay.push(deviceEvent(w.source, w.device, 'rolled back', Date.now()), w.session);
      void vscode.window.showInformationMessage(`MindSpore: ${w.device.name} rolled back to ${bundle}.`);
    } else {
      void vscode.window.showErrorMessage(`MindSpore: the rollback of ${w.device.name} failed: ${failure || `exit ${code}`}`);
    }
  }
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
  const train = new TrainRelay(sendTrain, (line) => output.appendLine(line));
  const artifacts = new ArtifactsNotifier({
    show: (message, titles) => vscode.window.showInformationMessage(message, ...titles),
    run: runArtifactAction,
  }, (line) => output.appendLine(line));

  const reg = (id: string, fn: (...args: unknown[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  reg('cellscope.showGraph', () => cmdShowGraph());
  reg('cellscope.compareWithHead', () => cmdCompare('HEAD'));
  reg('cellscope.compareWithFile', () => cmdCompare('pick'));
  reg('cellscope.selectTarget', () => cmdSelectTarget());
  reg('cellscope.showOutput', () => output.show(true));
  reg('cellscope.restartServer', () => cmdRestartServer());
  reg('cellscope.deployToDevice', () => cmdDeploy());
  reg('cellscope.deviceActions', () => cmdDeviceActions());
  reg('cellscope.exportMindIR', () => cmdExport('mindir'));
  reg('cellscope.exportONNX', () => cmdExport('onnx'));
  reg('cellscope.launchMsrun', () => cmdLaunchMsrun());
  context.subscriptions.push(vscode.window.onDidCloseTerminal((t) => { finishedMsrun.delete(t); }));

  context.subscriptions.push(
    vscode.window.registerCustomEditorProvider(MINDIR_VIEW_TYPE, new MindIRViewer({
      webviewRoot: vscode.Uri.joinPath(context.extensionUri, 'dist', 'webview'),
      visualize: visualizeModel,
      show: (panel, result) => { GraphPanel.attach(panel, extensionUri, output, result); },
      log: (line) => output.appendLine(line),
    }), { webviewOptions: { retainContextWhenHidden: true }, supportsMultipleEditorsPerDocument: true }),
    vscode.debug.registerDebugAdapterDescriptorFactory('mindspore', new MindSporeDebugFactory()),
    vscode.debug.registerDebugConfigurationProvider('mindspore', new MindSporeDebugConfigurations()),
    vscode.debug.registerDebugConfigurationProvider('mindspore', new MindSporeDynamicConfigurations(),
      vscode.DebugConfigurationProviderTriggerKind.Dynamic),
    vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
      debugFocus.onCustomEvent(e.session.id, e.session.type, e.event, e.body);
      train.onCustomEvent(e.session.id, e.session.type, e.event, e.body);
      artifacts.onCustomEvent(e.session.type, e.event, e.body);
    }),
    vscode.debug.onDidStartDebugSession((s) => train.onStarted(s.id, s.type, s.configuration.program)),
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
    { dispose: () => { stopWatch(); deviceItemBar?.dispose(); deviceLog?.dispose(); } },
  );
  const watcher = vscode.workspace.createFileSystemWatcher('**/mindspore_config.json');
  context.subscriptions.push(watcher, watcher.onDidChange(updateStatus), watcher.onDidCreate(updateStatus), watcher.onDidDelete(updateStatus));
  if (vscode.window.activeTextEditor?.document.languageId === 'python') lastPythonEditor = vscode.window.activeTextEditor;

  await startClient();
}

export async function deactivate(): Promise<void> {
  GraphPanel.current?.dispose();
  await stopClient();
}
