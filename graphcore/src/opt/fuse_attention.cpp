// Attention fusion: scores = BatchMatMul(Q, K) -> optional scale (Mul/Div by a constant) ->
// optional mask (Add) -> Softmax over the last axis -> optional Dropout (the identity at
// inference) -> BatchMatMul(probabilities, V) becomes one attention kernel, so the score matrix
// never round-trips through memory. Every Softmax is a candidate; when the pattern breaks, the
// decision says where.
#include "opt/passes.h"

namespace graphcore::opt {

namespace {

bool is_batched_matmul(const OptNode& n) {
  if (!is_plain_op(n)) return false;
  if (n.op == "BatchMatMul") return true;
  return n.op == "MatMul" && n.params.empty() && n.outputs.size() == 1 &&
         n.outputs[0].shape.ranked && n.outputs[0].shape.rank() >= 3;
}

bool last_axis_softmax(const PassContext& ctx, const OptNode& n) {
  const Node* s = ctx.anchor(n);
  const AttrValue* axis = s ? s->find_attr("axis") : nullptr;
  if (!axis) return true;  // MindSpore's default axis is -1
  const size_t rank = n.outputs.empty() ? 0 : n.outputs[0].shape.rank();
  if (const auto* v = std::get_if<int64_t>(axis)) {
    return *v == -1 || (rank > 0 && *v == static_cast<int64_t>(rank) - 1);
  }
  if (const auto* v = std::get_if<std::vector<int64_t>>(axis)) {
    return v->size() == 1 &&
           ((*v)[0] == -1 || (rank > 0 && (*v)[0] == static_cast<int64_t>(rank) - 1));
  }
  return false;
}

std::string bytes_text(const TensorType& t) {
  const auto b = tensor_bytes(t, default_format(t.shape.rank()));
  return b ? std::to_string(*b) + "-byte " : std::string();
}

}  // namespace

void run_fuse_attention(PassContext& ctx) {
  OptimizedGraph& g = ctx.g;
  const Uses uses(g);
  const size_t n = g.nodes.size();
  std::vector<char> claimed(n, 0);
  std::vector<Group> groups;
  for (uint32_t sm = 0; sm < n; ++sm) {
    const OptNode& softmax = g.nodes[sm];
    if (!is_plain_op(softmax) || softmax.op != "Softmax" || claimed[sm]) continue;
    std::vector<uint32_t> chain{sm};  // backwards first, then reversed
    std::string fail;
    bool have_scale = false;
    if (!last_axis_softmax(ctx, softmax)) fail = "the Softmax is not over the last axis";
    uint32_t cur = sm;
    while (fail.empty()) {
      // The input along the chain: a scale/mask op or the score matmul.
      // Several inputs may qualify (the mask itself may be a Mul): prefer the score matmul,
      // then an op that reads one.
      uint32_t p = kNone;
      int best = 0;
      const auto& in = g.nodes[cur].inputs;
      const bool cur_div = g.nodes[cur].op == "Div" || g.nodes[cur].op == "RealDiv";
      for (size_t s = 0; s < in.size(); ++s) {
        if (cur_div && s != 0) break;  // Div divides the scores: they are its first operand
        const OptNode& cand = g.nodes[in[s].node];
        const bool scale_ok = (cand.op == "Mul" || cand.op == "Div" || cand.op == "RealDiv") &&
                              !have_scale && is_plain_op(cand) &&
                              (cur == sm || g.nodes[cur].op == "Add");
        const bool mask_ok = cand.op == "Add" && cur == sm && is_plain_op(cand);
        int score = 0;
        if (is_batched_matmul(cand)) {
          score = 3;
        } else if (scale_ok || mask_ok) {
          score = 1;
          for (const auto& r : cand.inputs) {
            if (is_batched_matmul(g.nodes[r.node])) score = 2;
          }
        }
        if (score > best) {
          best = score;
          p = in[s].node;
        }
      }
      if (p == kNone) {
        fail =
            quoted(g.nodes[cur]) + " does not read a batched matmul score (or scale/mask of one)";
        break;
      }
      if (claimed[p]) {
        fail = quoted(g.nodes[p]) + " already belongs to another attention kernel";
        break;
      }
      std::string why;
      if (sole_consumer(g, uses, p, &why) != cur) {
        fail = quoted(g.nodes[p]) + " cannot be absorbed: " + why;
        break;
      }
      chain.push_back(p);
      if (is_batched_matmul(g.nodes[p])) break;
      if (g.nodes[p].op != "Add") have_scale = true;
      cur = p;
    }
    std::vector<uint32_t> members(chain.rbegin(), chain.rend());
    uint32_t tail = sm;
    if (fail.empty()) {
      std::string why;
      uint32_t c = sole_consumer(g, uses, tail, &why);
      if (c != kNone && is_plain_op(g.nodes[c]) && g.nodes[c].op == "Dropout") {
        members.push_back(c);
        tail = c;
        c = sole_consumer(g, uses, tail, &why);
      }
      if (c == kNone) {
        fail = "the probabilities cannot be absorbed: " + why;
      } else if (!is_batched_matmul(g.nodes[c]) || g.nodes[c].inputs.empty() ||
                 g.nodes[c].inputs[0].node != tail || claimed[c]) {
        fail = "the probabilities feed " + quoted(g.nodes[c]) + " (" + g.nodes[c].op +
               "), not the first operand of a batched matmul with V";
      } else {
        members.push_back(c);
      }
    }
    FusionDecision d;
    d.pass = "fuse-attention";
    d.pattern = "attention";
    for (uint32_t m : members) add_origins(g.nodes[m], d.nodes);
    if (fail.empty() && ctx.target.attention_kernel.empty())
      fail = std::string(ctx.target.name) +
             " has no fused attention kernel (FlashAttentionScore and PromptFlashAttention are "
             "not available on this product; " +
             std::string(ctx.target.attention_source) + "): the score matrix " +
             softmax.outputs[0].str() + " goes through memory between separate kernels";
    if (!fail.empty()) {
      d.reason = "Softmax " + quoted(softmax) + " not fused into an attention kernel: " + fail;
      g.decisions.push_back(std::move(d));
      continue;
    }
    std::string ops;
    for (uint32_t m : members) ops += (ops.empty() ? "" : " + ") + g.nodes[m].op;
    const TensorType& scores = softmax.outputs[0];
    d.fused = true;
    d.reason = ops + " fused into one attention kernel: the " + bytes_text(scores) +
               "score matrix " + scores.str() + " stays on chip" +
               (tail != sm ? " (Dropout is the identity at inference)" : "");
    for (uint32_t m : members) claimed[m] = 1;
    g.decisions.push_back(std::move(d));
    groups.push_back(Group{members, "FusedAttention", "attention", g.decisions.size() - 1});
  }
  apply_groups(ctx, groups, "fuse-attention");
}

}  // namespace graphcore::opt
