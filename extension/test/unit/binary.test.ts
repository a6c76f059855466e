import { test } from 'node:test';
import assert from 'node:assert/strict';
import { expandSetting, findBinary, type DiscoveryInput } from '../../src/binary';

function input(files: string[], over: Partial<DiscoveryInput> = {}): DiscoveryInput {
  const set = new Set(files);
  return {
    setting: '',
    extensionPath: '/ext',
    workspaceFolder: '/ws',
    envPath: '/usr/local/bin:/usr/bin',
    home: '/home/u',
    platform: 'linux',
    isExecutable: (p) => set.has(p),
    ...over,
  };
}

test('the setting wins over the bundled copy and PATH', () => {
  const r = findBinary(input(['/opt/cs/cellscope', '/ext/bin/cellscope', '/usr/bin/cellscope'], { setting: '/opt/cs/cellscope' }));
  assert.deepEqual(r, { ok: true, path: '/opt/cs/cellscope', source: 'setting' });
});

test('the bundled copy comes before PATH', () => {
  const r = findBinary(input(['/ext/bin/cellscope', '/usr/bin/cellscope']));
  assert.deepEqual(r, { ok: true, path: '/ext/bin/cellscope', source: 'bundled' });
});

test('PATH is searched in order', () => {
  const r = findBinary(input(['/usr/bin/cellscope', '/usr/local/bin/cellscope']));
  assert.deepEqual(r, { ok: true, path: '/usr/local/bin/cellscope', source: 'path' });
  const empty = findBinary(input(['/usr/bin/cellscope'], { envPath: '::/usr/bin:' }));
  assert.equal(empty.ok && empty.path, '/usr/bin/cellscope');
});

test('a setting that does not exist is an error naming the setting, without falling back', () => {
  const r = findBinary(input(['/ext/bin/cellscope'], { setting: '/nope/cellscope' }));
  assert.equal(r.ok, false);
  if (!r.ok) {
    assert.match(r.message, /cellscope\.path/);
    assert.match(r.message, /\/nope\/cellscope/);
    assert.deepEqual(r.tried, ['/nope/cellscope']);
  }
});

test('~, ${workspaceFolder} and relative settings are expanded', () => {
  assert.equal(expandSetting('~/bin/cellscope', '/home/u'), '/home/u/bin/cellscope');
  assert.equal(expandSetting('${workspaceFolder}/build/cellscope', '/home/u', '/ws'), '/ws/build/cellscope');
  assert.equal(expandSetting('build/cellscope', '/home/u', '/ws'), '/ws/build/cellscope');
  const r = findBinary(input(['/ws/build/cellscope'], { setting: './build/cellscope' }));
  assert.deepEqual(r, { ok: true, path: '/ws/build/cellscope', source: 'setting' });
});

test('a bare name in the setting is looked up on PATH', () => {
  const r = findBinary(input(['/usr/bin/cellscope-dev'], { setting: 'cellscope-dev' }));
  assert.deepEqual(r, { ok: true, path: '/usr/bin/cellscope-dev', source: 'setting' });
  const miss = findBinary(input([], { setting: 'cellscope-dev' }));
  assert.equal(miss.ok, false);
});

test('nothing found: the message says how to fix it and what was tried', () => {
  const r = findBinary(input([]));
  assert.equal(r.ok, false);
  if (!r.ok) {
    assert.match(r.message, /cellscope\.path/);
    assert.match(r.message, /PATH/);
    assert.deepEqual(r.tried, ['/ext/bin/cellscope', '/usr/local/bin/cellscope', '/usr/bin/cellscope']);
  }
});

test('Windows: cellscope.exe and ; separators', () => {
  const r = findBinary(input(['C:\\tools/cellscope.exe'], { platform: 'win32', envPath: 'C:\\x;C:\\tools', extensionPath: 'C:\\ext' }));
  assert.equal(r.ok, true);
});
