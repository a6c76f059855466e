// mindspore.nn layers (CellClass entries). Signatures checked against MindSpore 2.10.0 with
// inspect.signature; parameter names/shapes against Cell.parameters_and_names().
#include <cmath>

#include "registry/rules.h"

namespace graphcore {

namespace {

using namespace rules;  // NOLINT(google-build-using-namespace): entries are written in rules' DSL

ApiEntry cell(std::string name, std::string op, std::vector<ParamSpec> init,
              std::vector<ParamSpec> call, InitFn init_fn, InferFn infer, std::string summary) {
  ApiEntry e;
  e.name = std::move(name);
  e.kind = ApiKind::CellClass;
  e.op = std::move(op);
  e.init_params = std::move(init);
  e.call_params = std::move(call);
  e.init = std::move(init_fn);
  e.infer = std::move(infer);
  e.summary = std::move(summary);
  return e;
}

int64_t init_i(const CallContext& ctx, std::string_view name, int64_t fallback = 0) {
  return ctx.init_arg(name).as_int().value_or(fallback);
}
bool init_b(const CallContext& ctx, std::string_view name, bool fallback = false) {
  return ctx.init_arg(name).as_bool().value_or(fallback);
}

// Requires a positive int constructor argument; returns 0 (after reporting) otherwise, and -1
// when unknown.
int64_t positive(InitContext& ctx, std::string_view name) {
  const ArgValue& v = ctx.arg(name);
  if (v.is_unknown()) return -1;
  auto i = v.as_int();
  if (!i || *i <= 0 || v.kind == ArgValue::Kind::Bool) {
    ctx.error("invalid-argument",
              "'" + std::string(name) + "' must be a positive int, got " + v.repr(), name);
    return 0;
  }
  return *i;
}

DType dtype_or(const ContextBase& ctx, std::string_view name, DType fallback) {
  return dtype_value(ctx.arg(name)).value_or(fallback);
}

void copy_attrs(InitContext& ctx, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (auto a = ctx.arg(n).as_attr()) ctx.set_attr(std::string(n), std::move(*a));
  }
}

std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---- Convolutions -----------------------------------------------------------------------------
struct ConvSpec {
  std::string name;
  size_t nd;  // spatial dims
  bool transpose;
  bool weight_4d;      // Conv1d stores its kernel as (out, in, 1, k)
  std::string format;  // data_format default, empty if the layer has none
};

std::vector<ParamSpec> conv_init_params(const ConvSpec& s) {
  std::vector<ParamSpec> p = {P("in_channels"), P("out_channels"),       P("kernel_size"),
                              P("stride", "1"), P("pad_mode", "'same'"), P("padding", "0")};
  if (s.transpose && s.nd == 2) p.push_back(P("output_padding", "0"));
  for (auto q : {P("dilation", "1"), P("group", "1"), P("has_bias", "False"),
                 P("weight_init", "None"), P("bias_init", "None")})
    p.push_back(q);
  if (!s.format.empty()) p.push_back(P("data_format", "'" + s.format + "'"));
  p.push_back(P("dtype", "mindspore.float32"));
  return p;
}

void add_conv(Registry& r, const ConvSpec& s) {
  auto init = [s](InitContext& ctx) {
    int64_t in = positive(ctx, "in_channels");
    int64_t out = positive(ctx, "out_channels");
    int64_t group = positive(ctx, "group");
    // Conv1d accepts only an int padding; the others an int or (before, after) pairs.
    auto w = read_window(ctx, s.nd, false, s.nd > 1);
    if (!w || in == 0 || out == 0 || group == 0) return;
    if (w->mode != PadMode::Pad && w->pad_before != std::vector<int64_t>(s.nd, 0)) {
      ctx.error("invalid-argument",
                s.name +
                    ": 'padding' must be 0 when pad_mode is not 'pad', got "
                    "padding=" +
                    ctx.arg("padding").repr() + " with pad_mode=" + ctx.arg("pad_mode").repr(),
                "padding");
      return;
    }
    if (group > 0 && in > 0 && out > 0 && (in % group != 0 || out % group != 0)) {
      ctx.error("invalid-argument",
                s.name + ": in_channels (" + std::to_string(in) + ") and out_channels (" +
                    std::to_string(out) + ") must both be divisible by group (" +
                    std::to_string(group) + ")",
                "group");
      return;
    }
    if (in < 0 || out < 0 || group < 0) return;
    std::vector<int64_t> k = w->kernel;
    if (s.weight_4d) k.insert(k.begin(), 1);
    std::vector<int64_t> wshape =
        s.transpose ? cat({in, out / group}, k) : cat({out, in / group}, k);
    DType dt = dtype_or(ctx, "dtype", DType::Float32);
    ctx.add_parameter("weight", Shape::of(wshape), dt, true);
    if (flag(ctx, "has_bias")) ctx.add_parameter("bias", Shape::of({out}), dt, true);
    copy_attrs(ctx, {"in_channels", "out_channels", "kernel_size", "stride", "pad_mode", "padding",
                     "dilation", "group", "has_bias"});
    if (s.transpose && s.nd == 2) copy_attrs(ctx, {"output_padding"});
  };
  const std::string prim = s.transpose ? "Conv2DTranspose" : (s.nd == 3 ? "Conv3D" : "Conv2D");
  auto infer = [s, prim](CallContext& ctx, const TensorType& x) {
    if (!require_rank(ctx, s.name, x.shape, s.nd + 2, s.nd + 2, "x")) return;
    // MindSpore's convolution primitives take only an input of the weight's dtype, a float one
    // (TypeError in PyNative and graph mode: "For primitive[Conv2D], the input type must be
    // same." for an int8 input to a float32 Conv2d).
    const ParamInfo* weight = ctx.param("weight");
    DType wdt =
        weight ? weight->dtype : dtype_value(ctx.init_arg("dtype")).value_or(DType::Float32);
    // Only a non-float input is reported: a float16 input to a float32 layer may be what the
    // program's automatic mixed precision (amp.auto_mixed_precision, Cell.to_float in a training
    // script the analyser does not see) casts to the weight's dtype, so it is not an error
    // whatever the analyser does not know.
    if (x.dtype != DType::Unknown && wdt != DType::Unknown && x.dtype != wdt &&
        !is_floating(x.dtype)) {
      // Conv3D words its TypeError differently ("the input argument[x] must be a type of...").
      const std::string raises =
          prim == "Conv3D" ? "TypeError"
                           : "TypeError: For primitive[" + prim + "], the input type must be same.";
      ctx.error("dtype-error",
                s.name + " receives an input of dtype " + std::string(dtype_name(x.dtype)) +
                    " but its weight is " + std::string(dtype_name(wdt)) + "; MindSpore's " + prim +
                    " requires the same dtype for both (it raises " + raises +
                    "); cast the input first (e.g. x.astype(mindspore." +
                    std::string(dtype_name(wdt)) + "))",
                "x");
      return;
    }
    if (!require_float(ctx, s.name, x.dtype, "x")) return;
    int64_t in = init_i(ctx, "in_channels", -1);
    int64_t out = init_i(ctx, "out_channels", -1);
    int64_t group = init_i(ctx, "group", 1);
    if (in > 0 && !require_dim(ctx, s.name, "input channels", "in_channels", in, x.shape.dims[1],
                               x.shape, "x"))
      return;
    InitArgs args(ctx);
    auto w = read_window(args, s.nd, false, s.nd > 1);
    if (!w) return add_unknown_output(ctx, x.dtype);
    if (s.transpose && s.nd == 2) {
      if (auto op = args.arg("output_padding").as_ints(2)) w->output_padding = *op;
    }
    Shape y = window_shape(x.shape, *w, s.transpose ? WindowOp::ConvTranspose : WindowOp::Conv);
    y.dims[1] = out > 0 ? Dim::known(out) : Dim::unknown();
    ctx.add_output({y, x.dtype});
    double kprod = 1;
    for (int64_t v : w->kernel) kprod *= static_cast<double>(v);
    const Shape& mac_base = s.transpose ? x.shape : y;
    int64_t per =
        s.transpose ? out / std::max<int64_t>(group, 1) : in / std::max<int64_t>(group, 1);
    auto n = known_count(mac_base);
    auto ny = known_count(y);
    if (n && ny && per > 0)
      ctx.set_flops(2.0 * *n * static_cast<double>(per) * kprod +
                    (init_b(ctx, "has_bias") ? *ny : 0.0));
  };
  std::string kind = s.transpose ? "transposed convolution" : "convolution";
  r.add(cell(s.name, prim, conv_init_params(s), {P("x")}, init, on_tensor("x", infer),
             std::to_string(s.nd) + "-D " + kind + "; weight " +
                 (s.transpose ? "(in, out/group, *k)" : "(out, in/group, *k)") +
                 ", no bias unless has_bias=True, pad_mode='same' by default"));
}

// ---- Pooling ----------------------------------------------------------------------------------
struct PoolSpec {
  std::string name;
  std::string op;
  size_t nd;
  bool is_max;
};

void add_pool(Registry& r, const PoolSpec& s) {
  std::vector<ParamSpec> init = {P("kernel_size", "1"), P("stride", "1"), P("pad_mode", "'valid'"),
                                 P("padding", "0")};
  if (s.is_max) {
    init.push_back(P("dilation", "1"));
    init.push_back(P("return_indices", "False"));
  }
  init.push_back(P("ceil_mode", "False"));
  if (!s.is_max) init.push_back(P("count_include_pad", "True"));
  if (!s.is_max && s.nd == 2) init.push_back(P("divisor_override", "None"));
  if (s.nd == 2) init.push_back(P("data_format", "'NCHW'"));
  auto init_fn = [s](InitContext& ctx) {
    auto w = read_window(ctx, s.nd, true, false);
    if (!w) return;
    if (s.is_max && w->mode != PadMode::Pad &&
        (w->pad_before != std::vector<int64_t>(s.nd, 0) ||
         w->dilation != std::vector<int64_t>(s.nd, 1) || flag(ctx, "return_indices") ||
         flag(ctx, "ceil_mode"))) {
      ctx.error("invalid-argument",
                s.name +
                    ": 'padding', 'dilation', 'return_indices' and 'ceil_mode' can only be "
                    "set when pad_mode='pad' (got pad_mode=" +
                    ctx.arg("pad_mode").repr() + ")",
                "pad_mode");
      return;
    }
    copy_attrs(ctx, {"kernel_size", "stride", "pad_mode", "padding", "ceil_mode"});
    // The max pools' dilation (an int or an (h, w) tuple as written: MindSpore's MindIR export
    // writes them differently) and return_indices: the runtime's kernel and the exporters read
    // them; without them a dilated pool ran and exported undilated.
    if (s.is_max) copy_attrs(ctx, {"dilation", "return_indices"});
    // The averages' divisor: the runtime's kernels and the exporters read them.
    if (!s.is_max) copy_attrs(ctx, {"count_include_pad", "divisor_override"});
  };
  auto infer = [s](CallContext& ctx, const TensorType& x) {
    if (!require_rank(ctx, s.name, x.shape, s.nd + 1, s.nd + 2, "x")) return;
    InitArgs args(ctx);
    auto w = read_window(args, s.nd, true, false);
    if (!w) return add_unknown_output(ctx, x.dtype);
    w->ceil_mode = init_b(ctx, "ceil_mode");
    Shape y = window_shape(x.shape, *w, WindowOp::Pool);
    ctx.add_output({y, x.dtype});
    if (s.is_max && init_b(ctx, "return_indices")) ctx.add_output({y, DType::Int64});
    double k = 1;
    for (int64_t v : w->kernel) k *= static_cast<double>(v);
    flops_per_element(ctx, y, k);
  };
  ApiEntry e = cell(s.name, s.op, init, {P("x")}, init_fn, on_tensor("x", infer),
                    std::to_string(s.nd) + "-D " + (s.is_max ? "max" : "average") +
                        " pooling; kernel_size=1, stride=1, pad_mode='valid' by default");
  r.add(std::move(e));
}

void add_adaptive_pool(Registry& r, std::string name, std::string op, size_t nd, bool is_max) {
  std::vector<ParamSpec> init = {P("output_size")};
  if (is_max) init.push_back(P("return_indices", "False"));
  auto infer = [name, nd, is_max](CallContext& ctx, const TensorType& x) {
    // MindSpore 2.10's 1-D adaptive pools (nn/layer/pooling.py, _adaptive_shape_check): a 3-D
    // input whose last dim is at least output_size and divisible by it.
    if (!require_rank(ctx, name, x.shape, nd == 1 ? 3 : nd + 1, nd + 2, "input")) return;
    const ArgValue& os = ctx.init_arg("output_size");
    if (nd == 1 && !adaptive_1d_length_valid(ctx, name, x.shape, os, "input")) return;
    Shape y = x.shape;
    size_t first = y.rank() - nd;
    for (size_t i = 0; i < nd; ++i) {
      const ArgValue* item = os.kind == ArgValue::Kind::Sequence
                                 ? (i < os.items.size() ? &os.items[i] : nullptr)
                                 : &os;
      if (item && item->kind == ArgValue::Kind::Int)
        y.dims[first + i] = Dim::known(item->i);
      else if (!item || !item->is_none())
        y.dims[first + i] = Dim::unknown();  // None keeps the input size
    }
    ctx.add_output({y, x.dtype});
    if (is_max && init_b(ctx, "return_indices")) ctx.add_output({y, DType::Int64});
    flops_per_element(ctx, x.shape, 1);
  };
  auto init_fn = [](InitContext& ctx) { copy_attrs(ctx, {"output_size"}); };
  r.add(cell(std::move(name), std::move(op), init, {P("input")}, init_fn, on_tensor("input", infer),
             "adaptive " + std::string(is_max ? "max" : "average") + " pooling to output_size"));
}

// ---- Dense, normalisation, embedding
// -------------------------------------------------------------
void add_dense(Registry& r) {
  auto init = [](InitContext& ctx) {
    int64_t in = positive(ctx, "in_channels");
    int64_t out = positive(ctx, "out_channels");
    if (in <= 0 || out <= 0) return;
    DType dt = dtype_or(ctx, "dtype", DType::Float32);
    ctx.add_parameter("weight", Shape::of({out, in}), dt, true);
    if (flag(ctx, "has_bias", true)) ctx.add_parameter("bias", Shape::of({out}), dt, true);
    copy_attrs(ctx, {"in_channels", "out_channels", "has_bias", "activation"});
  };
  auto infer = [](CallContext& ctx, const TensorType& x) {
    if (!require_rank(ctx, "nn.Dense", x.shape, 1, 99, "x")) return;
    // Dense's MatMul takes an input of the weight's dtype: an integer input (MnistDataset's
    // uint8 images not rescaled or cast) raises TypeError in PyNative and graph mode ("For
    // 'MatMul', the type of 'x2' should be same as 'x1', but got 'x1' with type Tensor[UInt8]
    // and 'x2' with type Tensor[Float32]", MindSpore 2.10). Float inputs are not reported (amp
    // may cast them, as for the convolutions above).
    const ParamInfo* weight = ctx.param("weight");
    const DType wdt =
        weight ? weight->dtype : dtype_value(ctx.init_arg("dtype")).value_or(DType::Float32);
    if (x.dtype != DType::Unknown && wdt != DType::Unknown && x.dtype != wdt &&
        !is_floating(x.dtype) && is_floating(wdt)) {
      const std::string xn(dtype_name(x.dtype));
      const std::string wn(dtype_name(wdt));
      ctx.error("dtype-error",
                "nn.Dense receives an input of dtype " + xn + " but its weight is " + wn +
                    "; MindSpore's MatMul requires the same dtype for both (it raises "
                    "TypeError: For 'MatMul', the type of 'x2' should be same as 'x1'); cast "
                    "the input first (e.g. x.astype(mindspore." +
                    wn + "))",
                "x");
      return;
    }
    int64_t in = init_i(ctx, "in_channels", -1);
    int64_t out = init_i(ctx, "out_channels", -1);
    if (in > 0 && !require_dim(ctx, "nn.Dense", "input features", "in_channels", in,
                               x.shape.dims.back(), x.shape, "x"))
      return;
    Shape y = x.shape;
    y.dims.back() = out > 0 ? Dim::known(out) : Dim::unknown();
    ctx.add_output({y, x.dtype});
    auto n = known_count(y);
    if (n && in > 0)
      ctx.set_flops(2.0 * *n * static_cast<double>(in) + (init_b(ctx, "has_bias", true) ? *n : 0));
  };
  r.add(cell("nn.Dense", "MatMul",
             {P("in_channels"), P("out_channels"), P("weight_init", "None"), P("bias_init", "None"),
              P("has_bias", "True"), P("activation", "None"), P("dtype", "mindspore.float32")},
             {P("x")}, init, on_tensor("x", infer),
             "fully connected layer y = x W^T + b; weight (out_channels, in_channels); accepts any "
             "rank >= 1 (applied to the last axis)"));
}

void add_batchnorm(Registry& r, std::string name, size_t min_rank, size_t max_rank) {
  std::vector<ParamSpec> params = {P("num_features"),
                                   P("eps", "1e-05"),
                                   P("momentum", "0.9"),
                                   P("affine", "True"),
                                   P("gamma_init", "'ones'"),
                                   P("beta_init", "'zeros'"),
                                   P("moving_mean_init", "'zeros'"),
                                   P("moving_var_init", "'ones'"),
                                   P("use_batch_statistics", "None")};
  if (max_rank < 5) params.push_back(P("data_format", "'NCHW'"));  // BatchNorm3d has none
  params.push_back(P("dtype", "mindspore.float32"));
  auto init = [](InitContext& ctx) {
    int64_t c = positive(ctx, "num_features");
    if (c <= 0) return;
    DType dt = dtype_or(ctx, "dtype", DType::Float32);
    bool affine = flag(ctx, "affine", true);
    ctx.add_parameter("moving_mean", Shape::of({c}), dt, false);
    ctx.add_parameter("moving_variance", Shape::of({c}), dt, false);
    ctx.add_parameter("gamma", Shape::of({c}), dt, affine);
    ctx.add_parameter("beta", Shape::of({c}), dt, affine);
    copy_attrs(ctx, {"num_features", "eps", "momentum"});
  };
  auto infer = [name, min_rank, max_rank](CallContext& ctx, const TensorType& x) {
    if (!require_rank(ctx, name, x.shape, min_rank, max_rank, "x")) return;
    int64_t c = init_i(ctx, "num_features", -1);
    if (c > 0 &&
        !require_dim(ctx, name, "channels", "num_features", c, x.shape.dims[1], x.shape, "x"))
      return;
    ctx.add_output(x);
    flops_per_element(ctx, x.shape, 2);  // folded scale and shift at inference
  };
  r.add(cell(std::move(name), "BatchNorm", params, {P("x")}, init, on_tensor("x", infer),
             "batch normalisation over the channel axis 1; moving_mean/moving_variance are not "
             "trainable"));
}

void add_layernorm(Registry& r) {
  auto init = [](InitContext& ctx) {
    auto shape = ints_arg(ctx, "normalized_shape", 0);
    if (!shape) return;
    DType dt = dtype_or(ctx, "dtype", DType::Float32);
    ctx.add_parameter("gamma", Shape::of(*shape), dt, true);
    ctx.add_parameter("beta", Shape::of(*shape), dt, true);
    copy_attrs(ctx, {"normalized_shape", "begin_norm_axis", "begin_params_axis", "epsilon"});
  };
  auto infer = [](CallContext& ctx, const TensorType& x) {
    auto shape = ctx.init_arg("normalized_shape").as_ints();
    int64_t bpa = init_i(ctx, "begin_params_axis", -1);
    int64_t bna = init_i(ctx, "begin_norm_axis", -1);
    if (!axis_or_error(ctx, "nn.LayerNorm", bna, x.shape.rank(), "input_x")) return;
    auto start = axis_or_error(ctx, "nn.LayerNorm", bpa, x.shape.rank(), "input_x");
    if (!start) return;
    if (shape) {
      size_t tail = x.shape.rank() - *start;
      bool ok = tail == shape->size();
      for (size_t i = 0; ok && i < tail; ++i)
        ok = dims_equal(x.shape.dims[*start + i], Dim::known((*shape)[i])) != Tri::No;
      if (!ok) {
        Shape ns = Shape::of(*shape);
        ctx.error("shape-mismatch",
                  "nn.LayerNorm expects the trailing dimensions (from begin_params_axis=" +
                      std::to_string(bpa) + ") of its input to be normalized_shape=" + ns.str() +
                      ", but receives input of shape " + x.shape.str(),
                  "input_x");
        return;
      }
    }
    ctx.add_output(x);
    flops_per_element(ctx, x.shape, 5);
  };
  r.add(cell("nn.LayerNorm", "LayerNorm",
             {P("normalized_shape"), P("begin_norm_axis", "-1"), P("begin_params_axis", "-1"),
              P("gamma_init", "'ones'"), P("beta_init", "'zeros'"), P("epsilon", "1e-07"),
              P("dtype", "mindspore.float32")},
             {P("input_x")}, init, on_tensor("input_x", infer),
             "layer normalisation; gamma/beta have shape normalized_shape (a tuple)"));
}

void add_groupnorm(Registry& r) {
  auto init = [](InitContext& ctx) {
    int64_t g = positive(ctx, "num_groups");
    int64_t c = positive(ctx, "num_channels");
    if (g <= 0 || c <= 0) return;
    if (c % g != 0) {
      ctx.error("invalid-argument",
                "nn.GroupNorm: num_channels (" + std::to_string(c) +
                    ") must be divisible by num_groups (" + std::to_string(g) + ")",
                "num_groups");
      return;
    }
    DType dt = dtype_or(ctx, "dtype", DType::Float32);
    bool affine = flag(ctx, "affine", true);
    ctx.add_parameter("gamma", Shape::of({c}), dt, affine);
    ctx.add_parameter("beta", Shape::of({c}), dt, affine);
    copy_attrs(ctx, {"num_groups", "num_channels", "eps"});
  };
  auto infer = [](CallContext& ctx, const TensorType& x) {
    if (!require_rank(ctx, "nn.GroupNorm", x.shape, 2, 99, "x")) return;
    int64_t c = init_i(ctx, "num_channels", -1);
    if (c > 0 && !require_dim(ctx, "nn.GroupNorm", "channels", "num_channels", c, x.shape.dims[1],
                              x.shape, "x"))
      return;
    ctx.add_output(x);
    flops_per_element(ctx, x.shape, 5);
  };
  r.add(
      cell("nn.GroupNorm", "GroupNorm",
           {P("num_groups"), P("num_channels"), P("eps", "1e-05"), P("affine", "True"),
            P("gamma_init", "'ones'"), P("beta_init", "'zeros'"), P("dtype", "mindspore.float32")},
           {P("x")}, init, on_tensor("x", infer), "group normalisation over channel axis 1"));
}

void add_embedding(Registry& r) {
  auto init = [](InitContext& ctx) {
    int64_t v = positive(ctx, "vocab_size");
    int64_t e = positive(ctx, "embedding_size");
    if (v <= 0 || e <= 0) return;
    ctx.add_parameter("embedding_table", Shape::of({v, e}), dtype_or(ctx, "dtype", DType::Float32),
                      true);
    copy_attrs(ctx, {"vocab_size", "embedding_size", "use_one_hot", "padding_idx"});
  };
  auto infer = [](CallContext& ctx, const TensorType& ids) {
    if (ids.dtype != DType::Unknown && (!is_integral(ids.dtype) || ids.dtype == DType::Bool)) {
      ctx.error("dtype-error",
                "nn.Embedding expects integer ids, but receives " +
                    std::string(dtype_name(ids.dtype)) + " of shape " + ids.shape.str(),
                "ids");
      return;
    }
    int64_t e = init_i(ctx, "embedding_size", -1);
    Shape y = ids.shape;
    y.dims.push_back(e > 0 ? Dim::known(e) : Dim::unknown());
    ctx.add_output({y, dtype_value(ctx.init_arg("dtype")).value_or(DType::Float32)});
  };
  r.add(cell(
      "nn.Embedding", "Gather",
      {P("vocab_size"), P("embedding_size"), P("use_one_hot", "False"),
       P("embedding_table", "'normal'"), P("dtype", "mindspore.float32"), P("padding_idx", "None")},
      {P("ids")}, init, on_tensor("ids", infer),
      "lookup table; output shape ids.shape + (embedding_size,)"));
}

// ---- Activations and other shape-preserving layers ----------------------------------------------
struct SimpleLayer {
  const char* name;
  const char* op;
  std::vector<ParamSpec> init;
  const char* input;
  bool float_only;        // MindSpore rejects integer inputs
  const char* axis_attr;  // init arg holding an axis to validate, or nullptr
  double flops;           // per element
  const char* summary;
  // Checks of the constructor's arguments at the call, before the shape rule; false: reported.
  ArgCheck check = nullptr;
};

void add_simple(Registry& r, const SimpleLayer& s) {
  std::string name = s.name;
  std::string axis = s.axis_attr ? s.axis_attr : "";
  bool float_only = s.float_only;
  double flops = s.flops;
  auto infer = [name, axis, float_only, flops](CallContext& ctx, const TensorType& x) {
    if (float_only && !require_float(ctx, name, x.dtype)) return;
    if (!axis.empty()) {
      if (auto a = ctx.init_arg(axis).as_int();
          a && !axis_or_error(ctx, name, *a, std::max<size_t>(x.shape.rank(), 1)))
        return;
    }
    ctx.add_output(x);
    flops_per_element(ctx, x.shape, flops);
  };
  std::vector<std::string> attr_names;
  for (const ParamSpec& p : s.init) attr_names.push_back(p.name);
  auto init = [attr_names](InitContext& ctx) {
    for (const std::string& n : attr_names) copy_attrs(ctx, {n});
  };
  InferFn rule = on_tensor(s.input, infer);
  if (s.check) rule = checked_first(s.check, name, std::move(rule));
  r.add(cell(s.name, s.op, s.init, {P(s.input)}, init, std::move(rule), s.summary));
}

void add_activations(Registry& r) {
  const std::vector<SimpleLayer> layers = {
      {"nn.ReLU", "ReLU", {}, "input", false, nullptr, 1, "max(x, 0)"},
      {"nn.ReLU6", "ReLU6", {}, "x", false, nullptr, 1, "min(max(x, 0), 6)"},
      {"nn.GELU",
       "GeLU",
       {P("approximate", "True")},
       "x",
       true,
       nullptr,
       1,
       "Gaussian error linear unit (tanh approximation by default)"},
      {"nn.SiLU", "SiLU", {}, "x", true, nullptr, 1, "x * sigmoid(x)"},
      {"nn.Sigmoid", "Sigmoid", {}, "x", true, nullptr, 1, "logistic sigmoid"},
      {"nn.Tanh", "Tanh", {}, "x", true, nullptr, 1, "hyperbolic tangent"},
      {"nn.Softmax", "Softmax", {P("axis", "-1")}, "input", true, "axis", 3, "softmax over axis"},
      {"nn.LogSoftmax",
       "LogSoftmax",
       {P("axis", "-1")},
       "x",
       true,
       "axis",
       3,
       "log-softmax over axis"},
      {"nn.Softmin", "Softmin", {P("axis", "-1")}, "x", true, "axis", 3, "softmin over axis"},
      {"nn.LeakyReLU",
       "LeakyReLU",
       {P("alpha", "0.2")},
       "x",
       false,
       nullptr,
       1,
       "leaky ReLU with slope alpha (default 0.2)"},
      {"nn.ELU",
       "Elu",
       {P("alpha", "1.0")},
       "x",
       true,
       nullptr,
       1,
       "exponential linear unit",
       [](CallContext& ctx, std::string_view api) { return elu_alpha_supported(ctx, api, true); }},
      {"nn.HSwish", "HSwish", {}, "input", false, nullptr, 1, "hard swish"},
      {"nn.HSigmoid", "HSigmoid", {}, "input", false, nullptr, 1, "hard sigmoid"},
      {"nn.Mish", "Mish", {}, "input_x", true, nullptr, 1, "x * tanh(softplus(x))"},
      {"nn.Tanhshrink", "Tanhshrink", {}, "x", true, nullptr, 1, "x - tanh(x)"},
      {"nn.Dropout1d",
       "Dropout",
       {P("p", "0.5")},
       "x",
       false,
       nullptr,
       0,
       "zeroes whole channels with probability p in training (identity in inference)"},
      {"nn.Dropout2d",
       "Dropout2D",
       {P("p", "0.5")},
       "x",
       false,
       nullptr,
       0,
       "zeroes whole channels with probability p in training (identity in inference)"},
  };
  for (const SimpleLayer& l : layers) add_simple(r, l);

  auto prelu_init = [](InitContext& ctx) {
    int64_t c = positive(ctx, "channel");
    if (c > 0) ctx.add_parameter("w", Shape::of({c}), DType::Float32, true);
  };
  auto prelu = [](CallContext& ctx, const TensorType& x) {
    int64_t c = init_i(ctx, "channel", 1);
    if (c > 1 && x.shape.rank() >= 2 &&
        !require_dim(ctx, "nn.PReLU", "channels", "channel", c, x.shape.dims[1], x.shape, "x"))
      return;
    ctx.add_output(x);
    flops_per_element(ctx, x.shape, 1);
  };
  r.add(cell("nn.PReLU", "PReLU", {P("channel", "1"), P("w", "0.25")}, {P("x")}, prelu_init,
             on_tensor("x", prelu), "parametric ReLU; learnable slope w of shape (channel,)"));

  auto dropout_init = [](InitContext& ctx) {
    const ArgValue& keep = ctx.arg("keep_prob");
    const ArgValue& p = ctx.arg("p");
    if (!p.is_none() && !p.is_missing()) {
      if (auto v = p.as_float(); v && (*v < 0 || *v >= 1))
        ctx.error("invalid-argument", "nn.Dropout: 'p' must be in [0, 1), got " + p.repr(), "p");
      copy_attrs(ctx, {"p"});
    } else if (auto v = keep.as_float()) {
      if (*v <= 0 || *v > 1)
        ctx.error("invalid-argument",
                  "nn.Dropout: 'keep_prob' must be in (0, 1], got " + keep.repr(), "keep_prob");
      ctx.set_attr("p", 1.0 - *v);
    }
  };
  auto identity = [](CallContext& ctx, const TensorType& x) { ctx.add_output(x); };
  ParamSpec keep = P("keep_prob", "0.5");
  keep.deprecated = "pass p=1-keep_prob instead (p is the probability of dropping an element)";
  r.add(cell("nn.Dropout", "Dropout", {keep, P("p", "None"), P("dtype", "mindspore.float32")},
             {P("x")}, dropout_init, on_tensor("x", identity),
             "randomly zeroes elements with probability p in training (identity in inference)"));

  r.add(cell("nn.Identity", "Identity", {VAR("args"), KWARGS("kwargs")}, {P("input")}, nullptr,
             on_tensor("input", identity), "returns its input unchanged"));

  auto flatten = [](CallContext& ctx, const TensorType& x) {
    auto y = flatten_shape(ctx, "nn.Flatten", x.shape, init_i(ctx, "start_dim", 1),
                           init_i(ctx, "end_dim", -1));
    if (y) ctx.add_output({*y, x.dtype});
  };
  r.add(cell(
      "nn.Flatten", "Flatten", {P("start_dim", "1"), P("end_dim", "-1")}, {P("x")},
      [](InitContext& ctx) {
        copy_attrs(ctx, {"start_dim", "end_dim"});
      },
      on_tensor("x", flatten), "flattens dims start_dim..end_dim (default 1..-1)"));
  // nn.Upsample(size, scale_factor, mode, align_corners, recompute_scale_factor): MindSpore 2.10's
  // construct is ops.interpolate on the constructor's arguments (nn/layer/image.py), and so is
  // its rule here: the same checks, operator per mode and rank, and output shape.
  ApiEntry upsample = cell(
      "nn.Upsample", "ResizeNearestNeighborV2",
      {P("size", "None"), P("scale_factor", "None"), P("mode", "'nearest'"),
       P("align_corners", "None"), P("recompute_scale_factor", "None")},
      {P("x")},
      [](InitContext& ctx) {
        copy_attrs(ctx,
                   {"size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"});
      },
      on_tensor("x",
                [](CallContext& ctx, const TensorType& x) {
                  const InitArgs init(ctx);
                  interpolate_rule(ctx, init, "nn.Upsample", x);
                }),
      "resizes the spatial dims to size or by scale_factor (ops.interpolate)");
  upsample.variants = {"UpsampleNearest3D", "ResizeLinear1D",      "ResizeBilinearV2",
                       "ResizeBicubic",     "UpsampleTrilinear3D", "AdaptiveAvgPool1D",
                       "AdaptiveAvgPool2D", "AdaptiveAvgPool3D"};
  r.add(std::move(upsample));
  // nn.Pad(paddings, mode): one (before, after) pair per input dimension, from the first; the
  // number of pairs must equal the rank (MindSpore 2.10: "the length of 'paddings' must be
  // equal to the rank of 'input_x'").
  auto pad = [](CallContext& ctx, const TensorType& x) {
    const ArgValue& p = ctx.init_arg("paddings");
    if (p.kind != ArgValue::Kind::Sequence) return add_unknown_output(ctx, x.dtype);
    std::vector<std::pair<Dim, Dim>> pairs;
    for (const ArgValue& pair : p.items) {
      auto v = pair.as_dims(2);
      if (!v) return add_unknown_output(ctx, x.dtype);
      pairs.emplace_back((*v)[0], (*v)[1]);
    }
    if (pairs.size() != x.shape.rank()) {
      ctx.error("shape-mismatch",
                "nn.Pad: the length of paddings (" + std::to_string(pairs.size()) +
                    ") must equal the rank of the input " + x.shape.str(),
                "paddings");
      return;
    }
    Shape out = x.shape;
    std::vector<int64_t> flat;  // the kernel's `paddings`: before/after of each dim, from the first
    for (size_t i = 0; i < pairs.size(); ++i) {
      out.dims[i] = out.dims[i] + pairs[i].first + pairs[i].second;
      for (const Dim& d : {pairs[i].first, pairs[i].second})
        if (d.is_known()) flat.push_back(d.value());
    }
    if (flat.size() == 2 * pairs.size()) ctx.set_attr("paddings", std::move(flat));
    ctx.add_output({out, x.dtype});
  };
  r.add(cell(
      "nn.Pad", "Pad", {P("paddings"), P("mode", "'CONSTANT'")}, {P("x")},
      [](InitContext& ctx) {
        copy_attrs(ctx, {"paddings", "mode"});
      },
      on_tensor("x", pad), "pads each dimension by (before, after)"));
}

// ---- Padding layers -----------------------------------------------------------------------------
// nn.ConstantPad1d/2d/3d(padding, value), nn.ZeroPad2d(padding), nn.ReflectionPad1d/2d/3d and
// nn.ReplicationPad1d/2d/3d(padding), MindSpore 2.10's nn/layer/padding.py: an int pads the last
// `nd` dims by that much on both sides; a tuple gives (before, after) pairs from the last dim
// backwards, as ops.pad takes them. The node is Pad with `padding` (those pairs), `mode` and
// `value`, which the runtime, the gradient and export read. Messages and limits measured with
// MindSpore 2.10 (constant: PadV3's; reflect: MirrorPad's; replicate: PadV3 edge mode's).
struct PadLayer {
  const char* name;
  size_t nd;
  const char* mode;  // "constant", "reflect", "replicate"
  bool has_value;
};

void add_padding(Registry& r, const PadLayer& s) {
  const std::string name = s.name;
  const size_t nd = s.nd;
  const std::string mode = s.mode;
  auto init = [name, nd, mode](InitContext& ctx) {
    const ArgValue& p = ctx.arg("padding");
    std::vector<int64_t> pairs;
    if (auto one = p.as_int(); one && p.kind == ArgValue::Kind::Int) {
      pairs.assign(2 * nd, *one);
    } else if (auto many = p.as_ints(); many && p.kind == ArgValue::Kind::Sequence) {
      const size_t n = many->size();
      if (n % 2 != 0) {
        ctx.error("invalid-argument",
                  mode == "constant"
                      ? "For '" + name +
                            "', the length of parameter 'padding' with tuple type must be a "
                            "multiple of 2, but got " +
                            std::to_string(n)
                      : "For '" + name +
                            "' the length of input 'padding' must be divisible by 2, but got "
                            "padding of length " +
                            std::to_string(n) + ".",
                  "padding");
        return;
      }
      if (mode == "constant" && (nd == 1 ? n != 2 : n > 2 * nd)) {
        ctx.error("invalid-argument",
                  "For '" + name + "', the length of parameter 'padding' with tuple type must " +
                      (nd == 1 ? std::string("equal to 2.")
                               : "no more than " + std::to_string(2 * nd) + ".") +
                      "but got " + std::to_string(n),
                  "padding");
        return;
      }
      pairs = *many;
    } else {
      return;  // not known here: the call's shape is unknown, nothing is reported
    }
    ctx.set_attr("padding", pairs);
    ctx.set_attr("mode", mode);
    if (mode == "constant") {
      const ArgValue& v = ctx.arg("value");
      if (auto f = v.as_float()) ctx.set_attr("value", *f);
    }
  };
  auto infer = [name, mode](CallContext& ctx, const TensorType& x) {
    const AttrValue* a = ctx.init_attr("padding");
    const auto* pairs = a != nullptr ? std::get_if<std::vector<int64_t>>(a) : nullptr;
    if (pairs == nullptr || !x.shape.ranked) return add_unknown_output(ctx, x.dtype);
    const size_t rank = x.shape.rank();
    const size_t n = pairs->size();
    if (mode == "constant" && n / 2 > rank) {
      ctx.error("shape-mismatch",
                "For 'PadV3' constant mode, paddings length too large for input dims, the pad "
                "dims must be less than or equal to " +
                    std::to_string(rank));
      return;
    }
    if (mode == "replicate") {
      if (rank < 3) {
        ctx.error("shape-mismatch",
                  "For primitive[PadV3], the input dims for edge, reflect or circular mode must "
                  "be greater than or equal to 3, but got " +
                      std::to_string(rank) + ".");
        return;
      }
      if (n / 2 + 2 != rank) {
        ctx.error("shape-mismatch",
                  "For primitive[PadV3], the input dims when padding's size equal " +
                      std::to_string(n) + " must be equal to " + std::to_string(n / 2 + 2) +
                      ", but got " + std::to_string(rank) + ".");
        return;
      }
    }
    if (n / 2 > rank) return add_unknown_output(ctx, x.dtype);
    Shape out = x.shape;
    for (size_t i = 0; i < n / 2; ++i) {
      Dim& d = out.dims[rank - 1 - i];
      const int64_t before = (*pairs)[2 * i];
      const int64_t after = (*pairs)[2 * i + 1];
      if (!d.is_known()) {
        d = before + after == 0 ? d : Dim::unknown();
        continue;
      }
      const int64_t len = d.value();
      if (mode == "reflect" && std::max(before, after) >= len) {
        const int64_t most = std::max(before, after);
        ctx.error("shape-mismatch",
                  "For 'MirrorPad', paddings must be no greater than the dimension size: [" +
                      std::to_string(most) + "], [" + std::to_string(most) + "] not less than [" +
                      std::to_string(len) + "]");
        return;
      }
      const int64_t size = len + before + after;
      if (size <= 0) {
        ctx.error("shape-mismatch",
                  "For primitive[PadV3], the output size must be greater than 0, but got " +
                      std::to_string(size) + ".");
        return;
      }
      d = Dim::known(size);
    }
    ctx.add_output({out, x.dtype});
  };
  std::vector<ParamSpec> params{P("padding")};
  if (s.has_value) params.push_back(P("value"));
  r.add(cell(name, "Pad", std::move(params), {P("x")}, init, on_tensor("x", infer),
             mode == "constant" ? "pads the last dims with a constant"
                                : "pads the last dims by " + mode + "ing the edge"));
}

// ---- Attention and recurrent layers -------------------------------------------------------------
void add_attention(Registry& r) {
  auto init = [](InitContext& ctx) {
    int64_t e = positive(ctx, "embed_dim");
    int64_t h = positive(ctx, "num_heads");
    if (e <= 0 || h <= 0) return;
    if (e % h != 0) {
      ctx.error("invalid-argument",
                "nn.MultiheadAttention: embed_dim (" + std::to_string(e) +
                    ") must be divisible by num_heads (" + std::to_string(h) + ")",
                "num_heads");
      return;
    }
    int64_t kd = ctx.arg("kdim").as_int().value_or(e);
    int64_t vd = ctx.arg("vdim").as_int().value_or(e);
    DType dt = dtype_or(ctx, "dtype", DType::Float32);
    if (kd == e && vd == e) {
      ctx.add_parameter("in_proj_weight", Shape::of({3 * e, e}), dt, true);
    } else {
      ctx.add_parameter("q_proj_weight", Shape::of({e, e}), dt, true);
      ctx.add_parameter("k_proj_weight", Shape::of({e, kd}), dt, true);
      ctx.add_parameter("v_proj_weight", Shape::of({e, vd}), dt, true);
    }
    bool bias = flag(ctx, "has_bias", true);
    if (bias) ctx.add_parameter("in_proj_bias", Shape::of({3 * e}), dt, true);
    if (flag(ctx, "add_bias_kv")) {
      ctx.add_parameter("bias_k", Shape::of({1, 1, e}), dt, true);
      ctx.add_parameter("bias_v", Shape::of({1, 1, e}), dt, true);
    }
    ctx.add_parameter("out_proj.weight", Shape::of({e, e}), dt, true);
    if (bias) ctx.add_parameter("out_proj.bias", Shape::of({e}), dt, true);
    copy_attrs(ctx, {"embed_dim", "num_heads", "batch_first", "kdim", "vdim"});
  };
  auto infer = [](CallContext& ctx) {
    constexpr std::string_view api = "nn.MultiheadAttention";
    auto q = tensor_arg(ctx, "query");
    auto k = tensor_arg(ctx, "key");
    auto v = tensor_arg(ctx, "value");
    bool need = flag(ctx, "need_weights", true);
    if (!q || !k || !v || !q->shape.ranked || !k->shape.ranked || !v->shape.ranked) {
      if (ctx.failed()) return;
      for (int i = 0; i < (need ? 2 : 1); ++i)
        add_unknown_output(ctx, q ? q->dtype : DType::Unknown);
      return;
    }
    int64_t e = init_i(ctx, "embed_dim", -1);
    int64_t heads = init_i(ctx, "num_heads", 1);
    int64_t kd = ctx.init_arg("kdim").as_int().value_or(e);
    int64_t vd = ctx.init_arg("vdim").as_int().value_or(e);
    bool bf = init_b(ctx, "batch_first");
    for (auto [t, name] : {std::pair{&*q, "query"}, {&*k, "key"}, {&*v, "value"}})
      if (!require_rank(ctx, api, t->shape, 2, 3, name)) return;
    if (e > 0 && (!require_dim(ctx, api, "query features", "embed_dim", e, q->shape.dims.back(),
                               q->shape, "query") ||
                  !require_dim(ctx, api, "key features", "kdim", kd, k->shape.dims.back(), k->shape,
                               "key") ||
                  !require_dim(ctx, api, "value features", "vdim", vd, v->shape.dims.back(),
                               v->shape, "value")))
      return;
    bool batched = q->shape.rank() == 3;
    Dim L = q->shape.dims[batched && bf ? 1 : 0];
    Dim S = k->shape.dims[batched && bf ? 1 : 0];
    Dim N = batched ? q->shape.dims[bf ? 0 : 1] : Dim::known(1);
    int64_t extra = (init_b(ctx, "add_bias_kv") ? 1 : 0) + (init_b(ctx, "add_zero_attn") ? 1 : 0);
    if (extra && !S.is_unknown()) S = S + Dim::known(extra);
    ctx.add_output(*q);
    if (need) {
      Shape w;
      if (batched) w.dims.push_back(N);
      if (!flag(ctx, "average_attn_weights", true)) w.dims.push_back(Dim::known(heads));
      w.dims.push_back(L);
      w.dims.push_back(S);
      ctx.add_output({w, q->dtype});
    }
    if (L.is_known() && S.is_known() && N.is_known() && e > 0) {
      double l = static_cast<double>(L.value()), s = static_cast<double>(S.value()),
             n = static_cast<double>(N.value()), ed = static_cast<double>(e);
      double proj = 2 * n * (l * ed * ed + s * ed * static_cast<double>(kd + vd) + l * ed * ed);
      double attn = 2 * n * l * s * ed * 2;
      ctx.set_flops(proj + attn);
    }
  };
  ApiEntry e =
      cell("nn.MultiheadAttention", "MultiheadAttention",
           {P("embed_dim"), P("num_heads"), P("dropout", "0.0"), P("has_bias", "True"),
            P("add_bias_kv", "False"), P("add_zero_attn", "False"), P("kdim", "None"),
            P("vdim", "None"), P("batch_first", "False"), P("dtype", "mindspore.float32")},
           {P("query"), P("key"), P("value"), P("key_padding_mask", "None"),
            P("need_weights", "True"), P("attn_mask", "None"), P("average_attn_weights", "True")},
           init, infer,
           "multi-head attention; returns (attn_output, attn_weights), or (attn_output,) when "
           "need_weights=False; sequence-first unless batch_first=True");
  e.returns_tuple = true;
  r.add(std::move(e));
}

struct RnnSpec {
  std::string name;
  std::string op;
  int64_t gates;
  bool has_cell_state;
};

void add_rnn(Registry& r, const RnnSpec& s) {
  auto init = [s](InitContext& ctx) {
    int64_t in = positive(ctx, "input_size");
    int64_t h = positive(ctx, "hidden_size");
    int64_t layers = positive(ctx, "num_layers");
    if (in <= 0 || h <= 0 || layers <= 0) return;
    if (s.name == "nn.RNN") {
      auto nl = ctx.arg("nonlinearity").as_str();
      if (nl && *nl != "tanh" && *nl != "relu")
        ctx.error("invalid-argument",
                  "nn.RNN: 'nonlinearity' must be 'tanh' or 'relu', got '" + *nl + "'",
                  "nonlinearity");
    }
    int64_t dirs = flag(ctx, "bidirectional") ? 2 : 1;
    DType dt = dtype_or(ctx, "dtype", DType::Float32);
    std::vector<std::string> kinds = {"weight_ih", "weight_hh"};
    if (flag(ctx, "has_bias", true)) {
      kinds.push_back("bias_ih");
      kinds.push_back("bias_hh");
    }
    for (const std::string& kind : kinds)
      for (int64_t l = 0; l < layers; ++l)
        for (int64_t d = 0; d < dirs; ++d) {
          std::string name = kind + "_l" + std::to_string(l) + (d ? "_reverse" : "");
          int64_t cols = kind == "weight_ih" ? (l == 0 ? in : h * dirs) : h;
          Shape shape = kind.starts_with("weight") ? Shape::of({s.gates * h, cols})
                                                   : Shape::of({s.gates * h});
          ctx.add_parameter(name, shape, dt, true);
        }
    copy_attrs(ctx, {"input_size", "hidden_size", "num_layers", "batch_first", "bidirectional",
                     "has_bias"});
    if (s.name == "nn.RNN") copy_attrs(ctx, {"nonlinearity"});
  };
  auto infer = [s](CallContext& ctx, const TensorType& x) {
    if (!require_rank(ctx, s.name, x.shape, 3, 3, "x")) return;
    int64_t in = init_i(ctx, "input_size", -1);
    int64_t h = init_i(ctx, "hidden_size", -1);
    int64_t layers = init_i(ctx, "num_layers", 1);
    int64_t dirs = init_b(ctx, "bidirectional") ? 2 : 1;
    bool bf = init_b(ctx, "batch_first");
    if (in > 0 && !require_dim(ctx, s.name, "input features", "input_size", in, x.shape.dims.back(),
                               x.shape, "x"))
      return;
    Dim T = x.shape.dims[bf ? 1 : 0];
    Dim N = x.shape.dims[bf ? 0 : 1];
    Dim H = h > 0 ? Dim::known(h) : Dim::unknown();
    Shape out = x.shape;
    out.dims.back() = h > 0 ? Dim::known(h * dirs) : Dim::unknown();
    Shape state({Dim::known(layers * dirs), N, H});
    ctx.add_output({out, x.dtype});
    ctx.add_output({state, x.dtype});
    if (s.has_cell_state) ctx.add_output({state, x.dtype});
    ctx.set_attr("tuple_structure", std::string(s.has_cell_state ? "(0, (1, 2))" : "(0, 1)"));
    if (T.is_known() && N.is_known() && h > 0 && in > 0) {
      double flops = 0;
      for (int64_t l = 0; l < layers; ++l) {
        double cols = static_cast<double>((l == 0 ? in : h * dirs) + h);
        flops += 2.0 * static_cast<double>(s.gates * h) * cols * static_cast<double>(dirs);
      }
      ctx.set_flops(flops * static_cast<double>(T.value() * N.value()));
    }
  };
  std::vector<ParamSpec> init_params = {P("input_size"),
                                        P("hidden_size"),
                                        P("num_layers", "1"),
                                        P("has_bias", "True"),
                                        P("batch_first", "False"),
                                        P("dropout", "0.0"),
                                        P("bidirectional", "False"),
                                        P("dtype", "mindspore.float32")};
  if (s.name == "nn.RNN") init_params.push_back(KW("nonlinearity", "'tanh'"));
  ApiEntry e = cell(s.name, s.op, init_params, {P("x"), P("hx", "None"), P("seq_length", "None")},
                    init, on_tensor("x", infer, s.has_cell_state ? 3 : 2),
                    s.has_cell_state
                        ? "LSTM; returns (output, (h_n, c_n)); outputs are flattened as output, "
                          "h_n, c_n with node attr tuple_structure='(0, (1, 2))'"
                        : "recurrent layer; returns (output, h_n)");
  e.returns_tuple = true;
  r.add(std::move(e));
}

// Names people reach for that do not exist in MindSpore: construction fails with a pointer to
// the right API (suggest() lists the replacement first).
void add_mistakes(Registry& r) {
  const std::vector<std::pair<const char*, const char*>> mistakes = {
      {"nn.Linear", "nn.Dense"},          {"nn.Sequential", "nn.SequentialCell"},
      {"nn.ModuleList", "nn.CellList"},   {"nn.Module", "nn.Cell"},
      {"nn.BatchNorm", "nn.BatchNorm2d"}, {"nn.Conv2D", "nn.Conv2d"},
      {"nn.MaxPool2D", "nn.MaxPool2d"},   {"nn.AvgPool2D", "nn.AvgPool2d"},
  };
  for (auto [wrong, right] : mistakes) {
    ApiEntry e;
    e.name = wrong;
    e.kind = ApiKind::CellClass;
    e.init_params = {VAR("args"), KWARGS("kwargs")};
    e.call_params = {VAR("args")};
    e.replacement = right;
    e.summary = std::string("does not exist in MindSpore; use ") + right;
    e.init = [w = std::string(wrong), rr = std::string(right)](InitContext& ctx) {
      ctx.error("unknown-api", w + " does not exist in MindSpore; use " + rr);
    };
    e.infer = [](CallContext& ctx) { add_unknown_output(ctx); };
    r.add(std::move(e));
  }
}

}  // namespace

void register_nn_layers(Registry& r) {
  add_conv(r, {"nn.Conv1d", 1, false, true, ""});
  add_conv(r, {"nn.Conv2d", 2, false, false, "NCHW"});
  add_conv(r, {"nn.Conv3d", 3, false, false, "NCDHW"});
  add_conv(r, {"nn.Conv1dTranspose", 1, true, true, ""});
  add_conv(r, {"nn.Conv2dTranspose", 2, true, false, ""});
  add_pool(r, {"nn.MaxPool1d", "MaxPool", 1, true});
  add_pool(r, {"nn.MaxPool2d", "MaxPool", 2, true});
  add_pool(r, {"nn.AvgPool1d", "AvgPool", 1, false});
  add_pool(r, {"nn.AvgPool2d", "AvgPool", 2, false});
  add_adaptive_pool(r, "nn.AdaptiveAvgPool1d", "AdaptiveAvgPool1D", 1, false);
  add_adaptive_pool(r, "nn.AdaptiveAvgPool2d", "AdaptiveAvgPool2D", 2, false);
  add_adaptive_pool(r, "nn.AdaptiveMaxPool2d", "AdaptiveMaxPool2D", 2, true);
  add_dense(r);
  add_batchnorm(r, "nn.BatchNorm1d", 2, 3);
  add_batchnorm(r, "nn.BatchNorm2d", 4, 4);
  add_batchnorm(r, "nn.BatchNorm3d", 5, 5);
  add_layernorm(r);
  add_groupnorm(r);
  add_embedding(r);
  add_activations(r);
  add_attention(r);
  add_rnn(r, {"nn.LSTM", "LSTM", 4, true});
  add_rnn(r, {"nn.GRU", "GRU", 3, false});
  add_rnn(r, {"nn.RNN", "RNN", 1, false});
  for (const PadLayer& p : {PadLayer{"nn.ConstantPad1d", 1, "constant", true},
                            PadLayer{"nn.ConstantPad2d", 2, "constant", true},
                            PadLayer{"nn.ConstantPad3d", 3, "constant", true},
                            PadLayer{"nn.ZeroPad2d", 2, "constant", false},
                            PadLayer{"nn.ReflectionPad1d", 1, "reflect", false},
                            PadLayer{"nn.ReflectionPad2d", 2, "reflect", false},
                            PadLayer{"nn.ReflectionPad3d", 3, "reflect", false},
                            PadLayer{"nn.ReplicationPad1d", 1, "replicate", false},
                            PadLayer{"nn.ReplicationPad2d", 2, "replicate", false},
                            PadLayer{"nn.ReplicationPad3d", 3, "replicate", false}}) {
    add_padding(r, p);
  }
  add_mistakes(r);
}

}  // namespace graphcore
