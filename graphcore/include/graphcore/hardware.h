// The hardware layer: an analytical model of how a target runs an optimized graph. Targets are
// data (graphcore/targets/<name>.json, embedded at build time; every number carries its source
// and a confidence label). For each optimized node the model picks the unit it runs on (Cube,
// Vector, AI CPU, host), tiles it into the on-chip buffers (L1, L0A/L0B/L0C, UB) with double
// buffering, derives the loop nest, the per-tile instruction schedule, the DMA channel of every
// transfer and the cycles (compute vs data movement, pipelined), then schedules every kernel of the
// graph over the cores in execution order. Nothing is measured: every figure is a model estimate.
// See docs/hardware-model.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "graphcore/optimize.h"
#include "graphcore/training.h"

namespace graphcore {

// A target file that is missing, unreadable or invalid. The message names the file and field.
class TargetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where a number of a target file comes from.
struct FieldSource {
  std::string field;
  std::string confidence;  // "O", "T", "3P", "D", "?", "A" (combinations such as "T/3P" allowed)
  std::string source;
};

// A parsed target file. Every file holds the optimization layer's facts (graphcore::targets() is
// made of them); its "kind" says which hardware model the rest of the file is for: "ascend" (the
// Ascend fields), "cpu" (the CPU fields) or "gpu" (none: the hardware layer has no GPU model, and
// such a file holds no hardware fields).
struct HardwareTarget {
  std::string name;          // "ascend910", ..., "cpu", "gpu"
  std::string display_name;  // "Ascend 910 (A)"
  std::string kind;          // "ascend" | "cpu" | "gpu"
  bool ascend = false;       // kind == "ascend"
  // Every kind: the optimization layer's facts (TargetInfo).
  uint32_t buffer_alignment = 0;       // bytes, a power of two: each planned tensor's alignment
  std::string fused_attention_kernel;  // the kernel library's fused attention kernel; "": none
  std::vector<FieldSource> optimizer_sources;  // buffer_alignment_bytes, fused_attention_kernel
  // Ascend.
  bool separated = false;     // AIC/AIV split (220x) vs coupled cube+vector cores
  uint32_t ai_cores = 0;      // cube-capable cores (AIC on separated chips)
  uint32_t vector_cores = 0;  // cores that run vector kernels (AIV on separated chips)
  double frequency_mhz = 0;
  double cube_macs_fp16 = 0;  // MAC per cycle per core
  double cube_macs_int8 = 0;
  double mmad_issue_cycles = 0;  // fixed cycles per MMAD instruction (pipeline fill, handshake)
  bool cube_fp32 = false;        // false: float32 matmuls run at the fp16 rate (fp16 operands)
  double vector_bytes_per_cycle = 0;
  uint64_t l1_bytes = 0, l0a_bytes = 0, l0b_bytes = 0, l0c_bytes = 0, ub_bytes = 0, l2_bytes = 0;
  double gm_bandwidth_gbps = 0;  // chip HBM/DDR bandwidth
  double gm_read_bytes_per_cycle = 0, l2_read_bytes_per_cycle = 0, gm_write_bytes_per_cycle = 0;
  double l1_to_l0a_bytes_per_cycle = 0, l1_to_l0b_bytes_per_cycle = 0,
         l0c_to_ub_bytes_per_cycle = 0;
  std::vector<std::string> dma_channels;  // "MTE1", "MTE2", "MTE3", "FixPipe"
  uint32_t ai_cpu_cores = 0;
  double ai_cpu_gflops = 0;  // per AI CPU core
  // CPU.
  uint32_t cores = 0;
  double flops_per_cycle_fp32 = 0;
  uint64_t cache_bytes = 0;
  double dram_bandwidth_gbps = 0;
  double matmul_efficiency = 0;
  // Both, optional: the interconnect between devices (GB/s of one link, and the latency of one
  // hop of a ring step); 0: the target file gives no figure, and communication is not timed.
  double interconnect_gbps = 0;
  double interconnect_latency_us = 0;
  // Both.
  double launch_overhead_us = 0;
  std::string notes;
  // One per field of the hardware model, in file order (what the hardware layer's document lists;
  // the optimizer's fields are in optimizer_sources). Empty for kind "gpu".
  std::vector<FieldSource> sources;

  [[nodiscard]] bool has_hardware_model() const { return kind == "ascend" || kind == "cpu"; }
  [[nodiscard]] double cycles_per_us() const { return frequency_mhz; }
};

// The built-in targets with a hardware model, in the order the hardware layer's messages list
// them: "cpu", "ascend910", "ascend910b", "ascend310", "ascend310p" (not "gpu").
std::span<const std::string_view> hardware_target_names();
// Parses and validates a target file's text; `origin` names it in error messages. Throws
// TargetError ("ascend910.json: field 'l0a_bytes': expected a positive number").
HardwareTarget parse_hardware_target(std::string_view json, std::string_view origin);
// Reads and parses a target file. Throws TargetError (missing or unreadable file, invalid JSON,
// invalid fields).
HardwareTarget load_hardware_target_file(const std::filesystem::path& path);
// The built-in target `name` with a hardware model (every built-in file is parsed once, on first
// use of this or of graphcore::targets()). Throws TargetError for an unknown name or a target
// without a hardware model ("gpu").
const HardwareTarget& hardware_target(std::string_view name);

// Comm: a collective or point-to-point transfer on the interconnect (HCCL tasks on Ascend).
enum class Unit : uint8_t { Cube, Vector, AiCpu, Host, Cpu, Comm };
std::string_view unit_name(Unit u);  // "cube", "vector", "aicpu", "host", "cpu", "comm"

// One buffer level of a kernel's tiling: the tile it holds and how many copies (2: double
// buffered, so the next tile loads while this one computes).
struct TileLevel {
  std::string buffer;  // "L1", "L0A", "L0B", "L0C", "UB", "cache"
  std::string tile;    // "m=64 k=256 (fp16, 4x16 fractals of 16x16)"
  uint64_t bytes = 0;  // one copy
  uint32_t copies = 1;
  uint64_t capacity = 0;  // the buffer's size on the target
};

struct LoopLevel {
  std::string var;  // "mo", "no", "ko", "tile"
  uint64_t trips = 0;
  std::string what;  // "M blocks of 64 rows per core"
};

struct DmaTransfer {
  std::string channel;  // "MTE1", "MTE2", "MTE3", "FixPipe"
  std::string from;     // "GM", "L1", "L0C", "UB"
  std::string to;
  double bytes = 0;  // per core, whole kernel
};

// One step of the modeled per-tile instruction sequence.
struct Instruction {
  std::string op;      // "MTE2 load A", "MMAD", "vadd", "MTE3 store"
  std::string unit;    // "MTE2", "Cube", "Vector", "MTE3", "FixPipe", "Scalar"
  uint64_t count = 0;  // per tile
  double cycles = 0;   // per tile
};

struct KernelDetail {
  std::vector<TileLevel> tiling;
  std::vector<LoopLevel> loops;
  std::vector<DmaTransfer> dma;
  std::vector<Instruction> schedule;  // per tile, in issue order
};

// The model of one kernel: an optimized node's forward kernel, or in training a kernel of a node of
// the backward graph (attributed to the optimized node of its forward origin), a kernel of the
// loss, or an optimizer update.
struct KernelEstimate {
  // Index into OptimizedGraph::nodes; UINT32_MAX for kernels of no optimized node: optimizer
  // updates, the loss's forward nodes and their backward nodes.
  uint32_t node = 0;
  std::string phase;  // "forward", "backward", "backward-dgrad" (a Cube input gradient),
                      // "backward-wgrad" (a Cube weight gradient), "optimizer"
  std::string name;   // "Conv2D", "Conv2DGrad(dX)", "BatchNormGrad", "BNTrainingReduce", ...
  Unit unit = Unit::Host;
  uint32_t block_dim = 0;
  std::vector<uint32_t> core_ids;
  double compute_cycles = 0;   // per core
  double movement_cycles = 0;  // per core
  double cycles = 0;           // per core, pipelined: fill + tiles x max(stages) + drain
  double start_us = 0;         // in the whole-graph schedule
  double time_us = 0;          // cycles / frequency + dispatch
  double gm_read_bytes = 0;    // all cores
  double gm_write_bytes = 0;
  double bandwidth_gbps = 0;  // achieved: GM bytes / time
  double macs = 0;
  std::string bound;      // "compute" | "memory" | "dispatch" | "none" | "communication" |
                          // "not-estimated" (communication without an interconnect figure)
  uint64_t tiles = 0;     // per core
  double comm_bytes = 0;  // communication: bytes one device sends (a Receive: receives)
  // Tiling, loop nest, DMA bindings and instruction schedule. Kernels with the same problem
  // (the repeated blocks of a deep network) share one; null for kernels that were not modelled
  // (unknown shapes, unsupported operators).
  std::shared_ptr<const KernelDetail> detail;
};

// The compute and communication of one pipeline stage (the kernels of the nodes of that stage).
struct StageEstimate {
  int64_t stage = 0;
  double compute_ms = 0;
  double comm_ms = 0;
};

struct ModelEstimate {
  std::string target;
  std::string mode;  // "infer" | "train"
  bool analytical = true;
  int64_t batch = 1;
  double latency_ms = 0;  // one batch (infer) or one training step (train)
  double throughput_per_sec = 0;
  double forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  double cube_ms = 0, vector_ms = 0, aicpu_ms = 0, cpu_ms = 0, dispatch_ms = 0;
  double macs = 0;
  double gm_bytes = 0;
  double cube_utilization = 0;     // MACs / (peak MAC rate x latency)
  uint64_t memory_peak_bytes = 0;  // activation arena of the optimized graph's memory plan
  uint64_t weight_bytes = 0;
  std::vector<std::string> notes;  // assumptions that apply to this estimate
  // Parallel jobs (HardwareOptions::parallel with device_num > 1): the communication nodes of the
  // optimized graph (pass "comm"). comm_ms is 0 and comm_timed false when the target has no
  // interconnect figure (a note says so); comm_bytes is what one device sends.
  double comm_ms = 0;
  double comm_bytes = 0;
  bool comm_timed = false;
  // Pipeline (pipeline_stages p > 1 and nn.PipelineCell's micro_size m): per-stage times, the
  // bubble fraction (p-1)/(m+p-1) and the step, (m+p-1)/m x the slowest stage (latency_ms is
  // then that step).
  int64_t pipeline_stages = 0;
  int64_t micro_batches = 0;
  double bubble_fraction = 0;
  double pipeline_step_ms = 0;
  std::vector<StageEstimate> stages;
};

// Why an ops.Custom kernel of `func_type` has no implementation on target `t` (MindSpore's
// ops.Custom documentation: pyfunc and julia kernels run only on CPU, tbe and aicpu only on
// Ascend; aot, akg and hybrid compile for both), as a diagnostic's message; nullopt when it has.
std::optional<std::string> custom_unsupported(std::string_view func_type, const HardwareTarget& t);

// Time in microseconds of collective `kind` over `group` devices when each device sends
// `moved_bytes` (comm_moved_bytes), on target `t`'s interconnect: moved_bytes / link bandwidth
// plus one hop latency per ring step (AllReduce 2(n-1), AllGather, ReduceScatter and AllToAll
// n-1, Send/Receive 1). nullopt when the target has no interconnect figure.
std::optional<double> comm_time_us(const HardwareTarget& t, std::string_view kind, int64_t group,
                                   double moved_bytes);

// The pipeline bubble: the share of a step each stage idles, (p-1)/(m+p-1) for p stages and m
// micro-batches (GPipe; 1F1B has the same bubble). 0 when p <= 1 or m < 1.
double pipeline_bubble(int64_t stages, int64_t micro_batches);

struct HardwareOptions {
  std::string target = "cpu";
  std::string mode = "infer";          // "infer" | "train"
  std::string optimizer = "momentum";  // train: "sgd" | "momentum" | "adam" | "lamb"
  // Train: the file's training plan for this network (AnalysisResult::training). Its loss graph
  // is differentiated when it is this network at the analysed shapes; otherwise (and when null)
  // the loss is a stand-in: the network's output when it is a scalar, else its mean. The
  // estimate's notes say which. Not owned; must outlive the call.
  const TrainingPlan* training = nullptr;
  // Mixed precision: activations and vector math in float16 on Ascend (MindSpore amp O2/O3 and
  // ATC-converted inference models); false keeps float32 activations.
  bool mixed_precision = true;
  // The program's parallel configuration (AnalysisResult::parallel): micro batches and pipeline
  // stages for the bubble. Not owned; null: a single device.
  const ParallelContext* parallel = nullptr;
};

struct HardwareGraph {
  std::string target;
  bool ascend = false;
  std::vector<KernelEstimate> kernels;  // schedule order
  ModelEstimate estimate;
  std::vector<Diagnostic> diagnostics;  // unsupported-on-target, located on the source line
  std::string statement;                // "Analytical model: ..." (every report repeats it)
};

// Estimates `graph` (optimized from `report`) on options.target. In train mode the backward pass
// is the graph autodiff::build_backward emits for the loss (graphcore/autodiff.h), each backward
// node's kernels attributed to the optimized node of its forward origin; a node without a
// gradient rule leaves the backward of what it depends on uncosted, with a note naming it.
// Throws TargetError for an unknown target, std::invalid_argument for a bad mode or optimizer.
HardwareGraph estimate_hardware(const CellReport& report, const OptimizedGraph& graph,
                                const HardwareOptions& options);

// ---- Building blocks (exposed for tests) ------------------------------------------------------

// A matrix product C[M,N] += A[M,K] B[K,N] (`batch` independent products) on the Cube.
struct CubeProblem {
  double batch = 1, m = 1, k = 1, n = 1;
  uint32_t in_bytes = 2;  // operand element size (2: fp16)
  uint32_t out_bytes = 2;
  uint32_t epilogue_ops = 0;  // vector ops applied to the output tile (fused bias/BN/ReLU)
  // Unique bytes each operand occupies in global memory (0: the padded M x K / K x N / M x N
  // matrices). A convolution's A operand is its input feature map, expanded to im2col form only
  // on chip (load3d); its B operand is the weights, shared by the whole batch.
  double a_gm_bytes = 0, b_gm_bytes = 0, c_gm_bytes = 0;
  double a_l2_fraction = 0;  // share of A's first reads served by L2 (written by a recent kernel)
  // A tensor of C's shape the epilogue reads (a fused residual Add's shortcut), and the share of
  // it served by L2.
  double residual_gm_bytes = 0;
  double residual_l2_fraction = 0;
};
KernelEstimate model_cube_kernel(const HardwareTarget& t, const CubeProblem& p);

// An elementwise-like kernel on the Vector unit: `elements` outputs, reading `in_bytes`,
// writing `out_bytes`, with `ops_per_element` vector instructions per element.
struct VectorProblem {
  double elements = 0;
  double in_bytes = 0;
  double out_bytes = 0;
  double ops_per_element = 1;
  uint32_t elem_bytes = 2;
  double l2_fraction = 0;  // share of the input bytes served by L2 (written by a recent kernel)
};
KernelEstimate model_vector_kernel(const HardwareTarget& t, const VectorProblem& p);

// One kernel of an optimizer's update of a Parameter, per element of the Parameter: bytes read
// and written (fp32 state; `fp16_copy_bytes` is the fp16 copy of w mixed precision writes) and
// vector instructions. "sgd", "momentum", "adam": one fused Apply* kernel; "lamb": the three
// kernels MindSpore's Ascend backend fuses nn.Lamb into (LambNextMVWithDecay, SquareSumAll,
// LambUpdateWithLR). Throws std::invalid_argument for another name.
struct OptimizerKernel {
  std::string name;
  double read_bytes = 0;
  double write_bytes = 0;
  double ops = 1;
};
std::vector<OptimizerKernel> optimizer_kernels(std::string_view optimizer, double fp16_copy_bytes);

}  // namespace graphcore
