// Dead-code elimination. An op whose results nobody reads (and that is not a graph output) is
// dropped, then whatever only fed dropped nodes, back to the graph inputs, which always stay.
// The ops dropped first are exactly the ones graphcore's `unused-result` warning reports; the
// rest of a dead chain is dropped with a reason naming the dead consumer.
#include "opt/passes.h"

namespace graphcore::opt {

void run_dce(PassContext& ctx) {
  OptimizedGraph& g = ctx.g;
  const size_t n = g.nodes.size();
  std::vector<uint32_t> live_uses(n, 0);
  for (const auto& node : g.nodes) {
    for (const auto& r : node.inputs) ++live_uses[r.node];
  }
  for (const auto& r : g.outputs) ++live_uses[r.node];
  std::vector<char> drop(n, 0);
  // The dead consumer that made a node dead (kNone: never read at all).
  std::vector<uint32_t> dead_consumer(n, kNone);
  for (uint32_t i = static_cast<uint32_t>(n); i-- > 0;) {
    const OptNode& node = g.nodes[i];
    if (node.kind == NodeKind::Input || live_uses[i] != 0) continue;
    drop[i] = 1;
    for (const auto& r : node.inputs) {
      if (--live_uses[r.node] == 0 && dead_consumer[r.node] == kNone) dead_consumer[r.node] = i;
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (!drop[i]) continue;
    const OptNode& node = g.nodes[i];
    std::string reason;
    if (dead_consumer[i] == kNone) {
      reason = node.kind == NodeKind::Op ? "its result is never used (the unused-result warning)"
                                         : "never read";
    } else {
      reason = "only feeds dead code (" + quoted(g.nodes[dead_consumer[i]]) + ")";
    }
    for (uint32_t o : node.origins) g.removed.push_back(RemovedNode{o, "dce", reason});
    ++ctx.changes;
  }
  if (ctx.changes) compact(g, drop);
}

}  // namespace graphcore::opt
