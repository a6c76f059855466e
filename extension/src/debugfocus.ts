// The debugger's focus, relayed from the debug adapter to the graph view: `cellscope dap` sends the
// custom DAP event `cellscope.focus` (view.proto's DebugFocus in its JSON form) whenever the run
// stops, and a cleared one (empty `node`) when it resumes or ends. The adapter and the view server
// are separate processes, so the extension passes each event to `cellscope lsp` (command
// `cellscope.debugFocus`), whose view server sends it to the views of the file. Independent of
// VS Code (the sender is injected), so it is unit-tested with fakes.

export const DEBUG_TYPE = 'mindspore';
export const FOCUS_EVENT = 'cellscope.focus';

/** The event's body: view.proto's DebugFocus (only the fields the relay reads are named). */
export interface FocusBody {
  file?: string;
  cell?: string;
  node?: string;
  [k: string]: unknown;
}

export class DebugFocusRelay {
  /** Per debug session: the last focus it sent, and whether it is paused there. */
  private sessions = new Map<string, { file: string; cell: string; paused: boolean }>();
  private chain: Promise<void> = Promise.resolve();
  /** Focus messages passed on so far (tests and logs). */
  sent = 0;

  constructor(
    private readonly send: (focus: FocusBody) => Promise<unknown> | unknown,
    private readonly log?: (line: string) => void,
  ) {}

  /** A custom event of a debug session; true when it was a focus event of a `mindspore` session. */
  onCustomEvent(sessionId: string, sessionType: string, event: string, body: unknown): boolean {
    if (sessionType !== DEBUG_TYPE || event !== FOCUS_EVENT || !body || typeof body !== 'object') return false;
    const f = body as FocusBody;
    const paused = typeof f.node === 'string' && f.node !== '';
    this.sessions.set(sessionId, { file: String(f.file ?? ''), cell: String(f.cell ?? ''), paused });
    this.enqueue(paused ? f : { file: f.file, cell: f.cell, node: '' });
    return true;
  }

  /** A debug session ended: a view still showing its focus is cleared. */
  onTerminated(sessionId: string, sessionType: string): void {
    if (sessionType !== DEBUG_TYPE) return;
    const s = this.sessions.get(sessionId);
    this.sessions.delete(sessionId);
    if (s?.paused) this.enqueue({ file: s.file, cell: s.cell, node: '' });
  }

  /** Resolves once every message passed on so far was handled. */
  idle(): Promise<void> { return this.chain; }

  // In order: a clear never overtakes the focus it clears.
  private enqueue(f: FocusBody): void {
    this.chain = this.chain.then(async () => {
      try {
        this.sent++;
        await this.send(f);
      } catch (e) {
        this.log?.(`debug focus: cannot pass it to the graph view: ${e instanceof Error ? e.message : String(e)}`);
      }
    });
  }
}
