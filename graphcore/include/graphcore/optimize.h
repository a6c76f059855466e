// The optimization layer: what a graph compiler does with a root's semantic graph before any
// kernel runs. A pass manager runs small named passes over an optimized graph that starts as a
// copy of the semantic graph: dead-code elimination, constant folding, fusion (attention, conv,
// dense, LayerNorm, elementwise chains), layout assignment (Ascend targets only) and memory
// planning. Every optimized node records the semantic nodes it came from (many-to-many) and the
// pass that created it; every fusion candidate records a decision with a reason, fused or not.
// See docs/optimization.md for the rules of each pass.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/graph.h"
#include "graphcore/parallel.h"
#include "graphcore/shape.h"

namespace graphcore {

// A compilation target as far as the optimization layer cares: whether it is an Ascend chip
// (private formats, TransData), the alignment of activation buffers and its fused attention
// kernel. Read from the target's file, graphcore/targets/<name>.json (embedded at build time):
// "kind", "buffer_alignment_bytes" and "fused_attention_kernel" (docs/hardware-model.md). The
// views point into the parsed files, which live as long as the program.
struct TargetInfo {
  std::string_view name;  // "cpu", "gpu", "ascend910", "ascend910b", "ascend310", "ascend310p"
  bool ascend = false;
  uint32_t alignment = 32;  // bytes: each planned tensor starts at a multiple of this
  // The target's kernel library has a fused attention kernel (FlashAttention-style: the score
  // matrix never leaves the chip). Empty: it has none, and the attention pattern runs as
  // separate BatchMatMul / Mul / Add / Softmax / Dropout kernels. Else the kernel's name.
  std::string_view attention_kernel;
  std::string_view attention_source;  // where that fact comes from (the field's "source")
};

// Every target, in the order the CLI lists them: cpu, gpu, ascend910, ascend910b, ascend310p,
// ascend310. The first call parses the built-in target files; a file that does not parse (a build
// defect the unit tests catch) throws graphcore::TargetError (hardware.h).
std::span<const TargetInfo> targets();
// The target named `name`, or nullptr.
const TargetInfo* find_target(std::string_view name);

// Memory layout of a tensor. Default is NCHW for 4-D tensors and ND otherwise.
enum class Format : uint8_t {
  ND,
  NCHW,
  NC1HWC0,     // Ascend 5-D: channels split into C1 blocks of C0 (16; 32 for 8-bit types)
  FRACTAL_NZ,  // Ascend matrix fractal: last two dims tiled in 16 x C0 blocks
};
std::string_view format_name(Format f);
// The default (framework) format of a tensor of `rank`: NCHW for 4-D, ND otherwise.
Format default_format(size_t rank);
// Bytes a tensor occupies in `format` (padding included), or nullopt when its shape is not
// fully known.
std::optional<uint64_t> tensor_bytes(const TensorType& type, Format format);

// A node of the optimized graph. `inputs` index OptimizedGraph::nodes; nodes are in execution
// order (every input precedes its consumer).
struct OptNode {
  std::string id;  // a semantic id for nodes kept as they were; "<pattern>/<anchor id>" for fused
                   // kernels; "TransData/<producer>:<output>/<format>" for inserted conversions
  NodeKind kind = NodeKind::Op;
  std::string op;       // "Conv2D", "FusedConv2D", "TransData", ...
  std::string pattern;  // fusion pattern of a fused kernel ("conv", "dense", ...), else ""
  std::vector<ValueRef> inputs;
  std::vector<TensorType> outputs;
  std::vector<Format> formats;      // one per output
  std::vector<uint32_t> origins;    // semantic node indices; the first is the main op (anchor).
                                    // Empty for inserted nodes (TransData).
  std::string pass;                 // the pass that created the node ("import": from the semantic
                                    // graph unchanged)
  std::vector<std::string> params;  // weights the node reads (of every origin)
  std::vector<Attr> attrs;          // attributes set by passes (TransData: src_format/dst_format;
                                    // communication: group, bytes, moved_bytes, ...)
  double flops = 0;
  std::string reason;  // inserted communication: why MindSpore inserts it (pass "comm")
};

// A semantic node that is not in the optimized graph (dead code), and why.
struct RemovedNode {
  uint32_t node = 0;  // semantic node index
  std::string pass;
  std::string reason;
};

// A fusion candidate and what became of it. `nodes` are semantic node indices; when fused,
// `kernel` is the id of the optimized node that replaced them.
struct FusionDecision {
  std::string pass;
  std::string pattern;  // "attention", "conv", "dense", "layernorm", "add-layernorm",
                        // "elementwise"
  std::vector<uint32_t> nodes;
  bool fused = false;
  std::string reason;
  std::string kernel;
};

// Format conversions (TransData) the transdata-elim pass removed. `ids` are the removed nodes'
// ids (as the layout pass named them); `value` is the id of the value whose conversions they were.
struct RemovedConversion {
  std::vector<std::string> ids;
  std::string value;
  std::string reason;
};

struct PassRecord {
  std::string name;
  std::string description;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  size_t changes = 0;  // nodes removed, folded, fused, inserted or tensors planned
  double ms = 0;       // wall time of the pass
};

// One activation tensor of the memory plan: output `output` of optimized node `node`.
struct PlannedTensor {
  uint32_t node = 0;
  uint32_t output = 0;
  uint64_t bytes = 0;  // in its format, padding included
  uint64_t size = 0;   // bytes rounded up to the alignment
  uint32_t first = 0;  // execution step that writes it (index into OptimizedGraph::nodes)
  uint32_t last = 0;   // last step that reads it (nodes.size() for graph outputs)
  uint64_t offset = 0;
  uint32_t buffer = 0;  // index into MemoryPlan::buffers
};

// A buffer is one offset of the arena: the tensors placed at that offset share it at different
// times. Its size is the largest of theirs.
struct MemoryBuffer {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::vector<uint32_t> tensors;  // indices into MemoryPlan::tensors, by first use
};

struct MemoryPlan {
  bool planned = false;  // false when the memory-plan pass did not run
  uint32_t alignment = 0;
  std::vector<PlannedTensor> tensors;
  std::vector<MemoryBuffer> buffers;  // by offset
  uint64_t peak = 0;                  // arena size: the highest offset + size of any tensor
  uint64_t naive = 0;                 // every tensor in its own buffer: the sum of sizes
  uint64_t lower_bound = 0;           // the most bytes live at any one step (no plan can do better)
  uint64_t weight_bytes = 0;          // Parameters (not in the arena)
  uint64_t constant_bytes = 0;        // constants and folded constants (not in the arena)
  // Tensors whose shapes are not fully known: not planned (listed as "node:output" ids).
  std::vector<std::string> unsized;
};

struct OptimizedGraph {
  std::string target;
  std::vector<OptNode> nodes;
  std::vector<ValueRef> outputs;
  std::vector<RemovedNode> removed;
  std::vector<FusionDecision> decisions;
  std::vector<PassRecord> passes;
  MemoryPlan memory;
  // "mixed" when the amp pass gave the kernels their amp O2 dtypes (float16, BatchNorm and
  // LayerNorm in float32, Casts between); "fp32" when it ran with precision "fp32"; empty when it
  // did not run (non-Ascend targets, or a pass subset without it): the semantic dtypes.
  std::string precision;
  // TransData pairs the transdata-elim pass removed, and why.
  std::vector<RemovedConversion> eliminated;
};

struct OptimizeOptions {
  std::string target = "cpu";
  // Passes to run, by name, in pipeline order; empty: the whole default pipeline. Layout
  // assignment is skipped on targets that are not Ascend chips.
  std::vector<std::string> passes;
  // Ascend targets: "mixed" gives the kernels the dtypes of MindSpore's automatic mixed precision
  // at level O2 (pass amp: float16, BatchNorm and LayerNorm in float32, Casts where the dtype
  // changes); "fp32" keeps the semantic dtypes.
  std::string precision = "mixed";
  // Called with the graph after import (pass "import", index 0) and after each pass (index 1..):
  // the state before pass k is the state after pass k-1.
  std::function<void(std::string_view pass, size_t index, const OptimizedGraph& graph)> dump;
  // The program's parallel configuration (AnalysisResult::parallel). With device_num > 1 the
  // pass "comm" inserts the communication MindSpore adds (docs/parallel.md, "Communication and its
  // cost"); null or a single device: the pass does not run and leaves no record. Not owned.
  const ParallelContext* parallel = nullptr;
};

// Bytes one device sends for collective `kind` over `group` devices when it holds `bytes` (the
// standard ring algorithms): AllReduce 2(n-1)/n * S, ReduceScatter and AllToAll (n-1)/n * S for
// the S bytes each device holds before, AllGather (n-1) * S for the S-byte slice each device
// contributes, Send/Receive S. nullopt on overflow or an unknown kind.
std::optional<uint64_t> comm_moved_bytes(std::string_view kind, int64_t group, uint64_t bytes);

// The default pipeline's pass names, in order.
std::vector<std::string_view> pass_names();

// Runs the pipeline over `report`'s semantic graph. Throws std::invalid_argument for an unknown
// target or pass name, or a report whose construct did not compile.
OptimizedGraph optimize(const CellReport& report, const OptimizeOptions& options);

}  // namespace graphcore
