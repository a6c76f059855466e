// CPU kernels for the graph operators of the registry. Convolutions and matrix products go through
// oneDNN (runtime/dnnl_ops.h); the rest are Eigen expressions and simple loops over contiguous
// float32 storage. Every kernel computes its own output shapes; the executor checks them against
// the graph's known dims.
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "graphcore/checked.h"
#include "graphcore/opdef.h"
#include "graphcore/text.h"
#include "runtime/dnnl_ops.h"
#include "runtime/kernels.h"
#include "runtime/parallel.h"

namespace graphcore::runtime {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapM = Eigen::Map<RowMat>;
using MapCM = Eigen::Map<const RowMat>;

// ---- attribute helpers
// ---------------------------------------------------------------------------
std::optional<int64_t> attr_int(const Node& n, std::string_view name) {
  const AttrValue* v = n.find_attr(name);
  if (!v) return std::nullopt;
  if (auto* i = std::get_if<int64_t>(v)) return *i;
  if (auto* b = std::get_if<bool>(v)) return *b ? 1 : 0;
  if (auto* l = std::get_if<std::vector<int64_t>>(v); l && l->size() == 1) return (*l)[0];
  return std::nullopt;
}
std::optional<double> attr_float(const Node& n, std::string_view name) {
  const AttrValue* v = n.find_attr(name);
  if (!v) return std::nullopt;
  if (auto* d = std::get_if<double>(v)) return *d;
  if (auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  return std::nullopt;
}
ClipBound clip_bound(const Node& n, std::string_view name, size_t* next, size_t end) {
  ClipBound b;
  if (const AttrValue* a = n.find_attr(name)) {
    b.attr = a;
    if (std::holds_alternative<std::monostate>(*a)) {
      b.kind = ClipBound::Kind::None;
    } else if (auto v = attr_float(n, name)) {
      b.kind = ClipBound::Kind::Number;
      b.number = *v;
    } else {
      b.kind = ClipBound::Kind::NotNumber;
    }
    return b;
  }
  if (*next < end) {
    b.kind = ClipBound::Kind::Input;
    b.input = (*next)++;
  } else {
    b.kind = ClipBound::Kind::Missing;
  }
  return b;
}
std::optional<RollSteps> roll_steps(const Node& n, std::vector<int64_t> dims, std::string* why,
                                    bool* overflow) {
  *overflow = false;
  const auto shifts = attr_ints(n, "shift");
  const auto axes = attr_ints(n, "axis");
  if (!shifts || !axes) {
    *why = "its shift and axis are not recorded as integers";
    return std::nullopt;
  }
  RollSteps r;
  std::vector<int64_t> along = *axes;
  r.flattened = along.empty();
  if (r.flattened) {
    const auto count = checked_numel(dims);
    if (!count) {
      *why = "its size overflows";
      *overflow = true;
      return std::nullopt;
    }
    dims = {*count};
    along = {0};
  }
  if (shifts->size() != along.size()) {
    *why = "its shift and axis differ in length";
    return std::nullopt;
  }
  for (size_t k = 0; k < along.size(); ++k) {
    const auto axis = normalize_axis(along[k], dims.size());
    if (!axis) {
      *why = "its axis is out of range";
      return std::nullopt;
    }
    const int64_t len = dims[*axis];
    if (len == 0) continue;
    const int64_t by = (((*shifts)[k] % len) + len) % len;
    if (by != 0) r.steps.emplace_back(*axis, by);  // 0: roll_along_axis returns its input
  }
  r.dims = std::move(dims);
  return r;
}
std::optional<bool> attr_bool(const Node& n, std::string_view name) {
  const AttrValue* v = n.find_attr(name);
  if (!v) return std::nullopt;
  if (auto* b = std::get_if<bool>(v)) return *b;
  if (auto* i = std::get_if<int64_t>(v)) return *i != 0;
  return std::nullopt;
}
std::optional<std::string> attr_str(const Node& n, std::string_view name) {
  const AttrValue* v = n.find_attr(name);
  if (!v) return std::nullopt;
  if (auto* s = std::get_if<std::string>(v)) return *s;
  return std::nullopt;
}
std::optional<std::vector<int64_t>> attr_ints(const Node& n, std::string_view name, size_t count) {
  const AttrValue* v = n.find_attr(name);
  if (!v) return std::nullopt;
  if (auto* i = std::get_if<int64_t>(v))
    return std::vector<int64_t>(std::max<size_t>(count, 1), *i);
  if (auto* l = std::get_if<std::vector<int64_t>>(v)) {
    if (count && l->size() == 1) return std::vector<int64_t>(count, (*l)[0]);
    return *l;
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> known_dims(const TensorType& t) {
  if (!t.shape.ranked) return std::nullopt;
  std::vector<int64_t> d;
  for (const Dim& x : t.shape.dims) {
    if (!x.is_known()) return std::nullopt;
    d.push_back(x.value());
  }
  return d;
}

const Tensor* find_param(const KernelCall& c, std::string_view suffix) {
  for (const ParamState* p : c.params) {
    const std::string& n = p->name;
    if (n == suffix ||
        (n.size() > suffix.size() && n.ends_with(suffix) && n[n.size() - suffix.size() - 1] == '.'))
      return &p->value;
  }
  return nullptr;
}

// The kernels and their helpers. The kernels are declared in kernels.h for the operator
// definitions (graphcore/src/ops/) that name them.
namespace kernels {

[[noreturn]] void fail(const std::string& msg) { throw RuntimeError(msg); }

const Tensor& in(const KernelCall& c, size_t i) {
  if (i >= c.inputs.size()) {
    fail("expects at least " + std::to_string(i + 1) + " tensor input(s), the graph gives " +
         std::to_string(c.inputs.size()) +
         " (a scalar or constant operand is not recorded in the graph)");
  }
  return c.inputs[i];
}

const Tensor& need_float(const Tensor& t, const char* what) {
  if (!t.is_float()) fail(std::string(what) + " must be float, got " + t.type_str());
  return t;
}

DType out_dtype(const KernelCall& c, size_t i, DType fallback) {
  if (i < c.node.outputs.size()) {
    DType d = c.node.outputs[i].dtype;
    if (Tensor::supported(d)) return d;
    if (is_floating(d)) return DType::Float32;
  }
  return fallback;
}

std::optional<std::vector<int64_t>> out_shape(const KernelCall& c, size_t i) {
  if (i >= c.node.outputs.size()) return std::nullopt;
  return known_dims(c.node.outputs[i]);
}

Tensor& emit(KernelCall& c, Tensor t) {
  c.outputs.push_back(std::move(t));
  return c.outputs.back();
}

// Float view of any input (ints/bools converted).
Tensor as_float(const Tensor& t) { return t.is_float() ? t : t.cast(DType::Float32); }

int64_t norm_axis(int64_t axis, size_t rank) {
  auto a = normalize_axis(axis, rank);
  if (!a) fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return static_cast<int64_t>(*a);
}

// ---- elementwise unary -----------------------------------------------------------------------
template <class F>
void unary_float(KernelCall& c, F f) {
  Tensor x = as_float(in(c, 0));
  DType dt = out_dtype(c);
  if (dt != DType::Float32 && dt != DType::Float16) dt = DType::Float32;
  Tensor& y = emit(c, Tensor::uninitialized(x.shape(), dt));
  const float* p = x.data<float>();
  auto* q = y.data<float>();
  parallel_for(x.numel(), kGrainMath, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) q[i] = f(p[i]);
  });
}

template <class F>
void unary_eigen(KernelCall& c, F f) {
  Tensor x = as_float(in(c, 0));
  Tensor& y = emit(c, Tensor::uninitialized(x.shape(), x.dtype()));
  // Ranges of elements: f is elementwise (max/min), so each element is the same at any split.
  parallel_for(x.numel(), kGrainCheap, [&](int64_t b, int64_t e) {
    Eigen::Map<const Eigen::ArrayXf> in_range(x.data<float>() + b, e - b);
    Eigen::Map<Eigen::ArrayXf> out_range(y.data<float>() + b, e - b);
    f(in_range, out_range);
  });
}

float gelu_erf(float v) { return 0.5f * v * (1.0f + std::erf(v * static_cast<float>(M_SQRT1_2))); }
float gelu_tanh(float v) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
}

// nn.GELU's approximate (bool, default True) and ops.gelu's ('none' or 'tanh', default 'none') are
// recorded with their defaults; the ops.GeLU primitive has no attribute and is the erf form.
bool gelu_approximate(const Node& n) {
  if (auto s = attr_str(n, "approximate")) return *s == "tanh";
  return attr_bool(n, "approximate").value_or(false);
}

void k_relu(KernelCall& c) {
  unary_eigen(c, [](auto& a, auto& b) { b = a.max(0.0f); });
}
void k_relu6(KernelCall& c) {
  unary_eigen(c, [](auto& a, auto& b) { b = a.max(0.0f).min(6.0f); });
}
void k_sigmoid(KernelCall& c) {
  unary_float(c, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}
void k_tanh(KernelCall& c) {
  unary_float(c, [](float v) { return std::tanh(v); });
}
// On oneDNN's vectorized eltwise kernel (the scalar gelu_tanh above serves Dense's activation).
void k_gelu(KernelCall& c) {
  Tensor x = as_float(in(c, 0));
  DType dt = out_dtype(c);
  if (dt != DType::Float32 && dt != DType::Float16) dt = DType::Float32;
  Tensor& y = emit(c, Tensor::uninitialized(x.shape(), dt));
  dnnl_ops::eltwise(
      gelu_approximate(c.node) ? dnnl_ops::Eltwise::GeluTanh : dnnl_ops::Eltwise::GeluErf,
      x.data<float>(), y.data<float>(), x.numel());
}
void k_silu(KernelCall& c) {
  unary_float(c, [](float v) { return v / (1.0f + std::exp(-v)); });
}
void k_hswish(KernelCall& c) {
  unary_float(c, [](float v) { return v * std::clamp(v + 3.0f, 0.0f, 6.0f) / 6.0f; });
}
void k_hsigmoid(KernelCall& c) {
  unary_float(c, [](float v) { return std::clamp(v + 3.0f, 0.0f, 6.0f) / 6.0f; });
}
void k_leaky_relu(KernelCall& c) {
  float alpha = static_cast<float>(
      attr_float(c.node, "alpha").value_or(attr_float(c.node, "negative_slope").value_or(0.2)));
  unary_float(c, [alpha](float v) { return v >= 0 ? v : alpha * v; });
}
void k_elu(KernelCall& c) {
  float alpha = static_cast<float>(attr_float(c.node, "alpha").value_or(1.0));
  unary_float(c, [alpha](float v) { return v >= 0 ? v : alpha * (std::exp(v) - 1); });
}
// ops.softplus(x, beta, threshold): x where beta * x > threshold, else log(1 + exp(beta * x)) /
// beta; the ops.Softplus primitive has beta 1 and threshold 20.
void k_softplus(KernelCall& c) {
  const auto beta = static_cast<float>(attr_float(c.node, "beta").value_or(1.0));
  const auto threshold = static_cast<float>(attr_float(c.node, "threshold").value_or(20.0));
  if (beta == 0.0f) fail("Softplus beta must not be 0");
  unary_float(c, [beta, threshold](float v) {
    const float bv = beta * v;
    return bv > threshold ? v : std::log1p(std::exp(bv)) / beta;
  });
}
// x * tanh(softplus(x)), softplus linear past 20 as MindSpore's kernel.
void k_mish(KernelCall& c) {
  unary_float(c, [](float v) { return v * std::tanh(v > 20 ? v : std::log1p(std::exp(v))); });
}
void k_exp(KernelCall& c) {
  unary_float(c, [](float v) { return std::exp(v); });
}
void k_log(KernelCall& c) {
  unary_float(c, [](float v) { return std::log(v); });
}
void k_sqrt(KernelCall& c) {
  unary_float(c, [](float v) { return std::sqrt(v); });
}
void k_rsqrt(KernelCall& c) {
  unary_float(c, [](float v) { return 1.0f / std::sqrt(v); });
}
void k_square(KernelCall& c) {
  unary_float(c, [](float v) { return v * v; });
}
void k_abs(KernelCall& c) {
  unary_float(c, [](float v) { return std::fabs(v); });
}
void k_neg(KernelCall& c) {
  unary_float(c, [](float v) { return -v; });
}
void k_erf(KernelCall& c) {
  unary_float(c, [](float v) { return std::erf(v); });
}
void k_reciprocal(KernelCall& c) {
  unary_float(c, [](float v) { return 1.0f / v; });
}
void k_floor(KernelCall& c) {
  unary_float(c, [](float v) { return std::floor(v); });
}
void k_sign(KernelCall& c) {
  unary_float(c, [](float v) { return static_cast<float>((v > 0) - (v < 0)); });
}
// ops.round(input): halves to even, as MindSpore (and numpy) round. MindSpore 2.10's CPU kernel
// refuses decimals other than 0 ("For Round only support decimals equal 0"); so does this one.
void k_round(KernelCall& c) {
  if (const int64_t decimals = attr_int(c.node, "decimals").value_or(0); decimals != 0) {
    fail("Round supports only decimals=0 on CPU (as MindSpore 2.10), got " +
         std::to_string(decimals));
  }
  unary_float(c, [](float v) { return std::nearbyint(v); });
}
void k_tanhshrink(KernelCall& c) {
  unary_float(c, [](float v) { return v - std::tanh(v); });
}
// ops.FastGeLU: x / (1 + exp(-1.702 |x|)) * exp(0.851 (x - |x|)).
void k_fast_gelu(KernelCall& c) {
  unary_float(c, [](float v) {
    const float a = std::fabs(v);
    return v / (1.0f + std::exp(-1.702f * a)) * std::exp(0.851f * (v - a));
  });
}
void k_sin(KernelCall& c) {
  unary_float(c, [](float v) { return std::sin(v); });
}
void k_cos(KernelCall& c) {
  unary_float(c, [](float v) { return std::cos(v); });
}

void k_identity(KernelCall& c) {
  emit(c, in(c, 0));
  // Dropout's mask / extra outputs: ones of the declared type.
  for (size_t i = 1; i < c.node.outputs.size(); ++i) {
    auto s = out_shape(c, i);
    emit(c, Tensor::ones(s ? *s : in(c, 0).shape(), out_dtype(c, i)));
  }
}

// Dropout and Dropout2D: identity in inference; in training each element (Dropout2D: each (N, C)
// channel) is kept with probability keep_prob and scaled by 1 / keep_prob. The mask comes from
// the run's seed and the node's id, so DropoutGrad regenerates it instead of the graph carrying
// it (the forward node keeps the outputs the program declared). An extra declared output (the
// ops.Dropout primitive's mask) is the mask.
void k_dropout(KernelCall& c) {
  if (!c.training) {
    k_identity(c);
    return;
  }
  const Tensor& x0 = in(c, 0);
  Tensor x = as_float(x0);
  const bool channels = c.node.op == "Dropout2D";
  Tensor& y = emit(c, Tensor::uninitialized(x.shape(), DType::Float32));
  dropout_apply(c.node, channels, c.node.id, x.shape(), c.run_seed, x.data<float>(),
                y.data<float>());
  if (c.node.outputs.size() < 2) return;
  const std::vector<float> mask = dropout_mask(c.node, channels, c.node.id, x.shape(), c.run_seed);
  const int64_t per = x.numel() == 0 ? 1 : x.numel() / static_cast<int64_t>(mask.size());
  for (size_t i = 1; i < c.node.outputs.size(); ++i) {
    Tensor m(x.shape(), out_dtype(c, i, DType::Bool));
    for (int64_t k = 0; k < x.numel(); ++k) m.set(k, mask[k / per]);
    emit(c, std::move(m));
  }
}

double dropout_keep(const Node& n) {
  double keep = 0.5;
  if (auto k = attr_float(n, "keep_prob")) {
    keep = *k;
  } else if (auto p = attr_float(n, "p")) {
    keep = 1 - *p;
  }
  if (!(keep > 0 && keep <= 1))
    fail("Dropout keep probability must be in (0, 1], got " + std::to_string(keep));
  return keep;
}

std::vector<float> dropout_mask(const Node& n, bool channels, std::string_view rng_id,
                                const std::vector<int64_t>& shape, uint64_t run_seed) {
  int64_t count = 1;
  // Dropout2D drops whole channels: one draw per (N, C).
  const size_t dims = channels ? std::min<size_t>(2, shape.size()) : shape.size();
  for (size_t i = 0; i < dims; ++i) count *= shape[i];
  const double keep = dropout_keep(n);
  Rng rng(hash_name(run_seed, rng_id));
  std::vector<float> mask(static_cast<size_t>(count));
  for (float& m : mask) m = rng.uniform() < keep ? 1.0f : 0.0f;
  return mask;
}

void dropout_apply(const Node& n, bool channels, std::string_view rng_id,
                   const std::vector<int64_t>& shape, uint64_t run_seed, const float* x, float* y) {
  int64_t count = 1, numel = 1;
  const size_t dims = channels ? std::min<size_t>(2, shape.size()) : shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    numel *= shape[i];
    if (i < dims) count *= shape[i];
  }
  if (numel == 0 || count == 0) return;
  const int64_t per = numel / count;
  const double keep = dropout_keep(n);
  const uint64_t seed = hash_name(run_seed, rng_id);
  const auto scale = static_cast<float>(1.0 / keep);
  // The expression of the masked product is the one the mask vector gave: (x * m) * scale.
  parallel_for(count, std::max<int64_t>(1, kGrainMath / per), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const float m = Rng::uniform_at(seed, static_cast<uint64_t>(k)) < keep ? 1.0f : 0.0f;
      const int64_t base = k * per;
      for (int64_t j = base; j < base + per; ++j) y[j] = x[j] * m * scale;
    }
  });
}

void k_cast(KernelCall& c) { emit(c, in(c, 0).cast(out_dtype(c))); }

void k_fill_like(KernelCall& c, double v) {
  const Tensor& x = in(c, 0);
  emit(c, Tensor::full(x.shape(), v, out_dtype(c, 0, x.dtype())));
}
void k_zeros_like(KernelCall& c) { k_fill_like(c, 0); }
void k_ones_like(KernelCall& c) { k_fill_like(c, 1); }

// ---- Python scalar operands
// ---------------------------------------------------------------------- The 0-d tensor MindSpore
// makes of a Python scalar operand next to tensor `other`: the tensor's dtype, except that a float
// scalar with an integer/bool tensor is float32 and an int scalar with a bool tensor is int64
// (checked against MindSpore 2.10: Tensor(int32) * 0.5 is float32, Tensor(bool) + 1 int64,
// Tensor(int32) + True int32).
Tensor scalar_tensor(const AttrValue& v, DType other) {
  if (const auto* d = std::get_if<double>(&v))
    return Tensor::full({}, *d, is_floating(other) ? other : DType::Float32);
  if (const auto* i = std::get_if<int64_t>(&v)) {
    DType dt = other == DType::Bool ? DType::Int64 : other;
    // An int that does not fit the tensor's int32 is kept as int64 (MindSpore would wrap it).
    if (dt == DType::Int32 &&
        (*i > std::numeric_limits<int32_t>::max() || *i < std::numeric_limits<int32_t>::min()))
      dt = DType::Int64;
    return Tensor::full({}, static_cast<double>(*i), dt);
  }
  if (const auto* b = std::get_if<bool>(&v)) return Tensor::full({}, *b ? 1 : 0, other);
  fail("the scalar operand is recorded as " + attr_to_string(v) + ", not a number");
}

// The operands of an elementwise op: its tensor inputs, with the Python scalar operand the
// registry recorded (`scalar` at operand position `scalar_index`) inserted as a 0-d tensor.
// Fails, naming what is missing, when fewer than `n` operands result.
std::vector<Tensor> operands(const KernelCall& c, size_t n) {
  std::vector<Tensor> ops(c.inputs.begin(), c.inputs.end());
  const AttrValue* s = c.node.find_attr("scalar");
  auto idx = attr_int(c.node, "scalar_index");
  if (s && idx) {
    if (*idx < 0 || static_cast<size_t>(*idx) > ops.size()) {
      fail("scalar_index " + std::to_string(*idx) + " does not fit " + std::to_string(ops.size()) +
           " tensor input(s)");
    }
    if (ops.empty()) fail("both operands are Python scalars: there is no tensor to compute with");
    // The scalar's dtype follows the tensor operand next to it (the one it combines with).
    const Tensor& other = static_cast<size_t>(*idx) < ops.size() ? ops[*idx] : ops.back();
    ops.insert(ops.begin() + *idx, scalar_tensor(*s, other.dtype()));
  }
  if (ops.size() < n) {
    fail("expects " + std::to_string(n) + " operands, the graph gives " +
         std::to_string(c.inputs.size()) + " tensor input(s)" +
         (s ? std::string() : " and no recorded scalar operand"));
  }
  return ops;
}

// ---- elementwise binary with broadcasting ------------------------------------------------------
std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> o(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("cannot broadcast " + shape_str(a) + " with " + shape_str(b));
    o[i] = da == 1 ? db : da;
  }
  return o;
}

std::vector<int64_t> bstrides(const std::vector<int64_t>& s, const std::vector<int64_t>& out) {
  std::vector<int64_t> st(out.size(), 0);
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    size_t o = i + (out.size() - s.size());
    st[o] = s[i] == 1 ? 0 : acc;
    acc *= s[i];
  }
  return st;
}

// Calls f(out_index, a_index, b_index) for every output element of the rows (runs of the last
// dim) [row_begin, row_end); a 0-d output is one row of one element.
template <class F>
void for_broadcast_rows(const std::vector<int64_t>& out, const std::vector<int64_t>& sa,
                        const std::vector<int64_t>& sb, int64_t row_begin, int64_t row_end, F f) {
  size_t r = out.size();
  if (r == 0) {
    if (row_begin < row_end) f(0, 0, 0);
    return;
  }
  int64_t inner = out[r - 1], sa_in = sa[r - 1], sb_in = sb[r - 1];
  if (inner == 0 || row_begin >= row_end) return;
  // The outer index of row_begin (row-major over the dims before the last).
  std::vector<int64_t> idx(r, 0);
  int64_t ia = 0, ib = 0;
  int64_t rest = row_begin;
  for (size_t d = r - 1; d-- > 0;) {
    idx[d] = rest % out[d];
    rest /= out[d];
    ia += idx[d] * sa[d];
    ib += idx[d] * sb[d];
  }
  const int64_t n = row_end * inner;
  for (int64_t o = row_begin * inner; o < n; o += inner) {
    for (int64_t k = 0; k < inner; ++k) f(o + k, ia + k * sa_in, ib + k * sb_in);
    // advance the outer index
    for (size_t d = r - 1; d-- > 0;) {
      ++idx[d];
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < out[d]) break;
      ia -= sa[d] * out[d];
      ib -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

// The number of rows for_broadcast_rows walks (1 for a 0-d output, 0 when empty).
int64_t broadcast_rows(const std::vector<int64_t>& out) {
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  if (n == 0 || out.empty()) return n;
  return n / out.back();
}

// Every output element, serially.
template <class F>
void for_broadcast(const std::vector<int64_t>& out, const std::vector<int64_t>& sa,
                   const std::vector<int64_t>& sb, F f) {
  for_broadcast_rows(out, sa, sb, 0, broadcast_rows(out), f);
}

enum class Bin {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,       // floored: the sign of the divisor (FloorMod, Python's %)
  TruncMod,  // truncated: the sign of the dividend (ops.Mod, C's fmod)
  Max,
  Min,
  Pow,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or
};

bool is_compare(Bin op) { return op >= Bin::Eq; }

template <class T>
T apply_bin(Bin op, T a, T b) {
  switch (op) {
    case Bin::Add:
      return a + b;
    case Bin::Sub:
      return a - b;
    case Bin::Mul:
      return a * b;
    case Bin::Div:
      return a / b;
    case Bin::FloorDiv:
      return static_cast<T>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
    case Bin::Mod: {
      double r = std::fmod(static_cast<double>(a), static_cast<double>(b));
      if (r != 0 && ((r < 0) != (b < 0))) r += static_cast<double>(b);
      return static_cast<T>(r);
    }
    case Bin::TruncMod:
      return static_cast<T>(std::fmod(static_cast<double>(a), static_cast<double>(b)));
    case Bin::Max:
      return a > b ? a : b;
    case Bin::Min:
      return a < b ? a : b;
    case Bin::Pow:
      return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    case Bin::Eq:
      return a == b;
    case Bin::Ne:
      return a != b;
    case Bin::Lt:
      return a < b;
    case Bin::Le:
      return a <= b;
    case Bin::Gt:
      return a > b;
    case Bin::Ge:
      return a >= b;
    case Bin::And:
      return (a != 0) && (b != 0);
    case Bin::Or:
      return (a != 0) || (b != 0);
  }
  return a;
}

// A float result of float operands: ranges of elements (same shapes) or of rows (broadcast) on
// the runtime's threads; each element is computed as the serial loop would.
// y = a op b over n elements (Eigen array expressions).
template <class A, class B>
void eigen_bin(Bin op, const A& a, const B& b, float* y, int64_t n) {
  Eigen::Map<Eigen::ArrayXf> ey(y, n);
  switch (op) {
    case Bin::Add:
      ey = a + b;
      break;
    case Bin::Sub:
      ey = a - b;
      break;
    case Bin::Mul:
      ey = a * b;
      break;
    default:
      ey = a / b;
      break;
  }
}

// y[k] = a[k] op b[k] for k < n, where a (b) is one value repeated when a_one (b_one).
void binary_row(Bin op, const float* a, bool a_one, const float* b, bool b_one, float* y,
                int64_t n) {
  using Row = Eigen::Map<const Eigen::ArrayXf>;
  if (a_one && b_one) {
    eigen_bin(op, Eigen::ArrayXf::Constant(n, *a), Eigen::ArrayXf::Constant(n, *b), y, n);
  } else if (a_one) {
    eigen_bin(op, Eigen::ArrayXf::Constant(n, *a), Row(b, n), y, n);
  } else if (b_one) {
    eigen_bin(op, Row(a, n), Eigen::ArrayXf::Constant(n, *b), y, n);
  } else {
    eigen_bin(op, Row(a, n), Row(b, n), y, n);
  }
}

void binary_float(const Tensor& a, const Tensor& b, Bin op, const std::vector<int64_t>& shape,
                  Tensor& y) {
  Tensor fa = as_float(a), fb = as_float(b);
  const float* pa = fa.data<float>();
  const float* pb = fb.data<float>();
  auto* q = y.data<float>();
  const bool eigen_op = op == Bin::Add || op == Bin::Sub || op == Bin::Mul || op == Bin::Div;
  if (a.shape() == b.shape() && eigen_op) {
    parallel_for(y.numel(), kGrainCheap, [&](int64_t s, int64_t e) {
      Eigen::Map<const Eigen::ArrayXf> ea(pa + s, e - s), eb(pb + s, e - s);
      Eigen::Map<Eigen::ArrayXf> ey(q + s, e - s);
      switch (op) {
        case Bin::Add:
          ey = ea + eb;
          break;
        case Bin::Sub:
          ey = ea - eb;
          break;
        case Bin::Mul:
          ey = ea * eb;
          break;
        default:
          ey = ea / eb;
          break;
      }
    });
    return;
  }
  const std::vector<int64_t> sa = bstrides(a.shape(), shape), sb = bstrides(b.shape(), shape);
  const int64_t row_len = shape.empty() ? 1 : std::max<int64_t>(shape.back(), 1);
  if (eigen_op && row_len > 1 && sa.back() <= 1 && sb.back() <= 1) {
    // Each output row from a row (or one value) of either operand: Eigen's vectorized loops per
    // row (BERT's scores * scale and + mask), the same IEEE operation per element as below.
    std::vector<int64_t> rows = shape;
    rows.back() = 1;  // walk row starts only
    parallel_for(broadcast_rows(shape), std::max<int64_t>(1, kGrainCheap / row_len),
                 [&](int64_t r0, int64_t r1) {
                   for_broadcast_rows(rows, sa, sb, r0, r1, [&](int64_t row, int64_t i, int64_t j) {
                     binary_row(op, pa + i, sa.back() == 0, pb + j, sb.back() == 0,
                                q + row * row_len, row_len);
                   });
                 });
    return;
  }
  parallel_for(broadcast_rows(shape), std::max<int64_t>(1, kGrainCheap / row_len),
               [&](int64_t r0, int64_t r1) {
                 for_broadcast_rows(shape, sa, sb, r0, r1, [&](int64_t o, int64_t i, int64_t j) {
                   q[o] = apply_bin(op, pa[i], pb[j]);
                 });
               });
}

void binary(KernelCall& c, Bin op) {
  std::vector<Tensor> ops = operands(c, 2);
  const Tensor& a = ops[0];
  const Tensor& b = ops[1];
  std::vector<int64_t> shape = broadcast(a.shape(), b.shape());
  DType dt = out_dtype(c);
  if (is_compare(op)) dt = DType::Bool;
  bool as_floats = a.is_float() || b.is_float() || dt == DType::Float32 || dt == DType::Float16;
  if (op == Bin::Div && !a.is_float() && !b.is_float()) {
    as_floats = true;  // true division of ints gives floats (RealDiv / ops.div)
    if (!is_floating(dt)) dt = DType::Float32;
  }
  // Every path below writes every element.
  Tensor& y = emit(c, Tensor::uninitialized(shape, dt));
  if (as_floats && !is_compare(op) && y.is_float()) {
    binary_float(a, b, op, shape, y);
    return;
  }
  if (as_floats) {  // comparisons of floats
    Tensor fa = as_float(a), fb = as_float(b);
    const float* pa = fa.data<float>();
    const float* pb = fb.data<float>();
    for_broadcast(shape, bstrides(a.shape(), shape), bstrides(b.shape(), shape),
                  [&](int64_t o, int64_t i, int64_t j) { y.set(o, apply_bin(op, pa[i], pb[j])); });
    return;
  }
  for_broadcast(shape, bstrides(a.shape(), shape), bstrides(b.shape(), shape),
                [&](int64_t o, int64_t i, int64_t j) {
                  auto va = static_cast<int64_t>(a.at(i));
                  auto vb = static_cast<int64_t>(b.at(j));
                  y.set(o, static_cast<double>(apply_bin(op, va, vb)));
                });
}

void k_add(KernelCall& c) { binary(c, Bin::Add); }
void k_sub(KernelCall& c) { binary(c, Bin::Sub); }
void k_mul(KernelCall& c) { binary(c, Bin::Mul); }
void k_div(KernelCall& c) { binary(c, Bin::Div); }
void k_floordiv(KernelCall& c) { binary(c, Bin::FloorDiv); }
void k_mod(KernelCall& c) { binary(c, Bin::Mod); }
void k_trunc_mod(KernelCall& c) { binary(c, Bin::TruncMod); }
void k_maximum(KernelCall& c) { binary(c, Bin::Max); }
void k_minimum(KernelCall& c) { binary(c, Bin::Min); }
void k_pow(KernelCall& c) { binary(c, Bin::Pow); }
void k_eq(KernelCall& c) { binary(c, Bin::Eq); }
void k_ne(KernelCall& c) { binary(c, Bin::Ne); }
void k_lt(KernelCall& c) { binary(c, Bin::Lt); }
void k_le(KernelCall& c) { binary(c, Bin::Le); }
void k_gt(KernelCall& c) { binary(c, Bin::Gt); }
void k_ge(KernelCall& c) { binary(c, Bin::Ge); }
void k_and(KernelCall& c) { binary(c, Bin::And); }
void k_or(KernelCall& c) { binary(c, Bin::Or); }

// Select(cond, x, y) / ops.where, any operand possibly a recorded scalar; numpy broadcasting.
void k_select(KernelCall& c) {
  std::vector<Tensor> ops = operands(c, 3);
  std::vector<int64_t> shape = broadcast(broadcast(ops[0].shape(), ops[1].shape()), ops[2].shape());
  Tensor& y = emit(c, Tensor(shape, out_dtype(c, 0, ops[1].dtype())));
  std::vector<int64_t> sc = bstrides(ops[0].shape(), shape), sx = bstrides(ops[1].shape(), shape),
                       sy = bstrides(ops[2].shape(), shape);
  // The condition's and x's element come from one broadcast walk, y's from its own strides.
  std::vector<int64_t> yidx(static_cast<size_t>(y.numel()));
  for_broadcast(shape, sy, sy, [&](int64_t o, int64_t i, int64_t) { yidx[o] = i; });
  for_broadcast(shape, sc, sx, [&](int64_t o, int64_t i, int64_t j) {
    y.set(o, ops[0].at(i) != 0 ? ops[1].at(j) : ops[2].at(yidx[o]));
  });
}

// MaskedFill(x, mask, value): value is a recorded scalar (`value`) or a tensor input.
void k_masked_fill(KernelCall& c) {
  const Tensor& x = in(c, 0);
  const Tensor& m = in(c, 1);
  double v = 0;
  if (auto a = attr_float(c.node, "value")) {
    v = *a;
  } else if (auto b = attr_bool(c.node, "value")) {
    v = *b ? 1 : 0;
  } else if (c.inputs.size() >= 3 && c.inputs[2].numel() == 1) {
    v = c.inputs[2].at(0);
  } else {
    fail("the fill value is neither recorded in the graph nor a one-element tensor input");
  }
  std::vector<int64_t> shape = broadcast(x.shape(), m.shape());
  Tensor& y = emit(c, Tensor(shape, out_dtype(c, 0, x.dtype())));
  for_broadcast(shape, bstrides(x.shape(), shape), bstrides(m.shape(), shape),
                [&](int64_t o, int64_t i, int64_t j) { y.set(o, m.at(j) != 0 ? v : x.at(i)); });
}

// ClipByValue(x, min, max): bounds are recorded scalars (`min`, `max`), None when recorded as
// None, or tensor inputs (in that order, for the bounds not recorded).
void k_clip(KernelCall& c) {
  const Tensor& x = in(c, 0);
  size_t next = 1;
  auto bound = [&](const char* name) -> std::optional<Tensor> {
    const ClipBound b = clip_bound(c.node, name, &next, c.inputs.size());
    switch (b.kind) {
      case ClipBound::Kind::Number:
      case ClipBound::Kind::NotNumber:
        return scalar_tensor(*b.attr, DType::Float32).cast(DType::Float32);
      case ClipBound::Kind::Input:
        return as_float(c.inputs[b.input]);
      case ClipBound::Kind::None:
      case ClipBound::Kind::Missing:
        break;
    }
    return std::nullopt;
  };
  std::optional<Tensor> lo = bound("min"), hi = bound("max");
  Tensor y = as_float(x).clone();
  DType dt = out_dtype(c, 0, x.dtype());
  for (const auto& bound_of : {std::pair{&lo, true}, std::pair{&hi, false}}) {
    const auto* b = bound_of.first;
    const bool is_lo = bound_of.second;  // not a structured binding: clang 14 cannot capture one
    if (!*b) continue;
    const Tensor& t = **b;
    std::vector<int64_t> shape = broadcast(y.shape(), t.shape());
    if (shape != y.shape())
      fail("clamp bound " + t.type_str() + " does not broadcast to the input");
    for_broadcast(shape, bstrides(y.shape(), shape), bstrides(t.shape(), shape),
                  [&](int64_t o, int64_t, int64_t j) {
                    float v = y.data<float>()[o];
                    auto bv = static_cast<float>(t.at(j));
                    y.data<float>()[o] = is_lo ? std::max(v, bv) : std::min(v, bv);
                  });
  }
  emit(c, y.dtype() == dt ? y : y.cast(dt));
}

// Fill/Ones/Zeros (shape from the graph) and FillLike (shape of the input).
void k_fill(KernelCall& c) {
  double v = 0;
  if (c.node.op == "Ones") {
    v = 1;
  } else if (c.node.op != "Zeros") {
    if (auto a = attr_float(c.node, "value")) {
      v = *a;
    } else if (auto b = attr_bool(c.node, "value")) {
      v = *b ? 1 : 0;
    } else if (!c.inputs.empty() && c.inputs.back().numel() == 1 && c.node.op != "FillLike") {
      v = c.inputs.back().at(0);
    } else {
      fail("the fill value is not recorded in the graph");
    }
  }
  std::vector<int64_t> shape;
  if (c.node.op == "FillLike") {
    shape = in(c, 0).shape();
  } else {
    auto os = out_shape(c);
    if (!os) fail("the output shape is not fully known");
    shape = *os;
  }
  emit(c, Tensor::full(shape, v, out_dtype(c)));
}

void k_not(KernelCall& c) {
  const Tensor& x = in(c, 0);
  Tensor& y = emit(c, Tensor(x.shape(), DType::Bool));
  for (int64_t i = 0; i < x.numel(); ++i) y.set(i, x.at(i) == 0 ? 1 : 0);
}

// ---- GEMM family
// ---------------------------------------------------------------------------------- y = act(x @
// W^T + b), x (..., in), W (out, in).
void apply_activation(Tensor& y, const std::string& act) {
  if (act.empty() || act == "None") return;
  auto* p = y.data<float>();
  int64_t n = y.numel();
  std::function<float(float)> f;
  if (act == "relu") {
    f = [](float v) { return v > 0 ? v : 0.0f; };
  } else if (act == "relu6") {
    f = [](float v) { return std::clamp(v, 0.0f, 6.0f); };
  } else if (act == "tanh") {
    f = [](float v) { return std::tanh(v); };
  } else if (act == "sigmoid") {
    f = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
  } else if (act == "gelu") {
    f = gelu_tanh;  // nn.GELU() default (approximate=True)
  } else if (act == "silu" || act == "swish") {
    f = [](float v) { return v / (1.0f + std::exp(-v)); };
  } else {
    fail("Dense activation '" + act + "' is not supported by the runtime");
  }
  for (int64_t i = 0; i < n; ++i) p[i] = f(p[i]);
}

void dense(KernelCall& c, const Tensor& x0, const Tensor& w, const Tensor* b) {
  Tensor x = as_float(x0);
  need_float(w, "Dense weight");
  if (w.rank() != 2) fail("Dense weight must be 2-D, got " + w.type_str());
  int64_t in_f = w.shape()[1], out_f = w.shape()[0];
  if (x.rank() == 0 || x.shape().back() != in_f)
    fail("Dense expects input (..., " + std::to_string(in_f) + "), got " + x.type_str());
  if (b && b->numel() != out_f)
    fail("Dense bias has " + b->type_str() + ", expected (" + std::to_string(out_f) + ",)");
  std::vector<int64_t> shape = x.shape();
  shape.back() = out_f;
  if (x.numel() == 0) {
    emit(c, Tensor(shape, DType::Float32));
    return;
  }
  // x (m, in) @ W^T: the transpose is a stride, the bias part of the same primitive.
  Tensor b32 = b ? as_float(*b) : Tensor();
  Tensor y = dnnl_ops::matmul(x.reshape({-1, in_f}), w, false, true, b ? &b32 : nullptr);
  emit(c, y.reshape(shape));
}

void k_dense(KernelCall& c) {
  const Tensor* w = find_param(c, "weight");
  const Tensor* b = find_param(c, "bias");
  if (!w) {  // ops.Dense / functional dense: (x, w, b)
    dense(c, in(c, 0), in(c, 1), c.inputs.size() > 2 ? &c.inputs[2] : nullptr);
  } else {
    dense(c, in(c, 0), *w, b);
  }
  if (auto act = attr_str(c.node, "activation")) apply_activation(c.outputs.back(), *act);
}

// numpy matmul semantics with optional transposes of the last two dims.
void batched_matmul(KernelCall& c, const Tensor& a0, const Tensor& b0, bool ta, bool tb) {
  emit(c, dnnl_ops::matmul(as_float(a0), as_float(b0), ta, tb));
}

void k_matmul(KernelCall& c) {
  if (c.node.api == "nn.Dense" || !c.params.empty()) {
    k_dense(c);
    return;
  }
  bool ta =
      attr_bool(c.node, "transpose_a").value_or(attr_bool(c.node, "transpose_x1").value_or(false));
  bool tb =
      attr_bool(c.node, "transpose_b").value_or(attr_bool(c.node, "transpose_x2").value_or(false));
  batched_matmul(c, in(c, 0), in(c, 1), ta, tb);
}

void k_bias_add(KernelCall& c) {
  Tensor x = as_float(in(c, 0));
  const Tensor& b = in(c, 1);
  // NCHW: bias on axis 1 for rank >= 3 (MindSpore BiasAdd), last axis for 2-D.
  size_t axis = x.rank() >= 2 ? 1 : 0;
  int64_t ch = x.shape()[axis];
  if (b.numel() != ch) fail("BiasAdd: bias " + b.type_str() + " does not match " + x.type_str());
  Tensor& y = emit(c, x.clone());
  int64_t inner = 1;
  for (size_t i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  int64_t outer = x.numel() / (ch * inner);
  auto* p = y.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t ci = 0; ci < ch; ++ci) {
      auto bv = static_cast<float>(b.at(ci));
      float* q = p + (o * ch + ci) * inner;
      for (int64_t i = 0; i < inner; ++i) q[i] += bv;
    }
  }
}

// ---- convolution
// ----------------------------------------------------------------------------------
// Window: runtime/kernels.h (the backward kernels share it).

// MindSpore pad modes: 'valid' (no padding), 'same' (output ceil(in / stride), the extra padding
// at the end), 'pad' (explicit: an int, or (top, bottom, left, right)).
Window make_window(const Node& n, const std::vector<int64_t>& spatial, std::vector<int64_t> kernel,
                   bool ceil_mode) {
  size_t nd = spatial.size();
  Window w;
  w.kernel = std::move(kernel);
  w.stride = attr_ints(n, "stride", nd)
                 .value_or(attr_ints(n, "strides", nd).value_or(std::vector<int64_t>(nd, 1)));
  w.dilation = attr_ints(n, "dilation", nd).value_or(std::vector<int64_t>(nd, 1));
  if (w.stride.size() == nd + 2) w.stride = {w.stride.begin() + 2, w.stride.end()};
  if (w.dilation.size() == nd + 2) w.dilation = {w.dilation.begin() + 2, w.dilation.end()};
  if (w.stride.size() != nd || w.dilation.size() != nd) fail("bad stride/dilation attributes");
  const std::string mode = text::lower(attr_str(n, "pad_mode").value_or("valid"));
  w.pad_before.assign(nd, 0);
  w.pad_after.assign(nd, 0);
  w.out.resize(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t eff = (w.kernel[i] - 1) * w.dilation[i] + 1;
    if (mode == "same") {
      w.out[i] = (spatial[i] + w.stride[i] - 1) / w.stride[i];
      int64_t total = std::max<int64_t>((w.out[i] - 1) * w.stride[i] + eff - spatial[i], 0);
      w.pad_before[i] = total / 2;
      w.pad_after[i] = total - total / 2;
      continue;
    }
    if (mode == "pad") {
      auto p =
          attr_ints(n, "padding").value_or(attr_ints(n, "pad").value_or(std::vector<int64_t>{0}));
      if (p.size() == 1) {
        w.pad_before[i] = w.pad_after[i] = p[0];
      } else if (p.size() == nd) {
        w.pad_before[i] = w.pad_after[i] = p[i];
      } else if (p.size() == 2 * nd) {
        w.pad_before[i] = p[2 * i];
        w.pad_after[i] = p[2 * i + 1];
      } else {
        fail("bad padding attribute");
      }
    } else if (mode != "valid") {
      fail("unknown pad_mode '" + mode + "'");
    }
    int64_t span = spatial[i] + w.pad_before[i] + w.pad_after[i] - eff;
    if (span < 0) fail("window larger than the padded input");
    w.out[i] = (ceil_mode ? (span + w.stride[i] - 1) / w.stride[i] : span / w.stride[i]) + 1;
    if (ceil_mode && (w.out[i] - 1) * w.stride[i] >= spatial[i] + w.pad_before[i])
      --w.out[i];  // the last window must start inside the input (PyTorch/MindSpore rule)
  }
  return w;
}

// A 1-D convolution's window as a 2-D one of height 1 (the attributes describe the length).
Window window_1d(const Node& n, int64_t length, int64_t kernel) {
  Window w1 = make_window(n, {length}, {kernel}, false);
  Window w;
  w.kernel = {1, w1.kernel[0]};
  w.stride = {1, w1.stride[0]};
  w.dilation = {1, w1.dilation[0]};
  w.pad_before = {0, w1.pad_before[0]};
  w.pad_after = {0, w1.pad_after[0]};
  w.out = {1, w1.out[0]};
  return w;
}

// Conv2D on NCHW, and 1-D convolutions on NCL (nn.Conv1d's Conv2D with a (out, in, 1, k)
// weight, ops.conv1d's Conv1D with (out, in, k)) as height-1 images, as MindSpore runs them.
dnnl_ops::ConvGeometry conv_geometry(const std::vector<int64_t>& nchw, int64_t out_channels,
                                     int64_t groups, const Window& w) {
  dnnl_ops::ConvGeometry geo;
  geo.batch = nchw[0];
  geo.in_channels = nchw[1];
  geo.in_h = nchw[2];
  geo.in_w = nchw[3];
  geo.out_channels = out_channels;
  geo.kernel_h = w.kernel[0];
  geo.kernel_w = w.kernel[1];
  geo.groups = groups;
  geo.stride = {w.stride[0], w.stride[1]};
  geo.dilation = {w.dilation[0], w.dilation[1]};
  geo.pad_before = {w.pad_before[0], w.pad_before[1]};
  geo.pad_after = {w.pad_after[0], w.pad_after[1]};
  return geo;
}

void conv2d(KernelCall& c, const Tensor& x0, const Tensor& wt0, const Tensor* bias) {
  Tensor x = as_float(x0);
  Tensor wt = wt0;
  const bool one_d = x.rank() == 3;
  if (one_d) {
    if (wt.rank() == 3) wt = wt.reshape({wt.shape()[0], wt.shape()[1], 1, wt.shape()[2]});
    if (wt.rank() != 4 || wt.shape()[2] != 1) {
      fail("a 1-D convolution's weight must be (out, in, k) or (out, in, 1, k), got " +
           wt.type_str());
    }
    x = x.reshape({x.shape()[0], x.shape()[1], 1, x.shape()[2]});
  }
  if (x.rank() != 4) fail("Conv2D expects a 4-D NCHW input, got " + x.type_str());
  if (wt.rank() != 4) fail("Conv2D weight must be 4-D, got " + wt.type_str());
  if (auto fmt = attr_str(c.node, "data_format"); fmt && *fmt != "NCHW")
    fail("Conv2D data_format '" + *fmt + "' is not supported (NCHW only)");
  int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  int64_t oc = wt.shape()[0], icg = wt.shape()[1];
  int64_t groups = attr_int(c.node, "group").value_or(attr_int(c.node, "groups").value_or(1));
  if (groups <= 0 || ch != icg * groups || oc % groups != 0) {
    fail("Conv2D: input " + x.type_str() + " does not match weight " + wt.type_str() +
         " with group=" + std::to_string(groups));
  }
  Window w = one_d ? window_1d(c.node, wd, wt.shape()[3])
                   : make_window(c.node, {h, wd}, {wt.shape()[2], wt.shape()[3]}, false);
  if (bias && bias->numel() != oc) {
    fail("Conv2D bias " + bias->type_str() + " does not match " + std::to_string(oc) +
         " output channels");
  }
  std::vector<int64_t> out_dims = {n, oc, w.out[0], w.out[1]};
  if (n == 0 || w.out[0] == 0 || w.out[1] == 0) {
    if (one_d) out_dims.erase(out_dims.begin() + 2);
    emit(c, Tensor(out_dims, DType::Float32));
    return;
  }
  const dnnl_ops::ConvGeometry geo = conv_geometry(x.shape(), oc, groups, w);
  Tensor b32 = bias ? as_float(*bias).reshape({oc}) : Tensor();
  // Inference: the weights stay the same from run to run, their reordered copy is kept.
  Tensor y = dnnl_ops::conv2d_forward(geo, x, as_float(wt), bias ? &b32 : nullptr, !c.training);
  emit(c, one_d ? y.reshape({n, oc, w.out[1]}) : y);
}

void k_conv2d(KernelCall& c) {
  const Tensor* w = find_param(c, "weight");
  if (w) {
    bool has_bias = attr_bool(c.node, "has_bias").value_or(false);
    conv2d(c, in(c, 0), *w, has_bias ? find_param(c, "bias") : nullptr);
  } else {
    conv2d(c, in(c, 0), in(c, 1), c.inputs.size() > 2 ? &c.inputs[2] : nullptr);
  }
}

// ---- pooling
// --------------------------------------------------------------------------------------
void pool2d(KernelCall& c, bool is_max) {
  Tensor x = as_float(in(c, 0));
  if (x.rank() != 4) fail("pooling expects a 4-D NCHW input, got " + x.type_str());
  auto k = attr_ints(c.node, "kernel_size", 2).value_or(std::vector<int64_t>{1, 1});
  if (k.size() == 4) k = {k[2], k[3]};
  bool ceil_mode = attr_bool(c.node, "ceil_mode").value_or(false);
  int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  // The window (stride, pads, output size) with the max pools' dilation: the effective kernel
  // is d*(k-1)+1 and the taps are d apart.
  Window w = make_window(c.node, {h, wd}, k, ceil_mode);
  const std::string mode = text::lower(attr_str(c.node, "pad_mode").value_or("valid"));
  // 'same' averages over the valid elements; 'pad' follows count_include_pad (default True).
  bool include_pad = mode == "pad" && attr_bool(c.node, "count_include_pad").value_or(true);
  // nn.AvgPool2d(divisor_override=d): every window's sum is divided by d.
  const int64_t divisor = is_max ? 0 : attr_int(c.node, "divisor_override").value_or(0);
  int64_t oh = w.out[0], ow = w.out[1];
  // The data pointers are taken at once: a second emit may move the outputs.
  auto* py = emit(c, Tensor::uninitialized({n, ch, oh, ow}, DType::Float32)).data<float>();
  // return_indices=True: the maximum's flat index in its (h, w) plane, int64 (as MindSpore 2.10's
  // nn.MaxPool2d returns them), a second output.
  int64_t* pi = nullptr;
  if (is_max && c.node.outputs.size() >= 2)
    pi = emit(c, Tensor::uninitialized({n, ch, oh, ow}, DType::Int64)).data<int64_t>();
  const float* px = x.data<float>();
  const int64_t dh = w.dilation[0], dw = w.dilation[1];
  // Planes (sample, channel) on the runtime's threads.
  const int64_t plane_work = std::max<int64_t>(1, oh * ow * k[0] * k[1]);
  parallel_for(n * ch, std::max<int64_t>(1, kGrainCheap / plane_work), [&](int64_t p0, int64_t p1) {
    for (int64_t b = p0; b < p1; ++b) {
      const float* xc = px + b * h * wd;
      float* yc = py + b * oh * ow;
      for (int64_t r = 0; r < oh; ++r) {
        for (int64_t q = 0; q < ow; ++q) {
          int64_t h0 = r * w.stride[0] - w.pad_before[0];
          int64_t w0 = q * w.stride[1] - w.pad_before[1];
          if (is_max) {
            // The first maximum in row-major window order (NaN wins), taps outside the input
            // skipped (padding never wins).
            float acc = -std::numeric_limits<float>::infinity();
            int64_t at = -1;
            for (int64_t a = 0; a < k[0]; ++a) {
              const int64_t i = h0 + a * dh;
              if (i < 0 || i >= h) continue;
              for (int64_t e = 0; e < k[1]; ++e) {
                const int64_t j = w0 + e * dw;
                if (j < 0 || j >= wd) continue;
                const float v = xc[i * wd + j];
                if (at < 0 || v > acc || (std::isnan(v) && !std::isnan(acc))) {
                  acc = v;
                  at = i * wd + j;
                }
              }
            }
            yc[r * ow + q] = acc;
            if (pi != nullptr) pi[(b * oh + r) * ow + q] = std::max<int64_t>(at, 0);
            continue;
          }
          int64_t h1 = std::min(h0 + k[0], h + w.pad_after[0]);
          int64_t w1 = std::min(w0 + k[1], wd + w.pad_after[1]);
          int64_t pool_size = (h1 - h0) * (w1 - w0);
          int64_t hs = std::max<int64_t>(h0, 0), ws = std::max<int64_t>(w0, 0);
          int64_t he = std::min(h1, h), we = std::min(w1, wd);
          float acc = 0.0f;
          for (int64_t i = hs; i < he; ++i) {
            for (int64_t j = ws; j < we; ++j) acc += xc[i * wd + j];
          }
          int64_t cnt = divisor > 0 ? divisor : include_pad ? pool_size : (he - hs) * (we - ws);
          yc[r * ow + q] = cnt > 0 ? acc / static_cast<float>(cnt) : 0.0f;
        }
      }
    }
  });
}
void k_maxpool(KernelCall& c) { pool2d(c, true); }
void k_avgpool(KernelCall& c) { pool2d(c, false); }

// Adaptive pooling over the last `nd` dims (nn.AdaptiveAvgPool1d/2d/3d, ops.interpolate's
// 'area', nn.AdaptiveMaxPool2d and its indices, flat over the pooled dims): output cell i of a
// dim of n in, m out covers [floor(i n / m), ceil((i + 1) n / m)), so cells overlap when m does
// not divide n or m > n.
void adaptive_pool(KernelCall& c, size_t nd, bool is_max) {
  Tensor x = as_float(in(c, 0));
  if (x.rank() != nd + 1 && x.rank() != nd + 2) {
    fail(std::string(c.node.op) + " expects a " + std::to_string(nd + 1) + "-D or " +
         std::to_string(nd + 2) + "-D input, got " + x.type_str());
  }
  auto os = out_shape(c);
  if (!os || os->size() != x.rank()) fail("the output size of the adaptive pool is not known");
  const size_t first = x.rank() - nd;
  // The pooled dims as (depth, height, width), 1 where the pool has fewer.
  std::array<int64_t, 3> n{1, 1, 1}, m{1, 1, 1};
  for (size_t i = 0; i < nd; ++i) {
    n[3 - nd + i] = x.shape()[first + i];
    m[3 - nd + i] = (*os)[first + i];
  }
  const auto window = [&](size_t d, int64_t i) {
    return std::pair{i * n[d] / m[d], ((i + 1) * n[d] + m[d] - 1) / m[d]};
  };
  int64_t planes = 1;
  for (size_t i = 0; i < first; ++i) planes *= x.shape()[i];
  Tensor values(*os, DType::Float32);
  Tensor indices(*os, DType::Int64);
  const float* px = x.data<float>();
  const int64_t plane = n[0] * n[1] * n[2];
  int64_t at = 0;
  for (int64_t b = 0; b < planes; ++b) {
    for (int64_t p = 0; p < m[0]; ++p) {
      for (int64_t r = 0; r < m[1]; ++r) {
        for (int64_t q = 0; q < m[2]; ++q, ++at) {
          const auto [zs, ze] = window(0, p);
          const auto [hs, he] = window(1, r);
          const auto [ws, we] = window(2, q);
          double acc = 0;
          float best = -std::numeric_limits<float>::infinity();
          int64_t best_at = (zs * n[1] + hs) * n[2] + ws;
          for (int64_t z = zs; z < ze; ++z) {
            for (int64_t i = hs; i < he; ++i) {
              for (int64_t j = ws; j < we; ++j) {
                const int64_t k = (z * n[1] + i) * n[2] + j;
                const float v = px[b * plane + k];
                acc += v;
                // The first NaN wins and stays (it propagates, as in MindSpore's max).
                if (!std::isnan(best) && (v > best || std::isnan(v))) {
                  best = v;
                  best_at = k;
                }
              }
            }
          }
          values.data<float>()[at] =
              is_max ? best
                     : static_cast<float>(acc /
                                          static_cast<double>((ze - zs) * (he - hs) * (we - ws)));
          indices.set(at, static_cast<double>(best_at));
        }
      }
    }
  }
  emit(c, std::move(values));
  if (is_max && c.node.outputs.size() == 2) emit(c, std::move(indices));
}
void k_adaptive_avgpool(KernelCall& c) {
  const std::string_view op = c.node.op;
  adaptive_pool(c, op == "AdaptiveAvgPool1D" ? 1 : op == "AdaptiveAvgPool3D" ? 3 : 2, false);
}
void k_adaptive_maxpool(KernelCall& c) { adaptive_pool(c, 2, true); }

// ---- normalisation
// --------------------------------------------------------------------------------
bool batchnorm_uses_batch_stats(const KernelCall& c) {
  if (c.params.empty()) return attr_bool(c.node, "is_training").value_or(false);
  return attr_bool(c.node, "use_batch_statistics").value_or(c.training);
}

void batch_moments(const Tensor& x, std::vector<double>* mean, std::vector<double>* var) {
  const int64_t ch = x.shape()[1];
  int64_t inner = 1;
  for (size_t i = 2; i < x.rank(); ++i) inner *= x.shape()[i];
  const int64_t outer = x.shape()[0];
  const auto count = static_cast<double>(outer * inner);
  if (count == 0) fail("BatchNorm in training mode needs a non-empty batch, got " + x.type_str());
  mean->assign(ch, 0);
  var->assign(ch, 0);
  const auto* px = x.data<float>();
  // Channels on the runtime's threads; each channel sums in the same order (sample, position)
  // whatever the split.
  parallel_for(ch, std::max<int64_t>(1, kGrainCheap / std::max<int64_t>(1, outer * inner)),
               [&](int64_t c0, int64_t c1) {
                 for (int64_t i = c0; i < c1; ++i) {
                   double m = 0;
                   for (int64_t b = 0; b < outer; ++b) {
                     for (int64_t k = 0; k < inner; ++k) m += px[(b * ch + i) * inner + k];
                   }
                   m /= count;
                   double v = 0;
                   for (int64_t b = 0; b < outer; ++b) {
                     for (int64_t k = 0; k < inner; ++k) {
                       const double d = px[(b * ch + i) * inner + k] - m;
                       v += d * d;
                     }
                   }
                   (*mean)[i] = m;
                   (*var)[i] = v / count;
                 }
               });
}

void k_batchnorm(KernelCall& c) {
  Tensor x = as_float(in(c, 0));
  const Tensor *gamma = find_param(c, "gamma"), *beta = find_param(c, "beta");
  const Tensor *mean = find_param(c, "moving_mean"), *var = find_param(c, "moving_variance");
  if (!gamma && c.inputs.size() >= 5) {  // ops.BatchNorm(x, scale, bias, mean, variance)
    gamma = &c.inputs[1];
    beta = &c.inputs[2];
    mean = &c.inputs[3];
    var = &c.inputs[4];
  }
  if (!gamma || !beta || !mean || !var) fail("BatchNorm: gamma/beta/moving statistics missing");
  double eps = attr_float(c.node, "eps").value_or(attr_float(c.node, "epsilon").value_or(1e-5));
  if (x.rank() < 2) fail("BatchNorm expects (N, C, ...), got " + x.type_str());
  int64_t ch = x.shape()[1];
  int64_t inner = 1;
  for (size_t i = 2; i < x.rank(); ++i) inner *= x.shape()[i];
  int64_t outer = x.shape()[0];
  for (const Tensor* t : {gamma, beta, mean, var}) {
    if (t->numel() != ch) {
      fail("BatchNorm parameter " + t->type_str() + " does not match " + std::to_string(ch) +
           " channels");
    }
  }
  // Training (Cell.set_train(True), or use_batch_statistics=True): the batch's mean and biased
  // variance, as MindSpore 2.10 normalises (its moving statistics are BatchNormUpdate's).
  const bool batch_stats = batchnorm_uses_batch_stats(c);
  std::vector<double> bmean, bvar;
  if (batch_stats) batch_moments(x, &bmean, &bvar);
  Tensor& y = emit(c, Tensor::uninitialized(x.shape(), DType::Float32));
  std::vector<float> scale(ch), shift(ch);
  for (int64_t i = 0; i < ch; ++i) {
    const double m = batch_stats ? bmean[i] : mean->at(i);
    const double v = batch_stats ? bvar[i] : var->at(i);
    double s = gamma->at(i) / std::sqrt(v + eps);
    scale[i] = static_cast<float>(s);
    shift[i] = static_cast<float>(beta->at(i) - m * s);
  }
  const float* px = x.data<float>();
  auto* py = y.data<float>();
  // Planes (sample, channel) on the runtime's threads.
  parallel_for(outer * ch, std::max<int64_t>(1, kGrainCheap / std::max<int64_t>(1, inner)),
               [&](int64_t p0, int64_t p1) {
                 for (int64_t p = p0; p < p1; ++p) {
                   const int64_t i = p % ch;
                   Eigen::Map<Eigen::ArrayXf>(py + p * inner, inner) =
                       Eigen::Map<const Eigen::ArrayXf>(px + p * inner, inner) * scale[i] +
                       shift[i];
                 }
               });
  for (size_t i = 1; i < c.node.outputs.size(); ++i) {  // primitive: batch mean/var outputs
    emit(c, i % 2 ? mean->clone() : var->clone());
  }
}

void k_layernorm(KernelCall& c) {
  Tensor x = as_float(in(c, 0));
  const Tensor *gamma = find_param(c, "gamma"), *beta = find_param(c, "beta");
  if (!gamma && c.inputs.size() >= 3) {
    gamma = &c.inputs[1];
    beta = &c.inputs[2];
  }
  int64_t begin = attr_int(c.node, "begin_norm_axis").value_or(-1);
  begin = norm_axis(begin, x.rank());
  double eps = attr_float(c.node, "epsilon").value_or(attr_float(c.node, "eps").value_or(1e-7));
  int64_t inner = 1;
  for (auto i = static_cast<size_t>(begin); i < x.rank(); ++i) inner *= x.shape()[i];
  int64_t outer = inner ? x.numel() / inner : 0;
  if (gamma && gamma->numel() != inner) {
    fail("LayerNorm: gamma " + gamma->type_str() + " does not match normalized size " +
         std::to_string(inner) + " (begin_params_axis other than begin_norm_axis is unsupported)");
  }
  Tensor& y = emit(c, Tensor::uninitialized(x.shape(), DType::Float32));
  // Each row's mean and (biased) variance: ops.LayerNorm's outputs 1 and 2.
  const bool stats = c.node.outputs.size() > 1;
  std::vector<float> means(stats ? static_cast<size_t>(outer) : 0);
  std::vector<float> vars(means.size());
  // Rows on the runtime's threads (each row's mean and variance as the serial loop sums them).
  parallel_for(outer, std::max<int64_t>(1, kGrainCheap / std::max<int64_t>(1, inner)),
               [&](int64_t o0, int64_t o1) {
                 for (int64_t o = o0; o < o1; ++o) {
                   Eigen::Map<const Eigen::ArrayXf> xr(x.data<float>() + o * inner, inner);
                   Eigen::Map<Eigen::ArrayXf> yr(y.data<float>() + o * inner, inner);
                   float mu = xr.mean();
                   float var = (xr - mu).square().mean();
                   if (stats) {
                     means[static_cast<size_t>(o)] = mu;
                     vars[static_cast<size_t>(o)] = var;
                   }
                   float rs = 1.0f / std::sqrt(var + static_cast<float>(eps));
                   yr = (xr - mu) * rs;
                   if (gamma) yr *= Eigen::Map<const Eigen::ArrayXf>(gamma->data<float>(), inner);
                   if (beta) yr += Eigen::Map<const Eigen::ArrayXf>(beta->data<float>(), inner);
                 }
               });
  // ops.LayerNorm returns (y, mean, variance) (measured on MindSpore 2.10 CPU), the statistics
  // with the normalized axes kept as 1s.
  for (size_t i = 1; i < c.node.outputs.size() && i < 3; ++i) {
    std::vector<int64_t> shape = x.shape();
    for (auto a = static_cast<size_t>(begin); a < shape.size(); ++a) shape[a] = 1;
    Tensor& t = emit(c, Tensor(shape, out_dtype(c, i, DType::Float32)));
    const std::vector<float>& v = i == 1 ? means : vars;
    for (int64_t o = 0; o < outer; ++o) t.set(o, v[static_cast<size_t>(o)]);
  }
}

// nn.GroupNorm over (N, C, *): the channels of each sample in num_groups groups, each group
// normalised over its channels and spatial positions (biased variance), then gamma/beta per
// channel.
void k_group_norm(KernelCall& c) {
  Tensor x = as_float(in(c, 0));
  if (x.rank() < 2) fail("GroupNorm expects (N, C, ...), got " + x.type_str());
  const int64_t n = x.shape()[0], ch = x.shape()[1];
  const int64_t groups = attr_int(c.node, "num_groups").value_or(1);
  if (groups <= 0 || ch % groups != 0) {
    fail("GroupNorm: " + std::to_string(ch) + " channels cannot form " + std::to_string(groups) +
         " groups");
  }
  const double eps = attr_float(c.node, "eps").value_or(1e-5);
  const Tensor *gamma = find_param(c, "gamma"), *beta = find_param(c, "beta");
  if ((gamma && gamma->numel() != ch) || (beta && beta->numel() != ch))
    fail("GroupNorm: gamma/beta do not have " + std::to_string(ch) + " elements");
  const int64_t spatial = n * ch == 0 ? 0 : x.numel() / (n * ch);
  const int64_t group_size = ch / groups * spatial;
  Tensor& y = emit(c, Tensor(x.shape(), DType::Float32));
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t offset = (s * ch + g * (ch / groups)) * spatial;
      Eigen::Map<const Eigen::ArrayXf> xg(x.data<float>() + offset, group_size);
      Eigen::Map<Eigen::ArrayXf> yg(y.data<float>() + offset, group_size);
      const float mu = xg.mean();
      const float var = (xg - mu).square().mean();
      yg = (xg - mu) / std::sqrt(var + static_cast<float>(eps));
      for (int64_t k = 0; k < ch / groups; ++k) {
        const int64_t channel = g * (ch / groups) + k;
        auto block = yg.segment(k * spatial, spatial);
        if (gamma) block *= gamma->data<float>()[channel];
        if (beta) block += beta->data<float>()[channel];
      }
    }
  }
}

// ---- softmax
// ----------------------------------------------------------------------------------------
// Softmax (or its log) over the `axis` attribute; `negate`: of -x (Softmin).
void softmax(KernelCall& c, bool log, bool negate = false) {
  Tensor x = as_float(in(c, 0));
  if (negate) {
    x = x.clone();
    Eigen::Map<Eigen::ArrayXf>(x.data<float>(), x.numel()) *= -1.0f;
  }
  auto axes = attr_ints(c.node, "axis").value_or(std::vector<int64_t>{-1});
  if (axes.size() != 1) fail("Softmax over several axes is not supported");
  int64_t axis = norm_axis(axes[0], x.rank());
  int64_t len = x.shape()[axis];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  int64_t outer = (len * inner) != 0 ? x.numel() / (len * inner) : 0;
  Tensor& y = emit(c, Tensor::uninitialized(x.shape(), DType::Float32));
  if (!log) {  // oneDNN's softmax: max, exp (vectorized), sum and scale per line along the axis
    dnnl_ops::softmax(x.data<float>(), y.data<float>(), outer, len, inner, false);
    return;
  }
  // LogSoftmax: libm's exp and log in double (oneDNN's logsoftmax is off by up to ~5e-6
  // absolute, ~1e-4 relative, for values near log(1)).
  const float* px = x.data<float>();
  auto* py = y.data<float>();
  // Lines along the axis (outer, inner) on the runtime's threads.
  parallel_for(outer * inner, std::max<int64_t>(1, kGrainMath / std::max<int64_t>(1, len)),
               [&](int64_t l0, int64_t l1) {
                 for (int64_t line = l0; line < l1; ++line) {
                   const int64_t o = line / inner, i = line % inner;
                   {
                     const float* xs = px + o * len * inner + i;
                     float* ys = py + o * len * inner + i;
                     float mx = -std::numeric_limits<float>::infinity();
                     for (int64_t k = 0; k < len; ++k) mx = std::max(mx, xs[k * inner]);
                     double sum = 0;
                     for (int64_t k = 0; k < len; ++k)
                       sum += std::exp(static_cast<double>(xs[k * inner] - mx));
                     auto ls = static_cast<float>(std::log(sum));
                     for (int64_t k = 0; k < len; ++k) ys[k * inner] = xs[k * inner] - mx - ls;
                   }
                 }
               });
}
void k_softmax(KernelCall& c) { softmax(c, false); }
void k_log_softmax(KernelCall& c) { softmax(c, true); }
void k_softmin(KernelCall& c) { softmax(c, false, true); }

// ---- reductions
// -----------------------------------------------------------------------------------
enum class Red { Sum, Mean, Max, Min, Prod };

// The reduced axes: the "axis" attribute, else inferred from the input and output shapes (the
// graph does not record call-time axis arguments). Throws when the shapes are ambiguous.
std::vector<int64_t> reduce_axes(const KernelCall& c, const std::vector<int64_t>& in_shape,
                                 bool* keep) {
  size_t r = in_shape.size();
  auto os = out_shape(c);
  std::optional<bool> keep_attr = attr_bool(c.node, "keep_dims");
  if (!keep_attr) keep_attr = attr_bool(c.node, "keepdims");
  if (auto ax = attr_ints(c.node, "axis")) {
    std::vector<int64_t> axes;
    for (int64_t a : *ax) axes.push_back(norm_axis(a, r));
    if (axes.empty())
      for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
    *keep = keep_attr.value_or(os && os->size() == r && r > 0);
    return axes;
  }
  if (!os) fail("the reduction axes are not recorded and the output shape is not known");
  if (os->size() == r && (keep_attr.value_or(true) || r == 0)) {
    *keep = true;
    std::vector<int64_t> axes;
    for (size_t i = 0; i < r; ++i) {
      if ((*os)[i] != in_shape[i]) {
        if ((*os)[i] != 1) fail("output shape does not match a reduction of the input");
        axes.push_back(static_cast<int64_t>(i));
      }
    }
    return axes;
  }
  *keep = false;
  // Every subset of axes whose removal gives the output shape; the non-trivial (size > 1) axes
  // must agree across candidates.
  std::optional<std::vector<int64_t>> chosen;
  std::vector<int64_t> chosen_big;
  for (uint32_t mask = 0; mask < (1u << r); ++mask) {
    std::vector<int64_t> rest, axes, big;
    for (size_t i = 0; i < r; ++i) {
      if (mask & (1u << i)) {
        axes.push_back(static_cast<int64_t>(i));
        if (in_shape[i] != 1) big.push_back(static_cast<int64_t>(i));
      } else {
        rest.push_back(in_shape[i]);
      }
    }
    if (rest != *os) continue;
    if (chosen && big != chosen_big) {
      fail("the reduction axes are not recorded in the graph and the shapes " +
           shape_str(in_shape) + " -> " + shape_str(*os) + " are ambiguous");
    }
    if (!chosen) {
      chosen = axes;
      chosen_big = big;
    }
  }
  if (!chosen)
    fail("output shape " + shape_str(*os) + " is not a reduction of " + shape_str(in_shape));
  return *chosen;
}

Tensor reduce_one(const Tensor& x, int64_t axis, Red op) {
  std::vector<int64_t> shape = x.shape();
  int64_t len = shape[axis];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  int64_t outer = (len * inner) != 0 ? x.numel() / (len * inner) : 0;
  shape[axis] = 1;
  Tensor y(shape, x.dtype() == DType::Float16 ? DType::Float16 : DType::Float32);
  const auto* px = x.data<float>();
  auto* py = y.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    float* yo = py + o * inner;
    const float* xo = px + o * len * inner;
    if (inner == 1) {
      Eigen::Map<const Eigen::ArrayXf> row(xo, len);
      switch (op) {
        case Red::Sum:
          yo[0] = row.sum();
          break;
        case Red::Mean:
          yo[0] = row.mean();
          break;
        case Red::Max:
          yo[0] = row.maxCoeff();
          break;
        case Red::Min:
          yo[0] = row.minCoeff();
          break;
        case Red::Prod:
          yo[0] = row.prod();
          break;
      }
      continue;
    }
    Eigen::Map<Eigen::ArrayXf> acc(yo, inner);
    acc = Eigen::Map<const Eigen::ArrayXf>(xo, inner);
    for (int64_t k = 1; k < len; ++k) {
      Eigen::Map<const Eigen::ArrayXf> v(xo + k * inner, inner);
      switch (op) {
        case Red::Sum:
        case Red::Mean:
          acc += v;
          break;
        case Red::Max:
          acc = acc.max(v);
          break;
        case Red::Min:
          acc = acc.min(v);
          break;
        case Red::Prod:
          acc *= v;
          break;
      }
    }
    if (op == Red::Mean) acc /= static_cast<float>(len);
  }
  return y;
}

void extremum_with_index(KernelCall& c, bool is_max);

void reduce(KernelCall& c, Red op) {
  // x.max(dim) / x.min(dim): (values, indices), as ops.max / ops.min.
  if ((op == Red::Max || op == Red::Min) && c.node.outputs.size() == 2)
    return extremum_with_index(c, op == Red::Max);
  const Tensor& x0 = in(c, 0);
  bool keep = false;
  std::vector<int64_t> axes = reduce_axes(c, x0.shape(), &keep);
  Tensor x = as_float(x0);
  for (int64_t a : axes) x = reduce_one(x, a, op);
  std::vector<int64_t> shape;
  std::set<int64_t> ax(axes.begin(), axes.end());
  for (size_t i = 0; i < x0.rank(); ++i)
    if (keep || !ax.count(static_cast<int64_t>(i))) shape.push_back(x.shape()[i]);
  x = x.reshape(shape);
  DType dt = out_dtype(c, 0, x0.dtype());
  emit(c, dt == x.dtype() ? x : x.cast(dt));
}
void k_reduce_sum(KernelCall& c) { reduce(c, Red::Sum); }
void k_reduce_mean(KernelCall& c) { reduce(c, Red::Mean); }
void k_reduce_max(KernelCall& c) { reduce(c, Red::Max); }
void k_reduce_min(KernelCall& c) { reduce(c, Red::Min); }
void k_reduce_prod(KernelCall& c) { reduce(c, Red::Prod); }

void k_argmax(KernelCall& c, bool is_max) {
  Tensor x = as_float(in(c, 0));
  int64_t axis = norm_axis(attr_int(c.node, "axis").value_or(-1), x.rank());
  int64_t len = x.shape()[axis];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  int64_t outer = (len * inner) != 0 ? x.numel() / (len * inner) : 0;
  std::vector<int64_t> shape = x.shape();
  auto os = out_shape(c);
  if (os && os->size() == shape.size()) {
    shape[axis] = 1;
  } else {
    shape.erase(shape.begin() + axis);
  }
  Tensor& y = emit(c, Tensor(shape, out_dtype(c, 0, DType::Int32)));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      float bv = x.data<float>()[o * len * inner + i];
      for (int64_t k = 1; k < len; ++k) {
        float v = x.data<float>()[(o * len + k) * inner + i];
        if (is_max ? v > bv : v < bv) {
          bv = v;
          best = k;
        }
      }
      y.set(o * inner + i, static_cast<double>(best));
    }
  }
}
void k_argmax_(KernelCall& c) { k_argmax(c, true); }
void k_argmin_(KernelCall& c) { k_argmax(c, false); }

// ---- shape manipulation
// ---------------------------------------------------------------------------
void k_reshape(KernelCall& c) {
  const Tensor& x = in(c, 0);
  auto os = out_shape(c);
  if (!os) {
    if (c.node.op == "Flatten") {
      int64_t s = norm_axis(attr_int(c.node, "start_dim").value_or(1), x.rank());
      int64_t e = norm_axis(attr_int(c.node, "end_dim").value_or(-1), x.rank());
      std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + s);
      shape.push_back(-1);
      shape.insert(shape.end(), x.shape().begin() + e + 1, x.shape().end());
      emit(c, x.reshape(shape));
      return;
    }
    fail("the output shape is not fully known");
  }
  emit(c, x.reshape(*os));
}

void transpose_to(KernelCall& c, const Tensor& x, const std::vector<int64_t>& perm) {
  size_t r = x.rank();
  std::vector<int64_t> shape(r);
  for (size_t i = 0; i < r; ++i) shape[i] = x.shape()[perm[i]];
  // Every element is written below.
  Tensor& y = emit(c, Tensor::uninitialized(shape, x.dtype()));
  std::vector<int64_t> in_strides(r, 1);
  for (size_t i = r - 1; i-- > 0;) in_strides[i] = in_strides[i + 1] * x.shape()[i + 1];
  std::vector<int64_t> st(r);
  for (size_t i = 0; i < r; ++i) st[i] = in_strides[perm[i]];
  std::vector<int64_t> zero(r, 0);
  size_t es = x.element_size();
  const auto* src =
      x.is_float()                ? reinterpret_cast<const std::byte*>(x.data<float>())
      : x.dtype() == DType::Int32 ? reinterpret_cast<const std::byte*>(x.data<int32_t>())
      : x.dtype() == DType::Int64 ? reinterpret_cast<const std::byte*>(x.data<int64_t>())
                                  : reinterpret_cast<const std::byte*>(x.data<uint8_t>());
  auto* dst = y.is_float()                ? reinterpret_cast<std::byte*>(y.data<float>())
              : y.dtype() == DType::Int32 ? reinterpret_cast<std::byte*>(y.data<int32_t>())
              : y.dtype() == DType::Int64 ? reinterpret_cast<std::byte*>(y.data<int64_t>())
                                          : reinterpret_cast<std::byte*>(y.data<uint8_t>());
  if (r >= 2 && perm[r - 1] == static_cast<int64_t>(r - 1) && shape[r - 1] > 0) {
    // The last axis stays last (the attention's head split and merge, (0, 2, 1, 3)): whole rows
    // are contiguous in both tensors and copied as they are, row after row.
    const auto run = static_cast<size_t>(shape[r - 1]) * es;
    const int64_t rows = y.numel() / shape[r - 1];
    std::vector<int64_t> idx(r - 1, 0);
    int64_t off = 0;
    for (int64_t row = 0; row < rows; ++row) {
      std::memcpy(dst + static_cast<size_t>(row) * run, src + off * static_cast<int64_t>(es), run);
      for (size_t d = r - 1; d-- > 0;) {
        off += st[d];
        if (++idx[d] < shape[d]) break;
        off -= st[d] * shape[d];
        idx[d] = 0;
      }
    }
    return;
  }
  if (es == 4) {
    const auto* s4 = reinterpret_cast<const uint32_t*>(src);
    auto* d4 = reinterpret_cast<uint32_t*>(dst);
    for_broadcast(shape, st, zero, [&](int64_t o, int64_t i, int64_t) { d4[o] = s4[i]; });
  } else {
    for_broadcast(shape, st, zero, [&](int64_t o, int64_t i, int64_t) {
      std::memcpy(dst + o * es, src + i * es, es);
    });
  }
}

void k_transpose(KernelCall& c) {
  const Tensor& x = in(c, 0);
  size_t r = x.rank();
  std::optional<std::vector<int64_t>> perm = attr_ints(c.node, "perm");
  if (!perm) perm = attr_ints(c.node, "input_perm");
  if (perm) {
    for (int64_t& p : *perm) p = norm_axis(p, r);
    transpose_to(c, x, *perm);
    return;
  }
  // The permutation is not recorded: infer it from the shapes. Candidates that order the
  // non-trivial (size > 1) axes the same way move the same data.
  auto os = out_shape(c);
  if (!os || os->size() != r)
    fail("the permutation is not recorded and the output shape is unknown");
  std::vector<int64_t> p(r);
  std::iota(p.begin(), p.end(), 0);
  std::optional<std::vector<int64_t>> chosen, chosen_big;
  do {
    bool ok = true;
    for (size_t i = 0; i < r && ok; ++i) ok = x.shape()[p[i]] == (*os)[i];
    if (!ok) continue;
    std::vector<int64_t> big;
    for (int64_t a : p)
      if (x.shape()[a] != 1) big.push_back(a);
    if (chosen && big != *chosen_big) {
      fail("the permutation is not recorded in the graph and " + shape_str(x.shape()) + " -> " +
           shape_str(*os) + " is ambiguous");
    }
    if (!chosen) {
      chosen = p;
      chosen_big = big;
    }
  } while (std::next_permutation(p.begin(), p.end()));
  if (!chosen)
    fail("output shape " + shape_str(*os) + " is not a permutation of " + shape_str(x.shape()));
  transpose_to(c, x, *chosen);
}

void k_concat(KernelCall& c) {
  if (c.inputs.empty()) fail("Concat needs inputs");
  const Tensor& x0 = c.inputs[0];
  size_t r = x0.rank();
  std::optional<int64_t> axis = attr_int(c.node, "axis");
  auto os = out_shape(c);
  if (!axis) {
    if (!os) fail("the concat axis is not recorded and the output shape is unknown");
    for (size_t i = 0; i < r; ++i)
      if ((*os)[i] != x0.shape()[i]) axis = static_cast<int64_t>(i);
    if (!axis) axis = 0;  // MindSpore's default
  }
  int64_t a = norm_axis(*axis, r);
  std::vector<int64_t> shape = x0.shape();
  shape[a] = 0;
  DType dt = out_dtype(c, 0, x0.dtype());
  for (const Tensor& t : c.inputs) {
    if (t.rank() != r) fail("Concat inputs have different ranks");
    for (size_t i = 0; i < r; ++i) {
      if (static_cast<int64_t>(i) != a && t.shape()[i] != x0.shape()[i]) {
        fail("Concat inputs " + x0.type_str() + " and " + t.type_str() + " differ off axis " +
             std::to_string(a));
      }
    }
    shape[a] += t.shape()[a];
  }
  Tensor& y = emit(c, Tensor(shape, dt));
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(a) + 1; i < r; ++i) inner *= shape[i];
  int64_t outer = 1;
  for (int64_t i = 0; i < a; ++i) outer *= shape[i];
  int64_t off = 0;
  for (const Tensor& t0 : c.inputs) {
    Tensor t = t0.dtype() == dt ? t0 : t0.cast(dt);
    int64_t blk = t.shape()[a] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      if (y.is_float()) {
        std::memcpy(y.data<float>() + o * shape[a] * inner + off, t.data<float>() + o * blk,
                    blk * sizeof(float));
      } else {
        for (int64_t k = 0; k < blk; ++k) y.set(o * shape[a] * inner + off + k, t.at(o * blk + k));
      }
    }
    off += blk;
  }
}

void k_stack(KernelCall& c) {
  if (c.inputs.empty()) fail("Stack needs inputs");
  int64_t axis = norm_axis(attr_int(c.node, "axis").value_or(0), c.inputs[0].rank() + 1);
  std::vector<Tensor> parts;
  for (const Tensor& t : c.inputs) {
    std::vector<int64_t> s = t.shape();
    s.insert(s.begin() + axis, 1);
    parts.push_back(t.reshape(s));
  }
  std::vector<const ParamState*> none;
  std::vector<Tensor> outs;
  KernelCall sub{c.node, parts, none, outs};
  k_concat(sub);
  emit(c, outs[0]);
}

void k_unstack(KernelCall& c) {
  const Tensor& x = in(c, 0);
  int64_t axis = norm_axis(attr_int(c.node, "axis").value_or(0), x.rank());
  int64_t len = x.shape()[axis];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  int64_t outer = (len * inner) != 0 ? x.numel() / (len * inner) : 0;
  std::vector<int64_t> shape = x.shape();
  shape.erase(shape.begin() + axis);
  for (int64_t k = 0; k < len; ++k) {
    Tensor& y = emit(c, Tensor(shape, x.dtype()));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) y.set(o * inner + i, x.at((o * len + k) * inner + i));
  }
}

void k_split(KernelCall& c) {
  const Tensor& x = in(c, 0);
  int64_t axis = norm_axis(attr_int(c.node, "axis").value_or(0), x.rank());
  size_t n = c.node.outputs.size();
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  int64_t len = x.shape()[axis];
  int64_t outer = (len * inner) != 0 ? x.numel() / (len * inner) : 0;
  int64_t start = 0;
  for (size_t k = 0; k < n; ++k) {
    auto os = out_shape(c, k);
    int64_t part = os ? (*os)[axis] : len / static_cast<int64_t>(n);
    std::vector<int64_t> shape = x.shape();
    shape[axis] = part;
    Tensor& y = emit(c, Tensor(shape, x.dtype()));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < part * inner; ++i)
        y.set(o * part * inner + i, x.at((o * len + start) * inner + i));
    }
    start += part;
  }
}

void k_tile(KernelCall& c) {
  const Tensor& x = in(c, 0);
  std::vector<int64_t> mult;
  if (auto m = attr_ints(c.node, "multiples")) {
    mult = *m;
  } else {
    auto os = out_shape(c);
    if (!os) fail("the multiples are not recorded and the output shape is unknown");
    std::vector<int64_t> xs = x.shape();
    while (xs.size() < os->size()) xs.insert(xs.begin(), 1);
    for (size_t i = 0; i < os->size(); ++i) {
      if (xs[i] == 0 || (*os)[i] % xs[i]) fail("output shape is not a tiling of the input");
      mult.push_back((*os)[i] / xs[i]);
    }
  }
  std::vector<int64_t> xs = x.shape();
  while (xs.size() < mult.size()) xs.insert(xs.begin(), 1);
  Tensor xr = x.reshape(xs);
  std::vector<int64_t> shape(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) shape[i] = xs[i] * mult[i];
  Tensor& y = emit(c, Tensor(shape, x.dtype()));
  size_t r = shape.size();
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t src = 0;
    for (size_t d = 0; d < r; ++d) src = src * xs[d] + idx[d] % xs[d];
    y.set(o, xr.at(src));
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

void k_broadcast_to(KernelCall& c) {
  const Tensor& x = in(c, 0);
  auto os = out_shape(c);
  if (!os) fail("the target shape is not known");
  Tensor& y = emit(c, Tensor(*os, x.dtype()));
  std::vector<int64_t> zero(os->size(), 0);
  for_broadcast(*os, bstrides(x.shape(), *os), zero,
                [&](int64_t o, int64_t i, int64_t) { y.set(o, x.at(i)); });
}

// ---- indexing
// -------------------------------------------------------------------------------------
void gather_rows(KernelCall& c, const Tensor& table, const Tensor& ids, int64_t axis) {
  if (ids.is_float()) fail("gather indices must be integers, got " + ids.type_str());
  axis = norm_axis(axis, table.rank());
  int64_t len = table.shape()[axis];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < table.rank(); ++i) inner *= table.shape()[i];
  int64_t outer = (len * inner) != 0 ? table.numel() / (len * inner) : 0;
  std::vector<int64_t> shape(table.shape().begin(), table.shape().begin() + axis);
  shape.insert(shape.end(), ids.shape().begin(), ids.shape().end());
  shape.insert(shape.end(), table.shape().begin() + axis + 1, table.shape().end());
  Tensor& y = emit(c, Tensor(shape, table.dtype()));
  int64_t n = ids.numel();
  for (int64_t k = 0; k < n; ++k) {
    auto id = static_cast<int64_t>(ids.at(k));
    if (id < 0 || id >= len) {
      fail("index " + std::to_string(id) + " at " + index_str(ids.shape(), k) +
           " is out of range [0, " + std::to_string(len) + ")");
    }
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n; ++k) {
      auto id = static_cast<int64_t>(ids.at(k));
      int64_t src = (o * len + id) * inner, dst = (o * n + k) * inner;
      if (table.is_float()) {
        std::memcpy(y.data<float>() + dst, table.data<float>() + src, inner * sizeof(float));
      } else {
        for (int64_t i = 0; i < inner; ++i) y.set(dst + i, table.at(src + i));
      }
    }
  }
}

void k_gather(KernelCall& c) {
  if (const Tensor* table = find_param(c, "embedding_table")) {
    if (attr_bool(c.node, "use_one_hot").value_or(false)) {
      // one_hot(ids) @ table is the same as a row gather.
    }
    gather_rows(c, *table, in(c, 0), 0);
    return;
  }
  const Tensor& x = in(c, 0);
  const Tensor& ids = in(c, 1);
  std::optional<int64_t> axis = attr_int(c.node, "axis");
  if (!axis) {
    auto os = out_shape(c);
    if (!os) fail("the gather axis is not recorded and the output shape is unknown");
    for (size_t a = 0; a < x.rank(); ++a) {
      std::vector<int64_t> s(x.shape().begin(), x.shape().begin() + a);
      s.insert(s.end(), ids.shape().begin(), ids.shape().end());
      s.insert(s.end(), x.shape().begin() + a + 1, x.shape().end());
      if (s == *os) {
        if (axis) fail("the gather axis is not recorded in the graph and the shapes are ambiguous");
        axis = static_cast<int64_t>(a);
      }
    }
    if (!axis) fail("output shape does not match a gather of the input");
  }
  gather_rows(c, x, ids, *axis);
}

void k_one_hot(KernelCall& c) {
  const Tensor& ids = in(c, 0);
  auto os = out_shape(c);
  int64_t axis = attr_int(c.node, "axis").value_or(-1);
  if (!os) fail("the one-hot depth is not known");
  int64_t a = norm_axis(axis, os->size());
  int64_t depth = attr_int(c.node, "depth").value_or((*os)[a]);
  double on = 1, off = 0;
  if (c.inputs.size() >= 3) {
    on = c.inputs[c.inputs.size() - 2].at(0);
    off = c.inputs[c.inputs.size() - 1].at(0);
  }
  Tensor& y = emit(c, Tensor::full(*os, off, out_dtype(c)));
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(a) + 1; i < os->size(); ++i) inner *= (*os)[i];
  int64_t outer = ids.numel() / std::max<int64_t>(inner, 1);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto id = static_cast<int64_t>(ids.at(o * inner + i));
      if (id >= 0 && id < depth) y.set((o * depth + id) * inner + i, on);
    }
  }
}

// One item of a basic index, from the StridedSlice attributes the evaluator records (begin, end,
// strides and the five masks: graphcore/src/trace.cpp, SliceAttrs).
// IndexItem: runtime/kernels.h.

std::vector<IndexItem> index_items(const Node& n) {
  auto begin = attr_ints(n, "begin"), end = attr_ints(n, "end"), strides = attr_ints(n, "strides");
  if (!begin || !end || !strides || begin->size() != end->size() ||
      begin->size() != strides->size() || begin->size() > 63)
    fail("the slice is not recorded in the graph (begin/end/strides)");
  auto mask = [&](std::string_view name) { return attr_int(n, name).value_or(0); };
  const int64_t begin_mask = mask("begin_mask"), end_mask = mask("end_mask"),
                ellipsis_mask = mask("ellipsis_mask"), new_axis_mask = mask("new_axis_mask"),
                shrink_mask = mask("shrink_axis_mask");
  std::vector<IndexItem> items;
  for (size_t k = 0; k < begin->size(); ++k) {
    const int64_t bit = int64_t{1} << k;
    if (new_axis_mask & bit) {
      items.push_back(IndexItem::of(IndexItem::NewAxis));
    } else if (ellipsis_mask & bit) {
      items.push_back(IndexItem::of(IndexItem::Ellipsis));
    } else if (shrink_mask & bit) {
      IndexItem it = IndexItem::of(IndexItem::Int);
      it.i = (*begin)[k];
      items.push_back(it);
    } else {
      IndexItem it = IndexItem::of(IndexItem::Slice);
      if (!(begin_mask & bit)) it.start = (*begin)[k];
      if (!(end_mask & bit)) it.stop = (*end)[k];
      it.step = (*strides)[k];
      if (it.step == 0) fail("slice step cannot be zero");
      items.push_back(it);
    }
  }
  return items;
}

SliceGeometry strided_slice_geometry(const Node& node, const std::vector<int64_t>& shape) {
  std::vector<IndexItem> items = index_items(node);
  size_t consumed = 0;
  for (const IndexItem& it : items)
    if (it.kind == IndexItem::Int || it.kind == IndexItem::Slice) ++consumed;
  std::vector<IndexItem> full;
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::Ellipsis) {
      for (size_t k = consumed; k < shape.size(); ++k)
        full.push_back(IndexItem::of(IndexItem::Slice));
      consumed = shape.size();
    } else {
      full.push_back(it);
    }
  }
  size_t used = 0;
  for (const IndexItem& it : full)
    if (it.kind != IndexItem::NewAxis) ++used;
  if (used > shape.size()) fail("too many indices for a tensor of shape " + shape_str(shape));
  for (size_t k = used; k < shape.size(); ++k) full.push_back(IndexItem::of(IndexItem::Slice));
  // Per input axis: start, step, count; and the output shape.
  size_t r = shape.size();
  SliceGeometry g;
  g.start.resize(r);
  g.step.resize(r);
  g.count.resize(r);
  std::vector<int64_t>& st = g.start;
  std::vector<int64_t>& step = g.step;
  std::vector<int64_t>& cnt = g.count;
  std::vector<int64_t>& out_shape_v = g.out;
  size_t axis = 0;
  for (const IndexItem& it : full) {
    if (it.kind == IndexItem::NewAxis) {
      out_shape_v.push_back(1);
      continue;
    }
    int64_t d = shape[axis];
    if (it.kind == IndexItem::Int) {
      int64_t i = it.i < 0 ? it.i + d : it.i;
      if (i < 0 || i >= d) {
        fail("index " + std::to_string(it.i) + " is out of bounds for axis " +
             std::to_string(axis) + " with size " + std::to_string(d));
      }
      st[axis] = i;
      step[axis] = 1;
      cnt[axis] = 1;
    } else {
      const SliceIndices b = slice_indices(it.start, it.stop, it.step, d);
      st[axis] = b.start;
      step[axis] = b.step;
      cnt[axis] = b.length;
      out_shape_v.push_back(b.length);
    }
    ++axis;
  }
  return g;
}

void k_strided_slice(KernelCall& c) {
  const Tensor& x = in(c, 0);
  const SliceGeometry g = strided_slice_geometry(c.node, x.shape());
  const size_t r = x.rank();
  const std::vector<int64_t>&st = g.start, &step = g.step, &cnt = g.count;
  const std::vector<int64_t>& out_shape_v = g.out;
  std::vector<int64_t> in_strides(r, 1);
  for (size_t i = r; i-- > 1;) in_strides[i - 1] = in_strides[i] * x.shape()[i];
  Tensor& y = emit(c, Tensor(out_shape_v, x.dtype()));
  std::vector<int64_t> idx(r, 0);
  int64_t total = 1;
  for (int64_t v : cnt) total *= v;
  for (int64_t o = 0; o < total; ++o) {
    int64_t src = 0;
    for (size_t d = 0; d < r; ++d) src += (st[d] + idx[d] * step[d]) * in_strides[d];
    y.set(o, x.at(src));
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < cnt[d]) break;
      idx[d] = 0;
    }
  }
}

void k_range(KernelCall& c) {
  auto start = attr_float(c.node, "start");
  auto limit = attr_float(c.node, "limit").value_or(attr_float(c.node, "end").value_or(0));
  auto delta = attr_float(c.node, "delta").value_or(attr_float(c.node, "step").value_or(1));
  if (!start && !attr_float(c.node, "limit") && !attr_float(c.node, "end"))
    fail("the start/end/step of the range are not recorded in the graph");
  auto os = out_shape(c);
  int64_t n = os && os->size() == 1
                  ? (*os)[0]
                  : static_cast<int64_t>(std::ceil((limit - start.value_or(0)) / delta));
  Tensor& y = emit(c, Tensor({n}, out_dtype(c, 0, DType::Int64)));
  for (int64_t i = 0; i < n; ++i) y.set(i, start.value_or(0) + static_cast<double>(i) * delta);
}

// ops.cumsum(x, axis): running sums along `axis`, in the output's dtype (its `dtype` argument,
// else the input's).
void k_cumsum(KernelCall& c) {
  const Tensor& x = in(c, 0);
  const auto axis_attr = attr_int(c.node, "axis");
  if (!axis_attr) fail("CumSum needs its axis attribute");
  const int64_t axis = norm_axis(*axis_attr, std::max<size_t>(x.rank(), 1));
  Tensor& y = emit(c, Tensor(x.shape(), out_dtype(c, 0, x.dtype())));
  const int64_t len = x.rank() == 0 ? 1 : x.shape()[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  const int64_t outer = len * inner == 0 ? 0 : x.numel() / (len * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) {
        const int64_t at = (o * len + k) * inner + i;
        sum += x.at(at);
        y.set(at, sum);
      }
    }
  }
}

// ---- statistics over axes, selection, padding ------------------------------------------------

// Visits x in groups: for each element of the output (the kept axes, in order), `f(out, group)`
// with the values along `axes` (row-major over those axes) as float.
template <class F>
void for_each_group(const Tensor& x, const std::vector<int64_t>& axes, F f) {
  const std::vector<int64_t>& shape = x.shape();
  const size_t r = shape.size();
  std::vector<int64_t> stride(r, 1);
  for (size_t i = r; i-- > 1;) stride[i - 1] = stride[i] * shape[i];
  std::vector<bool> reduced(r, false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  std::vector<size_t> kept_axes, red_axes;
  for (size_t i = 0; i < r; ++i) (reduced[i] ? red_axes : kept_axes).push_back(i);
  int64_t group = 1;
  for (size_t a : red_axes) group *= shape[a];
  const int64_t groups = group == 0 ? 0 : x.numel() / group;
  // The storage offset of the i-th index (row-major) over the axes `over` of x.
  const auto offset_of = [&](int64_t i, const std::vector<size_t>& over) {
    int64_t off = 0;
    for (size_t k = over.size(); k-- > 0;) {
      off += (i % shape[over[k]]) * stride[over[k]];
      i /= shape[over[k]];
    }
    return off;
  };
  // Offsets of the group's elements relative to its first, computed once.
  std::vector<int64_t> offsets(static_cast<size_t>(group), 0);
  for (int64_t g = 0; g < group; ++g) offsets[static_cast<size_t>(g)] = offset_of(g, red_axes);
  const Tensor xf = as_float(x);
  const auto* px = xf.data<float>();
  std::vector<float> values(static_cast<size_t>(group));
  for (int64_t o = 0; o < groups; ++o) {
    const int64_t base = offset_of(o, kept_axes);
    for (size_t g = 0; g < values.size(); ++g) values[g] = px[base + offsets[g]];
    f(o, std::span<const float>(values));
  }
}

// The output shape of a reduction of `in_shape` over `axes`.
std::vector<int64_t> reduced_shape(const std::vector<int64_t>& in_shape,
                                   const std::vector<int64_t>& axes, bool keep) {
  std::vector<int64_t> shape;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    const bool r = std::ranges::find(axes, static_cast<int64_t>(i)) != axes.end();
    if (!r) {
      shape.push_back(in_shape[i]);
    } else if (keep) {
      shape.push_back(1);
    }
  }
  return shape;
}

// A reduction computed group by group in double: `g(values)` gives one output element.
template <class G>
void group_reduce(KernelCall& c, G g) {
  const Tensor& x = in(c, 0);
  bool keep = false;
  const std::vector<int64_t> axes = reduce_axes(c, x.shape(), &keep);
  Tensor& y = emit(c, Tensor(reduced_shape(x.shape(), axes, keep), out_dtype(c, 0, x.dtype())));
  for_each_group(x, axes, [&](int64_t o, std::span<const float> v) { y.set(o, g(v)); });
}

// ops.std / ops.var / Tensor.std / Tensor.var: divisor n - ddof (a `correction` the user wrote
// is recorded as ddof by the API's rule).
void moments(KernelCall& c, bool std_dev) {
  const double ddof = static_cast<double>(attr_int(c.node, "ddof").value_or(0));
  group_reduce(c, [&](std::span<const float> v) {
    double mean = 0;
    for (float e : v) mean += e;
    mean /= static_cast<double>(v.size());
    double ss = 0;
    for (float e : v) ss += (e - mean) * (e - mean);
    const double var = ss / (static_cast<double>(v.size()) - ddof);
    return std_dev ? std::sqrt(var) : var;
  });
}
void k_reduce_std(KernelCall& c) { moments(c, true); }
void k_reduce_var(KernelCall& c) { moments(c, false); }

// log(sum(exp(x))) without overflow: max + log(sum(exp(x - max))).
void k_logsumexp(KernelCall& c) {
  group_reduce(c, [](std::span<const float> v) {
    double m = -std::numeric_limits<double>::infinity();
    for (float e : v) m = std::max(m, static_cast<double>(e));
    if (!std::isfinite(m)) return m;
    double sum = 0;
    for (float e : v) sum += std::exp(e - m);
    return m + std::log(sum);
  });
}

// ops.norm / Tensor.norm: ord None or 'fro' is the 2-norm of the elements over the axes (all of
// them without `dim`); a numeric ord over one axis is the vector p-norm (inf: max |x|, -inf:
// min |x|, 0: the count of non-zeros). Matrix norms (a numeric ord over two axes, 'nuc') are
// not implemented: the runtime says so.
void k_norm(KernelCall& c) {
  const AttrValue* ord = c.node.find_attr("ord");
  const auto p = attr_float(c.node, "ord");
  const auto s = attr_str(c.node, "ord");
  const bool two_norm =
      ord == nullptr || std::holds_alternative<std::monostate>(*ord) || (s && *s == "fro");
  if (!two_norm) {
    if (!p) fail("Norm: ord " + attr_to_string(*ord) + " is not implemented by the CPU runtime");
    bool keep = false;
    if (reduce_axes(c, in(c, 0).shape(), &keep).size() != 1) {
      fail("Norm: a matrix norm (ord " + attr_to_string(*ord) +
           " over two dims) is not implemented by the CPU runtime");
    }
  }
  group_reduce(c, [&](std::span<const float> v) {
    if (two_norm || *p == 2) {
      double ss = 0;
      for (float e : v) ss += static_cast<double>(e) * e;
      return std::sqrt(ss);
    }
    if (std::isinf(*p)) {
      double m = *p > 0 ? 0 : std::numeric_limits<double>::infinity();
      for (float e : v) {
        m = *p > 0 ? std::max(m, std::fabs(static_cast<double>(e)))
                   : std::min(m, std::fabs(static_cast<double>(e)));
      }
      return m;
    }
    if (*p == 0) {
      double n = 0;
      for (float e : v) n += e != 0 ? 1 : 0;
      return n;
    }
    double sum = 0;
    for (float e : v) sum += std::pow(std::fabs(static_cast<double>(e)), *p);
    return std::pow(sum, 1.0 / *p);
  });
}

// (values, indices) of the extremum over the axes, the first on ties; ops.max / ops.min and
// Tensor.max(dim) / Tensor.min(dim). Several axes are searched as one flattened axis.
void extremum_with_index(KernelCall& c, bool is_max) {
  const Tensor& x = in(c, 0);
  bool keep = false;
  const std::vector<int64_t> axes = reduce_axes(c, x.shape(), &keep);
  const std::vector<int64_t> shape = reduced_shape(x.shape(), axes, keep);
  // ops.max / Tensor.max give (values, indices); ops.ArgMaxWithValue (index, values).
  const bool index_first = c.node.outputs.size() == 2 && !is_floating(c.node.outputs[0].dtype) &&
                           is_floating(c.node.outputs[1].dtype);
  Tensor values(shape, out_dtype(c, index_first ? 1 : 0, x.dtype()));
  Tensor indices(shape, out_dtype(c, index_first ? 0 : 1, DType::Int64));
  for_each_group(x, axes, [&](int64_t o, std::span<const float> v) {
    size_t best = 0;
    for (size_t k = 1; k < v.size(); ++k) {
      if (std::isnan(v[best])) break;  // NaN wins, as in MindSpore's max/min
      if (std::isnan(v[k]) || (is_max ? v[k] > v[best] : v[k] < v[best])) best = k;
    }
    values.set(o, v.empty() ? 0 : v[best]);
    indices.set(o, static_cast<double>(best));
  });
  if (index_first) {
    emit(c, std::move(indices));
    emit(c, std::move(values));
  } else {
    emit(c, std::move(values));
    emit(c, std::move(indices));
  }
}
void k_argmax_with_value(KernelCall& c) { extremum_with_index(c, true); }
void k_argmin_with_value(KernelCall& c) { extremum_with_index(c, false); }

// ops.topk / Tensor.topk: the k largest (or smallest) along `dim` (default the last), values
// then int32 indices, in order of value (ties: the lower index first).
void k_topk(KernelCall& c) {
  const Tensor& x = in(c, 0);
  const auto k_attr = attr_int(c.node, "k");
  if (!k_attr) fail("TopK needs its k attribute");
  const size_t rank = std::max<size_t>(x.rank(), 1);
  const int64_t axis = norm_axis(attr_int(c.node, "dim").value_or(-1), rank);
  const int64_t len = x.rank() == 0 ? 1 : x.shape()[static_cast<size_t>(axis)];
  const int64_t k = *k_attr;
  if (k < 0 || k > len) {
    fail("TopK: k " + std::to_string(k) + " is out of range for a dim of size " +
         std::to_string(len));
  }
  const bool largest = attr_bool(c.node, "largest").value_or(true);
  std::vector<int64_t> shape = x.shape();
  if (!shape.empty()) shape[static_cast<size_t>(axis)] = k;
  // Emitted when filled: a second emit() may move the first.
  Tensor values(shape, out_dtype(c, 0, x.dtype()));
  Tensor indices(shape, out_dtype(c, 1, DType::Int32));
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  const int64_t outer = len * inner == 0 ? 0 : x.numel() / (len * inner);
  std::vector<int64_t> order(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const auto at = [&](int64_t j) { return x.at((o * len + j) * inner + i); };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? at(a) > at(b) : at(a) < at(b);
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t to = (o * k + j) * inner + i;
        values.set(to, at(order[static_cast<size_t>(j)]));
        indices.set(to, static_cast<double>(order[static_cast<size_t>(j)]));
      }
    }
  }
  emit(c, std::move(values));
  emit(c, std::move(indices));
}

// ops.narrow(x, axis, start, length): `length` elements along `axis` from `start` (MindSpore
// 2.10: start in [0, dim), length in [1, dim - start]).
void k_narrow(KernelCall& c) {
  const Tensor& x = in(c, 0);
  const auto axis_attr = attr_int(c.node, "axis");
  const auto start_attr = attr_int(c.node, "start");
  const auto length = attr_int(c.node, "length");
  if (!axis_attr || !start_attr || !length) fail("Narrow needs its axis, start and length");
  const int64_t axis = norm_axis(*axis_attr, x.rank());
  const int64_t len = x.shape()[static_cast<size_t>(axis)];
  const int64_t start = *start_attr;
  if (start < 0 || start >= len || *length < 1 || *length > len - start) {
    fail("Narrow: start " + std::to_string(*start_attr) + " and length " + std::to_string(*length) +
         " do not fit a dim of size " + std::to_string(len));
  }
  std::vector<int64_t> shape = x.shape();
  shape[static_cast<size_t>(axis)] = *length;
  Tensor& y = emit(c, Tensor(shape, x.dtype()));
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  const int64_t outer = len * inner == 0 ? 0 : x.numel() / (len * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < *length * inner; ++j)
      y.set(o * *length * inner + j, x.at((o * len + start) * inner + j));
  }
}

// ops.linspace(start, end, steps): float32, both ends included.
void k_linspace(KernelCall& c) {
  const auto start = attr_float(c.node, "start");
  const auto end = attr_float(c.node, "end");
  const auto steps = attr_int(c.node, "steps");
  if (!start || !end || !steps || *steps < 0) fail("LinSpace needs its start, end and steps");
  Tensor& y = emit(c, Tensor({*steps}, DType::Float32));
  const double step = *steps > 1 ? (*end - *start) / static_cast<double>(*steps - 1) : 0;
  for (int64_t i = 0; i < *steps; ++i)
    y.set(i, i == *steps - 1 && *steps > 1 ? *end : *start + step * static_cast<double>(i));
}

// Padding. nn.Pad: `paddings` (before, after) per dim from the first, mode CONSTANT (zeros),
// REFLECT (mirrored, the edge not repeated) or SYMMETRIC (the edge repeated). ops.pad:
// `padding` (before, after) pairs from the last dim backwards, mode constant (`value`, default
// 0; a negative amount crops), reflect, replicate or circular.
PadPlan pad_plan(const Node& n, const std::vector<int64_t>& x) {
  const size_t r = x.size();
  PadPlan p;
  p.before.assign(r, 0);
  p.after.assign(r, 0);
  if (auto flat = attr_ints(n, "paddings")) {
    if (flat->size() != 2 * r) fail("Pad: the paddings do not match the input's rank");
    for (size_t i = 0; i < r; ++i) {
      p.before[i] = (*flat)[2 * i];
      p.after[i] = (*flat)[2 * i + 1];
    }
  } else if (auto pairs = attr_ints(n, "padding")) {
    if (pairs->size() % 2 != 0 || pairs->size() / 2 > r)
      fail("Pad: the padding does not match the input's rank");
    for (size_t i = 0; i < pairs->size() / 2; ++i) {
      p.before[r - 1 - i] = (*pairs)[2 * i];
      p.after[r - 1 - i] = (*pairs)[2 * i + 1];
    }
  } else {
    fail("Pad: the padding is not recorded in the graph");
  }
  p.mode = text::lower(attr_str(n, "mode").value_or("constant"));
  p.value = attr_float(n, "value").value_or(0);
  p.in = x;
  p.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    p.out[i] = x[i] + p.before[i] + p.after[i];
    if (p.out[i] < 0) fail("Pad: a negative padding removes more than the dim holds");
    const int64_t len = x[i];
    const int64_t most = std::max(p.before[i], p.after[i]);
    if ((p.mode == "reflect" && most >= len) || (p.mode == "symmetric" && most > len) ||
        (p.mode != "constant" && len == 0)) {
      fail("Pad: " + p.mode + " padding of " + std::to_string(most) +
           " is too large for a dim of " + std::to_string(len));
    }
  }
  return p;
}

int64_t PadPlan::source(size_t d, int64_t o) const {
  const int64_t n = in[d];
  const int64_t i = o - before[d];
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "replicate" || mode == "edge") return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == "circular") return ((i % n) + n) % n;
  if (mode == "reflect") return i < 0 ? -i : 2 * (n - 1) - i;
  if (mode == "symmetric") return i < 0 ? -i - 1 : 2 * n - 1 - i;
  fail("Pad: mode '" + mode + "' is not implemented by the CPU runtime");
}

int64_t PadPlan::source_offset(int64_t o) const {
  int64_t rest = o, from = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t s = source(d, rest % out[d]);
    rest /= out[d];
    if (s < 0) return -1;
    from += s * stride;
    stride *= in[d];
  }
  return from;
}

void k_pad(KernelCall& c) {
  const Tensor& x = in(c, 0);
  const PadPlan p = pad_plan(c.node, x.shape());
  Tensor& y = emit(c, Tensor(p.out, x.dtype()));
  for (int64_t o = 0; o < y.numel(); ++o) {
    const int64_t from = p.source_offset(o);
    y.set(o, from < 0 ? p.value : x.at(from));
  }
}

// nn.PReLU: x where x > 0, else w * x with w per channel (dim 1) or one shared slope.
void k_prelu(KernelCall& c) {
  const Tensor& x = need_float(in(c, 0), "PReLU's input");
  const Tensor* w = find_param(c, "w");
  if (w == nullptr) fail("PReLU's slope parameter w is missing");
  const Tensor wf = as_float(*w);
  const int64_t channels = wf.numel();
  const int64_t cdim = x.rank() >= 2 ? x.shape()[1] : 1;
  if (channels != 1 && channels != cdim) {
    fail("PReLU: " + std::to_string(channels) + " slopes for " + std::to_string(cdim) +
         " channels");
  }
  int64_t inner = 1;
  for (size_t i = 2; i < x.rank(); ++i) inner *= x.shape()[i];
  Tensor& y = emit(c, Tensor(x.shape(), x.dtype()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.at(i);
    const int64_t ch = channels == 1 ? 0 : (i / inner) % cdim;
    y.set(i, v > 0 ? v : wf.at(ch) * v);
  }
}

// ops.invert: bitwise NOT of an integer tensor.
void k_invert(KernelCall& c) {
  const Tensor& x = in(c, 0);
  Tensor& y = emit(c, Tensor(x.shape(), x.dtype()));
  if (x.dtype() == DType::Int32) {
    for (int64_t i = 0; i < x.numel(); ++i) y.data<int32_t>()[i] = ~x.data<int32_t>()[i];
  } else if (x.dtype() == DType::Int64) {
    for (int64_t i = 0; i < x.numel(); ++i) y.data<int64_t>()[i] = ~x.data<int64_t>()[i];
  } else {
    fail("Invert takes an integer tensor, got " + x.type_str());
  }
}

// ops.LpNorm(axis, p, keep_dims, epsilon)(x): (sum |x|^p)^(1/p) over axis, at least epsilon
// (MindSpore 2.10: the norm of zeros is epsilon).
void k_lp_norm(KernelCall& c) {
  const double p = attr_float(c.node, "p").value_or(2);
  const double eps = attr_float(c.node, "epsilon").value_or(1e-12);
  if (p <= 0) fail("LpNorm: p must be positive, got " + std::to_string(p));
  group_reduce(c, [&](std::span<const float> v) {
    double sum = 0;
    for (float e : v) sum += std::pow(std::fabs(static_cast<double>(e)), p);
    return std::max(std::pow(sum, 1.0 / p), eps);
  });
}

// Roll (`shift` per axis in `axis`; no axis: the flattened tensor): y[i] = x[i - shift] along
// each axis, cyclically, as numpy.roll.
void k_roll(KernelCall& c) {
  const Tensor& x = in(c, 0);
  const auto shifts = attr_ints(c.node, "shift").value_or(std::vector<int64_t>{});
  const auto axes = attr_ints(c.node, "axis").value_or(std::vector<int64_t>{});
  Tensor& y = emit(c, Tensor(x.shape(), x.dtype()));
  const int64_t n = x.numel();
  if (n == 0) return;
  if (axes.empty()) {
    if (shifts.size() != 1) fail("Roll of the flattened tensor needs one shift");
    const int64_t s = ((shifts[0] % n) + n) % n;
    for (int64_t i = 0; i < n; ++i) y.set((i + s) % n, x.at(i));
    return;
  }
  if (shifts.size() != axes.size()) fail("Roll's shift and axis differ in length");
  const std::vector<int64_t>& shape = x.shape();
  // The total shift of each dim (an axis may be named twice: numpy adds the shifts).
  std::vector<int64_t> by(shape.size(), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = norm_axis(axes[k], x.rank());
    by[static_cast<size_t>(a)] += shifts[k];
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i;
    int64_t to = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t idx = rest / strides[d];
      rest %= strides[d];
      const int64_t len = shape[d];
      to += (((idx + by[d]) % len + len) % len) * strides[d];
    }
    y.set(to, x.at(i));
  }
}

AxisLines l2_normalize_lines(const Node& n, const Tensor& x) {
  AxisLines l;
  l.epsilon = attr_float(n, "epsilon").value_or(1e-4);
  auto axes = attr_ints(n, "axis").value_or(std::vector<int64_t>{0});
  if (axes.size() != 1) fail("L2Normalize over several axes is not supported");
  if (x.rank() == 0) fail("L2Normalize needs a tensor of rank 1 or more");
  const int64_t axis = norm_axis(axes[0], x.rank());
  l.len = x.shape()[static_cast<size_t>(axis)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.rank(); ++i) l.inner *= x.shape()[i];
  l.outer = (l.len * l.inner) != 0 ? x.numel() / (l.len * l.inner) : 0;
  return l;
}

// ops.L2Normalize(axis, epsilon)(x): x / sqrt(max(sum(x^2 over axis), epsilon)), as MindSpore
// 2.10 computes it (the epsilon bounds the sum of squares, not the norm: measured, a line of
// 1e-3 values under the default 1e-4 is divided by 0.01). One axis, as the primitive takes.
void k_l2_normalize(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const AxisLines lines = l2_normalize_lines(c.node, x);
  Tensor& y = emit(c, Tensor::uninitialized(x.shape(), DType::Float32));
  const auto* px = x.data<float>();
  auto* py = y.data<float>();
  parallel_for(lines.outer * lines.inner,
               std::max<int64_t>(1, kGrainMath / std::max<int64_t>(1, lines.len)),
               [&](int64_t l0, int64_t l1) {
                 for (int64_t line = l0; line < l1; ++line) {
                   const int64_t o = line / lines.inner, i = line % lines.inner;
                   const float* xs = px + (o * lines.len * lines.inner) + i;
                   float* ys = py + (o * lines.len * lines.inner) + i;
                   double sum = 0;
                   for (int64_t k = 0; k < lines.len; ++k) {
                     const auto v = static_cast<double>(xs[k * lines.inner]);
                     sum += v * v;
                   }
                   const double scale = 1.0 / std::sqrt(std::max(sum, lines.epsilon));
                   for (int64_t k = 0; k < lines.len; ++k) {
                     ys[k * lines.inner] =
                         static_cast<float>(static_cast<double>(xs[k * lines.inner]) * scale);
                   }
                 }
               });
}

// ---- resizing (ops.ResizeNearestNeighbor, ops.interpolate's operators) -------------------------
// Where output index `o` of a spatial dim (n in, m out) samples the input, continuously:
// align_corners maps the corner samples onto each other, half-pixel maps centres (o + 0.5)
// to centres, asymmetric maps o to o * step. `step` is in / out, or 1 / scale_factor when the
// call gave one (as MindSpore's and PyTorch's upsampling kernels do).
enum class ResizeGrid : uint8_t { AlignCorners, HalfPixel, Asymmetric };
double resize_source(ResizeGrid g, int64_t o, int64_t n, int64_t m, double step) {
  const auto od = static_cast<double>(o);
  switch (g) {
    case ResizeGrid::AlignCorners:
      return m > 1 ? od * static_cast<double>(n - 1) / static_cast<double>(m - 1) : 0;
    case ResizeGrid::HalfPixel:
      return (od + 0.5) * step - 0.5;
    case ResizeGrid::Asymmetric:
      return od * step;
  }
  return 0;
}

// The input's and the output's shapes and each spatial dim's step (see resize_source) of a
// resize whose spatial dims are all but the first two.
struct ResizeShape {
  std::vector<int64_t> in, out;
  std::vector<double> step;  // per dim; the first two unused
};
ResizeShape resize_shape(const Node& n, const std::vector<int64_t>& in,
                         const std::optional<std::vector<int64_t>>& os) {
  ResizeShape r{in, {}, {}};
  if (!os || os->size() != in.size() || in.size() < 3)
    fail("the output size of the resize is not known");
  r.out = *os;
  const size_t rank = in.size();
  const auto factors = attr_ints(n, "scale_factor", rank - 2);
  const auto factor = attr_float(n, "scale_factor");
  const bool recompute = attr_bool(n, "recompute_scale_factor").value_or(false);
  r.step.assign(rank, 1);
  for (size_t d = 2; d < rank; ++d) {
    double f = 0;
    if (!recompute && factor) f = *factor;
    if (!recompute && factors && factors->size() == rank - 2)
      f = static_cast<double>((*factors)[d - 2]);
    r.step[d] = f > 0 ? 1 / f : static_cast<double>(in[d]) / static_cast<double>(r.out[d]);
  }
  return r;
}

// The taps of each spatial dim chosen by `taps_of` (dim, output index) -> (input indices,
// weights): separable resampling of every plane.
template <class TapsOf>
ResizeTaps make_taps(const ResizeShape& r, TapsOf taps_of) {
  ResizeTaps t;
  t.in = r.in;
  t.out = r.out;
  const size_t rank = r.in.size();
  if (rank > ResizeTaps::kMaxRank)
    fail("a resize takes at most a 5-D input, got " + shape_str(r.in));
  t.taps.resize(rank);
  for (size_t d = 2; d < rank; ++d) {
    for (int64_t o = 0; o < r.out[d]; ++o) {
      auto [at, w] = taps_of(d, o);
      t.taps[d].push_back(ResizeTaps::Taps{std::move(at), std::move(w)});
    }
  }
  return t;
}

// Nearest neighbour. ops.ResizeNearestNeighbor and ops.interpolate(mode='nearest')
// (ResizeNearestNeighborV2, UpsampleNearest3D): floor of the asymmetric source, with
// align_corners its rounding (half_pixel_centers changes nothing: what MindSpore 2.10 computes
// on CPU, measured resizing 5x6 to 8x11 with and without it); mode='nearest-exact': the
// half-pixel source rounded half up.
ResizeTaps nearest_taps(const Node& node, const ResizeShape& r) {
  const bool align = attr_bool(node, "align_corners").value_or(false);
  const bool exact = attr_str(node, "mode") == "nearest-exact";
  const ResizeGrid g = align   ? ResizeGrid::AlignCorners
                       : exact ? ResizeGrid::HalfPixel
                               : ResizeGrid::Asymmetric;
  return make_taps(r, [&](size_t d, int64_t o) {
    const int64_t n = r.in[d];
    const double at = resize_source(g, o, n, r.out[d], r.step[d]);
    const double i = align ? std::round(at) : std::floor(exact ? at + 0.5 : at);
    return std::pair{std::vector<int64_t>{std::clamp<int64_t>(static_cast<int64_t>(i), 0, n - 1)},
                     std::vector<double>{1.0}};
  });
}

// Linear interpolation along every spatial dim: ops.interpolate's 'linear' (ResizeLinear1D),
// 'bilinear' (ResizeBilinearV2) and 'trilinear' (UpsampleTrilinear3D). Half-pixel sources
// below 0 clamp to 0; checked against MindSpore 2.10 on CPU and PyTorch.
ResizeTaps linear_taps(const Node& node, const ResizeShape& r) {
  const ResizeGrid g = attr_bool(node, "align_corners").value_or(false) ? ResizeGrid::AlignCorners
                                                                        : ResizeGrid::HalfPixel;
  return make_taps(r, [&](size_t d, int64_t o) {
    const int64_t n = r.in[d];
    const double at = std::max(0.0, resize_source(g, o, n, r.out[d], r.step[d]));
    const auto i0 = std::min(static_cast<int64_t>(at), n - 1);
    const int64_t i1 = std::min(i0 + 1, n - 1);
    const double t = at - static_cast<double>(i0);
    return std::pair{std::vector<int64_t>{i0, i1}, std::vector<double>{1 - t, t}};
  });
}

// Bicubic (ops.interpolate 'bicubic', ResizeBicubic), as MindSpore 2.10's CPU kernel computes
// it (measured against it to 4e-7): the cubic convolution kernel with a = -0.5 on the half-pixel
// grid, taps outside the image dropped and the rest renormalised; with align_corners a = -0.75
// and taps clamped to the edge. The fractional offset is quantised to 1/1024 (a table of the
// kernel's values), which is why PyTorch's exact kernel differs by up to ~1e-3.
ResizeTaps bicubic_taps(const Node& node, const ResizeShape& r) {
  if (r.in.size() != 4) fail("ResizeBicubic expects a 4-D input, got " + shape_str(r.in));
  const bool align = attr_bool(node, "align_corners").value_or(false);
  const double a = align ? -0.75 : -0.5;
  constexpr int64_t kTable = 1024;
  // The kernel at distance t in [0, 1] (near taps) and 1 + t (far taps), in float as tabled.
  const auto near = [a](double t) {
    const auto x = static_cast<float>(t);
    return static_cast<double>(((a + 2) * x - (a + 3)) * x * x + 1);
  };
  const auto far = [a](double t) {
    const auto x = static_cast<float>(t) + 1.0f;
    return static_cast<double>(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
  };
  return make_taps(r, [&](size_t d, int64_t o) {
    const int64_t n = r.in[d], m = r.out[d];
    const double at = align ? resize_source(ResizeGrid::AlignCorners, o, n, m, 0)
                            : resize_source(ResizeGrid::HalfPixel, o, n, m, r.step[d]);
    const auto base = static_cast<int64_t>(std::floor(at));
    const auto q = static_cast<int64_t>(
        std::lrint((at - static_cast<double>(base)) * static_cast<double>(kTable)));
    const double t = static_cast<double>(q) / kTable, u = static_cast<double>(kTable - q) / kTable;
    std::vector<double> w = {far(t), near(t), near(u), far(u)};
    std::vector<int64_t> at4 = {base - 1, base, base + 1, base + 2};
    if (!align) {
      double sum = 0;
      for (size_t k = 0; k < 4; ++k) {
        if (at4[k] < 0 || at4[k] >= n) w[k] = 0;
        sum += w[k];
      }
      for (double& v : w) v /= sum;
    }
    for (int64_t& i : at4) i = std::clamp<int64_t>(i, 0, n - 1);
    return std::pair{std::move(at4), std::move(w)};
  });
}

ResizeTaps resize_taps(const Node& n, std::string_view op, const std::vector<int64_t>& in,
                       const std::optional<std::vector<int64_t>>& out) {
  const ResizeShape r = resize_shape(n, in, out);
  if (op == "ResizeNearestNeighbor" || op == "ResizeNearestNeighborV2" || op == "UpsampleNearest3D")
    return nearest_taps(n, r);
  if (op == "ResizeLinear1D" || op == "ResizeBilinearV2" || op == "UpsampleTrilinear3D")
    return linear_taps(n, r);
  if (op == "ResizeBicubic") return bicubic_taps(n, r);
  fail("operator " + std::string(op) + " is not a resize");
}

// y[o] = sum over taps of weight * x[source].
void k_resize(KernelCall& c) {
  const Tensor& x = in(c, 0);
  const ResizeTaps t = resize_taps(c.node, c.node.op, x.shape(), out_shape(c));
  Tensor& y = emit(c, Tensor(t.out, x.dtype()));
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  t.for_each_tap([&](int64_t o, int64_t from, double w) { acc[o] += w * x.at(from); });
  for (int64_t o = 0; o < y.numel(); ++o) y.set(o, acc[o]);
}

// A layer's weight (float) and its bias when has_bias: the layer's parameters, else the
// weight as the call's second tensor input.
std::pair<Tensor, const Tensor*> layer_weight_and_bias(const KernelCall& c) {
  const Tensor* wp = find_param(c, "weight");
  const Tensor* bias =
      attr_bool(c.node, "has_bias").value_or(false) ? find_param(c, "bias") : nullptr;
  return {as_float(wp != nullptr ? *wp : in(c, 1)), bias};
}

// nn.Conv2dTranspose: weight (in, out / group, kh, kw); each input pixel scatters its kernel
// into the output at stride steps. The output size is the graph's; the padding taken off the
// top/left is the explicit padding, or for 'same' half of what the full result has over it.
ConvTransposeGeometry conv_transpose_geometry(const Node& node, const std::vector<int64_t>& x,
                                              const std::vector<int64_t>& w,
                                              const std::optional<std::vector<int64_t>>& out) {
  if (x.size() != 4 || w.size() != 4) {
    fail("Conv2DTranspose expects a 4-D input and weight, got " + shape_str(x) + " and " +
         shape_str(w));
  }
  if (!out || out->size() != 4) fail("the output size of the transposed convolution is not known");
  ConvTransposeGeometry g;
  g.n = x[0];
  g.ic = x[1];
  g.h = x[2];
  g.w = x[3];
  g.groups = attr_int(node, "group").value_or(1);
  g.kh = w[2];
  g.kw = w[3];
  if (g.groups <= 0 || w[0] != g.ic || g.ic % g.groups != 0)
    fail("Conv2DTranspose: input " + shape_str(x) + " does not match weight " + shape_str(w));
  g.ocg = w[1];
  g.oc = g.ocg * g.groups;
  g.icg = g.ic / g.groups;
  if ((*out)[1] != g.oc)
    fail("Conv2DTranspose: the weight gives " + std::to_string(g.oc) + " channels");
  g.oh = (*out)[2];
  g.ow = (*out)[3];
  g.stride = attr_ints(node, "stride", 2).value_or(std::vector<int64_t>{1, 1});
  g.dil = attr_ints(node, "dilation", 2).value_or(std::vector<int64_t>{1, 1});
  if (g.stride.size() != 2 || g.dil.size() != 2) fail("bad stride/dilation attributes");
  const std::string mode = text::lower(attr_str(node, "pad_mode").value_or("same"));
  if (mode == "pad") {
    const auto p = attr_ints(node, "padding").value_or(std::vector<int64_t>{0});
    g.top = p.empty() ? 0 : p[0];
    g.left = p.size() == 4 ? p[2] : p.size() == 2 ? p[1] : g.top;
  } else if (mode == "same") {
    g.top = std::max<int64_t>((g.h - 1) * g.stride[0] + g.dil[0] * (g.kh - 1) + 1 - g.oh, 0) / 2;
    g.left = std::max<int64_t>((g.w - 1) * g.stride[1] + g.dil[1] * (g.kw - 1) + 1 - g.ow, 0) / 2;
  } else if (mode != "valid") {
    fail("unknown pad_mode '" + mode + "'");
  }
  return g;
}

void k_conv2d_transpose(KernelCall& c) {
  Tensor x = as_float(in(c, 0));
  // Not a structured binding: clang 14 cannot capture one in the lambda below.
  const auto weight_and_bias = layer_weight_and_bias(c);
  const Tensor& wt = weight_and_bias.first;
  const Tensor* bias = weight_and_bias.second;
  const ConvTransposeGeometry g =
      conv_transpose_geometry(c.node, x.shape(), wt.shape(), out_shape(c));
  Tensor& y = emit(c, Tensor({g.n, g.oc, g.oh, g.ow}, DType::Float32));
  auto* py = y.data<float>();
  for (int64_t b = 0; b < g.n; ++b) {
    for (int64_t o = 0; o < g.oc; ++o) {
      const float bv = bias != nullptr ? static_cast<float>(bias->at(o)) : 0.0f;
      std::fill_n(py + (b * g.oc + o) * g.oh * g.ow, g.oh * g.ow, bv);
    }
  }
  g.for_each_tap([&](int64_t xi, int64_t wi, int64_t yi) {
    py[yi] += x.data<float>()[xi] * wt.data<float>()[wi];
  });
}

// ops.randn / ops.rand / ops.randint: samples of the runtime's own generator, seeded per node
// from the run's seed (the same values on every run and platform; not MindSpore's Philox
// stream, so only the distribution matches MindSpore's).
void k_random(KernelCall& c) {
  auto os = out_shape(c);
  if (!os) fail("the shape of the random tensor is not known");
  const DType dt = out_dtype(c, 0, c.node.op == "UniformInt" ? DType::Int64 : DType::Float32);
  Tensor& y = emit(c, Tensor(*os, dt));
  Rng rng(hash_name(c.run_seed, c.node.id));
  if (c.node.op == "UniformInt") {
    const auto low = attr_int(c.node, "low");
    const auto high = attr_int(c.node, "high");
    if (!low || !high || *high <= *low) fail("UniformInt needs low < high");
    const auto span = static_cast<uint64_t>(*high - *low);
    for (int64_t i = 0; i < y.numel(); ++i)
      y.set(i, static_cast<double>(*low + static_cast<int64_t>(rng.next() % span)));
    return;
  }
  const bool normal = c.node.op == "StandardNormal";
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, normal ? rng.normal() : rng.uniform());
}

// nn.LSTM / nn.GRU / nn.RNN (inference): gates in MindSpore's (and PyTorch's) order, LSTM
// i, f, g, o; GRU r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)); RNN tanh or relu.
// Inputs: x, then the optional initial state (h0, and c0 for the LSTM); zeros without it.
// Outputs: the last layer's output at every step (both directions concatenated), h_n (and c_n).
void k_recurrent(KernelCall& c) {
  const std::string_view op = c.node.op;
  const int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const Tensor x = as_float(in(c, 0));
  const auto hidden = attr_int(c.node, "hidden_size");
  if (!hidden || x.rank() != 3) fail(std::string(op) + " needs hidden_size and a 3-D input");
  const int64_t H = *hidden;
  const int64_t layers = attr_int(c.node, "num_layers").value_or(1);
  const int64_t dirs = attr_bool(c.node, "bidirectional").value_or(false) ? 2 : 1;
  const bool batch_first = attr_bool(c.node, "batch_first").value_or(false);
  const bool has_bias = attr_bool(c.node, "has_bias").value_or(true);
  const bool relu = attr_str(c.node, "nonlinearity").value_or("tanh") == "relu";
  const size_t states = op == "LSTM" ? 2 : 1;
  if (c.inputs.size() > 1 + states)
    fail(std::string(op) + ": seq_length is not implemented by the CPU runtime");
  const int64_t T = x.shape()[batch_first ? 1 : 0], N = x.shape()[batch_first ? 0 : 1];
  const auto at_x = [&](int64_t t, int64_t b) {
    return x.data<float>() + (batch_first ? (b * T + t) : (t * N + b)) * x.shape()[2];
  };
  const auto state_in = [&](size_t k) -> std::optional<Tensor> {
    if (c.inputs.size() <= 1 + k) return std::nullopt;
    Tensor s = as_float(c.inputs[1 + k]);
    if (s.shape() != std::vector<int64_t>{layers * dirs, N, H}) {
      fail(std::string(op) + ": the initial state must be " + shape_str({layers * dirs, N, H}) +
           ", got " + s.type_str());
    }
    return s;
  };
  const auto h0 = state_in(0);
  const auto c0 = op == "LSTM" ? state_in(1) : std::nullopt;
  Tensor hn({layers * dirs, N, H}, DType::Float32), cn({layers * dirs, N, H}, DType::Float32);
  // The current layer's input sequence, (T, N, F) row-major.
  int64_t F = x.shape()[2];
  std::vector<float> seq(static_cast<size_t>(T * N * F));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < N; ++b) std::copy_n(at_x(t, b), F, seq.data() + (t * N + b) * F);
  const auto sigmoid = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<float> out(static_cast<size_t>(T * N * dirs * H));
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      const Tensor* wih = find_param(c, "weight_ih" + sfx);
      const Tensor* whh = find_param(c, "weight_hh" + sfx);
      const Tensor* bih = has_bias ? find_param(c, "bias_ih" + sfx) : nullptr;
      const Tensor* bhh = has_bias ? find_param(c, "bias_hh" + sfx) : nullptr;
      if (wih == nullptr || whh == nullptr || (has_bias && (bih == nullptr || bhh == nullptr)))
        fail(std::string(op) + ": the parameters of layer " + std::to_string(l) + " are missing");
      if (wih->shape() != std::vector<int64_t>{gates * H, F})
        fail(std::string(op) + ": weight_ih" + sfx + " is " + wih->type_str());
      const Tensor Wih = as_float(*wih), Whh = as_float(*whh);
      MapCM wi(Wih.data<float>(), gates * H, F), wh(Whh.data<float>(), gates * H, H);
      // Input projections of every step at once: (T*N, G*H).
      RowMat xp = MapCM(seq.data(), T * N, F) * wi.transpose();
      RowMat bi = RowMat::Zero(1, gates * H), bh = RowMat::Zero(1, gates * H);
      if (has_bias) {
        const Tensor Bi = as_float(*bih), Bh = as_float(*bhh);
        bi = MapCM(Bi.data<float>(), 1, gates * H);
        bh = MapCM(Bh.data<float>(), 1, gates * H);
      }
      xp.rowwise() += bi.row(0);
      const int64_t slot = l * dirs + d;
      RowMat h = RowMat::Zero(N, H), cs = RowMat::Zero(N, H);
      if (h0) h = MapCM(h0->data<float>() + slot * N * H, N, H);
      if (c0) cs = MapCM(c0->data<float>() + slot * N * H, N, H);
      for (int64_t step = 0; step < T; ++step) {
        const int64_t t = d == 0 ? step : T - 1 - step;
        RowMat hp = h * wh.transpose();
        hp.rowwise() += bh.row(0);
        for (int64_t b = 0; b < N; ++b) {
          const float* a = xp.data() + (t * N + b) * gates * H;
          const float* r = hp.data() + b * gates * H;
          for (int64_t k = 0; k < H; ++k) {
            float v = 0;
            if (gates == 4) {
              const float ig = sigmoid(a[k] + r[k]), fg = sigmoid(a[H + k] + r[H + k]);
              const float gg = std::tanh(a[2 * H + k] + r[2 * H + k]);
              const float og = sigmoid(a[3 * H + k] + r[3 * H + k]);
              cs(b, k) = fg * cs(b, k) + ig * gg;
              v = og * std::tanh(cs(b, k));
            } else if (gates == 3) {
              const float rg = sigmoid(a[k] + r[k]), zg = sigmoid(a[H + k] + r[H + k]);
              const float ng = std::tanh(a[2 * H + k] + rg * r[2 * H + k]);
              v = (1 - zg) * ng + zg * h(b, k);
            } else {
              v = a[k] + r[k];
              v = relu ? std::max(v, 0.0f) : std::tanh(v);
            }
            out[static_cast<size_t>(((t * N + b) * dirs + d) * H + k)] = v;
          }
        }
        for (int64_t b = 0; b < N; ++b) {
          for (int64_t k = 0; k < H; ++k)
            h(b, k) = out[static_cast<size_t>(((t * N + b) * dirs + d) * H + k)];
        }
      }
      std::copy_n(h.data(), N * H, hn.data<float>() + slot * N * H);
      std::copy_n(cs.data(), N * H, cn.data<float>() + slot * N * H);
    }
    seq = std::move(out);
    F = dirs * H;
  }
  Tensor y(batch_first ? std::vector<int64_t>{N, T, F} : std::vector<int64_t>{T, N, F},
           DType::Float32);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < N; ++b) {
      std::copy_n(seq.data() + (t * N + b) * F, F,
                  y.data<float>() + (batch_first ? (b * T + t) : (t * N + b)) * F);
    }
  }
  emit(c, std::move(y));
  emit(c, std::move(hn));
  if (op == "LSTM") emit(c, std::move(cn));
}

// nn.MultiheadAttention (inference): projections (packed in_proj_weight, or q/k/v_proj_weight
// when kdim/vdim differ), softmax(q k^T / sqrt(head_dim)) v per head, the output projection;
// the weights averaged over heads (N, L, S), or per head (N, heads, L, S) as the graph's second
// output says. Inputs query, key, value; masks are not implemented (the runtime says so).
void k_multihead_attention(KernelCall& c) {
  if (c.inputs.size() != 3) {
    fail(
        "MultiheadAttention: attention masks are not implemented by the CPU runtime (the node "
        "has " +
        std::to_string(c.inputs.size()) + " tensor inputs, query/key/value are 3)");
  }
  const auto e_attr = attr_int(c.node, "embed_dim");
  const auto h_attr = attr_int(c.node, "num_heads");
  if (!e_attr || !h_attr || *h_attr <= 0 || *e_attr % *h_attr != 0)
    fail("MultiheadAttention needs embed_dim divisible by num_heads");
  const int64_t E = *e_attr, heads = *h_attr, hd = E / heads;
  const bool bf = attr_bool(c.node, "batch_first").value_or(false);
  const Tensor q0 = as_float(c.inputs[0]), k0 = as_float(c.inputs[1]), v0 = as_float(c.inputs[2]);
  if (q0.rank() != 3 || k0.rank() != 3 || v0.rank() != 3)
    fail("MultiheadAttention: unbatched (2-D) inputs are not implemented by the CPU runtime");
  const int64_t N = q0.shape()[bf ? 0 : 1], L = q0.shape()[bf ? 1 : 0], S = k0.shape()[bf ? 1 : 0];
  // Rows of a (seq, batch, feature) or (batch, seq, feature) tensor as (batch, seq, feature).
  const auto batch_major = [&](const Tensor& t, int64_t len) {
    const int64_t f = t.shape()[2];
    RowMat m(N * len, f);
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t i = 0; i < len; ++i) {
        m.row(b * len + i) =
            MapCM(t.data<float>() + (bf ? b * len + i : i * N + b) * f, 1, f).row(0);
      }
    }
    return m;
  };
  const Tensor* packed = find_param(c, "in_proj_weight");
  const Tensor* bias = find_param(c, "in_proj_bias");
  const auto project = [&](const Tensor& t, int64_t len, int which, const char* own) {
    RowMat m = batch_major(t, len);
    RowMat y;
    if (packed != nullptr) {
      const Tensor w = as_float(*packed);
      y = m * MapCM(w.data<float>() + which * E * E, E, E).transpose();
    } else {
      const Tensor* wp = find_param(c, own);
      if (wp == nullptr) fail(std::string("MultiheadAttention: ") + own + " is missing");
      const Tensor w = as_float(*wp);
      y = m * MapCM(w.data<float>(), E, w.shape()[1]).transpose();
    }
    if (bias != nullptr) {
      const Tensor b = as_float(*bias);
      y.rowwise() += MapCM(b.data<float>() + which * E, 1, E).row(0);
    }
    return y;
  };
  const RowMat q = project(q0, L, 0, "q_proj_weight");
  const RowMat k = project(k0, S, 1, "k_proj_weight");
  const RowMat v = project(v0, S, 2, "v_proj_weight");
  const bool per_head = c.node.outputs.size() > 1 && c.node.outputs[1].shape.rank() == 4;
  RowMat ctx(N * L, E);
  Tensor weights(per_head ? std::vector<int64_t>{N, heads, L, S} : std::vector<int64_t>{N, L, S},
                 DType::Float32);
  std::fill_n(weights.data<float>(), weights.numel(), 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      RowMat sc = q.block(b * L, h * hd, L, hd) * k.block(b * S, h * hd, S, hd).transpose() * scale;
      for (int64_t i = 0; i < L; ++i) {
        const float m = sc.row(i).maxCoeff();
        sc.row(i) = (sc.row(i).array() - m).exp().matrix();
        sc.row(i) /= sc.row(i).sum();
      }
      ctx.block(b * L, h * hd, L, hd) = sc * v.block(b * S, h * hd, S, hd);
      float* w = weights.data<float>() + (per_head ? (b * heads + h) * L * S : b * L * S);
      MapM(w, L, S) += per_head ? sc : RowMat(sc / static_cast<float>(heads));
    }
  }
  const Tensor* ow = find_param(c, "out_proj.weight");
  const Tensor* ob = find_param(c, "out_proj.bias");
  if (ow == nullptr) fail("MultiheadAttention: out_proj.weight is missing");
  const Tensor owf = as_float(*ow);
  RowMat out = ctx * MapCM(owf.data<float>(), E, E).transpose();
  if (ob != nullptr) {
    const Tensor obf = as_float(*ob);
    out.rowwise() += MapCM(obf.data<float>(), 1, E).row(0);
  }
  Tensor y(bf ? std::vector<int64_t>{N, L, E} : std::vector<int64_t>{L, N, E}, DType::Float32);
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t i = 0; i < L; ++i)
      std::copy_n(out.row(b * L + i).data(), E, y.data<float>() + (bf ? b * L + i : i * N + b) * E);
  }
  emit(c, std::move(y));
  if (c.node.outputs.size() > 1) emit(c, std::move(weights));
}

Conv3DGeometry conv3d_geometry(const Node& node, const Tensor& x, const Tensor& wt,
                               std::string_view what) {
  if (x.rank() != 5 || wt.rank() != 5) {
    fail(std::string(what) + " expects a 5-D NCDHW input and weight, got " + x.type_str() +
         " and " + wt.type_str());
  }
  Conv3DGeometry g;
  g.n = x.shape()[0];
  g.ch = x.shape()[1];
  g.oc = wt.shape()[0];
  g.icg = wt.shape()[1];
  g.groups = attr_int(node, "group").value_or(attr_int(node, "groups").value_or(1));
  if (g.groups <= 0 || g.ch != g.icg * g.groups || g.oc % g.groups != 0) {
    fail(std::string(what) + ": input " + x.type_str() + " does not match weight " + wt.type_str() +
         " with group=" + std::to_string(g.groups));
  }
  g.ocg = g.oc / g.groups;
  g.id = x.shape()[2];
  g.ih = x.shape()[3];
  g.iw = x.shape()[4];
  g.w = make_window(node, {g.id, g.ih, g.iw}, {wt.shape()[2], wt.shape()[3], wt.shape()[4]}, false);
  return g;
}

// nn.Conv3d on NCDHW. A direct loop (no im2col): 3-D convolutions are rare in the models this
// runtime checks. Each output element sums its taps in double, starting from the bias.
void k_conv3d(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const auto [wt, bias] = layer_weight_and_bias(c);
  const Conv3DGeometry g = conv3d_geometry(c.node, x, wt, "Conv3D");
  Tensor& y = emit(c, Tensor({g.n, g.oc, g.w.out[0], g.w.out[1], g.w.out[2]}, DType::Float32));
  const int64_t spatial = g.w.out[0] * g.w.out[1] * g.w.out[2];
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  if (bias != nullptr) {
    for (int64_t i = 0; i < y.numel(); ++i)
      acc[static_cast<size_t>(i)] = static_cast<float>(bias->at((i / spatial) % g.oc));
  }
  const auto* px = x.data<float>();
  const auto* pw = wt.data<float>();
  g.for_each_tap([&](int64_t xi, int64_t wi, int64_t yi) {
    acc[static_cast<size_t>(yi)] += static_cast<double>(px[xi]) * pw[wi];
  });
  auto* py = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) py[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
}

// The value of a variable after an `if` on a tensor (the evaluator's Merge: condition, the value
// the `if` branch left, the value the other left). Both branches' operators ran (the graph holds
// both); the condition picks one, as Python's truth value of a one-element tensor.
void k_merge(KernelCall& c) {
  if (c.inputs.size() != 3) {
    fail(
        "Merge: the condition of the `if` is not a tensor of the graph; the runtime cannot "
        "tell which branch ran");
  }
  const Tensor& cond = c.inputs[0];
  if (cond.numel() != 1) {
    fail("Merge: the truth value of a tensor of " + std::to_string(cond.numel()) +
         " elements is ambiguous (MindSpore raises the same)");
  }
  emit(c, cond.at(0) != 0 ? c.inputs[1] : c.inputs[2]);
}
}  // namespace kernels

KernelFn find_kernel(std::string_view op) {
  const OpDef* d = find_op(op);
  return d == nullptr ? nullptr : d->kernel;
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> r;
  for (const OpDef& d : all_ops()) {
    if (d.kernel != nullptr) r.emplace_back(d.name);
  }
  return r;
}

}  // namespace graphcore::runtime
