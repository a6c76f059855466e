// CPU kernels of the loss operators (graphcore/src/ops/loss.cpp) and of their backward operators,
// with MindSpore 2.10's semantics (mindspore/ops/function/nn_func.py and nn/loss/loss.py):
// reductions 'none' / 'sum' / 'mean', class weights, ignore_index, label smoothing. Element
// arithmetic is float32 as MindSpore's CPU kernels do it; the sums over a batch are accumulated
// in double (the result is rounded to float32 once). A label outside [0, classes) is a
// RuntimeError naming where it is, whatever MindSpore does with it (GatherD wraps negative ones,
// OneHot zeroes them): a silently wrong loss is worse than a refusal.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "graphcore/checked.h"
#include "runtime/kernels.h"

namespace graphcore::runtime::kernels {

namespace {

[[noreturn]] void fail(const std::string& op, const std::string& msg) {
  throw RuntimeError(op + ": " + msg);
}

const Tensor& input(const KernelCall& c, size_t i, const char* what) {
  if (i >= c.inputs.size()) {
    fail(std::string(c.node.op), std::string("the graph gives no tensor for ") + what + " (input " +
                                     std::to_string(i) + ")");
  }
  return c.inputs[i];
}

Tensor as_float(const Tensor& t) { return t.is_float() ? t : t.cast(DType::Float32); }

// The dtype of output `i` as the graph declares it (float), Float32 when not a float type.
DType float_out(const KernelCall& c, size_t i) {
  if (i < c.node.outputs.size()) {
    DType d = c.node.outputs[i].dtype;
    if (d == DType::Float16 || d == DType::Float32) return d;
  }
  return DType::Float32;
}

enum class Reduction { None, Sum, Mean };

Reduction reduction_of(const KernelCall& c, Reduction fallback) {
  auto r = attr_str(c.node, "reduction");
  if (!r) return fallback;
  if (*r == "none") return Reduction::None;
  if (*r == "sum") return Reduction::Sum;
  if (*r == "mean") return Reduction::Mean;
  fail(std::string(c.node.op), "reduction must be 'none', 'mean' or 'sum', got '" + *r + "'");
}

// The default reduction of each operator's APIs when the node does not record one.
Reduction default_reduction(std::string_view op) {
  // nn.SoftmaxCrossEntropyWithLogits and ops.smooth_l1_loss default to 'none', the others to
  // 'mean'.
  if (op.starts_with("SoftmaxCrossEntropyWithLogits") || op.starts_with("SmoothL1Loss"))
    return Reduction::None;
  return Reduction::Mean;
}

// The element count of `shape` as a buffer of int64 indices would hold it (checked).
int64_t numel_of(const std::vector<int64_t>& shape, const std::string& what) {
  return static_cast<int64_t>(checked_buffer_elements(shape, sizeof(int64_t), what));
}

// ---- class-indexed losses ------------------------------------------------------------------
// CrossEntropyLoss (logits, log-softmax over the class axis), NLLLoss (log-probabilities given),
// SoftmaxCrossEntropyWithLogits (logits, class axis last, no weight / ignore_index / smoothing).
struct ClassLoss {
  std::string op;
  bool log_softmax = true;  // the input is logits (else log-probabilities)
  size_t class_axis = 1;
  std::optional<int64_t> ignore_index;
  double smoothing = 0;
  Reduction reduction = Reduction::Mean;
  const Tensor* weight = nullptr;  // (C,)

  // Layout of the input: outer x classes x inner.
  std::vector<int64_t> shape;
  int64_t outer = 1, classes = 1, inner = 1;
  bool int_target = true;
};

ClassLoss class_loss(const KernelCall& c, const Tensor& x, const Tensor& target, bool forward) {
  ClassLoss s;
  s.op = std::string(c.node.op);
  if (!forward && s.op.ends_with("Grad")) s.op.resize(s.op.size() - 4);
  s.shape = x.shape();
  if (x.rank() == 0) fail(s.op, "the input must have a class axis, got a scalar");
  const bool sce = s.op == "SoftmaxCrossEntropyWithLogits";
  s.log_softmax = s.op != "NLLLoss";
  s.reduction = reduction_of(c, default_reduction(s.op));
  if (sce) {
    s.class_axis = x.rank() - 1;
    s.int_target = attr_bool(c.node, "sparse").value_or(false);
    if (s.int_target && target.is_float())
      fail(s.op, "sparse labels must be int32 or int64, got " + target.type_str());
    if (!s.int_target && !target.is_float())
      fail(s.op, "dense labels must be float like the logits, got " + target.type_str());
  } else {
    s.class_axis = x.rank() == 1 ? 0 : 1;
    s.int_target = !target.is_float();
    if (s.op == "NLLLoss" && !s.int_target)
      fail(s.op, "labels must be int32 or int64 class indices, got " + target.type_str());
    s.ignore_index = attr_int(c.node, "ignore_index").value_or(-100);
    s.smoothing = attr_float(c.node, "label_smoothing").value_or(0.0);
    if (attr_bool(c.node, "has_weight").value_or(false)) s.weight = &input(c, 2, "weight");
  }
  s.classes = s.shape[s.class_axis];
  for (size_t k = 0; k < s.class_axis; ++k) s.outer *= s.shape[k];
  for (size_t k = s.class_axis + 1; k < s.shape.size(); ++k) s.inner *= s.shape[k];
  if (s.classes <= 0) fail(s.op, "the class axis is empty: input " + x.type_str());
  if (s.weight) {
    if (s.weight->numel() != s.classes) {
      fail(s.op, "weight " + s.weight->type_str() + " must have one value per class (" +
                     std::to_string(s.classes) + ")");
    }
  }
  const int64_t positions = s.outer * s.inner;
  if (s.int_target) {
    if (target.numel() != positions) {
      fail(s.op, "labels " + target.type_str() + " do not match the input " + x.type_str() +
                     " (one class index per position of the input without its class axis)");
    }
  } else if (target.shape() != s.shape) {
    fail(s.op, "probability labels " + target.type_str() + " must have the input's shape " +
                   x.type_str());
  }
  return s;
}

// The shape of an unreduced result: the input's without the class axis.
std::vector<int64_t> position_shape(const ClassLoss& s) {
  std::vector<int64_t> r = s.shape;
  r.erase(r.begin() + static_cast<std::ptrdiff_t>(s.class_axis));
  return r;
}

// Where position `p` (outer * inner + inner index) is, for messages: "batch index 2" or
// "batch index 2, position [2, 0, 1]".
std::string where(const ClassLoss& s, int64_t p) {
  std::vector<int64_t> pos = position_shape(s);
  std::string idx = index_str(pos, p);
  int64_t batch = pos.empty() ? 0 : p / std::max<int64_t>(1, numel_of(pos, s.op) / pos[0]);
  if (pos.size() <= 1) return "batch index " + std::to_string(batch);
  return "batch index " + std::to_string(batch) + ", position " + idx;
}

// The class of position `p`, or -1 when it is ignored; throws for one out of range.
int64_t label_at(const ClassLoss& s, const Tensor& target, int64_t p) {
  const double v = target.at(p);
  const auto t = static_cast<int64_t>(v);
  if (s.ignore_index && t == *s.ignore_index) return -1;
  if (t < 0 || t >= s.classes) {
    std::string msg = "label " + std::to_string(t) + " at " + where(s, p) +
                      " is out of range for " + std::to_string(s.classes) +
                      " classes (valid: 0 to " + std::to_string(s.classes - 1);
    if (s.ignore_index) msg += ", or ignore_index=" + std::to_string(*s.ignore_index);
    fail(s.op, msg + ")");
  }
  return t;
}

// Per position: the log-probabilities of its classes (log-softmax of the logits, stably: the
// maximum is subtracted before exp, as MindSpore's LogSoftmax kernel does) and, for logits, the
// softmax.
struct Row {
  std::vector<float> logp, prob;
};

void load_row(const ClassLoss& s, const float* x, int64_t o, int64_t i, Row& r) {
  const auto n = static_cast<size_t>(s.classes);
  r.logp.resize(n);
  r.prob.resize(n);
  const float* base = x + o * s.classes * s.inner + i;
  if (!s.log_softmax) {
    for (size_t k = 0; k < n; ++k) r.logp[k] = base[static_cast<int64_t>(k) * s.inner];
    return;
  }
  float m = -std::numeric_limits<float>::infinity();
  for (size_t k = 0; k < n; ++k) m = std::max(m, base[static_cast<int64_t>(k) * s.inner]);
  float sum = 0;
  for (size_t k = 0; k < n; ++k) {
    r.prob[k] = std::exp(base[static_cast<int64_t>(k) * s.inner] - m);
    sum += r.prob[k];
  }
  const float lse = std::log(sum);
  for (size_t k = 0; k < n; ++k) {
    r.logp[k] = base[static_cast<int64_t>(k) * s.inner] - m - lse;
    r.prob[k] /= sum;
  }
}

float weight_of(const ClassLoss& s, int64_t k) {
  return s.weight ? static_cast<float>(s.weight->at(k)) : 1.0f;
}

// Per-position loss and the mean's divisor. Index targets: (1 - ls) * -w[t] * logp[t] +
// ls / C * -sum_k w[k] * logp[k], the mean dividing by the summed weights of the positions not
// ignored (nll_loss). Probability targets (cross_entropy's _cross_entropy): the target smoothed
// to t * (1 - ls) + ls / C, -sum_k w[k] * t[k] * logp[k], the mean dividing by the positions.
struct ClassForward {
  std::vector<double> loss;  // per position
  double divisor = 0;
};

ClassForward class_forward(const ClassLoss& s, const Tensor& x, const Tensor& target) {
  ClassForward f;
  const int64_t positions = s.outer * s.inner;
  f.loss.assign(static_cast<size_t>(positions), 0.0);
  Tensor xf = as_float(x);
  Tensor tf = s.int_target ? Tensor() : as_float(target);
  const auto ls = static_cast<float>(s.smoothing);
  const float eps = ls / static_cast<float>(s.classes);
  Row r;
  double weights = 0;
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t p = o * s.inner + i;
      if (s.int_target) {
        const int64_t t = label_at(s, target, p);
        if (t < 0) continue;
        load_row(s, xf.data<float>(), o, i, r);
        const float w = weight_of(s, t);
        float smooth = 0;
        if (ls != 0) {
          for (int64_t k = 0; k < s.classes; ++k)
            smooth -= weight_of(s, k) * r.logp[static_cast<size_t>(k)];
        }
        const float nll = -w * r.logp[static_cast<size_t>(t)];
        f.loss[static_cast<size_t>(p)] = ls != 0 ? (1 - ls) * nll + eps * smooth : nll;
        weights += w;
      } else {
        load_row(s, xf.data<float>(), o, i, r);
        const float* tp = tf.data<float>() + o * s.classes * s.inner + i;
        float acc = 0;
        for (int64_t k = 0; k < s.classes; ++k) {
          float t = tp[k * s.inner];
          if (ls != 0) t = t * (1 - ls) + eps;
          acc -= weight_of(s, k) * t * r.logp[static_cast<size_t>(k)];
        }
        f.loss[static_cast<size_t>(p)] = acc;
      }
    }
  }
  f.divisor = s.int_target ? weights : static_cast<double>(positions);
  return f;
}

void class_loss_kernel(KernelCall& c) {
  const Tensor& x = input(c, 0, "the input");
  const Tensor& target = input(c, 1, "the labels");
  if (!x.is_float()) fail(std::string(c.node.op), "the input must be float, got " + x.type_str());
  ClassLoss s = class_loss(c, x, target, true);
  ClassForward f = class_forward(s, x, target);
  const DType dt = float_out(c, 0);
  if (s.reduction == Reduction::None) {
    Tensor out(position_shape(s), dt);
    for (size_t p = 0; p < f.loss.size(); ++p)
      out.set(static_cast<int64_t>(p), static_cast<float>(f.loss[p]));
    c.outputs.push_back(std::move(out));
    return;
  }
  double sum = 0;
  for (double v : f.loss) sum += v;
  // An all-ignored batch divides 0 by 0: NaN, as in MindSpore.
  const double v = s.reduction == Reduction::Mean ? sum / f.divisor : sum;
  c.outputs.push_back(Tensor::full({}, static_cast<float>(v), dt));
}

// d loss / d input. dout is the gradient of the forward output (a scalar, or per position).
void class_loss_grad_kernel(KernelCall& c) {
  const Tensor& x = input(c, 0, "the input");
  const Tensor& target = input(c, 1, "the labels");
  ClassLoss s = class_loss(c, x, target, false);
  const size_t dout_index = s.weight ? 3 : 2;
  Tensor dout = as_float(input(c, dout_index, "the output gradient"));
  const int64_t positions = s.outer * s.inner;
  if (s.reduction == Reduction::None ? dout.numel() != positions : dout.numel() != 1)
    fail(s.op, "the output gradient " + dout.type_str() + " does not match the loss");
  // The mean's divisor (the summed weights of the labels not ignored).
  auto divisor = static_cast<double>(positions);
  if (s.int_target) {
    divisor = 0;
    for (int64_t p = 0; p < positions; ++p) {
      int64_t t = label_at(s, target, p);
      if (t >= 0) divisor += weight_of(s, t);
    }
  }
  Tensor xf = as_float(x);
  Tensor tf = s.int_target ? Tensor() : as_float(target);
  Tensor dx(s.shape, float_out(c, 0));
  auto* g = dx.data<float>();
  const auto ls = static_cast<float>(s.smoothing);
  const float eps = ls / static_cast<float>(s.classes);
  float wsum = 0;
  for (int64_t k = 0; k < s.classes; ++k) wsum += weight_of(s, k);
  Row r;
  std::vector<float> coef(static_cast<size_t>(s.classes));
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t p = o * s.inner + i;
      double scale = s.reduction == Reduction::None ? dout.at(p) : dout.at(0);
      if (s.reduction == Reduction::Mean) scale /= divisor;
      const auto sc = static_cast<float>(scale);
      // coef[k]: d loss_p / d logp[k] (before the scale).
      float csum = 0;
      if (s.int_target) {
        const int64_t t = label_at(s, target, p);
        if (t < 0) continue;  // ignored: no gradient
        for (int64_t k = 0; k < s.classes; ++k)
          coef[static_cast<size_t>(k)] = ls != 0 ? -eps * weight_of(s, k) : 0.0f;
        coef[static_cast<size_t>(t)] -= (1 - ls) * weight_of(s, t);
        csum = -((1 - ls) * weight_of(s, t) + eps * wsum);
      } else {
        const float* tp = tf.data<float>() + o * s.classes * s.inner + i;
        for (int64_t k = 0; k < s.classes; ++k) {
          float t = tp[k * s.inner];
          if (ls != 0) t = t * (1 - ls) + eps;
          coef[static_cast<size_t>(k)] = -weight_of(s, k) * t;
          csum += coef[static_cast<size_t>(k)];
        }
      }
      float* gp = g + o * s.classes * s.inner + i;
      if (!s.log_softmax) {
        for (int64_t k = 0; k < s.classes; ++k) gp[k * s.inner] = sc * coef[static_cast<size_t>(k)];
        continue;
      }
      // Through the log-softmax: d/dx[k] = coef[k] - softmax[k] * sum_j coef[j].
      load_row(s, xf.data<float>(), o, i, r);
      for (int64_t k = 0; k < s.classes; ++k) {
        gp[k * s.inner] =
            sc * (coef[static_cast<size_t>(k)] - r.prob[static_cast<size_t>(k)] * csum);
      }
    }
  }
  c.outputs.push_back(std::move(dx));
}

// ---- elementwise losses --------------------------------------------------------------------
std::vector<int64_t> broadcast_shapes(const std::string& op, const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k + a.size() >= r ? a[k + a.size() - r] : 1;
    const int64_t db = k + b.size() >= r ? b[k + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1)
      fail(op, "cannot broadcast " + shape_str(a) + " with " + shape_str(b));
    out[k] = da == 1 ? db : da;
  }
  return out;
}

// For each element of `out`, the flat index of the element of `in` (broadcast to `out`) it reads.
std::vector<int64_t> broadcast_map(const std::string& op, const std::vector<int64_t>& in,
                                   const std::vector<int64_t>& out) {
  const size_t r = out.size();
  std::vector<int64_t> stride(r, 0);
  int64_t st = 1;
  for (size_t k = in.size(); k-- > 0;) {
    const size_t ok = k + r - in.size();
    stride[ok] = in[k] == 1 ? 0 : st;
    st *= in[k];
  }
  const int64_t n = numel_of(out, op);
  std::vector<int64_t> map(static_cast<size_t>(n));
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t f = 0; f < n; ++f) {
    map[static_cast<size_t>(f)] = off;
    for (size_t k = r; k-- > 0;) {
      ++idx[k];
      off += stride[k];
      if (idx[k] < out[k]) break;
      off -= stride[k] * out[k];
      idx[k] = 0;
    }
  }
  return map;
}

enum class Pointwise { Mse, L1, SmoothL1 };

Pointwise pointwise_of(std::string_view op) {
  if (op.starts_with("MSELoss")) return Pointwise::Mse;
  if (op.starts_with("L1Loss")) return Pointwise::L1;
  return Pointwise::SmoothL1;
}

// SmoothL1Loss's beta; 0 (only ops.smooth_l1_loss accepts it) is the L1 loss.
float beta_of(const KernelCall& c, const std::string& op) {
  const double beta = attr_float(c.node, "beta").value_or(1.0);
  if (beta < 0 || !std::isfinite(beta))
    fail(op, "beta must be a non-negative number, got " + std::to_string(beta));
  return static_cast<float>(beta);
}

float pointwise_value(Pointwise kind, float d, float beta) {
  switch (kind) {
    case Pointwise::Mse:
      return d * d;
    case Pointwise::L1:
      return std::fabs(d);
    case Pointwise::SmoothL1: {
      const float a = std::fabs(d);
      if (beta == 0) return a;
      return a < beta ? 0.5f * d * d / beta : a - 0.5f * beta;
    }
  }
  return 0;
}

float pointwise_slope(Pointwise kind, float d, float beta) {
  const float sign = d > 0 ? 1.0f : (d < 0 ? -1.0f : 0.0f);
  switch (kind) {
    case Pointwise::Mse:
      return 2 * d;
    case Pointwise::L1:
      return sign;
    case Pointwise::SmoothL1:
      if (beta == 0) return sign;
      return std::fabs(d) < beta ? d / beta : sign;
  }
  return 0;
}

// MSELoss and L1Loss broadcast their operands (ops.square(x - y)); SmoothL1Loss requires one
// shape (MindSpore's SmoothL1Loss primitive raises "the prediction_shape ... must be equal").
std::vector<int64_t> pointwise_shape(const std::string& op, Pointwise kind, const Tensor& x,
                                     const Tensor& y) {
  if (kind == Pointwise::SmoothL1 && x.shape() != y.shape()) {
    fail(op, "the input " + x.type_str() + " and the target " + y.type_str() +
                 " must have the same shape");
  }
  return broadcast_shapes(op, x.shape(), y.shape());
}

void pointwise_kernel(KernelCall& c) {
  const std::string op(c.node.op);
  const Pointwise kind = pointwise_of(op);
  Tensor x = as_float(input(c, 0, "the input"));
  Tensor y = as_float(input(c, 1, "the target"));
  const float beta = kind == Pointwise::SmoothL1 ? beta_of(c, op) : 0.0f;
  const std::vector<int64_t> shape = pointwise_shape(op, kind, x, y);
  const auto mx = broadcast_map(op, x.shape(), shape);
  const auto my = broadcast_map(op, y.shape(), shape);
  const Reduction red = reduction_of(c, default_reduction(op));
  const DType dt = float_out(c, 0);
  const float* px = x.data<float>();
  const float* py = y.data<float>();
  if (red == Reduction::None) {
    Tensor out(shape, dt);
    auto* q = out.data<float>();
    for (size_t f = 0; f < mx.size(); ++f)
      q[f] = pointwise_value(kind, px[mx[f]] - py[my[f]], beta);
    c.outputs.push_back(std::move(out));
    return;
  }
  double sum = 0;
  for (size_t f = 0; f < mx.size(); ++f) sum += pointwise_value(kind, px[mx[f]] - py[my[f]], beta);
  if (red == Reduction::Mean) sum /= static_cast<double>(mx.size());
  c.outputs.push_back(Tensor::full({}, static_cast<float>(sum), dt));
}

// Outputs: d loss / d input, d loss / d target (each of its operand's shape: broadcast elements
// summed).
void pointwise_grad_kernel(KernelCall& c) {
  std::string op(c.node.op);
  op.resize(op.size() - 4);  // the forward operator, for messages
  const Pointwise kind = pointwise_of(op);
  Tensor x = as_float(input(c, 0, "the input"));
  Tensor y = as_float(input(c, 1, "the target"));
  Tensor dout = as_float(input(c, 2, "the output gradient"));
  const float beta = kind == Pointwise::SmoothL1 ? beta_of(c, op) : 0.0f;
  const std::vector<int64_t> shape = pointwise_shape(op, kind, x, y);
  const auto mx = broadcast_map(op, x.shape(), shape);
  const auto my = broadcast_map(op, y.shape(), shape);
  const Reduction red = reduction_of(c, default_reduction(op));
  if (red == Reduction::None ? dout.shape() != shape : dout.numel() != 1)
    fail(op, "the output gradient " + dout.type_str() + " does not match the loss");
  float scale = red == Reduction::None ? 1.0f : dout.data<float>()[0];
  if (red == Reduction::Mean) scale /= static_cast<float>(mx.size());
  Tensor dx(x.shape(), float_out(c, 0));
  Tensor dy(y.shape(), float_out(c, 1));
  const float* px = x.data<float>();
  const float* py = y.data<float>();
  const float* pd = dout.data<float>();
  auto* gx = dx.data<float>();
  auto* gy = dy.data<float>();
  for (size_t f = 0; f < mx.size(); ++f) {
    const float g = (red == Reduction::None ? pd[f] : scale) *
                    pointwise_slope(kind, px[mx[f]] - py[my[f]], beta);
    gx[mx[f]] += g;
    gy[my[f]] -= g;
  }
  c.outputs.push_back(std::move(dx));
  c.outputs.push_back(std::move(dy));
}

// ---- BCEWithLogitsLoss ---------------------------------------------------------------------
// loss = w * ((1 - y) * x + (1 + (pw - 1) * y) * softplus(-x)), softplus(-x) computed as
// max(-x, 0) + log1p(exp(-|x|)) so that no exp overflows; weight and pos_weight broadcast to the
// input's shape, which the target must have (MindSpore: "two inputs 'input' and 'target' shape
// are not equal").
struct Bce {
  std::string op;
  Tensor x, y;
  std::vector<int64_t> wmap, pmap;
  Tensor w, pw;
  size_t next = 2;  // the next input after the optional ones
};

Bce bce_inputs(const KernelCall& c, bool forward) {
  Bce b;
  b.op = std::string(c.node.op);
  if (!forward) b.op.resize(b.op.size() - 4);
  b.x = as_float(input(c, 0, "the input"));
  b.y = as_float(input(c, 1, "the target"));
  if (b.x.shape() != b.y.shape()) {
    fail(b.op, "the input " + b.x.type_str() + " and the target " + b.y.type_str() +
                   " must have the same shape");
  }
  if (attr_bool(c.node, "has_weight").value_or(false)) {
    b.w = as_float(input(c, b.next++, "weight"));
    if (broadcast_shapes(b.op, b.w.shape(), b.x.shape()) != b.x.shape())
      fail(b.op, "weight " + b.w.type_str() + " does not broadcast to the input " + b.x.type_str());
    b.wmap = broadcast_map(b.op, b.w.shape(), b.x.shape());
  }
  if (attr_bool(c.node, "has_pos_weight").value_or(false)) {
    b.pw = as_float(input(c, b.next++, "pos_weight"));
    if (broadcast_shapes(b.op, b.pw.shape(), b.x.shape()) != b.x.shape()) {
      fail(b.op,
           "pos_weight " + b.pw.type_str() + " does not broadcast to the input " + b.x.type_str());
    }
    b.pmap = broadcast_map(b.op, b.pw.shape(), b.x.shape());
  }
  return b;
}

float softplus_neg(float x) { return std::max(-x, 0.0f) + std::log1p(std::exp(-std::fabs(x))); }

void bce_kernel(KernelCall& c) {
  Bce b = bce_inputs(c, true);
  const float* px = b.x.data<float>();
  const float* py = b.y.data<float>();
  const int64_t n = b.x.numel();
  std::vector<float> l(static_cast<size_t>(n));
  for (int64_t f = 0; f < n; ++f) {
    const float pw = b.pw.defined() ? b.pw.data<float>()[b.pmap[static_cast<size_t>(f)]] : 1.0f;
    const float w = b.w.defined() ? b.w.data<float>()[b.wmap[static_cast<size_t>(f)]] : 1.0f;
    l[static_cast<size_t>(f)] =
        w * ((1 - py[f]) * px[f] + (1 + (pw - 1) * py[f]) * softplus_neg(px[f]));
  }
  const Reduction red = reduction_of(c, Reduction::Mean);
  const DType dt = float_out(c, 0);
  if (red == Reduction::None) {
    Tensor out(b.x.shape(), dt);
    std::copy(l.begin(), l.end(), out.data<float>());
    c.outputs.push_back(std::move(out));
    return;
  }
  double sum = 0;
  for (float v : l) sum += v;
  if (red == Reduction::Mean) sum /= static_cast<double>(n);
  c.outputs.push_back(Tensor::full({}, static_cast<float>(sum), dt));
}

void bce_grad_kernel(KernelCall& c) {
  Bce b = bce_inputs(c, false);
  Tensor dout = as_float(input(c, b.next, "the output gradient"));
  const Reduction red = reduction_of(c, Reduction::Mean);
  const int64_t n = b.x.numel();
  if (red == Reduction::None ? dout.shape() != b.x.shape() : dout.numel() != 1)
    fail(b.op, "the output gradient " + dout.type_str() + " does not match the loss");
  float scale = red == Reduction::None ? 1.0f : dout.data<float>()[0];
  if (red == Reduction::Mean) scale /= static_cast<float>(n);
  Tensor dx(b.x.shape(), float_out(c, 0));
  const float* px = b.x.data<float>();
  const float* py = b.y.data<float>();
  const float* pd = dout.data<float>();
  auto* g = dx.data<float>();
  for (int64_t f = 0; f < n; ++f) {
    const float pw = b.pw.defined() ? b.pw.data<float>()[b.pmap[static_cast<size_t>(f)]] : 1.0f;
    const float w = b.w.defined() ? b.w.data<float>()[b.wmap[static_cast<size_t>(f)]] : 1.0f;
    const float sig_neg = 1.0f / (1.0f + std::exp(px[f]));  // sigmoid(-x)
    g[f] = (red == Reduction::None ? pd[f] : scale) * w *
           ((1 - py[f]) - (1 + (pw - 1) * py[f]) * sig_neg);
  }
  c.outputs.push_back(std::move(dx));
}

}  // namespace

void k_class_loss(KernelCall& c) { class_loss_kernel(c); }
void k_class_loss_grad(KernelCall& c) { class_loss_grad_kernel(c); }
void k_pointwise_loss(KernelCall& c) { pointwise_kernel(c); }
void k_pointwise_loss_grad(KernelCall& c) { pointwise_grad_kernel(c); }
void k_bce_with_logits(KernelCall& c) { bce_kernel(c); }
void k_bce_with_logits_grad(KernelCall& c) { bce_grad_kernel(c); }

}  // namespace graphcore::runtime::kernels
