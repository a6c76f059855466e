import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TrainRelay, type TrainBody, type TrainCommand } from '../../src/trainrelay';

function setup(fail = false) {
  const sent: [TrainCommand, TrainBody, string][] = [];
  const logs: string[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => { release = r; });
  let slowFirst = true;
  const relay = new TrainRelay(async (c, b, s) => {
    // The first request is slow: later ones must still arrive after it.
    if (slowFirst) { slowFirst = false; await gate; }
    sent.push([c, b, s]);
    if (fail) throw new Error('server gone');
  }, (l) => logs.push(l));
  return { relay, sent, logs, release };
}

const step = (n: number) => ({
  file: '/w/train.py', cell: 'LeNet5', epoch: 1, step: n, globalStep: n, totalSteps: 20, loss: 2.3 - n * 0.1, lr: 0.01,
  gradNorm: 1.5, lossScale: 1, skipped: false, stepMs: 4.2, samplesPerSec: 7600,
});
const drift = {
  file: '/w/train.py', cell: 'LeNet5', precision: 'target', threshold: 0.999,
  layers: [{ node: 'conv1', op: 'Conv2D', scope: 'conv1', maxAbs: 1e-3, maxRel: 2e-3, cosine: 0.99999, overflows: 0 }],
  firstBelow: '', top1Agreement: 1, samples: 64,
};

test('train relay: steps and drift of mindspore sessions go in order with the session; others are ignored', async () => {
  const { relay, sent, release } = setup();
  assert.equal(relay.onCustomEvent('s1', 'python', 'cellscope.trainStep', step(1)), false);
  assert.equal(relay.onCustomEvent('s1', 'mindspore', 'cellscope.focus', step(1)), false);
  assert.equal(relay.onCustomEvent('s1', 'mindspore', 'cellscope.trainStep', null), false);
  assert.equal(relay.onCustomEvent('s1', 'mindspore', 'cellscope.trainStep', { loss: 1 }), false, 'no file');
  relay.onStarted('s1', 'mindspore', '/w/train.py');
  for (let n = 1; n <= 12; n++) assert.equal(relay.onCustomEvent('s1', 'mindspore', 'cellscope.trainStep', step(n)), true);
  assert.equal(relay.onCustomEvent('s1', 'mindspore', 'cellscope.drift', drift), true);
  release();
  await relay.idle();
  assert.deepEqual(sent.map(([c]) => c), ['cellscope.trainReset', ...Array(12).fill('cellscope.trainStep'), 'cellscope.drift']);
  assert.deepEqual(sent[0], ['cellscope.trainReset', { file: '/w/train.py' }, 's1']);
  assert.deepEqual(sent.slice(1, 13).map(([, b]) => b.globalStep), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  assert.deepEqual(sent[5][1], step(5), 'the whole body');
  assert.ok(sent.every(([, , s]) => s === 's1'));
  assert.deepEqual(sent[13][1], drift);
  assert.equal(relay.sent['cellscope.trainStep'], 12);
});

test('train relay: a session start resets its program only (absolute paths of mindspore sessions)', async () => {
  const { relay, sent, release } = setup();
  release();
  relay.onStarted('s1', 'python', '/w/train.py');
  relay.onStarted('s2', 'mindspore', 'train.py');
  relay.onStarted('s3', 'mindspore', undefined);
  relay.onStarted('s4', 'mindspore', '/w/other.py');
  relay.onCustomEvent('s4', 'mindspore', 'cellscope.trainStep', { ...step(1), file: '/w/other.py' });
  await relay.idle();
  assert.deepEqual(sent.map(([c, b, s]) => [c, b.file, s]), [
    ['cellscope.trainReset', '/w/other.py', 's4'], ['cellscope.trainStep', '/w/other.py', 's4'],
  ]);
});

test('train relay: a failing server is logged once per streak, later steps still go', async () => {
  const { relay, sent, logs, release } = setup(true);
  release();
  for (let n = 1; n <= 5; n++) relay.onCustomEvent('s1', 'mindspore', 'cellscope.trainStep', step(n));
  await relay.idle();
  assert.equal(sent.length, 5);
  assert.equal(logs.length, 1);
  assert.match(logs[0], /cellscope\.trainStep.*server gone/);
});
