// Synthetic training batches (synthetic.h).
#include "runtime/synthetic.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "runtime/internal.h"

namespace graphcore::runtime {

namespace {

std::optional<int64_t> last_dim(const TensorType& t) {
  if (!t.shape.ranked || t.shape.dims.empty() || !t.shape.dims.back().is_known())
    return std::nullopt;
  return t.shape.dims.back().value();
}

std::optional<int64_t> first_dim(const Shape& s) {
  if (!s.ranked || s.dims.empty() || !s.dims.front().is_known()) return std::nullopt;
  return s.dims.front().value();
}

// What a consumer of an integer value at input position `pos` accepts: a loss's class count
// (its logits' last dimension), the rows of the table an index gathers from.
std::optional<int64_t> accepted_range(const CellReport& r, const Node& n, size_t pos) {
  const Graph& g = r.graph;
  // The losses whose second input is a class index per row.
  const bool class_loss =
      n.op == "CrossEntropyLoss" || n.op == "NLLLoss" || n.op == "SoftmaxCrossEntropyWithLogits";
  if (class_loss && pos > 0 && !n.inputs.empty()) {
    const ValueRef logits = n.inputs[0];
    return last_dim(g.nodes[logits.node].outputs.at(logits.output));
  }
  if (n.op == "Gather" || n.op == "Embedding" || n.op == "EmbeddingLookup") {
    for (const std::string& p : n.params) {
      for (const ParamInfo& info : r.params) {
        if (info.name == p) return first_dim(info.shape);
      }
    }
    if (pos > 0 && !n.inputs.empty()) {
      const ValueRef table = n.inputs[0];
      const TensorType& t = g.nodes[table.node].outputs.at(table.output);
      return first_dim(t.shape);
    }
  }
  if (n.op == "OneHot") return attr_int(n, "depth");
  return std::nullopt;
}

}  // namespace

int64_t synthetic_label_range(const CellReport& loss_graph, size_t input) {
  const Graph& g = loss_graph.graph;
  const std::vector<uint32_t> inputs = graph_inputs(g);
  if (input >= inputs.size()) return 2;
  const uint32_t src = inputs[input];
  // Follow value-preserving steps (Cast, Reshape ...) to the first consumer that says.
  std::vector<uint32_t> frontier{src};
  for (size_t depth = 0; depth < 4 && !frontier.empty(); ++depth) {
    std::vector<uint32_t> next;
    for (const Node& n : g.nodes) {
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        for (const uint32_t f : frontier) {
          if (n.inputs[k].node != f) continue;
          if (auto r = accepted_range(loss_graph, n, k); r && *r > 0) return *r;
          if (n.op == "Cast" || n.op == "Reshape" || n.op == "Squeeze" || n.op == "ExpandDims")
            next.push_back(static_cast<uint32_t>(&n - g.nodes.data()));
        }
      }
    }
    frontier = std::move(next);
  }
  return 2;
}

std::vector<Tensor> synthetic_batch(const CellReport& loss_graph, uint64_t seed, int64_t step) {
  const Graph& g = loss_graph.graph;
  std::vector<Tensor> out;
  size_t index = 0;
  for (const uint32_t i : graph_inputs(g)) {
    const Node& n = g.nodes[i];
    const TensorType& t = n.outputs.at(0);
    const auto dims = known_dims(t);
    if (!dims || t.dtype == DType::Unknown || !Tensor::supported(t.dtype)) {
      throw RuntimeError("synthetic data: the type of input " + std::to_string(index) + " (" +
                         n.id +
                         ") is not known: give every column's shape and dtype with "
                         "--input (e.g. --input 32,1,28,28 --input 32:int32)");
    }
    // A stream per (seed, step, input): splitmix-style mixing keeps them apart.
    const uint64_t s = seed * 0x9E3779B97F4A7C15ULL +
                       static_cast<uint64_t>(step) * 0xBF58476D1CE4E5B9ULL +
                       static_cast<uint64_t>(index) * 0x94D049BB133111EBULL + 1;
    Tensor v = Tensor::random(*dims, t.dtype, s);
    if (!v.is_float() && t.dtype != DType::Bool) {
      const int64_t range = synthetic_label_range(loss_graph, index);
      // Tensor::random draws integers from [0, 10): map them onto [0, range) deterministically.
      Tensor u = Tensor::random(*dims, DType::Float32, s ^ 0x5851F42D4C957F2DULL);
      const float* p = u.data<float>();
      for (int64_t k = 0; k < v.numel(); ++k) {
        const double unit = 0.5 * std::erfc(-static_cast<double>(p[k]) / std::sqrt(2.0));
        auto c = static_cast<int64_t>(std::floor(unit * static_cast<double>(range)));
        v.set(k, static_cast<double>(std::clamp<int64_t>(c, 0, range - 1)));
      }
    }
    out.push_back(std::move(v));
    ++index;
  }
  return out;
}

}  // namespace graphcore::runtime
