// Elementwise fusion: a chain of elementwise ops (and the reshapes between them, which move no
// data), each the only reader of the previous one, becomes one kernel that reads its inputs once
// and writes one result. An inference BatchNorm is a per-channel multiply-add and chains too
// (BatchNorm + ReLU in pre-activation networks such as DenseNet). A chain needs at least two ops,
// one of them computing. Where an elementwise op reads another whose result is also read elsewhere,
// the chain is cut there and a decision says so.
#include "opt/passes.h"

namespace graphcore::opt {

namespace {

bool computes(std::string_view op) { return is_elementwise(op) || op == "BatchNorm"; }

bool chainable(const OptNode& n) {
  return is_plain_op(n) && n.outputs.size() == 1 && (computes(n.op) || is_reshape_like(n.op));
}

}  // namespace

void run_fuse_elementwise(PassContext& ctx) {
  OptimizedGraph& g = ctx.g;
  const Uses uses(g);
  const size_t n = g.nodes.size();
  std::vector<uint32_t> chain_of(n, kNone);
  std::vector<std::vector<uint32_t>> chains;
  for (uint32_t i = 0; i < n; ++i) {
    const OptNode& node = g.nodes[i];
    if (!chainable(node)) continue;
    uint32_t join = kNone;
    for (const auto& r : node.inputs) {
      const uint32_t p = r.node;
      if (chain_of[p] == kNone || chains[chain_of[p]].back() != p) continue;
      std::string why;
      if (sole_consumer(g, uses, p, &why) == i) {
        if (join == kNone) join = chain_of[p];
        continue;
      }
      if (!computes(node.op)) continue;
      FusionDecision d;
      d.pass = "fuse-elementwise";
      d.pattern = "elementwise";
      for (uint32_t m : chains[chain_of[p]]) add_origins(g.nodes[m], d.nodes);
      add_origins(node, d.nodes);
      d.reason = node.op + " " + quoted(node) + " not fused with " + quoted(g.nodes[p]) + ": " +
                 why + ", so it is written to memory anyway";
      g.decisions.push_back(std::move(d));
    }
    if (join == kNone) {
      join = static_cast<uint32_t>(chains.size());
      chains.emplace_back();
    }
    chains[join].push_back(i);
    chain_of[i] = join;
  }
  std::vector<Group> groups;
  for (auto& chain : chains) {
    size_t computing = 0;
    for (uint32_t m : chain) computing += computes(g.nodes[m].op) ? 1 : 0;
    if (chain.size() < 2 || computing == 0) continue;
    FusionDecision d;
    d.pass = "fuse-elementwise";
    d.pattern = "elementwise";
    std::string ops;
    uint64_t saved = 0;
    for (size_t k = 0; k < chain.size(); ++k) {
      const OptNode& m = g.nodes[chain[k]];
      add_origins(m, d.nodes);
      ops += (ops.empty() ? "" : " + ") + m.op;
      if (k + 1 < chain.size()) {
        saved += tensor_bytes(m.outputs[0], m.formats[0]).value_or(0);
      }
    }
    d.fused = true;
    d.reason = ops + " fused into one elementwise kernel: " + std::to_string(chain.size() - 1) +
               " intermediate tensor(s)" +
               (saved ? " (" + std::to_string(saved) + " bytes)" : std::string()) +
               " never written";
    g.decisions.push_back(std::move(d));
    groups.push_back(
        Group{std::move(chain), "FusedElemwise", "elementwise", g.decisions.size() - 1});
  }
  apply_groups(ctx, groups, "fuse-elementwise");
}

}  // namespace graphcore::opt
