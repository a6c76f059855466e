// Epilogue fusions: a Cube op followed by ops that can be applied to its output tile before it
// is written.
//   conv:  Conv2D (+BiasAdd) (+BatchNorm: inference statistics fold into the weights and bias)
//          (+residual Add) (+ReLU/ReLU6) -> FusedConv2D. The residual Add reads a tensor of the
//          output's shape computed before the conv (the block's shortcut) in the epilogue, as
//          CANN's UB fusion of conv + add + relu does; the sum is never written separately.
//   dense: MatMul reading weights (nn.Dense, or a 2-D Parameter operand) (+bias Add/BiasAdd)
//          (+activation) -> FusedMatMul
// The chain follows sole consumers only: when an intermediate result is also read elsewhere it
// must be written anyway, and the ops after it are not fused (a decision records which and why).
#include <algorithm>

#include "opt/passes.h"

namespace graphcore::opt {

namespace {

struct Epilogue {
  std::string_view pass;
  std::string_view pattern;
  std::string_view op;
  std::string_view allowed;  // for messages: "BiasAdd, BatchNorm, ReLU/ReLU6"
  // Stage of `node` as the next op after `tail` (-1: not part of the pattern).
  int (*stage_of)(const OptimizedGraph& g, uint32_t node, uint32_t tail, uint32_t anchor);
  // Stage to start at after the anchor (e.g. past the bias when the layer has one).
  int (*start_stage)(const PassContext& ctx, const OptNode& anchor);
  bool (*is_anchor)(const OptimizedGraph& g, const OptNode& n);
};

bool has_bias(const PassContext& ctx, const OptNode& n) {
  const Node* s = ctx.anchor(n);
  const AttrValue* v = s ? s->find_attr("has_bias") : nullptr;
  const bool* b = v ? std::get_if<bool>(v) : nullptr;
  return b && *b;
}

bool has_activation(const PassContext& ctx, const OptNode& n) {
  const Node* s = ctx.anchor(n);
  const AttrValue* v = s ? s->find_attr("activation") : nullptr;
  const std::string* a = v ? std::get_if<std::string>(v) : nullptr;
  return a && !a->empty() && *a != "None";
}

// A bias: a Parameter or constant tensor of rank <= 1.
bool is_bias_operand(const OptimizedGraph& g, ValueRef r) {
  const OptNode& n = g.nodes[r.node];
  if (n.kind != NodeKind::Parameter && n.kind != NodeKind::Constant) return false;
  return r.output < n.outputs.size() && n.outputs[r.output].shape.ranked &&
         n.outputs[r.output].shape.rank() <= 1;
}

bool is_bias_add(const OptimizedGraph& g, uint32_t node, uint32_t tail) {
  const OptNode& n = g.nodes[node];
  if (n.op == "BiasAdd") return !n.inputs.empty() && n.inputs[0].node == tail;
  if (n.op != "Add" || n.inputs.size() != 2) return false;
  const size_t other = n.inputs[0].node == tail ? 1 : 0;
  return n.inputs[1 - other].node == tail && is_bias_operand(g, n.inputs[other]);
}

// A residual Add: `tail` plus an activation of the same shape as the sum (no broadcast), whose
// producer runs before the anchor conv, so the fused kernel can read it in its epilogue.
bool is_residual_add(const OptimizedGraph& g, uint32_t node, uint32_t tail, uint32_t anchor) {
  const OptNode& n = g.nodes[node];
  if (n.op != "Add" || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  const size_t other = n.inputs[0].node == tail ? 1 : 0;
  if (n.inputs[1 - other].node != tail) return false;
  const ValueRef r = n.inputs[other];
  const OptNode& src = g.nodes[r.node];
  if (src.kind != NodeKind::Op && src.kind != NodeKind::Input) return false;
  if (r.node >= anchor || r.output >= src.outputs.size()) return false;
  const Shape& a = src.outputs[r.output].shape;
  const Shape& y = n.outputs[0].shape;
  if (!a.ranked || !y.ranked || a.rank() != y.rank()) return false;
  for (size_t d = 0; d < a.rank(); ++d) {
    if (dims_equal(a.dims[d], y.dims[d]) != Tri::Yes) return false;
  }
  return true;
}

int conv_stage(const OptimizedGraph& g, uint32_t node, uint32_t tail, uint32_t anchor) {
  const OptNode& n = g.nodes[node];
  if (is_bias_add(g, node, tail)) return 0;
  if (n.op == "BatchNorm") return 1;
  if (is_residual_add(g, node, tail, anchor)) return 2;
  if (n.op == "ReLU" || n.op == "ReLU6") return 3;
  return -1;
}

int conv_start(const PassContext& ctx, const OptNode& anchor) {
  return has_bias(ctx, anchor) ? 1 : 0;
}

bool conv_anchor(const OptimizedGraph&, const OptNode& n) { return n.op == "Conv2D"; }

int dense_stage(const OptimizedGraph& g, uint32_t node, uint32_t tail, uint32_t) {
  if (is_bias_add(g, node, tail)) return 0;
  if (is_activation(g.nodes[node].op)) return 1;
  return -1;
}

int dense_start(const PassContext& ctx, const OptNode& anchor) {
  if (has_activation(ctx, anchor)) return 2;
  return has_bias(ctx, anchor) ? 1 : 0;
}

bool dense_anchor(const OptimizedGraph& g, const OptNode& n) {
  if (n.op != "MatMul") return false;
  if (!n.params.empty()) return true;
  for (const auto& r : n.inputs) {
    const OptNode& in = g.nodes[r.node];
    if (in.kind == NodeKind::Parameter && r.output < in.outputs.size() &&
        in.outputs[r.output].shape.rank() == 2)
      return true;
  }
  return false;
}

constexpr Epilogue kConv{
    "fuse-conv", "conv",     "FusedConv2D", "BiasAdd, BatchNorm, a residual Add, ReLU/ReLU6",
    conv_stage,  conv_start, conv_anchor};
constexpr Epilogue kDense{
    "fuse-dense", "dense",     "FusedMatMul", "a bias Add/BiasAdd, an activation",
    dense_stage,  dense_start, dense_anchor};

void fuse_epilogues(PassContext& ctx, const Epilogue& e) {
  OptimizedGraph& g = ctx.g;
  const Uses uses(g);
  std::vector<Group> groups;
  for (uint32_t i = 0; i < g.nodes.size(); ++i) {
    const OptNode& anchor = g.nodes[i];
    if (!is_plain_op(anchor) || !e.is_anchor(g, anchor)) continue;
    std::vector<uint32_t> members{i};
    uint32_t tail = i;
    int stage = e.start_stage(ctx, anchor);
    std::string stop;
    while (true) {
      std::string why;
      const uint32_t c = sole_consumer(g, uses, tail, &why);
      if (c == kNone) {
        stop = tail == i ? why : quoted(g.nodes[tail]) + ": " + why;
        // Ops that would have fused but for the other readers: a decision each.
        for (const Use& u : uses.of(tail)) {
          if (!is_plain_op(g.nodes[u.node])) continue;
          if (e.stage_of(g, u.node, tail, i) < stage) continue;
          FusionDecision d;
          d.pass = std::string(e.pass);
          d.pattern = std::string(e.pattern);
          for (uint32_t m : members) add_origins(g.nodes[m], d.nodes);
          add_origins(g.nodes[u.node], d.nodes);
          d.reason = g.nodes[u.node].op + " " + quoted(g.nodes[u.node]) + " not fused into " +
                     anchor.op + " " + quoted(anchor) + ": " + quoted(g.nodes[tail]) +
                     " must be written to memory because " + why;
          g.decisions.push_back(std::move(d));
        }
        break;
      }
      const OptNode& next = g.nodes[c];
      const int s = is_plain_op(next) ? e.stage_of(g, c, tail, i) : -1;
      if (s < stage) {
        if (e.pattern == "conv" && next.op == "Add" && s < 0) {
          stop = "the next op " + quoted(next) +
                 " (Add) is not a residual Add this conv can fuse (its other operand must be an "
                 "activation of the same shape computed before the conv)";
          break;
        }
        stop = "the next op " + quoted(next) + " (" + next.op + ") " +
               (s < 0 ? "is not one of " + std::string(e.allowed)
                      : "cannot follow what is already fused");
        break;
      }
      members.push_back(c);
      tail = c;
      stage = s + 1;
    }
    FusionDecision d;
    d.pass = std::string(e.pass);
    d.pattern = std::string(e.pattern);
    for (uint32_t m : members) add_origins(g.nodes[m], d.nodes);
    if (members.size() == 1) {
      d.reason = anchor.op + " " + quoted(anchor) + " left alone: " + stop;
      g.decisions.push_back(std::move(d));
      continue;
    }
    std::string ops;
    for (uint32_t m : members) ops += (ops.empty() ? "" : " + ") + g.nodes[m].op;
    d.fused = true;
    d.reason = ops + " fused into one " + std::string(e.pattern) + " kernel";
    for (uint32_t m : members) {
      if (g.nodes[m].op == "BatchNorm") d.reason += " (BatchNorm folded into the weights and bias)";
      if (e.pattern == "conv" && g.nodes[m].op == "Add") {
        for (const auto& r : g.nodes[m].inputs) {
          if (std::find(members.begin(), members.end(), r.node) != members.end()) continue;
          d.reason += " (residual Add: the epilogue reads the shortcut " + quoted(g.nodes[r.node]) +
                      ", computed before the conv, and the sum is not written separately)";
        }
      }
    }
    g.decisions.push_back(std::move(d));
    groups.push_back(
        Group{members, std::string(e.op), std::string(e.pattern), g.decisions.size() - 1});
  }
  apply_groups(ctx, groups, e.pass);
}

}  // namespace

void run_fuse_conv(PassContext& ctx) { fuse_epilogues(ctx, kConv); }
void run_fuse_dense(PassContext& ctx) { fuse_epilogues(ctx, kDense); }

}  // namespace graphcore::opt
