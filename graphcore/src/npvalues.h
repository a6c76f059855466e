// Element values of small constant arrays: what numpy code in `__init__` computes (sinusoid
// position tables, causal masks, `Tensor(arr, dtype)` built from them), so that the Constant
// nodes they become carry their data for the runtime. Elements are computed in double precision
// and rounded to the result's dtype after every operation, with numpy's dtype rules.
//
// Only arrays whose shape is fully known and whose element count is at most kMaxElements get
// values; anything larger (or computed by an operation not modelled here) is tracked by shape and
// dtype only, as before. A uniform array (np.ones, np.full, a scalar) keeps only its fill value
// (TensorObj::fill), whatever its size: nothing is allocated for it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "value.h"

namespace graphcore::eval::npv {

// 1M elements (8 MB of doubles): position tables and masks of real models are far below.
inline constexpr int64_t kMaxElements = int64_t{1} << 20;

// Whether element arrays are computed at all (AnalysisOptions::constant_values), for the
// analysis running on this thread. When off, only uniform fills are tracked and nothing is
// allocated for elements; a slice assignment makes an array's data unknown.
bool enabled();
// How many elements an array may have for its values to be computed: kMaxElements when
// enabled(), else kSmallElements (stochastic-depth rates from np.linspace(...), tiny tables: what
// model-building code reads back with `.item()` / `float()` to choose layers).
inline constexpr int64_t kSmallElements = 4096;
int64_t element_limit();
class Enable {
 public:
  explicit Enable(bool on);
  ~Enable();
  Enable(const Enable&) = delete;
  Enable& operator=(const Enable&) = delete;

 private:
  bool saved_;
};

// The known elements of a value: an array or tensor with recorded values or a uniform fill and
// a fully known shape, or a Python bool/int/float (0-d; "weak" in numpy's dtype promotion).
struct Elems {
  std::vector<int64_t> shape;
  DType dtype = DType::Float64;
  bool python_scalar = false;
  std::shared_ptr<const std::vector<double>> data;  // null when uniform
  double fill = 0;
  int64_t numel = 1;
  [[nodiscard]] double at(int64_t i) const { return data ? (*data)[static_cast<size_t>(i)] : fill; }
};
std::optional<Elems> elems(const Value& v);

// `x` as stored in dtype `d`: float32/float16/bfloat16 rounding (to nearest even, fp16 overflow
// to inf), truncation toward zero for integers, 0/1 for bool.
double to_dtype(DType d, double x);

// Records `vals` (row-major, out's shape) as out's values, rounded to out's dtype; a uniform
// result keeps only its fill. Nothing is recorded above kMaxElements.
void set_values(TensorObj& out, std::vector<double> vals);
// Drops any recorded value (fill and elements): the data is no longer known.
void forget(TensorObj& t);

enum class Op { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Max, Min, Eq, Ne, Lt, Le, Gt, Ge, And, Or };
// The operation of a MindSpore API used for Python operators and numpy functions ("ops.add").
std::optional<Op> op_for_api(std::string_view api);
// numpy's result dtype of `a op b` (Python scalars are weak: they take the array's dtype when of
// the same kind, as in NEP 50; an int array with a Python float gives float64).
DType result_dtype(Op op, DType a, bool a_python_scalar, DType b, bool b_python_scalar);
inline DType result_dtype(Op op, const Elems& a, const Elems& b) {
  return result_dtype(op, a.dtype, a.python_scalar, b.dtype, b.python_scalar);
}

// Element values of a numpy function modelled through a MindSpore registry rule (np.reshape,
// np.expand_dims, np.transpose, np.add, np.maximum...; `api` is the rule's entry, "ops.add"),
// computed into `out` (whose dtype becomes numpy's for the arithmetic ones).
void registry_function(std::string_view api, const std::vector<Value>& args, const Value* axes_kw,
                       TensorObj& out);

// out = a op b, broadcast; out's dtype must already be set. False when an operand is unknown.
bool binary(Op op, const Value& a, const Value& b, TensorObj& out);
// numpy's dtype of an elementwise float ufunc (sin, exp, ...) of an array of dtype d.
DType float_ufunc_dtype(DType d);
// out = fn(x) elementwise for the numpy ufunc `fn` (sin, cos, tan, tanh, exp, log, sqrt, abs,
// negative, square, floor, ceil, ...). False when x is unknown or fn not modelled.
bool unary(std::string_view fn, const Value& x, TensorObj& out);
// The numpy ufunc that computes the graph operator `op` of one tensor elementwise ("Log":
// "log"), for unary() on a constant; empty for any other operator.
std::string_view ufunc_of_op(std::string_view op);
// np.triu (upper) / np.tril of the last two axes, diagonal offset k.
bool triangle(const Value& x, int64_t k, bool upper, TensorObj& out);
// Same elements in the same order (reshape, expand_dims, squeeze, flatten, astype, Tensor(arr)),
// converted to out's dtype.
bool same_order(const Value& x, TensorObj& out);
// A 0-d numpy array whose value is known, as the numpy scalar it is in numpy (an element of an
// array, a reduction to one element): a Python bool, float or int; nullopt otherwise.
std::optional<Value> as_numpy_scalar(const TensorObj& t);
// out = x.transpose(perm) (perm empty: reversed axes).
bool transpose(const Value& x, std::vector<int64_t> perm, TensorObj& out);

// Basic indexing x[idx] (ints, slices with int bounds, None, Ellipsis).
bool index(const Value& x, const std::vector<Value>& idx, TensorObj& out);
// x[idx] = rhs in place, rhs broadcast to the selection and converted to x's dtype. When the
// result cannot be computed x's values are dropped (the data is no longer known).
void assign(TensorObj& x, const std::vector<Value>& idx, const Value& rhs);

}  // namespace graphcore::eval::npv
