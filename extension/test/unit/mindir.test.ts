import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as vscode from 'vscode';
import { isVisualizeResult, messageHtml, MindIRViewer, type ModelViewHost } from '../../src/mindir';
import type { VisualizeResult } from '../../src/panel';

const RESULT: VisualizeResult = {
  url: 'http://127.0.0.1:4100/?token=t&file=%2Fw%2Flenet.mindir',
  port: 4100,
  token: 't',
  file: '/w/lenet.mindir',
  cell: '',
  target: 'cpu',
};

// The parts of a WebviewPanel the provider touches.
function fakePanel() {
  const webview = { options: {} as vscode.WebviewOptions, html: '' };
  return { webview, panel: { webview } as unknown as vscode.WebviewPanel };
}

function fakeHost(answer: () => Promise<unknown>) {
  const shown: VisualizeResult[] = [];
  const asked: string[] = [];
  const logged: string[] = [];
  const host: ModelViewHost = {
    webviewRoot: { fsPath: '/ext/dist/webview' } as vscode.Uri,
    visualize: (model) => { asked.push(model.fsPath); return answer(); },
    show: (_panel, result) => { shown.push(result); },
    log: (line) => { logged.push(line); },
  };
  return { host, shown, asked, logged };
}

const model = { fsPath: '/w/lenet.mindir' } as vscode.Uri;

test('a .mindir opens in the graph view the server gives for its path', async () => {
  const h = fakeHost(async () => RESULT);
  const viewer = new MindIRViewer(h.host);
  const doc = viewer.openCustomDocument(model);
  assert.equal(doc.uri, model);
  const p = fakePanel();
  await viewer.resolveCustomEditor(doc, p.panel);
  assert.deepEqual(h.asked, ['/w/lenet.mindir']);
  assert.deepEqual(h.shown, [RESULT]);
  // Scripts on, and no resources but the view's own assets.
  assert.equal(p.webview.options.enableScripts, true);
  assert.deepEqual(p.webview.options.localResourceRoots, [h.host.webviewRoot]);
});

test('a refusal or an odd answer is shown in the editor and logged, never a view', async () => {
  const h = fakeHost(async () => { throw new Error('/w/lenet.mindir: not a MindIR file (truncated at byte 100)'); });
  const p = fakePanel();
  const viewer = new MindIRViewer(h.host);
  await viewer.resolveCustomEditor(viewer.openCustomDocument(model), p.panel);
  assert.deepEqual(h.shown, []);
  assert.match(p.webview.html, /Cellscope cannot show lenet\.mindir/);
  assert.match(p.webview.html, /truncated at byte 100/);
  assert.match(h.logged.join('\n'), /cannot show \/w\/lenet\.mindir/);

  const odd = fakeHost(async () => ({ url: 'x' }));
  const q = fakePanel();
  await new MindIRViewer(odd.host).resolveCustomEditor(viewer.openCustomDocument(model), q.panel);
  assert.deepEqual(odd.shown, []);
  assert.match(q.webview.html, /gave no graph view/);
});

test('answers are checked; messages are escaped and run no script', () => {
  assert.ok(isVisualizeResult(RESULT));
  assert.ok(!isVisualizeResult({ ...RESULT, port: '4100' }));
  assert.ok(!isVisualizeResult({ ...RESULT, cell: undefined }));
  assert.ok(!isVisualizeResult(null));
  const html = messageHtml('Cellscope cannot show <a>.mindir', 'x</pre><script>alert(1)</script>');
  assert.doesNotMatch(html, /<script/);
  assert.match(html, /&#60;script&#62;/);
  assert.match(html, /default-src 'none'/);
});
