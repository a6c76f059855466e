import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildViewGraph, nodeWidth, type ViewGraph } from '../src/model';
import { diffGraphs } from '../src/diff';
import {
  COMM_OPS, SPLIT_H, STAGE_PALETTE, commMarker, commOf, deviceEdgeLabel, deviceRanks, deviceTensor, frameText, onRank,
  pickerTip, rankStage, shardingLines, shardingOf, splitLabel, stageColor, stageOf, stagesIn, strategyText,
} from '../src/parallel';
import type { Cell, Node, ParallelSummary, Sharding } from '../src/protocol';
import { node } from './fixtures';
import { parallelEstimateRows } from '../src/panel';

// The shape of what protocol/document.cpp sends for tests/parallel/cases/matmul_valid.py (a MatMul
// ((2, 4), (4, 1)) on 8 devices: x 16×64 -> 8×16, w 64×32 -> 16×32, output 16×32 -> 8×32, an
// AllReduce over the 4 devices holding partial sums), followed by an unsharded ReLU.
const MATMUL: Sharding = {
  strategy: [{ splits: [2, 4] }, { splits: [4, 1] }], attr: 'matmul',
  deviceInputs: [{ name: '0', shape: [8, 16] }, { name: '1', shape: [16, 32] }],
  deviceOutputs: [{ name: '0', shape: [8, 32] }], outputSplit: [2, 1], deviceMatrix: 8,
  comms: [{ kind: 'AllReduce', group: 4, input: -1, why: 'partial sums of the contracted dimension' }],
};

function shardedCell(sharding: Sharding = MATMUL, stages?: [number, number, number, number]): Cell {
  const t = (shape: number[]) => [{ name: '', shape, dtype: 'float32' }];
  const st = (i: number): Partial<Node> => (stages ? { stage: stages[i] } : {});
  return {
    name: 'Net()', className: 'Net', compiled: true,
    nodes: [
      { ...node('x', '', [], 'Input', { outputs: t([16, 64]), ...st(0) }), kind: 'input' },
      { ...node('w', '', [], 'Parameter', { outputs: t([64, 32]), ...st(1) }), kind: 'parameter' },
      node('matmul', 'matmul', ['x', 'w'], 'MatMul', { outputs: t([16, 32]), category: 'matmul', sharding, ...st(2) }),
      node('relu', 'relu', ['matmul'], 'ReLU', { outputs: t([16, 32]), category: 'activation', ...st(3) }),
    ],
    optimized: {
      target: 'ascend910',
      nodes: [
        { id: 'x', kind: 'input', op: 'Input', origins: ['x'], outputs: t([16, 64]) },
        { id: 'w', kind: 'parameter', op: 'Parameter', origins: ['w'], outputs: t([64, 32]) },
        { id: 'matmul', kind: 'op', op: 'MatMul', origins: ['matmul'], inputs: [{ node: 'x' }, { node: 'w', output: 0 }], outputs: t([16, 32]) },
        { id: 'comm/matmul', kind: 'op', op: 'AllReduce', origins: [], inputs: [{ node: 'matmul' }], outputs: t([16, 32]), attrs: { group: 4 } },
        { id: 'relu', kind: 'op', op: 'ReLU', origins: ['relu'], inputs: [{ node: 'comm/matmul' }], outputs: t([16, 32]) },
      ],
    },
  };
}

const edge = (g: ViewGraph, src: string, tgt: string) => {
  const e = g.edges.find((x) => x.src === src && x.tgt === tgt);
  assert.ok(e, `edge ${src} -> ${tgt}`);
  return e;
};

test('the split as Python prints a strategy, with the out_strategy after an arrow', () => {
  assert.equal(strategyText([{ splits: [2, 4] }]), '(2, 4)');
  assert.equal(strategyText([{ splits: [8] }]), '(8,)');
  assert.equal(strategyText([{ splits: [2, 4] }, { splits: [4, 1] }]), '((2, 4), (4, 1))');
  assert.equal(splitLabel({ strategy: [{ splits: [2, 4] }] }), 'split (2, 4)');
  assert.equal(splitLabel(MATMUL), 'split ((2, 4), (4, 1))');
  assert.equal(splitLabel({ ...MATMUL, outStrategy: [{ splits: [8, 1] }] }), 'split ((2, 4), (4, 1)) → (8, 1)');
});

test('a sharded node grows by the band of its frame and widens for its text; in every layer', () => {
  const plain = buildViewGraph(shardedCell({}), 'semantic');
  const g = buildViewGraph(shardedCell(), 'semantic');
  const before = plain.byId.get('matmul')!, after = g.byId.get('matmul')!;
  assert.equal(shardingOf(before), undefined, 'no strategy rows: not sharded');
  assert.equal(after.height, before.height + SPLIT_H);
  assert.equal(frameText(after), 'split ((2, 4), (4, 1)) · AllReduce ×4');
  assert.ok(after.width > nodeWidth(after.label, after.sub), 'wide enough for the split');
  assert.equal(g.byId.get('relu')!.height, before.height, 'the ReLU has no strategy');
  for (const layer of ['optimized', 'hardware'] as const) {
    const o = buildViewGraph(shardedCell(), layer);
    assert.equal(frameText(o.byId.get('matmul')!), 'split ((2, 4), (4, 1)) · AllReduce ×4', layer);
    assert.equal(shardingOf(o.byId.get('relu')!), undefined, layer);
  }
});

test('a strategy edit changes the node (the Changes marks and the delta see it)', () => {
  const a = buildViewGraph(shardedCell(), 'semantic');
  const b = buildViewGraph(shardedCell({ ...MATMUL, strategy: [{ splits: [8, 1] }, { splits: [1, 1] }] }), 'semantic');
  const d = diffGraphs(a, b);
  assert.deepEqual([...d.changed], ['matmul']);
});

test('communication: optimized nodes by op name with their group; a sharded node\'s marker', () => {
  for (const op of ['AllReduce', 'AllGather', 'ReduceScatter', 'AllToAll', 'Send', 'Receive']) assert.ok(COMM_OPS.has(op), op);
  const o = buildViewGraph(shardedCell(), 'optimized');
  const c = o.byId.get('comm/matmul')!;
  assert.deepEqual(commOf(c), { kind: 'AllReduce', group: 4 });
  assert.match(c.sub, /^4 devices · /);
  assert.equal(commOf(o.byId.get('relu')!), null);
  const s = buildViewGraph(shardedCell(), 'semantic');
  assert.equal(commMarker(s.byId.get('matmul')!), 'AllReduce ×4');
  assert.equal(commMarker(s.byId.get('relu')!), '');
});

test('pipeline stages: per node, the stages drawn, colours from a colour-blind-safe palette', () => {
  const g = buildViewGraph(shardedCell(MATMUL, [0, 0, 1, 3]), 'semantic');
  assert.equal(stageOf(g.byId.get('matmul')!), 1);
  assert.deepEqual(stagesIn(g), [0, 1, 3]);
  assert.equal(stageOf(buildViewGraph(shardedCell(), 'semantic').byId.get('matmul')!), null);
  // The optimized layers take the stage of the main origin.
  assert.equal(stageOf(buildViewGraph(shardedCell(MATMUL, [0, 0, 1, 3]), 'optimized').byId.get('relu')!), 3);
  assert.equal(new Set(STAGE_PALETTE).size, STAGE_PALETTE.length);
  assert.equal(stageColor(0), STAGE_PALETTE[0]);
  assert.equal(stageColor(STAGE_PALETTE.length + 2), STAGE_PALETTE[2], 'wraps');
  assert.equal(stageColor(1, ['#111', '#222']), '#222', 'a theme\'s palette');
});

test('the device picker: ranks of a multi-device job, the stage each runs, what a node does on it', () => {
  const p: ParallelSummary = { mode: 'semi_auto_parallel', deviceNum: 8, pipelineStages: 4 };
  assert.deepEqual(deviceRanks(p), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(deviceRanks({ deviceNum: 1 }), []);
  assert.deepEqual(deviceRanks(undefined), []);
  assert.equal(rankStage(p, 0), 0);
  assert.equal(rankStage(p, 5), 2);
  assert.equal(rankStage({ deviceNum: 8 }, 5), null, 'no pipeline');
  const g = buildViewGraph(shardedCell(MATMUL, [0, 0, 1, 3]), 'semantic');
  assert.equal(onRank(p, g.byId.get('matmul')!, 2), true, 'ranks 2, 3 run stage 1');
  assert.equal(onRank(p, g.byId.get('matmul')!, 0), false);
  assert.equal(onRank({ deviceNum: 8 }, g.byId.get('matmul')!, 0), true);
  const tip = pickerTip(p);
  assert.match(tip, /same shape on every rank/);
  assert.match(tip, /strategy repeats: several ranks hold the same slice/);
  assert.match(tip, /4 pipeline stages .*2 ranks each/);
});

test('per-device shapes on edges: the producer\'s slice, else the sharded consumer\'s, else global marked so', () => {
  const g = buildViewGraph(shardedCell(), 'semantic');
  const xm = edge(g, 'x', 'matmul'), wm = edge(g, 'w', 'matmul'), mr = edge(g, 'matmul', 'relu');
  assert.deepEqual(deviceTensor(g, xm)?.shape, [8, 16]);
  assert.deepEqual(deviceTensor(g, wm)?.shape, [16, 32]);
  assert.deepEqual(deviceTensor(g, mr)?.shape, [8, 32]);
  assert.equal(deviceTensor(g, mr)?.dtype, 'float32', 'the dtype of the global tensor');
  assert.deepEqual(deviceEdgeLabel(g, xm, null, false), ['16×64 f32']);
  assert.deepEqual(deviceEdgeLabel(g, xm, 3, false), ['8×16 f32']);
  assert.deepEqual(deviceEdgeLabel(g, mr, 0, true), ['8×32', 'f32']);
  // An unsharded producer and consumer: not known per device.
  const plain = buildViewGraph(shardedCell({}), 'semantic');
  assert.deepEqual(deviceEdgeLabel(plain, edge(plain, 'matmul', 'relu'), 0, false), ['16×32 f32 (global)']);
});

test('the tooltip lines of a sharded node: strategy, both shapes per input and output, communication', () => {
  const g = buildViewGraph(shardedCell(), 'semantic');
  assert.deepEqual(shardingLines(g.byId.get('matmul')!), [
    'self.matmul: split ((2, 4), (4, 1)) on 8 devices',
    'input 0 (x): global 16×64, per device 8×16',
    'input 1 (w): global 64×32, per device 16×32',
    'output: global 16×32, per device 8×32',
    'AllReduce over 4 devices: partial sums of the contracted dimension',
  ]);
  assert.deepEqual(shardingLines(g.byId.get('relu')!), []);
  // A strategy sharding propagation gave (docs/parallel.md §13): named by its operator and origin.
  const propagated = buildViewGraph(shardedCell({ ...MATMUL, attr: '', propagatedFrom: 'self.block.shard' }), 'semantic');
  const lines = shardingLines(propagated.byId.get('matmul')!);
  assert.equal(lines[0], 'MatMul: split ((2, 4), (4, 1)) on 8 devices');
  assert.equal(lines[1], 'strategy by sharding propagation from self.block.shard');
  assert.equal(frameText(propagated.byId.get('matmul')!), 'propagated split ((2, 4), (4, 1)) · AllReduce ×4');
});

test('the hardware panel gives the communication and the pipeline of a parallel estimate', () => {
  assert.deepEqual(parallelEstimateRows({ latencyMs: 1 }), []);
  const timed = parallelEstimateRows({ commBytes: 1536, commMs: 0.0512, commTimed: true });
  assert.equal(timed.length, 1);
  assert.match(timed[0][1], /^0\.0512 ms · 1\.5 KiB sent per device$/);
  const untimed = parallelEstimateRows({ commBytes: 3072, commTimed: false, pipelineStages: 4, microBatches: 4,
    bubbleFraction: 3 / 7, pipelineStepMs: 1.75, stages: [{ stage: 0, computeMs: 0.5 }, { stage: 1, computeMs: 0.75, commMs: 0.01 }] });
  assert.match(untimed[0][1], /time not estimated/);
  assert.equal(untimed[1][0], 'pipeline');
  assert.match(untimed[1][1], /^4 stages × 4 micro-batches: bubble 42\.9 %, step 1\.75 ms$/);
  assert.deepEqual(untimed.slice(2).map((r) => r[0]), ['stage 0', 'stage 1']);
  assert.match(untimed[3][1], /^0\.750 ms compute \+ 0\.0100 ms communication$/);
});
