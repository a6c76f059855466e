import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exitLine, msrunConfiguration, msrunLaunchArgs, terminalText } from '../../src/msrun';

test('a launch configuration with mode msrun becomes `cellscope launch --msrun`', () => {
  assert.deepEqual(msrunLaunchArgs({ program: '/w/train.py' }), { args: ['launch', '--msrun', '/w/train.py'] });
  assert.deepEqual(msrunLaunchArgs({
    program: '/w/train.py', args: ['--epochs', '2'], force: true, workerNum: 16, localWorkerNum: 8,
    masterAddr: '10.0.0.1', masterPort: 8200, nodeRank: 1, hostfile: '/w/hosts', logDir: 'logs', python: '/v/bin/python',
  }), {
    args: ['launch', '--msrun', '/w/train.py', '--worker-num', '16', '--local-worker-num', '8', '--master-port', '8200',
      '--node-rank', '1', '--master-addr', '10.0.0.1', '--hostfile', '/w/hosts', '--log-dir', 'logs',
      '--python', '/v/bin/python', '--force', '--', '--epochs', '2'],
  });
  // Unset, null and empty fields leave the value to mindspore_config.json.
  assert.deepEqual(msrunLaunchArgs({ program: 'a.py', workerNum: null, logDir: '', force: false, args: [] }),
    { args: ['launch', '--msrun', 'a.py'] });
});

test('a bad field is named, nothing is launched', () => {
  assert.deepEqual(msrunLaunchArgs({ program: '' }), { error: '"program" must name the training script' });
  assert.deepEqual(msrunLaunchArgs({ program: 'a.py', workerNum: 0 }), { error: '"workerNum" must be an integer from 1 to 65536' });
  assert.deepEqual(msrunLaunchArgs({ program: 'a.py', masterPort: 80 }), { error: '"masterPort" must be an integer from 1024 to 65535' });
  assert.deepEqual(msrunLaunchArgs({ program: 'a.py', nodeRank: 1.5 }), { error: '"nodeRank" must be an integer from 0 to 65535' });
  assert.deepEqual(msrunLaunchArgs({ program: 'a.py', masterAddr: 7 }), { error: '"masterAddr" must be a string' });
  assert.deepEqual(msrunLaunchArgs({ program: 'a.py', args: '--x' }), { error: '"args" must be a list of strings' });
  assert.deepEqual(msrunLaunchArgs({ program: 'a.py', force: 'yes' }), { error: '"force" must be true or false' });
});

test('the command\'s configuration is a launch configuration of the mindspore debugger', () => {
  const c = msrunConfiguration('/w/train.py');
  assert.equal(c.type, 'mindspore');
  assert.equal(c.request, 'launch');
  assert.equal(c.mode, 'msrun');
  assert.deepEqual(msrunLaunchArgs(c as { program: string }), { args: ['launch', '--msrun', '/w/train.py'] });
});

test('the terminal gets CR LF line ends and keeps an exit line after the job', () => {
  assert.equal(terminalText('[rank 0] a\n[rank 1] b\r\nc'), '[rank 0] a\r\n[rank 1] b\r\nc');
  assert.match(exitLine(0, null), /ended: exit code 0\. The log stays here/);
  assert.match(exitLine(null, 'SIGINT'), /ended: stopped by SIGINT/);
  assert.ok(exitLine(1, null).startsWith('\r\n') && exitLine(1, null).endsWith('\r\n'));
});
