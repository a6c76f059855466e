// Parallel strategies in the editor (issue 21, docs/parallel.md "In the view and editor"): the
// inlay hint of a sharded operator's result gives its global and its per-device shape, and
// follows an edit of the strategy; the hover on it gives both with the split.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { InlayHintRequest, HoverRequest, DidChangeTextDocumentNotification } from 'vscode-languageserver-protocol/node';

import { startSession, tempWorkspace, removeDir, path, lineOf } from '../lib/harness.js';

// MatMul ((2, 4), (4, 1)) on 8 devices: x (16, 64) is cut into (8, 16) slices, the output (16, 32)
// into (8, 32) (a's rows by b's columns); the ReLU after it has no strategy.
const SHARDED = `import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((2, 4), (4, 1)))
        self.relu = ops.ReLU()

    def construct(self, x):
        y = self.matmul(x, self.w)
        z = self.relu(y)
        return z


net = Net()
out = net(Tensor(np.ones((16, 64), np.float32)))
`;

async function hints(s, uri, text) {
  const n = text.split('\n').length;
  return s.conn.sendRequest(InlayHintRequest.type, { textDocument: { uri }, range: { start: { line: 0, character: 0 }, end: { line: n, character: 0 } } });
}

test('inlay hints: a sharded operator\'s result shows its global and per-device shapes', async (t) => {
  const ws = tempWorkspace({ 'net.py': { text: SHARDED } });
  const s = await startSession();
  t.after(() => { s.dispose(); removeDir(ws); });
  const file = path.join(ws, 'net.py');
  const uri = s.open(file, SHARDED);
  const pub = await s.waitDiagnostics(uri);
  assert.deepEqual(pub.diagnostics.filter((d) => d.severity === 1), [], 'the strategy is valid');
  const yLine = lineOf(SHARDED, 'y = self.matmul'), zLine = lineOf(SHARDED, 'z = self.relu');
  const all = await hints(s, uri, SHARDED);
  const at = (line) => all.find((h) => h.position.line === line);
  assert.equal(at(yLine)?.label, '(16, 32) f32 → (8, 32)/dev');
  assert.match(at(yLine).tooltip, /^global \(16, 32\) f32, per device \(8, 32\)\n/);
  assert.match(at(yLine).tooltip, /x: global \[16, 64\], per device \[8, 16\] \(split \(2, 4\)\)/);
  assert.match(at(yLine).tooltip, /AllReduce over 4 devices/);
  // The ReLU has no strategy: its hint is the shape alone.
  assert.equal(at(zLine)?.label, '(16, 32) f32');
  assert.equal(at(zLine).tooltip, undefined);

  // The hover on the sharded call says the same.
  const col = SHARDED.split('\n')[yLine].indexOf('matmul(');
  const hover = await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position: { line: yLine, character: col + 2 } });
  assert.match(hover.contents.value, /global \[16, 64\], per device \[8, 16\]/);

  // An edit of the strategy updates the hint: rows split by 8 now, the columns of w by 1.
  const edited = SHARDED.replace('.shard(((2, 4), (4, 1)))', '.shard(((8, 1), (1, 1)))');
  const from = s.diagnostics.length;
  s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version: 2 }, contentChanges: [{ text: edited }],
  });
  await s.waitDiagnostics(uri, (d) => d.version === 2, { from });
  const after = await hints(s, uri, edited);
  assert.equal(after.find((h) => h.position.line === yLine)?.label, '(16, 32) f32 → (2, 32)/dev');
  assert.equal(await s.stop(), 0);
});

// A Cell sharded with Cell.shard (docs/parallel.md §13): the operators inside take its layout by
// sharding propagation, so their results get per-device hints too; the hover on the `.shard(...)`
// call gives its input's two shapes and how many operators took their strategy from it.
const CELL_SHARD = `import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(64, 32)
        self.relu = nn.ReLU()

    def construct(self, x):
        y = self.fc(x)
        return self.relu(y)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.block.shard(in_strategy=((4, 1),))

    def construct(self, x):
        return self.block(x)


net = Net()
out = net(Tensor(np.ones((16, 64), np.float32)))
`;

test('Cell.shard: propagated strategies give per-device hints; the .shard call has a hover', async (t) => {
  const ws = tempWorkspace({ 'net.py': { text: CELL_SHARD } });
  const s = await startSession();
  t.after(() => { s.dispose(); removeDir(ws); });
  const uri = s.open(path.join(ws, 'net.py'), CELL_SHARD);
  const pub = await s.waitDiagnostics(uri);
  assert.deepEqual(pub.diagnostics.filter((d) => d.severity === 1), [], 'the strategy is valid');
  const yLine = lineOf(CELL_SHARD, 'y = self.fc');
  const all = await hints(s, uri, CELL_SHARD);
  const y = all.find((h) => h.position.line === yLine);
  assert.equal(y?.label, '(16, 32) f32 → (4, 32)/dev');
  assert.match(y.tooltip, /by sharding propagation from `self\.block\.shard`/);
  const shardLine = lineOf(CELL_SHARD, 'self.block.shard(');
  const col = CELL_SHARD.split('\n')[shardLine].indexOf('shard(');
  const hover = await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position: { line: shardLine, character: col + 1 } });
  assert.match(hover.contents.value, /self\.block\.shard: 2 operators take their strategies from it by sharding propagation/);
  assert.match(hover.contents.value, /x: global \[16, 64\], per device \[4, 64\] \(split \(4, 1\)\)/);
  assert.equal(await s.stop(), 0);
});
