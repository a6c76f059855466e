import type { Cell, Node } from '../src/protocol';

export function node(id: string, scope: string, inputs: string[] = [], op = 'Add', extra: Partial<Node> = {}): Node {
  return {
    id, kind: 'op', op, api: '', scope, inputs: inputs.map((n) => ({ node: n, output: 0 })),
    outputs: [{ name: '', shape: [1, 4], dtype: 'float32' }], attrs: {}, params: [], flops: 10, ...extra,
  };
}

/** x -> layer1.0.conv1 -> layer1.0.relu -> layer1.0/Add -> layer1.1.conv1 -> fc */
export function smallCell(): Cell {
  return {
    name: 'Net()', className: 'Net', compiled: true,
    nodes: [
      { ...node('x', '', [], 'Input'), kind: 'input', flops: 0 },
      node('layer1.0.conv1', 'layer1.0.conv1', ['x'], 'Conv2D', { flops: 1000, category: 'convolution' }),
      node('layer1.0.relu', 'layer1.0.relu', ['layer1.0.conv1'], 'ReLU', { category: 'activation' }),
      node('layer1.0/Add', 'layer1.0', ['layer1.0.relu', 'x'], 'Add', { category: 'elementwise' }),
      node('layer1.1.conv1', 'layer1.1.conv1', ['layer1.0/Add'], 'Conv2D', { flops: 5000, category: 'convolution' }),
      node('layer1.1.relu', 'layer1.1.relu', ['layer1.1.conv1'], 'ReLU', { category: 'activation' }),
      node('fc', 'fc', ['layer1.1.relu'], 'MatMul', { flops: 100, category: 'matmul' }),
    ],
  };
}

export function flatCell(n: number): Cell {
  const nodes: Node[] = [{ ...node('x', '', [], 'Input'), kind: 'input' }];
  for (let i = 0; i < n; i++) nodes.push(node(`op${i}`, '', [i === 0 ? 'x' : `op${i - 1}`], i % 2 ? 'MatMul' : 'ReLU'));
  return { name: 'Flat()', nodes, compiled: true };
}

/** x -> n residual blocks blk.<i> (conv, relu, Add of the block's input) -> fc: blocks of one structure. */
export function blocksCell(n: number): Cell {
  const nodes: Node[] = [{ ...node('x', '', [], 'Input'), kind: 'input' }];
  let prev = 'x';
  for (let i = 0; i < n; i++) {
    const b = `blk.${i}`;
    nodes.push(node(`${b}.conv`, `${b}.conv`, [prev], 'Conv2D', { category: 'convolution' }));
    nodes.push(node(`${b}.relu`, `${b}.relu`, [`${b}.conv`], 'ReLU', { category: 'activation' }));
    nodes.push(node(`${b}/Add`, b, [`${b}.relu`, prev], 'Add', { category: 'elementwise' }));
    prev = `${b}/Add`;
  }
  nodes.push(node('fc', 'fc', [prev], 'MatMul', { category: 'matmul' }));
  return { name: 'Blocks()', nodes, compiled: true };
}

/** x -> t.a, fanning out to t.b and t.c, both feeding t.d and t.e, which meet in t.f: no spine (elkjs lays it out). */
export function tangledCell(): Cell {
  const t = (id: string, inputs: string[]) => node(`t.${id}`, `t.${id}`, inputs, 'Add');
  return {
    name: 'Tangled()', compiled: true,
    nodes: [
      { ...node('x', '', [], 'Input'), kind: 'input' },
      t('a', ['x']), t('b', ['t.a']), t('c', ['t.a']), t('d', ['t.b', 't.c']), t('e', ['t.b', 't.c']), t('f', ['t.d', 't.e']),
      node('out', 'out', ['t.f'], 'ReLU'),
    ],
  };
}
