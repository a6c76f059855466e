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
  Recurrent,      // LSTM, GRU, RNN (a whole recurrence in one node)
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

// ---- MindIR export facts (graphcore/src/export/mindir.cpp, docs/export.md) --------------------
// How MindSpore 2.10 passes a primitive's parameters in a .mindir (docs/mindir-notes.md).
enum class MindirKind : uint8_t {
  Attribute = 1,  // PRIMITIVE: parameters are attributes of the PrimitiveProto (Conv2D, MaxPool)
  Function = 2,   // PRIMITIVE_FUNCTION: parameters are extra node inputs pointing at Constant
                  // nodes, in `__call__` then `__init__` order (gen_ops_prim classes)
};

// Where the value of one primitive attribute / function argument comes from, and its encoding.
enum class MindirValue : uint8_t {
  Input,        // the node's data input number `number` (a tensor operand)
  Weight,       // the node's parameter whose name ends with "." + `key` ("weight", "gamma"); when
                // the node reads none, its data input number `number` (ops.matmul's 2nd operand)
  HasWeight,    // BOOL: whether the node reads a parameter ending with `key` (nn.Dense's
                // [out, in] weight makes MatMul's transpose_b true)
  Int,          // INT64 from the node attribute `key`; `number` when it is not recorded
  RequiredInt,  // INT64 from the node attribute `key`, which must be recorded (ExpandDims' axis)
  Bool,         // BOOL from the attribute `key`; `number` != 0 when it is not recorded
  Float,        // FLOAT from the attribute `key`; `number` when it is not recorded
  OneMinus,     // FLOAT 1 - attribute `key` (nn.BatchNorm2d's momentum becomes the primitive's)
  Ints,         // TUPLE of INT64 from the attribute `key`: a list as is, an int repeated `number`
                // times (kernel_size 5 -> (5, 5))
  Ints4,        // TUPLE (1, 1, h, w) from an int or an (h, w) attribute `key` (NCHW strides)
  Pad4,         // TUPLE (top, bottom, left, right) from the attribute `key` (int, pair or four)
  PadList,      // Conv2D's pad_list: Pad4 for pad_mode "pad", computed from the shapes for
                // "same", zeros for "valid"
  OutputShape,  // TUPLE of INT64: the node's (static) output dims (Reshape's target)
  Lower,        // STRING: the string attribute `key` in lower case ("valid")
  Upper,        // STRING: ... in upper case (MaxPool's "VALID")
  Literal,      // INT64 `number`
  LiteralBool,  // BOOL `number` != 0
  LiteralText,  // STRING `key` ("NCHW")
  Require,      // no argument: the attribute `key`, when recorded, must equal `number` (an
                // int or bool), else the operator form has no MindIR mapping and export refuses
  IndexInput,   // the data input `number`, minus one when the node reads the parameter `key`
                // (Gather's indices: input 0 of nn.Embedding, whose table is a weight; input 1
                // of ops.gather(x, indices, axis))
  AllInputs,    // every data input, as one MakeTuple node (Concat's `tensors`)
  TypeId,       // INT64: MindSpore's TypeId of the node's output dtype (Cast: float32 = 43)
  Multiples,    // TUPLE of INT64: output dims / input dims per axis, the input's rank padded
                // with leading 1s (Tile's multiples, as MindSpore's Tile reads longer ones)
  OutputCount,  // INT64: the number of the node's outputs (Unstack's `num`)
  Axes,         // TUPLE of INT64 from the attribute `key` (an int: one axis); not recorded or
                // None: the empty tuple, MindSpore's "every axis" (Squeeze, ReduceSum ...)
  PadModeEnum,  // INT64: the string attribute `key` as MindSpore's PadMode enum of function
                // primitives (same = 1, valid = 2; measured in AvgPool); 'pad' refuses (another
                // primitive)
  OutputHW,     // TUPLE of INT64: the output's last two dims (AdaptiveAvgPool2D's output_size,
                // None entries resolved)
  ReduceAxes,   // TUPLE of INT64: the attribute `key` as written (-1 kept; None: the empty
                // tuple), else the axes the runtime's kernel resolves from the shapes
  ReduceKeep,   // BOOL: whether the reduction keeps its axes (the same resolution)
  InputCount,   // INT64: the number of the node's data inputs (Stack's `num` and `N`)
  EqualSplits,  // INT64: the number of the node's outputs, which must be equal parts along the
                // attribute `key`'s axis (Split's output_num; MindSpore writes unequal sizes as
                // StridedSlices, measured: another form, refused)
  BoolNot,      // BOOL: not the attribute `key` (`number` != 0 when it is not recorded):
                // ResizeBilinearV2's half_pixel_centers is !align_corners
  SameDtype,    // no argument: the output's dtype must be the input's (ops.cumsum(x, axis,
                // dtype) with another dtype is a Cast first in MindSpore's file; refused)
};

// A node MindSpore's GRAPH_MODE compile folds into a constant tensor when its output shape is
// static (measured: BERT's ops.zeros_like(input_ids) and ops.arange(seq_length) are Constant
// tensors in mindspore.export's file); the exporter writes that tensor.
enum class MindirFold : uint8_t {
  None,
  Zeros,  // ZerosLike: zeros of the output's shape and dtype
  Ones,   // OnesLike
  Range,  // Range: start + i * delta from the recorded attributes
};

// A form written as several primitives, as the MindSpore construct of the Cell does.
enum class MindirExpansion : uint8_t {
  None,
  // GeLU with approximate=False (nn.GELU(approximate=False)): x * (erf(x / sqrt(2)) + 1) * 0.5
  // as Div, Erf, Add, Mul, Mul (nn.GELU's construct; measured in mindspore.export's file);
  // approximate=True is the GeLU primitive.
  GeluErf,
  // Flatten with start_dim / end_dim other than (1, -1) (nn.Flatten(start_dim=2),
  // ops.flatten(x, start_dim=...)): Reshape to the output's static shape, as mindspore.export
  // writes it (measured); the default form is the Flatten primitive.
  FlattenReshape,
  // Pad: nn.Pad (mode CONSTANT; `paddings` one (before, after) pair per axis) is the Pad attribute
  // primitive with the pairs as a tuple of tuples; ops.pad (mode 'constant'; `padding` pairs from
  // the last axis) is PadV3(x, padding, value) with mode "constant" and paddings_contiguous True
  // (both measured in mindspore.export's file). Other modes (MirrorPad, ...) refuse.
  PadForms,
  // ReduceVar as mindspore.export writes it (measured, docs/mindir-notes.md): Tensor.var(axis,
  // ddof, keepdims) is ReduceMean(x, axes, True), Sub(x, mean), Pow(., 2.0), ReduceSum(., axes,
  // keepdims, False), Div(., int32 n - ddof); ops.var(x, axis, ddof, keepdims) is ReduceStd(x,
  // axes, unbiased = ddof == 1, keepdims), TupleGetItem(0), Pow(., 2.0). Axes are non-negative;
  // None is the empty tuple. None of these primitives alone is the operator: the importer does
  // not read them back as ReduceVar.
  VarForms,
  // nn.MaxPool2d with pad_mode 'pad', nn.AvgPool2d with pad_mode 'pad' or ceil_mode,
  // count_include_pad False or divisor_override (their constructs; measured): ExpandDims(x, 2),
  // then MaxPool3DWithArgmax (ksize / strides (1, h, w), pads (0, h, w), dilation, ceil_mode,
  // argmax_type "int64", format "NCDHW") + TupleGetItem(0), or AvgPool3D (kernel_size / strides
  // (1, 1, 1, h, w), pad and pad_list (0, 0, top, bottom, left, right), ceil_mode,
  // count_include_pad, divisor_override (0: None), pad_mode "PAD", format "NCDHW"); then
  // Squeeze(., (2,)). Other forms are the row's own primitive.
  Pool3DForms,
  // Roll as mindspore.numpy.roll writes it (its roll_along_axis; measured in mindspore.export's
  // file): per (shift, axis) pair in order, with k = shift mod the axis' length not 0,
  // StridedSlice(x, begin len - k on the axis, end the dims) and StridedSlice(x, 0, end len - k
  // on the axis), MakeTuple, Concat(., axis); no axis: Reshape to one dim first, back after.
  // ops.roll too: its Roll primitive has no CPU kernel in MindSpore 2.10 (a file with it would
  // not run there). The importer does not read these back as Roll.
  RollSlices,
  // ClipByValue from ops.clip_by_value as mindspore.export writes it (measured): Maximum(x, min)
  // then Minimum(., max), a bound that is None left out, a number bound a 0-d tensor. ops.clamp,
  // ops.clip, Tensor.clamp / clip (measured): ClampScalar(x, min, max) with number / None bounds,
  // ClampTensor(x, min, max) with tensor / None bounds; a tensor beside a number is refused. The
  // importer does not read these back as ClipByValue.
  ClipForms,
  // Split into pieces of unequal sizes (ops.split(x, [3, 5], 1); mindspore.numpy.split at
  // indices) as mindspore.export writes it (measured): one StridedSlice(x, begin, end, strides
  // ones, the five masks 0) per piece, begin / end on the split axis. Equal pieces are the row's
  // own primitive.
  SplitSlices,
};

// Expansions written as several primitives none of which alone is the operator: the importer
// does not map their primitives back to it.
constexpr bool mindir_expansion_is_composite(MindirExpansion e) {
  return e == MindirExpansion::VarForms || e == MindirExpansion::RollSlices ||
         e == MindirExpansion::ClipForms;
}

struct MindirArg {
  std::string_view name;  // MindSpore's attribute / argument name ("transpose_b")
  MindirValue value = MindirValue::Input;
  std::string_view key = {};  // the node attribute, parameter suffix or literal text
  double number = 0;          // input index, default or literal
};

// The MindSpore primitive an operator is exported as.
struct MindirDef {
  std::string_view primitive;  // "Conv2D"
  MindirKind kind = MindirKind::Function;
  // Attribute kind: the primitive's attributes; Function kind: its arguments in order (tensor
  // operands included, as Input / Weight). Require rows are checks, written nowhere.
  std::span<const MindirArg> args;
  // When the node reads a parameter with this suffix ("bias"), a BiasAdd(out, bias, NCHW) follows
  // (nn.Conv2d and nn.Dense export as two primitives).
  std::string_view bias = {};
  // The primitive returns a tuple whose element `tuple_item` is the node's output (BatchNorm);
  // -1: a tensor.
  int tuple_item = -1;
  // A weight-reading form (nn.Dense) applied to an input of rank > 2: Reshape to (-1, in) before
  // and back to the output's shape after, as nn.Dense's construct does (MatMul is 2-D).
  bool matrix_weight = false;
  // Identity in inference (Dropout): nothing is written; readers get the input.
  bool inference_identity = false;
  // Folded to a Constant tensor (ZerosLike, OnesLike, Range).
  MindirFold fold = MindirFold::None;
  MindirExpansion expansion = MindirExpansion::None;
  // The node attribute naming an activation applied after the primitive (and its BiasAdd):
  // nn.Dense(activation='tanh') writes Tanh after BiasAdd, as its construct does. Names:
  // relu, relu6, tanh, sigmoid, gelu; any other refuses.
  std::string_view activation = {};
  // A second primitive the row's expansion writes (ops.pad's PadV3 beside nn.Pad's Pad): the
  // importer reads it back as this operator too.
  std::string_view also_primitive = {};
};

// ---- Sharding (parallel strategies, docs/parallel.md) -----------------------------------------
// How an operator's `.shard(...)` strategy must look and what its output's split is; the checks
// (graphcore/src/parallel_check.cpp) read only this.

// One dimension of one input: `dim` counts from the end when negative. When the node's bool
// attribute `swap_attr` is true, dimensions -1 and -2 trade places (MatMul's transpose_a).
struct ShardDim {
  int8_t input = 0;
  int8_t dim = -1;
  std::string_view swap_attr = {};
};

// Two input dimensions that must be split alike (MatMul's contracted dimension). `partial`:
// splitting it leaves partial sums, which MindSpore adds up with an AllReduce over that split
// (MatMulBase::InferForwardCommunication).
struct ShardTie {
  ShardDim a;
  ShardDim b;
  bool partial = false;
};

enum class ShardOutput : uint8_t {
  Broadcast,  // inputs aligned from the right; dimensions of more than one element shared by
              // several inputs split alike; the output takes the split of each dimension
  Input0,     // the output is split as input 0 (Softmax, BiasAdd)
  Dims,       // the output's last dimensions take `output_dims`' splits, the leading (batch)
              // ones input 0's leading ones, split alike on every input (BatchMatMul)
  Permute,    // output dimension k is input 0's dimension perm[k] (Transpose's "perm")
  Reshape,    // input 0's elements in a new shape: a split passes to the output when it is on
              // the first dimension (of more than one element) of a group of input dimensions
              // whose product equals a group of output dimensions', and divides that group's
              // first output dimension; any other split has no output layout without moving data
};

struct ShardRule {
  ShardOutput output = ShardOutput::Broadcast;
  std::span<const ShardTie> ties = {};
  std::span<const ShardDim> output_dims = {};  // Dims
  // An axis that must not be split, named by the node attribute `unsplit_axis` (Softmax's
  // "axis", `unsplit_default` when not recorded).
  std::string_view unsplit_axis = {};
  int8_t unsplit_default = -1;
  // The rule's wording in MindSpore's messages: "mat_a"/"mat_b" (MatMul) or empty (generic).
  bool matmul_wording = false;
  // out_strategy may make the first output dimension in_a * in_k: the AllReduce becomes a
  // ReduceScatter (MatMul::CheckOutputStrategy).
  bool reduce_scatter_out = false;
  // The unsplit axis and every dimension after it must not be split (LayerNorm's
  // begin_norm_axis).
  bool unsplit_from = false;
};

// Elementwise operators (trait kElementwise) without a rule of their own split by broadcasting.
extern const ShardRule kShardBroadcast;

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
  // (Reshape's target shape). nullptr: no ONNX mapping; build_onnx refuses, naming the operator
  // and its line.
  OpOnnxFn onnx = nullptr;
  // How the MindIR exporter writes the operator; nullptr: it has no MindIR mapping (export
  // refuses, naming the operator and its line).
  const MindirDef* mindir = nullptr;
  // How a `.shard(...)` strategy must split the inputs and what the output's split is; nullptr:
  // the elementwise default (kShardBroadcast) for kElementwise rows, else not modelled (only
  // the generic checks apply: count, rank, values, divisibility, devices).
  const ShardRule* shard = nullptr;

  [[nodiscard]] bool has(OpTrait t) const { return (traits & t) != 0; }
  [[nodiscard]] const ShardRule* shard_rule() const {
    return shard != nullptr ? shard : has(kElementwise) ? &kShardBroadcast : nullptr;
  }
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
