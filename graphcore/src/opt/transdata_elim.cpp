// TransData pair elimination (Ascend targets; after layout). The layout pass converts a value
// wherever a reader wants another format, one reader at a time, so a value written in a private
// format P can be converted to the default format D only for shape-only ops (Reshape, Flatten,
// ExpandDims, Squeeze, Identity: host no-ops that move no data) whose result is converted
// straight back to P:
//
//   v (P) -> TransData P->D -> [shape-only ops] -> TransData D->P -> readers
//
// The two conversions undo each other when the bytes the readers get in P are the bytes v already
// has, and then both go: the shape-only ops relabel v in P and the readers read that. This is what
// CANN's graph engine does with its trans-op fusion passes (TransOpDepthFusionPass for back-to-back
// inverse conversions, TransOpWithoutReshapeFusionPass for pairs separated by a Reshape). When
// are the bytes the same?
//   - NC1HWC0: the shape is unchanged (the ops in between are identities);
//   - FRACTAL_NZ tiles the last two dims [.., M, N] in 16 x C0 fractals, batch dims outermost: the
//     same (batch, M, N) on both sides; or, when every reader is a dense matmul reading the value
//     as its activation operand (a weight matrix as the other: the kernel flattens every leading
//     dim into M) and v has no batch dims, the same flattened (M, N).
// One record per removed pair (OptimizedGraph::eliminated) names both conversions, the value and
// the reason; a first conversion that other readers still need stays.
#include <unordered_map>

#include "opt/passes.h"

namespace graphcore::opt {

namespace {

bool shape_only(std::string_view op) { return is_reshape_like(op) || op == "Identity"; }

std::string_view attr_str(const OptNode& n, std::string_view name) {
  for (const auto& a : n.attrs) {
    if (a.name != name) continue;
    if (const auto* s = std::get_if<std::string>(&a.value)) return *s;
  }
  return {};
}

struct Matrix {
  bool known = false;
  int64_t batch = 1, m = 1, n = 1;
  bool operator==(const Matrix&) const = default;
};

// The (batch, M, N) of a FRACTAL_NZ tensor; with `flatten`, every leading dim goes into M.
Matrix matrix(const Shape& s, bool flatten) {
  Matrix mx;
  if (!s.ranked || s.rank() < 2) return mx;
  std::vector<int64_t> d;
  for (const Dim& x : s.dims) {
    if (!x.is_known()) return mx;
    d.push_back(x.value());
  }
  const size_t r = d.size();
  mx.known = true;
  mx.n = d[r - 1];
  mx.m = d[r - 2];
  for (size_t i = 0; i + 2 < r; ++i) (flatten ? mx.m : mx.batch) *= d[i];
  return mx;
}

// A dense matmul reading input `slot` as its activation operand against a 2-D weight.
bool dense_activation_read(const PassContext& ctx, const OptNode& n, uint32_t slot) {
  if (slot != 0 || n.params.empty()) return false;
  if (!(n.op == "MatMul" || n.pattern == "dense")) return false;
  const Node* s = ctx.anchor(n);
  if (s == nullptr) return false;
  for (const char* t : {"transpose_a", "transpose_x1"}) {
    const AttrValue* v = s->find_attr(t);
    const bool* b = v ? std::get_if<bool>(v) : nullptr;
    if (b && *b) return false;
  }
  return true;
}

}  // namespace

void run_transdata_elim(PassContext& ctx) {
  OptimizedGraph& g = ctx.g;
  const Uses uses(g);
  const size_t n = g.nodes.size();
  std::vector<char> drop(n, 0);
  // Uses of a first conversion not yet rerouted around it.
  std::unordered_map<uint32_t, size_t> pending;
  for (uint32_t t2 = 0; t2 < n; ++t2) {
    const OptNode& second = g.nodes[t2];
    if (second.op != "TransData" || second.pass != "layout" || second.inputs.size() != 1) continue;
    // Walk back through shape-only ops, each read only by the next.
    std::vector<uint32_t> chain;  // from the second conversion back towards the first
    uint32_t cur = second.inputs[0].node;
    while (shape_only(g.nodes[cur].op) && g.nodes[cur].kind == NodeKind::Op &&
           g.nodes[cur].inputs.size() == 1 && !uses.is_output(cur) && uses.of(cur).size() == 1) {
      chain.push_back(cur);
      cur = g.nodes[cur].inputs[0].node;
    }
    const OptNode& first = g.nodes[cur];
    if (first.op != "TransData" || first.pass != "layout" || first.inputs.size() != 1 ||
        drop[cur]) {
      continue;
    }
    const std::string_view p = attr_str(first, "src_format");
    if (p.empty() || p != attr_str(second, "dst_format") ||
        attr_str(first, "dst_format") != attr_str(second, "src_format")) {
      continue;
    }
    const ValueRef v = first.inputs[0];
    const Shape& from = g.nodes[v.node].outputs[v.output].shape;
    const Shape& to = second.outputs[0].shape;
    const Format f = second.formats[0];
    std::string why;
    if (f == Format::NC1HWC0) {
      if (!(from == to)) continue;
      why = "the ops between them keep the shape";
    } else if (f == Format::FRACTAL_NZ) {
      const Matrix a = matrix(from, false), b = matrix(to, false);
      if (!a.known || !b.known) continue;
      if (a == b) {
        why = "both sides are the same " + std::to_string(a.batch) + " x " + std::to_string(a.m) +
              " x " + std::to_string(a.n) + " FRACTAL_NZ matrices";
      } else {
        bool dense = !uses.of(t2).empty();
        for (const Use& u : uses.of(t2))
          dense = dense && dense_activation_read(ctx, g.nodes[u.node], u.slot);
        const Matrix fa = matrix(from, true), fb = matrix(to, true);
        if (!dense || a.batch != 1 || !(fa == fb)) continue;
        why = "every reader is a dense matmul that flattens its operand into the same " +
              std::to_string(fa.m) + " x " + std::to_string(fa.n) + " FRACTAL_NZ matrix";
      }
    } else {
      continue;
    }
    // Reroute: the shape-only ops relabel v in its private format; the readers read the last.
    if (chain.empty()) {
      for (const Use& u : uses.of(t2)) g.nodes[u.node].inputs[u.slot] = v;
    } else {
      g.nodes[chain.back()].inputs[0] = v;
      for (uint32_t c : chain) g.nodes[c].formats[0] = f;
      for (const Use& u : uses.of(t2)) g.nodes[u.node].inputs[u.slot] = ValueRef{chain.front(), 0};
    }
    drop[t2] = 1;
    auto [it, fresh] = pending.try_emplace(cur, uses.of(cur).size());
    const bool first_goes = --it->second == 0;
    if (first_goes) drop[cur] = 1;
    RemovedConversion rec;
    if (first_goes) rec.ids.push_back(first.id);
    rec.ids.push_back(second.id);
    rec.value = g.nodes[v.node].id;
    std::string between;
    for (auto c = chain.rbegin(); c != chain.rend(); ++c) {
      between += (between.empty() ? "" : ", ") + quoted(g.nodes[*c]);
    }
    rec.reason = quoted(first) + " (" + std::string(p) + " -> " +
                 std::string(attr_str(first, "dst_format")) + ") and " + quoted(second) +
                 " undo each other" + (between.empty() ? "" : " around " + between) + ": " + why +
                 ", so the readers get " + quoted(g.nodes[v.node]) + " in " + std::string(p) +
                 (first_goes ? "" : " (the first conversion stays: other readers need it)");
    g.eliminated.push_back(std::move(rec));
    ctx.changes += first_goes ? 2 : 1;
  }
  if (!g.eliminated.empty()) compact(g, drop);
}

}  // namespace graphcore::opt
