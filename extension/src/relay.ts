// The extension-host side of the graph view: one WebSocket to the daemon's view server, relayed
// to the webview with postMessage (so the webview needs no network access), and the webview's
// requests relayed back. Independent of VS Code and of the `ws` package (both injected), so it is
// unit-tested with fakes.

/** The part of a WebSocket the relay uses (`ws` and the browser's WebSocket both fit). */
export interface SocketLike {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: (() => void) | null;
  onmessage: ((data: string) => void) | null;
  onclose: ((code: number, reason: string) => void) | null;
  onerror: ((err: unknown) => void) | null;
}

export type SocketFactory = (url: string) => SocketLike;

export interface ViewTarget {
  /** ws://127.0.0.1:PORT/ws?token=T&file=F */
  wsUrl: string;
  file: string;
  cell: string;
}

export interface RevealRange {
  start: { line?: number; character?: number };
  end: { line?: number; character?: number };
}

export interface RelayHost {
  /** Posts to the webview; false when the webview is gone. */
  post(msg: unknown): boolean | Thenable<boolean>;
  /** The view asked to show a source range (handled by the extension, not the daemon). */
  reveal(file: string, range: RevealRange | undefined): void;
  /** The view asked to save its input shapes to the workspace's mindspore_config.json (handled
   * by the extension, which asks the user first). */
  saveInputs?(file: string, specs: string[]): void;
  /** The view's Compare… menu asked for another file to compare `file` with (the extension shows
   * its file picker, then sends the comparison with request()). */
  pickCompareFile?(file: string): void;
  /** Connection state for the panel's title / logs. */
  state?(s: 'connecting' | 'open' | 'closed', info?: string): void;
  log?(line: string): void;
  setTimer?(fn: () => void, ms: number): unknown;
  clearTimer?(handle: unknown): void;
  /** The clock of the start-up times (ms); Date.now by default. */
  now?(): number;
}

/** When the first view of a target got its parts, in ms after the relay started connecting. */
export interface StartupTimes {
  open?: number;
  hello?: number;
  document?: number;
  documentBytes?: number;
  ready?: number;
}

/** The output channel's line on how a view started (the cold "Visualize Graph" path). */
export function startupText(file: string, t: StartupTimes): string {
  const base = file.split(/[\\/]/).pop() ?? file;
  const ms = (v: number | undefined) => (v === undefined ? '-' : `${Math.round(v)} ms`);
  const kb = t.documentBytes === undefined ? '' : ` (${(t.documentBytes / 1024).toFixed(0)} KB)`;
  return `graph view of ${base}: socket open ${ms(t.open)}, hello ${ms(t.hello)}, ` +
    `first document ${ms(t.document)}${kb}, view ready ${ms(t.ready)} (after connecting)`;
}

interface Thenable<T> { then<R>(f: (v: T) => R): unknown }

/** The view server's WebSocket URL for a visualizeGraph result. */
export function wsUrlFor(result: { port: number; token: string; file: string }): string {
  return `ws://127.0.0.1:${result.port}/ws?token=${encodeURIComponent(result.token)}` +
    `&file=${encodeURIComponent(result.file)}`;
}

/**
 * Messages go to the webview as they arrive, without waiting for its "ready": VS Code holds what
 * is posted to a webview until its page has loaded (the webview's transport also buffers what
 * arrives before the app starts), so the first document is there when the view starts instead
 * of one round trip (webview -> extension host -> webview) later. A second "ready" is a reloaded
 * page: it gets a fresh connection (hello and full document).
 */
export class ViewRelay {
  private socket: SocketLike | null = null;
  private open = false;  // the socket is open (requests can be sent)
  private outbox: string[] = [];  // requests of the extension waiting for the socket to open
  private target: ViewTarget | null = null;
  private ready = false;
  private delay = 250;
  private started = 0;
  private times: StartupTimes | null = null;  // of the connection a retarget started, until logged
  /** The start-up times of the last target (tests, logs). */
  lastStartup: StartupTimes | null = null;
  private timer: unknown = null;
  private disposed = false;
  /** Messages relayed to the webview so far (tests and logs). */
  relayed = 0;

  constructor(private readonly factory: SocketFactory, private readonly host: RelayHost) {}

  get currentTarget(): ViewTarget | null { return this.target; }
  get connected(): boolean { return this.socket !== null; }

  /**
   * Follows `target`: a new WebSocket (the server then sends its hello with the new focus Cell and
   * the full document), unless it is the same file and Cell already followed.
   */
  retarget(target: ViewTarget, force = false): void {
    if (this.disposed) return;
    const same = this.target && this.target.wsUrl === target.wsUrl && this.target.cell === target.cell;
    // Requests made for another file are not for this one.
    if (this.target && this.target.file !== target.file) this.outbox = [];
    this.target = target;
    if (same && !force && this.socket) return;
    this.started = this.now();
    this.times = {};
    this.lastStartup = this.times;
    if (this.ready) this.times.ready = 0;
    this.reconnect();
  }

  private now(): number {
    return (this.host.now ?? Date.now)();
  }

  /** Records a start-up time (once) and logs the line when the view has its document and is ready. */
  private startup(what: 'open' | 'hello' | 'document' | 'ready', bytes?: number): void {
    const t = this.times;
    if (!t || t[what] !== undefined) return;
    t[what] = Math.max(0, this.now() - this.started);
    if (bytes !== undefined) t.documentBytes = bytes;
    if (t.document !== undefined && t.ready !== undefined && this.target) {
      this.host.log?.(startupText(this.target.file, t));
      this.times = null;
    }
  }

  /** A message from the webview (`{type:'cellscope', ready|resync|request}`). */
  fromWebview(msg: unknown): void {
    if (this.disposed || !msg || typeof msg !== 'object') return;
    const m = msg as { type?: unknown; ready?: unknown; resync?: unknown; request?: unknown };
    if (m.type !== 'cellscope') return;
    if (m.ready === true) {
      const again = this.ready;
      this.ready = true;
      if (again) {
        // The webview was reloaded: it has no document; a fresh connection sends one.
        this.reconnect();
      } else {
        this.startup('ready');
      }
      return;
    }
    if (m.resync === true) {
      this.reconnect();
      return;
    }
    if (m.request && typeof m.request === 'object') {
      const req = m.request as { reveal?: { file?: string; range?: RevealRange }; saveInputs?: { inputs?: unknown }; comparePick?: unknown };
      if (req.reveal) {
        const file = req.reveal.file || this.target?.file;
        if (file) this.host.reveal(file, req.reveal.range);
        return;
      }
      if (req.saveInputs) {
        const specs = Array.isArray(req.saveInputs.inputs)
          ? req.saveInputs.inputs.filter((s): s is string => typeof s === 'string') : [];
        if (this.target?.file && specs.length > 0) this.host.saveInputs?.(this.target.file, specs);
        return;
      }
      if (req.comparePick !== undefined) {
        if (this.target?.file) this.host.pickCompareFile?.(this.target.file);
        return;
      }
      this.send(JSON.stringify(m.request));
    }
  }

  /**
   * A request of the extension itself to the daemon for the followed file (a CompareRequest from a
   * command): sent now when the connection is open, else as soon as it opens.
   */
  request(message: object): void {
    if (this.disposed) return;
    const text = JSON.stringify(message);
    if (this.socket && this.open) this.send(text);
    else this.outbox.push(text);
  }

  dispose(): void {
    this.disposed = true;
    this.clearTimer();
    this.drop();
    this.outbox = [];
  }

  private send(text: string): void {
    try {
      this.socket?.send(text);
    } catch (e) {
      this.host.log?.(`graph view: send failed: ${String(e)}`);
    }
  }

  private deliver(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.host.log?.('graph view: a frame that is not JSON was ignored');
      return;
    }
    this.relayed++;
    void this.host.post({ type: 'cellscope', message });
    const m = message as { hello?: unknown; update?: { document?: unknown } } | null;
    if (m?.hello) this.startup('hello');
    if (m?.update?.document) this.startup('document', text.length);
  }

  private drop(): void {
    const s = this.socket;
    this.socket = null;
    this.open = false;
    if (s) {
      s.onopen = s.onmessage = s.onerror = null;
      s.onclose = null;
      try { s.close(1000, 'retarget'); } catch { /* already closed */ }
    }
  }

  private clearTimer(): void {
    if (this.timer !== null) (this.host.clearTimer ?? clearTimeout)(this.timer as ReturnType<typeof setTimeout>);
    this.timer = null;
  }

  private reconnect(): void {
    this.clearTimer();
    this.drop();
    this.delay = 250;
    this.connect();
  }

  private connect(): void {
    this.timer = null;
    if (this.disposed || !this.target) return;
    const target = this.target;
    this.host.state?.('connecting');
    let s: SocketLike;
    try {
      s = this.factory(target.wsUrl);
    } catch (e) {
      this.scheduleRetry(String(e));
      return;
    }
    this.socket = s;
    s.onopen = () => {
      if (this.socket !== s) return;
      this.delay = 250;
      this.open = true;
      this.startup('open');
      this.host.state?.('open');
      const out = this.outbox;
      this.outbox = [];
      for (const text of out) this.send(text);
    };
    s.onmessage = (data: string) => {
      if (this.socket === s) this.deliver(data);
    };
    s.onerror = (err: unknown) => {
      this.host.log?.(`graph view: socket error: ${String((err as { message?: string })?.message ?? err)}`);
    };
    s.onclose = (code: number, reason: string) => {
      if (this.socket !== s) return;
      this.socket = null;
      this.open = false;
      this.scheduleRetry(reason || `code ${code}`);
    };
  }

  private scheduleRetry(info: string): void {
    this.host.state?.('closed', info);
    if (this.disposed || this.timer !== null) return;
    const d = this.delay;
    this.delay = Math.min(8000, this.delay * 2);
    this.timer = (this.host.setTimer ?? setTimeout)(() => this.connect(), d);
  }
}
