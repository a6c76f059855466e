import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareRequest, HEAD, pickedBase, pickerOptions } from '../../src/compare';

test('the compare commands send view.proto CompareRequests', () => {
  assert.deepEqual(compareRequest(HEAD), { compare: { base: 'HEAD' } });
  assert.deepEqual(compareRequest('/w/models/resnet_v2.py'), { compare: { base: '/w/models/resnet_v2.py' } });
  assert.deepEqual(compareRequest(''), { compare: { base: '' } });
  assert.equal(JSON.stringify(compareRequest(HEAD)), '{"compare":{"base":"HEAD"}}');
});

test('"Compare Graph with File…" picks one Python file, starting beside the model', () => {
  const o = pickerOptions('/w/models/resnet.py');
  assert.equal(o.title, 'Compare the graph of resnet.py with…');
  assert.equal(o.openLabel, 'Compare');
  assert.equal(o.canSelectMany, false);
  assert.equal(o.canSelectFolders, false);
  assert.deepEqual(o.filters, { 'Python model files': ['py'] });
  assert.equal(o.defaultDir, '/w/models');
  assert.equal(pickerOptions(undefined).defaultDir, undefined);
  assert.equal(pickerOptions(undefined).title, 'Compare the graph with…');
  assert.equal(pickedBase(['/w/models/resnet_v2.py', '/w/x.py']), '/w/models/resnet_v2.py');
  assert.equal(pickedBase([]), null);
  assert.equal(pickedBase(undefined), null);
});
