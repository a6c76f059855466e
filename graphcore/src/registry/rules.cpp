#include "registry/rules.h"

#include "graphcore/checked.h"
#include "graphcore/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace graphcore::rules {

namespace {

using text::lower;

// d + c for a possibly negative constant (Dim cannot hold negative constants).
Dim add_const(Dim d, int64_t c) {
  if (d.is_unknown()) return d;
  if (d.is_known()) {
    const auto v = checked_add(d.value(), c);
    return v && *v >= 0 ? Dim::known(*v) : Dim::unknown();
  }
  if (c == 0) return d;
  if (c == std::numeric_limits<int64_t>::min()) return Dim::unknown();  // -c overflows
  return c > 0 ? d + Dim::known(c) : d - Dim::known(-c);
}

int64_t floor_div_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t ceil_div_i(int64_t a, int64_t b) { return -floor_div_i(-a, b); }

std::string shapes_str(const std::vector<Shape>& shapes) {
  std::string out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i) out += ", ";
    out += shapes[i].str();
  }
  return out;
}

}  // namespace

// ---- Parameter specs --------------------------------------------------------------------------
ParamSpec P(std::string name, std::string default_src) {
  ParamSpec p;
  p.name = std::move(name);
  p.default_src = std::move(default_src);
  return p;
}
ParamSpec KW(std::string name, std::string default_src) {
  ParamSpec p = P(std::move(name), std::move(default_src));
  p.kind = ParamKind::KeywordOnly;
  return p;
}
ParamSpec VAR(std::string name) {
  ParamSpec p = P(std::move(name));
  p.kind = ParamKind::VarPositional;
  return p;
}
ParamSpec KWARGS(std::string name) {
  ParamSpec p = P(std::move(name));
  p.kind = ParamKind::VarKeyword;
  return p;
}
ParamSpec since(Version v, ParamSpec p) {
  p.versions.since = v;
  return p;
}
ParamSpec until(Version v, ParamSpec p) {
  p.versions.until = v;
  return p;
}

// ---- Reading arguments ------------------------------------------------------------------------
bool is_scalar(const ArgValue& v) {
  using K = ArgValue::Kind;
  return v.kind == K::Bool || v.kind == K::Int || v.kind == K::Float || v.kind == K::SymInt;
}

std::optional<TensorType> tensor_value(const ArgValue& v) {
  using K = ArgValue::Kind;
  switch (v.kind) {
    case K::Tensor:
      return v.tensor;
    case K::Bool:
      return TensorType{Shape{}, DType::Bool};
    case K::Int:
    case K::SymInt:
      return TensorType{Shape{}, DType::Int64};
    case K::Float:
      return TensorType{Shape{}, DType::Float32};
    default:
      return std::nullopt;
  }
}

std::optional<TensorType> tensor_arg(ContextBase& ctx, std::string_view name) {
  const ArgValue& v = ctx.arg(name);
  if (auto t = tensor_value(v)) return t;
  using K = ArgValue::Kind;
  if (v.kind == K::Str || v.kind == K::Sequence || v.kind == K::DType || v.kind == K::Cell) {
    ctx.error("invalid-argument",
              "expected a Tensor for '" + std::string(name) + "', got " + v.repr(), name);
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> ints_arg(ContextBase& ctx, std::string_view name, size_t n) {
  const ArgValue& v = ctx.arg(name);
  if (v.is_unknown() || v.is_missing() || v.kind == ArgValue::Kind::SymInt) return std::nullopt;
  if (auto ints = v.as_ints(n)) return ints;
  if (v.kind == ArgValue::Kind::Sequence &&
      std::any_of(v.items.begin(), v.items.end(), [](const ArgValue& i) {
        return i.is_unknown() || i.kind == ArgValue::Kind::SymInt;
      }))
    return std::nullopt;
  std::string want = n ? "an int or a tuple of " + std::to_string(n) + " ints" : "ints";
  ctx.error("invalid-argument", "'" + std::string(name) + "' must be " + want + ", got " + v.repr(),
            name);
  return std::nullopt;
}

std::optional<std::vector<int64_t>> axes_value(const ArgValue& v) {
  using K = ArgValue::Kind;
  if (v.kind == K::None || v.kind == K::Missing) return std::vector<int64_t>{};
  if (v.kind == K::Int) return std::vector<int64_t>{v.i};
  if (v.kind == K::Sequence) return v.as_ints();
  return std::nullopt;
}

std::optional<std::vector<Dim>> shape_value(const ArgValue& v) {
  using K = ArgValue::Kind;
  auto one = [](const ArgValue& a) -> std::optional<Dim> {
    if (a.kind == K::Int) return a.i >= 0 ? Dim::known(a.i) : Dim::unknown();  // -1 marker
    if (a.kind == K::SymInt) return a.dim;
    if (a.kind == K::Unknown) return Dim::unknown();
    return std::nullopt;
  };
  std::vector<Dim> out;
  if (v.kind == K::Sequence) {
    for (const ArgValue& item : v.items) {
      auto d = one(item);
      if (!d) return std::nullopt;
      out.push_back(*d);
    }
    return out;
  }
  // An unknown value may be an int or a whole tuple: the rank is unknown too.
  if (v.kind == K::Unknown) return std::nullopt;
  if (auto d = one(v)) return std::vector<Dim>{*d};
  return std::nullopt;
}

const ArgValue& first_arg(const ContextBase& ctx, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (ctx.arg(n).explicit_arg && !ctx.arg(n).is_none()) return ctx.arg(n);
  for (std::string_view n : names) {
    const ArgValue& v = ctx.arg(n);
    if (!v.is_missing() && !v.is_none()) return v;
  }
  static const ArgValue kMissing;
  return kMissing;
}

std::optional<DType> dtype_value(const ArgValue& v) {
  if (v.kind == ArgValue::Kind::DType) return v.dtype;
  if (v.kind == ArgValue::Kind::Str) return dtype_from_name(v.s);
  return std::nullopt;
}

bool flag(const ContextBase& ctx, std::string_view name, bool fallback) {
  return ctx.arg(name).as_bool().value_or(fallback);
}

// ---- Outputs ----------------------------------------------------------------------------------
void add_unknown_output(CallContext& ctx, DType dtype) {
  ctx.add_output(TensorType{Shape::unranked(), dtype});
}

std::optional<double> known_count(const Shape& shape) {
  if (!shape.ranked) return std::nullopt;
  double n = 1;
  for (const Dim& d : shape.dims) {
    if (!d.is_known()) return std::nullopt;
    n *= static_cast<double>(d.value());
  }
  return n;
}

void flops_per_element(CallContext& ctx, const Shape& shape, double per_element) {
  if (auto n = known_count(shape)) ctx.set_flops(*n * per_element);
}

// ---- Checks -----------------------------------------------------------------------------------
bool adaptive_1d_length_valid(ContextBase& ctx, std::string_view api, const Shape& x,
                              const ArgValue& output_size, std::string_view arg) {
  if (output_size.kind != ArgValue::Kind::Int || output_size.i <= 0 || !x.ranked || x.rank() == 0 ||
      !x.dims.back().is_known())
    return true;
  const int64_t len = x.dims.back().value(), os = output_size.i;
  if (len >= os && len % os == 0) return true;
  ctx.error("shape-mismatch",
            std::string(api) + ": the input's last dimension (" + std::to_string(len) +
                ") must be " + (len < os ? "at least" : "divisible by") + " output_size (" +
                std::to_string(os) + "); input " + x.str(),
            arg);
  return false;
}

bool require_rank(ContextBase& ctx, std::string_view api, const Shape& s, size_t min_rank,
                  size_t max_rank, std::string_view arg) {
  if (!s.ranked || (s.rank() >= min_rank && s.rank() <= max_rank)) return true;
  std::string want = min_rank == max_rank ? std::to_string(min_rank)
                     : max_rank > 64      ? "at least " + std::to_string(min_rank)
                                     : std::to_string(min_rank) + " to " + std::to_string(max_rank);
  ctx.error("rank-error",
            std::string(api) + " expects an input of rank " + want + ", but receives rank " +
                std::to_string(s.rank()) + " (shape " + s.str() + ")",
            arg);
  return false;
}

bool require_dim(ContextBase& ctx, std::string_view api, std::string_view what,
                 std::string_view param, int64_t expected, Dim actual, const Shape& shape,
                 std::string_view arg) {
  if (dims_equal(actual, Dim::known(expected)) != Tri::No) return true;
  ctx.error("shape-mismatch",
            std::string(api) + " expects " + std::to_string(expected) + " " + std::string(what) +
                " (" + std::string(param) + "=" + std::to_string(expected) + "), but receives " +
                actual.str() + " from input of shape " + shape.str(),
            arg);
  if (actual.is_known()) ctx.suggest_init_value(param, std::to_string(actual.value()));
  return false;
}

bool require_float(ContextBase& ctx, std::string_view api, DType t, std::string_view arg) {
  if (t == DType::Unknown || is_floating(t) || t == DType::Complex64) return true;
  ctx.error("dtype-error",
            std::string(api) + " requires a floating-point input, but receives " +
                std::string(dtype_name(t)) + "; cast it first (e.g. x.astype(mindspore.float32))",
            arg);
  return false;
}

bool elu_alpha_supported(CallContext& ctx, std::string_view api, bool from_init) {
  const ArgValue& alpha = from_init ? ctx.init_arg("alpha") : ctx.arg("alpha");
  const std::string_view at = from_init ? std::string_view{} : std::string_view{"alpha"};
  std::string problem;
  if (alpha.kind == ArgValue::Kind::Int) {
    problem = "takes a float `alpha`, but receives the int " + alpha.repr();
  } else if (alpha.kind == ArgValue::Kind::Float && alpha.f != 1.0) {
    problem = "supports only alpha=1.0, but receives " + alpha.repr();
  }
  if (problem.empty()) return true;
  ctx.error("invalid-argument", std::string(api) + " " + problem + " (MindSpore's Elu kernel)", at);
  if (from_init) ctx.suggest_init_value("alpha", "1.0");
  return false;
}

InferFn checked_first(ArgCheck check, std::string api, InferFn rule) {
  return [check, api = std::move(api), rule = std::move(rule)](CallContext& ctx) {
    if (check(ctx, api)) rule(ctx);
  };
}

std::optional<size_t> axis_or_error(ContextBase& ctx, std::string_view api, int64_t axis,
                                    size_t rank, std::string_view arg) {
  if (auto a = normalize_axis(axis, rank)) return a;
  ctx.error("axis-error",
            std::string(api) + ": axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank) + " (valid: " + std::to_string(-static_cast<int64_t>(rank)) +
                " to " + std::to_string(static_cast<int64_t>(rank) - 1) + ")",
            arg);
  return std::nullopt;
}

// ---- Shape rules ------------------------------------------------------------------------------
std::optional<PadMode> parse_pad_mode(std::string_view s) {
  std::string m = lower(s);
  if (m == "same") return PadMode::Same;
  if (m == "valid") return PadMode::Valid;
  if (m == "pad") return PadMode::Pad;
  return std::nullopt;
}

// pad_before + pad_after - dilation*(k-1) - 1 (what a window takes off a padded length), checked.
static std::optional<int64_t> conv_window_offset(int64_t k, int64_t dilation, int64_t pad_before,
                                                 int64_t pad_after) {
  std::optional<int64_t> span = checked_sub(k, int64_t{1});
  if (span) span = checked_mul(dilation, *span);
  std::optional<int64_t> pads = checked_add(pad_before, pad_after);
  if (!span || !pads) return std::nullopt;
  std::optional<int64_t> out = checked_sub(*pads, *span);
  if (out) out = checked_sub(*out, int64_t{1});
  return out;
}

Dim conv_out_dim(Dim in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_before,
                 int64_t pad_after, PadMode mode) {
  if (in.is_unknown() || stride <= 0) return Dim::unknown();
  if (mode == PadMode::Same) {
    return in.is_known() ? Dim::known(ceil_div_i(in.value(), stride))
                         : Dim::ceil_div(in, Dim::known(stride));
  }
  // pads - dilation*(k-1) - 1 and in + that, checked: the numbers come from model code (an
  // overflow is an unknown dimension, never a wrapped one).
  const std::optional<int64_t> sub_opt = conv_window_offset(
      k, dilation, mode == PadMode::Pad ? pad_before : 0, mode == PadMode::Pad ? pad_after : 0);
  if (!sub_opt) return Dim::unknown();
  const int64_t sub = *sub_opt;
  if (in.is_known()) {
    const auto num = checked_add(in.value(), sub);
    if (!num) return Dim::unknown();
    return *num < 0 ? Dim::known(0) : Dim::known(floor_div_i(*num, stride) + 1);
  }
  Dim num = add_const(in, sub);
  return add_const(stride == 1 ? num : Dim::floor_div(num, Dim::known(stride)), 1);
}

Dim conv_transpose_out_dim(Dim in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_before,
                           int64_t pad_after, int64_t output_padding, PadMode mode) {
  if (in.is_unknown()) return in;
  Dim scaled = in * Dim::known(stride);
  if (mode == PadMode::Same) return add_const(scaled, output_padding);
  // (in-1)*stride + dilation*(k-1) + 1 - pads + output_padding
  //   = in*stride - (pads - dilation*(k-1) - 1) - stride + output_padding, the constant checked.
  const std::optional<int64_t> off = conv_window_offset(
      k, dilation, mode == PadMode::Pad ? pad_before : 0, mode == PadMode::Pad ? pad_after : 0);
  std::optional<int64_t> c = off ? checked_sub(int64_t{0}, *off) : std::nullopt;
  if (c) c = checked_sub(*c, stride);
  if (c) c = checked_add(*c, output_padding);
  if (!c) return Dim::unknown();
  return add_const(scaled, *c);
}

Dim pool_out_dim(Dim in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_before,
                 int64_t pad_after, bool ceil_mode, PadMode mode) {
  // ceil_mode rounds up with pad_mode 'pad' and 'valid' (nn.AvgPool2d(2, 2, ceil_mode=True) on
  // 9 x 9 gives 5 x 5 in MindSpore 2.10, as the runtime's window does); 'same' has no ceil.
  if (!ceil_mode || mode == PadMode::Same)
    return conv_out_dim(in, k, stride, dilation, pad_before, pad_after, mode);
  if (in.is_unknown() || stride <= 0) return Dim::unknown();
  int64_t sub = pad_before + pad_after - dilation * (k - 1) - 1;
  if (in.is_known()) {
    int64_t out = ceil_div_i(in.value() + sub, stride) + 1;
    if ((out - 1) * stride >= in.value() + pad_before) --out;
    return Dim::known(std::max<int64_t>(out, 0));
  }
  return add_const(Dim::ceil_div(add_const(in, sub), Dim::known(stride)), 1);
}

Shape window_shape(const Shape& x, const Window& w, WindowOp op) {
  Shape out = x;
  if (!x.ranked || x.rank() < w.kernel.size()) return out;
  size_t first = x.rank() - w.kernel.size();
  for (size_t i = 0; i < w.kernel.size(); ++i) {
    Dim& d = out.dims[first + i];
    int64_t dil = w.dilation.empty() ? 1 : w.dilation[i];
    int64_t pb = w.pad_before.empty() ? 0 : w.pad_before[i];
    int64_t pa = w.pad_after.empty() ? 0 : w.pad_after[i];
    switch (op) {
      case WindowOp::Conv:
        d = conv_out_dim(d, w.kernel[i], w.stride[i], dil, pb, pa, w.mode);
        break;
      case WindowOp::ConvTranspose:
        d = conv_transpose_out_dim(d, w.kernel[i], w.stride[i], dil, pb, pa,
                                   w.output_padding.empty() ? 0 : w.output_padding[i], w.mode);
        break;
      case WindowOp::Pool:
        d = pool_out_dim(d, w.kernel[i], w.stride[i], dil, pb, pa, w.ceil_mode, w.mode);
        break;
    }
  }
  return out;
}

std::optional<Window> read_window(ContextBase& ctx, size_t n, bool per_dim, bool pairs,
                                  const WindowArgNames& names) {
  Window w;
  auto k = ints_arg(ctx, names.kernel, n);
  auto s = ctx.arg(names.stride).is_none() ? k : ints_arg(ctx, names.stride, n);
  if (!k || !s) return std::nullopt;
  w.kernel = *k;
  w.stride = *s;
  for (int64_t v : w.kernel) {
    if (v <= 0) {
      ctx.error("invalid-argument",
                "'" + std::string(names.kernel) + "' must be positive, got " +
                    ctx.arg(names.kernel).repr(),
                names.kernel);
      return std::nullopt;
    }
  }
  for (int64_t v : w.stride) {
    if (v <= 0) {
      ctx.error("invalid-argument",
                "'" + std::string(names.stride) + "' must be positive, got " +
                    ctx.arg(names.stride).repr(),
                names.stride);
      return std::nullopt;
    }
  }
  w.dilation = std::vector<int64_t>(n, 1);
  if (!ctx.arg(names.dilation).is_missing()) {
    auto d = ints_arg(ctx, names.dilation, n);
    if (!d) return std::nullopt;
    w.dilation = *d;
  }
  w.mode = PadMode::Pad;
  if (const ArgValue& pm = ctx.arg(names.pad_mode); !pm.is_missing()) {
    auto mode = pm.as_str() ? parse_pad_mode(*pm.as_str()) : std::nullopt;
    if (!mode) {
      if (!pm.is_unknown()) {
        ctx.error("invalid-argument",
                  "'" + std::string(names.pad_mode) +
                      "' must be one of 'same', 'valid', 'pad', got " + pm.repr(),
                  names.pad_mode);
      }
      return std::nullopt;
    }
    w.mode = *mode;
  }
  w.pad_before = w.pad_after = std::vector<int64_t>(n, 0);
  const ArgValue& pad = ctx.arg(names.padding);
  if (pad.is_missing() || pad.is_none()) return w;
  if (pad.is_unknown()) return std::nullopt;
  if (auto one = pad.as_ints(1); one && pad.kind == ArgValue::Kind::Int) {
    w.pad_before = w.pad_after = std::vector<int64_t>(n, (*one)[0]);
  } else if (auto sym = pad.as_ints(n); sym && per_dim) {
    w.pad_before = w.pad_after = *sym;
  } else if (auto pr = pad.as_ints(2 * n); pr && pairs) {
    for (size_t i = 0; i < n; ++i) {
      w.pad_before[i] = (*pr)[2 * i];
      w.pad_after[i] = (*pr)[2 * i + 1];
    }
  } else {
    std::string want = "an int";
    if (per_dim) want += " or a tuple of " + std::to_string(n) + " ints";
    if (pairs) want += " or a tuple of " + std::to_string(2 * n) + " ints";
    ctx.error("invalid-argument",
              "'" + std::string(names.padding) + "' must be " + want + ", got " + pad.repr(),
              names.padding);
    return std::nullopt;
  }
  return w;
}

InferFn on_tensor(std::string arg, TensorRule fn, size_t n_outputs) {
  return [arg = std::move(arg), fn = std::move(fn), n_outputs](CallContext& ctx) {
    auto t = tensor_arg(ctx, arg);
    if (!t || !t->shape.ranked) {
      if (ctx.failed()) return;
      for (size_t i = 0; i < n_outputs; ++i) add_unknown_output(ctx, t ? t->dtype : DType::Unknown);
      return;
    }
    fn(ctx, *t);
  };
}

InferFn on_any_tensor(std::string arg, TensorRule fn, size_t n_outputs) {
  return [arg = std::move(arg), fn = std::move(fn), n_outputs](CallContext& ctx) {
    auto t = tensor_arg(ctx, arg);
    if (!t) {
      if (ctx.failed()) return;
      for (size_t i = 0; i < n_outputs; ++i) add_unknown_output(ctx, DType::Unknown);
      return;
    }
    fn(ctx, *t);
  };
}

std::optional<Shape> reduce_shape(ContextBase& ctx, std::string_view api, const Shape& s,
                                  const std::vector<int64_t>& axes, bool keep_dims) {
  if (!s.ranked) return s;
  std::vector<bool> reduced(s.rank(), axes.empty());
  for (int64_t a : axes) {
    // A 0-d tensor accepts axis 0/-1 in MindSpore's reductions.
    if (s.rank() == 0 && (a == 0 || a == -1)) continue;
    auto n = axis_or_error(ctx, api, a, s.rank(), "axis");
    if (!n) return std::nullopt;
    reduced[*n] = true;
  }
  Shape out;
  for (size_t i = 0; i < s.rank(); ++i) {
    if (!reduced[i]) {
      out.dims.push_back(s.dims[i]);
    } else if (keep_dims) {
      out.dims.push_back(Dim::known(1));
    }
  }
  return out;
}

std::optional<Shape> broadcast_all(ContextBase& ctx, std::string_view api,
                                   const std::vector<Shape>& shapes) {
  if (shapes.empty()) return Shape{};
  Shape acc = shapes[0];
  for (size_t i = 1; i < shapes.size(); ++i) {
    if (!acc.ranked || !shapes[i].ranked) return Shape::unranked();
    std::string why;
    auto next = broadcast_shapes(acc, shapes[i], &why);
    if (!next) {
      ctx.error("broadcast-error", std::string(api) + ": shapes " + shapes_str(shapes) +
                                       " cannot be broadcast together: " + why);
      return std::nullopt;
    }
    acc = std::move(*next);
  }
  return acc;
}

std::optional<Shape> matmul_shape(ContextBase& ctx, std::string_view api, const Shape& a,
                                  const Shape& b, bool transpose_a, bool transpose_b,
                                  MatMulKind kind) {
  if (!a.ranked || !b.ranked) return Shape::unranked();
  std::string sa = a.str();
  std::string sb = b.str();
  size_t min_rank = kind == MatMulKind::NumPy ? 1 : 2;
  size_t max_rank = kind == MatMulKind::Matrix ? 2 : 64;
  if (a.rank() < min_rank || b.rank() < min_rank || a.rank() > max_rank || b.rank() > max_rank) {
    ctx.error("rank-error",
              std::string(api) + " expects operands of rank " +
                  (kind == MatMulKind::Matrix ? std::string("2")
                                              : "at least " + std::to_string(min_rank)) +
                  ", but receives shapes " + sa + " and " + sb);
    return std::nullopt;
  }
  Shape x = a;
  Shape y = b;
  bool a_vec = x.rank() == 1;
  bool b_vec = y.rank() == 1;
  if (a_vec) x.dims.insert(x.dims.begin(), Dim::known(1));
  if (b_vec) y.dims.push_back(Dim::known(1));
  size_t rx = x.rank();
  size_t ry = y.rank();
  Dim m = transpose_a ? x.dims[rx - 1] : x.dims[rx - 2];
  Dim ka = transpose_a ? x.dims[rx - 2] : x.dims[rx - 1];
  Dim kb = transpose_b ? y.dims[ry - 1] : y.dims[ry - 2];
  Dim n = transpose_b ? y.dims[ry - 2] : y.dims[ry - 1];
  if (dims_equal(ka, kb) == Tri::No) {
    std::string flags;
    if (transpose_a) flags += " with transpose_a=True";
    if (transpose_b) flags += std::string(flags.empty() ? " with" : " and") + " transpose_b=True";
    ctx.error("matmul-dim", std::string(api) + ": inner dimensions do not match: " + sa + " @ " +
                                sb + flags + " contracts " + ka.str() + " with " + kb.str());
    return std::nullopt;
  }
  Shape batch;
  if (rx > 2 || ry > 2) {
    Shape ba(std::vector<Dim>(x.dims.begin(), x.dims.end() - 2));
    Shape bb(std::vector<Dim>(y.dims.begin(), y.dims.end() - 2));
    std::string why;
    auto bc = broadcast_shapes(ba, bb, &why);
    if (!bc) {
      ctx.error("matmul-dim", std::string(api) + ": batch dimensions of " + sa + " and " + sb +
                                  " cannot be broadcast: " + why);
      return std::nullopt;
    }
    batch = *bc;
  }
  Shape out = batch;
  if (!a_vec) out.dims.push_back(m);
  if (!b_vec) out.dims.push_back(n);
  return out;
}

void matmul_flops(CallContext& ctx, const Shape& out, Dim k) {
  auto n = known_count(out);
  if (n && k.is_known()) ctx.set_flops(2.0 * *n * static_cast<double>(k.value()));
}

std::optional<Shape> reshape_shape(ContextBase& ctx, std::string_view api, const Shape& in,
                                   const std::vector<Dim>& target) {
  // Dim::unknown() in `target` stands for -1 (and for values the evaluator could not determine);
  // only a single such entry can be inferred.
  size_t n_infer =
      std::count_if(target.begin(), target.end(), [](const Dim& d) { return d.is_unknown(); });
  Dim known_prod = Dim::known(1);
  for (const Dim& d : target)
    if (!d.is_unknown()) known_prod = known_prod * d;
  Shape out(target);
  if (!in.ranked) return out;
  Dim total = in.num_elements();
  if (n_infer == 0) {
    if (dims_equal(total, known_prod) == Tri::No) {
      ctx.error("reshape-size", std::string(api) + ": cannot reshape a tensor of shape " +
                                    in.str() + " (" + total.str() + " elements) to " + out.str() +
                                    " (" + known_prod.str() + " elements)");
      return std::nullopt;
    }
    return out;
  }
  if (n_infer > 1 || total.is_unknown()) return out;
  Dim inferred = Dim::unknown();
  if (total.is_known() && known_prod.is_known()) {
    int64_t t = total.value();
    int64_t p = known_prod.value();
    if (p == 0 || t % p != 0) {
      std::string tgt = "(";
      for (size_t i = 0; i < target.size(); ++i)
        tgt += (i ? ", " : "") + (target[i].is_unknown() ? std::string("-1") : target[i].str());
      tgt += target.size() == 1 ? ",)" : ")";
      ctx.error("reshape-size", std::string(api) + ": cannot reshape a tensor of shape " +
                                    in.str() + " (" + std::to_string(t) + " elements) to " + tgt +
                                    ": " + std::to_string(t) + " is not divisible by " +
                                    std::to_string(p));
      return std::nullopt;
    }
    inferred = Dim::known(t / p);
  } else {
    inferred = Dim::exact_div(total, known_prod).value_or(Dim::unknown());
  }
  for (Dim& d : out.dims)
    if (d.is_unknown()) d = inferred;
  return out;
}

std::optional<Shape> concat_shape(ContextBase& ctx, std::string_view api,
                                  const std::vector<Shape>& shapes, int64_t axis) {
  const Shape* first = nullptr;
  for (const Shape& s : shapes) {
    if (s.ranked) {
      first = &s;
      break;
    }
  }
  if (!first) return Shape::unranked();
  auto ax = axis_or_error(ctx, api, axis, first->rank(), "axis");
  if (!ax) return std::nullopt;
  Shape out = *first;
  Dim sum = Dim::known(0);
  for (const Shape& s : shapes) {
    if (!s.ranked) {
      sum = Dim::unknown();
      continue;
    }
    if (s.rank() != first->rank()) {
      ctx.error("concat-dim", std::string(api) + ": all inputs must have the same rank, got " +
                                  shapes_str(shapes));
      return std::nullopt;
    }
    for (size_t i = 0; i < s.rank(); ++i) {
      if (i == *ax) continue;
      if (dims_equal(s.dims[i], out.dims[i]) == Tri::No) {
        ctx.error("concat-dim",
                  std::string(api) + ": inputs " + shapes_str(shapes) + " differ in dimension " +
                      std::to_string(i) + " (" + out.dims[i].str() + " vs " + s.dims[i].str() +
                      "); only the concatenation axis " + std::to_string(axis) + " may differ");
        return std::nullopt;
      }
      if (!out.dims[i].is_known() && s.dims[i].is_known()) out.dims[i] = s.dims[i];
    }
    sum = (sum.is_unknown() || s.dims[*ax].is_unknown()) ? Dim::unknown() : sum + s.dims[*ax];
  }
  out.dims[*ax] = sum;
  return out;
}

std::optional<Shape> stack_shape(ContextBase& ctx, std::string_view api,
                                 const std::vector<Shape>& shapes, int64_t axis) {
  if (shapes.empty()) return Shape::unranked();
  Shape base = shapes[0];
  for (const Shape& s : shapes) {
    if (!s.ranked) return Shape::unranked();
    bool same = s.rank() == base.rank();
    for (size_t i = 0; same && i < s.rank(); ++i)
      same = dims_equal(s.dims[i], base.dims[i]) != Tri::No;
    if (!same) {
      ctx.error("shape-mismatch", std::string(api) + ": all inputs must have the same shape, got " +
                                      shapes_str(shapes));
      return std::nullopt;
    }
  }
  auto ax = axis_or_error(ctx, api, axis, base.rank() + 1, "axis");
  if (!ax) return std::nullopt;
  base.dims.insert(base.dims.begin() + static_cast<std::ptrdiff_t>(*ax),
                   Dim::known(static_cast<int64_t>(shapes.size())));
  return base;
}

std::optional<Shape> permute_shape(ContextBase& ctx, std::string_view api, const Shape& s,
                                   const std::vector<int64_t>& perm) {
  if (!s.ranked) return s;
  if (perm.size() != s.rank()) {
    ctx.error("axis-error", std::string(api) + ": permutation of length " +
                                std::to_string(perm.size()) + " does not match rank " +
                                std::to_string(s.rank()) + " of shape " + s.str());
    return std::nullopt;
  }
  Shape out;
  std::vector<bool> seen(s.rank(), false);
  for (int64_t p : perm) {
    auto a = axis_or_error(ctx, api, p, s.rank());
    if (!a) return std::nullopt;
    if (seen[*a]) {
      ctx.error("axis-error", std::string(api) + ": axis " + std::to_string(p) +
                                  " appears twice in the permutation");
      return std::nullopt;
    }
    seen[*a] = true;
    out.dims.push_back(s.dims[*a]);
  }
  return out;
}

std::optional<Shape> flatten_shape(ContextBase& ctx, std::string_view api, const Shape& s,
                                   int64_t start, int64_t end) {
  if (!s.ranked) return s;
  if (s.rank() == 0) return Shape::of({1});
  auto a = axis_or_error(ctx, api, start, s.rank(), "start_dim");
  auto b = axis_or_error(ctx, api, end, s.rank(), "end_dim");
  if (!a || !b) return std::nullopt;
  if (*a > *b) {
    ctx.error("axis-error", std::string(api) + ": start_dim " + std::to_string(start) +
                                " comes after end_dim " + std::to_string(end));
    return std::nullopt;
  }
  Shape out;
  Dim prod = Dim::known(1);
  for (size_t i = 0; i < s.rank(); ++i) {
    if (i < *a || i > *b) {
      out.dims.push_back(s.dims[i]);
    } else {
      prod = (prod.is_unknown() || s.dims[i].is_unknown()) ? Dim::unknown() : prod * s.dims[i];
      if (i == *b) out.dims.push_back(prod);
    }
  }
  return out;
}

std::optional<std::vector<Shape>> split_shapes(ContextBase& ctx, std::string_view api,
                                               const Shape& s, int64_t axis,
                                               const std::vector<int64_t>& sizes) {
  if (!s.ranked) return std::vector<Shape>(sizes.size(), s);
  auto ax = axis_or_error(ctx, api, axis, s.rank(), "axis");
  if (!ax) return std::nullopt;
  int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  if (dims_equal(s.dims[*ax], Dim::known(total)) == Tri::No) {
    ctx.error("shape-mismatch", std::string(api) + ": split sizes sum to " + std::to_string(total) +
                                    " but dimension " + std::to_string(axis) + " of " + s.str() +
                                    " is " + s.dims[*ax].str());
    return std::nullopt;
  }
  std::vector<Shape> out;
  for (int64_t n : sizes) {
    Shape piece = s;
    piece.dims[*ax] = Dim::known(n);
    out.push_back(std::move(piece));
  }
  return out;
}

std::vector<int64_t> split_by_size(int64_t dim, int64_t size) {
  std::vector<int64_t> out;
  if (size <= 0) return out;
  for (int64_t left = dim; left > 0; left -= size) out.push_back(std::min(size, left));
  return out;
}

std::vector<int64_t> chunk_sizes(int64_t dim, int64_t chunks) {
  if (chunks <= 0) return {};
  return split_by_size(dim, ceil_div_i(dim, chunks));
}

std::optional<AttrValue> scalar_attr_value(const ArgValue& v) {
  using K = ArgValue::Kind;
  switch (v.kind) {
    case K::Bool:
      return AttrValue(v.b);
    case K::Int:
      return AttrValue(v.i);
    case K::Float:
      return AttrValue(v.f);
    case K::SymInt:
      if (v.dim.is_known()) return AttrValue(v.dim.value());
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

void record_scalar(CallContext& ctx, const ArgValue& v, int64_t index) {
  auto value = scalar_attr_value(v);
  if (!value) return;
  ctx.set_attr("scalar", std::move(*value));
  ctx.set_attr("scalar_index", index);
}

DType scalar_promote(DType tensor, ArgValue::Kind scalar) {
  using K = ArgValue::Kind;
  if (tensor == DType::Unknown) return tensor;
  if (scalar == K::Float && !is_floating(tensor) && tensor != DType::Complex64)
    return DType::Float32;
  if ((scalar == K::Int || scalar == K::SymInt) && tensor == DType::Bool) return DType::Int64;
  return tensor;
}

// ---- ops.interpolate / nn.Upsample ----------------------------------------------------------

namespace {

// MindSpore 2.10's checks of `size` / `scale_factor` (ops/function/nn_func.py interpolate:
// check_positive_int(_sequence)_const, check_positive_float(_sequence)_const and the spatial
// length check): one of them is required, ints > 0 for size, floats > 0 (an int or a bool is a
// TypeError) for scale_factor, one per spatial dim. Unknown values pass.
bool interpolate_sizes_valid(CallContext& ctx, const ContextBase& args, std::string_view api,
                             const Shape& shape) {
  const ArgValue& size = args.arg("size");
  const ArgValue& factor = args.arg("scale_factor");
  const bool has_size = !size.is_missing() && !size.is_none();
  const bool has_factor = !factor.is_missing() && !factor.is_none();
  const std::string for_api = std::string(api) + ": ";
  if (has_size && has_factor) {
    ctx.error("invalid-argument",
              for_api + "'size' and 'scale_factor' cannot be set simultaneously", "scale_factor");
    return false;
  }
  if (!has_size && !has_factor) {
    // An argument the evaluator does not know may be either.
    if (size.is_unknown() || factor.is_unknown()) return true;
    ctx.error("invalid-argument", for_api + "'size' and 'scale_factor' cannot be both empty",
              "size");
    return false;
  }
  const bool is_size = has_size;
  const ArgValue& v = is_size ? size : factor;
  const std::string name = is_size ? "size" : "scale_factor";
  const bool seq = v.kind == ArgValue::Kind::Sequence;
  std::vector<const ArgValue*> items;
  if (seq) {
    for (const ArgValue& x : v.items) items.push_back(&x);
  } else {
    items.push_back(&v);
  }
  // "<api>: the '<label>' <says>", reported at the argument.
  const auto item_error = [&](std::string_view code, const std::string& label,
                              std::string_view says) {
    std::string msg = for_api;
    msg.append("the '").append(label).append("' ").append(says);
    ctx.error(code, std::move(msg), name);
    return false;
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const ArgValue& x = *items[i];
    const std::string label = seq ? name + "[" + std::to_string(i) + "]" : name;
    if (is_size) {
      const auto n = x.kind == ArgValue::Kind::Int ? x.as_int() : std::nullopt;
      if (n && *n <= 0) {
        return item_error("invalid-argument", label,
                          std::string("must be int and must > 0, but got '")
                              .append(std::to_string(*n))
                              .append("'"));
      }
      continue;
    }
    if (x.kind == ArgValue::Kind::Bool)
      return item_error("type-error", label, "must be float, but got 'bool' (write a float)");
    if (x.kind == ArgValue::Kind::Int) {
      return item_error("type-error", label,
                        "must be float, but got 'int' (write it with a decimal point)");
    }
    if (const auto f = x.kind == ArgValue::Kind::Float ? x.as_float() : std::nullopt;
        f && !(*f > 0))
      return item_error("invalid-argument", label, "must be float and must > 0");
  }
  if (seq && shape.ranked && shape.rank() >= 2 && v.items.size() != shape.rank() - 2) {
    ctx.error("shape-mismatch",
              for_api + "'input' and '" + name +
                  "' must have the same spatial dimensions, but got 'input' is " +
                  std::to_string(shape.rank() - 2) + "D, '" + name + "' is " +
                  std::to_string(v.items.size()) + "D",
              name);
    return false;
  }
  return true;
}

// MindSpore 2.10's mode checks (the modes, the ranks each supports, which modes take
// scale_factor or align_corners at which rank; supported_dict in nn_func.py); an argument that is
// not a constant is not judged.
bool interpolate_mode_valid(CallContext& ctx, const ContextBase& args, std::string_view api,
                            const Shape& shape) {
  struct ModeRule {
    std::string_view mode;
    int ranks;          // bit r: rank r supported
    int scale_factor;   // bit r: scale_factor accepted at rank r
    int align_corners;  // bit r: align_corners accepted at rank r
  };
  static constexpr ModeRule kModes[] = {
      {"nearest", 0b111000, 0b100000, 0},
      {"linear", 0b1000, 0, 0b1000},
      {"bilinear", 0b10000, 0, 0b10000},
      {"bicubic", 0b10000, 0, 0b10000},
      {"area", 0b111000, 0b111000, 0},
      {"nearest-exact", 0b11000, 0, 0},
      {"trilinear", 0b100000, 0b100000, 0b100000},
  };
  const ArgValue& size = args.arg("size");
  const ArgValue& factor = args.arg("scale_factor");
  const bool has_size = !size.is_missing() && !size.is_none();
  const bool has_factor = !factor.is_missing() && !factor.is_none();
  const std::string for_api = std::string(api) + ": ";
  const auto mode = args.arg("mode").as_str();
  if (!mode || !shape.ranked) return true;
  const ModeRule* rule = nullptr;
  for (const ModeRule& m : kModes)
    if (m.mode == *mode) rule = &m;
  if (rule == nullptr) {
    ctx.error("invalid-argument",
              for_api +
                  "'mode' must be one of nearest, linear, bilinear, bicubic, area, "
                  "nearest-exact, trilinear, got '" +
                  *mode + "'",
              "mode");
    return false;
  }
  const auto rank = static_cast<int>(shape.rank());
  const auto ranks_of = [](int bits) {
    std::string out;
    for (int r = 3; r <= 5; ++r)
      if ((bits & (1 << r)) != 0) out += (out.empty() ? "" : ", ") + std::to_string(r) + "-D";
    return out;
  };
  if ((rule->ranks & (1 << rank)) == 0) {
    ctx.error("shape-mismatch",
              for_api + "mode '" + *mode + "' takes a " + ranks_of(rule->ranks) + " input, got " +
                  shape.str(),
              "input");
    return false;
  }
  // 'area' always resizes to a size: a scale_factor is turned into one (recompute).
  const bool recomputed = args.arg("recompute_scale_factor").as_bool().value_or(false) ||
                          (*mode == "area" && !has_size);
  if (recomputed && has_size) {
    ctx.error("invalid-argument",
              for_api +
                  "it is incorrect to set 'recompute_scale_factor' to True after specifying an "
                  "explicit 'size'",
              "recompute_scale_factor");
    return false;
  }
  if (has_factor && !recomputed && (rule->scale_factor & (1 << rank)) == 0) {
    ctx.error("invalid-argument",
              for_api + "'scale_factor' cannot be set with mode '" + *mode + "' and a " +
                  std::to_string(rank) +
                  "-D input in MindSpore 2.10 (pass 'size', or recompute_scale_factor=True)",
              "scale_factor");
    return false;
  }
  const ArgValue& align = args.arg("align_corners");
  if (!align.is_missing() && !align.is_none() && (rule->align_corners & (1 << rank)) == 0) {
    ctx.error("invalid-argument",
              for_api + "'align_corners' cannot be set with mode '" + *mode + "' and a " +
                  std::to_string(rank) + "-D input (leave it None)",
              "align_corners");
    return false;
  }
  // 'area' on a 3-D input is ops.adaptive_avg_pool1d to the size.
  if (*mode == "area" && rank == 3 && has_size) {
    const bool one = size.kind == ArgValue::Kind::Sequence && size.items.size() == 1;
    return adaptive_1d_length_valid(ctx, std::string(api) + "(mode='area')", shape,
                                    one ? size.items[0] : size, "size");
  }
  return true;
}

// The operator MindSpore 2.10's ops.interpolate runs for `mode` on a rank-`rank` input
// (nn_func.py: run_nearest, run_linear, ... run_area); `mode` was validated.
std::string_view interpolate_op(std::string_view mode, size_t rank) {
  if (mode == "linear") return "ResizeLinear1D";
  if (mode == "bilinear") return "ResizeBilinearV2";
  if (mode == "bicubic") return "ResizeBicubic";
  if (mode == "trilinear") return "UpsampleTrilinear3D";
  if (mode == "area")
    return rank == 3 ? "AdaptiveAvgPool1D" : rank == 4 ? "AdaptiveAvgPool2D" : "AdaptiveAvgPool3D";
  return mode == "nearest" && rank == 5 ? "UpsampleNearest3D" : "ResizeNearestNeighborV2";
}

}  // namespace

void interpolate_rule(CallContext& ctx, const ContextBase& args, std::string_view api,
                      const TensorType& t) {
  if (!require_rank(ctx, api, t.shape, 3, 5, "input")) return;
  if (!interpolate_sizes_valid(ctx, args, api, t.shape)) return;
  if (!interpolate_mode_valid(ctx, args, api, t.shape)) return;
  if (auto mode = args.arg("mode").as_str(); mode && t.shape.ranked)
    ctx.set_op(interpolate_op(*mode, t.shape.rank()));
  const size_t nd = t.shape.rank() - 2;
  Shape out = t.shape;
  if (auto size = args.arg("size").as_ints(nd)) {
    for (size_t i = 0; i < nd; ++i) out.dims[2 + i] = Dim::known((*size)[i]);
  } else if (const ArgValue& sf = args.arg("scale_factor"); !sf.is_none() && !sf.is_missing()) {
    // floor(dim * factor), as recompute_scale_factor / the 3-D kernels compute the size.
    for (size_t i = 0; i < nd; ++i) {
      const ArgValue& f =
          sf.kind == ArgValue::Kind::Sequence && i < sf.items.size() ? sf.items[i] : sf;
      const Dim& d = t.shape.dims[2 + i];
      auto v = f.as_float();
      out.dims[2 + i] =
          v && d.is_known()
              ? Dim::known(static_cast<int64_t>(std::floor(static_cast<double>(d.value()) * *v)))
          : v && *v == std::floor(*v) && !d.is_unknown() ? d * Dim::known(static_cast<int64_t>(*v))
                                                         : Dim::unknown();
    }
  } else {
    return add_unknown_output(ctx, t.dtype);
  }
  ctx.add_output({out, t.dtype});
}

}  // namespace graphcore::rules
