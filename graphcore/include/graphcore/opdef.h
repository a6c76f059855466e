// One definition per graph operator: what every stage after evaluation needs to know about an
// operator ("ReLU", "Conv2D") lives in its OpDef and nowhere else. The registry (registry.h) maps
// MindSpore's APIs (names, signatures, versions, shape rules) onto these operators; the
// optimizer, the hardware model, mixed precision, layout, the CPU runtime and the view read the
// operator's facts here instead of keeping name lists of their own.
//
// The rows live in graphcore/src/ops/, one file per family; tests/unit/opdef_test.cpp checks that
// every operator an API or a pass can produce has a row, a CPU kernel where it must run, and that
// no row is orphaned. Adding an operator: docs/ARCHITECTURE.md, "Adding an operator".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace graphcore {

namespace runtime {
struct KernelCall;
}
namespace autodiff {
class GradBuilder;
}
namespace exporter {
class OnnxNodeBuilder;
}

enum class OpCategory : uint8_t {
  Elementwise,    // arithmetic, comparison, logic, unary math
  Activation,     // ReLU, GeLU, Sigmoid ...
  Normalization,  // BatchNorm, LayerNorm, GroupNorm, Softmax-free norms
  Softmax,        // Softmax, LogSoftmax
  Convolution,    // Conv2D and its fused forms
  MatMul,         // MatMul, BatchMatMul, Dense and their fused forms
  Attention,      // fused multi-head attention
  Pooling,        // MaxPool, AvgPool, adaptive pools
  Reduction,      // ReduceSum, Argmax ...
  Shape,          // reshape-like, transpose, concat, split, slice, tile, broadcast
  Index,          // Gather, OneHot, MaskedFill, Select on indices
  Creation,       // Zeros, Ones, Fill, Range, Constant
  Random,         // Dropout and the random samplers
  Cast,           // dtype conversion
  DataMove,       // TransData: a layout change inserted by the optimizer
  Other,
};

// Properties the passes test (a bit set).
enum OpTrait : uint32_t {
  kTraitNone = 0,
  kElementwise = 1u << 0,  // each output element depends on the same element of each input
  kActivation = 1u << 1,   // a pointwise non-linearity a GEMM epilogue can apply
  kRandom = 1u << 2,       // draws random numbers: never folded into a constant
  kReshapeLike = 1u << 3,  // only relabels the shape of contiguous data
  kHostNoop = 1u << 4,     // no device kernel is launched (the runtime relabels the shape)
  kLikeInput = 1u << 5,    // ZerosLike / OnesLike: the value depends only on the input's shape
};

// The Ascend unit that executes the operator (the hardware model).
enum class OpUnit : uint8_t {
  Vector,  // AI-core vector unit (the default)
  Cube,    // AI-core cube unit: convolution and matrix multiplication
  AiCpu,   // no AI-core kernel in CANN's operator library: runs on the AI CPU
  Host,    // shape-only: nothing runs on the device
};

// What automatic mixed precision (amp level O2) does with the operator's kernel.
enum class OpPrecision : uint8_t {
  Float16,     // computes in float16 under O2
  KeepFloat32  // AMP_BLACK_LIST (BatchNorm, LayerNorm): kept in float32
};

using OpKernelFn = void (*)(runtime::KernelCall&);
using OpGradFn = void (*)(autodiff::GradBuilder&);
using OpOnnxFn = void (*)(exporter::OnnxNodeBuilder&);

struct OpDef {
  std::string_view name;  // the graph operator ("Conv2D"), as Node::op holds it
  OpCategory category = OpCategory::Other;
  uint32_t traits = kTraitNone;
  OpUnit unit = OpUnit::Vector;
  // Vector instructions per output element (a plain elementwise operator is 1).
  double vector_ops = 1;
  OpPrecision precision = OpPrecision::Float16;
  // The CPU runtime's kernel; nullptr where the runtime cannot run the operator (it says so).
  OpKernelFn kernel = nullptr;
  // Produced only by an optimization pass (fusion, layout, amp), never by an API.
  bool pass_only = false;
  // The gradient rule (graphcore/autodiff.h): emits the backward nodes of one application.
  // nullptr: the operator cannot be differentiated (build_backward says so when it lies on the
  // path to a loss). Backward operators (Conv2DBackpropInput, ReluGrad ...) are rows too.
  OpGradFn grad = nullptr;
  // A backward operator (ReLUGrad, Conv2DGrad ...): emitted only by build_backward's gradient
  // rules, never by an API or a pass (graphcore/src/ops/grad.cpp).
  bool backward = false;
  // The ONNX mapping (graphcore/src/export/onnx_builder.h): writes one application as ONNX
  // node(s), their attributes from the node's recorded attributes and any initializers they need
  // (Reshape's target shape). nullptr: no ONNX mapping; export_onnx refuses, naming the operator
  // and its line.
  OpOnnxFn onnx = nullptr;

  [[nodiscard]] bool has(OpTrait t) const { return (traits & t) != 0; }
};

// The definition of graph operator `op`; nullptr for an operator nobody defined.
const OpDef* find_op(std::string_view op);
// Every definition, sorted by name.
std::span<const OpDef> all_ops();
// "elementwise", "activation", ... (graph.proto's Node.category).
std::string_view category_name(OpCategory c);

// Shorthands for the passes: false for an operator without a definition.
bool op_has(std::string_view op, OpTrait t);
std::optional<OpCategory> op_category(std::string_view op);

}  // namespace graphcore
