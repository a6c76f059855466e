import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ArtifactsNotifier, artifactsNotification, parseArtifacts, SESSION_ARTIFACTS_EVENT, type ArtifactAction,
} from '../../src/artifacts';

const body = {
  file: '/w/train.py', cell: 'LeNet5', checkpoint: '/w/train_trained.ckpt', mindir: '/w/lenet.mindir',
};

function setup(pick: (titles: string[]) => string | undefined) {
  const shown: [string, string[]][] = [];
  const ran: ArtifactAction[] = [];
  const logs: string[] = [];
  const n = new ArtifactsNotifier({
    show: async (m, t) => { shown.push([m, t]); return pick(t); },
    run: (a) => { ran.push(a); },
  }, (l) => logs.push(l));
  return { n, shown, ran, logs };
}

const settle = () => new Promise((r) => setImmediate(r));

test('artifacts: the body is checked; relative or missing paths are refused', () => {
  assert.deepEqual(parseArtifacts(body), { ...body, notes: [] });
  assert.equal(parseArtifacts({ ...body, checkpoint: 'rel.ckpt' }), undefined);
  assert.equal(parseArtifacts({ file: '/w/t.py' }), undefined);
  assert.equal(parseArtifacts(null), undefined);
  assert.equal(parseArtifacts('x'), undefined);
  const noModel = parseArtifacts({ ...body, mindir: 3, notes: ['no model exported: x', 4] });
  assert.deepEqual(noModel, { file: body.file, cell: 'LeNet5', checkpoint: body.checkpoint, notes: ['no model exported: x'] });
});

test('artifacts: a MindIR opens in the MindIR viewer; without one, the file\'s graph; the checkpoint is revealed', () => {
  const withModel = artifactsNotification(parseArtifacts(body)!);
  assert.equal(withModel.message, 'MindSpore: LeNet5 trained; wrote train_trained.ckpt and lenet.mindir.');
  assert.deepEqual(withModel.actions, [
    ['Open in Graph View', { kind: 'openModel', path: '/w/lenet.mindir' }],
    ['Reveal Checkpoint', { kind: 'reveal', path: '/w/train_trained.ckpt' }],
  ]);
  const plain = artifactsNotification(parseArtifacts({ ...body, mindir: undefined, notes: ['no model exported: AIR'] })!);
  assert.equal(plain.message, 'MindSpore: LeNet5 trained; wrote train_trained.ckpt. no model exported: AIR');
  assert.deepEqual(plain.actions[0], ['Open in Graph View', { kind: 'showGraph', path: '/w/train.py' }]);
});

test('artifacts: only the event of mindspore sessions is offered; the picked action runs', async () => {
  const { n, shown, ran } = setup((t) => t[0]);
  assert.equal(n.onCustomEvent('python', SESSION_ARTIFACTS_EVENT, body), false);
  assert.equal(n.onCustomEvent('mindspore', 'cellscope.drift', body), false);
  assert.equal(n.onCustomEvent('mindspore', SESSION_ARTIFACTS_EVENT, body), true);
  await settle();
  assert.equal(shown.length, 1);
  assert.deepEqual(shown[0][1], ['Open in Graph View', 'Reveal Checkpoint']);
  assert.deepEqual(ran, [{ kind: 'openModel', path: '/w/lenet.mindir' }]);
});

test('artifacts: dismissed runs nothing; a bad body is logged, not shown; a failing action is logged', async () => {
  const dismissed = setup(() => undefined);
  dismissed.n.onCustomEvent('mindspore', SESSION_ARTIFACTS_EVENT, body);
  await settle();
  assert.deepEqual(dismissed.ran, []);
  assert.equal(dismissed.n.onCustomEvent('mindspore', SESSION_ARTIFACTS_EVENT, { file: 'x' }), false);
  assert.equal(dismissed.shown.length, 1);
  assert.match(dismissed.logs[0], /without absolute file and checkpoint paths/);

  const logs: string[] = [];
  const failing = new ArtifactsNotifier({ show: async (_m, t) => t[1], run: () => { throw new Error('no file manager'); } }, (l) => logs.push(l));
  failing.onCustomEvent('mindspore', SESSION_ARTIFACTS_EVENT, body);
  await settle();
  await settle();
  assert.deepEqual(logs, ['debug session: no file manager']);
});
