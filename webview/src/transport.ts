// The three ways the view gets its messages: an inlined snapshot, the daemon's WebSocket, or the
// VS Code webview bridge. One interface for all three.
import type { ViewMessage, ViewRequest } from './protocol';
import type { LayoutRequest, LayoutResponse } from './layout-types';

export type ConnectionState = 'snapshot' | 'connecting' | 'open' | 'closed' | 'vscode';

export interface Transport {
  readonly kind: 'snapshot' | 'websocket' | 'vscode';
  start(onMessage: (m: ViewMessage) => void, onState: (s: ConnectionState, info?: string) => void): void;
  send(req: ViewRequest): boolean;
  /** Drops the connection and reconnects (delta base mismatch). */
  resync(): void;
}

export class SnapshotTransport implements Transport {
  readonly kind = 'snapshot';
  constructor(private messages: ViewMessage[]) {}
  start(onMessage: (m: ViewMessage) => void, onState: (s: ConnectionState) => void): void {
    onState('snapshot');
    for (const m of this.messages) onMessage(m);
  }
  send(): boolean { return false; }
  resync(): void { /* nothing to resync from */ }
}

export class WebSocketTransport implements Transport {
  readonly kind = 'websocket';
  private ws: WebSocket | null = null;
  private delay = 250;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private onMessage: (m: ViewMessage) => void = () => {};
  private onState: (s: ConnectionState, info?: string) => void = () => {};
  constructor(private url: string) {}

  start(onMessage: (m: ViewMessage) => void, onState: (s: ConnectionState, info?: string) => void): void {
    this.onMessage = onMessage;
    this.onState = onState;
    this.connect();
  }

  private connect(): void {
    this.timer = null;
    this.onState('connecting');
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.url);
    } catch (e) {
      this.schedule(String(e));
      return;
    }
    this.ws = ws;
    ws.onopen = () => { this.delay = 250; this.onState('open'); };
    ws.onmessage = (ev: MessageEvent) => {
      if (typeof ev.data !== 'string') return;
      let m: ViewMessage;
      try { m = JSON.parse(ev.data) as ViewMessage; } catch { return; }
      this.onMessage(m);
    };
    ws.onclose = (ev: CloseEvent) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.schedule(ev.reason || `code ${ev.code}`);
    };
    ws.onerror = () => { /* onclose follows */ };
  }

  private schedule(info: string): void {
    this.onState('closed', info);
    if (this.timer !== null) return;
    const d = this.delay;
    this.delay = Math.min(8000, this.delay * 2);
    this.timer = setTimeout(() => this.connect(), d);
  }

  send(req: ViewRequest): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(req));
    return true;
  }

  resync(): void {
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000, 'resync');
    this.delay = 250;
    if (this.timer === null) this.timer = setTimeout(() => this.connect(), 0);
  }
}

interface VsCodeApi { postMessage(msg: unknown): void }
declare global {
  interface Window { acquireVsCodeApi?: () => VsCodeApi }
}

// In VS Code the extension posts the view's messages as soon as it has them, without waiting for
// the "ready" (VS Code delivers them once the page has loaded): they are kept from the moment
// this script runs until the app takes them.
const early: ViewMessage[] = [];
let deliver: ((m: ViewMessage) => void) | null = null;
if (typeof window !== 'undefined' && typeof window.acquireVsCodeApi === 'function') {
  window.addEventListener('message', (ev: MessageEvent) => {
    const d = ev.data as { type?: string; message?: ViewMessage } | null;
    if (!d || d.type !== 'cellscope' || !d.message) return;
    if (deliver) deliver(d.message);
    else early.push(d.message);
  });
}

export class VsCodeTransport implements Transport {
  readonly kind = 'vscode';
  constructor(private api: VsCodeApi) {}
  start(onMessage: (m: ViewMessage) => void, onState: (s: ConnectionState) => void): void {
    onState('vscode');
    deliver = onMessage;
    for (const m of early.splice(0)) onMessage(m);
    this.api.postMessage({ type: 'cellscope', ready: true });
  }
  send(req: ViewRequest): boolean {
    this.api.postMessage({ type: 'cellscope', request: req });
    return true;
  }
  resync(): void { this.api.postMessage({ type: 'cellscope', resync: true }); }
}

export let snapshotParseMs = 0;

export function pickTransport(): Transport {
  const snap = document.getElementById('cellscope-snapshot');
  if (snap) {
    let msgs: ViewMessage[] = [];
    const t0 = performance.now();
    try { msgs = JSON.parse(snap.textContent ?? '[]') as ViewMessage[]; } catch { msgs = []; }
    snapshotParseMs = performance.now() - t0;
    return new SnapshotTransport(msgs);
  }
  if (typeof window.acquireVsCodeApi === 'function') return new VsCodeTransport(window.acquireVsCodeApi());
  const params = new URLSearchParams(location.search);
  const file = params.get('file') ?? '';
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const token = params.get('token');
  const extra = token ? `&token=${encodeURIComponent(token)}` : '';
  return new WebSocketTransport(`${proto}//${location.host}/ws?file=${encodeURIComponent(file)}${extra}`);
}

let workerUrl: string | null = null;

/**
 * A layout worker: from the page's inlined source (snapshots), from the script a VS Code
 * webview names (`<meta name="cellscope-worker">`: fetched, then started from a Blob URL, since a
 * webview may not start a worker from the extension's files directly), or beside the page.
 */
export function makeLayoutWorker(): Worker {
  const src = document.getElementById('cellscope-worker-src');
  if (src && src.textContent) {
    workerUrl ??= URL.createObjectURL(new Blob([src.textContent], { type: 'text/javascript' }));
    return new Worker(workerUrl);
  }
  const remote = document.querySelector<HTMLMetaElement>('meta[name="cellscope-worker"]')?.content;
  if (remote) return new FetchedWorker(remote) as unknown as Worker;
  return new Worker('layout-worker.js');
}

let fetched: Promise<string> | null = null;

/** A worker whose script is fetched first; the jobs posted meanwhile wait. A failed fetch fails them. */
class FetchedWorker {
  onmessage: ((ev: MessageEvent<LayoutResponse>) => void) | null = null;
  private worker: Worker | null = null;
  private queue: LayoutRequest[] = [];
  private error: string | null = null;

  constructor(url: string) {
    fetched ??= fetch(url).then((r) => {
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      return r.text();
    }).then((text) => URL.createObjectURL(new Blob([text], { type: 'text/javascript' })));
    fetched.then((blobUrl) => {
      const w = new Worker(blobUrl);
      w.onmessage = (ev: MessageEvent<LayoutResponse>) => this.onmessage?.(ev);
      this.worker = w;
      for (const m of this.queue.splice(0)) w.postMessage(m);
    }, (e: unknown) => {
      this.error = `the layout worker could not be loaded (${url}): ${String(e)}`;
      console.error('cellscope:', this.error);
      for (const m of this.queue.splice(0)) this.fail(m);
    });
  }

  postMessage(m: LayoutRequest): void {
    if (this.worker) this.worker.postMessage(m);
    else if (this.error !== null) this.fail(m);
    else this.queue.push(m);
  }

  private fail(m: LayoutRequest): void {
    const data: LayoutResponse = { id: m.id, layouts: [], error: this.error ?? 'no layout worker', ms: 0 };
    setTimeout(() => this.onmessage?.({ data } as MessageEvent<LayoutResponse>), 0);
  }
}
