import { test } from 'node:test';
import assert from 'node:assert/strict';
import { effectiveSettings, normalizeTarget, statusText } from '../../src/status';
import { serverSettings } from '../../src/settings';

test('targets are normalized as the server does', () => {
  assert.equal(normalizeTarget('Ascend'), 'ascend910b');
  assert.equal(normalizeTarget('ASCEND310P'), 'ascend310p');
  assert.equal(normalizeTarget('cpu'), 'cpu');
  assert.equal(normalizeTarget('tpu'), undefined);
  assert.equal(normalizeTarget(''), undefined);
  assert.equal(normalizeTarget(3), undefined);
});

test('effective target and version: setting, then mindspore_config.json, then defaults', () => {
  assert.deepEqual(effectiveSettings({}, undefined),
    { target: 'cpu', targetFrom: 'default', version: '2.10.0', versionFrom: 'default' });
  const cfg = { graph_visualization: { enable: true, backend: 'ascend' }, mindspore_version: '2.3.1' };
  assert.deepEqual(effectiveSettings({ target: '', mindsporeVersion: '' }, cfg),
    { target: 'ascend910b', targetFrom: 'mindspore_config.json', version: '2.3.1', versionFrom: 'mindspore_config.json' });
  // `target` names the chip; the `cellscope` object wins over the top level.
  assert.equal(effectiveSettings({}, { ...cfg, target: 'ascend910' }).target, 'ascend910');
  assert.equal(effectiveSettings({}, { ...cfg, target: 'ascend910', cellscope: { target: 'ascend310' } }).target, 'ascend310');
  assert.equal(effectiveSettings({ target: 'gpu', mindsporeVersion: '2.5' }, cfg).target, 'gpu');
  assert.equal(effectiveSettings({ target: 'gpu', mindsporeVersion: '2.5' }, cfg).version, '2.5');
  // Unusable values are ignored here (the server reports them).
  assert.equal(effectiveSettings({ target: 'tpu' }, { target: 'nope', mindspore_version: 'x' }).target, 'cpu');
  assert.equal(effectiveSettings({}, 'not an object').version, '2.10.0');
});

test('status text: target · version · state', () => {
  const eff = effectiveSettings({ target: 'ascend910b' }, undefined);
  assert.equal(statusText(eff, { kind: 'analysing' }).text, '$(loading~spin) Ascend 910B · MindSpore 2.10.0 · analysing…');
  const two = statusText(eff, { kind: 'done', errors: 2, warnings: 1 });
  assert.equal(two.text, '$(error) Ascend 910B · MindSpore 2.10.0 · 2 errors');
  assert.equal(two.error, true);
  assert.match(statusText(eff, { kind: 'done', errors: 1, warnings: 0 }).text, /· 1 error$/);
  assert.match(statusText(eff, { kind: 'done', errors: 0, warnings: 3 }).text, /· 3 warnings$/);
  assert.match(statusText(eff, { kind: 'done', errors: 0, warnings: 0 }).text, /^\$\(check\) .* no errors$/);
  const stopped = statusText(eff, { kind: 'stopped', reason: 'cellscope not found' });
  assert.match(stopped.tooltip, /cellscope not found/);
  assert.match(stopped.tooltip, /Click to restart the language server/);
  assert.equal(stopped.error, true);
  assert.match(statusText(eff, { kind: 'done', errors: 0, warnings: 0 }).tooltip, /Click to select the target backend/);
  const restarting = statusText(eff, { kind: 'restarting', reason: 'crashed (killed by signal SIGKILL); 2nd restart in 1 s' });
  assert.equal(restarting.text, '$(sync~spin) Ascend 910B · MindSpore 2.10.0 · restarting…');
  assert.match(restarting.tooltip, /Language server crashed \(killed by signal SIGKILL\); 2nd restart in 1 s/);
  assert.match(restarting.tooltip, /Click to restart the language server/);
  assert.equal(restarting.error, false);
});

test('server settings leave out unset values and the extension\'s own keys', () => {
  assert.deepEqual(serverSettings({ path: '/x', target: '', mindsporeVersion: '', inputs: {}, debounceMs: 120, trace: { server: 'off' } }),
    { debounceMs: 120 });
  // Unset (VS Code's null default): the server's adaptive debounce.
  assert.deepEqual(serverSettings({ debounceMs: null }), {});
  assert.deepEqual(serverSettings({ target: 'Ascend', mindsporeVersion: ' 2.3.1 ', inputs: { '*': ['1,3,224,224'] } }),
    { target: 'ascend910b', mindsporeVersion: '2.3.1', inputs: { '*': ['1,3,224,224'] } });
  // An unknown target is passed on for the server to report.
  assert.deepEqual(serverSettings({ target: 'tpu' }), { target: 'tpu' });
  assert.deepEqual(serverSettings(undefined), {});
});
