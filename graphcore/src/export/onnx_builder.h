// The ONNX exporter's view of one graph node, handed to the node's OpDef::onnx rule
// (graphcore/opdef.h). A rule names the ONNX values of the node's inputs, outputs and weights and
// emits ONNX nodes and initializers through it; it never sees protobuf. The rules live in
// onnx_rules.cpp; the writer that owns the builder is onnx.cpp (graphcore/export_onnx.h).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graphcore/graph.h"

namespace onnx {
class GraphProto;
}

namespace graphcore::exporter {

// An ONNX node attribute: INT, FLOAT, STRING, INTS or FLOATS.
struct OnnxAttr {
  std::string name;
  std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>> value;
};

// Thrown by a rule that cannot write this application (an attribute combination ONNX has no
// form for); the exporter turns it into a located refusal.
class OnnxRefusal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ONNX TensorProto.DataType of a graph dtype; 0 when ONNX has none the exporter writes.
int32_t onnx_dtype(DType t);

class OnnxNodeBuilder {
 public:
  // `input_names`: the ONNX value of each graph input of the node; `param_names` / `param_types`:
  // its weights (Node::params order) as initializer names and types.
  OnnxNodeBuilder(const Node& node, std::vector<std::string> input_names,
                  std::vector<const TensorType*> input_types, std::vector<std::string> param_names,
                  std::vector<const TensorType*> param_types, onnx::GraphProto* graph,
                  size_t* counter);

  [[nodiscard]] const Node& node() const { return node_; }
  [[nodiscard]] size_t num_inputs() const { return inputs_.size(); }
  // Input i's ONNX value name and graph type (refuses when the node has fewer inputs).
  [[nodiscard]] const std::string& input(size_t i) const;
  [[nodiscard]] const TensorType& input_type(size_t i) const;
  // Known dims of input i / output i; refuses when one is symbolic or unknown.
  [[nodiscard]] std::vector<int64_t> input_dims(size_t i) const;
  [[nodiscard]] std::vector<int64_t> output_dims(size_t i = 0) const;
  // The ONNX value the node's output i must be written to.
  [[nodiscard]] std::string output(size_t i = 0) const;
  // The initializer of the weight whose name ends with `.suffix` (as the runtime's find_param);
  // "" when the node has none. param_dims: its dims.
  [[nodiscard]] std::string param(std::string_view suffix) const;
  [[nodiscard]] std::vector<int64_t> param_dims(std::string_view suffix) const;

  // A fresh value name for an intermediate result ("<node id>/<what>_<n>").
  std::string temp(std::string_view what);
  // Adds an ONNX node.
  void emit(std::string_view op_type, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, const std::vector<OnnxAttr>& attrs = {});
  // Adds an int64 initializer of shape (values.size(),) and returns its name.
  std::string const_i64(std::string_view what, const std::vector<int64_t>& values);
  // Adds a 0-d initializer of dtype `t` holding `v` and returns its name.
  std::string const_scalar(std::string_view what, double v, DType t);
  // Output i as an initializer of its known dims and dtype with every element `v` (an operator
  // whose value depends only on its input's shape: ZerosLike, OnesLike).
  void fill_output(double v, size_t i = 0);
  // The node's operands for an elementwise operator: its tensor inputs with the recorded Python
  // scalar (attributes `scalar`, `scalar_index`) inserted as a constant, as the runtime does.
  std::vector<std::string> operands(size_t n);
  // One ONNX node with the node's inputs and output, no attributes.
  void same(std::string_view op_type);

  [[noreturn]] void refuse(const std::string& why) const;

 private:
  const Node& node_;
  std::vector<std::string> inputs_;
  std::vector<const TensorType*> input_types_;
  std::vector<std::string> params_;
  std::vector<const TensorType*> param_types_;
  onnx::GraphProto* graph_;
  size_t* counter_;
};

// ---- the rules (OpDef::onnx), onnx_rules.cpp --------------------------------------------------
namespace rules {
void o_relu(OnnxNodeBuilder& b);
void o_sigmoid(OnnxNodeBuilder& b);
void o_tanh(OnnxNodeBuilder& b);
void o_gelu(OnnxNodeBuilder& b);
void o_add(OnnxNodeBuilder& b);
void o_sub(OnnxNodeBuilder& b);
void o_mul(OnnxNodeBuilder& b);
void o_div(OnnxNodeBuilder& b);
void o_bias_add(OnnxNodeBuilder& b);
void o_identity(OnnxNodeBuilder& b);  // Dropout and others that are the identity at inference
void o_conv(OnnxNodeBuilder& b);
void o_pool(OnnxNodeBuilder& b);  // MaxPool, AvgPool
void o_adaptive_avgpool(OnnxNodeBuilder& b);
void o_batchnorm(OnnxNodeBuilder& b);
void o_dense(OnnxNodeBuilder& b);    // Dense, and MatMul with weights (nn.Dense)
void o_matmul(OnnxNodeBuilder& b);   // MatMul, BatchMatMul
void o_reshape(OnnxNodeBuilder& b);  // Reshape, Flatten, ExpandDims, Squeeze ...
void o_reduce_mean(OnnxNodeBuilder& b);
void o_reduce_sum(OnnxNodeBuilder& b);
void o_softmax(OnnxNodeBuilder& b);
void o_transpose(OnnxNodeBuilder& b);
void o_layernorm(OnnxNodeBuilder& b);
void o_fill_like(OnnxNodeBuilder& b);  // ZerosLike, OnesLike
void o_equal(OnnxNodeBuilder& b);      // Equal, NotEqual
void o_cast(OnnxNodeBuilder& b);
void o_range(OnnxNodeBuilder& b);
void o_gather(OnnxNodeBuilder& b);  // Gather, nn.Embedding
void o_strided_slice(OnnxNodeBuilder& b);
void o_relu6(OnnxNodeBuilder& b);
void o_hswish(OnnxNodeBuilder& b);
void o_hsigmoid(OnnxNodeBuilder& b);
void o_silu(OnnxNodeBuilder& b);
void o_concat(OnnxNodeBuilder& b);
void o_unstack(OnnxNodeBuilder& b);
void o_tile(OnnxNodeBuilder& b);
void o_roll(OnnxNodeBuilder& b);
void o_clip(OnnxNodeBuilder& b);
void o_lp_norm(OnnxNodeBuilder& b);
void o_split(OnnxNodeBuilder& b);  // Split (ops.split, ops.chunk)
void o_stack(OnnxNodeBuilder& b);
void o_cumsum(OnnxNodeBuilder& b);
void o_broadcast_to(OnnxNodeBuilder& b);
void o_group_norm(OnnxNodeBuilder& b);
void o_floordiv(OnnxNodeBuilder& b);      // floats: Div + Floor
void o_reduce_var(OnnxNodeBuilder& b);    // ReduceMean, Sub, Mul, ReduceSum, Div (n - ddof)
void o_l2_normalize(OnnxNodeBuilder& b);  // Mul, ReduceSum, Max(epsilon), Sqrt, Div
void o_pad(OnnxNodeBuilder& b);           // nn.Pad, ops.pad (constant mode)
void o_resize(OnnxNodeBuilder& b);        // ResizeNearestNeighbor(V2), ResizeBilinearV2
}  // namespace rules

}  // namespace graphcore::exporter
