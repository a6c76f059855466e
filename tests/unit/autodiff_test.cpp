// graphcore's automatic differentiation (graphcore/autodiff.h) on graphs compiled from small
// MindSpore sources: every gradient rule against central finite differences of the float32
// forward graph, BatchNorm's training statistics and moving-average update, Dropout's mask, the
// structure of the gradient graph, and the errors build_backward reports.
//
// The check: the model's output y is made a scalar loss L = sum(w * y) with fixed random w (a
// random linear functional, so every output element matters with its own weight), L is
// differentiated, and for a sample of the elements of every parameter and input the analytic
// gradient is compared with (L(p + e) - L(p - e)) / 2e computed by the forward graph alone. L is
// summed in double from the float32 outputs, so the numeric gradient's rounding error is about
// 1e-7 * |y| * sqrt(size) / e; with e = 3e-3 and outputs of order 1 that is under 1e-3, and the
// truncation error (e^2 f''' / 6) is about 1e-6: the tolerance |a - n| <= 2e-3 * max(1, max|a|) +
// 1e-2 |n| covers both with a margin, while a wrong rule (a missing factor, a transposed weight)
// is off by far more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/autodiff.h"
#include "graphcore/opdef.h"
#include "graphcore/runtime.h"

namespace graphcore {
namespace {

using autodiff::build_backward;
using autodiff::GradOptions;
using autodiff::GradResult;
using runtime::ExecOptions;
using runtime::Executor;
using runtime::RunStatus;
using runtime::Tensor;

TensorType f32(const std::vector<int64_t>& d) { return {Shape::of(d), DType::Float32}; }

struct Compiled {
  AnalysisResult res;
  [[nodiscard]] const CellReport& cell() const { return res.cells.at(0); }
};

// A model file whose Net has `init` in __init__ and `body` as construct(self, <args>).
Compiled compile(const std::string& init, const std::string& body, std::vector<TensorType> inputs,
                 const std::string& args = "x") {
  const std::string text =
      "import numpy as np\nimport mindspore as ms\nfrom mindspore import nn, ops, Tensor, "
      "Parameter\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n        "
      "super().__init__()\n" +
      init + "\n    def construct(self, " + args + "):\n" + body;
  MemorySourceProvider src("/mem/net.py", text);
  AnalysisOptions opts;
  opts.cell = "Net";
  opts.inputs = std::move(inputs);
  opts.constant_values = true;
  Compiled c{analyze_file("/mem/net.py", opts, src)};
  for (const Diagnostic& d : c.res.diagnostics) {
    EXPECT_NE(d.severity, Severity::Error) << d.message << "\n" << text;
  }
  EXPECT_FALSE(c.res.cells.empty()) << text;
  if (!c.res.cells.empty() && c.res.cells[0].graph.outputs.empty()) {
    for (const Diagnostic& d : c.res.diagnostics) {
      ADD_FAILURE() << "no output: " << d.code << ": " << d.message << " (line "
                    << d.range.start.line + 1 << ")";
    }
  }
  return c;
}

std::vector<int64_t> dims(const TensorType& t) {
  std::vector<int64_t> d;
  for (const Dim& x : t.shape.dims) d.push_back(x.value());
  return d;
}

// The report with its one output replaced by sum(w * y): a Constant w, a Mul and a ReduceSum.
CellReport with_linear_loss(const CellReport& cell, const std::vector<double>& w) {
  CellReport r = cell;
  const ValueRef y = r.graph.outputs.at(0);
  const TensorType yt = r.graph.nodes[y.node].outputs[y.output];
  Node c;
  c.id = "loss_weights";
  c.kind = NodeKind::Constant;
  c.op = "Constant";
  c.outputs = {yt};
  c.constant_values = std::make_shared<const std::vector<double>>(w);
  r.graph.nodes.push_back(c);
  const auto wi = static_cast<uint32_t>(r.graph.nodes.size() - 1);
  Node mul;
  mul.id = "loss_mul";
  mul.op = "Mul";
  mul.inputs = {y, {wi, 0}};
  mul.outputs = {yt};
  r.graph.nodes.push_back(mul);
  Node sum;
  sum.id = "loss";
  sum.op = "ReduceSum";
  sum.inputs = {{static_cast<uint32_t>(r.graph.nodes.size() - 1), 0}};
  sum.outputs = {TensorType{Shape::of(std::vector<int64_t>{}), yt.dtype}};
  sum.attrs = {{"axis", std::vector<int64_t>{}}, {"keep_dims", false}};
  r.graph.nodes.push_back(sum);
  r.graph.outputs = {{static_cast<uint32_t>(r.graph.nodes.size() - 1), 0}};
  return r;
}

std::vector<double> random_values(size_t n, uint64_t seed) {
  Tensor t = Tensor::random({static_cast<int64_t>(n)}, DType::Float32, seed);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = t.at(static_cast<int64_t>(i));
  return v;
}

struct GradCheck {
  double worst = 0;  // the worst |a - n| / (atol + rtol |n|) (<= 1 passes)
  size_t checked = 0;
  std::vector<std::string> params_checked;
};

// Checks every parameter gradient and every float input gradient of `cell` (one float output)
// against central differences. `scale_inputs` multiplies the random inputs (reaching the range of
// ReLU6 and HSwish); `positive` makes them |x| + 0.5.
GradCheck check_gradients(const CellReport& cell, bool training = false, double scale_inputs = 1,
                          size_t samples = 10) {
  GradCheck out;
  if (cell.graph.outputs.size() != 1) {
    ADD_FAILURE() << "the cell has " << cell.graph.outputs.size() << " outputs";
    return out;
  }
  const ValueRef y = cell.graph.outputs.at(0);
  const TensorType yt = cell.graph.nodes[y.node].outputs[y.output];
  int64_t ny = 1;
  for (int64_t d : dims(yt)) ny *= d;
  const std::vector<double> w = random_values(static_cast<size_t>(ny), 99);
  const CellReport lossy = with_linear_loss(cell, w);
  GradOptions go;
  go.input_grads = true;
  const GradResult g = build_backward(lossy, go);
  EXPECT_TRUE(g.ok()) << g.error;
  if (!g.ok()) return out;

  ExecOptions eo;
  eo.seed = 5;
  eo.training = training;
  Executor back(g.grad->report, eo);
  Executor fwd(cell, eo);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < fwd.num_inputs(); ++i) {
    const TensorType t = fwd.input_type(i);
    Tensor x = Tensor::random(dims(t), t.dtype, 100 + i);
    if (x.is_float()) {
      for (int64_t k = 0; k < x.numel(); ++k) x.set(k, x.at(k) * scale_inputs);
    } else {
      for (int64_t k = 0; k < x.numel(); ++k) x.set(k, static_cast<int64_t>(x.at(k)) % 4);
    }
    inputs.push_back(x);
    back.set_input(i, x);
    fwd.set_input(i, x);
  }
  const RunStatus s = back.run();
  EXPECT_EQ(s.kind, RunStatus::Kind::Finished) << s.message;
  if (s.kind != RunStatus::Kind::Finished) return out;
  const std::vector<Tensor> outs = back.outputs();

  auto loss_of_forward = [&]() {
    fwd.reset();
    const RunStatus fs = fwd.run();
    EXPECT_EQ(fs.kind, RunStatus::Kind::Finished) << fs.message;
    const Tensor yv = fwd.outputs().at(0);
    double l = 0;
    for (int64_t k = 0; k < yv.numel(); ++k) l += w[static_cast<size_t>(k)] * yv.at(k);
    return l;
  };
  // The analytic loss equals the forward one (the same graph).
  EXPECT_NEAR(outs[0].at(0), loss_of_forward(), 1e-3 * std::max(1.0, std::fabs(outs[0].at(0))));

  const double eps = 3e-3;
  auto compare = [&](const Tensor& analytic, const std::string& what,
                     const std::function<void(int64_t, double)>& set_delta) {
    double amax = 0;
    for (int64_t k = 0; k < analytic.numel(); ++k) amax = std::max(amax, std::fabs(analytic.at(k)));
    const int64_t n = analytic.numel();
    const int64_t stride = std::max<int64_t>(1, n / static_cast<int64_t>(samples));
    for (int64_t k = (n > 1 ? 1 : 0) % std::max<int64_t>(n, 1); k < n; k += stride) {
      set_delta(k, eps);
      const double lp = loss_of_forward();
      set_delta(k, -eps);
      const double lm = loss_of_forward();
      set_delta(k, 0);
      const double num = (lp - lm) / (2 * eps);
      const double a = analytic.at(k);
      const double tol = 2e-3 * std::max(1.0, amax) + 1e-2 * std::fabs(num);
      out.worst = std::max(out.worst, std::fabs(a - num) / tol);
      ++out.checked;
      EXPECT_LE(std::fabs(a - num), tol)
          << what << " element " << k << ": analytic " << a << ", numeric " << num;
    }
  };

  size_t at = 1;
  for (const auto& entry : g.grad->param_grads) {
    const std::string name = entry.first;
    const Tensor original = fwd.param(name)->value.clone();
    compare(outs.at(at++), "gradient of " + name, [&](int64_t k, double d) {
      Tensor p = original.clone();
      p.set(k, original.at(k) + d);
      fwd.set_param(name, p);
    });
    fwd.set_param(name, original);
    out.params_checked.push_back(name);
  }
  at += g.grad->state_updates.size();
  size_t input_index = 0;
  for (const auto& ig : g.grad->input_grads) {
    const size_t i = input_index++;
    if (!ig) continue;
    const Tensor original = inputs[i];
    compare(outs.at(at++), "gradient of input " + std::to_string(i), [&](int64_t k, double d) {
      Tensor x = original.clone();
      x.set(k, original.at(k) + d);
      fwd.set_input(i, x);
    });
    fwd.set_input(i, original);
  }
  return out;
}

// ---- elementwise arithmetic ---------------------------------------------------------------------

TEST(AutodiffRules, BroadcastingArithmetic) {
  Compiled c = compile("        pass\n",
                       "        p = ops.abs(x) + 0.5\n"
                       "        a = x * y + x / (ops.abs(y) + 2) - y\n"
                       "        b = ops.maximum(x, y) + ops.minimum(x, y * 0.5) - (2.0 - x)\n"
                       "        c = ops.pow(p, 2.5) + ops.pow(p, y) + ops.sqrt(p) + ops.rsqrt(p)\n"
                       "        d = ops.exp(x * 0.3) + ops.log(p) + ops.square(x) + "
                       "ops.reciprocal(p) - ops.neg(x)\n"
                       "        return a + b + c + d + ops.abs(y) * 1.5 / p\n",
                       {f32({2, 3, 4}), f32({3, 1})}, "x, y");
  GradCheck r = check_gradients(c.cell());
  EXPECT_GE(r.checked, 12u);
}

// Operands broadcast whole over leading dims (a mask (1, 1, 4) added to (2, 3, 4) scores),
// subtracted, and multiplied by Python scalars on either side: the gradients the per-operand
// paths of k_binary_grad compute.
TEST(AutodiffRules, RowBroadcastAndScalarOperands) {
  Compiled c = compile("        pass\n",
                       "        a = (x + y) * 0.5 - (y - x) * x\n"
                       "        b = 1.5 * (x - z) + z * x + (y * x) * y\n"
                       "        return a + b * ops.abs(x)\n",
                       {f32({2, 3, 4}), f32({1, 1, 4}), f32({4})}, "x, y, z");
  GradCheck r = check_gradients(c.cell());
  EXPECT_GE(r.checked, 3u);
}

// ops.L2Normalize along the last axis and on a middle axis: L2NormalizeGrad against finite
// differences. (Where the norm is clamped to sqrt(epsilon), MindSpore's L2NormalizeGrad is not
// the derivative, and Cellscope follows MindSpore: tests/mindspore/test_gradients.py.)
TEST(AutodiffRules, L2NormalizeAlongAnAxis) {
  Compiled c = compile(
      "        self.l2 = ops.L2Normalize(-1)\n"
      "        self.l2_mid = ops.L2Normalize(1, 1e-6)\n",
      "        a = self.l2(x) * (x + 1.5)\n"
      "        b = self.l2_mid(x * 0.5) * x\n"
      "        return a + b\n",
      {f32({2, 3, 4})});
  GradCheck r = check_gradients(c.cell());
  EXPECT_GE(r.checked, 1u);
}

// Roll (mindspore.numpy.roll over two axes, ops.roll of the flattened tensor): the gradient is
// the incoming one rolled back.
TEST(AutodiffRules, RollRollsTheGradientBack) {
  Compiled c = compile("        pass\n",
                       "        a = ms.numpy.roll(x, (-1, 2), (1, 2)) * (x + 1.5)\n"
                       "        return a + ops.roll(x * x, 5) * 0.5\n",
                       {f32({2, 3, 4})});
  GradCheck r = check_gradients(c.cell());
  EXPECT_GE(r.checked, 1u);
}

TEST(AutodiffRules, Activations) {
  Compiled c = compile(
      "        self.g1 = nn.GELU()\n        self.g2 = nn.GELU(approximate=False)\n"
      "        self.lr = nn.LeakyReLU(0.1)\n        self.elu = nn.ELU()\n"
      "        self.fg = ops.FastGeLU()\n        self.hs = nn.HSigmoid()\n",
      "        a = ops.relu(x) + ops.relu6(x) + ops.sigmoid(x) + ops.tanh(x)\n"
      "        b = self.g1(x) + self.g2(x) + ops.gelu(x, approximate='tanh') + self.fg(x)\n"
      "        c = ops.silu(x) + self.lr(x) + self.elu(x) + ops.softplus(x) + ops.mish(x)\n"
      "        d = ops.hardswish(x) + self.hs(x) + ops.erf(x) + ops.sin(x) + ops.cos(x)\n"
      "        return a + b + c + d\n",
      {f32({4, 6})});
  // Inputs spread to about +-6 so that ReLU6, HSwish and HSigmoid meet their flat parts.
  GradCheck r = check_gradients(c.cell(), false, 3.0, 24);
  EXPECT_GE(r.checked, 20u);
}

TEST(AutodiffRules, CastIdentityAndReshapes) {
  Compiled c = compile("        self.flat = nn.Flatten()\n",
                       "        a = self.flat(x).astype(ms.float32)\n"
                       "        b = ops.reshape(x, (2, 12)) * 2\n"
                       "        e = ops.expand_dims(a, 1).squeeze(1)\n"
                       "        t = ops.transpose(x, (2, 0, 1))\n"
                       "        return e + b + ops.reshape(t * t, (2, 12))\n",
                       {f32({2, 3, 4})});
  check_gradients(c.cell());
}

// ---- layers
// ---------------------------------------------------------------------------------------

TEST(AutodiffRules, DenseWithActivationAndBias) {
  Compiled c = compile(
      "        self.fc1 = nn.Dense(4, 6, activation='tanh')\n"
      "        self.fc2 = nn.Dense(6, 3, has_bias=False, activation='relu')\n"
      "        self.fc3 = nn.Dense(3, 2, activation='gelu')\n",
      "        return self.fc3(self.fc2(self.fc1(x)))\n", {f32({2, 5, 4})});
  GradCheck r = check_gradients(c.cell());
  EXPECT_EQ(r.params_checked.size(), 5u);
}

TEST(AutodiffRules, MatMulAndBatchMatMul) {
  Compiled c = compile(
      "        self.w = Parameter(Tensor(np.ones((4, 5)) * 0.3, ms.float32), name='w')\n"
      "        self.bmm = ops.BatchMatMul(transpose_b=True)\n"
      "        self.mm = ops.MatMul(transpose_a=True)\n",
      "        a = ops.matmul(x, self.w)\n"                   // (2, 3, 5): broadcast batch
      "        b = self.bmm(a, y)\n"                          // (2, 3, 6) with y (2, 6, 5)
      "        m = self.mm(z, z)\n"                           // (3, 3) with z (4, 3)
      "        v = ops.matmul(b, ops.ones(6, ms.float32))\n"  // (2, 3)
      "        return v + ops.matmul(ops.sum(m, 0), self.w[:3, :1].squeeze(1))\n",
      {f32({2, 3, 4}), f32({2, 6, 5}), f32({4, 3})}, "x, y, z");
  GradCheck r = check_gradients(c.cell());
  EXPECT_EQ(r.params_checked, std::vector<std::string>{"w"});
}

TEST(AutodiffRules, Conv2dPadModesStridesDilationGroups) {
  Compiled c = compile(
      "        self.c1 = nn.Conv2d(3, 4, 3, stride=2, pad_mode='pad', padding=1, has_bias=True)\n"
      "        self.c2 = nn.Conv2d(4, 4, 3, pad_mode='same', group=2, dilation=2)\n"
      "        self.c3 = nn.Conv2d(4, 2, 2, pad_mode='valid', has_bias=True)\n"
      "        self.dw = nn.Conv2d(2, 2, 3, pad_mode='same', group=2)\n",
      "        return self.dw(self.c3(self.c2(self.c1(x))))\n", {f32({2, 3, 9, 8})});
  GradCheck r = check_gradients(c.cell());
  EXPECT_EQ(r.params_checked.size(), 6u);
}

TEST(AutodiffRules, Conv1d) {
  Compiled c = compile(
      "        self.c = nn.Conv1d(3, 4, 3, stride=2, pad_mode='pad', padding=1, "
      "has_bias=True)\n",
      "        return self.c(x)\n", {f32({2, 3, 9})});
  check_gradients(c.cell());
}

TEST(AutodiffRules, PoolingAndGlobalMean) {
  Compiled c = compile(
      "        self.mp = nn.MaxPool2d(2, 2)\n"
      "        self.ap = nn.AvgPool2d(3, 1, pad_mode='same')\n"
      "        self.aap = nn.AdaptiveAvgPool2d((2, 3))\n"
      "        self.conv = nn.Conv2d(2, 3, 1, has_bias=True)\n",
      "        h = self.conv(x)\n"
      "        a = self.aap(self.ap(self.mp(h)))\n"
      "        return ops.mean(a, (2, 3)) + ops.mean(h, (2, 3))\n",
      {f32({2, 2, 8, 9})});
  check_gradients(c.cell());
}

TEST(AutodiffRules, AdaptivePools) {
  // ops.interpolate's 'area' mode is adaptive average pooling (AdaptiveAvgPool3D on 5-D input).
  Compiled c = compile(
      "        self.amp = nn.AdaptiveMaxPool2d((3, 2))\n"
      "        self.ap1 = nn.AdaptiveAvgPool1d(3)\n",
      "        a = self.amp(x)\n"  // (2, 2, 3, 2)
      "        b = ops.interpolate(x[:, None], size=(2, 3, 2), mode='area')\n"
      "        d = self.ap1(x[:, :, :6, 0])\n"  // (2, 2, 3)
      "        return a + b[:, 0, :, :, :] * 2 + d[:, :, :, None]\n",
      {f32({2, 2, 7, 5})});
  GradCheck r = check_gradients(c.cell(), false, 1, 30);
  EXPECT_GE(r.checked, 25u);
}

TEST(AutodiffRules, BatchNormInferenceAndTraining) {
  const char* init =
      "        self.conv = nn.Conv2d(2, 3, 3, pad_mode='same', has_bias=True)\n"
      "        self.bn = nn.BatchNorm2d(3)\n"
      "        self.bn1 = nn.BatchNorm1d(4)\n"
      "        self.fc = nn.Dense(3, 4)\n";
  const char* body =
      // Smooth activations: a ReLU kink within a perturbation of a shared parameter (beta moves a
      // whole channel) would spoil the finite differences, not the gradient.
      "        h = ops.tanh(self.bn(self.conv(x)))\n"
      "        return self.bn1(self.fc(ops.mean(h, (2, 3))))\n";
  Compiled c = compile(init, body, {f32({4, 2, 5, 5})});
  check_gradients(c.cell(), false);
  GradCheck r = check_gradients(c.cell(), true);
  // Trainable: conv weight/bias, bn gamma/beta, bn1 gamma/beta, fc weight/bias.
  EXPECT_EQ(r.params_checked.size(), 8u);
}

// nn.BatchNorm2d(momentum=0.9) in training: normalised with the batch's biased variance, moving
// statistics updated as 0.9 * moving + 0.1 * batch (unbiased variance), as MindSpore 2.10 does.
TEST(AutodiffTraining, BatchNormStateUpdatesFollowMindSporeMomentum) {
  Compiled c = compile("        self.bn = nn.BatchNorm2d(2, momentum=0.8)\n",
                       "        return ops.sum(self.bn(x))\n", {f32({3, 2, 2, 2})});
  const GradResult g = build_backward(c.cell());
  ASSERT_TRUE(g.ok()) << g.error;
  ASSERT_EQ(g.grad->state_updates.size(), 2u);
  EXPECT_EQ(g.grad->state_updates[0].first, "bn.moving_mean");
  EXPECT_EQ(g.grad->state_updates[1].first, "bn.moving_variance");
  ExecOptions eo;
  eo.training = true;
  Executor ex(g.grad->report, eo);
  const Tensor x = Tensor::random({3, 2, 2, 2}, DType::Float32, 3);
  ex.set_input(0, x);
  const RunStatus st = ex.run();
  ASSERT_EQ(st.kind, RunStatus::Kind::Finished) << st.message;
  const auto outs = ex.outputs();
  // Outputs: loss, gamma, beta, moving_mean, moving_variance.
  ASSERT_EQ(outs.size(), 5u);
  for (int64_t ch = 0; ch < 2; ++ch) {
    double s = 0, s2 = 0;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t k = 0; k < 4; ++k) s += x.at((b * 2 + ch) * 4 + k);
    const double mean = s / 12;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t k = 0; k < 4; ++k) s2 += std::pow(x.at((b * 2 + ch) * 4 + k) - mean, 2);
    EXPECT_NEAR(outs[3].at(ch), 0.8 * 0 + 0.2 * mean, 1e-6);
    EXPECT_NEAR(outs[4].at(ch), 0.8 * 1 + 0.2 * s2 / 11, 1e-6);
  }
  // sum(bn(x)) in training is sum(beta) * 12 whatever x: d/dgamma = 0, d/dbeta = 12.
  EXPECT_NEAR(outs[1].at(0), 0, 1e-4);
  EXPECT_NEAR(outs[2].at(1), 12, 1e-5);
  // Inference: the statistics stay.
  Executor inf(g.grad->report);
  inf.set_input(0, x);
  ASSERT_EQ(inf.run().kind, RunStatus::Kind::Finished);
  EXPECT_EQ(inf.outputs()[4].at(0), 1.0);
}

TEST(AutodiffRules, LayerNormSoftmaxLogSoftmax) {
  Compiled c = compile(
      "        self.ln = nn.LayerNorm((6,), epsilon=1e-5)\n"
      "        self.sm = nn.Softmax(axis=1)\n"
      "        self.lsm = nn.LogSoftmax()\n",
      "        h = self.ln(x)\n"
      "        return self.sm(h) * 3 + self.lsm(h * 2)\n",
      {f32({2, 3, 6})});
  GradCheck r = check_gradients(c.cell());
  EXPECT_EQ(r.params_checked.size(), 2u);
}

TEST(AutodiffRules, ConcatSplitSliceGatherReductions) {
  Compiled c = compile("        self.emb = nn.Embedding(7, 4)\n",
                       "        e = self.emb(ids)\n"          // (2, 3, 4)
                       "        j = ops.concat((e, x), 1)\n"  // (2, 5, 4)
                       "        p, q = ops.split(j, (2, 3), 1)\n"
                       "        s = j[:, 1:4:2, ::-1] * 2 + p[:, :, 1:3].sum() \n"    // (2, 2, 4)
                       "        g = ops.gather(x, Tensor([1, 0, 1], ms.int32), 1)\n"  // (2, 3, 4)
                       "        m = ops.amax(g, 2, keepdims=True) + ops.amax(q, 1)[:, None, :1]\n"
                       "        return ops.sum(s, 1) + ops.sum(g * m, 1) + q[:, 0]\n",
                       {f32({2, 2, 4}), TensorType{Shape::of({2, 3}), DType::Int32}}, "x, ids");
  GradCheck r = check_gradients(c.cell());
  EXPECT_EQ(r.params_checked, std::vector<std::string>{"emb.embedding_table"});
}

TEST(AutodiffRules, BiasAddAndBroadcastTo) {
  Compiled c = compile(
      "        self.b = Parameter(Tensor(np.ones(3) * 0.1, ms.float32), name='b')\n"
      "        self.add = ops.BiasAdd()\n",
      "        return self.add(x, self.b) * ops.broadcast_to(y, (2, 3, 4))\n",
      {f32({2, 3, 4}), f32({3, 1})}, "x, y");
  GradCheck r = check_gradients(c.cell());
  EXPECT_EQ(r.params_checked, std::vector<std::string>{"b"});
}

// Dropout in training: the backward node regenerates the forward node's mask (same seed), so the
// finite differences, run with the same seed, see the same mask.
TEST(AutodiffRules, DropoutInTraining) {
  Compiled c = compile("        self.fc = nn.Dense(8, 8)\n        self.drop = nn.Dropout(p=0.5)\n",
                       "        return self.drop(self.fc(x))\n", {f32({4, 8})});
  check_gradients(c.cell(), true);
  check_gradients(c.cell(), false);
  // Half the elements (about) are dropped and the rest scaled by 2.
  const GradResult g = build_backward(with_linear_loss(c.cell(), std::vector<double>(32, 1.0)));
  ASSERT_TRUE(g.ok());
  ExecOptions eo;
  eo.training = true;
  eo.seed = 11;
  Executor ex(g.grad->report, eo);
  ex.set_input(0, Tensor::ones({4, 8}));
  ASSERT_EQ(ex.run().kind, RunStatus::Kind::Finished);
  const Tensor* y = ex.value(*ex.find_node("drop"));
  ASSERT_NE(y, nullptr);
  const Tensor* pre = ex.value(*ex.find_node("fc"));
  int zeros = 0;
  for (int64_t k = 0; k < 32; ++k) {
    if (y->at(k) == 0) {
      ++zeros;
    } else {
      EXPECT_NEAR(y->at(k), 2 * pre->at(k), 1e-5);
    }
  }
  EXPECT_GT(zeros, 6);
  EXPECT_LT(zeros, 26);
}

// ---- shape, index and scan operators (issue 17: the rules added for real model code) -----------

TEST(AutodiffRules, TileStackUnstackNarrow) {
  Compiled c =
      compile("        pass\n",
              "        t = ops.tile(x, (2, 1, 2))\n"           // (2, 2, 6)
              "        s = ops.stack((x, y * 2, x * y), 1)\n"  // (2, 3, 3)
              "        a, b = ops.unstack(y, 0)\n"
              "        k = ops.stack((a, b * b), 0)\n"                             // (2, 3)
              "        n = ops.narrow(x, 1, 1, 2) * 2 + ops.narrow(y, 1, 0, 2)\n"  // (2, 2)
              "        return ops.sum(t, 0)[:, 1:4] + ops.sum(s, 1) + k + ops.sum(n)\n",
              {f32({2, 3}), f32({2, 3})}, "x, y");
  GradCheck r = check_gradients(c.cell());
  EXPECT_GE(r.checked, 10u);
}

TEST(AutodiffRules, SelectWhereAndMaskedFill) {
  Compiled c = compile("        pass\n",
                       "        a = ops.where(x > 0, x * 2, y)\n"  // y (3,) broadcast
                       "        b = ops.where(x < 0.3, 0.5, x * x)\n"
                       "        m = ops.masked_fill(x, y > 0, 2.0)\n"
                       "        f = x.masked_fill(x > 0.2, ops.sum(y) * 0.5)\n"
                       "        return a + b + m * 3 + f\n",
                       {f32({2, 3}), f32({3})}, "x, y");
  GradCheck r = check_gradients(c.cell());
  EXPECT_GE(r.checked, 6u);
}

TEST(AutodiffRules, ReduceProd) {
  Compiled c = compile("        pass\n",
                       "        z = ops.where(x > 0.6, 0.0, x)\n"  // some exact zeros
                       "        return ops.prod(x, 1) + ops.prod(z * 1.5, 1) + ops.prod(x, (0, 2), "
                       "True)[0, :3, 0] * 0.1\n",
                       {f32({2, 4, 3})});
  GradCheck r = check_gradients(c.cell(), false, 1, 24);
  EXPECT_GE(r.checked, 20u);
}

TEST(AutodiffRules, StdAndVar) {
  Compiled c =
      compile("        pass\n",
              "        a = ops.std(x, 1, ddof=1, keepdims=True) + ops.var(x, 1)[:, None, :]\n"
              "        return a * 2 + ops.var(x, (0, 2), ddof=0, keepdims=True) + "
              "x.std(axis=2, keepdims=True)\n",
              {f32({2, 4, 5})});
  GradCheck r = check_gradients(c.cell());
  EXPECT_GE(r.checked, 8u);
}

TEST(AutodiffRules, CumSumAndLogSumExp) {
  Compiled c = compile("        self.fc = nn.Dense(4, 4)\n",
                       "        h = self.fc(x)\n"
                       "        return ops.cumsum(h, 1) + ops.cumsum(h * h, 0) + "
                       "ops.logsumexp(h, 1, keepdim=True)\n",
                       {f32({3, 4})});
  GradCheck r = check_gradients(c.cell());
  EXPECT_EQ(r.params_checked.size(), 2u);
}

TEST(AutodiffRules, PadEveryMode) {
  Compiled c = compile(
      "        self.p1 = nn.Pad(paddings=((0, 0), (1, 2), (2, 1)), mode='REFLECT')\n"
      "        self.p2 = nn.Pad(paddings=((0, 0), (2, 1), (1, 2)), mode='SYMMETRIC')\n"
      "        self.p3 = nn.Pad(paddings=((1, 0), (1, 2), (1, 2)))\n",
      "        a = self.p1(x) + self.p2(x) + self.p3(x)[1:, :, :]\n"        // (2, 6, 7)
      "        b = ops.pad(x, (2, 2, 1, 2), mode='replicate')\n"            // (2, 6, 8)
      "        d = ops.pad(x, (1, 3, 2, 1), mode='circular')\n"             // (2, 6, 8)
      "        e = ops.pad(x, (1, 1, 1, 2), mode='constant', value=1.5)\n"  // (2, 6, 6)
      "        return a[:, :, :6] * b[:, :, 1:7] + d[:, :, :6] + e * e\n",
      {f32({2, 3, 4})});
  GradCheck r = check_gradients(c.cell(), false, 1, 24);
  EXPECT_GE(r.checked, 20u);
}

// ops.Mod truncates, but MindSpore 2.10 differentiates it as FloorMod (-floor(x / y) for y, see
// k_binary_grad): the finite differences agree where the quotient is positive, as here.
TEST(AutodiffRules, FloorModModAndOperatorsWithoutGradient) {
  Compiled c = compile("        pass\n",
                       "        p = ops.abs(y) + 0.7\n"
                       "        a = ops.remainder(x, p) + ops.Mod()(ops.abs(x) * 1.3, p)\n"
                       "        z = ops.floor(x) + ops.round(x * 3) + ops.sign(x) * x\n"
                       "        return a + z + ops.floor_div(x, p) * x\n",
                       {f32({3, 4}), f32({3, 4})}, "x, y");
  check_gradients(c.cell());
}

TEST(AutodiffRules, ResizeNearestLinearBicubic) {
  Compiled c =
      compile("        self.rn = ops.ResizeNearestNeighbor((7, 9))\n",
              "        a = ops.interpolate(x, size=(7, 9), mode='nearest')\n"
              "        b = ops.interpolate(x, size=(6, 7), mode='bilinear', align_corners=True)\n"
              "        d = ops.interpolate(x, size=(3, 8), mode='bilinear')\n"
              "        e = ops.interpolate(x, size=(6, 9), mode='bicubic')\n"
              "        f = ops.interpolate(x[:, :, 0], size=7, mode='linear')\n"
              "        g = self.rn(x * x)\n"
              "        return ops.concat((a.reshape(2, -1), b.reshape(2, -1), d.reshape(2, -1), "
              "e.reshape(2, -1), f.reshape(2, -1), g.reshape(2, -1)), 1)\n",
              {f32({2, 2, 4, 5})});
  GradCheck r = check_gradients(c.cell(), false, 1, 30);
  EXPECT_GE(r.checked, 25u);
}

TEST(AutodiffRules, ExtremaWithIndicesTopKClampPReLUSoftmin) {
  Compiled c = compile(
      "        self.am = ops.ArgMaxWithValue(axis=1, keep_dims=True)\n"
      "        self.pr = nn.PReLU(3, 0.2)\n"
      "        self.sm = nn.Softmin(axis=-1)\n",
      "        v, i = ops.max(x, 1)\n"        // (2, 4)
      "        w, j = ops.min(x, 2, True)\n"  // (2, 3, 1)
      "        k, v2 = self.am(x)\n"          // (2, 1, 4)
      "        t, _ = ops.topk(x, 2)\n"       // (2, 3, 2)
      "        m, _ = x.max(0)\n"             // (3, 4)
      "        a = ops.clamp(x, -0.3, 0.4) + self.pr(x) + self.sm(x) * 2\n"
      "        return a + v[:, None, :] + w + v2 * 0.5 + ops.sum(t, 2, True) + m\n",
      {f32({2, 3, 4})});
  GradCheck r = check_gradients(c.cell(), false, 1, 24);
  EXPECT_EQ(r.params_checked, std::vector<std::string>{"pr.w"});
}

// ---- layers (issue 17)
// ---------------------------------------------------------------------------

TEST(AutodiffRules, GroupNorm) {
  Compiled c = compile(
      "        self.conv = nn.Conv2d(2, 6, 3, pad_mode='same', has_bias=True)\n"
      "        self.gn = nn.GroupNorm(3, 6)\n"
      "        self.gn1 = nn.GroupNorm(1, 6, affine=False)\n",
      "        return self.gn1(ops.tanh(self.gn(self.conv(x))))\n", {f32({2, 2, 4, 3})});
  GradCheck r = check_gradients(c.cell());
  // conv weight and bias, gn gamma and beta (gn1 without affine has no trainable parameters).
  EXPECT_EQ(r.params_checked.size(), 4u);
}

TEST(AutodiffRules, Conv2dTranspose) {
  Compiled c = compile(
      "        self.t1 = nn.Conv2dTranspose(3, 4, 3, stride=2, pad_mode='same', has_bias=True)\n"
      "        self.t2 = nn.Conv2dTranspose(4, 2, 2, stride=1, pad_mode='valid', dilation=2)\n"
      "        self.t3 = nn.Conv2dTranspose(2, 4, 3, stride=2, pad_mode='pad', padding=1, "
      "group=2, has_bias=True)\n",
      "        return self.t3(self.t2(self.t1(x)))\n", {f32({2, 3, 3, 4})});
  GradCheck r = check_gradients(c.cell());
  EXPECT_EQ(r.params_checked.size(), 5u);
}

// Recurrent layers: RecurrentGrad (backward through time) against central differences of the
// forward kernel, with every output (y, h_n, c_n) reaching the loss, two layers, both
// directions, batch_first both ways, an initial state as an input and the relu RNN.
TEST(AutodiffRules, LstmTwoLayersBidirectional) {
  Compiled c = compile(
      "        self.lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)\n",
      "        y, (h, s) = self.lstm(x)\n"
      "        return ops.concat((y.reshape(2, -1), h.reshape(2, -1), s.reshape(2, -1)), 1)\n",
      {f32({2, 5, 3})});
  GradCheck r = check_gradients(c.cell(), false, 1, 12);
  EXPECT_EQ(r.params_checked.size(), 16u);
  EXPECT_GE(r.checked, 16u * 12u);
}

TEST(AutodiffRules, LstmWithInitialStateSequenceMajor) {
  Compiled c = compile("        self.lstm = nn.LSTM(3, 5, has_bias=True)\n",
                       "        y, (h, s) = self.lstm(x, (h0, c0))\n"
                       "        return y * 2.0\n",
                       {f32({4, 2, 3}), f32({1, 2, 5}), f32({1, 2, 5})}, "x, h0, c0");
  GradCheck r = check_gradients(c.cell(), false, 1, 12);
  EXPECT_EQ(r.params_checked.size(), 4u);
}

TEST(AutodiffRules, GruBidirectionalWithInitialState) {
  Compiled c = compile(
      "        self.gru = nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True)\n",
      "        y, h = self.gru(x, h0)\n"
      "        return ops.concat((y.reshape(2, -1), h.reshape(2, -1)), 1)\n",
      {f32({2, 4, 3}), f32({4, 2, 4})}, "x, h0");
  GradCheck r = check_gradients(c.cell(), false, 1, 12);
  EXPECT_EQ(r.params_checked.size(), 16u);
}

TEST(AutodiffRules, RnnTanhAndReluWithoutBias) {
  Compiled c = compile(
      "        self.r1 = nn.RNN(3, 4, num_layers=2)\n"
      "        self.r2 = nn.RNN(4, 3, nonlinearity='relu', has_bias=False, bidirectional=True)\n",
      "        y, h = self.r1(x)\n"
      "        z, k = self.r2(y)\n"
      "        return z.sum(2) + k.sum(0).sum(1)\n",
      {f32({5, 2, 3})});
  GradCheck r = check_gradients(c.cell(), false, 1, 12);
  EXPECT_EQ(r.params_checked.size(), 12u);
}

// nn.MultiheadAttention: packed in_proj_weight (self-attention: the three inputs are one value,
// their gradients summed) and separate q/k/v projections (kdim, vdim), batch_first both ways,
// the attention weights averaged and per head reaching the loss, without biases; sa applied again
// with need_weights=False (a 1-tuple, as MindSpore 2.10 returns), its parameters' gradients summed
// over both calls.
TEST(AutodiffRules, MultiheadAttentionSelfAndCross) {
  Compiled c = compile(
      "        self.sa = nn.MultiheadAttention(8, 2)\n"
      "        self.ca = nn.MultiheadAttention(8, 4, kdim=6, vdim=5, batch_first=True, "
      "has_bias=False)\n",
      "        y, w = self.sa(x, x, x)\n"
      "        z, u = self.ca(ops.transpose(y, (1, 0, 2)), k, v, average_attn_weights=False)\n"
      "        o = self.sa(x, x, x, need_weights=False)[0]\n"
      "        return z.sum(2) + u.sum(3).sum(1) + w.sum(2) * 0.5 + o.sum(2).transpose(1, 0)\n",
      {f32({3, 2, 8}), f32({2, 4, 6}), f32({2, 4, 5})}, "x, k, v");
  GradCheck r = check_gradients(c.cell(), false, 1, 12);
  // sa: in_proj_weight/bias, out_proj weight/bias; ca: q/k/v_proj_weight, out_proj.weight.
  EXPECT_EQ(r.params_checked.size(), 8u);
  EXPECT_GE(r.checked, 8u * 12u);
}

// ops.norm (2-norm over all or some dims, ord 1, 3, inf, -inf, 0 with keepdim) and ops.LpNorm.
// The inputs are random, so no |x| ties and no zero: the kinks are checked against MindSpore
// (tests/mindspore/test_gradients.py) and below.
TEST(AutodiffRules, NormAndLpNorm) {
  Compiled c = compile(
      "        self.lp = ops.LpNorm(axis=[0, 2], p=3)\n"
      "        self.lp1 = ops.LpNorm(axis=1, p=1, keep_dims=True)\n",
      "        a = ops.norm(x, 1, dim=1) + x.norm(dim=(0, 2)).sum() + ops.norm(x)\n"
      "        b = self.lp(x).sum() + ops.norm(x, float('inf'), dim=-1, "
      "keepdim=True).sum(2)\n"
      "        d = ops.norm(x, float('-inf'), dim=0) * ops.norm(x, 3, dim=0) + "
      "ops.norm(x, 0, dim=0)\n"
      "        return a + b + d + self.lp1(x).squeeze(1) + ops.norm(x, 2, dim=2)\n",
      {f32({4, 4, 4})});
  GradCheck r = check_gradients(c.cell(), false, 1, 24);
  EXPECT_GE(r.checked, 24u);
}

// At the kinks MindSpore's subgradients: a zero norm gives 0, ties of |x| under inf give all of
// the gradient to the first, sign(0) = 0 for ord 1.
TEST(AutodiffRules, NormSubgradientsAtZeroAndTies) {
  Compiled c =
      compile("        self.lp = ops.LpNorm(axis=1, p=2)\n",
              "        w = ops.norm(x, 2, dim=1) + ops.norm(x, float('inf'), dim=1) * 2.0\n"
              "        return w + ops.norm(x, 1, dim=1) * 3.0 + self.lp(x) * 4.0\n",
              {f32({2, 3})});
  GradOptions go;
  go.input_grads = true;
  const GradResult g =
      build_backward(with_linear_loss(c.cell(), std::vector<double>{1.0, 1.0}), go);
  ASSERT_TRUE(g.ok()) << g.error;
  Executor ex(g.grad->report);
  Tensor x({2, 3}, DType::Float32);
  const std::vector<double> xv = {0, 0, 0, 1, -3, 3};
  for (int64_t i = 0; i < 6; ++i) x.set(i, xv[static_cast<size_t>(i)]);
  ex.set_input(0, x);
  ASSERT_EQ(ex.run().kind, RunStatus::Kind::Finished);
  const Tensor dx = ex.outputs().back();
  // Row 0: every norm is 0, every gradient 0. Row 1 (norm 2: sqrt(19)): x/|x|_2 (1 + 4) from
  // the 2-norms, 2 sign(x) at the first |x| = 3 (index 1), 3 sign(x) everywhere.
  const double n2 = std::sqrt(19.0);
  const std::vector<double> want = {0, 0, 0, 5 / n2 + 3, -15 / n2 - 2 - 3, 15 / n2 + 3};
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_NEAR(dx.at(i), want[static_cast<size_t>(i)], 1e-5) << "element " << i;
}

// nn.Conv3d: every pad_mode, strides, dilation, groups, with and without bias.
TEST(AutodiffRules, Conv3dPadModesStridesDilationGroups) {
  Compiled c = compile(
      "        self.c1 = nn.Conv3d(2, 4, 3, stride=2, pad_mode='pad', padding=1, has_bias=True)\n"
      "        self.c2 = nn.Conv3d(4, 4, (2, 3, 1), pad_mode='same', group=2, dilation=(1, 2, 1))\n"
      "        self.c3 = nn.Conv3d(4, 2, 2, pad_mode='valid', has_bias=True)\n",
      "        return self.c3(ops.tanh(self.c2(self.c1(x))))\n", {f32({2, 2, 5, 6, 5})});
  GradCheck r = check_gradients(c.cell(), false, 1, 16);
  EXPECT_EQ(r.params_checked.size(), 5u);
  EXPECT_GE(r.checked, 60u);  // the biases have 4 and 2 elements
}

// Merge (the join of an `if` on a tensor): the gradient goes to the branch the condition took
// at run time, the other branch's parameters get zeros (their numeric gradient is 0 too), and a
// value an `if` leaves unchanged gets the whole gradient either way.
TEST(AutodiffRules, MergeRoutesToTheTakenBranch) {
  Compiled c = compile(
      "        self.a = nn.Dense(4, 3)\n        self.b = nn.Dense(4, 3)\n"
      "        self.c = nn.Dense(4, 3)\n        self.d = nn.Dense(4, 3)\n",
      "        if ops.sum(x) > -1000.0:\n"
      "            h = self.a(x)\n"
      "        else:\n"
      "            h = self.b(x)\n"
      "        if ops.sum(x) < -1000.0:\n"
      "            k = self.c(x)\n"
      "        else:\n"
      "            k = ops.tanh(self.d(x))\n"
      "        y = h * 2.0\n"
      "        if ops.mean(x) > 1000.0:\n"
      "            y = y + 1.0\n"
      "        return y + k\n",
      {f32({2, 4})});
  size_t merges = 0;
  for (const Node& n : c.cell().graph.nodes) merges += n.op == "Merge" ? 1 : 0;
  EXPECT_EQ(merges, 3u);
  GradCheck r = check_gradients(c.cell());
  EXPECT_EQ(r.params_checked.size(), 8u);
}

// ---- the gradient graph
// --------------------------------------------------------------------------

TEST(AutodiffGraph, OutputsOriginsAndUnusedParameters) {
  Compiled c = compile(
      "        self.fc1 = nn.Dense(4, 3)\n        self.fc2 = nn.Dense(4, 3)\n"
      "        self.unused = nn.Dense(2, 2)\n",
      "        h = self.fc1(x)\n        k = self.fc2(x)\n"
      "        return ops.mean(h * h) + ops.mean(ops.argmax(k, 1).astype(ms.float32))\n",
      {f32({2, 4})});
  const GradResult g = build_backward(c.cell());
  ASSERT_TRUE(g.ok()) << g.error;
  const auto& gg = *g.grad;
  std::vector<std::string> names;
  for (const auto& [n, _] : gg.param_grads) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias"}));
  // fc2 reaches the loss only through an integer argmax: no gradient flows, as in MindSpore.
  EXPECT_EQ(gg.unused_params,
            (std::vector<std::string>{"fc2.weight", "fc2.bias", "unused.weight", "unused.bias"}));
  EXPECT_EQ(gg.forward_count, c.cell().graph.nodes.size());
  ASSERT_EQ(gg.origin.size(), gg.report.graph.nodes.size() - gg.forward_count);
  for (size_t i = 0; i < gg.origin.size(); ++i) {
    const Node& b = gg.report.graph.nodes[gg.forward_count + i];
    const Node& f = gg.report.graph.nodes[gg.origin[i]];
    EXPECT_TRUE(b.id.starts_with(f.id + "/grad/")) << b.id;
    EXPECT_EQ(b.range.start.line, f.range.start.line);
    const OpDef* d = find_op(b.op);
    ASSERT_NE(d, nullptr) << b.op;
    EXPECT_NE(d->kernel, nullptr) << b.op;
  }
  ASSERT_EQ(gg.report.graph.outputs.size(), 3u);
  EXPECT_EQ(gg.report.outputs[1].name, "grad:fc1.weight");
  EXPECT_EQ(gg.report.graph.outputs[0], c.cell().graph.outputs[0]);
  // Backward operators are marked so.
  EXPECT_TRUE(find_op("Conv2DGrad")->backward);
  EXPECT_FALSE(find_op("Conv2D")->backward);
}

TEST(AutodiffGraph, SharedValuesSumTheirContributions) {
  // x feeds three consumers and fc is applied twice: contributions are summed (Add nodes).
  Compiled c = compile("        self.fc = nn.Dense(3, 3)\n",
                       "        return ops.sum(self.fc(self.fc(x)) * x + x)\n", {f32({2, 3})});
  const GradResult g = build_backward(c.cell());
  ASSERT_TRUE(g.ok()) << g.error;
  size_t adds = 0;
  for (size_t i = g.grad->forward_count; i < g.grad->report.graph.nodes.size(); ++i)
    adds += g.grad->report.graph.nodes[i].op == "Add" ? 1 : 0;
  EXPECT_GE(adds, 2u);
  Compiled c2 = compile("        self.fc = nn.Dense(3, 3)\n",
                        "        return self.fc(self.fc(x)) * x + x\n", {f32({2, 3})});
  check_gradients(c2.cell());
}

TEST(AutodiffGraph, SelectedParametersOnly) {
  Compiled c = compile("        self.fc1 = nn.Dense(4, 3)\n        self.fc2 = nn.Dense(3, 1)\n",
                       "        return ops.sum(self.fc2(self.fc1(x)))\n", {f32({2, 4})});
  GradOptions o;
  o.params = {"fc2.weight"};
  const GradResult g = build_backward(c.cell(), o);
  ASSERT_TRUE(g.ok()) << g.error;
  ASSERT_EQ(g.grad->param_grads.size(), 1u);
  EXPECT_EQ(g.grad->param_grads[0].first, "fc2.weight");
  o.params = {"nope"};
  const GradResult bad = build_backward(c.cell(), o);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("'nope' is not a parameter"), std::string::npos) << bad.error;
}

// Every forward operator with a CPU kernel has a gradient rule (a zero rule, g_no_gradient, for
// the ones MindSpore does not differentiate), except those listed here: build_backward names them
// when one lies on the path to a loss. A new operator without a rule fails this test until it gets
// one or is listed (with the reason).
// L2Normalize: its forward row came with mindcv's edgenext export (issue 18); the gradient
// (dy - y * sum(dy * y)) / norm, with the epsilon branch, is not written yet.
const std::set<std::string, std::less<>> kNoRuleYet = {};

TEST(AutodiffCoverage, EveryForwardOperatorHasARuleOrIsAKnownGap) {
  std::vector<std::string> missing;
  for (const OpDef& d : all_ops()) {
    if (d.backward || d.pass_only || d.kernel == nullptr || d.grad != nullptr) continue;
    missing.emplace_back(d.name);
  }
  std::vector<std::string> listed(kNoRuleYet.begin(), kNoRuleYet.end());
  EXPECT_EQ(missing, listed) << "an operator gained a rule (remove it from kNoRuleYet) or a new "
                                "operator has none (add a rule, or list it)";
  for (const std::string& op : listed) EXPECT_NE(find_op(op), nullptr) << op;
}

// ---- errors
// ----------------------------------------------------------------------------------------

TEST(AutodiffErrors, NodeWithoutRuleIsNamedWithItsLine) {
  Compiled c = compile("        self.fc = nn.Dense(4, 3)\n",
                       "        h = self.fc(x)\n"
                       "        return ops.sum(ops.norm(h, dim=1))\n",
                       {f32({2, 4})});
  // Every operator with a CPU kernel has a rule now: the norm's node is relabelled as ops.Custom
  // (a user kernel: no rule), its shapes kept.
  CellReport cell = c.cell();
  size_t relabelled = 0;
  for (Node& n : cell.graph.nodes) {
    if (n.op == "Norm") {
      n.op = "Custom";
      ++relabelled;
    }
  }
  ASSERT_EQ(relabelled, 1u);
  const GradResult g = build_backward(cell);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error.find("operator Custom has no gradient rule"), std::string::npos) << g.error;
  EXPECT_NE(g.error.find("net.py:13"), std::string::npos) << g.error;
  ASSERT_TRUE(g.error_node.has_value());
  EXPECT_EQ(cell.graph.nodes[*g.error_node].op, "Custom");
}

// What the new layers' rules refuse (what the runtime's forward does not run either), located.
TEST(AutodiffErrors, RulesRefuseMasksAndMatrixNorms) {
  Compiled mha = compile("        self.sa = nn.MultiheadAttention(8, 2)\n",
                         "        y, w = self.sa(x, x, x, attn_mask=m)\n"
                         "        return ops.sum(y)\n",
                         {f32({3, 2, 8}), f32({3, 3})}, "x, m");
  GradResult g = build_backward(mha.cell());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error.find("attn_mask"), std::string::npos) << g.error;
  EXPECT_NE(g.error.find("net.py:12"), std::string::npos) << g.error;
  Compiled nuc = compile("        self.fc = nn.Dense(4, 3)\n",
                         "        return ops.norm(self.fc(x), 'nuc')\n", {f32({2, 4})});
  g = build_backward(nuc.cell());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error.find("nuclear norm"), std::string::npos) << g.error;
}

TEST(AutodiffErrors, LossMustBeAFloatScalar) {
  Compiled vec =
      compile("        self.fc = nn.Dense(4, 3)\n", "        return self.fc(x)\n", {f32({2, 4})});
  GradResult g = build_backward(vec.cell());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error.find("must be a scalar"), std::string::npos) << g.error;
  EXPECT_NE(g.error.find("(2, 3)"), std::string::npos) << g.error;

  Compiled ints =
      compile("        self.fc = nn.Dense(4, 3)\n",
              "        return ops.argmax(ops.sum(self.fc(x)).reshape(1))\n", {f32({2, 4})});
  g = build_backward(ints.cell());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error.find("only a float loss"), std::string::npos) << g.error;

  Compiled two =
      compile("        self.fc = nn.Dense(4, 3)\n",
              "        h = self.fc(x)\n        return h.sum(), h.mean()\n", {f32({2, 4})});
  g = build_backward(two.cell());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error.find("returns 2 values"), std::string::npos) << g.error;
}

TEST(AutodiffErrors, UnknownShapes) {
  // No input shape given: the batch dimension is symbolic.
  Compiled c =
      compile("        self.fc = nn.Dense(4, 3)\n", "        return ops.sum(self.fc(x))\n", {});
  const GradResult g = build_backward(c.cell());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error.find("unknown shape"), std::string::npos) << g.error;
}

TEST(AutodiffErrors, UncompiledCell) {
  CellReport r;
  r.name = "Broken";
  const GradResult g = build_backward(r);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error.find("was not compiled"), std::string::npos);
}

}  // namespace
}  // namespace graphcore
