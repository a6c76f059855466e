// CPU kernels of the backward operators (graphcore/src/ops/grad.cpp) that build_backward's
// gradient rules emit (graphcore/src/autodiff/rules.cpp). Each recomputes from the forward
// inputs what it needs (a pre-activation, a pooling window's argmax, batch statistics) rather
// than the forward kernels keeping it: the forward graph stays the one the program declared.
// Accumulations run in double where a sum spans a whole batch.
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "graphcore/checked.h"
#include "runtime/dnnl_ops.h"
#include "runtime/kernels.h"
#include "runtime/parallel.h"

namespace graphcore::runtime::kernels {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapM = Eigen::Map<RowMat>;
using MapCM = Eigen::Map<const RowMat>;

// Calls f(flat, ia, ib) for every element of `shape`, ia/ib its offsets under strides sa/sb.
template <class F>
void for_each_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& sa,
                    const std::vector<int64_t>& sb, F f) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  if (total == 0) return;
  const size_t r = shape.size();
  std::vector<int64_t> idx(r, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t o = 0; o < total; ++o) {
    f(o, ia, ib);
    for (size_t d = r; d-- > 0;) {
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < shape[d]) break;
      ia -= sa[d] * shape[d];
      ib -= sb[d] * shape[d];
      idx[d] = 0;
    }
  }
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// d op(x) / dx for the elementwise operators and activations, with the node's attributes (the
// forward node's, shared by its backward node). At a kink the value MindSpore 2.10's gradient
// takes there (checked with mindspore.grad): ReLU'(0) = 0, ReLU6'(6) = 1, |x|'(0) = 0.
struct Unary {
  std::string_view op;
  double alpha = 0.2, beta = 1, threshold = 20;
  bool tanh_gelu = false;

  [[nodiscard]] double operator()(double x) const {
    if (op == "ReLU") return x > 0 ? 1 : 0;
    if (op == "ReLU6") return x > 0 && x <= 6 ? 1 : 0;
    if (op == "Sigmoid") {
      const double s = sigmoid(x);
      return s * (1 - s);
    }
    if (op == "Tanh") {
      const double t = std::tanh(x);
      return 1 - t * t;
    }
    if (op == "GeLU") {
      if (tanh_gelu) {
        const double k = 0.7978845608028654, c = 0.044715;
        const double t = std::tanh(k * (x + c * x * x * x));
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x);
      }
      return 0.5 * (1 + std::erf(x * M_SQRT1_2)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    }
    if (op == "FastGeLU") {  // x * sigmoid(1.702 x) on both branches of MindSpore's formula
      const double s = sigmoid(1.702 * x);
      return s + 1.702 * x * s * (1 - s);
    }
    if (op == "SiLU") {
      const double s = sigmoid(x);
      return s * (1 + x * (1 - s));
    }
    if (op == "HSwish") return x <= -3 ? 0 : x >= 3 ? 1 : (2 * x + 3) / 6;
    if (op == "HSigmoid") return x > -3 && x < 3 ? 1.0 / 6 : 0;
    if (op == "LeakyReLU") return x >= 0 ? 1 : alpha;
    if (op == "Elu") return x >= 0 ? 1 : alpha * std::exp(x);
    if (op == "Softplus") return beta * x > threshold ? 1 : sigmoid(beta * x);
    if (op == "Mish") {
      const double sp = x > 20 ? x : std::log1p(std::exp(x));
      const double t = std::tanh(sp);
      return t + x * (1 - t * t) * (x > 20 ? 1 : sigmoid(x));
    }
    if (op == "Tanhshrink") {
      const double t = std::tanh(x);
      return t * t;
    }
    if (op == "Sqrt") return 0.5 / std::sqrt(x);
    if (op == "Rsqrt") return -0.5 / (x * std::sqrt(x));
    if (op == "Exp") return std::exp(x);
    if (op == "Log") return 1 / x;
    if (op == "Square") return 2 * x;
    if (op == "Abs") return static_cast<double>((x > 0) - (x < 0));
    if (op == "Reciprocal") return -1 / (x * x);
    if (op == "Erf") return 2 / std::sqrt(M_PI) * std::exp(-x * x);
    if (op == "Sin") return std::cos(x);
    if (op == "Cos") return -std::sin(x);
    fail("no derivative for operator " + std::string(op));
  }
};

Unary unary_of(std::string_view op, const Node& n) {
  Unary u;
  u.op = op;
  if (op == "LeakyReLU") {
    u.alpha = attr_float(n, "alpha").value_or(attr_float(n, "negative_slope").value_or(0.2));
  } else if (op == "Elu") {
    u.alpha = attr_float(n, "alpha").value_or(1.0);
  }
  u.beta = attr_float(n, "beta").value_or(1.0);
  u.threshold = attr_float(n, "threshold").value_or(20.0);
  u.tanh_gelu = gelu_approximate(n);
  return u;
}

std::string_view forward_op(const KernelCall& c) {
  std::string_view op = c.node.op;
  if (op.ends_with("Grad")) op.remove_suffix(4);
  return op;
}

// The operator of a Dense layer's activation name (apply_activation's names); "" for none.
std::string_view activation_op(const std::string& act) {
  if (act.empty() || act == "None") return {};
  if (act == "relu") return "ReLU";
  if (act == "relu6") return "ReLU6";
  if (act == "tanh") return "Tanh";
  if (act == "sigmoid") return "Sigmoid";
  if (act == "gelu") return "GeLU";
  if (act == "silu" || act == "swish") return "SiLU";
  fail("Dense activation '" + act + "' is not supported by the runtime");
}

Tensor zeros_float(const std::vector<int64_t>& shape) { return Tensor(shape, DType::Float32); }

// The declared shape of output `i`, which a backward kernel must produce (its forward input's).
std::vector<int64_t> declared(const KernelCall& c, size_t i) {
  auto s = out_shape(c, i);
  if (!s) fail("the shape of gradient output " + std::to_string(i) + " is not known");
  return *s;
}

}  // namespace

void k_unary_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor dy = as_float(in(c, 1));
  if (x.numel() != dy.numel())
    fail("gradient " + dy.type_str() + " does not match the input " + x.type_str());
  const Unary d = unary_of(forward_op(c), c.node);
  Tensor& dx = emit(c, Tensor::uninitialized(x.shape(), DType::Float32));
  const auto* px = x.data<float>();
  const auto* pg = dy.data<float>();
  auto* q = dx.data<float>();
  if (d.op == "GeLU") {  // oneDNN's vectorized erf/exp (tanh) instead of libm's, per element
    dnnl_ops::eltwise_backward(
        d.tanh_gelu ? dnnl_ops::Eltwise::GeluTanh : dnnl_ops::Eltwise::GeluErf, px, pg, q,
        x.numel());
    return;
  }
  if (x.numel() > 0) (void)d(px[0]);  // an operator without a derivative fails here, serially
  parallel_for(x.numel(), kGrainMath, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) q[i] = static_cast<float>(pg[i] * d(px[i]));
  });
}

// The partial derivatives of a binary operator at (x, y) times the output gradient g.
enum class BinGrad { Add, Sub, Mul, Div, Pow, Maximum, Minimum, Mod };

BinGrad bin_grad_of(std::string_view op) {
  if (op == "Add") return BinGrad::Add;
  if (op == "Sub") return BinGrad::Sub;
  if (op == "Mul") return BinGrad::Mul;
  if (op == "Div" || op == "RealDiv") return BinGrad::Div;
  if (op == "Pow") return BinGrad::Pow;
  if (op == "Maximum") return BinGrad::Maximum;
  if (op == "Minimum") return BinGrad::Minimum;
  if (op == "FloorMod" || op == "Mod") return BinGrad::Mod;
  fail("no gradient for operator " + std::string(op));
}

void bin_partials(BinGrad op, double g, double x, double y, double& da, double& db) {
  da = 0;
  db = 0;
  switch (op) {
    case BinGrad::Add:
      da = g;
      db = g;
      return;
    case BinGrad::Sub:
      da = g;
      db = -g;
      return;
    case BinGrad::Mul:
      da = g * y;
      db = g * x;
      return;
    case BinGrad::Div:
      da = g / y;
      db = -g * x / (y * y);
      return;
    case BinGrad::Pow:
      da = y == 0 ? 0 : g * y * std::pow(x, y - 1);
      // d/dy x^y = x^y log x: 0 at x = 0 (the limit for y > 0), NaN below.
      db = x == 0 ? 0 : g * std::pow(x, y) * std::log(x);
      return;
    case BinGrad::Maximum:
    case BinGrad::Minimum: {
      // A tie splits the gradient evenly, as MindSpore 2.10 does.
      const bool first = op == BinGrad::Maximum ? x > y : x < y;
      if (x == y) {
        da = db = g / 2;
      } else if (first) {
        da = g;
      } else {
        db = g;
      }
      return;
    }
    case BinGrad::Mod: {
      // x - q y with q piecewise constant: -floor(x / y) dy for y. ops.Mod's forward truncates,
      // yet MindSpore 2.10's gradient of it uses floor too (measured: Mod(-2.7, 1.5) gives
      // dy = 2): the same is computed here.
      const double q = std::floor(x / y);
      da = g;
      db = -g * q;
      return;
    }
  }
}

// Whether `t` broadcast to `out` is `t` repeated whole: its dims, aligned to the right, are 1s
// followed by `out`'s trailing dims.
bool trailing_broadcast(const std::vector<int64_t>& t, const std::vector<int64_t>& out) {
  if (t.size() > out.size()) return false;
  const size_t lead = out.size() - t.size();
  size_t k = 0;
  while (k < t.size() && t[k] == 1) ++k;
  for (size_t i = k; i < t.size(); ++i) {
    if (t[i] != out[lead + i]) return false;
  }
  return true;
}

// Broadcasting binary operators: the partial derivative per output element, summed back over
// the broadcast dims of each tensor operand (a Python scalar operand gets none).
void k_binary_grad(KernelCall& c) {
  if (c.inputs.size() < 2) fail("expects the forward operand(s) and the output gradient");
  const std::vector<Tensor> fin(c.inputs.begin(), c.inputs.end() - 1);
  std::vector<Tensor> unused;
  const KernelCall fwd{c.node, fin, c.params, unused, c.run_seed, c.training};
  const std::vector<Tensor> ops = operands(fwd, 2);
  const Tensor a = as_float(ops[0]), b = as_float(ops[1]);
  const Tensor dy = as_float(c.inputs.back());
  const std::vector<int64_t> shape = broadcast(a.shape(), b.shape());
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  if (dy.numel() != total)
    fail("gradient " + dy.type_str() + " does not match the output " + shape_str(shape));
  const BinGrad op = bin_grad_of(forward_op(c));
  const auto* pa = a.data<float>();
  const auto* pb = b.data<float>();
  const auto* pg = dy.data<float>();
  std::vector<double> ga, gb;
  Tensor fa, fb;  // same shapes: nothing is summed, the float results are written directly
  const bool same = a.shape() == b.shape();
  if (same) {
    fa = Tensor::uninitialized(a.shape(), DType::Float32);
    fb = Tensor::uninitialized(b.shape(), DType::Float32);
    auto* qa = fa.data<float>();
    auto* qb = fb.data<float>();
    parallel_for(total, kGrainCheap, [&](int64_t s, int64_t e) {
      for (int64_t o = s; o < e; ++o) {
        double da = 0, db = 0;
        bin_partials(op, pg[o], pa[o], pb[o], da, db);
        qa[o] = static_cast<float>(0.0 + da);  // as the sums below: -0 becomes +0
        qb[o] = static_cast<float>(0.0 + db);
      }
    });
  } else if (op == BinGrad::Add || op == BinGrad::Sub || op == BinGrad::Mul) {
    // Each partial needs one operand at most (Add +-g, Mul g times the other operand), so each
    // operand's gradient is computed on its own: one of the output's shape elementwise (on the
    // runtime's threads when the other operand is a single value or of the same shape), a
    // broadcast one summed in the order of the general loop below (the same bits), and a Python
    // scalar operand, which gets no gradient, not at all.
    const AttrValue* scalar_attr = c.node.find_attr("scalar");
    const int64_t skip = scalar_attr ? attr_int(c.node, "scalar_index").value_or(-1) : -1;
    const std::vector<int64_t> zero(shape.size(), 0);
    for (int pos = 0; pos < 2; ++pos) {
      if (pos == skip) continue;
      const Tensor& t = pos == 0 ? a : b;
      const Tensor& other = pos == 0 ? b : a;
      const auto* po = other.data<float>();
      const double sign = pos == 1 && op == BinGrad::Sub ? -1.0 : 1.0;
      const bool mul = op == BinGrad::Mul;
      auto partial = [&](int64_t o, int64_t j) {
        return mul ? static_cast<double>(pg[o]) * static_cast<double>(po[j]) : sign * pg[o];
      };
      if (t.shape() == shape) {
        Tensor& f = pos == 0 ? fa : fb;
        f = Tensor::uninitialized(shape, DType::Float32);
        auto* q = f.data<float>();
        const bool flat = !mul || other.numel() == 1 || other.shape() == shape;
        if (flat) {
          const int64_t step = other.numel() == 1 ? 0 : 1;
          parallel_for(total, kGrainCheap, [&](int64_t s0, int64_t e) {
            for (int64_t o = s0; o < e; ++o) q[o] = static_cast<float>(0.0 + partial(o, o * step));
          });
        } else {
          for_each_index(shape, zero, bstrides(other.shape(), shape),
                         [&](int64_t o, int64_t, int64_t j) {
                           q[o] = static_cast<float>(0.0 + partial(o, j));
                         });
        }
        continue;
      }
      std::vector<double>& g = pos == 0 ? ga : gb;
      g.assign(static_cast<size_t>(t.numel()), 0.0);
      const int64_t inner = t.numel();
      if (!mul && inner > 0 && trailing_broadcast(t.shape(), shape)) {
        // t repeats whole over the leading dims (an attention mask (1, 1, 1, S) added to scores
        // (B, H, S, S)): row after row added to the sums, each sum in the loop's order.
        double* acc = g.data();
        for (int64_t r = 0; r < total / inner; ++r) {
          const float* row = pg + r * inner;
          for (int64_t k = 0; k < inner; ++k) acc[k] += sign * row[k];
        }
        continue;
      }
      for_each_index(
          shape, bstrides(t.shape(), shape), bstrides(other.shape(), shape),
          [&](int64_t o, int64_t i, int64_t j) { g[static_cast<size_t>(i)] += partial(o, j); });
    }
  } else {
    ga.assign(static_cast<size_t>(a.numel()), 0.0);
    gb.assign(static_cast<size_t>(b.numel()), 0.0);
    for_each_index(shape, bstrides(a.shape(), shape), bstrides(b.shape(), shape),
                   [&](int64_t o, int64_t i, int64_t j) {
                     double da = 0, db = 0;
                     bin_partials(op, pg[o], pa[i], pb[j], da, db);
                     ga[static_cast<size_t>(i)] += da;
                     gb[static_cast<size_t>(j)] += db;
                   });
  }
  // One output per tensor operand, in input order (the scalar operand's position skipped).
  const AttrValue* scalar = c.node.find_attr("scalar");
  const int64_t scalar_at = scalar ? attr_int(c.node, "scalar_index").value_or(-1) : -1;
  size_t k = 0;
  for (int64_t pos = 0; pos < 2 && k < fin.size(); ++pos) {
    if (pos == scalar_at) continue;
    ++k;
    if (same || (pos == 0 ? fa : fb).numel() > 0) {
      emit(c, pos == 0 ? fa : fb);
      continue;
    }
    const std::vector<double>& g = pos == 0 ? ga : gb;
    Tensor& t = emit(c, zeros_float(ops[static_cast<size_t>(pos)].shape()));
    auto* q = t.data<float>();
    for (size_t e = 0; e < g.size(); ++e) q[e] = static_cast<float>(g[e]);
  }
}

void k_bias_add_grad(KernelCall& c) {
  const Tensor dy = as_float(in(c, 0));
  const size_t axis = dy.rank() >= 2 ? 1 : 0;
  const int64_t ch = dy.rank() == 0 ? 1 : dy.shape()[axis];
  int64_t inner = 1;
  for (size_t i = axis + 1; i < dy.rank(); ++i) inner *= dy.shape()[i];
  const int64_t outer = ch * inner == 0 ? 0 : dy.numel() / (ch * inner);
  std::vector<double> acc(static_cast<size_t>(ch), 0.0);
  const auto* p = dy.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < ch; ++k)
      for (int64_t i = 0; i < inner; ++i) acc[k] += p[(o * ch + k) * inner + i];
  }
  Tensor& db = emit(c, zeros_float(declared(c, 0)));
  if (db.numel() != ch) fail("bias gradient " + db.type_str() + " for " + dy.type_str());
  for (int64_t k = 0; k < ch; ++k) db.data<float>()[k] = static_cast<float>(acc[k]);
}

// Dense: y = act(x W^T + b). Params mode reads weight/bias (the layer's); functional mode gets
// (x, w, [b], dy). Outputs: dx, dw, db (when declared).
void k_dense_grad(KernelCall& c) {
  const Tensor* wp = find_param(c, "weight");
  const bool functional = wp == nullptr;
  const Tensor x = as_float(in(c, 0));
  const Tensor w = functional ? as_float(in(c, 1)) : *wp;
  const size_t want_bias = c.node.outputs.size() >= 3;
  const Tensor* bias = nullptr;
  Tensor bias_in;
  if (want_bias) {
    if (functional) {
      bias_in = as_float(in(c, 2));
      bias = &bias_in;
    } else {
      bias = find_param(c, "bias");
    }
  }
  const Tensor dy = as_float(c.inputs.back());
  if (w.rank() != 2) fail("Dense weight must be 2-D, got " + w.type_str());
  const int64_t in_f = w.shape()[1], out_f = w.shape()[0];
  if (x.rank() == 0 || x.shape().back() != in_f)
    fail("Dense expects input (..., " + std::to_string(in_f) + "), got " + x.type_str());
  const int64_t m = x.numel() / in_f;
  if (dy.numel() != m * out_f) fail("Dense gradient " + dy.type_str() + " does not match");
  // dpre = dy * act'(x W^T + b); dx = dpre W and dw = dpre^T x on oneDNN (threaded).
  Tensor dpre = dy.reshape({m, out_f});
  const std::string_view act = activation_op(attr_str(c.node, "activation").value_or(""));
  if (!act.empty()) {
    MapCM X(x.data<float>(), m, in_f);
    MapCM W(w.data<float>(), out_f, in_f);
    RowMat pre = X * W.transpose();
    if (bias) pre.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias->data<float>(), out_f);
    Unary d = unary_of(act, c.node);
    d.tanh_gelu = true;  // the forward kernel's "gelu" is nn.GELU()'s default, the tanh form
    dpre = dpre.clone();
    auto* g = dpre.data<float>();
    for (int64_t i = 0; i < pre.size(); ++i) g[i] = static_cast<float>(g[i] * d(pre.data()[i]));
  }
  // Both products (and the bias's row sum) on oneDNN's inner-product backward, which reads W
  // and writes dW in their (out, in) layout (dnnl_ops.h).
  Tensor db;
  emit(c, dnnl_ops::dense_backward_data(dpre, w).reshape(x.shape()));
  emit(c, dnnl_ops::dense_backward_weights(x.reshape({m, in_f}), dpre, want_bias ? &db : nullptr));
  if (want_bias) {
    const std::vector<int64_t> shape = declared(c, 2);
    int64_t n = 1;
    for (int64_t v : shape) n *= v;
    if (n != out_f) fail("Dense bias gradient " + shape_str(shape));
    emit(c, db.reshape(shape));
  }
}

// numpy matmul with transposes: per broadcast batch, dA += dY op(B)^T, dB += op(A)^T dY (each
// transposed back when the operand was), summed over the batch dims each operand was broadcast
// along.
void k_matmul_grad(KernelCall& c) {
  const Tensor a = as_float(in(c, 0)), b = as_float(in(c, 1)), dy = as_float(in(c, 2));
  const bool ta =
      attr_bool(c.node, "transpose_a").value_or(attr_bool(c.node, "transpose_x1").value_or(false));
  const bool tb =
      attr_bool(c.node, "transpose_b").value_or(attr_bool(c.node, "transpose_x2").value_or(false));
  std::vector<int64_t> sa = a.shape(), sb = b.shape();
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  if (sa.size() < 2 || sb.size() < 2) fail("MatMul needs tensors of rank >= 1");
  const int64_t ra = sa[sa.size() - 2], ca = sa[sa.size() - 1];
  const int64_t rb = sb[sb.size() - 2], cb = sb[sb.size() - 1];
  const int64_t m = ta ? ca : ra, n = tb ? rb : cb;
  const std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const std::vector<int64_t> batch = broadcast(ba, bb);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  if (dy.numel() != nb * m * n) fail("MatMul gradient " + dy.type_str() + " does not match");
  // Same batch dims, no vector operand: both products on oneDNN (threaded), transposes as
  // strides. op(X) is X or X^T; dA = G op(B)^T (transposed back when ta), dB = op(A)^T G.
  if (ba == bb && a.rank() >= 2 && b.rank() >= 2) {
    emit(c, ta ? dnnl_ops::matmul(b, dy, tb, true) : dnnl_ops::matmul(dy, b, false, !tb));
    emit(c, tb ? dnnl_ops::matmul(dy, a, true, ta) : dnnl_ops::matmul(a, dy, !ta, false));
    return;
  }
  // Handles (shared storage), emitted at the end: a reference into c.outputs would dangle.
  Tensor da = zeros_float(a.shape());
  Tensor db = zeros_float(b.shape());
  const auto* pa = a.data<float>();
  const auto* pb = b.data<float>();
  const auto* pg = dy.data<float>();
  auto* pda = da.data<float>();
  auto* pdb = db.data<float>();
  const int64_t a_mat = ra * ca, b_mat = rb * cb;
  for_each_index(batch, bstrides(ba, batch), bstrides(bb, batch),
                 [&](int64_t o, int64_t i, int64_t j) {
                   MapCM A(pa + i * a_mat, ra, ca);
                   MapCM B(pb + j * b_mat, rb, cb);
                   MapCM G(pg + o * m * n, m, n);
                   MapM dA(pda + i * a_mat, ra, ca);
                   MapM dB(pdb + j * b_mat, rb, cb);
                   RowMat d_opa = tb ? RowMat(G * B) : RowMat(G * B.transpose());
                   RowMat d_opb = ta ? RowMat(A * G) : RowMat(A.transpose() * G);
                   if (ta) {
                     dA += d_opa.transpose();
                   } else {
                     dA += d_opa;
                   }
                   if (tb) {
                     dB += d_opb.transpose();
                   } else {
                     dB += d_opb;
                   }
                 });
  emit(c, da);
  emit(c, db);
}

// Conv2D (and Conv1D as height 1): dX and dW (and db when declared) from dY on oneDNN's
// backward-data and backward-weights primitives (runtime/dnnl_ops.h), with the forward kernel's
// geometry (groups, stride, dilation, pads resolved from pad_mode).
void k_conv2d_grad(KernelCall& c) {
  const Tensor* wp = find_param(c, "weight");
  const bool functional = wp == nullptr;
  const Tensor& x0 = in(c, 0);
  const Tensor& w0 = functional ? in(c, 1) : *wp;
  Tensor dy = as_float(c.inputs.back());
  Tensor x = as_float(x0), wt = as_float(w0);
  const bool one_d = x.rank() == 3;
  if (one_d) {
    if (wt.rank() == 3) wt = wt.reshape({wt.shape()[0], wt.shape()[1], 1, wt.shape()[2]});
    x = x.reshape({x.shape()[0], x.shape()[1], 1, x.shape()[2]});
  }
  if (x.rank() != 4 || wt.rank() != 4) {
    fail("Conv2D gradient expects NCHW input and a 4-D weight, got " + x.type_str() + ", " +
         wt.type_str());
  }
  const int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const int64_t oc = wt.shape()[0], icg = wt.shape()[1];
  const int64_t groups = attr_int(c.node, "group").value_or(attr_int(c.node, "groups").value_or(1));
  if (groups <= 0 || ch != icg * groups || oc % groups != 0)
    fail("Conv2D gradient: input " + x.type_str() + " does not match weight " + wt.type_str());
  const Window w = one_d ? window_1d(c.node, wd, wt.shape()[3])
                         : make_window(c.node, {h, wd}, {wt.shape()[2], wt.shape()[3]}, false);
  if (dy.numel() != n * oc * w.out[0] * w.out[1])
    fail("Conv2D gradient " + dy.type_str() + " does not match");
  const dnnl_ops::ConvGeometry geo = conv_geometry(x.shape(), oc, groups, w);
  dy = dy.reshape(geo.output_shape());
  const bool want_bias = c.node.outputs.size() >= 3;
  Tensor db;
  Tensor dx = dnnl_ops::conv2d_backward_data(geo, dy, wt);
  Tensor dw = dnnl_ops::conv2d_backward_weights(geo, x, dy, want_bias ? &db : nullptr);
  emit(c, dx.reshape(x0.shape()));
  emit(c, dw.reshape(w0.shape()));
  if (want_bias) emit(c, db.reshape(declared(c, 2)));
}

// MaxPool: the gradient goes to the window's maximum (the first one, as the forward kernel picks
// it); AvgPool: spread over the window with the forward kernel's divisor.
void k_pool_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor dy = as_float(in(c, 1));
  if (x.rank() != 4) fail("pooling expects a 4-D NCHW input, got " + x.type_str());
  const bool is_max = forward_op(c) == "MaxPool";
  auto k = attr_ints(c.node, "kernel_size", 2).value_or(std::vector<int64_t>{1, 1});
  if (k.size() == 4) k = {k[2], k[3]};
  const bool ceil_mode = attr_bool(c.node, "ceil_mode").value_or(false);
  const int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const Window w = make_window(c.node, {h, wd}, k, ceil_mode);
  const std::string mode = attr_str(c.node, "pad_mode").value_or("valid");
  const bool include_pad =
      (mode == "pad" || mode == "PAD") && attr_bool(c.node, "count_include_pad").value_or(true);
  const int64_t divisor = is_max ? 0 : attr_int(c.node, "divisor_override").value_or(0);
  const int64_t oh = w.out[0], ow = w.out[1];
  if (dy.numel() != n * ch * oh * ow) fail("pooling gradient " + dy.type_str() + " does not match");
  Tensor& dx = emit(c, zeros_float(x.shape()));
  const auto* px = x.data<float>();
  const auto* pg = dy.data<float>();
  auto* q = dx.data<float>();
  for (int64_t b = 0; b < n * ch; ++b) {
    const float* xc = px + b * h * wd;
    float* dc = q + b * h * wd;
    for (int64_t r = 0; r < oh; ++r) {
      for (int64_t s = 0; s < ow; ++s) {
        const float g = pg[(b * oh + r) * ow + s];
        const int64_t h0 = r * w.stride[0] - w.pad_before[0];
        const int64_t w0 = s * w.stride[1] - w.pad_before[1];
        const int64_t h1 = std::min(h0 + k[0], h + w.pad_after[0]);
        const int64_t w1 = std::min(w0 + k[1], wd + w.pad_after[1]);
        const int64_t hs = std::max<int64_t>(h0, 0), ws = std::max<int64_t>(w0, 0);
        const int64_t he = std::min(h1, h), we = std::min(w1, wd);
        if (is_max) {
          // The forward kernel's taps: d apart (nn.MaxPool2d's dilation), padding skipped.
          float best = -std::numeric_limits<float>::infinity();
          int64_t at = -1;
          for (int64_t a = 0; a < k[0]; ++a) {
            const int64_t i = h0 + a * w.dilation[0];
            if (i < 0 || i >= h) continue;
            for (int64_t e = 0; e < k[1]; ++e) {
              const int64_t j = w0 + e * w.dilation[1];
              if (j < 0 || j >= wd) continue;
              const float v = xc[i * wd + j];
              if (at < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
                best = v;
                at = i * wd + j;
              }
            }
          }
          if (at >= 0) dc[at] += g;
          continue;
        }
        const int64_t cnt = divisor > 0   ? divisor
                            : include_pad ? (h1 - h0) * (w1 - w0)
                                          : (he - hs) * (we - ws);
        if (cnt <= 0) continue;
        const float share = g / static_cast<float>(cnt);
        for (int64_t i = hs; i < he; ++i)
          for (int64_t j = ws; j < we; ++j) dc[i * wd + j] += share;
      }
    }
  }
}

// Adaptive average pooling over the last `nd` (1 or 2) dims: each output cell's gradient spread
// over its window [floor(i n / m), ceil((i + 1) n / m)).
void k_adaptive_avgpool_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor dy = as_float(in(c, 1));
  const auto nd = static_cast<size_t>(attr_int(c.node, "nd").value_or(2));
  const bool is_max = c.node.op == "AdaptiveMaxPoolGrad";
  if (nd < 1 || nd > 3 || x.rank() < nd || dy.rank() != x.rank())
    fail("adaptive pool gradient: bad ranks");
  const size_t first = x.rank() - nd;
  // The pooled dims as (depth, height, width), 1 where the pool has fewer (the forward's).
  std::array<int64_t, 3> n{1, 1, 1}, m{1, 1, 1};
  for (size_t i = 0; i < nd; ++i) {
    n[3 - nd + i] = x.shape()[first + i];
    m[3 - nd + i] = dy.shape()[first + i];
  }
  const auto window = [&](size_t d, int64_t i) {
    return std::pair{i * n[d] / m[d], ((i + 1) * n[d] + m[d] - 1) / m[d]};
  };
  const int64_t plane = n[0] * n[1] * n[2];
  const int64_t planes = x.numel() / std::max<int64_t>(plane, 1);
  Tensor& dx = emit(c, zeros_float(x.shape()));
  const auto* px = x.data<float>();
  const auto* pg = dy.data<float>();
  auto* q = dx.data<float>();
  int64_t at = 0;
  for (int64_t b = 0; b < planes; ++b) {
    for (int64_t p = 0; p < m[0]; ++p) {
      for (int64_t r = 0; r < m[1]; ++r) {
        for (int64_t s = 0; s < m[2]; ++s, ++at) {
          const auto [zs, ze] = window(0, p);
          const auto [hs, he] = window(1, r);
          const auto [ws, we] = window(2, s);
          const float g = pg[at];
          // Max: the gradient to the window's first maximum (the first NaN), as the forward
          // picks it; average: shared by the window's elements.
          float best = -std::numeric_limits<float>::infinity();
          int64_t best_at = (zs * n[1] + hs) * n[2] + ws;
          const float share = g / static_cast<float>((ze - zs) * (he - hs) * (we - ws));
          for (int64_t z = zs; z < ze; ++z) {
            for (int64_t i = hs; i < he; ++i) {
              for (int64_t j = ws; j < we; ++j) {
                const int64_t k = (z * n[1] + i) * n[2] + j;
                if (!is_max) {
                  q[b * plane + k] += share;
                  continue;
                }
                const float v = px[b * plane + k];
                if (!std::isnan(best) && (v > best || std::isnan(v))) {
                  best = v;
                  best_at = k;
                }
              }
            }
          }
          if (is_max) q[b * plane + best_at] += g;
        }
      }
    }
  }
}

namespace {

struct BnParams {
  const Tensor *gamma, *beta, *mean, *var;
  double eps;
};

BnParams bn_params(const KernelCall& c, int64_t ch) {
  BnParams p{find_param(c, "gamma"), find_param(c, "beta"), find_param(c, "moving_mean"),
             find_param(c, "moving_variance"),
             attr_float(c.node, "eps").value_or(attr_float(c.node, "epsilon").value_or(1e-5))};
  if (!p.gamma || !p.beta || !p.mean || !p.var)
    fail("BatchNorm gradient: gamma/beta/moving statistics missing");
  for (const Tensor* t : {p.gamma, p.beta, p.mean, p.var})
    if (t->numel() != ch) fail("BatchNorm parameter " + t->type_str() + " does not match");
  return p;
}

}  // namespace

// BatchNorm's gradient: with batch statistics (training) the full one through the mean and
// variance; with moving statistics (inference) a per-channel affine map.
void k_batchnorm_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor dy = as_float(in(c, 1));
  if (x.rank() < 2 || dy.numel() != x.numel()) fail("BatchNorm gradient: bad shapes");
  const int64_t ch = x.shape()[1];
  const BnParams p = bn_params(c, ch);
  int64_t inner = 1;
  for (size_t i = 2; i < x.rank(); ++i) inner *= x.shape()[i];
  const int64_t outer = x.shape()[0];
  const auto count = static_cast<double>(outer * inner);
  std::vector<double> mean(ch), var(ch);
  const bool batch = batchnorm_uses_batch_stats(c);
  if (batch) {
    batch_moments(x, &mean, &var);
  } else {
    for (int64_t i = 0; i < ch; ++i) {
      mean[i] = p.mean->at(i);
      var[i] = p.var->at(i);
    }
  }
  const auto* px = x.data<float>();
  const auto* pg = dy.data<float>();
  std::vector<double> dgamma(ch, 0.0), dbeta(ch, 0.0), rstd(ch);
  for (int64_t i = 0; i < ch; ++i) rstd[i] = 1.0 / std::sqrt(var[i] + p.eps);
  for (int64_t b = 0; b < outer; ++b) {
    for (int64_t i = 0; i < ch; ++i) {
      for (int64_t k = 0; k < inner; ++k) {
        const int64_t e = (b * ch + i) * inner + k;
        dbeta[i] += pg[e];
        dgamma[i] += pg[e] * (px[e] - mean[i]) * rstd[i];
      }
    }
  }
  Tensor& dx = emit(c, zeros_float(x.shape()));
  auto* q = dx.data<float>();
  for (int64_t b = 0; b < outer; ++b) {
    for (int64_t i = 0; i < ch; ++i) {
      const double g = p.gamma->at(i) * rstd[i];
      for (int64_t k = 0; k < inner; ++k) {
        const int64_t e = (b * ch + i) * inner + k;
        if (batch) {
          const double xhat = (px[e] - mean[i]) * rstd[i];
          q[e] = static_cast<float>(g * (pg[e] - dbeta[i] / count - xhat * dgamma[i] / count));
        } else {
          q[e] = static_cast<float>(g * pg[e]);
        }
      }
    }
  }
  Tensor tg = zeros_float(p.gamma->shape());
  Tensor tb = zeros_float(p.beta->shape());
  for (int64_t i = 0; i < ch; ++i) {
    tg.data<float>()[i] = static_cast<float>(dgamma[i]);
    tb.data<float>()[i] = static_cast<float>(dbeta[i]);
  }
  emit(c, tg);
  emit(c, tb);
}

// The moving statistics after a training step, MindSpore's convention (checked with
// nn.BatchNorm2d(momentum=0.9) in MindSpore 2.10): moving = momentum * moving + (1 - momentum) *
// batch, with the batch's unbiased variance (the biased one normalises). Unchanged when the
// application uses the moving statistics.
void k_batchnorm_update(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  if (x.rank() < 2) fail("BatchNorm expects (N, C, ...), got " + x.type_str());
  const int64_t ch = x.shape()[1];
  const BnParams p = bn_params(c, ch);
  if (!batchnorm_uses_batch_stats(c)) {
    emit(c, p.mean->clone());
    emit(c, p.var->clone());
    return;
  }
  const double momentum = attr_float(c.node, "momentum").value_or(0.9);
  std::vector<double> mean, var;
  batch_moments(x, &mean, &var);
  const double count = static_cast<double>(x.numel()) / static_cast<double>(ch);
  const double unbias = count > 1 ? count / (count - 1) : 1.0;
  Tensor m = zeros_float(p.mean->shape());
  Tensor v = zeros_float(p.var->shape());
  for (int64_t i = 0; i < ch; ++i) {
    m.data<float>()[i] = static_cast<float>(momentum * p.mean->at(i) + (1 - momentum) * mean[i]);
    v.data<float>()[i] =
        static_cast<float>(momentum * p.var->at(i) + (1 - momentum) * var[i] * unbias);
  }
  emit(c, m);
  emit(c, v);
}

// LayerNorm over the dims from begin_norm_axis: per row, dx = rstd (g - mean(g) - xhat
// mean(g xhat)) with g = dy * gamma; dgamma = sum dy xhat, dbeta = sum dy over the rows.
void k_layernorm_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor dy = as_float(in(c, 1));
  const Tensor *gamma = find_param(c, "gamma"), *beta = find_param(c, "beta");
  Tensor gin, bin;
  if (!gamma && c.inputs.size() >= 4) {
    gin = as_float(c.inputs[2]);
    bin = as_float(c.inputs[3]);
    gamma = &gin;
    beta = &bin;
  }
  if (!gamma || !beta) fail("LayerNorm gradient: gamma/beta missing");
  const int64_t begin = norm_axis(attr_int(c.node, "begin_norm_axis").value_or(-1), x.rank());
  const double eps =
      attr_float(c.node, "epsilon").value_or(attr_float(c.node, "eps").value_or(1e-7));
  int64_t inner = 1;
  for (auto i = static_cast<size_t>(begin); i < x.rank(); ++i) inner *= x.shape()[i];
  const int64_t outer = inner ? x.numel() / inner : 0;
  if (gamma->numel() != inner || beta->numel() != inner || dy.numel() != x.numel())
    fail("LayerNorm gradient: gamma " + gamma->type_str() + " does not match");
  Tensor& dx = emit(c, Tensor::uninitialized(x.shape(), DType::Float32));
  std::vector<double> dg(static_cast<size_t>(inner), 0.0), dbv(static_cast<size_t>(inner), 0.0);
  const auto* pgam = gamma->data<float>();
  // Two passes on the runtime's threads, each result summed in the serial order: rows (dx and
  // each row's mean and rstd), then columns (dgamma, dbeta summed over the rows in row order).
  std::vector<double> row_mu(static_cast<size_t>(outer)), row_rs(static_cast<size_t>(outer));
  const int64_t row_grain = std::max<int64_t>(1, kGrainCheap / std::max<int64_t>(1, inner));
  parallel_for(outer, row_grain, [&](int64_t o0, int64_t o1) {
    std::vector<double> xhat(static_cast<size_t>(inner)), g(static_cast<size_t>(inner));
    for (int64_t o = o0; o < o1; ++o) {
      const auto* xr = x.data<float>() + o * inner;
      const auto* gr = dy.data<float>() + o * inner;
      double mu = 0, var = 0;
      for (int64_t i = 0; i < inner; ++i) mu += xr[i];
      mu /= static_cast<double>(inner);
      for (int64_t i = 0; i < inner; ++i) var += (xr[i] - mu) * (xr[i] - mu);
      var /= static_cast<double>(inner);
      const double rs = 1.0 / std::sqrt(var + eps);
      row_mu[static_cast<size_t>(o)] = mu;
      row_rs[static_cast<size_t>(o)] = rs;
      double mg = 0, mgx = 0;
      for (int64_t i = 0; i < inner; ++i) {
        xhat[i] = (xr[i] - mu) * rs;
        g[i] = gr[i] * pgam[i];
        mg += g[i];
        mgx += g[i] * xhat[i];
      }
      mg /= static_cast<double>(inner);
      mgx /= static_cast<double>(inner);
      auto* q = dx.data<float>() + o * inner;
      for (int64_t i = 0; i < inner; ++i)
        q[i] = static_cast<float>(rs * (g[i] - mg - xhat[i] * mgx));
    }
  });
  const int64_t col_grain = std::max<int64_t>(1, kGrainCheap / std::max<int64_t>(1, outer));
  parallel_for(inner, col_grain, [&](int64_t i0, int64_t i1) {
    for (int64_t o = 0; o < outer; ++o) {
      const auto* xr = x.data<float>() + o * inner;
      const auto* gr = dy.data<float>() + o * inner;
      const double mu = row_mu[static_cast<size_t>(o)], rs = row_rs[static_cast<size_t>(o)];
      for (int64_t i = i0; i < i1; ++i) {
        dg[i] += gr[i] * ((xr[i] - mu) * rs);
        dbv[i] += gr[i];
      }
    }
  });
  Tensor tg = zeros_float(gamma->shape());
  Tensor tb = zeros_float(beta->shape());
  for (int64_t i = 0; i < inner; ++i) {
    tg.data<float>()[i] = static_cast<float>(dg[i]);
    tb.data<float>()[i] = static_cast<float>(dbv[i]);
  }
  emit(c, tg);
  emit(c, tb);
}

// Softmax: dx = y (dy - sum(dy y)); LogSoftmax: dx = dy - exp(y) sum(dy), over the axis.
void k_softmax_grad(KernelCall& c) {
  const Tensor y = as_float(in(c, 0));
  const Tensor dy = as_float(in(c, 1));
  if (dy.numel() != y.numel()) fail("softmax gradient: bad shapes");
  const bool log = forward_op(c) == "LogSoftmax";
  auto axes = attr_ints(c.node, "axis").value_or(std::vector<int64_t>{-1});
  if (axes.size() != 1) fail("Softmax over several axes is not supported");
  const int64_t axis = norm_axis(axes[0], y.rank());
  const int64_t len = y.shape()[axis];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < y.rank(); ++i) inner *= y.shape()[i];
  const int64_t outer = len * inner != 0 ? y.numel() / (len * inner) : 0;
  Tensor& dx = emit(c, Tensor::uninitialized(y.shape(), DType::Float32));
  const auto* py = y.data<float>();
  const auto* pg = dy.data<float>();
  auto* q = dx.data<float>();
  // Lines along the axis on the runtime's threads.
  parallel_for(
      outer * inner, std::max<int64_t>(1, kGrainCheap / std::max<int64_t>(1, len)),
      [&](int64_t l0, int64_t l1) {
        for (int64_t line = l0; line < l1; ++line) {
          const int64_t o = line / inner, i = line % inner;
          const int64_t base = o * len * inner + i;
          double s = 0;
          for (int64_t k = 0; k < len; ++k) {
            const int64_t e = base + k * inner;
            s += log ? pg[e] : pg[e] * py[e];
          }
          for (int64_t k = 0; k < len; ++k) {
            const int64_t e = base + k * inner;
            q[e] = static_cast<float>(log ? pg[e] - std::exp(py[e]) * s : py[e] * (pg[e] - s));
          }
        }
      });
}

// Concat's gradient: dy cut back into the inputs' extents along the axis.
void k_concat_grad(KernelCall& c) {
  const Tensor dy = as_float(in(c, 0));
  const int64_t axis = norm_axis(attr_int(c.node, "axis").value_or(0), dy.rank());
  const int64_t len = dy.shape()[axis];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < dy.rank(); ++i) inner *= dy.shape()[i];
  const int64_t outer = len * inner != 0 ? dy.numel() / (len * inner) : 0;
  int64_t off = 0;
  for (size_t k = 0; k < c.node.outputs.size(); ++k) {
    const std::vector<int64_t> shape = declared(c, k);
    if (shape.size() != dy.rank()) fail("concat gradient: bad ranks");
    const int64_t part = shape[axis];
    if (off + part > len) fail("concat gradient: the parts exceed the output");
    Tensor& t = emit(c, zeros_float(shape));
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(t.data<float>() + o * part * inner, dy.data<float>() + (o * len + off) * inner,
                  static_cast<size_t>(part * inner) * sizeof(float));
    }
    off += part;
  }
}

// StridedSlice's gradient: dy scattered into zeros of the input's shape at the positions the
// slice read (the forward kernel's index arithmetic).
void k_strided_slice_grad(KernelCall& c) {
  const Tensor dy = as_float(in(c, 0));
  const std::vector<int64_t> xs = declared(c, 0);
  const std::vector<IndexItem> items = index_items(c.node);
  size_t consumed = 0;
  for (const IndexItem& it : items)
    if (it.kind == IndexItem::Int || it.kind == IndexItem::Slice) ++consumed;
  std::vector<IndexItem> full;
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::Ellipsis) {
      for (size_t k = consumed; k < xs.size(); ++k) full.push_back(IndexItem::of(IndexItem::Slice));
      consumed = xs.size();
    } else {
      full.push_back(it);
    }
  }
  size_t used = 0;
  for (const IndexItem& it : full)
    if (it.kind != IndexItem::NewAxis) ++used;
  if (used > xs.size()) fail("too many indices for " + shape_str(xs));
  for (size_t k = used; k < xs.size(); ++k) full.push_back(IndexItem::of(IndexItem::Slice));
  const size_t r = xs.size();
  std::vector<int64_t> st(r), step(r), cnt(r);
  size_t axis = 0;
  for (const IndexItem& it : full) {
    if (it.kind == IndexItem::NewAxis) continue;
    const int64_t d = xs[axis];
    if (it.kind == IndexItem::Int) {
      const int64_t i = it.i < 0 ? it.i + d : it.i;
      if (i < 0 || i >= d) fail("index " + std::to_string(it.i) + " is out of bounds");
      st[axis] = i;
      step[axis] = 1;
      cnt[axis] = 1;
    } else {
      const SliceIndices b = slice_indices(it.start, it.stop, it.step, d);
      st[axis] = b.start;
      step[axis] = b.step;
      cnt[axis] = b.length;
    }
    ++axis;
  }
  int64_t total = 1;
  for (int64_t v : cnt) total *= v;
  if (total != dy.numel()) fail("slice gradient " + dy.type_str() + " does not match the slice");
  std::vector<int64_t> in_strides(r, 1);
  for (size_t i = r; i-- > 1;) in_strides[i - 1] = in_strides[i] * xs[i];
  Tensor& dx = emit(c, zeros_float(xs));
  auto* q = dx.data<float>();
  const auto* pg = dy.data<float>();
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t dst = 0;
    for (size_t d = 0; d < r; ++d) dst += (st[d] + idx[d] * step[d]) * in_strides[d];
    q[dst] += pg[o];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < cnt[d]) break;
      idx[d] = 0;
    }
  }
}

// Gather's gradient w.r.t. the table: dy's rows added at their indices (repeated indices sum).
void k_gather_grad(KernelCall& c) {
  const Tensor& ids = in(c, 0);
  const Tensor dy = as_float(in(c, 1));
  if (ids.is_float()) fail("gather indices must be integers, got " + ids.type_str());
  const std::vector<int64_t> ts = declared(c, 0);
  const int64_t axis = norm_axis(attr_int(c.node, "axis").value_or(0), ts.size());
  const int64_t len = ts[axis];
  int64_t inner = 1, outer = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < ts.size(); ++i) inner *= ts[i];
  for (int64_t i = 0; i < axis; ++i) outer *= ts[i];
  const int64_t n = ids.numel();
  if (dy.numel() != outer * n * inner) fail("gather gradient " + dy.type_str() + " does not match");
  Tensor& dt = emit(c, zeros_float(ts));
  auto* q = dt.data<float>();
  const auto* pg = dy.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n; ++k) {
      const auto id = static_cast<int64_t>(ids.at(k));
      if (id < 0 || id >= len) fail("index " + std::to_string(id) + " is out of range");
      float* dst = q + (o * len + id) * inner;
      const float* src = pg + (o * n + k) * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
    }
  }
}

// Dropout's gradient: in training the forward node's mask, regenerated from the run's seed and
// its id (attribute rng_node), times 1 / keep_prob; in inference the identity.
void k_dropout_grad(KernelCall& c) {
  const Tensor dy = as_float(in(c, 0));
  if (!c.training) {
    emit(c, dy);
    return;
  }
  const std::string id = attr_str(c.node, "rng_node").value_or("");
  const bool channels = attr_str(c.node, "forward_op").value_or("") == "Dropout2D";
  Tensor& dx = emit(c, Tensor::uninitialized(dy.shape(), DType::Float32));
  dropout_apply(c.node, channels, id, dy.shape(), c.run_seed, dy.data<float>(), dx.data<float>());
}

// ReduceMax / ReduceMin: the gradient to the elements equal to the extremum, split evenly among
// ties. Inputs: x, the output and its gradient reshaped with keep_dims.
void k_reduce_extremum_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor y = as_float(in(c, 1));
  const Tensor dy = as_float(in(c, 2));
  if (y.rank() != x.rank() || dy.numel() != y.numel()) fail("reduction gradient: bad shapes");
  const std::vector<int64_t> sy = bstrides(y.shape(), x.shape());
  const std::vector<int64_t> zero(x.rank(), 0);
  std::vector<int64_t> count(static_cast<size_t>(y.numel()), 0);
  const auto* px = x.data<float>();
  const auto* py = y.data<float>();
  for_each_index(x.shape(), sy, zero, [&](int64_t o, int64_t j, int64_t) {
    if (px[o] == py[j]) ++count[static_cast<size_t>(j)];
  });
  Tensor& dx = emit(c, zeros_float(x.shape()));
  for_each_index(x.shape(), sy, zero, [&](int64_t o, int64_t j, int64_t) {
    if (px[o] == py[j])
      dx.data<float>()[o] = dy.data<float>()[j] / static_cast<float>(count[static_cast<size_t>(j)]);
  });
}

// CumSum's gradient: the running sum of dy from the end of the axis.
void k_cumsum_grad(KernelCall& c) {
  const Tensor dy = as_float(in(c, 0));
  const auto axis_attr = attr_int(c.node, "axis");
  if (!axis_attr) fail("CumSum needs its axis attribute");
  const int64_t axis = norm_axis(*axis_attr, std::max<size_t>(dy.rank(), 1));
  Tensor& dx = emit(c, zeros_float(dy.shape()));
  const int64_t len = dy.rank() == 0 ? 1 : dy.shape()[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < dy.rank(); ++i) inner *= dy.shape()[i];
  const int64_t outer = len * inner == 0 ? 0 : dy.numel() / (len * inner);
  const auto* pg = dy.data<float>();
  auto* q = dx.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t k = len; k-- > 0;) {
        const int64_t at = (o * len + k) * inner + i;
        sum += pg[at];
        q[at] = static_cast<float>(sum);
      }
    }
  }
}

// Pad's gradient (x, dy): each output element's gradient added to the input element it copies
// (the constant's positions have none), for every mode the forward kernel runs.
void k_pad_grad(KernelCall& c) {
  const Tensor& x = in(c, 0);
  const Tensor dy = as_float(in(c, 1));
  const PadPlan p = pad_plan(c.node, x.shape());
  if (dy.shape() != p.out)
    fail("Pad gradient " + dy.type_str() + " does not match the output " + shape_str(p.out));
  std::vector<double> acc(static_cast<size_t>(x.numel()), 0.0);
  const auto* pg = dy.data<float>();
  for (int64_t o = 0; o < dy.numel(); ++o) {
    const int64_t from = p.source_offset(o);
    if (from >= 0) acc[static_cast<size_t>(from)] += pg[o];
  }
  Tensor& dx = emit(c, zeros_float(x.shape()));
  auto* q = dx.data<float>();
  for (size_t i = 0; i < acc.size(); ++i) q[i] = static_cast<float>(acc[i]);
}

// ops.L2Normalize (x, dy), y = x / n with n = sqrt(max(s, epsilon)), s = sum(x^2) along the
// axis: dx = (dy - y <y, dy>) / max(sqrt(s), epsilon), as MindSpore 2.10's L2NormalizeGrad
// computes it (measured against mindspore.grad on clamped and unclamped rows, axes 0, 1 and -1:
// within 1e-7; where s > epsilon and sqrt(s) > epsilon this is the derivative, elsewhere
// MindSpore's formula is not, and this follows MindSpore). In double per line, as the forward.
void k_l2_normalize_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor dy = as_float(in(c, 1));
  if (dy.shape() != x.shape())
    fail("L2Normalize gradient " + dy.type_str() + " does not match the input " + x.type_str());
  const AxisLines lines = l2_normalize_lines(c.node, x);
  Tensor& dx = emit(c, Tensor::uninitialized(x.shape(), DType::Float32));
  const auto* px = x.data<float>();
  const auto* pg = dy.data<float>();
  auto* pd = dx.data<float>();
  parallel_for(lines.outer * lines.inner,
               std::max<int64_t>(1, kGrainMath / std::max<int64_t>(1, lines.len)),
               [&](int64_t l0, int64_t l1) {
                 for (int64_t line = l0; line < l1; ++line) {
                   const int64_t o = line / lines.inner;
                   const int64_t i = line % lines.inner;
                   const int64_t base = (o * lines.len * lines.inner) + i;
                   double s = 0;
                   double xg = 0;
                   for (int64_t k = 0; k < lines.len; ++k) {
                     const auto v = static_cast<double>(px[base + (k * lines.inner)]);
                     s += v * v;
                     xg += v * static_cast<double>(pg[base + (k * lines.inner)]);
                   }
                   const double n = std::sqrt(std::max(s, lines.epsilon));
                   const double norm = std::max(std::sqrt(s), lines.epsilon);
                   // y <y, dy> = x <x, dy> / n^2
                   const double proj = xg / (n * n);
                   for (int64_t k = 0; k < lines.len; ++k) {
                     const int64_t at = base + (k * lines.inner);
                     pd[at] = static_cast<float>(
                         (static_cast<double>(pg[at]) - static_cast<double>(px[at]) * proj) / norm);
                   }
                 }
               });
}

// nn.GroupNorm (x, dy; gamma, beta): with x^ = (x - mean) / sqrt(var + eps) over each (sample,
// group), dx = rstd (g - mean(g) - x^ mean(g x^)) where g = dy gamma; dgamma = sum dy x^, dbeta =
// sum dy per channel.
void k_group_norm_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor dy = as_float(in(c, 1));
  if (x.rank() < 2 || dy.shape() != x.shape())
    fail("GroupNorm gradient " + dy.type_str() + " for the input " + x.type_str());
  const int64_t n = x.shape()[0], ch = x.shape()[1];
  const int64_t groups = attr_int(c.node, "num_groups").value_or(1);
  if (groups <= 0 || ch % groups != 0) fail("GroupNorm: bad num_groups");
  const double eps = attr_float(c.node, "eps").value_or(1e-5);
  const Tensor* gamma = find_param(c, "gamma");
  if (gamma != nullptr && gamma->numel() != ch) fail("GroupNorm: gamma does not match");
  const int64_t spatial = n * ch == 0 ? 0 : x.numel() / (n * ch);
  const int64_t cg = ch / groups, m = cg * spatial;
  const auto* px = x.data<float>();
  const auto* pg = dy.data<float>();
  Tensor& dx = emit(c, zeros_float(x.shape()));
  auto* q = dx.data<float>();
  std::vector<double> dgamma(static_cast<size_t>(ch), 0.0), dbeta(static_cast<size_t>(ch), 0.0);
  std::vector<double> xhat(static_cast<size_t>(m)), g(static_cast<size_t>(m));
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t gr = 0; gr < groups; ++gr) {
      const int64_t off = (s * ch + gr * cg) * spatial;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < m; ++k) mean += px[off + k];
      mean /= static_cast<double>(std::max<int64_t>(m, 1));
      for (int64_t k = 0; k < m; ++k) var += (px[off + k] - mean) * (px[off + k] - mean);
      var /= static_cast<double>(std::max<int64_t>(m, 1));
      const double rstd = 1.0 / std::sqrt(var + eps);
      double mg = 0, mgx = 0;
      for (int64_t k = 0; k < m; ++k) {
        const int64_t channel = gr * cg + k / std::max<int64_t>(spatial, 1);
        const double gm = gamma != nullptr ? gamma->data<float>()[channel] : 1.0;
        xhat[k] = (px[off + k] - mean) * rstd;
        g[k] = pg[off + k] * gm;
        dgamma[channel] += pg[off + k] * xhat[k];
        dbeta[channel] += pg[off + k];
        mg += g[k];
        mgx += g[k] * xhat[k];
      }
      mg /= static_cast<double>(std::max<int64_t>(m, 1));
      mgx /= static_cast<double>(std::max<int64_t>(m, 1));
      for (int64_t k = 0; k < m; ++k)
        q[off + k] = static_cast<float>(rstd * (g[k] - mg - xhat[k] * mgx));
    }
  }
  for (size_t k = 1; k < 3 && k < c.node.outputs.size(); ++k) {
    Tensor& t = emit(c, zeros_float(declared(c, k)));
    const std::vector<double>& v = k == 1 ? dgamma : dbeta;
    if (t.numel() != ch) fail("GroupNorm: gamma/beta gradient " + t.type_str());
    for (int64_t i = 0; i < ch; ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  }
}

// nn.Conv2dTranspose: the forward sum y[yi] += x[xi] w[wi] over ConvTransposeGeometry's taps,
// differentiated term by term: dx[xi] += dy[yi] w[wi], dw[wi] += dy[yi] x[xi]; db = sum of dy per
// channel. Layer mode (x, dy; weight, bias) or functional (x, w, [b], dy).
void k_conv2d_transpose_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor* wp = find_param(c, "weight");
  const Tensor w = as_float(wp != nullptr ? *wp : in(c, 1));
  const Tensor dy = as_float(c.inputs.back());
  const ConvTransposeGeometry g = conv_transpose_geometry(c.node, x.shape(), w.shape(), dy.shape());
  std::vector<double> dx(static_cast<size_t>(x.numel()), 0.0),
      dw(static_cast<size_t>(w.numel()), 0.0);
  const auto* px = x.data<float>();
  const auto* pw = w.data<float>();
  const auto* pg = dy.data<float>();
  g.for_each_tap([&](int64_t xi, int64_t wi, int64_t yi) {
    dx[static_cast<size_t>(xi)] += static_cast<double>(pg[yi]) * pw[wi];
    dw[static_cast<size_t>(wi)] += static_cast<double>(pg[yi]) * px[xi];
  });
  const auto put = [&](const std::vector<double>& v, const std::vector<int64_t>& shape) {
    Tensor& t = emit(c, zeros_float(shape));
    if (static_cast<size_t>(t.numel()) != v.size()) fail("Conv2DTranspose gradient: bad shapes");
    for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  };
  put(dx, x.shape());
  put(dw, w.shape());
  if (c.node.outputs.size() >= 3) {
    std::vector<double> db(static_cast<size_t>(g.oc), 0.0);
    const int64_t plane = g.oh * g.ow;
    for (int64_t b = 0; b < g.n; ++b) {
      for (int64_t o = 0; o < g.oc; ++o)
        for (int64_t k = 0; k < plane; ++k) db[o] += pg[(b * g.oc + o) * plane + k];
    }
    put(db, declared(c, 2));
  }
}

// A resize's gradient (dy; the forward operator in `forward_op`): each output element's
// gradient scattered back to the input elements it read, with the same weights.
void k_resize_grad(KernelCall& c) {
  const Tensor dy = as_float(in(c, 0));
  const auto op = attr_str(c.node, "forward_op");
  if (!op) fail("ResizeGrad needs the forward operator (forward_op)");
  const std::vector<int64_t> x = declared(c, 0);
  const ResizeTaps t = resize_taps(c.node, *op, x, dy.shape());
  const auto numel = checked_numel(x);
  if (!numel) fail("the input of the resize is too large");
  std::vector<double> acc(static_cast<size_t>(*numel), 0.0);
  const auto* pg = dy.data<float>();
  t.for_each_tap([&](int64_t o, int64_t from, double w) { acc[from] += w * pg[o]; });
  Tensor& dx = emit(c, zeros_float(x));
  auto* q = dx.data<float>();
  for (size_t i = 0; i < acc.size(); ++i) q[i] = static_cast<float>(acc[i]);
}

// The gradient of values picked by index along `axis` (max/min with indices, TopK): (indices,
// dy) of one shape, dy added at the index each names; the input's shape is the declared output.
void k_index_scatter_grad(KernelCall& c) {
  const Tensor& idx = in(c, 0);
  const Tensor dy = as_float(in(c, 1));
  const std::vector<int64_t> x = declared(c, 0);
  if (idx.shape() != dy.shape() || dy.rank() != x.size()) {
    fail("index gradient: indices " + idx.type_str() + " and gradient " + dy.type_str() +
         " for an input " + shape_str(x));
  }
  const size_t rank = std::max<size_t>(x.size(), 1);
  const int64_t axis = norm_axis(attr_int(c.node, "axis").value_or(0), rank);
  const int64_t len_x = x.empty() ? 1 : x[static_cast<size_t>(axis)];
  const int64_t len_g = dy.rank() == 0 ? 1 : dy.shape()[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.size(); ++i) inner *= x[i];
  const int64_t outer = len_g * inner == 0 ? 0 : dy.numel() / (len_g * inner);
  Tensor& dx = emit(c, zeros_float(x));
  auto* q = dx.data<float>();
  const auto* pg = dy.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < len_g; ++j) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * len_g + j) * inner + i;
        const auto k = static_cast<int64_t>(idx.at(at));
        if (k < 0 || k >= len_x) fail("index " + std::to_string(k) + " is out of range");
        q[(o * len_x + k) * inner + i] += pg[at];
      }
    }
  }
}

// ClipByValue (x, the bounds not recorded as attributes, dy): dy where min <= x <= max (both
// bounds inclusive, as MindSpore 2.10's clamp gradient).
void k_clip_by_value_grad(KernelCall& c) {
  if (c.inputs.size() < 2) fail("expects the forward input(s) and the output gradient");
  const Tensor x = as_float(in(c, 0));
  const Tensor dy = as_float(c.inputs.back());
  if (dy.shape() != x.shape()) fail("clamp gradient " + dy.type_str() + " for " + x.type_str());
  size_t next = 1;
  auto bound = [&](const char* name) -> std::optional<Tensor> {
    // The bound inputs stand between x and dy (the last input).
    const ClipBound b = clip_bound(c.node, name, &next, c.inputs.size() - 1);
    switch (b.kind) {
      case ClipBound::Kind::Number: {
        Tensor t(std::vector<int64_t>{}, DType::Float32);
        t.set(0, b.number);
        return t;
      }
      case ClipBound::Kind::NotNumber:
        fail(std::string("the clamp bound ") + name + " is not a number");
      case ClipBound::Kind::Input:
        return as_float(c.inputs[b.input]);
      case ClipBound::Kind::None:
      case ClipBound::Kind::Missing:
        break;
    }
    return std::nullopt;
  };
  const std::optional<Tensor> lo = bound("min"), hi = bound("max");
  std::vector<uint8_t> keep(static_cast<size_t>(x.numel()), 1);
  for (const auto* b : {&lo, &hi}) {
    if (!*b) continue;
    const Tensor& t = **b;
    if (broadcast(x.shape(), t.shape()) != x.shape())
      fail("clamp bound " + t.type_str() + " does not broadcast to the input");
    const bool is_lo = b == &lo;
    for_each_index(x.shape(), bstrides(x.shape(), x.shape()), bstrides(t.shape(), x.shape()),
                   [&](int64_t o, int64_t, int64_t j) {
                     const double v = x.data<float>()[o], e = t.data<float>()[j];
                     if (is_lo ? v < e : v > e) keep[static_cast<size_t>(o)] = 0;
                   });
  }
  Tensor& dx = emit(c, zeros_float(x.shape()));
  for (int64_t i = 0; i < x.numel(); ++i)
    dx.data<float>()[i] = keep[static_cast<size_t>(i)] != 0 ? dy.data<float>()[i] : 0.0f;
}

// nn.PReLU (x, dy; w): dx = dy where x > 0, else w dy; dw = sum of dy x where x <= 0, per channel
// (dim 1) or for the one shared slope.
void k_prelu_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor dy = as_float(in(c, 1));
  const Tensor* wp = find_param(c, "w");
  if (wp == nullptr) fail("PReLU's slope parameter w is missing");
  const Tensor w = as_float(*wp);
  if (dy.shape() != x.shape()) fail("PReLU gradient " + dy.type_str() + " for " + x.type_str());
  const int64_t channels = w.numel();
  const int64_t cdim = x.rank() >= 2 ? x.shape()[1] : 1;
  if (channels != 1 && channels != cdim) fail("PReLU: the slopes do not match the channels");
  int64_t inner = 1;
  for (size_t i = 2; i < x.rank(); ++i) inner *= x.shape()[i];
  std::vector<double> dw(static_cast<size_t>(channels), 0.0);
  Tensor& dx = emit(c, zeros_float(x.shape()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data<float>()[i], g = dy.data<float>()[i];
    const int64_t ch = channels == 1 ? 0 : (i / std::max<int64_t>(inner, 1)) % cdim;
    if (v > 0) {
      dx.data<float>()[i] = static_cast<float>(g);
    } else {
      dx.data<float>()[i] = static_cast<float>(g * w.data<float>()[ch]);
      dw[static_cast<size_t>(ch)] += g * v;
    }
  }
  Tensor& tw = emit(c, zeros_float(declared(c, 1)));
  if (tw.numel() != channels) fail("PReLU: slope gradient " + tw.type_str());
  for (int64_t k = 0; k < channels; ++k) tw.data<float>()[k] = static_cast<float>(dw[k]);
}

// ReduceProd (x, dy with the reduced dims kept as 1): each element's gradient is dy times the
// product of the other elements of its group, from prefix and suffix products (exact with zeros,
// where dividing the product by the element is not).
void k_reduce_prod_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor g = as_float(in(c, 1));
  const std::vector<int64_t>& xs = x.shape();
  const std::vector<int64_t>& gs = g.shape();
  if (gs.size() != xs.size()) fail("ReduceProd gradient " + g.type_str() + " for " + x.type_str());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (gs[i] != xs[i] && gs[i] != 1)
      fail("ReduceProd gradient " + g.type_str() + " for " + x.type_str());
  }
  // The members of each group (flat offsets of x, in order), a group being an element of g.
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(g.numel()));
  const std::vector<int64_t> gstride = bstrides(gs, xs);
  for_each_index(xs, gstride, gstride, [&](int64_t o, int64_t gi, int64_t) {
    members[static_cast<size_t>(gi)].push_back(o);
  });
  Tensor& dx = emit(c, zeros_float(xs));
  const auto* px = x.data<float>();
  auto* q = dx.data<float>();
  std::vector<double> suffix;
  for (size_t k = 0; k < members.size(); ++k) {
    const std::vector<int64_t>& m = members[k];
    suffix.assign(m.size() + 1, 1.0);
    for (size_t i = m.size(); i-- > 0;) suffix[i] = suffix[i + 1] * px[m[i]];
    double prefix = 1;
    const double gk = g.data<float>()[k];
    for (size_t i = 0; i < m.size(); ++i) {
      q[m[i]] = static_cast<float>(gk * prefix * suffix[i + 1]);
      prefix *= px[m[i]];
    }
  }
}

}  // namespace graphcore::runtime::kernels
