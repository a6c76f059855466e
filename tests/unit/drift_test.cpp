// graphcore/drift.h: the numeric rules of the precision drift (fp16 rounding and overflow,
// cosine; int8's are tests/unit/quant_test.cpp's) on values worked out from the IEEE 754 binary16
// format and the formulas of docs/precision.md, and measure_drift end to end on a small training
// plan. tests/training/check_drift.py recomputes a whole report independently in numpy.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graphcore/analysis.h"
#include "graphcore/drift.h"
#include "temp_dir.h"

namespace rt = graphcore::runtime;
using rt::Tensor;

// binary16: 10 fraction bits, largest finite 65504 (= (2 - 2^-10) * 2^15), smallest subnormal
// 2^-24; round to nearest, ties to even.
TEST(Drift, Fp16RoundingOverflowAndSubnormals) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(rt::round_to_half(65504.0f), 65504.0f);
  // 65520 is the midpoint between 65504 (odd fraction) and 2^16: ties go to the even one, inf.
  EXPECT_EQ(rt::round_to_half(65519.99f), 65504.0f);
  EXPECT_EQ(rt::round_to_half(65520.0f), inf);
  EXPECT_EQ(rt::round_to_half(-70000.0f), -inf);
  // Ties to even at 1: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(rt::round_to_half(1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(rt::round_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  // Subnormals: multiples of 2^-24; half of the smallest rounds to 0 (even), 1.5 of it to 2.
  const float tiny = std::ldexp(1.0f, -24);
  EXPECT_EQ(rt::round_to_half(tiny), tiny);
  EXPECT_EQ(rt::round_to_half(tiny / 2), 0.0f);
  EXPECT_EQ(rt::round_to_half(tiny * 0.75f), tiny);
  EXPECT_EQ(rt::round_to_half(tiny * 1.5f), 2 * tiny);
  EXPECT_EQ(rt::round_to_half(tiny * 5.25f), 5 * tiny);

  // The overflow count is what rounding makes inf, not values already inf or NaN.
  Tensor t =
      Tensor::from_floats({7}, {65504.0f, 65519.0f, 65520.0f, -70000.0f, inf, std::nanf(""), 1.0f});
  EXPECT_EQ(rt::drift::count_fp16_overflows(t), 2);
  rt::round_to_half(t);
  EXPECT_EQ(rt::drift::count_fp16_overflows(t), 0);
}

TEST(Drift, Cosine) {
  Tensor a = Tensor::from_floats({4}, {1.0f, -2.0f, 3.0f, 0.5f});
  Tensor neg = Tensor::from_floats({4}, {-1.0f, 2.0f, -3.0f, -0.5f});
  Tensor zero = Tensor::zeros({4});
  EXPECT_EQ(rt::drift::cosine(a, a), 1.0);
  EXPECT_NEAR(rt::drift::cosine(a, neg), -1.0, 1e-15);
  EXPECT_EQ(rt::drift::cosine(zero, zero), 1.0);
  EXPECT_EQ(rt::drift::cosine(a, zero), 0.0);
  Tensor inf =
      Tensor::from_floats({4}, {1.0f, -2.0f, std::numeric_limits<float>::infinity(), 0.5f});
  EXPECT_EQ(rt::drift::cosine(a, inf), 0.0);
}

namespace {

// A small classifier on .npy data the test writes: Dense -> ReLU -> Dense, NumpySlicesDataset.
struct SmallPlan {
  cellscope::testing::TempDir dir;
  graphcore::AnalysisResult result;
  const graphcore::TrainingPlan* plan = nullptr;

  SmallPlan() {
    const std::string script = R"(
import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(6, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(16, 3)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))

features = np.load("./data/x.npy")
labels = np.load("./data/y.npy")
dataset = ds.NumpySlicesDataset((features, labels), column_names=["x", "y"], shuffle=False)
dataset = dataset.batch(8, drop_remainder=True)
net = Net()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
model = ms.train.Model(net, loss, opt)
model.train(1, dataset)
)";
    const std::string file = dir.write("train.py", script);
    std::filesystem::create_directories(dir.path() / "data");
    Tensor x = Tensor::random({40, 6}, graphcore::DType::Float32, 5);
    std::vector<int64_t> y(40);
    for (size_t i = 0; i < y.size(); ++i) y[i] = x.at(static_cast<int64_t>(i) * 6) > 0 ? 1 : 2;
    rt::write_npy(dir.path() / "data/x.npy", x);
    rt::write_npy(dir.path() / "data/y.npy", Tensor::from_ints({40}, y, graphcore::DType::Int32));
    graphcore::DiskSourceProvider disk;
    graphcore::AnalysisOptions opts;
    opts.constant_values = true;
    result = graphcore::analyze_file(file, opts, disk);
    if (result.training.size() == 1) plan = &result.training[0];
  }
};

// Parameters of the plan's network from a seed, as a checkpoint would hold them.
std::vector<rt::CheckpointTensor> weights(const graphcore::TrainingPlan& plan) {
  rt::ExecOptions eo;
  eo.seed = 3;
  rt::Executor ex(plan.loss_graph, eo);
  std::vector<rt::CheckpointTensor> r;
  for (const rt::ParamState& p : ex.params()) {
    rt::CheckpointTensor e;
    e.name = p.name;
    e.value = p.value;
    e.shape = p.value.shape();
    r.push_back(e);
  }
  rt::CheckpointTensor stray;  // not a parameter: ignored, as the optimizer's moments are
  stray.name = "moments.fc1.weight";
  stray.value = Tensor::zeros({2});
  r.push_back(stray);
  return r;
}

}  // namespace

TEST(Drift, MeasureDriftEndToEnd) {
  SmallPlan s;
  ASSERT_NE(s.plan, nullptr);
  ASSERT_TRUE(s.plan->loss_graph.compiled);
  const auto w = weights(*s.plan);

  rt::DriftOptions o;
  o.precision = rt::EvalPrecision::Fp32;
  o.eval_batches = 2;
  rt::DriftReport fp32 = rt::measure_drift(*s.plan, w, o);
  ASSERT_EQ(fp32.layers.size(), 3u);  // fc1, relu, fc2: the loss is not the network
  EXPECT_EQ(fp32.layers[0].node, "fc1");
  EXPECT_EQ(fp32.layers[2].node, "fc2");
  EXPECT_EQ(fp32.logits, "fc2");
  EXPECT_EQ(fp32.layers[0].line, 15);  // the call in construct
  for (const auto& d : fp32.layers) {
    EXPECT_EQ(d.max_abs, 0) << d.node;
    EXPECT_EQ(d.cosine, 1) << d.node;
  }
  EXPECT_TRUE(fp32.first_below.empty());
  EXPECT_EQ(fp32.top1_agreement, 1.0);
  EXPECT_EQ(fp32.samples, 16);
  ASSERT_TRUE(fp32.accuracy_fp32 && fp32.accuracy_precision);
  EXPECT_EQ(*fp32.accuracy_fp32, *fp32.accuracy_precision);

  o.precision = rt::EvalPrecision::Target;
  rt::DriftReport target = rt::measure_drift(*s.plan, w, o);
  ASSERT_EQ(target.layers.size(), 3u);
  EXPECT_GT(target.layers[0].max_abs, 0);
  // fp16 keeps ~3 decimal digits, but an output near zero (a sum that cancels) is compared
  // with the guard 1e-3 * max|r|, where the inputs' rounding can reach several percent.
  EXPECT_GT(target.layers[0].max_rel, 0);
  EXPECT_LT(target.layers[0].max_rel, 1.0);
  EXPECT_GT(target.layers[0].cosine, 0.9999);
  EXPECT_LT(target.layers[0].cosine, 1.0 + 1e-12);
  EXPECT_EQ(target.layers[0].fp16_overflows, 0);
  EXPECT_FALSE(target.layers[0].quantized);

  o.precision = rt::EvalPrecision::Int8;
  o.calibration_batches = 2;
  o.eval_batches = 10;  // more than the 5 - 2 batches left: a note, not an error
  rt::DriftReport int8 = rt::measure_drift(*s.plan, w, o);
  ASSERT_EQ(int8.layers.size(), 3u);
  EXPECT_TRUE(int8.layers[0].quantized);
  EXPECT_FALSE(int8.layers[1].quantized);
  EXPECT_TRUE(int8.layers[2].quantized);
  EXPECT_GT(int8.layers[0].max_abs, target.layers[0].max_abs);  // int8 is coarser than fp16
  EXPECT_EQ(int8.batches, 3);
  EXPECT_EQ(int8.calibration_samples, 16);
  EXPECT_FALSE(int8.notes.empty());
  // A threshold above every cosine names the first layer.
  o.cosine_threshold = 1.5;
  EXPECT_EQ(rt::measure_drift(*s.plan, w, o).first_below, "fc1");
  const std::string table = rt::drift_table_text(int8);
  EXPECT_NE(table.find("fc1"), std::string::npos) << table;
  EXPECT_NE(table.find("top-1 agreement"), std::string::npos) << table;

  // Weights that push fc1's outputs past fp16's range: counted as overflows, inf in the target
  // run where float32 is finite, so the layer's cosine is 0 and it is the first below.
  auto big = w;
  for (auto& e : big) {
    if (e.name != "fc1.weight") continue;
    Tensor scaled = e.value.clone();
    for (int64_t i = 0; i < scaled.numel(); ++i)
      scaled.set(i, scaled.at(i) * 1e5);  // |w| < 0.5: still finite in fp16
    e.value = scaled;
  }
  o.precision = rt::EvalPrecision::Target;
  o.cosine_threshold = 0.99;
  o.eval_batches = 1;
  rt::DriftReport over = rt::measure_drift(*s.plan, big, o);
  ASSERT_EQ(over.layers.size(), 3u);
  EXPECT_GT(over.layers[0].fp16_overflows, 0);
  EXPECT_EQ(over.layers[0].nonfinite, over.layers[0].fp16_overflows);
  EXPECT_EQ(over.layers[0].cosine, 0);
  EXPECT_TRUE(std::isinf(over.layers[0].max_abs));
  EXPECT_EQ(over.first_below, "fc1");
  EXPECT_EQ(fp32.layers[0].fp16_overflows, 0);

  // Weights without the network's parameters: they keep their initializers, with a note.
  rt::DriftReport none = rt::measure_drift(*s.plan, {}, o);
  bool noted = false;
  for (const auto& n : none.notes)
    noted = noted || n.find("keep their initializer") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Drift, ClearErrors) {
  SmallPlan s;
  ASSERT_NE(s.plan, nullptr);
  rt::DriftOptions o;
  o.eval_batches = 0;
  EXPECT_THROW(rt::measure_drift(*s.plan, {}, o), rt::RuntimeError);
  graphcore::TrainingPlan no_data = *s.plan;
  no_data.dataset.reset();
  o.eval_batches = 1;
  try {
    rt::measure_drift(no_data, {}, o);
    FAIL() << "no dataset: expected an error";
  } catch (const rt::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("no dataset"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rt::eval_precision_from_name("int8"), rt::EvalPrecision::Int8);
  EXPECT_FALSE(rt::eval_precision_from_name("int4"));
}
