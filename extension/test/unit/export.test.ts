import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  displayPath,
  exportArgs,
  exportMessage,
  formatBytes,
  graphTarget,
  inWorkspace,
  isExportArgs,
  isExportResult,
  OPEN_GRAPH,
  REVEAL,
  SHOW_PROBLEMS,
} from '../../src/export';

test('the request carries the cursor, never more than asked', () => {
  assert.deepEqual(exportArgs('file:///w/m.py', 'onnx', { line: 3, character: 7 }),
    { uri: 'file:///w/m.py', format: 'onnx', position: { line: 3, character: 7 } });
  assert.deepEqual(exportArgs('file:///w/m.py', 'mindir'), { uri: 'file:///w/m.py', format: 'mindir' });
});

test('lens arguments and server results are checked before use', () => {
  assert.ok(isExportArgs({ uri: 'file:///a.py', format: 'mindir', cell: 'LeNet5', output: '/a/lenet.mindir' }));
  assert.ok(!isExportArgs({ uri: 'file:///a.py', format: 'air' }));
  assert.ok(!isExportArgs(['file:///a.py']));
  assert.ok(!isExportArgs(null));
  assert.ok(isExportResult({ status: 'written', path: '/w/LeNet5.mindir', format: 'mindir', cell: 'LeNet5', nodes: 18, bytes: 251920, summary: '' }));
  assert.ok(!isExportResult({ status: 'written', path: '/w/x' }));
  assert.ok(isExportResult({ status: 'refused', format: 'mindir', messages: ['x'] }));
  assert.ok(!isExportResult({ status: 'refused', format: 'mindir', messages: [3] }));
  assert.ok(isExportResult({ status: 'cancelled' }));
  assert.ok(!isExportResult({ status: 'done' }));
});

test('bytes are shown in binary units', () => {
  assert.equal(formatBytes(354), '354 B');
  assert.equal(formatBytes(251920), '246 KB');
  assert.equal(formatBytes(102_400_000), '97.7 MB');
  assert.equal(formatBytes(3 * 1024 ** 3), '3.00 GB');
});

test('success: an information message with Reveal and Open in graph view', () => {
  const m = exportMessage({ status: 'written', path: '/w/models/LeNet5.mindir', format: 'mindir', cell: 'LeNet5', nodes: 18, bytes: 251920, summary: '' }, ['/w']);
  assert.equal(m.kind, 'info');
  assert.equal(m.text, 'Exported LeNet5 as MindIR: models/LeNet5.mindir (18 nodes, 246 KB)');
  assert.deepEqual(m.actions, [REVEAL, OPEN_GRAPH]);
  const o = exportMessage({ status: 'written', path: '/elsewhere/r.onnx', format: 'onnx', cell: 'resnet50()', nodes: 175, bytes: 102_400_000, summary: '' }, ['/w']);
  assert.equal(o.text, 'Exported resnet50() as ONNX: /elsewhere/r.onnx (175 nodes, 97.7 MB)');
});

test('refusal: an error message pointing at the Problems panel when diagnostics were published', () => {
  const m = exportMessage({
    status: 'refused', format: 'mindir', cell: 'Gate', diagnostics: 1,
    messages: ['/w/gate.py:12:16: cannot export to MindIR: operator Dense (ops.dense): it has no MindIR mapping in the operator table [export-unsupported-op]', 'nothing written to /w/Gate.mindir: 1 problem'],
  }, ['/w']);
  assert.equal(m.kind, 'error');
  assert.match(m.text, /^Export MindIR refused for Gate, nothing written: gate\.py:12:16: .*\[export-unsupported-op\] \(\+1 more\)\. See the Problems panel\.$/);
  assert.deepEqual(m.actions, [SHOW_PROBLEMS]);
  // Not located (no such directory): no Problems button.
  const n = exportMessage({ status: 'refused', format: 'onnx', messages: ['cannot write /w/out/a.onnx: no such directory /w/out'] }, ['/w']);
  assert.deepEqual(n.actions, []);
  assert.equal(n.text, 'Export ONNX refused, nothing written: cannot write out/a.onnx: no such directory out.');
  assert.equal(exportMessage({ status: 'cancelled' }, []).kind, 'none');
});

test('paths are shown relative to the workspace folder holding them', () => {
  assert.equal(displayPath('/w/a/b.onnx', ['/x', '/w']), 'a/b.onnx');
  assert.equal(displayPath('/wx/b.onnx', ['/w']), '/wx/b.onnx');
  assert.ok(inWorkspace('/w/b.onnx', ['/w']));
  assert.ok(!inWorkspace('/other/b.onnx', ['/w']));
  assert.ok(!inWorkspace('/w', ['/w']));
});

test('"Open in graph view" shows the exported Cell: the written .mindir itself, or the ONNX export\'s source Cell', () => {
  const written = { status: 'written' as const, path: '/w/out/Net.mindir', format: 'mindir' as const, cell: 'resnet50()', nodes: 235, bytes: 1, summary: '' };
  // A lens export: the call's inputs, the cursor elsewhere; the file holds what was exported.
  const lens = { uri: 'file:///w/m.py', format: 'mindir' as const, output: 'out/Net.mindir', cell: 'resnet50()' };
  assert.deepEqual(graphTarget(written, lens), { kind: 'model', path: '/w/out/Net.mindir' });
  const onnx = { ...written, format: 'onnx' as const, path: '/w/r.onnx' };
  assert.deepEqual(graphTarget(onnx, { uri: 'file:///w/m.py', format: 'onnx', position: { line: 3, character: 1 } }),
    { kind: 'source', uri: 'file:///w/m.py', cell: 'resnet50()' });
});
