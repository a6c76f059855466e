import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DebugFocusRelay, type FocusBody } from '../../src/debugfocus';

function setup(fail = false) {
  const sent: FocusBody[] = [];
  const logs: string[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => { release = r; });
  let slowFirst = true;
  const relay = new DebugFocusRelay(async (f) => {
    // The first request is slow: later ones must still arrive after it.
    if (slowFirst) { slowFirst = false; await gate; }
    sent.push(f);
    if (fail) throw new Error('server gone');
  }, (l) => logs.push(l));
  return { relay, sent, logs, release };
}

const focus = { file: '/w/lenet5.py', cell: 'LeNet5', node: 'conv1', op: 'Conv2D', line: 34, stats: { min: -1, max: 2 } };

test('debug focus relay: mindspore focus events are passed on in order, others ignored', async () => {
  const { relay, sent, release } = setup();
  assert.equal(relay.onCustomEvent('s1', 'python', 'cellscope.focus', focus), false);
  assert.equal(relay.onCustomEvent('s1', 'mindspore', 'output', focus), false);
  assert.equal(relay.onCustomEvent('s1', 'mindspore', 'cellscope.focus', null), false);
  assert.equal(relay.onCustomEvent('s1', 'mindspore', 'cellscope.focus', focus), true);
  assert.equal(relay.onCustomEvent('s1', 'mindspore', 'cellscope.focus', { file: focus.file, cell: 'LeNet5', node: '' }), true);
  assert.equal(relay.onCustomEvent('s1', 'mindspore', 'cellscope.focus', { ...focus, node: 'relu' }), true);
  release();
  await relay.idle();
  assert.deepEqual(sent.map((f) => f.node), ['conv1', '', 'relu']);
  assert.deepEqual(sent[0], focus);  // the whole body (statistics included)
  assert.deepEqual(sent[1], { file: focus.file, cell: 'LeNet5', node: '' });
});

test('debug focus relay: a session that ends while paused is cleared; one already cleared is not', async () => {
  const { relay, sent, release } = setup();
  release();
  relay.onCustomEvent('s1', 'mindspore', 'cellscope.focus', focus);
  relay.onTerminated('s1', 'mindspore');
  relay.onTerminated('s1', 'mindspore');  // once only
  relay.onTerminated('s2', 'mindspore');  // never focused: nothing
  relay.onCustomEvent('s3', 'mindspore', 'cellscope.focus', { ...focus, file: '/w/other.py' });
  relay.onCustomEvent('s3', 'mindspore', 'cellscope.focus', { file: '/w/other.py', cell: 'LeNet5', node: '' });
  relay.onTerminated('s3', 'mindspore');
  relay.onTerminated('s4', 'python');
  await relay.idle();
  assert.deepEqual(sent.map((f) => [f.file, f.node]), [
    ['/w/lenet5.py', 'conv1'], ['/w/lenet5.py', ''], ['/w/other.py', 'conv1'], ['/w/other.py', ''],
  ]);
});

test('debug focus relay: a failing server is logged, later focuses still go', async () => {
  const { relay, sent, logs, release } = setup(true);
  release();
  relay.onCustomEvent('s1', 'mindspore', 'cellscope.focus', focus);
  relay.onCustomEvent('s1', 'mindspore', 'cellscope.focus', { ...focus, node: 'relu' });
  await relay.idle();
  assert.equal(sent.length, 2);
  assert.equal(logs.length, 2);
  assert.match(logs[0], /server gone/);
});
