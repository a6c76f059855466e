// Losses (graphcore/src/ops/loss.cpp, runtime/loss_kernels.cpp, registry/losses.cpp): each
// forward kernel against values computed by hand, each backward kernel against central finite
// differences of its forward kernel, labels out of range refused with their place, the shape and
// dtype rules of the registry, and the loss wrappers (nn.WithLossCell, nn.TrainOneStepCell).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/autodiff.h"
#include "graphcore/opdef.h"
#include "graphcore/runtime.h"

using namespace graphcore;
using namespace graphcore::runtime;

namespace {

// One operator applied to graph inputs, run by the Executor (the kernel is the OpDef's).
struct OneOp {
  CellReport r;
  OneOp(const std::string& op, const std::vector<Tensor>& inputs, std::vector<Attr> attrs,
        size_t outputs = 1) {
    r.name = "T";
    r.file = "loss.py";
    r.compiled = true;
    Node n;
    n.id = op;
    n.op = op;
    n.attrs = std::move(attrs);
    n.file = "loss.py";
    for (size_t i = 0; i < inputs.size(); ++i) {
      Node in;
      in.id = "in" + std::to_string(i);
      in.kind = NodeKind::Input;
      in.op = "Input";
      in.outputs.push_back({Shape::of(inputs[i].shape()), inputs[i].dtype()});
      r.graph.nodes.push_back(std::move(in));
      n.inputs.push_back({static_cast<uint32_t>(i), 0});
    }
    for (size_t k = 0; k < outputs; ++k) n.outputs.push_back({Shape::unranked(), DType::Float32});
    r.graph.nodes.push_back(std::move(n));
    for (size_t k = 0; k < outputs; ++k)
      r.graph.outputs.push_back({static_cast<uint32_t>(inputs.size()), static_cast<uint32_t>(k)});
  }
};

// Runs `op`; the status's message when it does not finish.
std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs,
                        std::vector<Attr> attrs, size_t outputs = 1, std::string* error = nullptr) {
  OneOp g(op, inputs, std::move(attrs), outputs);
  Executor ex(g.r, {});
  for (size_t i = 0; i < inputs.size(); ++i) ex.set_input(i, inputs[i]);
  RunStatus s = ex.run();
  if (s.kind != RunStatus::Kind::Finished) {
    if (error) {
      *error = s.message;
    } else {
      ADD_FAILURE() << op << ": " << s.message;
    }
    return {};
  }
  return ex.outputs();
}

float scalar(const std::vector<Tensor>& out) {
  EXPECT_EQ(out.size(), 1u);
  if (out.empty()) return NAN;
  EXPECT_EQ(out[0].numel(), 1);
  return static_cast<float>(out[0].at(0));
}

Tensor floats(std::vector<int64_t> shape, const std::vector<float>& v) {
  return Tensor::from_floats(std::move(shape), v);
}
Tensor ints(std::vector<int64_t> shape, const std::vector<int64_t>& v, DType dt = DType::Int32) {
  return Tensor::from_ints(std::move(shape), v, dt);
}

// The log-softmax of one row, in double (the hand computation).
std::vector<double> log_softmax(const std::vector<double>& x) {
  double m = x[0];
  for (double v : x) m = std::max(m, v);
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  std::vector<double> r;
  r.reserve(x.size());
  for (double v : x) r.push_back(v - m - std::log(s));
  return r;
}

const std::vector<float> kLogits = {0.5f, -1.0f, 2.0f, 0.1f, 0.3f, -0.2f, 1.5f, 0.0f, -0.7f};

std::vector<double> row(size_t i) {
  return {kLogits[i * 3], kLogits[i * 3 + 1], kLogits[i * 3 + 2]};
}

TEST(LossKernels, TheOperatorsAreDefinedWithKernelsAndGradients) {
  for (const char* op : {"CrossEntropyLoss", "NLLLoss", "SoftmaxCrossEntropyWithLogits", "MSELoss",
                         "L1Loss", "SmoothL1Loss", "BCEWithLogitsLoss"}) {
    const OpDef* d = find_op(op);
    ASSERT_NE(d, nullptr) << op;
    EXPECT_NE(d->kernel, nullptr) << op;
    EXPECT_NE(d->grad, nullptr) << op;
    EXPECT_EQ(d->precision, OpPrecision::KeepFloat32) << op;
    const OpDef* g = find_op(std::string(op) + "Grad");
    ASSERT_NE(g, nullptr) << op;
    EXPECT_NE(g->kernel, nullptr) << op;
  }
}

// nll of log-softmax, with class weights, ignore_index and label smoothing, per reduction.
TEST(LossKernels, CrossEntropyWithClassIndices) {
  const Tensor x = floats({3, 3}, kLogits);
  const Tensor t = ints({3}, {2, 0, 1});
  double nll[3];
  const std::vector<double> w = {0.2, 1.0, 3.0};
  double wnll[3];
  double wsmooth[3];
  const int label[3] = {2, 0, 1};
  for (size_t i = 0; i < 3; ++i) {
    auto lp = log_softmax(row(i));
    nll[i] = -lp[label[i]];
    wnll[i] = -w[label[i]] * lp[label[i]];
    wsmooth[i] = -(w[0] * lp[0] + w[1] * lp[1] + w[2] * lp[2]);
  }
  EXPECT_NEAR(scalar(run("CrossEntropyLoss", {x, t}, {})), (nll[0] + nll[1] + nll[2]) / 3, 1e-6);
  EXPECT_NEAR(scalar(run("CrossEntropyLoss", {x, t}, {{"reduction", std::string("sum")}})),
              nll[0] + nll[1] + nll[2], 1e-6);
  auto none = run("CrossEntropyLoss", {x, t}, {{"reduction", std::string("none")}});
  ASSERT_EQ(none.size(), 1u);
  ASSERT_EQ(none[0].shape(), std::vector<int64_t>({3}));
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(none[0].at(i), nll[i], 1e-6);
  // Weighted: the mean divides by the weights of the labels.
  const Tensor wt = floats({3}, {0.2f, 1.0f, 3.0f});
  EXPECT_NEAR(scalar(run("CrossEntropyLoss", {x, t, wt}, {{"has_weight", true}})),
              (wnll[0] + wnll[1] + wnll[2]) / (w[2] + w[0] + w[1]), 1e-6);
  // ignore_index: the ignored position neither adds nor counts.
  const Tensor ti = ints({3}, {2, -100, 1});
  EXPECT_NEAR(scalar(run("CrossEntropyLoss", {x, ti, wt}, {{"has_weight", true}})),
              (wnll[0] + wnll[2]) / (w[2] + w[1]), 1e-6);
  EXPECT_NEAR(
      scalar(run("CrossEntropyLoss", {x, ints({3}, {2, 0, 1})}, {{"ignore_index", int64_t{0}}})),
      (nll[0] + nll[2]) / 2, 1e-6);
  // Label smoothing: (1 - ls) * nll + ls / C * smooth, both over the summed weights.
  const double ls = 0.1;
  double want = 0;
  for (size_t i = 0; i < 3; ++i) want += (1 - ls) * wnll[i] + ls / 3 * wsmooth[i];
  EXPECT_NEAR(
      scalar(run("CrossEntropyLoss", {x, t, wt}, {{"has_weight", true}, {"label_smoothing", ls}})),
      want / (w[0] + w[1] + w[2]), 1e-6);
  // Everything ignored: 0 / 0, NaN as in MindSpore.
  EXPECT_TRUE(std::isnan(scalar(run("CrossEntropyLoss", {x, ints({3}, {-100, -100, -100})}, {}))));
}

TEST(LossKernels, CrossEntropyWithProbabilitiesAndSpatialLabels) {
  const Tensor x = floats({3, 3}, kLogits);
  const std::vector<float> p = {0.1f, 0.2f, 0.7f, 1.0f, 0.0f, 0.0f, 0.3f, 0.3f, 0.4f};
  const Tensor t = floats({3, 3}, p);
  const double ls = 0.2;
  double sum = 0;
  for (size_t i = 0; i < 3; ++i) {
    auto lp = log_softmax(row(i));
    for (size_t k = 0; k < 3; ++k) sum -= (p[i * 3 + k] * (1 - ls) + ls / 3) * lp[k];
  }
  // The mean divides by the positions (N), not by weights.
  EXPECT_NEAR(scalar(run("CrossEntropyLoss", {x, t}, {{"label_smoothing", ls}})), sum / 3, 1e-6);
  // (N, C, L) logits with (N, L) labels: the class axis is 1.
  const Tensor x3 = floats({1, 3, 3}, kLogits);  // positions j = 0..2 read column j
  const Tensor t3 = ints({1, 3}, {0, 2, 1});
  double s3 = 0;
  for (size_t j = 0; j < 3; ++j) {
    auto lp = log_softmax({kLogits[j], kLogits[3 + j], kLogits[6 + j]});
    s3 -= lp[j == 0 ? 0 : (j == 1 ? 2 : 1)];
  }
  EXPECT_NEAR(scalar(run("CrossEntropyLoss", {x3, t3}, {})), s3 / 3, 1e-6);
  auto none = run("CrossEntropyLoss", {x3, t3}, {{"reduction", std::string("none")}});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].shape(), std::vector<int64_t>({1, 3}));
}

TEST(LossKernels, NllLossAndSoftmaxCrossEntropy) {
  const Tensor lp = floats({2, 3}, {-0.5f, -1.5f, -2.0f, -3.0f, -0.1f, -1.0f});
  const Tensor t = ints({2}, {1, 0});
  EXPECT_NEAR(scalar(run("NLLLoss", {lp, t}, {})), (1.5 + 3.0) / 2, 1e-6);
  EXPECT_NEAR(scalar(run("NLLLoss", {lp, t}, {{"reduction", std::string("sum")}})), 4.5, 1e-6);
  const Tensor x = floats({3, 3}, kLogits);
  const Tensor labels = ints({3}, {2, 0, 1});
  double nll = 0;
  const int label[3] = {2, 0, 1};
  for (size_t i = 0; i < 3; ++i) nll -= log_softmax(row(i))[label[i]];
  // sparse=True, reduction='mean' (SparseSoftmaxCrossEntropyWithLogits): the batch mean.
  EXPECT_NEAR(scalar(run("SoftmaxCrossEntropyWithLogits", {x, labels},
                         {{"sparse", true}, {"reduction", std::string("mean")}})),
              nll / 3, 1e-6);
  // The default reduction is 'none': per sample; dense one-hot labels give the same.
  const Tensor onehot = floats({3, 3}, {0, 0, 1, 1, 0, 0, 0, 1, 0});
  auto a = run("SoftmaxCrossEntropyWithLogits", {x, labels}, {{"sparse", true}});
  auto b = run("SoftmaxCrossEntropyWithLogits", {x, onehot}, {});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(a[0].shape(), std::vector<int64_t>({3}));
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(a[0].at(i), -log_softmax(row(static_cast<size_t>(i)))[label[i]], 1e-6);
    EXPECT_NEAR(a[0].at(i), b[0].at(i), 1e-7);
  }
  // ignore_index does not exist here: -100 is a label out of range.
  std::string err;
  run("SoftmaxCrossEntropyWithLogits", {x, ints({3}, {2, -100, 1})}, {{"sparse", true}}, 1, &err);
  EXPECT_NE(err.find("label -100 at batch index 1"), std::string::npos) << err;
}

// A label out of range is a RuntimeError naming the batch index, the value and the classes.
TEST(LossKernels, LabelsOutOfRangeAreRefusedWithTheirPlace) {
  const Tensor x = floats({3, 3}, kLogits);
  std::string err;
  EXPECT_TRUE(run("CrossEntropyLoss", {x, ints({3}, {0, 1, 5})}, {}, 1, &err).empty());
  EXPECT_NE(err.find("label 5 at batch index 2 is out of range for 3 classes"), std::string::npos)
      << err;
  // MindSpore's GatherD would wrap -3 to class 0: refused too.
  err.clear();
  run("NLLLoss", {x, ints({3}, {-3, 1, 1}, DType::Int64)}, {}, 1, &err);
  EXPECT_NE(err.find("label -3 at batch index 0"), std::string::npos) << err;
  // Spatial labels: the batch index and the position.
  err.clear();
  run("CrossEntropyLoss", {floats({1, 3, 3}, kLogits), ints({1, 3}, {0, 7, 1})}, {}, 1, &err);
  EXPECT_NE(err.find("label 7 at batch index 0, position"), std::string::npos) << err;
  // Also in the backward kernel.
  err.clear();
  run("CrossEntropyLossGrad", {x, ints({3}, {0, 3, 1}), Tensor::full({}, 1.0)}, {}, 1, &err);
  EXPECT_NE(err.find("label 3 at batch index 1"), std::string::npos) << err;
}

TEST(LossKernels, RegressionLosses) {
  const Tensor x = floats({2, 2}, {1.0f, -2.0f, 0.5f, 3.0f});
  const Tensor y = floats({2, 2}, {0.0f, -1.0f, 0.7f, 0.0f});
  // d = 1, -1, -0.2, 3
  EXPECT_NEAR(scalar(run("MSELoss", {x, y}, {})), (1 + 1 + 0.04 + 9) / 4, 1e-6);
  EXPECT_NEAR(scalar(run("L1Loss", {x, y}, {{"reduction", std::string("sum")}})), 5.2, 1e-6);
  // Broadcast target: y row (0, 1) against every row of x.
  EXPECT_NEAR(scalar(run("MSELoss", {x, floats({2}, {0.0f, 1.0f})}, {})), (1 + 9 + 0.25 + 4) / 4.0,
              1e-6);
  // SmoothL1 with beta 1 (default reduction 'none'): 0.5 d^2 below beta, |d| - 0.5 above.
  auto s = run("SmoothL1Loss", {x, y}, {});
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].shape(), std::vector<int64_t>({2, 2}));
  EXPECT_NEAR(s[0].at(0), 0.5, 1e-6);
  EXPECT_NEAR(s[0].at(2), 0.5 * 0.04, 1e-6);
  EXPECT_NEAR(s[0].at(3), 2.5, 1e-6);
  auto s2 = run("SmoothL1Loss", {x, y}, {{"beta", 2.0}, {"reduction", std::string("mean")}});
  EXPECT_NEAR(scalar(s2), (0.25 + 0.25 + 0.01 + 2.0) / 4, 1e-6);
  std::string err;
  run("SmoothL1Loss", {x, floats({2}, {0, 1})}, {}, 1, &err);
  EXPECT_NE(err.find("must have the same shape"), std::string::npos) << err;
}

TEST(LossKernels, BinaryCrossEntropyWithLogits) {
  const Tensor x = floats({2, 2}, {0.3f, -1.2f, 2.5f, -40.0f});
  const Tensor y = floats({2, 2}, {1.0f, 0.0f, 0.5f, 1.0f});
  const Tensor w = floats({2}, {0.5f, 2.0f});
  const Tensor pw = floats({2}, {3.0f, 1.5f});
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  double want = 0;
  for (int i = 0; i < 4; ++i) {
    const double xv = x.at(i), yv = y.at(i), wv = w.at(i % 2), pv = pw.at(i % 2);
    // -w * (pw * y * log(sigmoid(x)) + (1 - y) * log(1 - sigmoid(x))); log(sigmoid(-40)) is
    // -40 to float precision, which the stable form keeps.
    const double log_sig = xv < -30 ? xv : std::log(sig(xv));
    const double log_one_minus = std::log(1 - sig(xv));
    want += -wv * (pv * yv * log_sig + (1 - yv) * log_one_minus);
  }
  EXPECT_NEAR(scalar(run("BCEWithLogitsLoss", {x, y, w, pw},
                         {{"has_weight", true}, {"has_pos_weight", true}})),
              want / 4, 1e-5);
  // pos_weight alone is the third input.
  double want_pw = 0;
  for (int i = 0; i < 4; ++i) {
    const double xv = x.at(i), yv = y.at(i), pv = pw.at(i % 2);
    const double log_sig = xv < -30 ? xv : std::log(sig(xv));
    want_pw += -(pv * yv * log_sig + (1 - yv) * std::log(1 - sig(xv)));
  }
  EXPECT_NEAR(scalar(run("BCEWithLogitsLoss", {x, y, pw},
                         {{"has_pos_weight", true}, {"reduction", std::string("sum")}})),
              want_pw, 1e-4);
}

// ---- backward kernels against central differences of the forward kernels ----------------------

// d(sum_i dout_i * loss_i)/d input `wrt`, numerically, in double steps over float32 kernels.
std::vector<double> numeric_grad(const std::string& op, std::vector<Tensor> inputs,
                                 const std::vector<Attr>& attrs, size_t wrt, const Tensor& dout) {
  std::vector<double> g;
  Tensor& v = inputs[wrt];
  v = v.clone();
  const double h = 1e-2;
  auto loss = [&]() {
    auto out = run(op, inputs, attrs);
    if (out.empty()) return 0.0;
    double s = 0;
    for (int64_t i = 0; i < out[0].numel(); ++i) s += out[0].at(i) * dout.at(i);
    return s;
  };
  for (int64_t i = 0; i < v.numel(); ++i) {
    const double x0 = v.at(i);
    v.set(i, x0 + h);
    const double up = loss();
    v.set(i, x0 - h);
    const double down = loss();
    v.set(i, x0);
    g.push_back((up - down) / (2 * h));
  }
  return g;
}

struct GradCase {
  std::string op;
  std::vector<Tensor> inputs;
  std::vector<Attr> attrs;
  size_t differentiable;  // outputs of the backward operator
};

void check_grad(const GradCase& c) {
  // dout: 1 for a reduced loss, else varied per element.
  auto fwd = run(c.op, c.inputs, c.attrs);
  ASSERT_EQ(fwd.size(), 1u) << c.op;
  Tensor dout(fwd[0].shape(), DType::Float32);
  for (int64_t i = 0; i < dout.numel(); ++i) dout.set(i, 0.5 + 0.25 * static_cast<double>(i % 3));
  if (fwd[0].rank() == 0) dout = Tensor::full({}, 1.5);
  std::vector<Tensor> ins = c.inputs;
  ins.push_back(dout);
  auto grads = run(c.op + "Grad", ins, c.attrs, c.differentiable);
  ASSERT_EQ(grads.size(), c.differentiable) << c.op;
  for (size_t k = 0; k < c.differentiable; ++k) {
    auto num = numeric_grad(c.op, c.inputs, c.attrs, k, dout);
    ASSERT_EQ(grads[k].shape(), c.inputs[k].shape()) << c.op << " input " << k;
    for (size_t i = 0; i < num.size(); ++i) {
      EXPECT_NEAR(grads[k].at(static_cast<int64_t>(i)), num[i], 2e-3 + 2e-3 * std::fabs(num[i]))
          << c.op << " input " << k << " element " << i;
    }
  }
}

TEST(LossGradKernels, ClassLossesMatchFiniteDifferences) {
  const Tensor x = floats({3, 3}, kLogits);
  const Tensor t = ints({3}, {2, 0, 1});
  const Tensor w = floats({3}, {0.2f, 1.0f, 3.0f});
  const Tensor p = floats({3, 3}, {0.1f, 0.2f, 0.7f, 1.0f, 0.0f, 0.0f, 0.3f, 0.3f, 0.4f});
  const Tensor x4 = floats({1, 3, 1, 3}, kLogits);
  const Tensor t4 = ints({1, 1, 3}, {0, 2, -100});
  for (const char* red : {"mean", "sum", "none"}) {
    const Attr r{"reduction", std::string(red)};
    check_grad({"CrossEntropyLoss", {x, t}, {r}, 1});
    check_grad({"CrossEntropyLoss",
                {x, ints({3}, {2, -100, 1}), w},
                {r, {"has_weight", true}, {"label_smoothing", 0.3}},
                1});
    check_grad(
        {"CrossEntropyLoss", {x, p, w}, {r, {"has_weight", true}, {"label_smoothing", 0.1}}, 1});
    check_grad({"CrossEntropyLoss", {x4, t4}, {r, {"label_smoothing", 0.2}}, 1});
    check_grad({"NLLLoss", {x, t, w}, {r, {"has_weight", true}, {"label_smoothing", 0.1}}, 1});
    check_grad({"SoftmaxCrossEntropyWithLogits", {x, t}, {r, {"sparse", true}}, 1});
    check_grad({"SoftmaxCrossEntropyWithLogits", {x, p}, {r}, 1});
  }
}

TEST(LossGradKernels, RegressionAndBinaryLossesMatchFiniteDifferences) {
  const Tensor x = floats({2, 3}, {1.0f, -2.0f, 0.5f, 3.0f, 0.05f, -0.6f});
  const Tensor y = floats({2, 3}, {0.0f, -1.0f, 0.7f, 0.0f, -0.3f, 0.2f});
  const Tensor yb = floats({3}, {0.0f, 1.0f, -0.5f});
  const Tensor target = floats({2, 3}, {1.0f, 0.0f, 0.3f, 1.0f, 0.0f, 0.9f});
  for (const char* red : {"mean", "sum", "none"}) {
    const Attr r{"reduction", std::string(red)};
    check_grad({"MSELoss", {x, y}, {r}, 2});
    check_grad({"MSELoss", {x, yb}, {r}, 2});  // the target's gradient sums the broadcast
    check_grad({"L1Loss", {x, yb}, {r}, 2});
    check_grad({"SmoothL1Loss", {x, y}, {r}, 2});
    check_grad({"SmoothL1Loss", {x, y}, {r, {"beta", 0.5}}, 2});
    check_grad({"BCEWithLogitsLoss", {x, target}, {r}, 1});
    check_grad({"BCEWithLogitsLoss",
                {x, target, floats({3}, {0.5f, 1.0f, 2.0f}), floats({2, 1}, {3.0f, 0.5f})},
                {r, {"has_weight", true}, {"has_pos_weight", true}},
                1});
  }
}

// ---- the registry and the wrappers, through an analysis
// ------------------------------------------

const char* kModel = R"(import numpy as np
import mindspore as ms
from mindspore import nn, ops

W = ms.Tensor(np.array([0.5, 1.0, 2.0], np.float32))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3)

    def construct(self, x):
        return self.fc(x)


class Loss(nn.Cell):
    def __init__(self, loss):
        super().__init__()
        self.loss = loss

    def construct(self, x, y):
        return self.loss(x, y)


class Fn(nn.Cell):
    def construct(self, x, y):
        return ops.cross_entropy(x, y, W, reduction='sum', label_smoothing=0.1)


def train():
    net = Net()
    with_loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean'))
    opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    return nn.TrainOneStepCell(with_loss, opt)
)";

AnalysisResult analyze(const std::string& entry, std::vector<TensorType> inputs,
                       const std::string& extra = "") {
  MemorySourceProvider src("model.py", std::string(kModel) + extra);
  AnalysisOptions o;
  o.entries.push_back(entry);
  o.inputs = std::move(inputs);
  o.constant_values = true;
  return analyze_file("model.py", o, src);
}

std::string errors(const AnalysisResult& r) {
  std::string e;
  for (const Diagnostic& d : r.diagnostics) {
    if (d.severity == Severity::Error) e += d.code + ": " + d.message + "\n";
  }
  return e;
}

const Node* find_node(const CellReport& c, std::string_view op) {
  for (const Node& n : c.graph.nodes) {
    if (n.op == op) return &n;
  }
  return nullptr;
}

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.at(i));
  return v;
}

const TensorType kLogits43{Shape::of({4, 3}), DType::Float32};
const TensorType kLabels4{Shape::of({4}), DType::Int32};

// nn.WithLossCell(backbone, loss_fn): inputs (data, label), one scalar output, the backbone's
// Parameters named as MindSpore names them (auto_prefix=False: "fc.weight"), the loss's
// constructor attributes on its node; and it runs.
TEST(WithLossCell, CompilesToALossGraphAndRuns) {
  AnalysisResult r = analyze(
      "nn.WithLossCell(Net(), nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean'))",
      {{Shape::of({4, 4}), DType::Float32}, kLabels4});
  ASSERT_EQ(errors(r), "");
  ASSERT_EQ(r.cells.size(), 1u);
  const CellReport& c = r.cells[0];
  ASSERT_EQ(c.inputs.size(), 2u);
  EXPECT_EQ(c.inputs[0].name, "data");
  EXPECT_EQ(c.inputs[1].name, "label");
  ASSERT_EQ(c.outputs.size(), 1u);
  EXPECT_EQ(c.outputs[0].type.shape.rank(), 0u);
  ASSERT_EQ(c.params.size(), 2u);
  EXPECT_EQ(c.params[0].name, "fc.weight");
  const Node* loss = find_node(c, "SoftmaxCrossEntropyWithLogits");
  ASSERT_NE(loss, nullptr);
  ASSERT_NE(loss->find_attr("sparse"), nullptr);
  EXPECT_EQ(std::get<bool>(*loss->find_attr("sparse")), true);
  Executor ex(c, {});
  ex.set_input(0, Tensor::random({4, 4}, DType::Float32, 7));
  ex.set_input(1, ints({4}, {0, 2, 1, 2}));
  RunStatus s = ex.run();
  ASSERT_EQ(s.kind, RunStatus::Kind::Finished) << s.message;
  const float v = static_cast<float>(ex.outputs()[0].at(0));
  EXPECT_TRUE(std::isfinite(v));
  EXPECT_GT(v, 0.0f);
}

// TrainOneStepCell is not a forward graph, but what it wraps is reachable (network, optimizer,
// WithLossCell's backbone_network), and building one is no error.
TEST(WithLossCell, TrainOneStepCellKeepsTheNetworkAndOptimizer) {
  AnalysisResult r = analyze("train().network", {{Shape::of({4, 4}), DType::Float32}, kLabels4});
  ASSERT_EQ(errors(r), "");
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_EQ(r.cells[0].class_name, "WithLossCell");
  EXPECT_EQ(r.cells[0].params.size(), 2u);
  AnalysisResult b =
      analyze("train().network.backbone_network", {{Shape::of({4, 4}), DType::Float32}});
  ASSERT_EQ(errors(b), "");
  ASSERT_EQ(b.cells.size(), 1u);
  EXPECT_EQ(b.cells[0].class_name, "Net");
  // The step itself is analysed as its Cell tree only (no graph, no error).
  AnalysisResult t = analyze("train()", {});
  EXPECT_EQ(errors(t), "");
  // Its attributes: the optimizer is what the script passed.
  AnalysisResult o = analyze("Loss(train().network._loss_fn)", {kLogits43, kLabels4});
  EXPECT_EQ(errors(o), "");
  ASSERT_EQ(o.cells.size(), 1u);
  EXPECT_NE(find_node(o.cells[0], "SoftmaxCrossEntropyWithLogits"), nullptr);
}

// nn.CrossEntropyLoss(weight=W): the weights are an input of the node (a constant with its
// values), and the functional form takes them as an argument; both run.
TEST(LossRegistry, ClassWeightsAreInputsOfTheNode) {
  for (const char* entry : {"Loss(nn.CrossEntropyLoss(weight=W, label_smoothing=0.1))", "Fn()"}) {
    AnalysisResult r = analyze(entry, {kLogits43, kLabels4});
    ASSERT_EQ(errors(r), "") << entry;
    ASSERT_EQ(r.cells.size(), 1u);
    const Node* n = find_node(r.cells[0], "CrossEntropyLoss");
    ASSERT_NE(n, nullptr) << entry;
    EXPECT_EQ(n->inputs.size(), 3u) << entry;
    ASSERT_NE(n->find_attr("has_weight"), nullptr) << entry;
    Executor ex(r.cells[0], {});
    ex.set_input(0, floats({4, 3}, {0.5f, -1, 2, 0.1f, 0.3f, -0.2f, 1.5f, 0, -0.7f, 1, 1, 1}));
    ex.set_input(1, ints({4}, {2, 0, 1, 1}));
    RunStatus s = ex.run();
    ASSERT_EQ(s.kind, RunStatus::Kind::Finished) << entry << ": " << s.message;
    // By hand: weighted nll with smoothing 0.1 over weights (0.5, 1, 2).
    const double w[3] = {0.5, 1.0, 2.0};
    const int t[4] = {2, 0, 1, 1};
    const float x[4][3] = {{0.5f, -1, 2}, {0.1f, 0.3f, -0.2f}, {1.5f, 0, -0.7f}, {1, 1, 1}};
    double loss = 0, wsum = 0;
    for (int i = 0; i < 4; ++i) {
      auto lp = log_softmax({x[i][0], x[i][1], x[i][2]});
      loss += 0.9 * -w[t[i]] * lp[t[i]] - 0.1 / 3 * (w[0] * lp[0] + w[1] * lp[1] + w[2] * lp[2]);
      wsum += w[t[i]];
    }
    const bool sum = std::string(entry) == "Fn()";
    EXPECT_NEAR(ex.outputs()[0].at(0), sum ? loss : loss / wsum, 1e-5) << entry;
  }
}

// nn.NLLLoss's weight and reduction are constructor arguments too.
TEST(LossRegistry, NllLossCellReadsItsConstructorArguments) {
  AnalysisResult r = analyze("Loss(nn.NLLLoss(weight=W, reduction='none'))", {kLogits43, kLabels4});
  ASSERT_EQ(errors(r), "");
  ASSERT_EQ(r.cells.size(), 1u);
  const Node* n = find_node(r.cells[0], "NLLLoss");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->inputs.size(), 3u);
  EXPECT_NE(n->find_attr("has_weight"), nullptr);
  ASSERT_EQ(r.cells[0].outputs.size(), 1u);
  EXPECT_EQ(r.cells[0].outputs[0].type.shape, Shape::of({4}));
  Executor ex(r.cells[0], {});
  ex.set_input(0, floats({4, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9, -1, -1, -1}));
  ex.set_input(1, ints({4}, {2, 0, -100, 1}));
  RunStatus s = ex.run();
  ASSERT_EQ(s.kind, RunStatus::Kind::Finished) << s.message;
  EXPECT_EQ(values_of(ex.outputs()[0]), (std::vector<double>{6.0, 2.0, 0.0, 1.0}));
}

// Real mistakes are located errors (MindSpore raises on each); unknown shapes are not.
TEST(LossRegistry, ShapeAndDtypeMistakesAreReported) {
  struct Bad {
    const char* entry;
    TensorType labels;
    const char* code;
    const char* words;
  };
  const Bad cases[] = {
      {"Loss(nn.CrossEntropyLoss())",
       {Shape::of({4}), DType::Int64},
       "dtype-error",
       "must be int32, got int64"},
      {"Loss(nn.CrossEntropyLoss())",
       {Shape::of({5}), DType::Int32},
       "shape-mismatch",
       "(batch 4 vs 5)"},
      {"Loss(nn.CrossEntropyLoss())",
       {Shape::of({4, 3}), DType::Int32},
       "dtype-error",
       "class probabilities and must be float"},
      {"Loss(nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean'))",
       {Shape::of({4}), DType::Float32},
       "dtype-error",
       "must be int32 or int64"},
      {"Loss(nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean'))",
       {Shape::of({4, 1}), DType::Int32},
       "rank-error",
       "without its last (class) axis"},
      {"Loss(nn.SoftmaxCrossEntropyWithLogits())",
       {Shape::of({4, 2}), DType::Float32},
       "shape-mismatch",
       "dense labels have the logits' shape"},
      {"Loss(nn.NLLLoss())",
       {Shape::of({4}), DType::Float32},
       "dtype-error",
       "must be int32 or int64"},
      {"Loss(nn.SmoothL1Loss())",
       {Shape::of({3}), DType::Float32},
       "shape-mismatch",
       "does not broadcast"},
      {"Loss(nn.MSELoss())", {Shape::of({2}), DType::Float32}, "broadcast-error", ""},
      {"Loss(nn.BCEWithLogitsLoss())",
       {Shape::of({4, 1}), DType::Float32},
       "shape-mismatch",
       "must have the same shape"},
      {"Loss(nn.CrossEntropyLoss(label_smoothing=1.5))", kLabels4, "invalid-argument",
       "must be in [0.0, 1.0]"},
      {"Loss(nn.CrossEntropyLoss(label_smoothing=0))", kLabels4, "invalid-argument",
       "must be a float"},
      {"Loss(nn.MSELoss(reduction='avg'))", kLabels4, "invalid-argument",
       "the 'reduction' must be in ['mean', 'sum', 'none'], but got avg."},
      {"Loss(nn.SoftmaxCrossEntropyWithLogits(sparse=1))", kLabels4, "invalid-argument",
       "'sparse' must be a bool"},
      {"Loss(nn.SmoothL1Loss(beta=0.0))", kLabels4, "invalid-argument", "must be greater than 0"},
  };
  for (const Bad& b : cases) {
    AnalysisResult r = analyze(b.entry, {kLogits43, b.labels});
    const std::string e = errors(r);
    EXPECT_NE(e.find(b.code), std::string::npos) << b.entry << " " << b.labels.str() << ": " << e;
    EXPECT_NE(e.find(b.words), std::string::npos) << b.entry << " " << b.labels.str() << ": " << e;
  }
  // Accepted: spatial labels, probabilities, broadcast targets, unknown shapes and dtypes.
  const std::pair<const char*, std::vector<TensorType>> fine[] = {
      {"Loss(nn.CrossEntropyLoss())",
       {{Shape::of({2, 3, 5, 5}), DType::Float32}, {Shape::of({2, 5, 5}), DType::Int32}}},
      {"Loss(nn.CrossEntropyLoss(reduction='none'))", {kLogits43, kLogits43}},
      {"Loss(nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean'))",
       {{Shape::of({2, 4, 3}), DType::Float32}, {Shape::of({2, 4}), DType::Int64}}},
      {"Loss(nn.MSELoss())", {kLogits43, {Shape::of({3}), DType::Float32}}},
      {"Loss(nn.CrossEntropyLoss())", {kLogits43, {Shape::unranked(), DType::Unknown}}},
      {"Loss(nn.BCEWithLogitsLoss())", {kLogits43, kLogits43}},
  };
  for (const auto& [entry, inputs] : fine) {
    AnalysisResult r = analyze(entry, inputs);
    EXPECT_EQ(errors(r), "") << entry;
    ASSERT_EQ(r.cells.size(), 1u) << entry;
    EXPECT_EQ(r.cells[0].outputs.size(), 1u) << entry;
  }
  // reduction='none' keeps the positions: (2, 5, 5) for (2, 3, 5, 5) logits.
  AnalysisResult r =
      analyze("Loss(nn.CrossEntropyLoss(reduction='none'))",
              {{Shape::of({2, 3, 5, 5}), DType::Float32}, {Shape::of({2, 5, 5}), DType::Int32}});
  ASSERT_EQ(r.cells.size(), 1u);
  ASSERT_EQ(r.cells[0].outputs.size(), 1u);
  EXPECT_EQ(r.cells[0].outputs[0].type.shape, Shape::of({2, 5, 5}));
}

}  // namespace
