// LayerNorm fusion, two rules:
//   layernorm:     a LayerNorm written out in primitives,
//                    mean = ReduceMean(x); d = Sub(x, mean); var = ReduceMean(Square(d))
//                    (or Pow(d, 2), or Mul(d, d)); y = Div(d, Sqrt(Add(var, eps)))
//                    (or Mul(d, Rsqrt(Add(var, eps)))); optional Mul by gamma, Add of beta
//                  -> one LayerNorm kernel.
//   add-layernorm: a residual Add whose only reader is a LayerNorm (both Add operands of the
//                  LayerNorm's shape) -> AddLayerNorm, which reads both operands once and never
//                  writes the sum.
#include <algorithm>

#include "opt/passes.h"

namespace graphcore::opt {

namespace {

bool same_shape(const OptimizedGraph& g, ValueRef a, const TensorType& t) {
  const OptNode& n = g.nodes[a.node];
  return a.output < n.outputs.size() && n.outputs[a.output].shape == t.shape;
}

// Matches the decomposed LayerNorm starting at ReduceMean `m1`. On success returns the members
// in execution order; otherwise empty, with `why` set once the match got past `d = x - mean`
// (before that it is not a candidate at all).
std::vector<uint32_t> match_decomposed(const OptimizedGraph& g, const Uses& uses, uint32_t m1,
                                       std::string* why) {
  const OptNode& mean = g.nodes[m1];
  if (mean.inputs.empty()) return {};
  const ValueRef x = mean.inputs[0];
  std::string w;
  const uint32_t d = sole_consumer(g, uses, m1, &w);
  if (d == kNone || !is_plain_op(g.nodes[d]) || g.nodes[d].op != "Sub" ||
      g.nodes[d].inputs.size() != 2 || !(g.nodes[d].inputs[0] == x))
    return {};
  // From here on this is a LayerNorm candidate.
  auto fail = [&](std::string reason) {
    *why = std::move(reason);
    return std::vector<uint32_t>{};
  };
  const auto d_uses = uses.of(d);
  if (uses.is_output(d) || d_uses.size() < 2 || d_uses.size() > 3) {
    return fail("the centred value " + quoted(g.nodes[d]) +
                " is not read by exactly a square and a division");
  }
  uint32_t sq = kNone, y = kNone;
  for (const Use& u : d_uses) {
    const OptNode& c = g.nodes[u.node];
    if (!is_plain_op(c)) continue;
    const bool self_mul = c.op == "Mul" && c.inputs.size() == 2 && c.inputs[0] == c.inputs[1];
    if ((c.op == "Square" || c.op == "Pow" || self_mul) && sq == kNone) {
      sq = u.node;
    } else if ((c.op == "Div" || c.op == "RealDiv" || c.op == "Mul") && !self_mul && y == kNone) {
      y = u.node;
    }
  }
  if (sq == kNone || y == kNone) {
    return fail(quoted(g.nodes[d]) + " is not squared and normalised");
  }
  const uint32_t var = sole_consumer(g, uses, sq, &w);
  if (var == kNone || g.nodes[var].op != "ReduceMean" || !is_plain_op(g.nodes[var])) {
    return fail("the square " + quoted(g.nodes[sq]) + " is not averaged (" + w + ")");
  }
  const uint32_t eps = sole_consumer(g, uses, var, &w);
  if (eps == kNone || g.nodes[eps].op != "Add" || !is_plain_op(g.nodes[eps])) {
    return fail("the variance " + quoted(g.nodes[var]) + " is not followed by + epsilon");
  }
  const uint32_t root = sole_consumer(g, uses, eps, &w);
  if (root == kNone || !is_plain_op(g.nodes[root]) ||
      (g.nodes[root].op != "Sqrt" && g.nodes[root].op != "Rsqrt")) {
    return fail(quoted(g.nodes[eps]) + " is not followed by Sqrt or Rsqrt");
  }
  const bool rsqrt = g.nodes[root].op == "Rsqrt";
  const OptNode& yn = g.nodes[y];
  if (sole_consumer(g, uses, root, &w) != y || (rsqrt ? yn.op != "Mul" : yn.op == "Mul") ||
      (!rsqrt && (yn.inputs.size() != 2 || yn.inputs[0].node != d))) {
    return fail(quoted(yn) + " does not normalise by the standard deviation");
  }
  std::vector<uint32_t> members{m1, d, sq, var, eps, root, y};
  uint32_t tail = y;
  for (std::string_view op : {"Mul", "Add"}) {  // gamma, beta
    const uint32_t c = sole_consumer(g, uses, tail, nullptr);
    if (c == kNone || g.nodes[c].op != op || !is_plain_op(g.nodes[c])) break;
    bool affine = g.nodes[c].inputs.size() == 1;
    for (const auto& r : g.nodes[c].inputs) {
      const NodeKind k = g.nodes[r.node].kind;
      affine = affine || k == NodeKind::Parameter || k == NodeKind::Constant;
    }
    if (!affine) break;
    members.push_back(c);
    tail = c;
  }
  std::sort(members.begin(), members.end());
  return members;
}

}  // namespace

void run_fuse_layernorm(PassContext& ctx) {
  OptimizedGraph& g = ctx.g;
  std::vector<Group> groups;
  {
    const Uses uses(g);
    std::vector<char> claimed(g.nodes.size(), 0);
    for (uint32_t i = 0; i < g.nodes.size(); ++i) {
      if (!is_plain_op(g.nodes[i]) || g.nodes[i].op != "ReduceMean" || claimed[i]) continue;
      std::string why;
      auto members = match_decomposed(g, uses, i, &why);
      if (members.empty() && why.empty()) continue;
      FusionDecision d;
      d.pass = "fuse-layernorm";
      d.pattern = "layernorm";
      if (members.empty()) {
        add_origins(g.nodes[i], d.nodes);
        d.reason = "ReduceMean " + quoted(g.nodes[i]) + " starts a LayerNorm but " + why;
        g.decisions.push_back(std::move(d));
        continue;
      }
      // Only the last member may be read outside the group.
      bool closed = true;
      for (size_t k = 0; k + 1 < members.size(); ++k) {
        for (const Use& u : uses.of(members[k])) {
          closed = closed && std::binary_search(members.begin(), members.end(), u.node);
        }
        closed = closed && !uses.is_output(members[k]);
      }
      for (uint32_t m : members) add_origins(g.nodes[m], d.nodes);
      if (!closed) {
        d.reason = "ReduceMean " + quoted(g.nodes[i]) +
                   " starts a LayerNorm but an intermediate result is also read elsewhere";
        g.decisions.push_back(std::move(d));
        continue;
      }
      d.fused = true;
      d.reason = std::to_string(members.size()) + " primitives (" + quoted_ids(ctx, d.nodes) +
                 ") fused into one LayerNorm kernel";
      for (uint32_t m : members) claimed[m] = 1;
      g.decisions.push_back(std::move(d));
      groups.push_back(Group{members, "LayerNorm", "layernorm", g.decisions.size() - 1});
    }
  }
  apply_groups(ctx, groups, "fuse-layernorm");
  groups.clear();

  const Uses uses(g);
  for (uint32_t i = 0; i < g.nodes.size(); ++i) {
    const OptNode& ln = g.nodes[i];
    if (ln.kind != NodeKind::Op || ln.inputs.empty() || ln.outputs.empty() ||
        (ln.op != "LayerNorm") || (!is_plain_op(ln) && ln.pattern != "layernorm"))
      continue;
    const uint32_t a = ln.inputs[0].node;
    const OptNode& add = g.nodes[a];
    FusionDecision d;
    d.pass = "fuse-layernorm";
    d.pattern = "add-layernorm";
    add_origins(add, d.nodes);
    add_origins(ln, d.nodes);
    std::string why;
    if (!is_plain_op(add) || add.op != "Add") {
      if (!is_plain_op(add) && add.kind == NodeKind::Op && !add.pattern.empty()) {
        d.reason = "LayerNorm " + quoted(ln) + " reads the fused kernel " + quoted(add) +
                   ", not a plain Add";
        g.decisions.push_back(std::move(d));
      }
      continue;  // not a candidate: no Add in front
    }
    if (sole_consumer(g, uses, a, &why) != i) {
      d.reason = "Add " + quoted(add) + " not fused into LayerNorm " + quoted(ln) + ": " + why;
      g.decisions.push_back(std::move(d));
      continue;
    }
    if (add.inputs.size() != 2 || !same_shape(g, add.inputs[0], add.outputs[0]) ||
        !same_shape(g, add.inputs[1], add.outputs[0])) {
      d.reason = "Add " + quoted(add) + " not fused into LayerNorm " + quoted(ln) +
                 ": it broadcasts (AddLayerNorm needs two operands of the same shape)";
      g.decisions.push_back(std::move(d));
      continue;
    }
    d.fused = true;
    d.reason = "residual Add + LayerNorm fused into AddLayerNorm: the sum " + add.outputs[0].str() +
               " is never written";
    g.decisions.push_back(std::move(d));
    groups.push_back(Group{{a, i}, "AddLayerNorm", "add-layernorm", g.decisions.size() - 1});
  }
  apply_groups(ctx, groups, "fuse-layernorm");
}

}  // namespace graphcore::opt
