import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withInputs } from '../../src/config';

test('the view\'s input shapes go into mindspore_config.json, keeping everything else', () => {
  assert.equal(withInputs(undefined, 'models/lenet.py', ['4,1,32,32']),
    '{\n  "inputs": {\n    "models/lenet.py": [\n      "4,1,32,32"\n    ]\n  }\n}\n');
  const before = JSON.stringify({ target: 'ascend910b', inputs: { '*': ['1,3,224,224'], 'a.py': ['1,8'] } });
  const after = JSON.parse(withInputs(before, 'a.py', ['2,8', '2:int32']));
  assert.deepEqual(after, { target: 'ascend910b', inputs: { '*': ['1,3,224,224'], 'a.py': ['2,8', '2:int32'] } });
  assert.deepEqual(JSON.parse(withInputs('  \n', 'b.py', ['1'])), { inputs: { 'b.py': ['1'] } });
});

test('a config that is not a JSON object (or whose inputs are not) is not overwritten', () => {
  assert.throws(() => withInputs('[1, 2]', 'a.py', ['1']), /not hold a JSON object/);
  assert.throws(() => withInputs('{"inputs": ["1,2"]}', 'a.py', ['1']), /"inputs" .* is not an object/);
  assert.throws(() => withInputs('{"target": ', 'a.py', ['1']), SyntaxError);
});
