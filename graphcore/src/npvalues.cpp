// Element values of small constant arrays (see npvalues.h).
#include "npvalues.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "graphcore/checked.h"

namespace graphcore::eval::npv {

namespace {

thread_local bool g_enabled = false;  // AnalysisOptions::constant_values of this thread's analysis

// Round to a binary floating type with `mant` explicit mantissa bits, minimum normal exponent
// `emin` and largest finite value `max`, to nearest even (the default FP rounding mode).
double round_binary(double x, int mant, int emin, double max) {
  if (!std::isfinite(x) || x == 0) return x;
  double a = std::fabs(x);
  int e = std::max(std::ilogb(a), emin);
  double ulp = std::ldexp(1.0, e - mant);
  double r = std::nearbyint(a / ulp) * ulp;
  if (r > max) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, x);
}

bool known_shape(const Shape& s, std::vector<int64_t>& dims, int64_t& numel) {
  if (!s.ranked) return false;
  dims.clear();
  numel = 1;
  for (Dim d : s.dims) {
    if (!d.is_known()) return false;
    dims.push_back(d.value());
    auto n = checked_mul(numel, d.value());
    if (!n) return false;  // more elements than int64 holds: never materialised
    numel = *n;
  }
  return true;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

// Calls f(out_flat, offset_0, offset_1, ...) over every element of `shape`, where input k's
// offset advances by strides[k][axis] along each axis (0 for a broadcast axis).
template <class F>
void for_each_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& base,
                    const std::vector<std::vector<int64_t>>& strides, F&& f) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  if (total == 0) return;
  size_t rank = shape.size();
  std::vector<int64_t> idx(rank, 0);
  std::vector<int64_t> off = base;
  for (int64_t o = 0; o < total; ++o) {
    f(o, off);
    for (size_t ax = rank; ax-- > 0;) {
      ++idx[ax];
      for (size_t k = 0; k < off.size(); ++k) off[k] += strides[k][ax];
      if (idx[ax] < shape[ax]) break;
      for (size_t k = 0; k < off.size(); ++k) off[k] -= strides[k][ax] * shape[ax];
      idx[ax] = 0;
    }
  }
}

// Strides of `in` read as broadcast to `out` (numpy rules); nullopt when not broadcastable.
std::optional<std::vector<int64_t>> broadcast_strides(const std::vector<int64_t>& in,
                                                      const std::vector<int64_t>& out) {
  if (in.size() > out.size()) return std::nullopt;
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> own = strides_of(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[lead + i])
      st[lead + i] = in[i] == 1 ? 0 : own[i];
    else if (in[i] != 1)
      return std::nullopt;
  }
  return st;
}

std::optional<std::vector<int64_t>> broadcast_shape(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

bool out_dims(const TensorObj& out, std::vector<int64_t>& dims, int64_t& numel) {
  return known_shape(out.type.shape, dims, numel) && numel <= element_limit();
}

int kind_rank(DType d) {  // bool < integers < floats
  if (d == DType::Bool) return 0;
  return is_floating(d) ? 2 : 1;
}

int float_bits(DType d) {
  switch (d) {
    case DType::Float16:
    case DType::BFloat16:
      return 16;
    case DType::Float32:
      return 32;
    default:
      return 64;
  }
}

int int_bits(DType d) {
  switch (d) {
    case DType::Int8:
    case DType::UInt8:
      return 8;
    case DType::Int16:
      return 16;
    case DType::Int32:
      return 32;
    default:
      return 64;
  }
}

DType float_of_bits(int bits) {
  return bits <= 16 ? DType::Float16 : bits <= 32 ? DType::Float32 : DType::Float64;
}

DType int_of_bits(int bits) {
  return bits <= 8    ? DType::Int8
         : bits <= 16 ? DType::Int16
         : bits <= 32 ? DType::Int32
                      : DType::Int64;
}

// numpy's promotion of two array dtypes.
DType promote_arrays(DType a, DType b) {
  if (a == b) return a;
  int ka = kind_rank(a), kb = kind_rank(b);
  if (ka == 0) return b;
  if (kb == 0) return a;
  if (ka == 2 && kb == 2) return float_of_bits(std::max(float_bits(a), float_bits(b)));
  if (ka == 1 && kb == 1) {
    if ((a == DType::UInt8) != (b == DType::UInt8)) {  // uint8 with a signed type
      DType s = a == DType::UInt8 ? b : a;
      return int_of_bits(std::max(16, int_bits(s)));
    }
    return int_of_bits(std::max(int_bits(a), int_bits(b)));
  }
  // An integer with a float: the smallest float holding every value of the integer type.
  DType f = ka == 2 ? a : b, i = ka == 2 ? b : a;
  int need = int_bits(i) <= 8 ? 16 : int_bits(i) <= 16 ? 32 : 64;
  return float_of_bits(std::max(need, float_bits(f)));
}

double apply(Op op, double x, double y, bool integral) {
  switch (op) {
    case Op::Add:
      return x + y;
    case Op::Sub:
      return x - y;
    case Op::Mul:
      return x * y;
    case Op::Div:
      return x / y;
    case Op::FloorDiv:
      if (integral && y == 0) return 0;  // numpy: 0 with a warning
      return std::floor(x / y);
    case Op::Mod: {
      if (integral && y == 0) return 0;
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return m;
    }
    case Op::Pow:
      return std::pow(x, y);
    case Op::Max:
      return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
    case Op::Min:
      return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
    case Op::Eq:
      return x == y;
    case Op::Ne:
      return x != y;
    case Op::Lt:
      return x < y;
    case Op::Le:
      return x <= y;
    case Op::Gt:
      return x > y;
    case Op::Ge:
      return x >= y;
    case Op::And:
      return (x != 0) && (y != 0);
    case Op::Or:
      return (x != 0) || (y != 0);
  }
  return NAN;
}

// A basic index resolved against a shape: the selection's shape and, per selection axis, the
// stride in the source (0 for an inserted axis), from a base offset.
struct Selection {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t base = 0;
};

std::optional<Selection> select(const std::vector<int64_t>& shape, const std::vector<Value>& idx) {
  std::vector<int64_t> st = strides_of(shape);
  size_t consumed = 0;
  for (const Value& x : idx) {
    if (!(x.is_none() || x.as<EllipsisObj>())) ++consumed;
  }
  if (consumed > shape.size()) return std::nullopt;
  Selection s;
  size_t axis = 0;
  bool ellipsis = false;
  for (const Value& x : idx) {
    if (x.is_none()) {
      s.shape.push_back(1);
      s.strides.push_back(0);
      continue;
    }
    if (x.as<EllipsisObj>()) {
      if (ellipsis) return std::nullopt;
      ellipsis = true;
      for (size_t k = 0; k < shape.size() - consumed; ++k, ++axis) {
        s.shape.push_back(shape[axis]);
        s.strides.push_back(st[axis]);
      }
      continue;
    }
    int64_t n = shape[axis];
    if (x.is_int() && x.k != VK::Bool) {
      int64_t i = x.as_int();
      if (i < 0) i += n;
      if (i < 0 || i >= n) return std::nullopt;
      s.base += i * st[axis];
      ++axis;
      continue;
    }
    auto* sl = x.as<SliceObj>();
    if (!sl) return std::nullopt;  // arrays, lists, bools, unknowns: advanced indexing
    // NumPy takes no bools as slice bounds.
    auto is_bool = [](const Value& v) { return v.k == VK::Bool; };
    if (is_bool(sl->start) || is_bool(sl->stop) || is_bool(sl->step)) return std::nullopt;
    const auto b = slice_indices(*sl, n);
    if (!b) return std::nullopt;
    s.shape.push_back(b->length);
    // With two items or more, |step| * stride is within the array; with fewer it is not used.
    s.strides.push_back(b->length > 1 ? b->step * st[axis] : 0);
    s.base += b->length > 0 ? b->start * st[axis] : 0;
    ++axis;
  }
  for (; axis < shape.size(); ++axis) {
    s.shape.push_back(shape[axis]);
    s.strides.push_back(st[axis]);
  }
  return s;
}

using Fn1 = double (*)(double);

// The numpy ufunc `fn` as a function of one double; nullptr when not modelled.
Fn1 ufunc(std::string_view fn) {
  static const std::pair<std::string_view, Fn1> kFns[] = {
      {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }},
      {"tan", [](double x) { return std::tan(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sinh", [](double x) { return std::sinh(x); }},
      {"cosh", [](double x) { return std::cosh(x); }},
      {"arcsin", [](double x) { return std::asin(x); }},
      {"arccos", [](double x) { return std::acos(x); }},
      {"arctan", [](double x) { return std::atan(x); }},
      {"exp", [](double x) { return std::exp(x); }},
      {"expm1", [](double x) { return std::expm1(x); }},
      {"log", [](double x) { return std::log(x); }},
      {"log1p", [](double x) { return std::log1p(x); }},
      {"log2", [](double x) { return std::log2(x); }},
      {"log10", [](double x) { return std::log10(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"floor", [](double x) { return std::floor(x); }},
      {"ceil", [](double x) { return std::ceil(x); }},
      {"round", [](double x) { return std::nearbyint(x); }},  // numpy rounds half to even
      {"abs", [](double x) { return std::fabs(x); }},
      {"absolute", [](double x) { return std::fabs(x); }},
      {"negative", [](double x) { return -x; }},
      {"square", [](double x) { return x * x; }},
      {"sign", [](double x) { return std::isnan(x) ? x : static_cast<double>((x > 0) - (x < 0)); }},
      {"copy", [](double x) { return x; }},
      {"ascontiguousarray", [](double x) { return x; }},
  };
  for (const auto& [name, f] : kFns) {
    if (name == fn) return f;
  }
  return nullptr;
}

}  // namespace

bool enabled() { return g_enabled; }
int64_t element_limit() { return g_enabled ? kMaxElements : kSmallElements; }
Enable::Enable(bool on) : saved_(g_enabled) { g_enabled = on; }
Enable::~Enable() { g_enabled = saved_; }

double to_dtype(DType d, double x) {
  switch (d) {
    case DType::Bool:
      return x != 0 ? 1 : 0;
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt8:
      return std::isfinite(x) ? std::trunc(x) : 0;
    case DType::Float16:
      return round_binary(x, 10, -14, 65504.0);
    case DType::BFloat16:
      return round_binary(x, 7, -126, 3.3895313892515355e38);
    case DType::Float32:
      return static_cast<double>(static_cast<float>(x));
    default:
      return x;
  }
}

namespace {
std::optional<Elems> tensor_elems(const TensorObj* t) {
  Elems e;
  if (!t || t->poisoned || t->graph_id != 0 || t->is_parameter || (!t->values && !t->fill))
    return std::nullopt;
  if (!known_shape(t->type.shape, e.shape, e.numel)) return std::nullopt;
  e.dtype = t->type.dtype;
  if (t->values) {
    if (static_cast<int64_t>(t->values->size()) != e.numel) return std::nullopt;
    e.data = t->values;
  } else {
    e.fill = *t->fill;
  }
  return e;
}
}  // namespace

std::optional<Elems> elems(const Value& v) {
  if (v.k == VK::Bool || v.k == VK::Int || v.k == VK::Float) {
    Elems e;
    e.python_scalar = true;
    e.dtype = v.k == VK::Bool ? DType::Bool : v.k == VK::Int ? DType::Int64 : DType::Float64;
    e.fill = v.as_float();
    return e;
  }
  return tensor_elems(v.as<TensorObj>());
}

std::optional<Value> as_numpy_scalar(const TensorObj& t) {
  if (!t.type.shape.ranked || t.type.shape.rank() != 0) return std::nullopt;
  std::optional<double> x = t.fill;
  if (!x && t.values && t.values->size() == 1) x = (*t.values)[0];
  if (!x) return std::nullopt;
  if (t.type.dtype == DType::Bool) return Value::boolean(*x != 0);
  if (is_floating(t.type.dtype)) return Value::real(*x);
  if (auto i = checked_to_int64(*x)) return Value::integer(*i);
  return std::nullopt;
}

void forget(TensorObj& t) {
  t.values.reset();
  t.fill.reset();
}

void set_values(TensorObj& out, std::vector<double> vals) {
  forget(out);
  std::vector<int64_t> dims;
  int64_t numel = 0;
  if (!known_shape(out.type.shape, dims, numel) || static_cast<int64_t>(vals.size()) != numel)
    return;
  DType d = out.type.dtype;
  if (d == DType::Float32) {
    for (double& x : vals) x = static_cast<float>(x);
  } else if (d != DType::Float64) {
    for (double& x : vals) x = to_dtype(d, x);
  }
  bool uniform = !vals.empty() && std::all_of(vals.begin(), vals.end(), [&](double x) {
    return x == vals[0] || (std::isnan(x) && std::isnan(vals[0]));
  });
  if (uniform) {
    out.fill = vals[0];
    return;
  }
  if (numel > element_limit()) return;
  out.values = std::make_shared<const std::vector<double>>(std::move(vals));
}

std::optional<Op> op_for_api(std::string_view api) {
  static const std::pair<std::string_view, Op> kOps[] = {{"ops.add", Op::Add},
                                                         {"ops.sub", Op::Sub},
                                                         {"ops.mul", Op::Mul},
                                                         {"ops.div", Op::Div},
                                                         {"ops.floor_div", Op::FloorDiv},
                                                         {"ops.mod", Op::Mod},
                                                         {"ops.pow", Op::Pow},
                                                         {"ops.maximum", Op::Max},
                                                         {"ops.minimum", Op::Min},
                                                         {"ops.equal", Op::Eq},
                                                         {"ops.not_equal", Op::Ne},
                                                         {"ops.less", Op::Lt},
                                                         {"ops.less_equal", Op::Le},
                                                         {"ops.greater", Op::Gt},
                                                         {"ops.greater_equal", Op::Ge},
                                                         {"ops.logical_and", Op::And},
                                                         {"ops.logical_or", Op::Or}};
  for (const auto& [name, op] : kOps) {
    if (name == api) return op;
  }
  return std::nullopt;
}

DType result_dtype(Op op, DType a_dtype, bool a_py, DType b_dtype, bool b_py) {
  switch (op) {
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::And:
    case Op::Or:
      return DType::Bool;
    default:
      break;
  }
  DType r;
  if (a_py != b_py) {
    DType arr = a_py ? b_dtype : a_dtype;
    DType py = a_py ? a_dtype : b_dtype;
    if (kind_rank(py) <= kind_rank(arr))
      r = arr;
    else
      r = py == DType::Float64 ? DType::Float64 : DType::Int64;
  } else {
    r = promote_arrays(a_dtype, b_dtype);
  }
  if (op == Op::Div && !is_floating(r)) return DType::Float64;
  if (r == DType::Bool && op != Op::Max && op != Op::Min && op != Op::Mul && op != Op::Add)
    return DType::Int8;  // numpy: bool - bool is an error, bool ** bool int8
  return r;
}

bool binary(Op op, const Value& a, const Value& b, TensorObj& out) {
  auto x = elems(a);
  auto y = elems(b);
  std::vector<int64_t> dims;
  int64_t numel = 0;
  if (!x || !y || !known_shape(out.type.shape, dims, numel)) return false;
  auto shape = broadcast_shape(x->shape, y->shape);
  if (!shape || *shape != dims) return false;
  bool integral = !is_floating(out.type.dtype);
  // Operands are converted to the computation dtype first (numpy casts inputs to the loop type).
  // A comparison compares in the dtype the operands promote to (Python scalars weakly).
  DType comp = out.type.dtype == DType::Bool ? result_dtype(Op::Add, *x, *y) : out.type.dtype;
  auto conv = [&](double v, const Elems&) { return to_dtype(comp, v); };
  x->fill = conv(x->fill, *x);
  y->fill = conv(y->fill, *y);
  if (!x->data && !y->data) {
    out.values.reset();
    out.fill = to_dtype(out.type.dtype, apply(op, x->fill, y->fill, integral));
    return true;
  }
  if (numel > element_limit()) {
    forget(out);
    return false;
  }
  auto sx = broadcast_strides(x->shape, dims);
  auto sy = broadcast_strides(y->shape, dims);
  if (!sx || !sy) return false;
  // Elements already in a dtype that converts exactly to the computation dtype are used as is.
  auto exact = [&](const Elems& e) {
    if (!e.data || comp == DType::Float64 || e.dtype == comp || e.dtype == DType::Bool) return true;
    if (comp == DType::Float32)
      return e.dtype == DType::Float16 || e.dtype == DType::BFloat16 || e.dtype == DType::Int8 ||
             e.dtype == DType::UInt8 || e.dtype == DType::Int16;
    return !is_floating(comp) && !is_floating(e.dtype) && int_bits(e.dtype) <= int_bits(comp);
  };
  const bool cx = !exact(*x), cy = !exact(*y);
  auto get = [&](const Elems& e, bool c, int64_t i) {
    double v = e.data ? (*e.data)[static_cast<size_t>(i)] : e.fill;
    return c ? to_dtype(comp, v) : v;
  };
  std::vector<double> vals(static_cast<size_t>(numel));
  if (x->shape == dims && y->shape == dims) {  // no broadcasting
    for (int64_t i = 0; i < numel; ++i)
      vals[static_cast<size_t>(i)] = apply(op, get(*x, cx, i), get(*y, cy, i), integral);
  } else {
    for_each_index(dims, {0, 0}, {*sx, *sy}, [&](int64_t o, const std::vector<int64_t>& off) {
      vals[static_cast<size_t>(o)] = apply(op, get(*x, cx, off[0]), get(*y, cy, off[1]), integral);
    });
  }
  set_values(out, std::move(vals));
  return true;
}

DType float_ufunc_dtype(DType d) {
  if (d == DType::Bool || d == DType::Int8 || d == DType::UInt8) return DType::Float16;
  if (d == DType::Int16) return DType::Float32;
  if (!is_floating(d)) return DType::Float64;
  return d;
}

std::string_view ufunc_of_op(std::string_view op) {
  static const std::pair<std::string_view, std::string_view> kOps[] = {
      {"Log", "log"},      {"Exp", "exp"},     {"Sqrt", "sqrt"},     {"Abs", "abs"},
      {"Neg", "negative"}, {"Sin", "sin"},     {"Cos", "cos"},       {"Tanh", "tanh"},
      {"Floor", "floor"},  {"Ceil", "ceil"},   {"Square", "square"}, {"Sign", "sign"},
      {"Log1p", "log1p"},  {"Expm1", "expm1"}, {"Identity", "copy"}};
  for (const auto& [name, fn] : kOps) {
    if (name == op) return fn;
  }
  return {};
}

bool unary(std::string_view fn, const Value& x, TensorObj& out) {
  auto e = elems(x);
  if (!e) return false;
  std::vector<int64_t> dims;
  int64_t numel = 0;
  if (!known_shape(out.type.shape, dims, numel) || numel != e->numel) return false;
  Fn1 fp = ufunc(fn);
  if (!fp) return false;
  // numpy evaluates a float32 ufunc in float32: the input is rounded to the loop's dtype first.
  DType d = out.type.dtype;
  if (!e->data) {
    out.values.reset();
    out.fill = to_dtype(d, fp(to_dtype(d, e->fill)));
    return true;
  }
  if (numel > element_limit()) return false;
  std::vector<double> vals(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i)
    vals[static_cast<size_t>(i)] = fp(to_dtype(d, (*e->data)[static_cast<size_t>(i)]));
  set_values(out, std::move(vals));
  return true;
}

bool triangle(const Value& x, int64_t k, bool upper, TensorObj& out) {
  auto e = elems(x);
  std::vector<int64_t> dims;
  int64_t numel = 0;
  if (!e || e->python_scalar || e->shape.size() < 2 || !out_dims(out, dims, numel) ||
      dims != e->shape)
    return false;
  int64_t rows = dims[dims.size() - 2], cols = dims.back();
  std::vector<double> vals(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) {
    int64_t r = (i / cols) % rows, c = i % cols;
    bool keep = upper ? c - r >= k : c - r <= k;
    vals[static_cast<size_t>(i)] = keep ? e->at(i) : 0;
  }
  set_values(out, std::move(vals));
  return true;
}

bool same_order(const Value& x, TensorObj& out) {
  auto e = elems(x);
  std::vector<int64_t> dims;
  int64_t numel = 0;
  if (!e || !known_shape(out.type.shape, dims, numel) || numel != e->numel) return false;
  if (!e->data) {
    out.values.reset();
    out.fill = to_dtype(out.type.dtype, e->fill);
    return true;
  }
  set_values(out, *e->data);
  return true;
}

bool transpose(const Value& x, std::vector<int64_t> perm, TensorObj& out) {
  auto e = elems(x);
  std::vector<int64_t> dims;
  int64_t numel = 0;
  if (!e || !out_dims(out, dims, numel) || numel != e->numel) return false;
  size_t r = e->shape.size();
  if (perm.empty())
    for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != r) return false;
  std::vector<int64_t> st = strides_of(e->shape), ps(r), shape(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(r) : perm[i];
    if (p < 0 || p >= static_cast<int64_t>(r)) return false;
    ps[i] = st[static_cast<size_t>(p)];
    shape[i] = e->shape[static_cast<size_t>(p)];
  }
  if (shape != dims) return false;
  std::vector<double> vals(static_cast<size_t>(numel));
  for_each_index(dims, {0}, {ps}, [&](int64_t o, const std::vector<int64_t>& off) {
    vals[static_cast<size_t>(o)] = e->at(off[0]);
  });
  set_values(out, std::move(vals));
  return true;
}

bool index(const Value& x, const std::vector<Value>& idx, TensorObj& out) {
  auto e = elems(x);
  if (!e || e->python_scalar) return false;
  auto sel = select(e->shape, idx);
  std::vector<int64_t> dims;
  int64_t numel = 0;
  if (!sel || !known_shape(out.type.shape, dims, numel) || dims != sel->shape) return false;
  if (!e->data) {
    out.values.reset();
    out.fill = e->fill;
    return true;
  }
  if (numel > element_limit()) return false;
  std::vector<double> vals(static_cast<size_t>(numel));
  for_each_index(dims, {sel->base}, {sel->strides},
                 [&](int64_t o, const std::vector<int64_t>& off) {
                   vals[static_cast<size_t>(o)] = e->at(off[0]);
                 });
  set_values(out, std::move(vals));
  return true;
}

void assign(TensorObj& x, const std::vector<Value>& idx, const Value& rhs) {
  auto e = tensor_elems(&x);
  auto r = elems(rhs);
  std::optional<Selection> sel;
  if (e && r && e->numel <= element_limit()) sel = select(e->shape, idx);
  std::optional<std::vector<int64_t>> rs;
  if (sel) rs = broadcast_strides(r->shape, sel->shape);
  if (!rs) {
    forget(x);
    return;
  }
  std::vector<double> vals =
      e->data ? *e->data : std::vector<double>(static_cast<size_t>(e->numel), e->fill);
  DType d = x.type.dtype;
  for_each_index(sel->shape, {sel->base, 0}, {sel->strides, *rs},
                 [&](int64_t, const std::vector<int64_t>& off) {
                   vals[static_cast<size_t>(off[0])] = to_dtype(d, r->at(off[1]));
                 });
  set_values(x, std::move(vals));
}

void registry_function(std::string_view api, const std::vector<Value>& args, const Value* axes_kw,
                       TensorObj& out) {
  if (args.empty()) return;
  // A Python number, or a constant whose every element is known (`Tensor(0, ms.float32)`).
  auto scalar = [](const Value& v) -> std::optional<double> {
    if (v.is_number()) return v.as_float();
    if (auto* t = v.as<TensorObj>(); t && t->fill) return *t->fill;
    return std::nullopt;
  };
  if (api == "ops.linspace" && args.size() == 3 && scalar(args[0]) && scalar(args[1]) &&
      args[2].is_int()) {
    // Drop-path rates: `[float(x) for x in ops.linspace(start, stop, depth)]`.
    int64_t n = args[2].as_int();
    if (n < 0 || n > element_limit()) return;
    double a = *scalar(args[0]), b = *scalar(args[1]);
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = n == 1 ? a : a + (b - a) * static_cast<double>(i) / (n - 1);
    set_values(out, std::move(v));
    return;
  }
  if (api == "ops.reshape" || api == "ops.expand_dims" || api == "ops.squeeze") {
    same_order(args[0], out);
    return;
  }
  // np.stack / np.concatenate (`np.stack(np.meshgrid(h, w))`: Swin's coordinate tables): the
  // parts laid out along the axis; `out`'s shape is the rule's.
  if (api == "ops.stack" || api == "ops.concat") {
    const auto* items = seq_items(args[0]);
    std::vector<int64_t> dims;
    int64_t numel = 0;
    if (items == nullptr || items->empty() || !out_dims(out, dims, numel)) return;
    int64_t axis = 0;
    if (args.size() > 1) {
      if (!args[1].is_int()) return;
      axis = args[1].as_int();
    } else if (axes_kw != nullptr) {
      if (!axes_kw->is_int()) return;
      axis = axes_kw->as_int();
    }
    const auto rank = static_cast<int64_t>(dims.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return;
    // outer: the product of the dims before the axis; each part contributes `chunk` elements
    // per outer index (its own extent along the axis times the dims after it).
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= dims[static_cast<size_t>(i)];
    std::vector<Elems> parts;
    std::vector<int64_t> chunks;
    int64_t per_outer = 0;
    for (const Value& v : *items) {
      auto e = elems(v);
      if (!e || e->python_scalar) return;
      const int64_t c = outer != 0 ? e->numel / outer : 0;
      chunks.push_back(c);
      per_outer += c;
      parts.push_back(std::move(*e));
    }
    if (per_outer * outer != numel) return;
    std::vector<double> vals;
    vals.reserve(static_cast<size_t>(numel));
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t p = 0; p < parts.size(); ++p) {
        for (int64_t k = 0; k < chunks[p]; ++k) vals.push_back(parts[p].at(o * chunks[p] + k));
      }
    }
    set_values(out, std::move(vals));
    return;
  }
  // np.sum / np.mean over axes (keepdims or not): reduced in double.
  if (api == "ops.sum" || api == "ops.mean") {
    auto e = elems(args[0]);
    std::vector<int64_t> dims;
    int64_t numel = 0;
    if (!e || e->python_scalar || !out_dims(out, dims, numel)) return;
    const auto rank = static_cast<int64_t>(e->shape.size());
    const Value* axis_v = args.size() > 1 ? &args[1] : axes_kw;
    std::vector<bool> reduced(e->shape.size(), axis_v == nullptr || axis_v->is_none());
    if (axis_v != nullptr && !axis_v->is_none()) {
      std::vector<Value> list;
      if (const auto* seq = seq_items(*axis_v)) {
        list = *seq;
      } else {
        list.push_back(*axis_v);
      }
      for (const Value& a : list) {
        if (!a.is_int()) return;
        int64_t ax = a.as_int();
        if (ax < 0) ax += rank;
        if (ax < 0 || ax >= rank) return;
        reduced[static_cast<size_t>(ax)] = true;
      }
    }
    // The reduced result's flat index for each input element: the kept dims, in order.
    std::vector<double> acc(static_cast<size_t>(numel), 0.0);
    int64_t count = 1;
    for (size_t i = 0; i < e->shape.size(); ++i) {
      if (reduced[i]) count *= e->shape[i];
    }
    std::vector<int64_t> idx(e->shape.size(), 0);
    for (int64_t flat = 0; flat < e->numel; ++flat) {
      int64_t o = 0;
      for (size_t i = 0; i < e->shape.size(); ++i) {
        if (!reduced[i]) o = o * e->shape[i] + idx[i];
      }
      if (o >= numel) return;
      acc[static_cast<size_t>(o)] += e->at(flat);
      for (size_t i = e->shape.size(); i-- > 0;) {
        if (++idx[i] < e->shape[i]) break;
        idx[i] = 0;
      }
    }
    if (api == "ops.mean" && count > 0) {
      for (double& x : acc) x /= static_cast<double>(count);
    }
    set_values(out, std::move(acc));
    return;
  }
  if (api == "ops.transpose") {
    const Value* axes = args.size() > 1 ? &args[1] : axes_kw;
    std::vector<int64_t> perm;
    if (axes && !axes->is_none()) {
      auto* items = seq_items(*axes);
      if (!items) return;
      for (const Value& v : *items) {
        if (!v.is_int()) return;
        perm.push_back(v.as_int());
      }
    }
    transpose(args[0], std::move(perm), out);
    return;
  }
  auto op = op_for_api(api);
  if (!op || args.size() != 2) return;
  auto kind = [](const Value& v, DType& d, bool& py) {
    if (v.k == VK::Bool || v.k == VK::Int || v.k == VK::Float) {
      py = true;
      d = v.k == VK::Bool ? DType::Bool : v.k == VK::Int ? DType::Int64 : DType::Float64;
      return true;
    }
    auto* t = v.as<TensorObj>();
    if (!t || t->type.dtype == DType::Unknown) return false;
    py = false;
    d = t->type.dtype;
    return true;
  };
  DType da{}, db{};
  bool pa = false, pb = false;
  if (!kind(args[0], da, pa) || !kind(args[1], db, pb)) return;
  out.type.dtype = result_dtype(*op, da, pa, db, pb);
  binary(*op, args[0], args[1], out);
}

}  // namespace graphcore::eval::npv
