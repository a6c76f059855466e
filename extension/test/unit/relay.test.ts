import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ViewRelay, startupText, wsUrlFor, type RelayHost, type SocketLike } from '../../src/relay';
import { compareRequest, HEAD } from '../../src/compare';

class FakeSocket implements SocketLike {
  sent: string[] = [];
  closed = false;
  onopen: (() => void) | null = null;
  onmessage: ((data: string) => void) | null = null;
  onclose: ((code: number, reason: string) => void) | null = null;
  onerror: ((err: unknown) => void) | null = null;
  constructor(readonly url: string) {}
  send(data: string): void { this.sent.push(data); }
  close(): void { this.closed = true; }
}

function setup() {
  const sockets: FakeSocket[] = [];
  const posted: unknown[] = [];
  const reveals: [string, unknown][] = [];
  const saved: [string, string[]][] = [];
  const picks: string[] = [];
  const timers: (() => void)[] = [];
  const host: RelayHost = {
    post: (m) => { posted.push(m); return true; },
    reveal: (f, r) => { reveals.push([f, r]); },
    saveInputs: (f, specs) => { saved.push([f, specs]); },
    pickCompareFile: (f) => { picks.push(f); },
    setTimer: (fn) => { timers.push(fn); return timers.length; },
    clearTimer: () => {},
  };
  const relay = new ViewRelay((url) => { const s = new FakeSocket(url); sockets.push(s); return s; }, host);
  return { relay, sockets, posted, reveals, saved, picks, timers };
}

const target = (file = '/w/a.py', cell = 'Net') =>
  ({ wsUrl: wsUrlFor({ port: 4000, token: 't/k', file }), file, cell });

test('the WebSocket URL carries the token and the file, escaped', () => {
  assert.equal(wsUrlFor({ port: 4000, token: 'a+b', file: '/w/my model.py' }),
    'ws://127.0.0.1:4000/ws?token=a%2Bb&file=%2Fw%2Fmy%20model.py');
});

test('messages go to the webview at once and in order, before it says it is ready', () => {
  // (VS Code holds what is posted until the webview's page has loaded.)
  const { relay, sockets, posted } = setup();
  relay.retarget(target());
  assert.equal(sockets.length, 1);
  sockets[0]!.onopen?.();
  sockets[0]!.onmessage?.('{"hello":{"file":"/w/a.py","editor":true}}');
  sockets[0]!.onmessage?.('{"update":{"seq":1}}');
  assert.deepEqual(posted, [
    { type: 'cellscope', message: { hello: { file: '/w/a.py', editor: true } } },
    { type: 'cellscope', message: { update: { seq: 1 } } },
  ]);
  relay.fromWebview({ type: 'cellscope', ready: true });
  assert.equal(posted.length, 2, 'the first "ready" sends nothing again');
  assert.equal(sockets.length, 1, 'nor reconnects');
  sockets[0]!.onmessage?.('not json');
  sockets[0]!.onmessage?.('{"status":{"state":"ok"}}');
  assert.equal(posted.length, 3);
  assert.equal(relay.relayed, 3);
});

test('the start-up times of a view are logged once: socket, hello, document, ready', () => {
  let clock = 1000;
  const logs: string[] = [];
  const sockets: FakeSocket[] = [];
  const relay = new ViewRelay((url) => { const s = new FakeSocket(url); sockets.push(s); return s; }, {
    post: () => true, reveal: () => {}, log: (l) => logs.push(l), now: () => clock,
  });
  relay.retarget(target('/w/models/resnet50.py'));
  clock += 12;
  sockets[0]!.onopen?.();
  clock += 30;
  sockets[0]!.onmessage?.('{"hello":{"file":"/w/models/resnet50.py"}}');
  clock += 25;
  const doc = '{"update":{"seq":1,"document":{"cells":[]}}}';
  sockets[0]!.onmessage?.(doc);
  assert.deepEqual(logs, [], 'not before the view is ready');
  clock += 400;
  relay.fromWebview({ type: 'cellscope', ready: true });
  assert.deepEqual(relay.lastStartup, { open: 12, hello: 42, document: 67, documentBytes: doc.length, ready: 467 });
  assert.deepEqual(logs, ['graph view of resnet50.py: socket open 12 ms, hello 42 ms, first document 67 ms (0 KB), view ready 467 ms (after connecting)']);
  sockets[0]!.onmessage?.(doc);
  assert.equal(logs.length, 1, 'once per target');
  // Another file in the same (ready) view: its times, the view counted as ready at once.
  relay.retarget(target('/w/b.py'));
  clock += 5;
  sockets[1]!.onmessage?.(doc);
  assert.equal(logs.length, 2);
  assert.match(logs[1]!, /graph view of b\.py: socket open -, hello -, first document 5 ms .*view ready 0 ms/);
  assert.equal(startupText('/w/x.py', {}), 'graph view of x.py: socket open -, hello -, first document -, view ready - (after connecting)');
});

test('requests go to the daemon, reveals to the editor', () => {
  const { relay, sockets, reveals } = setup();
  relay.retarget(target());
  relay.fromWebview({ type: 'cellscope', ready: true });
  relay.fromWebview({ type: 'cellscope', request: { details: { cell: 'Net', node: 'conv1' } } });
  assert.deepEqual(sockets[0]!.sent, ['{"details":{"cell":"Net","node":"conv1"}}']);
  const range = { start: { line: 17, character: 22 }, end: { line: 17, character: 35 } };
  relay.fromWebview({ type: 'cellscope', request: { reveal: { file: '/w/b.py', range } } });
  relay.fromWebview({ type: 'cellscope', request: { reveal: { range } } });
  assert.deepEqual(reveals, [['/w/b.py', range], ['/w/a.py', range]]);
  assert.equal(sockets[0]!.sent.length, 1);
  // Other messages are ignored.
  relay.fromWebview({ type: 'other', request: { details: {} } });
  relay.fromWebview(null);
  assert.equal(sockets[0]!.sent.length, 1);
});

test('a new Cell or file reconnects; the same one does not', () => {
  const { relay, sockets } = setup();
  relay.retarget(target());
  relay.retarget(target());
  assert.equal(sockets.length, 1);
  relay.retarget(target('/w/a.py', 'Other'));
  assert.equal(sockets.length, 2);
  assert.equal(sockets[0]!.closed, true);
  relay.retarget(target('/w/b.py', 'Other'));
  assert.equal(sockets.length, 3);
  assert.match(sockets[2]!.url, /file=%2Fw%2Fb\.py/);
  // Frames of a dropped socket are not relayed.
  relay.fromWebview({ type: 'cellscope', ready: true });
  sockets[0]!.onmessage?.('{"update":{}}');
  assert.equal(relay.relayed, 0);
});

test('resync and a reloaded webview get a fresh connection', () => {
  const { relay, sockets } = setup();
  relay.retarget(target());
  relay.fromWebview({ type: 'cellscope', ready: true });
  relay.fromWebview({ type: 'cellscope', resync: true });
  assert.equal(sockets.length, 2);
  relay.fromWebview({ type: 'cellscope', ready: true });
  assert.equal(sockets.length, 3);
});

test('a closed socket is reopened with back-off; dispose stops it', () => {
  const { relay, sockets, timers } = setup();
  relay.retarget(target());
  sockets[0]!.onclose?.(1006, '');
  assert.equal(relay.connected, false);
  assert.equal(timers.length, 1);
  timers[0]!();
  assert.equal(sockets.length, 2);
  relay.dispose();
  assert.equal(sockets[1]!.closed, true);
  relay.retarget(target('/w/c.py'));
  assert.equal(sockets.length, 2);
});

test('a view\'s "save input shapes" goes to the extension for the followed file, never to the daemon', () => {
  const { relay, sockets, saved } = setup();
  relay.retarget(target('/w/m.py'));
  sockets[0].onopen?.();
  relay.fromWebview({ type: 'cellscope', request: { saveInputs: { inputs: ['8,3,224,224', 5, '8,128:int32'] } } });
  relay.fromWebview({ type: 'cellscope', request: { saveInputs: { inputs: [] } } });
  assert.deepEqual(saved, [['/w/m.py', ['8,3,224,224', '8,128:int32']]]);
  assert.equal(sockets[0].sent.length, 0);
});

test('the compare commands: a CompareRequest for the followed file, sent once the connection is open', () => {
  const { relay, sockets, timers } = setup();
  relay.retarget(target('/w/m.py'));
  relay.request(compareRequest(HEAD));
  assert.deepEqual(sockets[0]!.sent, [], 'not before the socket opens');
  sockets[0]!.onopen?.();
  assert.deepEqual(sockets[0]!.sent, ['{"compare":{"base":"HEAD"}}']);
  relay.request(compareRequest('/w/other.py'));
  relay.request(compareRequest(''));
  assert.deepEqual(sockets[0]!.sent.slice(1), ['{"compare":{"base":"/w/other.py"}}', '{"compare":{"base":""}}']);
  // Asked while reconnecting: sent on the new connection.
  sockets[0]!.onclose?.(1006, '');
  relay.request(compareRequest(HEAD));
  timers[0]!();
  assert.deepEqual(sockets[1]!.sent, []);
  sockets[1]!.onopen?.();
  assert.deepEqual(sockets[1]!.sent, ['{"compare":{"base":"HEAD"}}']);
  // A request for a file the panel no longer follows is dropped.
  relay.retarget(target('/w/a.py'));
  relay.request(compareRequest(HEAD));
  relay.retarget(target('/w/b.py'));
  sockets[3]!.onopen?.();
  assert.deepEqual(sockets[3]!.sent, []);
  sockets[2]!.onopen?.();  // a dropped socket opening late sends nothing either
  assert.deepEqual(sockets[2]!.sent, []);
});

test('the view\'s "Another file…" asks the extension for a file; its compare requests go to the daemon', () => {
  const { relay, sockets, picks } = setup();
  relay.retarget(target('/w/m.py'));
  sockets[0]!.onopen?.();
  relay.fromWebview({ type: 'cellscope', ready: true });
  relay.fromWebview({ type: 'cellscope', request: { comparePick: {} } });
  assert.deepEqual(picks, ['/w/m.py']);
  relay.fromWebview({ type: 'cellscope', request: { compare: { base: 'HEAD' } } });
  assert.deepEqual(sockets[0]!.sent, ['{"compare":{"base":"HEAD"}}']);
  // A comparison from the daemon reaches the webview like any message.
  sockets[0]!.onmessage?.('{"comparison":{"base":{"kind":"head","label":"HEAD (abc1234)"},"pending":true}}');
  assert.equal(relay.relayed, 1);
});
