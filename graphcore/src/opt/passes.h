// Internals of the optimization layer: the pass context, consumer lists, graph rewriting helpers
// and operator classes shared by the passes (graphcore/src/opt/*.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/optimize.h"

namespace graphcore::opt {

inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

struct PassContext {
  const CellReport& report;
  const TargetInfo& target;
  OptimizedGraph& g;
  size_t changes = 0;
  std::string_view precision = "mixed";       // OptimizeOptions::precision
  const ParallelContext* parallel = nullptr;  // OptimizeOptions::parallel

  [[nodiscard]] const Graph& semantic() const { return report.graph; }
  // The semantic id of semantic node `i`.
  [[nodiscard]] const std::string& sem_id(uint32_t i) const { return report.graph.nodes[i].id; }
  // The semantic node an optimized node came from (its anchor), or nullptr.
  [[nodiscard]] const Node* anchor(const OptNode& n) const {
    return n.origins.empty() ? nullptr : &report.graph.nodes[n.origins.front()];
  }
};

// An edge from output `output` of a node into input `slot` of `node`.
struct Use {
  uint32_t node = 0;
  uint32_t slot = 0;
  uint32_t output = 0;
};

// Who reads each node's outputs (compressed rows, built in one pass).
class Uses {
 public:
  explicit Uses(const OptimizedGraph& g);
  [[nodiscard]] std::span<const Use> of(uint32_t n) const {
    return {uses_.data() + start_[n], uses_.data() + start_[n + 1]};
  }
  [[nodiscard]] bool is_output(uint32_t n) const { return output_[n] != 0; }

 private:
  std::vector<uint32_t> start_;
  std::vector<Use> uses_;
  std::vector<char> output_;
};

// If node `n` has one output read by exactly one input edge and is not a graph output, that
// consumer; else kNone, and `why` (when non-null) says why, e.g. "its output also feeds `x`".
uint32_t sole_consumer(const OptimizedGraph& g, const Uses& uses, uint32_t n, std::string* why);

// The producer node of input `slot` of node `n`, or kNone.
inline uint32_t producer(const OptimizedGraph& g, uint32_t n, size_t slot) {
  const auto& in = g.nodes[n].inputs;
  return slot < in.size() ? in[slot].node : kNone;
}

// A node still as the semantic graph had it, free to join a fusion.
inline bool is_plain_op(const OptNode& n) {
  return n.kind == NodeKind::Op && n.pattern.empty() && n.pass == "import";
}

// Nodes to replace by one kernel. Members are in execution order and only the last member's
// outputs may be read outside the group; the kernel takes the last member's place.
struct Group {
  std::vector<uint32_t> members;
  std::string op;
  std::string pattern;
  size_t decision = SIZE_MAX;  // index into OptimizedGraph::decisions, filled with the kernel id
};

// Replaces every group by one node created by `pass`; adds the members to ctx.changes.
void apply_groups(PassContext& ctx, std::vector<Group>& groups, std::string_view pass);
// Removes the nodes flagged in `drop`, remapping edges; kept nodes must not read dropped ones.
void compact(OptimizedGraph& g, const std::vector<char>& drop);

// Semantic node ids of `nodes` joined as "`a`, `b`".
std::string quoted_ids(const PassContext& ctx, std::span<const uint32_t> nodes);
// "`id`" of an optimized node.
std::string quoted(const OptNode& n);
// Appends `n`'s semantic origins to `out`.
void add_origins(const OptNode& n, std::vector<uint32_t>& out);

// Operator classes.
bool is_elementwise(std::string_view op);   // one output element from the same input elements
bool is_reshape_like(std::string_view op);  // changes the shape, not the data
bool is_activation(std::string_view op);    // activations a conv/dense epilogue can apply
bool is_random(std::string_view op);        // results differ per run (never folded)

// Passes.
void run_dce(PassContext& ctx);
void run_constant_fold(PassContext& ctx);
void run_fuse_attention(PassContext& ctx);
void run_fuse_conv(PassContext& ctx);
void run_fuse_dense(PassContext& ctx);
void run_fuse_layernorm(PassContext& ctx);
void run_fuse_elementwise(PassContext& ctx);
void run_amp(PassContext& ctx);
void run_layout(PassContext& ctx);
void run_transdata_elim(PassContext& ctx);
void run_comm(PassContext& ctx);
// Rewrites a communication node's `bytes` / `moved_bytes` for the dtype its output has now (the
// amp pass, after "comm", carries collectives in float16); other nodes are left as they are.
void refresh_comm_bytes(OptNode& c);
void run_memory_plan(PassContext& ctx);

}  // namespace graphcore::opt
