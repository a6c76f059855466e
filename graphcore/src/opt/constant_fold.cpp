// Constant folding. An op becomes a constant when its value is known before the graph runs:
// every input is a constant (ops without inputs, such as Range or Fill, included), it reads no
// weights (Parameters can be updated between runs) and it is not random. ZerosLike/OnesLike
// only read their input's shape, so they fold whenever that shape is fully known. A constant
// input read only by the folded op is absorbed into the new constant (its origins move along).
#include "graphcore/opdef.h"
#include "opt/passes.h"

namespace graphcore::opt {

namespace {

bool shape_only(std::string_view op) { return op_has(op, kLikeInput); }

}  // namespace

void run_constant_fold(PassContext& ctx) {
  OptimizedGraph& g = ctx.g;
  const size_t n = g.nodes.size();
  std::vector<uint32_t> uses(n, 0);
  for (const auto& node : g.nodes) {
    for (const auto& r : node.inputs) ++uses[r.node];
  }
  for (const auto& r : g.outputs) ++uses[r.node];
  std::vector<char> drop(n, 0);
  bool dropped = false;
  for (uint32_t i = 0; i < n; ++i) {
    OptNode& node = g.nodes[i];
    if (node.kind != NodeKind::Op || !node.pattern.empty() || !node.params.empty() ||
        is_random(node.op) || node.outputs.empty())
      continue;
    bool foldable = true;
    if (shape_only(node.op)) {
      for (const auto& t : node.outputs) foldable = foldable && t.shape.fully_known();
    } else {
      for (const auto& r : node.inputs) {
        foldable = foldable && g.nodes[r.node].kind == NodeKind::Constant;
      }
    }
    if (!foldable) continue;
    std::vector<uint32_t> origins = node.origins;
    for (const auto& r : node.inputs) {
      OptNode& in = g.nodes[r.node];
      if (in.kind == NodeKind::Constant && uses[r.node] == 1) {
        add_origins(in, origins);
        drop[r.node] = 1;
        dropped = true;
        ++ctx.changes;
      } else {
        --uses[r.node];  // a shape-only op no longer reads its input
      }
    }
    node.id = "const/" + node.id;
    node.kind = NodeKind::Constant;
    node.op = "Constant";
    node.inputs.clear();
    node.origins = std::move(origins);
    node.pass = "constant-fold";
    node.attrs.push_back(
        Attr{"folded_op", std::string(ctx.semantic().nodes[node.origins.front()].op)});
    ++ctx.changes;
  }
  if (dropped) compact(g, drop);
}

}  // namespace graphcore::opt
