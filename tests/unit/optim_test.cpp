// graphcore/optim.h: optimizer update rules, learning-rate schedules, loss scaling,
// clip_by_global_norm and the checkpoint writer, on small cases computed by hand or printed by
// MindSpore 2.10 (the values quoted below). tests/training/check_optim.py compares every
// combination with MindSpore itself.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "graphcore/optim.h"
#include "temp_dir.h"

namespace rt = graphcore::runtime;
using rt::LrSchedule;
using rt::OptimizerConfig;
using rt::OptimizerKind;
using rt::Tensor;

namespace {

std::vector<float> values(const Tensor& t) {
  return {t.data<float>(), t.data<float>() + t.numel()};
}

// Runs `steps` updates of one parameter with a constant gradient; returns the parameter.
std::vector<float> run(const OptimizerConfig& cfg, const std::vector<float>& w,
                       const std::vector<float>& g, int steps,
                       const std::string& name = "fc.weight") {
  const auto n = static_cast<int64_t>(w.size());
  rt::Optimizer opt(cfg, {name}, {{n}});
  Tensor p = Tensor::from_floats({n}, w);
  Tensor grad = Tensor::from_floats({n}, g);
  Tensor* ptrs[] = {&p};
  for (int i = 0; i < steps; ++i) opt.step(ptrs, std::span<const Tensor>(&grad, 1));
  EXPECT_EQ(opt.global_step(), steps);
  return values(p);
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "element " << i;
}

OptimizerConfig cfg_of(OptimizerKind k, double lr) {
  OptimizerConfig c = OptimizerConfig::defaults(k);
  c.learning_rate = LrSchedule::constant(lr);
  return c;
}

}  // namespace

TEST(OptimTest, MomentumTwoSteps) {
  // MindSpore 2.10: nn.Momentum([w], 0.1, 0.9), two calls -> [0.855, -2.0725, 3.29], with or
  // without use_nesterov (the CPU kernel ignores it).
  OptimizerConfig c = cfg_of(OptimizerKind::Momentum, 0.1);
  c.momentum = 0.9;
  expect_near(run(c, {1, -2, 3}, {0.5, 0.25, -1}, 2), {0.855, -2.0725, 3.29}, 1e-6);
  c.nesterov = true;
  expect_near(run(c, {1, -2, 3}, {0.5, 0.25, -1}, 2), {0.855, -2.0725, 3.29}, 1e-6);
}

TEST(OptimTest, SgdMomentumDampeningNesterov) {
  // Step 1 copies the gradient into accum (stat = 1); step 2: accum = 0.9 g + (1 - d) g.
  OptimizerConfig c = cfg_of(OptimizerKind::SGD, 0.1);
  c.momentum = 0.9;
  c.dampening = 0.5;
  // w - 0.1 g - 0.1 (0.9 + 0.5) g = w - 0.24 g
  expect_near(run(c, {1.0}, {2.0}, 2), {1.0 - 0.24 * 2}, 1e-6);
  c.dampening = 0;
  c.nesterov = true;
  // step 1: g + 0.9 g = 1.9 g; step 2: accum 1.9 g, g + 0.9 * 1.9 g = 2.71 g -> 0.1 * 4.61 g
  expect_near(run(c, {1.0}, {2.0}, 2), {1.0 - 0.461 * 2}, 1e-6);
  // momentum 0: plain gradient descent, accum and stat untouched.
  c = cfg_of(OptimizerKind::SGD, 0.1);
  expect_near(run(c, {1.0}, {2.0}, 3), {1.0 - 0.6}, 1e-6);
  c.nesterov = true;  // nesterov needs momentum > 0, as MindSpore says
  EXPECT_THROW(c.validate(), rt::RuntimeError);
}

TEST(OptimTest, AdamFirstStepIsSignTimesLr) {
  // Bias correction makes the first step lr * g / (|g| + eps / sqrt(1 - beta2) ...) ~ lr * sign(g).
  OptimizerConfig c = cfg_of(OptimizerKind::Adam, 0.01);
  expect_near(run(c, {1, 1}, {3, -0.5}, 1), {0.99, 1.01}, 1e-5);
  c.use_amsgrad = true;
  expect_near(run(c, {1, 1}, {3, -0.5}, 1), {0.99, 1.01}, 1e-5);
  // Two steps of a constant gradient: m/sqrt(v) stays sign(g) after correction.
  c.use_amsgrad = false;
  expect_near(run(c, {1}, {3}, 2), {0.98}, 1e-5);
}

TEST(OptimTest, AdamWeightDecayHasNoBiasCorrection) {
  // m = 0.1 g, v = 0.001 g^2: update = 0.1 g / (sqrt(0.001) |g| + 1e-6) + wd * w.
  OptimizerConfig c = cfg_of(OptimizerKind::AdamWeightDecay, 0.01);
  c.weight_decay = 0.1;
  const double g = 2.0, w = 3.0;
  const double upd = 0.1 * g / (std::sqrt(0.001) * g + 1e-6) + 0.1 * w;
  expect_near(run(c, {3.0}, {2.0}, 1), {w - 0.01 * upd}, 1e-6);
  // The default filter: names with "beta" or "gamma" are not decayed.
  const double upd0 = 0.1 * g / (std::sqrt(0.001) * g + 1e-6);
  expect_near(run(c, {3.0}, {2.0}, 1, "bn.gamma"), {w - 0.01 * upd0}, 1e-6);
  c.loss_scale = 2.0;  // AdamWeightDecay has no loss_scale
  EXPECT_THROW(c.validate(), rt::RuntimeError);
}

TEST(OptimTest, WeightDecayAndLossScaleWhereMindSporeAppliesThem) {
  // Momentum with loss_scale 4 and weight_decay 0.1: g' = (4 g + w * 0.1 * 4) / 4 = g + 0.1 w,
  // so the gradients scaled by 4 give the same result as unscaled ones without loss_scale.
  OptimizerConfig c = cfg_of(OptimizerKind::Momentum, 0.1);
  c.momentum = 0.0;
  c.weight_decay = 0.1;
  const auto plain = run(c, {2.0}, {1.0}, 1);
  expect_near(plain, {2.0 - 0.1 * (1.0 + 0.2)}, 1e-6);
  c.loss_scale = 4.0;
  expect_near(run(c, {2.0}, {4.0}, 1), {plain[0]}, 1e-7);
  // Not decayed: gamma/beta names.
  expect_near(run(c, {2.0}, {4.0}, 1, "layer.beta"), {2.0 - 0.1}, 1e-6);
}

TEST(OptimTest, ParameterGroupsAndOrder) {
  // mindcv's groups: decay for weights only, a group lr, order_params.
  OptimizerConfig c = cfg_of(OptimizerKind::Momentum, 0.1);
  c.momentum = 0.0;
  c.weight_decay = 0.5;  // the default of groups without their own
  c.groups.resize(2);
  c.groups[0].params = {"b"};
  c.groups[0].lr = LrSchedule::constant(0.01);
  c.groups[0].weight_decay = 0.0;
  c.groups[1].params = {"a"};
  c.order_params = {"a", "b"};
  rt::Optimizer opt(c, {"a", "b", "frozen"}, {{1}, {1}, {1}});
  EXPECT_EQ(opt.parameters(), (std::vector<std::string>{"a", "b"}));
  Tensor a = Tensor::from_floats({1}, {1.0f}), b = Tensor::from_floats({1}, {1.0f});
  Tensor f = Tensor::from_floats({1}, {1.0f});
  Tensor* ptrs[] = {&a, &b, &f};
  std::vector<Tensor> grads = {Tensor::from_floats({1}, {1.0f}), Tensor::from_floats({1}, {1.0f}),
                               Tensor::from_floats({1}, {1.0f})};
  opt.step(ptrs, grads);
  EXPECT_NEAR(a.at(0), 1.0 - 0.1 * (1.0 + 0.5), 1e-6);  // default lr, decayed
  EXPECT_NEAR(b.at(0), 1.0 - 0.01, 1e-7);               // group lr, wd 0: not decayed
  EXPECT_EQ(f.at(0), 1.0);                              // in no group
  std::vector<std::string> names;
  for (const auto& e : opt.state()) names.push_back(e.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"global_step", "learning_rate", "learning_rate_group_0",
                                      "momentum", "moments.a", "moments.b"}));
  // A group naming an unknown parameter, a repeated one, or order_params of another set.
  c.groups[0].params = {"nope"};
  EXPECT_THROW(rt::Optimizer(c, {"a", "b"}, {{1}, {1}}), rt::RuntimeError);
  c.groups[0].params = {"a"};
  EXPECT_THROW(rt::Optimizer(c, {"a", "b"}, {{1}, {1}}), rt::RuntimeError);
  c.groups[0].params = {"b"};
  c.order_params = {"a", "c"};
  EXPECT_THROW(rt::Optimizer(c, {"a", "b"}, {{1}, {1}}), rt::RuntimeError);
}

TEST(OptimTest, GradCentralization) {
  // (2, 16) gradient: each row loses its mean. (2, 3): shape[1] % 16 != 0, unchanged.
  OptimizerConfig c = cfg_of(OptimizerKind::SGD, 1.0);
  c.groups.resize(1);
  c.groups[0].params = {"w", "u"};
  c.groups[0].grad_centralization = true;
  rt::Optimizer opt(c, {"w", "u"}, {{2, 16}, {2, 3}});
  std::vector<float> gw(32), gu = {1, 2, 3, 4, 5, 6};
  for (size_t i = 0; i < 32; ++i) gw[i] = static_cast<float>(i);
  Tensor w = Tensor::zeros({2, 16}), u = Tensor::zeros({2, 3});
  Tensor* ptrs[] = {&w, &u};
  std::vector<Tensor> grads = {Tensor::from_floats({2, 16}, gw), Tensor::from_floats({2, 3}, gu)};
  opt.step(ptrs, grads);
  EXPECT_NEAR(w.at(0), 7.5, 1e-6);    // -(0 - 7.5)
  EXPECT_NEAR(w.at(31), -7.5, 1e-6);  // -(31 - 23.5)
  EXPECT_NEAR(u.at(5), -6.0, 1e-6);
}

TEST(OptimTest, BadStepChangesNothing) {
  OptimizerConfig c = cfg_of(OptimizerKind::Momentum, 0.1);
  c.learning_rate = LrSchedule::list({0.1, 0.2});
  rt::Optimizer opt(c, {"a", "b"}, {{2}, {3}});
  Tensor a = Tensor::ones({2}), b = Tensor::ones({3});
  Tensor* ptrs[] = {&a, &b};
  std::vector<Tensor> bad = {Tensor::ones({2}), Tensor::ones({2})};
  try {
    opt.step(ptrs, bad);
    FAIL() << "no error";
  } catch (const rt::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("'b'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(opt.global_step(), 0);
  EXPECT_EQ(a.at(0), 1.0);
  std::vector<Tensor> good = {Tensor::ones({2}), Tensor::ones({3})};
  opt.step(ptrs, good);
  opt.step(ptrs, good);
  EXPECT_NEAR(a.at(0), 1.0 - 0.1 - 0.2 * 1.9, 1e-6);
  // The list has run out: MindSpore's Gather fails there; so does the step, changing nothing.
  EXPECT_THROW(opt.step(ptrs, good), rt::RuntimeError);
  EXPECT_EQ(opt.global_step(), 2);
  EXPECT_NEAR(a.at(0), 1.0 - 0.1 - 0.2 * 1.9, 1e-6);
}

TEST(OptimTest, StateRoundTripResumesExactly) {
  for (OptimizerKind k : {OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::Adam,
                          OptimizerKind::AdamWeightDecay}) {
    OptimizerConfig c = cfg_of(k, 0.05);
    if (k != OptimizerKind::AdamWeightDecay) c.momentum = 0.9;
    if (k == OptimizerKind::Adam) c.use_amsgrad = true;
    rt::Optimizer a(c, {"w"}, {{4}});
    Tensor w = Tensor::from_floats({4}, {1, 2, 3, 4});
    Tensor* ptrs[] = {&w};
    std::vector<Tensor> g = {Tensor::from_floats({4}, {0.5, -1, 2, 0.25})};
    for (int i = 0; i < 3; ++i) a.step(ptrs, g);
    rt::Optimizer b(c, {"w"}, {{4}});
    EXPECT_GT(b.load_state(a.state()), 1u);
    EXPECT_EQ(b.global_step(), 3);
    Tensor w2 = w.clone();
    Tensor* ptrs2[] = {&w2};
    a.step(ptrs, g);
    b.step(ptrs2, g);
    EXPECT_EQ(values(w), values(w2)) << optimizer_kind_name(k);
    // A missing moment is an error naming it; nothing changes.
    auto st = a.state();
    st.pop_back();
    rt::Optimizer d(c, {"w"}, {{4}});
    EXPECT_THROW(d.load_state(st), rt::RuntimeError);
    EXPECT_EQ(d.global_step(), 0);
  }
}

TEST(OptimTest, DynamicLrListsAsMindSpore) {
  // Printed by MindSpore 2.10 (repr of the Python floats).
  EXPECT_EQ(rt::cosine_decay_lr(0.01, 0.1, 6, 2, 2),
            (std::vector<double>{0.1, 0.1, 0.05500000000000001, 0.05500000000000001, 0.01, 0.01}));
  EXPECT_EQ(rt::exponential_decay_lr(0.1, 0.9, 6, 2, 1),
            (std::vector<double>{0.1, 0.1, 0.09000000000000001, 0.09000000000000001,
                                 0.08100000000000002, 0.08100000000000002}));
  EXPECT_EQ(rt::polynomial_decay_lr(0.1, 0.01, 6, 2, 2, 0.5),
            (std::vector<double>{0.1, 0.1, 0.07363961030678928, 0.07363961030678928, 0.01, 0.01}));
  EXPECT_EQ(rt::polynomial_decay_lr(0.1, 0.01, 6, 1, 2, 0.5, true),
            (std::vector<double>{0.1, 0.07363961030678928, 0.01, 0.05500000000000001, 0.01,
                                 0.04674234614174767}));
  EXPECT_EQ(rt::warmup_lr(0.1, 6, 2, 2), (std::vector<double>{0.0, 0.0, 0.05, 0.05, 0.1, 0.1}));
  EXPECT_EQ(rt::piecewise_constant_lr({2, 5, 10}, {0.1, 0.05, 0.01}),
            (std::vector<double>{0.1, 0.1, 0.05, 0.05, 0.05, 0.01, 0.01, 0.01, 0.01, 0.01}));
  EXPECT_EQ(rt::natural_exp_decay_lr(0.1, 0.9, 6, 2, 2, true),
            (std::vector<double>{0.1, 0.1, 0.1, 0.1, 0.016529888822158657, 0.016529888822158657}));
  EXPECT_EQ(rt::inverse_decay_lr(0.1, 0.5, 6, 1, 1),
            (std::vector<double>{0.1, 0.06666666666666667, 0.05, 0.04, 0.03333333333333333,
                                 0.028571428571428574}));
  // MindSpore's argument checks.
  EXPECT_THROW(rt::cosine_decay_lr(0.1, 0.1, 6, 2, 2), rt::RuntimeError);
  EXPECT_THROW(rt::exponential_decay_lr(0.1, 0.9, 0, 2, 1), rt::RuntimeError);
  EXPECT_THROW(rt::piecewise_constant_lr({5, 2}, {0.1, 0.2}), rt::RuntimeError);
  EXPECT_THROW(rt::piecewise_constant_lr({5}, {0.1, 0.2}), rt::RuntimeError);
}

TEST(OptimTest, ScheduleCellsAsMindSpore) {
  // MindSpore 2.10's cells at steps 0..6 (float32 results printed as doubles).
  struct Case {
    LrSchedule s;
    std::vector<double> want;
  };
  const Case cases[] = {
      {LrSchedule::cosine_decay(0.01, 0.1, 4),
       {0.10000000149011612, 0.08681980520486832, 0.054999999701976776, 0.023180190473794937,
        0.009999999776482582, 0.009999999776482582, 0.009999999776482582}},
      {LrSchedule::warmup(0.1, 2),
       {0.0, 0.05000000074505806, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612,
        0.10000000149011612, 0.10000000149011612}},
      {LrSchedule::exponential_decay(0.1, 0.9, 4),
       {0.10000000149011612, 0.09740037471055984, 0.09486832469701767, 0.09240210801362991,
        0.08999999612569809, 0.08766033500432968, 0.08538150042295456}},
      {LrSchedule::polynomial_decay(0.1, 0.01, 4, 0.5, true),
       {0.10000000149011612, 0.08794228732585907, 0.07363960891962051, 0.054999999701976776,
        0.009999999776482582, 0.06511352211236954, 0.054999999701976776}},
      {LrSchedule::natural_exp_decay(0.1, 0.9, 2, true),
       {0.10000000149011612, 0.10000000149011612, 0.01652989163994789, 0.01652989163994789,
        0.0027323728427290916, 0.0027323728427290916, 0.0004516583576332778}},
      {LrSchedule::inverse_decay(0.1, 0.5, 2),
       {0.10000000149011612, 0.08000000566244125, 0.06666667014360428, 0.05714286118745804,
        0.05000000074505806, 0.04444444552063942, 0.04000000283122063}},
  };
  for (const Case& c : cases) {
    for (size_t i = 0; i < c.want.size(); ++i) {
      EXPECT_NEAR(c.s.at(static_cast<int64_t>(i)), c.want[i], 2e-7 * c.want[i] + 1e-12)
          << c.s.str() << " step " << i;
    }
  }
  EXPECT_THROW(LrSchedule::cosine_decay(0.2, 0.1, 4), rt::RuntimeError);
}

TEST(OptimTest, DynamicLossScale) {
  // MindSpore 2.10's DynamicLossScaleUpdateCell(8, 2, 2) with these overflows gives these scales.
  rt::LossScaler ls({.kind = rt::LossScaleConfig::Kind::Dynamic,
                     .init_loss_scale = 8,
                     .scale_factor = 2,
                     .scale_window = 2});
  const bool overflow[] = {false, false, false, true, false, false, true, true};
  const float want[] = {8, 16, 16, 8, 8, 16, 8, 4};
  for (size_t i = 0; i < 8; ++i) {
    std::vector<Tensor> g = {Tensor::full({2}, overflow[i] ? INFINITY : ls.scale())};
    EXPECT_EQ(ls.unscale_and_update(g), !overflow[i]) << i;
    if (!overflow[i]) {
      EXPECT_EQ(g[0].at(0), 1.0) << "unscaled";
    }
    EXPECT_EQ(ls.scale(), want[i]) << i;
  }
  EXPECT_EQ(ls.overflow_count(), 3);
  const auto st = ls.state();
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[1].value.at(0), 9);  // current_iterator_step
  EXPECT_EQ(st[2].value.at(0), 8);  // last_overflow_iterator_step
  rt::LossScaler again({.kind = rt::LossScaleConfig::Kind::Dynamic});
  EXPECT_EQ(again.load_state(st), 3u);
  EXPECT_EQ(again.scale(), 4.0f);
  // Fixed without drop_overflow_update: nothing unscaled, nothing skipped.
  rt::LossScaler fixed(
      {.kind = rt::LossScaleConfig::Kind::Fixed, .loss_scale = 128, .drop_overflow_update = false});
  std::vector<Tensor> g = {Tensor::full({1}, NAN)};
  EXPECT_TRUE(fixed.unscale_and_update(g));
  EXPECT_EQ(fixed.scale(), 128.0f);
  EXPECT_THROW(rt::LossScaler({.kind = rt::LossScaleConfig::Kind::Fixed, .loss_scale = 0.5}),
               rt::RuntimeError);
}

TEST(OptimTest, AmpDynamicLossScalerAdjust) {
  // MindSpore 2.10's amp.DynamicLossScaler(8, 2, 2).adjust(finite) over these steps gives these
  // (scale_value, counter) pairs (run in MindSpore itself).
  rt::LossScaler ls({.kind = rt::LossScaleConfig::Kind::Dynamic,
                     .init_loss_scale = 8,
                     .scale_factor = 2,
                     .scale_window = 2,
                     .amp_scaler = true});
  const bool overflow[] = {false, false, false, true,  false, false,
                           true,  true,  false, false, false};
  const float want[] = {8, 16, 16, 8, 8, 16, 8, 4, 4, 8, 8};
  for (size_t i = 0; i < std::size(overflow); ++i) {
    std::vector<Tensor> g = {Tensor::full({2}, overflow[i] ? INFINITY : ls.scale())};
    EXPECT_EQ(ls.unscale_and_update(g), !overflow[i]) << i;
    if (!overflow[i]) {
      EXPECT_EQ(g[0].at(0), 1.0) << "unscaled";
    }
    EXPECT_EQ(ls.scale(), want[i]) << i;
  }
  // The scale never drops under 1.
  rt::LossScaler one({.kind = rt::LossScaleConfig::Kind::Dynamic,
                      .init_loss_scale = 1,
                      .scale_factor = 2,
                      .scale_window = 5,
                      .amp_scaler = true});
  std::vector<Tensor> inf = {Tensor::full({1}, INFINITY)};
  EXPECT_FALSE(one.unscale_and_update(inf));
  EXPECT_EQ(one.scale(), 1.0f);
}

TEST(OptimTest, ClipByGlobalNorm) {
  // MindSpore's docstring example: norm sqrt(45); [[2, 3], [1, 2]] -> [[0.298142403, ...]].
  std::vector<Tensor> g = {Tensor::from_floats({2, 2}, {2, 3, 1, 2}),
                           Tensor::from_floats({2, 2}, {1, 4, 3, 1})};
  EXPECT_NEAR(rt::clip_by_global_norm(g, 1.0), std::sqrt(45.0), 1e-5);
  EXPECT_NEAR(g[0].at(0), 2.98142403e-01, 1e-7);
  EXPECT_NEAR(g[1].at(1), 5.96284807e-01, 1e-7);
  // Under the norm: unchanged.
  std::vector<Tensor> small = {Tensor::from_floats({2}, {0.3f, 0.4f})};
  EXPECT_NEAR(rt::clip_by_global_norm(small, 1.0), 0.5, 1e-7);
  EXPECT_NEAR(small[0].at(1), 0.4, 1e-7);
  EXPECT_THROW(rt::clip_by_global_norm(small, 0.0), rt::RuntimeError);
}

TEST(OptimTest, CheckpointWriterRoundTrip) {
  cellscope::testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const auto file = dir.path() / "net.ckpt";
  std::vector<rt::CheckpointTensor> entries = {
      rt::checkpoint_entry("fc.weight", Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6})),
      rt::checkpoint_entry("global_step", Tensor::from_ints({1}, {7}, graphcore::DType::Int32)),
      rt::checkpoint_entry("learning_rate", Tensor::full({}, 0.01)),
      rt::checkpoint_entry("count", Tensor::from_ints({2}, {-1, 1LL << 40})),
      rt::checkpoint_entry(
          "half", Tensor::from_floats({3}, {0.5f, -2.0f, 1e-3f}).cast(graphcore::DType::Float16)),
      rt::checkpoint_entry("mask", Tensor::from_ints({2}, {1, 0}).cast(graphcore::DType::Bool)),
  };
  for (bool crc : {false, true}) {
    rt::write_checkpoint(file, entries, crc);
    const auto back = rt::read_checkpoint(file);
    ASSERT_EQ(back.size(), entries.size());
    for (size_t i = 0; i < back.size(); ++i) {
      EXPECT_EQ(back[i].name, entries[i].name);
      EXPECT_EQ(back[i].stored_type, entries[i].stored_type);
      EXPECT_EQ(back[i].shape, entries[i].value.shape());
      for (int64_t k = 0; k < entries[i].value.numel(); ++k)
        EXPECT_EQ(back[i].value.at(k), entries[i].value.at(k));
    }
  }
  EXPECT_EQ(entries[2].stored_type, "Float32");
  EXPECT_TRUE(entries[2].value.shape().empty());  // a scalar: no dims, as save_checkpoint

  // Failures leave the old file as it was and no temporary file behind.
  std::string before;
  {
    std::ifstream in(file, std::ios::binary);
    before.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto dup = entries;
  dup.push_back(entries[0]);
  EXPECT_THROW(rt::write_checkpoint(file, dup), rt::RuntimeError);
  rt::CheckpointTensor skipped;
  skipped.name = "s";
  skipped.skipped = "a string value";
  EXPECT_THROW(rt::write_checkpoint(file, std::vector{skipped}), rt::RuntimeError);
  EXPECT_THROW(rt::write_checkpoint(dir.path() / "missing_dir" / "x.ckpt", entries),
               rt::RuntimeError);
  std::string after;
  {
    std::ifstream in(file, std::ios::binary);
    after.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(before, after);
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1u);
}

TEST(OptimTest, OptimizerStateInACheckpoint) {
  // The names MindSpore 2.10 gives a TrainOneStepCell's optimizer state (save_checkpoint of
  // nn.Adam / nn.SGD after one step).
  OptimizerConfig c = cfg_of(OptimizerKind::Adam, 1e-3);
  rt::Optimizer adam(c, {"fc.weight", "fc.bias"}, {{2, 3}, {2}});
  std::vector<std::string> names;
  for (const auto& e : adam.state()) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"global_step", "learning_rate", "beta1_power",
                                             "beta2_power", "moment1.fc.weight", "moment1.fc.bias",
                                             "moment2.fc.weight", "moment2.fc.bias"}));
  c = cfg_of(OptimizerKind::SGD, 0.1);
  rt::Optimizer sgd(c, {"w"}, {{2}});
  const auto st = sgd.state();
  ASSERT_EQ(st.size(), 5u);
  EXPECT_EQ(st[0].stored_type, "Int32");
  EXPECT_EQ(st[0].value.shape(), std::vector<int64_t>{1});
  EXPECT_EQ(st[4].name, "stat.w");
  EXPECT_EQ(st[4].value.at(1), 1.0);  // stat starts at ones
}

TEST(OptimTest, ConfigsFromHandMadePlanCalls) {
  using graphcore::Attr;
  using graphcore::PlanCall;
  graphcore::TrainingPlan plan;
  plan.optimizer = PlanCall{"nn.Momentum",
                            {{"learning_rate", graphcore::AttrValue{}},
                             {"momentum", 0.9},
                             {"weight_decay", 1e-4},
                             {"use_nesterov", true}},
                            "train.py",
                            {{41, 4}, {41, 60}}};
  // The learning rate is a schedule the program built.
  plan.lr_schedule = PlanCall{"nn.cosine_decay_lr",
                              {{"min_lr", 0.0},
                               {"max_lr", 0.1},
                               {"total_step", int64_t{6}},
                               {"step_per_epoch", int64_t{2}},
                               {"decay_epoch", int64_t{2}}},
                              "train.py",
                              {{40, 0}, {40, 50}}};
  plan.param_groups = {{{"conv.weight"}, {{"weight_decay", 1e-3}}},
                       {{"bn.gamma"}, {{"lr", 0.01}, {"grad_centralization", false}}},
                       {{"bn.gamma", "conv.weight"}, {{"order_params", true}}}};
  OptimizerConfig c = rt::optimizer_config_from_plan(plan);
  EXPECT_EQ(c.kind, OptimizerKind::Momentum);
  EXPECT_EQ(c.learning_rate.kind, LrSchedule::Kind::List);
  EXPECT_EQ(c.learning_rate.values.size(), 6u);
  EXPECT_FLOAT_EQ(c.learning_rate.at(2), 0.05f);
  EXPECT_DOUBLE_EQ(c.momentum, 0.9);
  EXPECT_DOUBLE_EQ(c.weight_decay, 1e-4);
  EXPECT_TRUE(c.nesterov);
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].weight_decay, 1e-3);
  EXPECT_FALSE(c.groups[0].lr.has_value());
  EXPECT_EQ(c.groups[1].lr->learning_rate, 0.01);
  EXPECT_EQ(c.order_params, (std::vector<std::string>{"bn.gamma", "conv.weight"}));

  // A schedule class, and a loss-scale manager.
  const auto s = rt::lr_schedule_from_call(PlanCall{
      "nn.WarmUpLR", {{"learning_rate", 0.1}, {"warmup_steps", int64_t{2}}}, "train.py", {}});
  EXPECT_FLOAT_EQ(s.at(1), 0.05f);
  const auto ls = rt::loss_scale_from_call(
      PlanCall{"amp.DynamicLossScaleManager",
               {{"init_loss_scale", 1024.0}, {"scale_window", int64_t{50}}},
               "train.py",
               {}});
  EXPECT_EQ(ls.kind, rt::LossScaleConfig::Kind::Dynamic);
  EXPECT_EQ(ls.init_loss_scale, 1024.0);
  EXPECT_EQ(ls.scale_factor, 2.0);
  EXPECT_EQ(ls.scale_window, 50);

  // What the runtime cannot use is an error naming the call and its line.
  plan.lr_schedule.reset();
  try {
    rt::optimizer_config_from_plan(plan);
    FAIL() << "no error";
  } catch (const rt::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("nn.Momentum at train.py:42"), std::string::npos)
        << e.what();
  }
  plan.optimizer = PlanCall{"nn.Adam", {{"weight_decay", std::string("schedule")}}, "t.py", {}};
  EXPECT_THROW(rt::optimizer_config_from_plan(plan), rt::RuntimeError);
  plan.optimizer = PlanCall{"nn.Adagrad", {}, "t.py", {}};
  EXPECT_THROW(rt::optimizer_config_from_plan(plan), rt::RuntimeError);
  // MindSpore's own checks, located.
  try {
    rt::lr_schedule_from_call(
        PlanCall{"nn.CosineDecayLR",
                 {{"min_lr", 0.2}, {"max_lr", 0.1}, {"decay_steps", int64_t{4}}},
                 "t.py",
                 {{9, 0}, {9, 1}}});
    FAIL() << "no error";
  } catch (const rt::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("t.py:10"), std::string::npos) << e.what();
  }
}
