// TypeScript mirror of protocol/graph.proto and protocol/view.proto in their proto3 JSON form
// (lowerCamelCase). Fields the server may omit (proto3 JSON drops defaults in some writers) are
// optional here; readers go through the helpers in model.ts, which supply the defaults.

export type Dim = number | string | null;

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }

export interface Tensor {
  name?: string;
  shape?: Dim[];
  dtype?: string;
  unranked?: boolean;
  format?: string;
}

export interface Edge { node: string; output?: number }

export type AttrValue = null | boolean | number | string | AttrValue[] | { [k: string]: AttrValue };

export interface Node {
  id: string;
  kind?: string;
  op?: string;
  api?: string;
  scope?: string;
  inputs?: Edge[];
  outputs?: Tensor[];
  attrs?: Record<string, AttrValue>;
  params?: string[];
  file?: string;
  range?: Range;
  flops?: number;
  category?: string; // the operator's category from its definition (graph.proto Node.category)
  sharding?: Sharding; // the operator's `.shard(...)` strategy and its per-device shapes
  stage?: number;      // the pipeline stage it runs in (absent: no Cell sets one)
}

export interface ShardingRow { splits?: number[] }

export interface ShardingComm {
  kind?: string;   // "AllReduce" | "ReduceScatter" | "AllGather" | "StridedSlice"
  group?: number;  // devices taking part
  input?: number;  // the input it redistributes; -1 (or absent with kind on the output): the output
  why?: string;
}

/** graph.proto Sharding: a sharded operator's strategy and what it implies per device. */
export interface Sharding {
  strategy?: ShardingRow[];
  outStrategy?: ShardingRow[];
  file?: string;
  range?: Range;
  attr?: string;
  deviceInputs?: Tensor[];   // one device's slice of each input (the same on every rank)
  deviceOutputs?: Tensor[];
  outputSplit?: number[];
  deviceMatrix?: number;     // devices the strategy uses
  comms?: ShardingComm[];
  /** Set when sharding propagation gave the strategy: the sharded call it came from. */
  propagatedFrom?: string;
}

/** graph.proto ParallelSummary: the program's parallel configuration. */
export interface ParallelSummary {
  mode?: string;
  deviceNum?: number;
  deviceNumFrom?: string;
  pipelineStages?: number;
  microBatches?: number;
  sharding?: boolean;
  searchMode?: string;
}

export interface Parameter {
  name: string;
  shape?: Dim[];
  dtype?: string;
  trainable?: boolean;
  size?: number;
}

export interface TensorPlacement {
  output?: number;
  bytes?: number;
  size?: number;
  first?: number;
  last?: number;
  offset?: number;
  buffer?: number;
}

export interface TileLevel { buffer?: string; tile?: string; bytes?: number; copies?: number; capacity?: number }
export interface LoopLevel { var?: string; trips?: number; what?: string }
export interface DmaTransfer { channel?: string; from?: string; to?: string; bytes?: number }
export interface Instruction { op?: string; unit?: string; count?: number; cycles?: number }

export interface HardwareKernel {
  node?: string;
  phase?: string;
  name?: string;
  unit?: string;
  blockDim?: number;
  coreIds?: number[];
  computeCycles?: number;
  movementCycles?: number;
  cycles?: number;
  startUs?: number;
  timeUs?: number;
  gmReadBytes?: number;
  gmWriteBytes?: number;
  bandwidthGbps?: number;
  macs?: number;
  bound?: string;
  tiles?: number;
  tiling?: TileLevel[];
  loops?: LoopLevel[];
  dma?: DmaTransfer[];
  schedule?: Instruction[];
}

export interface OptimizedNode {
  id: string;
  kind?: string;
  op?: string;
  category?: string;
  pattern?: string;
  inputs?: Edge[];
  outputs?: Tensor[];
  origins?: string[];
  pass?: string;
  params?: string[];
  attrs?: Record<string, AttrValue>;
  flops?: number;
  reason?: string;
  memory?: TensorPlacement[];
  hardware?: HardwareKernel[];
}

export interface RemovedNode { node: string; pass?: string; reason?: string }
export interface FusionDecision {
  pass?: string; pattern?: string; nodes?: string[]; fused?: boolean; reason?: string; kernel?: string;
}
export interface MemoryBuffer { offset?: number; size?: number; tensors?: string[] }
export interface MemoryPlan {
  algorithm?: string;
  alignment?: number;
  peakBytes?: number;
  naiveBytes?: number;
  lowerBoundBytes?: number;
  weightBytes?: number;
  constantBytes?: number;
  buffers?: MemoryBuffer[];
  unsized?: string[];
  tensors?: number;
}
export interface PassRecord {
  name?: string; description?: string; nodesBefore?: number; nodesAfter?: number; changes?: number; ms?: number;
}

export interface OptimizedLayer {
  target?: string;
  nodes?: OptimizedNode[];
  results?: Edge[];
  removed?: RemovedNode[];
  fusions?: FusionDecision[];
  memory?: MemoryPlan;
  passes?: PassRecord[];
  semanticOps?: number;
  kernels?: number;
  fusionGroups?: number;
  transdata?: number;
}

export interface Estimate {
  latencyMs?: number;
  throughputPerSec?: number;
  batch?: number;
  analytical?: boolean;
  target?: string;
  mode?: string;
  forwardMs?: number;
  backwardMs?: number;
  optimizerMs?: number;
  cubeMs?: number;
  vectorMs?: number;
  aicpuMs?: number;
  dispatchMs?: number;
  macs?: number;
  gmBytes?: number;
  cubeUtilization?: number;
  memoryPeakBytes?: number;
  weightBytes?: number;
  notes?: string[];
  cpuMs?: number;
  // Parallel jobs (graph.proto Estimate 21-28; docs/parallel.md "Communication and its cost").
  commMs?: number;
  commBytes?: number;
  commTimed?: boolean;
  pipelineStages?: number;
  microBatches?: number;
  bubbleFraction?: number;
  pipelineStepMs?: number;
  stages?: StageEstimate[];
}

export interface StageEstimate {
  stage?: number;
  computeMs?: number;
  commMs?: number;
}

export interface HardwareTarget {
  name?: string;
  displayName?: string;
  kind?: string;
  aiCores?: number;
  frequencyMhz?: number;
  peakTflopsFp16?: number;
  gmBandwidthGbps?: number;
  [k: string]: unknown;
}

export interface HardwareLayer {
  target?: string;
  mode?: string;
  ascend?: boolean;
  statement?: string;
  estimate?: Estimate;
  spec?: HardwareTarget;
  optimizer?: HardwareKernel[];
  kernels?: number;
}

/**
 * A call of construct at which an error was reported (graph.proto FailedCall): it produced no
 * node, and nothing that depends on it is in the Cell's nodes. The view draws it where the graph
 * stops. `id` is unique among the failures but may equal a node's id.
 */
export interface FailedCall {
  id: string;
  api?: string;
  op?: string;
  scope?: string;
  inputs?: Edge[];
  file?: string;
  range?: Range;
  code?: string;
  message?: string;
}

export interface Cell {
  name: string;
  className?: string;
  file?: string;
  range?: Range;
  inputs?: Tensor[];
  outputs?: Tensor[];
  params?: number;
  totalParams?: number;
  flops?: number;
  parameters?: Parameter[];
  nodes?: Node[];
  compiled?: boolean;
  results?: Edge[];
  optimized?: OptimizedLayer;
  hardware?: HardwareLayer;
  failures?: FailedCall[];
  /** The class of every Cell instance whose construct ran ("layer1.0" -> "Bottleneck"; "" the root). */
  scopeClasses?: Record<string, string>;  // in evaluation order
}

export interface RelatedInformation { file?: string; range?: Range; message?: string }
export interface Diagnostic {
  file?: string;
  range?: Range;
  severity?: string;
  code?: string;
  message?: string;
  related?: RelatedInformation[];
}

export interface GraphDocument {
  file?: string;
  cells?: Cell[];
  diagnostics?: Diagnostic[];
  target?: string;
  mindsporeVersion?: string;
  toolVersion?: string;
  files?: string[];
  layer?: string;
  parallel?: ParallelSummary;
}

// ---- view.proto ----

export interface ViewHello {
  file?: string; toolVersion?: string; targets?: string[]; editor?: boolean; focusCell?: string;
}

export interface CellDelta {
  name: string;
  header?: Cell;
  nodes?: Node[];
  removed?: string[];
  order?: string[];
  optimizedNodes?: OptimizedNode[];
  optimizedRemoved?: string[];
  optimizedOrder?: string[];
}

export interface GraphDelta {
  base: number | string;  // uint64: proto3 JSON may print it as a string
  header?: GraphDocument;
  cells?: CellDelta[];
}

export interface ViewUpdate {
  seq: number | string;
  document?: GraphDocument;
  delta?: GraphDelta;
  analysisMs?: number;
  focusCell?: string;
  skeletons?: CellSkeleton[];  // lazy Cells (their document Cell has no node lists)
}

export interface ScopeSummary {
  scope?: string; nodes?: number; optimizedNodes?: number; totalNodes?: number;
  totalOptimizedNodes?: number; first?: number; optimizedFirst?: number;
}

export interface ScopeEdge { from?: string; to?: string; count?: number }

export interface BoundaryEdge { src: string; output?: number; tgt: string; srcScope?: string; tgtScope?: string }

export interface ScopeNodes {
  seq?: number | string; cell?: string; scope?: string;
  nodes?: Node[]; index?: number[];
  optimizedNodes?: OptimizedNode[]; optimizedIndex?: number[];
  boundary?: BoundaryEdge[]; optimizedBoundary?: BoundaryEdge[];
  error?: string;
}

export interface CellSkeleton {
  name: string; nodes?: number; optimizedNodes?: number;
  scopes?: ScopeSummary[]; edges?: ScopeEdge[]; optimizedEdges?: ScopeEdge[];
  root?: ScopeNodes;
}

export interface ViewStatus { state?: string; message?: string; diagnostics?: Diagnostic[] }

export interface NodeDetails {
  seq?: number | string; cell?: string; node?: string; kernels?: HardwareKernel[]; error?: string;
}

/** The node the debugger is paused on (an empty `node`: not paused). See view.proto. */
export interface DebugFocus {
  cell?: string;
  node?: string;
  stats?: Record<string, number>;  // numel, min, max, mean, std, nan, inf, zeros
  file?: string;
  op?: string;
  line?: number;
  shape?: (number | string)[];     // int64: proto3 JSON may print strings
  dtype?: string;
  scope?: string;
  reason?: string;
  description?: string;
  ran?: boolean;
  tensor?: string;
  source?: string;
}

/** What a comparison compares with (view.proto's CompareBase). */
export interface CompareBase {
  kind?: string;    // "head" | "file"; absent: not comparing
  label?: string;   // "HEAD (abc1234)", "other.py"
  file?: string;
  commit?: string;
  spec?: string;    // what was asked: "HEAD" or a path
}

/** One difference of a node: `field` "op", "attrs.<name>", "outputs[<i>].shape", "params", ... */
export interface FieldChange { field: string; before?: AttrValue; after?: AttrValue }
export interface NodeChange { id: string; changes?: FieldChange[] }

export interface CellTotals {
  params?: number; totalParams?: number; flops?: number; nodes?: number; kernels?: number;
  hardware?: boolean; latencyMs?: number; throughputPerSec?: number; memoryPeakBytes?: number;
  compiled?: boolean;
}

export interface CellComparison {
  cell: string;
  baseCell?: string;
  added?: string[];
  removed?: Node[];
  changed?: NodeChange[];
  optimizedAdded?: string[];
  optimizedRemoved?: string[];
  optimizedChanged?: NodeChange[];
  before?: CellTotals;
  after?: CellTotals;
}

/** The graph compared with a fixed base (view.proto's Comparison); no `base.kind`: not comparing. */
export interface Comparison {
  base?: CompareBase;
  seq?: number | string;
  pending?: boolean;
  error?: string;
  cells?: CellComparison[];
  removedCells?: string[];
  baseErrors?: number;
  baseError?: string;
}

/** One optimizer step (view.proto's TrainStep; int64 fields may arrive as strings, a NaN as "NaN"). */
export interface TrainStep {
  file?: string; cell?: string;
  epoch?: number | string; step?: number | string; globalStep?: number | string; totalSteps?: number | string;
  loss?: number | string; lr?: number | string; gradNorm?: number | string; lossScale?: number | string;
  skipped?: boolean; stepMs?: number | string; samplesPerSec?: number | string;
}

/** Steps of a training run (view.proto's TrainProgress); `reset`: drop the chart and the drift first. */
export interface TrainProgress {
  file?: string; cell?: string; reset?: boolean; steps?: TrainStep[]; maxSteps?: number; session?: string;
}

/** One layer's drift at the chosen precision against fp32 (view.proto's LayerDrift). */
export interface LayerDrift {
  node: string; op?: string; scope?: string;
  maxAbs?: number | string; maxRel?: number | string; cosine?: number | string; overflows?: number | string;
}

/** The per-layer precision drift of the inference half (view.proto's PrecisionDrift); no layers: none. */
export interface PrecisionDrift {
  file?: string; cell?: string; precision?: string; threshold?: number | string; layers?: LayerDrift[];
  firstBelow?: string; top1Agreement?: number | string; accuracyFp32?: number | string;
  accuracyPrecision?: number | string; samples?: number | string;
}

/** One telemetry message of a deployed model's device (view.proto's DeviceSample; uint64 may arrive as
 * a string; an absent optional is "not measured": power absent is "n/a", never 0). */
export interface DeviceSample {
  file?: string; device?: string; address?: string; bundle?: string; precision?: string; backend?: string;
  timeMs?: number | string; fps?: number | string; inferences?: number | string;
  latencyP50Ms?: number | string; latencyP99Ms?: number | string; rssMb?: number | string; cpuPercent?: number | string;
  powerW?: number | string; powerSource?: string;
  loadTop1Agreement?: number | string; loadCosine?: number | string; lastTop1Agreement?: number | string; lastCosine?: number | string;
  deploying?: string;
  /** A mark, not a telemetry line: "stopped" | "rolled back" | "disconnected" at timeMs. */
  event?: string;
}

/** Samples of a device watch (view.proto's DeviceProgress); `reset`: drop the chart first. */
export interface DeviceProgress {
  file?: string; device?: string; reset?: boolean; samples?: DeviceSample[]; maxSamples?: number; session?: string;
}

export interface ViewMessage {
  hello?: ViewHello;
  update?: ViewUpdate;
  status?: ViewStatus;
  details?: NodeDetails;
  debug?: DebugFocus;
  nodes?: ScopeNodes;
  comparison?: Comparison;
  train?: TrainProgress;
  drift?: PrecisionDrift;
  device?: DeviceProgress;
}

export interface ViewRequest {
  reveal?: { file: string; range: Range };
  details?: { cell: string; node: string };
  nodes?: { cell: string; scope: string };
  /** The input shapes to analyse the file with (empty: the settings'). */
  inputs?: { inputs: string[] };
  /** Inside VS Code: write these input shapes to the workspace's mindspore_config.json (the
   * extension asks the user first; not a daemon request). */
  saveInputs?: { inputs: string[] };
  /** Compare the graph with a base: "HEAD", a .py path (absolute or relative to the file), "" stops. */
  compare?: { base: string };
  /** Inside VS Code: ask the extension to pick the file to compare with (not a daemon request). */
  comparePick?: Record<string, never>;
}

export function seqNumber(v: number | string | undefined): number {
  if (v === undefined) return 0;
  return typeof v === 'number' ? v : Number(v);
}
