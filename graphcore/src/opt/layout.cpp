// Layout assignment for Ascend targets (skipped elsewhere: CPU and GPU kernels read the
// framework's NCHW/ND tensors). The Cube unit reads tiled private formats:
//   - convolutions (Conv2D, conv kernels): the 4-D input (and a fused residual operand) in
//     NC1HWC0, output in NC1HWC0;
//   - matmuls (MatMul, BatchMatMul, dense and attention kernels): activation operands of rank
//     >= 2 in FRACTAL_NZ, output in FRACTAL_NZ.
// Ops that compute element by element (and BatchNorm, pooling for NC1HWC0; LayerNorm,
// AddLayerNorm and last-axis Softmax for FRACTAL_NZ) keep the private format of their first
// activation input: operands of the output's shape are converted to it, broadcast operands to
// the default format. Every other op reads and writes the default format (NCHW for 4-D, ND
// otherwise), and so do graph inputs, outputs, Parameters and constants (weights are converted
// once at load time, outside the graph). A TransData node is inserted wherever a value is read
// in a format other than the one it was written in; one per (value, format), shared by readers.
#include <unordered_map>

#include "opt/passes.h"

namespace graphcore::opt {

namespace {

enum class Kind { Conv, Matmul, Follow };

bool all_origins(const PassContext& ctx, const OptNode& n, bool (*pred)(std::string_view)) {
  for (uint32_t o : n.origins) {
    if (!pred(ctx.semantic().nodes[o].op)) return false;
  }
  return true;
}

Kind classify(const OptNode& n) {
  if (n.op == "Conv2D" || n.pattern == "conv") return Kind::Conv;
  if (n.op == "MatMul" || n.op == "BatchMatMul" || n.pattern == "dense" || n.pattern == "attention")
    return Kind::Matmul;
  return Kind::Follow;
}

// Whether `n` can compute in private format `f`.
bool follows(const PassContext& ctx, const OptNode& n, Format f) {
  const bool elementwise =
      n.pattern == "elementwise"
          ? all_origins(ctx, n, [](std::string_view op) { return is_elementwise(op); })
          : n.pattern.empty() && is_elementwise(n.op);
  if (elementwise) return true;
  if (f == Format::NC1HWC0 && n.pattern == "elementwise") {
    // Inference BatchNorm chained with elementwise ops: per-channel, fine in NC1HWC0.
    return all_origins(ctx, n,
                       [](std::string_view op) { return is_elementwise(op) || op == "BatchNorm"; });
  }
  if (f == Format::NC1HWC0) {
    return n.pattern.empty() && (n.op == "BatchNorm" || n.op == "MaxPool" || n.op == "AvgPool");
  }
  if (f == Format::FRACTAL_NZ) {
    if (n.op == "LayerNorm" || n.op == "AddLayerNorm") return true;
    if (n.op == "Softmax" && n.pattern.empty()) {
      const Node* s = ctx.anchor(n);
      const AttrValue* axis = s ? s->find_attr("axis") : nullptr;
      const int64_t* a = axis ? std::get_if<int64_t>(axis) : nullptr;
      return !axis || (a && *a == -1);
    }
  }
  return false;
}

bool is_activation_value(const std::vector<OptNode>& nodes, ValueRef r) {
  const NodeKind k = nodes[r.node].kind;
  return k == NodeKind::Op || k == NodeKind::Input;
}

}  // namespace

void run_layout(PassContext& ctx) {
  OptimizedGraph& g = ctx.g;
  const size_t n = g.nodes.size();
  std::vector<OptNode> out;
  out.reserve(n + n / 4);
  std::vector<uint32_t> remap(n, kNone);
  std::unordered_map<uint64_t, uint32_t> converted;  // (value, format) -> TransData node
  auto convert = [&](ValueRef r, Format want) -> ValueRef {
    const OptNode& src = out[r.node];
    const Format have = src.formats[r.output];
    if (have == want) return r;
    const uint64_t key = (static_cast<uint64_t>(r.node) << 24) | (uint64_t{r.output} << 4) |
                         static_cast<uint64_t>(want);
    if (auto it = converted.find(key); it != converted.end()) return ValueRef{it->second, 0};
    OptNode t;
    t.id = "TransData/" + src.id + ":" + std::to_string(r.output) + "/" +
           std::string(format_name(want));
    t.op = "TransData";
    t.inputs = {r};
    t.outputs = {src.outputs[r.output]};
    t.formats = {want};
    t.pass = "layout";
    t.attrs = {Attr{"src_format", std::string(format_name(have))},
               Attr{"dst_format", std::string(format_name(want))}};
    const auto idx = static_cast<uint32_t>(out.size());
    out.push_back(std::move(t));
    converted.emplace(key, idx);
    ++ctx.changes;
    return ValueRef{idx, 0};
  };
  auto rank_of = [&](ValueRef r) { return out[r.node].outputs[r.output].shape.rank(); };
  auto def = [&](ValueRef r) { return default_format(rank_of(r)); };

  for (uint32_t i = 0; i < n; ++i) {
    OptNode node = std::move(g.nodes[i]);
    for (auto& r : node.inputs) r.node = remap[r.node];
    if (node.kind == NodeKind::Op) {
      const Kind kind = classify(node);
      Format out_format = Format::ND;  // ND here: "the default for each output's rank"
      if (kind == Kind::Conv) {
        for (size_t s = 0; s < node.inputs.size(); ++s) {
          auto& r = node.inputs[s];
          // The input feature map, and a fused residual operand (of the output's shape).
          const bool act = is_activation_value(out, r) && rank_of(r) == 4 &&
                           (s == 0 || out[r.node].outputs[r.output].shape == node.outputs[0].shape);
          r = convert(r, act ? Format::NC1HWC0 : def(r));
        }
        out_format = Format::NC1HWC0;
      } else if (kind == Kind::Matmul) {
        for (auto& r : node.inputs) {
          const bool act = is_activation_value(out, r) && rank_of(r) >= 2;
          r = convert(r, act ? Format::FRACTAL_NZ : def(r));
        }
        out_format = Format::FRACTAL_NZ;
      } else {
        // Follow the first activation input's private format when this op can compute in it.
        Format f = Format::ND;
        size_t source = SIZE_MAX;
        for (size_t s = 0; s < node.inputs.size(); ++s) {
          const ValueRef r = node.inputs[s];
          if (!is_activation_value(out, r)) continue;
          const Format have = out[r.node].formats[r.output];
          if ((have == Format::NC1HWC0 || have == Format::FRACTAL_NZ) && node.outputs.size() == 1 &&
              node.outputs[0].shape.rank() == rank_of(r) && follows(ctx, node, have)) {
            f = have;
            source = s;
          }
          break;
        }
        for (size_t s = 0; s < node.inputs.size(); ++s) {
          auto& r = node.inputs[s];
          const bool in_f =
              s == source || (f != Format::ND && is_activation_value(out, r) &&
                              out[r.node].outputs[r.output].shape == node.outputs[0].shape);
          r = convert(r, in_f ? f : def(r));
        }
        out_format = f;
      }
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        const size_t rank = node.outputs[k].shape.rank();
        const bool fits = (out_format == Format::NC1HWC0 && rank == 4) ||
                          (out_format == Format::FRACTAL_NZ && rank >= 2);
        node.formats[k] = fits ? out_format : default_format(rank);
      }
    }
    remap[i] = static_cast<uint32_t>(out.size());
    out.push_back(std::move(node));
  }
  for (auto& r : g.outputs) {
    r.node = remap[r.node];
    r = convert(r, def(r));
  }
  g.nodes = std::move(out);
}

}  // namespace graphcore::opt
