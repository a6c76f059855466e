// Reusable shape/dtype rules for registry entries, and the small vocabulary entries are written
// in (parameter specs, argument readers, output helpers).
//
// Conventions
// - FLOPs: a multiply-add counts as 2 FLOPs. Convolution/Dense/MatMul count 2*MACs, plus one FLOP
//   per output element for a bias add. Elementwise ops count 1 FLOP per output element
//   (activations included, whatever their internal cost); reductions count one FLOP per input
//   element; normalisations count a small constant per element (see each rule). Shape-only ops
//   (reshape, transpose, concat, gather...) count 0. FLOPs are reported only when every dimension
//   involved is known; with a symbolic or unknown dimension nothing is reported.
// - Diagnostics: a rule reports an error only when a mismatch is certain (dims_equal == Tri::No).
//   Symbolic dimensions flow through; Dim::unknown() and unranked shapes suppress checks.
// - Codes used here: "shape-mismatch", "matmul-dim", "reshape-size", "concat-dim", "rank-error",
//   "broadcast-error", "axis-error", "dtype-error", "invalid-argument".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/registry.h"

namespace graphcore::rules {

// ---- Parameter specs --------------------------------------------------------------------------
ParamSpec P(std::string name, std::string default_src = {});   // positional-or-keyword
ParamSpec KW(std::string name, std::string default_src = {});  // keyword-only
ParamSpec VAR(std::string name);                               // *args
ParamSpec KWARGS(std::string name);                            // **kwargs

// ---- MindSpore versions -------------------------------------------------------------------------
// Releases at which a registry signature changed; each use is verified against the PyPI wheels
// with scripts/dump_signatures.py (table: docs/mindspore-versions.md).
inline constexpr Version kMs2_7_1{2, 7, 1};
inline constexpr Version kMs2_8_0{2, 8, 0};
// `p` restricted to the versions [v, ...): the parameter was added (or renamed to) in v.
ParamSpec since(Version v, ParamSpec p);
// `p` restricted to the versions [..., v): the parameter was removed (or renamed) in v.
ParamSpec until(Version v, ParamSpec p);

// ---- Reading arguments ------------------------------------------------------------------------
// The tensor bound to `name`. Python scalars become 0-d tensors (bool, int64, float32); nullopt
// for Unknown/Missing/None values (and for other kinds, after reporting "invalid-argument").
std::optional<TensorType> tensor_arg(ContextBase& ctx, std::string_view name);
// Like tensor_arg but for a value already in hand (tuple items, varargs).
std::optional<TensorType> tensor_value(const ArgValue& v);
// An int or a sequence of ints, expanded to `n` values; reports "invalid-argument" on a
// malformed value and returns nullopt. Unknown values return nullopt silently.
std::optional<std::vector<int64_t>> ints_arg(ContextBase& ctx, std::string_view name, size_t n);
// An axis list: None/Missing/() -> empty (meaning "all"), int -> {int}, sequence -> values.
// nullopt if unknown.
std::optional<std::vector<int64_t>> axes_value(const ArgValue& v);
// A shape-like argument: ints (-1 allowed) where Unknown items become Dim::unknown(); from a
// sequence, or from the varargs when the call passed several ints (x.reshape(2, 3)).
std::optional<std::vector<Dim>> shape_value(const ArgValue& v);
std::optional<std::vector<Dim>> shape_from_call(CallContext& ctx, std::string_view name);
// The first argument among `names` that is neither None nor Missing (for aliased parameters
// such as dim/axis); Missing if none.
const ArgValue& first_arg(const ContextBase& ctx, std::initializer_list<std::string_view> names);
std::optional<DType> dtype_value(const ArgValue& v);  // DType, or a dtype name string
bool flag(const ContextBase& ctx, std::string_view name, bool fallback = false);

// The constructor arguments of a call, seen through ContextBase so that argument readers
// (read_window, ints_arg...) work on them; diagnostics are dropped (construction reported them).
class InitArgs : public ContextBase {
 public:
  explicit InitArgs(CallContext& call) : call_(call) {}
  [[nodiscard]] const ArgValue& arg(std::string_view n) const override { return call_.init_arg(n); }
  [[nodiscard]] Version version() const override { return call_.version(); }
  [[nodiscard]] std::string_view target() const override { return call_.target(); }
  void error(std::string_view, std::string, std::string_view) override {}
  void warning(std::string_view, std::string, std::string_view) override {}
  [[nodiscard]] bool failed() const override { return false; }
  void suggest_init_value(std::string_view, std::string) override {}  // nothing was reported

 private:
  CallContext& call_;
};

// ---- Outputs ----------------------------------------------------------------------------------
// An output whose shape is not known (unranked) with `dtype`.
void add_unknown_output(CallContext& ctx, DType dtype = DType::Unknown);
// Sets FLOPs to `per_element * num_elements(shape) + extra` when the shape is fully known.
void flops_per_element(CallContext& ctx, const Shape& shape, double per_element);
std::optional<double> known_count(const Shape& shape);  // element count when fully known

// ---- Checks -----------------------------------------------------------------------------------
// Requires rank in [min_rank, max_rank]; reports "rank-error" naming `api` and the shape.
bool require_rank(ContextBase& ctx, std::string_view api, const Shape& s, size_t min_rank,
                  size_t max_rank, std::string_view arg = {});
// MindSpore 2.10's 1-D adaptive average pool (nn.AdaptiveAvgPool1d, ops.adaptive_avg_pool1d,
// ops.interpolate's 'area' on 3-D input): the last dim of `x` must be at least `output_size`
// and divisible by it; false: reported at `arg`. Unknown sizes pass.
bool adaptive_1d_length_valid(ContextBase& ctx, std::string_view api, const Shape& x,
                              const ArgValue& output_size, std::string_view arg);
// ops.interpolate's rule (nn.Upsample's construct calls it): MindSpore 2.10's checks of size,
// scale_factor, mode, recompute_scale_factor and align_corners for the rank of `x` (read from
// `args`: the call's arguments, or nn.Upsample's constructor arguments through InitArgs), the
// operator the mode runs, and the output shape; problems reported on `ctx` naming `api`.
void interpolate_rule(CallContext& ctx, const ContextBase& args, std::string_view api,
                      const TensorType& x);
// Requires `actual` to equal `expected` when that is not certainly false; reports
// "shape-mismatch": "<api> expects <expected> <what> (<param>=<expected>), but receives
// <actual> from input of shape <shape>".
bool require_dim(ContextBase& ctx, std::string_view api, std::string_view what,
                 std::string_view param, int64_t expected, Dim actual, const Shape& shape,
                 std::string_view arg = {});
// Floating dtypes only (MindSpore rejects integer/bool inputs for these kernels).
bool require_float(ContextBase& ctx, std::string_view api, DType t, std::string_view arg = {});
// MindSpore's Elu takes a float alpha and supports only 1.0 (documented since 1.x; 2.10 raises
// "In Elu, alpha must be 1.0f" for another float, and fails to dispatch an int). `from_init`:
// alpha is a constructor argument (nn.ELU), reported at the call with a fix at the constructor.
bool elu_alpha_supported(CallContext& ctx, std::string_view api, bool from_init);
// A check of an API's non-tensor arguments, run before its shape rule whatever the inputs are
// (known or not); false: it reported the problem.
using ArgCheck = bool (*)(CallContext&, std::string_view api);
InferFn checked_first(ArgCheck check, std::string api, InferFn rule);
// Normalises `axis` for `rank`, reporting "axis-error" when it is out of range.
std::optional<size_t> axis_or_error(ContextBase& ctx, std::string_view api, int64_t axis,
                                    size_t rank, std::string_view arg = {});

// ---- Shape rules ------------------------------------------------------------------------------
enum class PadMode { Same, Valid, Pad };
std::optional<PadMode> parse_pad_mode(std::string_view s);  // case-insensitive
// MindSpore convolution output size for one spatial dimension:
//   same: ceil(in / stride); valid: floor((in - dilation*(k-1) - 1) / stride) + 1;
//   pad: floor((in + pad_before + pad_after - dilation*(k-1) - 1) / stride) + 1.
Dim conv_out_dim(Dim in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_before,
                 int64_t pad_after, PadMode mode);
// Transposed convolution: same: in*stride; valid: (in-1)*stride + dilation*(k-1) + 1;
// pad: (in-1)*stride - pad_before - pad_after + dilation*(k-1) + 1; plus output_padding.
Dim conv_transpose_out_dim(Dim in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_before,
                           int64_t pad_after, int64_t output_padding, PadMode mode);
// Pooling: like conv_out_dim, with ceil instead of floor when ceil_mode (pad mode only), and
// the last window must start inside the input or left padding (PyTorch/MindSpore rule).
Dim pool_out_dim(Dim in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_before,
                 int64_t pad_after, bool ceil_mode, PadMode mode);

// A sliding window (convolution or pooling) over the trailing `kernel.size()` dimensions.
struct Window {
  std::vector<int64_t> kernel, stride, dilation, pad_before, pad_after, output_padding;
  PadMode mode = PadMode::Valid;
  bool ceil_mode = false;
};
enum class WindowOp { Conv, ConvTranspose, Pool };
Shape window_shape(const Shape& x, const Window& w, WindowOp op);
// Reads kernel_size/stride/dilation (ints or n-tuples), pad_mode and padding (int, n-tuple of
// symmetric pads when `per_dim`, or 2n-tuple of (before, after) pairs when `pairs`). Reports
// "invalid-argument" and returns nullopt on malformed values. Argument names are passed so
// primitives ("strides", "pad") can share the reader.
struct WindowArgNames {
  std::string_view kernel = "kernel_size", stride = "stride", dilation = "dilation",
                   pad_mode = "pad_mode", padding = "padding";
};
std::optional<Window> read_window(ContextBase& ctx, size_t n, bool per_dim, bool pairs,
                                  const WindowArgNames& names = {});

// Runs `fn` with the ranked tensor bound to `arg`; when the argument is not a known tensor (or
// its rank is unknown) adds `n_outputs` unranked outputs instead.
using TensorRule = std::function<void(CallContext&, const TensorType&)>;
InferFn on_tensor(std::string arg, TensorRule fn, size_t n_outputs = 1);
// Like on_tensor, but the rule also runs on an unranked tensor: for rules that work on any
// shape and decide the output dtype (a cast, a comparison, argmax), which on_tensor's
// pass-through of the input dtype would get wrong.
InferFn on_any_tensor(std::string arg, TensorRule fn, size_t n_outputs = 1);

// Reduction over `axes` (empty: all axes). Reports "axis-error".
std::optional<Shape> reduce_shape(ContextBase& ctx, std::string_view api, const Shape& s,
                                  const std::vector<int64_t>& axes, bool keep_dims);
// Broadcast of N shapes; reports "broadcast-error" naming every shape.
std::optional<Shape> broadcast_all(ContextBase& ctx, std::string_view api,
                                   const std::vector<Shape>& shapes);
enum class MatMulKind {
  Matrix,  // ops.MatMul: both rank 2
  Batch,   // ops.BatchMatMul: rank >= 2 (3 on most backends), batch dims broadcast
  NumPy,   // ops.matmul / @: 1-D operands promoted, batch dims broadcast
};
// Reports "matmul-dim" naming both shapes and the inner dims, or "rank-error".
std::optional<Shape> matmul_shape(ContextBase& ctx, std::string_view api, const Shape& a,
                                  const Shape& b, bool transpose_a, bool transpose_b,
                                  MatMulKind kind);
// FLOPs of a matmul producing `out` with inner dimension `k` (2 per multiply-add).
void matmul_flops(CallContext& ctx, const Shape& out, Dim k);
// Reshape with at most one -1 and an element-count check ("reshape-size").
std::optional<Shape> reshape_shape(ContextBase& ctx, std::string_view api, const Shape& in,
                                   const std::vector<Dim>& target);
// Concatenation along `axis` ("concat-dim" for mismatched other dims or ranks).
std::optional<Shape> concat_shape(ContextBase& ctx, std::string_view api,
                                  const std::vector<Shape>& shapes, int64_t axis);
// Stack along a new axis.
std::optional<Shape> stack_shape(ContextBase& ctx, std::string_view api,
                                 const std::vector<Shape>& shapes, int64_t axis);
// Permutation of the axes ("axis-error" for a non-permutation).
std::optional<Shape> permute_shape(ContextBase& ctx, std::string_view api, const Shape& s,
                                   const std::vector<int64_t>& perm);
// Flatten dims [start, end] into one.
std::optional<Shape> flatten_shape(ContextBase& ctx, std::string_view api, const Shape& s,
                                   int64_t start, int64_t end);
// Split along `axis` into pieces of the given sizes (checks that they sum to the dim).
std::optional<std::vector<Shape>> split_shapes(ContextBase& ctx, std::string_view api,
                                               const Shape& s, int64_t axis,
                                               const std::vector<int64_t>& sizes);
// Sizes for split(size) (last piece smaller) and chunk(n) along a known dim.
std::vector<int64_t> split_by_size(int64_t dim, int64_t size);
std::vector<int64_t> chunk_sizes(int64_t dim, int64_t chunks);

// Dtype of `tensor op scalar` with a Python scalar (dtype follows the tensor, except that a
// float scalar makes an integer tensor float32 and an int scalar makes a bool tensor int64).
DType scalar_promote(DType tensor, ArgValue::Kind scalar);
bool is_scalar(const ArgValue& v);  // Python bool/int/float

// ---- Recording call-time values -----------------------------------------------------------------
// Node attributes for the values an op needs to be executed that are not tensors, so that the
// runtime reads them from the graph (docs/runtime.md). Names the kernels read:
//   scalar, scalar_index  a Python scalar operand of an elementwise op (bool, int64 or double,
//                         as Python wrote it) and the operand position it takes: `1 - x` records
//                         scalar_index 0, `x - 1` scalar_index 1 (binary_rule, where/Select)
//   perm                  transpose permutation, normalised (permute_rule, swap_rule)
//   axis                  reduction axes (list; empty = all), concat/stack/split/gather/unsqueeze
//                         axis (int), squeeze axes (list)
//   keep_dims             reductions
//   multiples             tile
//   start, limit, delta   arange (doubles)
//   value                 fill value (full, Fill, full_like, masked_fill with a scalar)
//   min, max              clamp bounds given as scalars
//   shape                 reshape target (-1 kept)
//   dtype                 cast target ("float32")
// The value of a Python scalar argument as an attribute (bool, int64, double); nullopt for any
// other kind (tensors, symbolic ints without a known value, unknown values).
std::optional<AttrValue> scalar_attr_value(const ArgValue& v);
// Records `scalar` / `scalar_index` when `v` is a Python scalar with a known value.
void record_scalar(CallContext& ctx, const ArgValue& v, int64_t index);

}  // namespace graphcore::rules
