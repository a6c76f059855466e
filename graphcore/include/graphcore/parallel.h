// Parallel strategies (issue 21, docs/parallel.md): what the evaluator records of a script's
// `set_auto_parallel_context`, `AutoParallel`, `Primitive.shard`, `cell.pipeline_stage` and
// `nn.PipelineCell`, and what the checks (graphcore/src/parallel_check.cpp) derive from it: the
// per-device slice of every input and output of a sharded operator and the communication
// MindSpore inserts. Facts only: no protocol, no drawing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graphcore/istr.h"
#include "graphcore/shape.h"
#include "graphcore/source.h"

namespace graphcore {

// A strategy as `Primitive.shard` takes it: one tuple of splits per operator input. A Layout
// entry is stored as the splits it stands for (the product of the device-matrix axes it names).
using Strategy = std::vector<std::vector<int64_t>>;

// Communication MindSpore inserts for one operator (docs/parallel.md §4).
struct ParallelComm {
  std::string kind;   // "AllReduce", "ReduceScatter", "AllGather", "StridedSlice"
  int64_t group = 1;  // devices taking part
  int input = -1;     // the input it redistributes (-1: the operator's own output)
  std::string why;    // "partial sums of the contracted dimension", "dimension 1: split 4 -> 1"
};

// The parallel facts of one graph node.
struct NodeParallel {
  // The strategy given with `.shard(...)` (empty when the operator has none).
  Strategy in_strategy;
  std::optional<Strategy> out_strategy;
  IStr shard_file;
  SourceRange shard_range;  // the `.shard(...)` call
  std::string attr;         // the Python attribute holding the operator ("matmul")
  // Filled by the checks: each input's and output's slice on one device (global / split; the
  // slice is the same on every rank, a repeated strategy only repeats it), and the split of
  // each output dimension.
  std::vector<Shape> per_device_inputs;
  std::vector<Shape> per_device_outputs;
  std::vector<int64_t> output_split;
  std::vector<ParallelComm> comms;
  // Set when the strategy is not the user's but sharding propagation's (docs/parallel.md §13):
  // the call whose layout reached this operator ("self.block.shard", "self.matmul.shard") and
  // where it is. `shard_range` then stays empty: the user wrote no strategy here.
  std::string propagated_from;
  IStr from_file;
  SourceRange from_range;
  int64_t device_matrix = 0;  // devices the strategy uses (its device matrix's product); 0: unknown
  // Pipeline stage: the `pipeline_stage` of the innermost Cell that set one (-1: none set; the
  // checks then fill `stage` with the stage MindSpore gives it, the producer's).
  int64_t stage = -1;
  bool stage_inherited = false;
  IStr cell_file;  // the Cell that produced the node: where it was constructed
  SourceRange cell_site;
  std::string cell;  // its path ("fc2")
};

// A Cell's `pipeline_stage = k`.
struct CellStage {
  std::string cell;  // instance path within the root ("fc1")
  int64_t stage = 0;
  IStr file;
  SourceRange range;  // the assignment
};

// The program's parallel configuration: `set_auto_parallel_context(...)` (also
// `mindspore.context.`), the `AutoParallel(net, parallel_mode=...)` wrapper, `nn.PipelineCell`.
struct ParallelContext {
  std::string parallel_mode = "stand_alone";  // as MindSpore spells it ("semi_auto_parallel")
  bool mode_known = true;                     // false: an unknown or invalid value
  int64_t device_num = 0;                     // 0: not known (MindSpore takes the launcher's)
  std::string device_num_from;                // "script", "mindspore_config.json"
  int64_t pipeline_stages = 1;
  bool full_batch = false;
  std::optional<Strategy> dataset_strategy;
  std::string search_mode = "recursive_programming";
  bool wrapper = false;    // AutoParallel(...) chose the mode
  int64_t micro_size = 0;  // nn.PipelineCell's; 0: no PipelineCell
  // The parallel optimizer (`enable_parallel_optimizer=True`, AutoParallel.hsdp()): a trainable
  // parameter whose slice several devices repeat is kept and updated as 1/N shards, gathered for
  // the forward pass and its gradient reduce-scattered (docs/parallel.md §11).
  bool parallel_optimizer = false;
  // parallel_optimizer_config's optimizer_weight_shard_size (hsdp's shard_size): the devices a
  // parameter is sharded over; -1: all the devices repeating its slice.
  int64_t optimizer_shard_size = -1;
  // parallel_optimizer_config's parallel_optimizer_threshold (hsdp's threshold), KB: smaller
  // parameters are not sharded.
  int64_t optimizer_threshold_kb = 64;
  IStr file;  // the call that set the context (the last one)
  SourceRange range;
  [[nodiscard]] bool sharding() const {
    return wrapper || parallel_mode == "semi_auto_parallel" || parallel_mode == "auto_parallel";
  }
  // A job MindSpore runs on several devices: more than one device and not its default mode,
  // stand_alone (a device count from mindspore_config.json alone makes no parallel job).
  [[nodiscard]] bool parallel_job() const {
    return device_num > 1 && parallel_mode != "stand_alone";
  }
  // Devices of one pipeline stage; 0 when the device count is not known.
  [[nodiscard]] int64_t stage_devices() const {
    return device_num > 0 && pipeline_stages > 0 && device_num % pipeline_stages == 0
               ? device_num / pipeline_stages
               : 0;
  }
};

struct Graph;
struct Node;
struct ShardSeed;

// How messages name the strategy of node `n`: "`self.matmul`" for a `.shard` the user wrote,
// "`block.relu` (ReLU, by sharding propagation from `self.block.shard`)" for a propagated one.
std::string shard_owner(const Node& n);

// What a hover says of sharded node `n` of `g` (empty when it has no strategy): per input
// "x: global [16, 64], per device [8, 16] (split (2, 4))", the output the same way, and the
// communication MindSpore inserts. Markdown-free text, one fact per line.
std::string describe_parallel(const Graph& g, const Node& n);
// What a hover on a `Cell.shard` / `mindspore.shard` call says: each input's global and
// per-device shape and how many operators took their strategy from it.
std::string describe_shard_seed(const Graph& g, const ShardSeed& s);

// "(2, 4)", "((2, 4), (4, 1))": as Python prints them.
std::string strategy_str(const std::vector<int64_t>& s);
std::string strategy_str(const Strategy& s);

}  // namespace graphcore
