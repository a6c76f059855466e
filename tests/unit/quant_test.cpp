// graphcore/quant.h: int8 post-training quantisation's numeric rules (values worked out from the
// formulas of docs/precision.md), the exactness of the int32 kernels against int64 loops written
// here, the histogram calibrations on histograms whose answer is known, the table's JSON and its
// validation, and int8 execution of a small conv net. tests/training/check_drift.py recomputes
// the calibration (KL, percentile, min/max) and the int32 path independently in numpy.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "graphcore/analysis.h"
#include "graphcore/mindir.h"
#include "graphcore/mindir_import.h"
#include "graphcore/quant.h"
#include "temp_dir.h"

namespace rt = graphcore::runtime;
namespace q = graphcore::runtime::quant;
using rt::Tensor;

namespace {

std::vector<float> values(const Tensor& t) {
  return {t.data<float>(), t.data<float>() + t.numel()};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const rt::RuntimeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Quant, WeightsPerChannelSymmetric) {
  // Channel 0: scale 1/127; -0.5 / s = -63.5 rounds away from zero to -64; 0.25 / s = 31.75.
  // Channel 1: scale 0.04/127; 0.01 / s = 31.75, 0.02 / s = 63.5 -> 64. Channel 2: all zero.
  Tensor w = Tensor::from_floats({3, 3}, {1.0f, -0.5f, 0.25f, 0.01f, 0.02f, -0.04f, 0, 0, 0});
  q::WeightQuant wq = q::quantize_weight(w);
  ASSERT_EQ(wq.scales.size(), 3u);
  EXPECT_DOUBLE_EQ(wq.scales[0], 1.0 / 127);
  EXPECT_DOUBLE_EQ(wq.scales[1], static_cast<double>(0.04f) / 127);
  EXPECT_EQ(wq.scales[2], 0.0);
  EXPECT_EQ(std::vector<int>(wq.levels.begin(), wq.levels.end()),
            (std::vector<int>{127, -64, 32, 32, 64, -127, 0, 0, 0}));
  auto v = values(q::dequantize_weight(wq));
  EXPECT_FLOAT_EQ(v[1], static_cast<float>(-64.0 / 127));
  EXPECT_FLOAT_EQ(v[4], static_cast<float>(64 * wq.scales[1]));
  EXPECT_EQ(v[6], 0.0f);
  // A conv weight (out, in, kh, kw): one scale per output channel.
  Tensor cw = Tensor::from_floats({2, 1, 1, 2}, {2.0f, -1.0f, 0.5f, 0.25f});
  wq = q::quantize_weight(cw);
  ASSERT_EQ(wq.scales.size(), 2u);
  EXPECT_DOUBLE_EQ(wq.scales[0], 2.0 / 127);
  EXPECT_DOUBLE_EQ(wq.scales[1], 0.5 / 127);
}

TEST(Quant, ActivationsPerTensorAsymmetric) {
  // [-1, 3]: scale 4/255, zero point round(-128 + 63.75) = -64.
  auto a = q::activation_params(-1, 3);
  EXPECT_DOUBLE_EQ(a.scale, 4.0 / 255);
  EXPECT_EQ(a.zero_point, -64);
  EXPECT_EQ(q::quantize_level(0.0, a), -64);  // 0 is a level: exact
  EXPECT_EQ(q::quantize_level(3.0, a), 127);
  EXPECT_EQ(q::quantize_level(10.0, a), 127);  // clamped
  EXPECT_EQ(q::quantize_level(-2.0, a), -128);
  EXPECT_EQ(q::quantize_level(1.0, a), 0);  // 63.75 -> 64, - 64
  Tensor x = Tensor::from_floats({3}, {0.0f, 3.0f, 1.0f});
  auto v = values(q::fake_quantize(x, a));
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_FLOAT_EQ(v[1], static_cast<float>(191 * 4.0 / 255));
  EXPECT_FLOAT_EQ(v[2], static_cast<float>(64 * 4.0 / 255));
  // A range without negatives (after ReLU) is widened to hold 0: zero point -128.
  auto relu = q::activation_params(0.5, 2.55);
  EXPECT_DOUBLE_EQ(relu.scale, 0.01);
  EXPECT_EQ(relu.zero_point, -128);
  // A range of zero width is not quantised.
  EXPECT_EQ(q::activation_params(0, 0).scale, 0);
  EXPECT_EQ(values(q::fake_quantize(x, q::activation_params(0, 0))), values(x));
}

// int32 sums against int64 loops written here, on levels at the extremes (|x| 255, |w| 127) and
// a geometry with stride, padding, dilation and groups. The sums are beyond 2^24, where a float32
// accumulation of the same products is no longer exact.
TEST(Quant, Int32AccumulationIsExact) {
  q::ConvShape s;
  s.n = 2, s.c = 4, s.h = 9, s.w = 7, s.o = 6, s.kh = 3, s.kw = 2, s.groups = 2;
  s.stride_h = 2, s.stride_w = 1, s.dil_h = 1, s.dil_w = 2, s.pad_top = 1, s.pad_left = 1;
  s.out_h = (s.h + 2 - s.kh) / 2 + 1;  // pad 1 on both sides
  s.out_w = (s.w + 2 - (2 * (s.kw - 1) + 1)) + 1;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> lx(-255, 255), lw(-127, 127);
  std::vector<int16_t> x(static_cast<size_t>(s.n * s.c * s.h * s.w));
  std::vector<int16_t> w(static_cast<size_t>(s.o * (s.c / s.groups) * s.kh * s.kw));
  for (auto& v : x) v = static_cast<int16_t>(lx(rng));
  for (auto& v : w) v = static_cast<int16_t>(lw(rng));
  auto got = q::conv2d_int32(s, x, w);
  const int64_t cg = s.c / s.groups, og = s.o / s.groups;
  size_t checked = 0;
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t o = 0; o < s.o; ++o)
      for (int64_t r = 0; r < s.out_h; ++r)
        for (int64_t c2 = 0; c2 < s.out_w; ++c2) {
          int64_t ref = 0;
          const int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < s.kh; ++i)
              for (int64_t j = 0; j < s.kw; ++j) {
                const int64_t y = r * s.stride_h - s.pad_top + i * s.dil_h;
                const int64_t xx = c2 * s.stride_w - s.pad_left + j * s.dil_w;
                if (y < 0 || y >= s.h || xx < 0 || xx >= s.w) continue;
                ref +=
                    int64_t{
                        x[static_cast<size_t>(((b * s.c + g * cg + ci) * s.h + y) * s.w + xx)]} *
                    w[static_cast<size_t>(((o * cg + ci) * s.kh + i) * s.kw + j)];
              }
          ASSERT_EQ(got[static_cast<size_t>(((b * s.o + o) * s.out_h + r) * s.out_w + c2)], ref);
          ++checked;
        }
  EXPECT_EQ(checked, got.size());

  // A GEMM whose sums exceed 2^24: 4096 products of 255 * 127 (and alternating signs elsewhere).
  const int64_t m = 3, n = 2, k = 4096;
  std::vector<int16_t> a(static_cast<size_t>(m * k), 255), bm(static_cast<size_t>(n * k), 127);
  for (int64_t i = 0; i < k; ++i) a[static_cast<size_t>(k + i)] = static_cast<int16_t>(lx(rng));
  for (int64_t i = 0; i < k; ++i) bm[static_cast<size_t>(k + i)] = static_cast<int16_t>(lw(rng));
  auto c = q::gemm_int32(m, n, k, a, bm);
  bool float_differs = false;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t ref = 0;
      float f = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const int64_t p =
            int64_t{a[static_cast<size_t>(i * k + kk)]} * bm[static_cast<size_t>(j * k + kk)];
        ref += p;
        f += static_cast<float>(p);
      }
      EXPECT_EQ(c[static_cast<size_t>(i * n + j)], ref);
      float_differs = float_differs || static_cast<int64_t>(f) != ref;
    }
  EXPECT_EQ(c[0], 4096 * 255 * 127);  // 132,648,960 > 2^24
  EXPECT_TRUE(float_differs) << "the case should be one float32 accumulation gets wrong";

  // Sums that could overflow int32 are refused, not wrapped.
  const int64_t big = 70000;
  std::vector<int16_t> a2(static_cast<size_t>(big), 255), b2(static_cast<size_t>(big), 127);
  EXPECT_NE(error_of([&] { q::gemm_int32(1, 1, big, a2, b2); }).find("could overflow"),
            std::string::npos);
}

TEST(Quant, KlThresholdOnKnownHistograms) {
  // All the mass within the first 128 bins: 128 bins hold it with no loss (KL 0), the first
  // candidate.
  std::vector<double> h(2048, 0.0);
  for (int i = 0; i < 128; ++i) h[static_cast<size_t>(i)] = 10 + i % 7;
  EXPECT_EQ(q::kl_threshold_bins(h), 128);
  // A bulk in [0, 400) and one far outlier at bin 2000: the threshold stays near the bulk (the
  // outlier folded into the last bin costs less than quantising 2000 bins coarsely).
  std::vector<double> g(2048, 0.0);
  for (int i = 0; i < 400; ++i) g[static_cast<size_t>(i)] = 1000.0 * std::exp(-i / 80.0);
  g[2000] = 1;
  const int64_t t = q::kl_threshold_bins(g);
  EXPECT_GE(t, 128);
  EXPECT_LT(t, 600);
  // Too few bins: the whole range.
  EXPECT_EQ(q::kl_threshold_bins(std::vector<double>(100, 1.0)), 100);
  EXPECT_EQ(q::kl_threshold_bins(std::vector<double>(2048, 0.0)), 2048);
}

TEST(Quant, PercentileRange) {
  // 100 bins of one count over [0, 100): 99 % from below is reached in bin 98 (upper edge 99),
  // from above in bin 1 (lower edge 1).
  std::vector<double> h(100, 1.0);
  auto [lo, hi] = q::percentile_range(h, 0, 100, 99);
  EXPECT_DOUBLE_EQ(lo, 1);
  EXPECT_DOUBLE_EQ(hi, 99);
  auto [lo2, hi2] = q::percentile_range(h, -50, 50, 100);
  EXPECT_DOUBLE_EQ(lo2, -50);
  EXPECT_DOUBLE_EQ(hi2, 50);
}

TEST(Quant, ObserversByMethod) {
  // 10000 values 0.001 .. 10 (dense: ~205 bins of width 100/2048) and one outlier 100.
  std::vector<float> v;
  for (int i = 1; i <= 10000; ++i) v.push_back(static_cast<float>(i) / 1000.0f);
  v.push_back(100.0f);
  Tensor t = Tensor::from_floats({static_cast<int64_t>(v.size())}, v);
  q::Observer mm({.method = q::Calibration::MinMax});
  mm.observe(t, 0);
  EXPECT_FLOAT_EQ(static_cast<float>(mm.range().second), 100.0f);
  q::Observer pc({.method = q::Calibration::Percentile, .percentile = 99.0, .bins = 2048});
  pc.observe(t, 0);
  pc.observe(t, 1);
  EXPECT_LT(pc.range().second, 10.5);  // the outlier is 1 value in 10001
  EXPECT_GE(pc.range().second, 9.8);
  q::Observer kl({.method = q::Calibration::KL});
  kl.observe(t, 0);
  kl.observe(t, 1);
  EXPECT_LT(kl.range().second, 50.0);
  // Few distinct values (fewer non-empty bins than the 128 levels): not clipped.
  Tensor sparse = Tensor::from_floats({4}, {0.5f, 1.0f, 1.5f, 100.0f});
  q::Observer kl2({.method = q::Calibration::KL});
  kl2.observe(sparse, 0);
  kl2.observe(sparse, 1);
  EXPECT_FLOAT_EQ(static_cast<float>(kl2.range().second), 100.0f);
  EXPECT_GE(kl.range().first, 0.001 - 1e-9);  // clipped to the observed minimum
}

TEST(Quant, TableJsonRoundTripAndValidation) {
  q::QuantTable t;
  t.calibration = {.method = q::Calibration::Percentile, .percentile = 99.9, .bins = 1024};
  t.calibration_samples = 96;
  q::NodeQuant n;
  n.node = "conv1";
  n.op = "Conv2D";
  n.weight = "conv1.weight";
  n.inputs.push_back({-0.1, 1.0 / 3, q::activation_params(-0.1, 1.0 / 3)});
  n.output = {0, 2.5, q::activation_params(0, 2.5)};
  n.weight_scales = {0.1 / 127, 1e-3 / 7};
  t.nodes.push_back(n);
  q::NodeQuant m = n;
  m.node = "attn/MatMul_1";
  m.op = "MatMul";
  m.weight.clear();
  m.weight_scales.clear();
  m.inputs.push_back(m.inputs[0]);
  t.nodes.push_back(m);
  const std::string json = q::write_quant_table(t);
  q::QuantTable back = q::read_quant_table(json, "t.json");
  EXPECT_EQ(back.calibration.method, q::Calibration::Percentile);
  EXPECT_EQ(back.calibration.bins, 1024);
  EXPECT_EQ(back.calibration_samples, 96);
  ASSERT_EQ(back.nodes.size(), 2u);
  EXPECT_EQ(back.nodes[0].key(), "conv1.weight");
  EXPECT_EQ(back.nodes[1].key(), "attn/MatMul_1");
  EXPECT_EQ(back.nodes[0].inputs[0].params.scale, n.inputs[0].params.scale);  // bit-exact
  EXPECT_EQ(back.nodes[0].inputs[0].params.zero_point, n.inputs[0].params.zero_point);
  EXPECT_EQ(back.nodes[0].weight_scales, n.weight_scales);
  EXPECT_EQ(q::write_quant_table(back), json);

  auto err = [](std::string_view text) {
    return error_of([&] { q::read_quant_table(text, "bundle/quant.json"); });
  };
  EXPECT_NE(err("{nope").find("bundle/quant.json: not JSON"), std::string::npos);
  EXPECT_NE(err(R"({"format": "x"})").find("not a quantisation table"), std::string::npos);
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = json;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return err(s.replace(at, from.size(), to));
  };
  EXPECT_NE(edit("\"version\": 1", "\"version\": 2").find("version: 2 is not the version"),
            std::string::npos);
  EXPECT_NE(edit("\"method\": \"percentile\"", "\"method\": \"mse\"")
                .find("calibration.method: \"mse\" is not"),
            std::string::npos);
  const std::string zp = "\"zero_point\": " + std::to_string(n.inputs[0].params.zero_point);
  EXPECT_NE(edit(zp, "\"zero_point\": 300").find("nodes[0].inputs[0].zero_point: must be"),
            std::string::npos);
  EXPECT_NE(edit("\"node\": \"attn/MatMul_1\"", "\"nod\": \"attn/MatMul_1\"")
                .find("nodes[1]: the field \"node\" is missing"),
            std::string::npos);
  EXPECT_NE(edit("\"scale\": ", "\"scale\": -").find("nodes[0].inputs[0].scale: must not be"),
            std::string::npos);
  std::string dup = json;
  const std::string w = "\"weight\": \"\"";
  dup.replace(dup.find(w), w.size(), "\"weight\": \"conv1.weight\"");
  EXPECT_NE(err(dup).find("nodes[1]: a weight needs its scales"), std::string::npos);
  // The same weight twice.
  std::string twice = q::write_quant_table([&] {
    q::QuantTable t2 = t;
    t2.nodes.push_back(t2.nodes[0]);
    return t2;
  }());
  EXPECT_NE(err(twice).find("nodes[2]: \"conv1.weight\" is in the table twice"), std::string::npos);
}

namespace {

graphcore::AnalysisResult analyze(const std::string& text, const graphcore::TensorType& input) {
  static const cellscope::testing::TempDir temp("cellscope_quant_test_");
  const std::filesystem::path file = temp.path() / "net.py";
  std::ofstream(file) << text;
  graphcore::AnalysisOptions opts;
  opts.inputs.push_back(input);
  graphcore::DiskSourceProvider disk;
  return graphcore::analyze_file(file, opts, disk);
}

}  // namespace

// Int8 execution of a conv net (stride, padding, groups, dilation, a conv and a Dense with
// bias: the round trip below also checks that a MindIR-imported Conv2D keeps its bias): every
// quantised
// node's output is its int32 sum dequantised, which equals the float kernel run on the
// dequantised operands up to float rounding and the bias's int32 rounding (half a step of s_x *
// s_w); the table found by weight names matches every quantised node.
TEST(Quant, Int8RunnerOnAConvNet) {
  auto res =
      analyze(R"(
from mindspore import nn, ops

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, pad_mode='pad', padding=1, has_bias=True)
        self.conv2 = nn.Conv2d(8, 8, 3, group=2, dilation=2, pad_mode='same')
        self.flat = nn.Flatten()
        self.fc = nn.Dense(128, 5)

    def construct(self, x):
        x = self.conv2(ops.relu(self.conv(x)))
        return self.fc(self.flat(x))
)",
              graphcore::TensorType{graphcore::Shape::of({2, 3, 8, 8}), graphcore::DType::Float32});
  ASSERT_EQ(res.cells.size(), 1u);
  rt::ExecOptions eo;
  eo.seed = 11;
  eo.keep_values = true;
  rt::Executor ex(res.cells[0], eo);
  const graphcore::Graph& g = ex.graph();
  Tensor x = Tensor::random({2, 3, 8, 8}, graphcore::DType::Float32, 4);
  q::Calibrator cal(g, {.method = q::Calibration::MinMax});
  cal.add_samples(2);
  ex.set_input(0, x);
  ASSERT_EQ(ex.run(cal.hooks()).kind, rt::RunStatus::Kind::Finished);
  q::QuantTable t = cal.finish(ex);
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.nodes[0].weight, "conv.weight");
  EXPECT_EQ(t.nodes[2].weight, "fc.weight");
  q::Int8Runner int8(g, t, ex);
  EXPECT_TRUE(int8.notes().empty());

  // Each quantised node alone, from the fp32 run's inputs: int8 path against the float kernel
  // on dequantised operands.
  size_t compared = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!int8.quantized(i)) continue;
    const graphcore::Node& n = g.nodes[i];
    const q::NodeQuant* e = t.find(n);
    ASSERT_NE(e, nullptr);
    std::vector<Tensor> in{*ex.value(n.inputs[0])};
    std::vector<Tensor> out;
    ASSERT_TRUE(int8.compute(n, i, in, out));
    ASSERT_EQ(out.size(), 1u);
    // The emulation: a separate executor with dequantised weights and inputs.
    rt::Executor emu(res.cells[0], eo);
    emu.set_param(e->weight, q::dequantize_weight(q::quantize_weight(ex.param(e->weight)->value)));
    rt::Hooks h;
    Tensor expect;
    h.rewrite_inputs = [&](const graphcore::Node& m, size_t index, std::vector<Tensor>& ins) {
      if (index == i) ins[0] = q::fake_quantize(in[0], e->inputs[0].params);
      (void)m;
    };
    h.rewrite_outputs = [&](const graphcore::Node&, size_t index, std::vector<Tensor>& outs) {
      if (index == i) expect = outs[0];
    };
    emu.set_input(0, x);
    ASSERT_EQ(emu.run(h).kind, rt::RunStatus::Kind::Finished);
    ASSERT_EQ(expect.shape(), out[0].shape()) << n.id;
    double worst = 0, scale = 0;
    for (int64_t k = 0; k < expect.numel(); ++k) {
      worst = std::max(worst, std::abs(expect.at(k) - out[0].at(k)));
      scale = std::max(scale, std::abs(expect.at(k)));
    }
    const double step = e->inputs[0].params.scale *
                        *std::max_element(e->weight_scales.begin(), e->weight_scales.end());
    EXPECT_LE(worst, 0.5 * step + 1e-5 * scale) << n.id;
    ++compared;
  }
  EXPECT_EQ(compared, 3u);

  // The deploy path: the table made here, applied to the graph a MindIR export + import of the
  // same network gives (the device's view): every entry found by its weight's name, the same
  // int8 outputs.
  rt::Executor ex_out(res.cells[0], eo);
  const graphcore::MindirExport mx = graphcore::export_mindir(res.cells[0], ex.params());
  ASSERT_TRUE(mx.errors.empty());
  const graphcore::MindirImport im = graphcore::import_mindir(mx.bytes, "net.mindir");
  ASSERT_TRUE(im.ok) << im.error;
  rt::Executor dev(im.report, eo);
  for (const rt::ParamState& ps : ex.params()) {
    if (dev.param(ps.name) != nullptr) dev.set_param(ps.name, ps.value);
  }
  const q::QuantTable back = q::read_quant_table(q::write_quant_table(t), "bundle/quant.json");
  q::Int8Runner on_device(dev.graph(), back, dev);
  EXPECT_TRUE(on_device.notes().empty()) << on_device.notes()[0];
  size_t found = 0;
  for (size_t i = 0; i < dev.graph().nodes.size(); ++i) found += on_device.quantized(i) ? 1 : 0;
  EXPECT_EQ(found, 3u);
  rt::Hooks int8_hooks;
  int8_hooks.compute = [&](const graphcore::Node& n, size_t i, const std::vector<Tensor>& in,
                           std::vector<Tensor>& out) { return int8.compute(n, i, in, out); };
  rt::Hooks dev_hooks;
  dev_hooks.compute = [&](const graphcore::Node& n, size_t i, const std::vector<Tensor>& in,
                          std::vector<Tensor>& out) { return on_device.compute(n, i, in, out); };
  ex_out.set_input(0, x);
  dev.set_input(0, x);
  ASSERT_EQ(ex_out.run().kind, rt::RunStatus::Kind::Finished);
  ASSERT_EQ(dev.run().kind, rt::RunStatus::Kind::Finished);
  EXPECT_EQ(values(ex_out.outputs()[0]), values(dev.outputs()[0])) << "fp32";
  ex_out.reset();
  dev.reset();
  ASSERT_EQ(ex_out.run(int8_hooks).kind, rt::RunStatus::Kind::Finished);
  ASSERT_EQ(dev.run(dev_hooks).kind, rt::RunStatus::Kind::Finished);
  EXPECT_EQ(values(ex_out.outputs()[0]), values(dev.outputs()[0]));

  // A table whose weights are not those of the executor is noted; one with a node the graph
  // lacks too.
  q::QuantTable other = t;
  other.nodes[0].weight_scales[0] *= 2;
  other.nodes.push_back(other.nodes[1]);
  other.nodes.back().weight = "missing.weight";
  q::Int8Runner noted(g, other, ex);
  ASSERT_EQ(noted.notes().size(), 2u);
  EXPECT_NE(noted.notes()[0].find("not those the table was calibrated with"), std::string::npos);
  EXPECT_NE(noted.notes()[1].find("missing.weight"), std::string::npos);
}
