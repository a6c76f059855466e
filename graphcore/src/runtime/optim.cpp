// MindSpore 2.10's optimizers, learning-rate schedules, loss scaling and clip_by_global_norm on
// the CPU runtime (graphcore/optim.h). Every formula follows the MindSpore source it names and
// keeps its float32 order of operations (this file is compiled with -ffp-contract=off: a fused
// multiply-add would round differently from MindSpore's separate multiply and add). The
// dynamic_lr list builders compute in double, as Python does.
#include "graphcore/optim.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numbers>
#include <set>
#include <sstream>

#include "graphcore/checked.h"
#include "runtime/parallel.h"

namespace graphcore::runtime {

namespace {

// f(i) for every i < n: the update of one element, independent of every other, so ranges of
// elements run on the runtime's threads (the Executor's count, set on this thread) and give the
// same bits at any split.
template <class F>
void for_elements(size_t n, F&& f) {
  parallel_for(static_cast<int64_t>(n), kGrainCheap, [&](int64_t b, int64_t e) {
    for (auto i = static_cast<size_t>(b); i < static_cast<size_t>(e); ++i) f(i);
  });
}

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw RuntimeError("For '" + where + "', " + what);
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

void check_positive_int(int64_t v, const char* name, const std::string& where) {
  if (v <= 0) {
    bad(where,
        std::string("'") + name + "' must be a positive int, but got " + std::to_string(v) + ".");
  }
}
void check_positive(double v, const char* name, const std::string& where) {
  if (!(v > 0) || !std::isfinite(v))
    bad(where, std::string("'") + name + "' must be a positive float, but got " + num(v) + ".");
}
void check_non_negative(double v, const char* name, const std::string& where) {
  if (!(v >= 0) || !std::isfinite(v))
    bad(where, std::string("'") + name + "' must be a non-negative float, but got " + num(v) + ".");
}

// Python's math.floor(a / b) for positive ints: true division in double, then floor.
int64_t floor_div_py(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
}

// A list builder's size, bounded so that a typo (total_step=1e12) fails instead of exhausting
// memory.
void check_total_step(int64_t total_step, const std::string& where) {
  check_positive_int(total_step, "total_step", where);
  constexpr int64_t kMaxSteps = int64_t{1} << 31;
  if (total_step > kMaxSteps) {
    bad(where, "'total_step' " + std::to_string(total_step) +
                   " is more steps than the runtime "
                   "trains (at most 2^31)");
  }
}

void check_decay_inputs(double lr, double decay_rate, int64_t total_step, int64_t step_per_epoch,
                        int64_t decay_epoch, const std::string& where) {
  check_total_step(total_step, where);
  check_positive_int(step_per_epoch, "step_per_epoch", where);
  check_positive_int(decay_epoch, "decay_epoch", where);
  check_positive(lr, "learning_rate", where);
  check_positive(decay_rate, "decay_rate", where);
}

}  // namespace

// ---- dynamic_lr ---------------------------------------------------------------------------------
// mindspore/nn/dynamic_lr.py, expression by expression.

std::vector<double> piecewise_constant_lr(const std::vector<int64_t>& milestone,
                                          const std::vector<double>& learning_rates) {
  const std::string where = "piecewise_constant_lr";
  if (milestone.size() != learning_rates.size()) {
    bad(where, "the length of 'milestone' (" + std::to_string(milestone.size()) +
                   ") must equal the length of 'learning_rates' (" +
                   std::to_string(learning_rates.size()) + ").");
  }
  std::vector<double> lr;
  int64_t last = 0;
  for (size_t i = 0; i < milestone.size(); ++i) {
    check_positive_int(milestone[i], ("milestone[" + std::to_string(i) + "]").c_str(), where);
    if (milestone[i] < last) {
      bad(where, "the elements of 'milestone' must be in ascending order, but milestone[" +
                     std::to_string(i) + "] = " + std::to_string(milestone[i]) + " < " +
                     std::to_string(last) + ".");
    }
    check_total_step(milestone[i], where);
    lr.insert(lr.end(), static_cast<size_t>(milestone[i] - last), learning_rates[i]);
    last = milestone[i];
  }
  return lr;
}

std::vector<double> exponential_decay_lr(double learning_rate, double decay_rate,
                                         int64_t total_step, int64_t step_per_epoch,
                                         int64_t decay_epoch, bool is_stair) {
  check_decay_inputs(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                     "exponential_decay_lr");
  std::vector<double> lr;
  lr.reserve(static_cast<size_t>(total_step));
  for (int64_t i = 0; i < total_step; ++i) {
    const int64_t epoch = floor_div_py(i, step_per_epoch);
    const double e = is_stair ? static_cast<double>(floor_div_py(epoch, decay_epoch))
                              : static_cast<double>(epoch) / static_cast<double>(decay_epoch);
    lr.push_back(learning_rate * std::pow(decay_rate, e));
  }
  return lr;
}

std::vector<double> natural_exp_decay_lr(double learning_rate, double decay_rate,
                                         int64_t total_step, int64_t step_per_epoch,
                                         int64_t decay_epoch, bool is_stair) {
  check_decay_inputs(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                     "natural_exp_decay_lr");
  std::vector<double> lr;
  lr.reserve(static_cast<size_t>(total_step));
  for (int64_t i = 0; i < total_step; ++i) {
    int64_t x = floor_div_py(i, step_per_epoch);
    if (is_stair) x = floor_div_py(x, decay_epoch) * decay_epoch;
    // `math.e ** (...)`: pow, not exp (they can differ in the last bit).
    lr.push_back(learning_rate * std::pow(std::numbers::e, -decay_rate * static_cast<double>(x)));
  }
  return lr;
}

std::vector<double> inverse_decay_lr(double learning_rate, double decay_rate, int64_t total_step,
                                     int64_t step_per_epoch, int64_t decay_epoch, bool is_stair) {
  check_decay_inputs(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                     "inverse_decay_lr");
  std::vector<double> lr;
  lr.reserve(static_cast<size_t>(total_step));
  for (int64_t i = 0; i < total_step; ++i) {
    const int64_t epoch = floor_div_py(i, step_per_epoch);
    if (is_stair) {
      lr.push_back(learning_rate /
                   (1 + decay_rate * static_cast<double>(floor_div_py(epoch, decay_epoch))));
    } else {
      lr.push_back(learning_rate / (1 + decay_rate * static_cast<double>(epoch) /
                                            static_cast<double>(decay_epoch)));
    }
  }
  return lr;
}

std::vector<double> cosine_decay_lr(double min_lr, double max_lr, int64_t total_step,
                                    int64_t step_per_epoch, int64_t decay_epoch) {
  const std::string where = "cosine_decay_lr";
  check_non_negative(min_lr, "min_lr", where);
  check_positive(max_lr, "max_lr", where);
  check_total_step(total_step, where);
  check_positive_int(step_per_epoch, "step_per_epoch", where);
  check_positive_int(decay_epoch, "decay_epoch", where);
  if (min_lr >= max_lr) {
    bad(where, "the 'max_lr' should be greater than the 'min_lr', but got 'max_lr' value: " +
                   num(max_lr) + ", 'min_lr' value: " + num(min_lr) + ".");
  }
  const double delta = 0.5 * (max_lr - min_lr);
  std::vector<double> lr;
  lr.reserve(static_cast<size_t>(total_step));
  for (int64_t i = 0; i < total_step; ++i) {
    const int64_t e = std::min(floor_div_py(i, step_per_epoch), decay_epoch);
    lr.push_back(min_lr + delta * (1 + std::cos(std::numbers::pi * static_cast<double>(e) /
                                                static_cast<double>(decay_epoch))));
  }
  return lr;
}

std::vector<double> polynomial_decay_lr(double learning_rate, double end_learning_rate,
                                        int64_t total_step, int64_t step_per_epoch,
                                        int64_t decay_epoch, double power,
                                        bool update_decay_epoch) {
  const std::string where = "polynomial_decay_lr";
  check_positive(learning_rate, "learning_rate", where);
  check_non_negative(end_learning_rate, "end_learning_rate", where);
  check_positive(power, "power", where);
  check_total_step(total_step, where);
  check_positive_int(step_per_epoch, "step_per_epoch", where);
  check_positive_int(decay_epoch, "decay_epoch", where);
  const int64_t origin = decay_epoch;
  const double delta = learning_rate - end_learning_rate;
  std::vector<double> lr;
  lr.reserve(static_cast<size_t>(total_step));
  for (int64_t i = 0; i < total_step; ++i) {
    const int64_t current = floor_div_py(i, step_per_epoch);
    int64_t tmp = 0;
    if (update_decay_epoch) {
      // origin * max(math.ceil(current / origin), 1); tmp = current
      const auto c = static_cast<int64_t>(
          std::ceil(static_cast<double>(current) / static_cast<double>(origin)));
      decay_epoch = origin * std::max<int64_t>(c, 1);
      tmp = current;
    } else {
      tmp = std::min(decay_epoch, current);
    }
    lr.push_back(
        delta * std::pow(1 - static_cast<double>(tmp) / static_cast<double>(decay_epoch), power) +
        end_learning_rate);
  }
  return lr;
}

std::vector<double> warmup_lr(double learning_rate, int64_t total_step, int64_t step_per_epoch,
                              int64_t warmup_epoch) {
  const std::string where = "warmup_lr";
  check_non_negative(learning_rate, "learning_rate", where);
  check_positive_int(warmup_epoch, "warmup_epoch", where);
  check_total_step(total_step, where);
  check_positive_int(step_per_epoch, "step_per_epoch", where);
  std::vector<double> lr;
  lr.reserve(static_cast<size_t>(total_step));
  for (int64_t i = 0; i < total_step; ++i) {
    const int64_t e = std::min(warmup_epoch, floor_div_py(i, step_per_epoch));
    lr.push_back(learning_rate * static_cast<double>(e) / static_cast<double>(warmup_epoch));
  }
  return lr;
}

// ---- LrSchedule ---------------------------------------------------------------------------------

LrSchedule LrSchedule::constant(double lr) {
  check_non_negative(lr, "learning_rate", "Optimizer");
  LrSchedule s;
  s.kind = Kind::Constant;
  s.learning_rate = lr;
  return s;
}

LrSchedule LrSchedule::list(const std::vector<double>& per_step) {
  if (per_step.empty()) bad("Optimizer", "the learning-rate list is empty.");
  LrSchedule s;
  s.kind = Kind::List;
  s.values.reserve(per_step.size());
  for (size_t i = 0; i < per_step.size(); ++i) {
    if (!std::isfinite(per_step[i]))
      bad("Optimizer", "learning_rate[" + std::to_string(i) + "] is not finite.");
    s.values.push_back(static_cast<float>(per_step[i]));  // np.float32
  }
  return s;
}

namespace {
LrSchedule decay_schedule(LrSchedule::Kind kind, const char* cls, double lr, double decay_rate,
                          int64_t decay_steps, bool is_stair) {
  check_positive_int(decay_steps, "decay_steps", cls);
  check_positive(lr, "learning_rate", cls);
  check_positive(decay_rate, "decay_rate", cls);
  LrSchedule s;
  s.kind = kind;
  s.learning_rate = lr;
  s.decay_rate = decay_rate;
  s.decay_steps = decay_steps;
  s.is_stair = is_stair;
  return s;
}
}  // namespace

LrSchedule LrSchedule::exponential_decay(double lr, double decay_rate, int64_t decay_steps,
                                         bool is_stair) {
  return decay_schedule(Kind::ExponentialDecay, "ExponentialDecayLR", lr, decay_rate, decay_steps,
                        is_stair);
}
LrSchedule LrSchedule::natural_exp_decay(double lr, double decay_rate, int64_t decay_steps,
                                         bool is_stair) {
  return decay_schedule(Kind::NaturalExpDecay, "NaturalExpDecayLR", lr, decay_rate, decay_steps,
                        is_stair);
}
LrSchedule LrSchedule::inverse_decay(double lr, double decay_rate, int64_t decay_steps,
                                     bool is_stair) {
  return decay_schedule(Kind::InverseDecay, "InverseDecayLR", lr, decay_rate, decay_steps,
                        is_stair);
}

LrSchedule LrSchedule::cosine_decay(double min_lr, double max_lr, int64_t decay_steps) {
  const char* cls = "CosineDecayLR";
  check_non_negative(min_lr, "min_lr", cls);
  check_positive(max_lr, "max_lr", cls);
  check_positive_int(decay_steps, "decay_steps", cls);
  if (min_lr >= max_lr) {
    bad(cls, "the 'max_lr' should be greater than the 'min_lr', but got 'max_lr' value: " +
                 num(max_lr) + ", 'min_lr' value: " + num(min_lr) + ".");
  }
  LrSchedule s;
  s.kind = Kind::CosineDecay;
  s.min_lr = min_lr;
  s.max_lr = max_lr;
  s.decay_steps = decay_steps;
  return s;
}

LrSchedule LrSchedule::polynomial_decay(double lr, double end_lr, int64_t decay_steps, double power,
                                        bool update_decay_steps) {
  const char* cls = "PolynomialDecayLR";
  check_positive(lr, "learning_rate", cls);
  check_non_negative(end_lr, "end_learning_rate", cls);
  check_positive_int(decay_steps, "decay_steps", cls);
  check_positive(power, "power", cls);
  LrSchedule s;
  s.kind = Kind::PolynomialDecay;
  s.learning_rate = lr;
  s.end_learning_rate = end_lr;
  s.decay_steps = decay_steps;
  s.power = power;
  s.is_stair = update_decay_steps;
  return s;
}

LrSchedule LrSchedule::warmup(double lr, int64_t warmup_steps) {
  const char* cls = "WarmUpLR";
  check_non_negative(lr, "learning_rate", cls);
  check_positive_int(warmup_steps, "warmup_steps", cls);
  LrSchedule s;
  s.kind = Kind::WarmUp;
  s.learning_rate = lr;
  s.decay_steps = warmup_steps;
  return s;
}

LrSchedule LrSchedule::from_graph(const CellReport& report) {
  const std::string what = "the learning-rate schedule " + report.class_name;
  if (!report.compiled || report.graph.outputs.size() != 1 || report.inputs.size() != 1)
    throw RuntimeError(what + ": its construct was not compiled");
  if (!report.params.empty())
    throw RuntimeError(what + ": it holds Parameters (" + report.params.front().name + ")");
  LrSchedule s;
  s.kind = Kind::Graph;
  s.graph = std::make_shared<const CellReport>(report);
  return s;
}

// mindspore/nn/learning_rate_schedule.py: Python scalars meet float32 tensors, so every operand
// is rounded to float32 and every operation is a float32 one.
float LrSchedule::at(int64_t global_step) const {
  const auto f = [](double v) { return static_cast<float>(v); };
  const auto step = static_cast<float>(global_step);  // Cast(global_step, float32)
  const float ds = f(static_cast<double>(decay_steps));
  switch (kind) {
    case Kind::Constant:
      return f(learning_rate);
    case Kind::List:
      if (global_step < 0 || static_cast<uint64_t>(global_step) >= values.size()) {
        throw RuntimeError("the learning-rate list has " + std::to_string(values.size()) +
                           " values but step " + std::to_string(global_step + 1) + " needs value " +
                           std::to_string(global_step) +
                           " (MindSpore fails there too: Gather's index out of range); make the "
                           "list as long as the training");
      }
      return values[static_cast<size_t>(global_step)];
    case Kind::ExponentialDecay: {
      float p = step / ds;
      if (is_stair) p = std::floor(p);
      return f(learning_rate) * std::pow(f(decay_rate), p);
    }
    case Kind::NaturalExpDecay: {
      float p = step;
      if (is_stair) p = std::floor(p / ds) * ds;  // FloorDiv(p, decay_steps) * decay_steps
      return f(learning_rate) * std::pow(f(std::numbers::e), f(-decay_rate) * p);
    }
    case Kind::InverseDecay: {
      float p = step / ds;
      if (is_stair) p = std::floor(p);
      return f(learning_rate) / (1.0f + f(decay_rate) * p);
    }
    case Kind::CosineDecay: {
      const auto p = static_cast<float>(std::min(global_step, decay_steps));
      return f(min_lr) +
             f(0.5 * (max_lr - min_lr)) * (1.0f + std::sin(f(std::numbers::pi) * (p / ds + 0.5f)));
    }
    case Kind::PolynomialDecay: {
      float gs = step;
      float tds = ds;
      if (is_stair) {
        tds = tds * std::max(std::ceil(gs / tds), 1.0f);
      } else {
        gs = std::min(gs, tds);
      }
      const float p = gs / tds;
      return f(learning_rate - end_learning_rate) * std::pow(1.0f - p, f(power)) +
             f(end_learning_rate);
    }
    case Kind::WarmUp: {
      const float pct = static_cast<float>(std::min(global_step, decay_steps)) / ds;
      return f(learning_rate) * pct;
    }
    case Kind::Graph: {
      // MindSpore's optimizer calls learning_rate(global_step) with its int32 (1,) Parameter.
      if (global_step < std::numeric_limits<int32_t>::min() ||
          global_step > std::numeric_limits<int32_t>::max()) {
        throw RuntimeError(str() + ": global_step " + std::to_string(global_step) +
                           " does not fit MindSpore's int32 global_step");
      }
      if (!executor) executor = std::make_shared<Executor>(*graph);
      executor->reset();
      executor->set_input(0, Tensor::from_ints({1}, {global_step}, DType::Int32));
      const RunStatus st = executor->run();
      if (st.kind != RunStatus::Kind::Finished) {
        throw RuntimeError(str() + " at global_step " + std::to_string(global_step) + ": " +
                           (st.message.empty() ? "the run did not finish" : st.message));
      }
      const std::vector<Tensor> out = executor->outputs();
      if (out.size() != 1 || out[0].numel() != 1 || !out[0].is_float())
        throw RuntimeError(str() + ": its construct does not give one float value");
      return out[0].data<float>()[0];
    }
  }
  return 0.0f;
}

std::string LrSchedule::str() const {
  switch (kind) {
    case Kind::Constant:
      return num(learning_rate);
    case Kind::List:
      return "a list of " + std::to_string(values.size()) + " values";
    case Kind::ExponentialDecay:
    case Kind::NaturalExpDecay:
    case Kind::InverseDecay: {
      const char* cls = kind == Kind::ExponentialDecay  ? "ExponentialDecayLR"
                        : kind == Kind::NaturalExpDecay ? "NaturalExpDecayLR"
                                                        : "InverseDecayLR";
      return std::string(cls) + "(learning_rate=" + num(learning_rate) +
             ", decay_rate=" + num(decay_rate) + ", decay_steps=" + std::to_string(decay_steps) +
             (is_stair ? ", is_stair=True)" : ")");
    }
    case Kind::CosineDecay:
      return "CosineDecayLR(min_lr=" + num(min_lr) + ", max_lr=" + num(max_lr) +
             ", decay_steps=" + std::to_string(decay_steps) + ")";
    case Kind::PolynomialDecay:
      return "PolynomialDecayLR(learning_rate=" + num(learning_rate) +
             ", end_learning_rate=" + num(end_learning_rate) +
             ", decay_steps=" + std::to_string(decay_steps) + ", power=" + num(power) +
             (is_stair ? ", update_decay_steps=True)" : ")");
    case Kind::WarmUp:
      return "WarmUpLR(learning_rate=" + num(learning_rate) +
             ", warmup_steps=" + std::to_string(decay_steps) + ")";
    case Kind::Graph:
      return (graph ? graph->class_name : std::string("?")) + " (its construct, compiled)";
  }
  return {};
}

// ---- OptimizerConfig ----------------------------------------------------------------------------

std::string_view optimizer_kind_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::SGD:
      return "SGD";
    case OptimizerKind::Momentum:
      return "Momentum";
    case OptimizerKind::Adam:
      return "Adam";
    case OptimizerKind::AdamWeightDecay:
      return "AdamWeightDecay";
  }
  return "?";
}

std::optional<OptimizerKind> optimizer_kind_from_name(std::string_view name) {
  for (std::string_view prefix : {"mindspore.nn.", "nn.", "mindspore.nn.optim."}) {
    if (name.starts_with(prefix)) {
      name.remove_prefix(prefix.size());
      break;
    }
  }
  for (auto k : {OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::Adam,
                 OptimizerKind::AdamWeightDecay})
    if (optimizer_kind_name(k) == name) return k;
  return std::nullopt;
}

OptimizerConfig OptimizerConfig::defaults(OptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind;
  switch (kind) {
    case OptimizerKind::SGD:
      c.learning_rate = LrSchedule::constant(0.1);
      break;
    case OptimizerKind::Momentum:
      c.learning_rate = LrSchedule::constant(0.1);
      c.momentum = 0.9;
      break;
    case OptimizerKind::Adam:
      c.learning_rate = LrSchedule::constant(1e-3);
      c.eps = 1e-8;
      break;
    case OptimizerKind::AdamWeightDecay:
      c.learning_rate = LrSchedule::constant(1e-3);
      c.eps = 1e-6;
      break;
  }
  return c;
}

void OptimizerConfig::validate() const {
  const std::string where(optimizer_kind_name(kind));
  check_non_negative(weight_decay, "weight_decay", where);
  if (kind == OptimizerKind::AdamWeightDecay && loss_scale != 1.0)
    bad(where, "there is no 'loss_scale' argument (AdamWeightDecay does not unscale gradients).");
  check_positive(loss_scale, "loss_scale", where);
  if (learning_rate.kind == LrSchedule::Kind::Constant)
    check_non_negative(learning_rate.learning_rate, "learning_rate", where);
  if (kind == OptimizerKind::SGD || kind == OptimizerKind::Momentum) {
    check_non_negative(momentum, "momentum", where);
    check_non_negative(dampening, "dampening", where);
  }
  if (kind == OptimizerKind::SGD && nesterov && (momentum <= 0.0 || dampening != 0.0)) {
    bad(where,
        "if 'nesterov' is true, 'momentum' must be > 0.0 and 'dampening' must equal to "
        "0.0, but got 'momentum' " +
            num(momentum) + ", 'dampening' " + num(dampening) + ".");
  }
  if (kind == OptimizerKind::Adam || kind == OptimizerKind::AdamWeightDecay) {
    if (!(beta1 > 0.0 && beta1 < 1.0))
      bad(where, "'beta1' must be in (0.0, 1.0), but got " + num(beta1) + ".");
    if (!(beta2 > 0.0 && beta2 < 1.0))
      bad(where, "'beta2' must be in (0.0, 1.0), but got " + num(beta2) + ".");
    check_positive(eps, "eps", where);
  }
  if (use_amsgrad && kind != OptimizerKind::Adam)
    bad(where, "'use_amsgrad' is an argument of nn.Adam only.");
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].params.empty()) bad(where, "group " + std::to_string(g) + " has no 'params'.");
    if (groups[g].weight_decay) check_non_negative(*groups[g].weight_decay, "weight_decay", where);
    if (groups[g].lr && groups[g].lr->kind == LrSchedule::Kind::Constant)
      check_non_negative(groups[g].lr->learning_rate, "lr", where);
  }
  if (!order_params.empty() && groups.empty())
    bad(where, "'order_params' needs grouped parameters.");
}

std::string OptimizerConfig::str() const {
  std::string s = std::string(optimizer_kind_name(kind)) + "(learning_rate=" + learning_rate.str();
  if (kind == OptimizerKind::SGD || kind == OptimizerKind::Momentum)
    s += ", momentum=" + num(momentum);
  if (kind == OptimizerKind::SGD && dampening != 0) s += ", dampening=" + num(dampening);
  if (nesterov) s += kind == OptimizerKind::SGD ? ", nesterov=True" : ", use_nesterov=True";
  if (kind == OptimizerKind::Adam || kind == OptimizerKind::AdamWeightDecay)
    s += ", beta1=" + num(beta1) + ", beta2=" + num(beta2) + ", eps=" + num(eps);
  if (use_amsgrad) s += ", use_amsgrad=True";
  if (weight_decay != 0) s += ", weight_decay=" + num(weight_decay);
  if (loss_scale != 1) s += ", loss_scale=" + num(loss_scale);
  if (!groups.empty()) s += ", " + std::to_string(groups.size()) + " parameter groups";
  return s + ")";
}

// ---- Optimizer ----------------------------------------------------------------------------------

Optimizer::Optimizer(OptimizerConfig cfg, std::vector<std::string> names,
                     std::vector<std::vector<int64_t>> shapes)
    : cfg_(std::move(cfg)), names_(std::move(names)), shapes_(std::move(shapes)) {
  cfg_.validate();
  const std::string where(optimizer_kind_name(cfg_.kind));
  if (names_.size() != shapes_.size()) {
    throw RuntimeError(where + ": " + std::to_string(names_.size()) + " parameter names but " +
                       std::to_string(shapes_.size()) + " shapes");
  }
  if (names_.empty()) bad(where, "the argument parameters must not be empty.");
  std::map<std::string, size_t, std::less<>> index;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (!index.emplace(names_[i], i).second)
      throw RuntimeError(where + ": parameter '" + names_[i] + "' is listed twice");
  }

  const bool adamw = cfg_.kind == OptimizerKind::AdamWeightDecay;
  // Optimizer._preprocess_weight_decay: weight_decay * loss_scale (a Python float), then a
  // float32 Tensor.
  const auto wd32 = [&](double wd) {
    return static_cast<float>(adamw ? wd : wd * cfg_.loss_scale);
  };
  auto add_slot = [&](size_t i, size_t group, double wd, bool decay, bool gc) {
    Slot s;
    s.index = i;
    s.name = names_[i];
    s.shape = shapes_[i];
    auto n = checked_numel(s.shape);
    if (!n)
      throw RuntimeError(where + ": parameter '" + s.name + "' has shape " + shape_str(s.shape));
    s.numel = *n;
    s.group = group;
    s.decay = decay;
    s.weight_decay = wd32(wd);
    s.centralize = gc;
    slots_.push_back(std::move(s));
  };

  lrs_.push_back({cfg_.learning_rate, "learning_rate"});
  if (cfg_.groups.empty()) {
    for (size_t i = 0; i < names_.size(); ++i) {
      // Optimizer._init_opt_attrs' decay_filter for ungrouped parameters.
      const bool decay = names_[i].find("beta") == std::string::npos &&
                         names_[i].find("gamma") == std::string::npos;
      add_slot(i, 0, cfg_.weight_decay, decay, false);
    }
  } else {
    std::set<std::string, std::less<>> seen;
    for (size_t g = 0; g < cfg_.groups.size(); ++g) {
      const ParamGroupConfig& pg = cfg_.groups[g];
      size_t lr_index = 0;
      if (pg.lr) {
        lr_index = lrs_.size();
        lrs_.push_back({*pg.lr, "learning_rate_group_" + std::to_string(g)});
      }
      const double wd = pg.weight_decay.value_or(cfg_.weight_decay);
      for (const std::string& p : pg.params) {
        auto it = index.find(p);
        if (it == index.end()) {
          std::string msg = where + ": parameter group " + std::to_string(g) + " names '";
          msg += p;
          msg += "', which is not a trainable parameter of the network";
          throw RuntimeError(msg);
        }
        if (!seen.insert(p).second) {
          bad(where, "the " + p +
                         " parameter already exists, it does not support repeated "
                         "setting. Please check whether the optimizer parameter has been set "
                         "multiple times.");
        }
        // Grouped: a group decays when its weight_decay > 0.
        add_slot(it->second, lr_index, wd, wd > 0, pg.grad_centralization.value_or(false));
      }
    }
    if (!cfg_.order_params.empty()) {
      if (cfg_.order_params.size() != slots_.size()) {
        bad(where,
            "the length of order parameters must be the same as the length of group "
            "parameters, but got order parameters' length " +
                std::to_string(cfg_.order_params.size()) + ", group parameters' length " +
                std::to_string(slots_.size()) + ".");
      }
      std::map<std::string, Slot*, std::less<>> by_name;
      for (Slot& s : slots_) by_name[s.name] = &s;
      std::vector<Slot> ordered;
      for (const std::string& p : cfg_.order_params) {
        auto it = by_name.find(p);
        if (it == by_name.end() || it->second == nullptr) {
          std::string msg = where + ": order_params names '";
          msg += p;
          msg += "', which is not a grouped parameter (or is named twice)";
          throw RuntimeError(msg);
        }
        ordered.push_back(std::move(*it->second));
        it->second = nullptr;
      }
      slots_ = std::move(ordered);
    }
    const size_t left = names_.size() - slots_.size();
    if (left > 0) {
      spdlog::info("{}: {} trainable parameter(s) are in no parameter group and are not updated",
                   where, left);
    }
  }

  // Moments: zeros (stat: ones), as Parameter.clone(init='zeros'/'ones'). Running out of memory
  // fails the request, not the process.
  try {
    allocate_state();
  } catch (const std::bad_alloc&) {
    throw RuntimeError(where + ": out of memory allocating the optimizer state of " +
                       std::to_string(slots_.size()) + " parameters");
  }
  if (cfg_.kind == OptimizerKind::Momentum && cfg_.nesterov) {
    spdlog::info(
        "Momentum(use_nesterov=True): MindSpore 2.10's CPU ApplyMomentum kernel ignores "
        "use_nesterov, and so does this runtime (same results as MindSpore on CPU)");
  }
}

void Optimizer::allocate_state() {
  for (Slot& s : slots_) {
    const auto n = static_cast<size_t>(s.numel);
    switch (cfg_.kind) {
      case OptimizerKind::SGD:
        s.m.assign(n, 0.0f);
        s.v.assign(n, 1.0f);
        break;
      case OptimizerKind::Momentum:
        s.m.assign(n, 0.0f);
        break;
      case OptimizerKind::Adam:
        s.m.assign(n, 0.0f);
        s.v.assign(n, 0.0f);
        if (cfg_.use_amsgrad) s.vhat.assign(n, 0.0f);
        break;
      case OptimizerKind::AdamWeightDecay:
        s.m.assign(n, 0.0f);
        s.v.assign(n, 0.0f);
        break;
    }
  }
}

std::vector<std::string> Optimizer::parameters() const {
  std::vector<std::string> out;
  out.reserve(slots_.size());
  for (const Slot& s : slots_) out.push_back(s.name);
  return out;
}

double Optimizer::current_lr() const {
  return lrs_.at(slots_.front().group).schedule.at(global_step_);
}

double Optimizer::lr_at(std::string_view name, int64_t step) const {
  for (const Slot& s : slots_)
    if (s.name == name) return lrs_[s.group].schedule.at(step);
  throw RuntimeError("the optimizer has no parameter '" + std::string(name) + "'");
}

namespace {

// inner.Centralization over axes 1..rank-1 (Optimizer's _apply_grad_centralization): only for
// rank >= 2 with shape[1] % 16 == 0, else the gradient is unchanged.
void centralize(std::vector<float>& g, const std::vector<int64_t>& shape) {
  if (shape.size() < 2 || shape[1] % 16 != 0 || shape[0] == 0) return;
  const auto rows = static_cast<size_t>(shape[0]);
  const size_t cols = g.size() / rows;
  for (size_t r = 0; r < rows; ++r) {
    float* row = g.data() + r * cols;
    double sum = 0;
    for (size_t k = 0; k < cols; ++k) sum += row[k];
    const auto mean = static_cast<float>(sum / static_cast<double>(cols));
    for (size_t k = 0; k < cols; ++k) row[k] -= mean;
  }
}

}  // namespace

void Optimizer::step(std::span<Tensor* const> params, std::span<const Tensor> grads) {
  const std::string where(optimizer_kind_name(cfg_.kind));
  if (params.size() != names_.size() || grads.size() != names_.size()) {
    throw RuntimeError(where + ".step: expected " + std::to_string(names_.size()) +
                       " parameters and gradients, got " + std::to_string(params.size()) + " and " +
                       std::to_string(grads.size()));
  }
  // Check everything before changing anything.
  for (const Slot& s : slots_) {
    const Tensor* p = params[s.index];
    const Tensor& g = grads[s.index];
    if (p == nullptr || !p->defined() || p->dtype() != DType::Float32) {
      throw RuntimeError(where + ": parameter '" + s.name + "' is " +
                         (p == nullptr || !p->defined() ? std::string("missing")
                                                        : p->type_str() + ", not float32"));
    }
    if (!g.defined() || !g.is_float()) {
      throw RuntimeError(where + ": the gradient of '" + s.name + "' is " +
                         (g.defined() ? g.type_str() + ", not a float tensor" : "missing"));
    }
    if (p->shape() != s.shape || g.shape() != s.shape) {
      throw RuntimeError(where + ": parameter '" + s.name + "' should be " + shape_str(s.shape) +
                         "; got the parameter " + shape_str(p->shape()) + " and its gradient " +
                         shape_str(g.shape()));
    }
  }
  // Optimizer.get_lr() reads the learning rate at the current step, then global_step += 1.
  std::vector<float> lr(lrs_.size());
  for (size_t i = 0; i < lrs_.size(); ++i) lr[i] = lrs_[i].schedule.at(global_step_);
  // The one scratch buffer, before anything changes (out of memory fails the step, not the
  // process).
  std::vector<float> g;
  try {
    size_t most = 0;
    for (const Slot& s : slots_) most = std::max(most, static_cast<size_t>(s.numel));
    g.reserve(most);
  } catch (const std::bad_alloc&) {
    throw RuntimeError(where + ": out of memory for a gradient buffer");
  }
  ++global_step_;

  const auto reciprocal_scale = static_cast<float>(1.0 / cfg_.loss_scale);
  const bool need_scale = cfg_.loss_scale != 1.0;
  const bool adamw = cfg_.kind == OptimizerKind::AdamWeightDecay;
  const bool exec_decay = cfg_.groups.empty() ? cfg_.weight_decay > 0
                                              : std::any_of(slots_.begin(), slots_.end(),
                                                            [](const Slot& s) { return s.decay; });
  if (cfg_.kind == OptimizerKind::Adam) {
    beta1_power_ = beta1_power_ * static_cast<float>(cfg_.beta1);
    beta2_power_ = beta2_power_ * static_cast<float>(cfg_.beta2);
  }
  const auto momentum = static_cast<float>(cfg_.momentum);
  const float one = 1.0f;

  for (Slot& s : slots_) {
    auto* w = params[s.index]->data<float>();
    const Tensor& gt = grads[s.index];
    const auto n = static_cast<size_t>(s.numel);
    // The gradient is read in place unless this step changes it first (decay, centralization,
    // loss scale) or it shares memory with the parameter the update writes.
    const auto* gsrc = gt.data<float>();
    const std::less<> before;  // a total order of pointers into different tensors
    const bool overlaps = before(gsrc, w + n) && before(w, gsrc + n);
    const bool changes = !adamw && ((exec_decay && s.decay) || s.centralize || need_scale);
    if (changes || overlaps) g.assign(gsrc, gsrc + n);
    const float lr_t = lr[s.group];
    if (!adamw) {
      // Optimizer.decay_weight: AddN(weight * weight_decay, gradient).
      if (exec_decay && s.decay)
        for (size_t i = 0; i < n; ++i) g[i] = w[i] * s.weight_decay + g[i];
      // Optimizer.gradients_centralization (grouped parameters only).
      if (s.centralize) centralize(g, s.shape);
      // Optimizer.scale_grad: gradient * float32(1 / loss_scale).
      if (need_scale)
        for (size_t i = 0; i < n; ++i) g[i] = g[i] * reciprocal_scale;
    }
    const float* gv = (changes || overlaps) ? g.data() : gsrc;
    switch (cfg_.kind) {
      case OptimizerKind::Momentum: {
        // ApplyMomentum CPU kernel: accum = accum * momentum + grad; var -= accum * lr.
        float* a = s.m.data();
        for_elements(n, [&](size_t i) {
          a[i] = a[i] * momentum + gv[i];
          w[i] -= a[i] * lr_t;
        });
        break;
      }
      case OptimizerKind::SGD: {
        // SGD CPU kernel (weight_decay 0 there: nn.SGD decays in decay_weight).
        float* a = s.m.data();
        float* st = s.v.data();
        const float damp = one - static_cast<float>(cfg_.dampening);
        for_elements(n, [&](size_t i) {
          float gn = gv[i];
          if (momentum > 0.0f) {
            if (st[i] > 0.0f) {
              a[i] = gn;
              st[i] = 0.0f;
            } else {
              a[i] = a[i] * momentum + damp * gn;
            }
            if (cfg_.nesterov) {
              gn += a[i] * momentum;
            } else {
              gn = a[i];
            }
          }
          w[i] -= lr_t * gn;
        });
        break;
      }
      case OptimizerKind::Adam: {
        const auto b1 = static_cast<float>(cfg_.beta1), b2 = static_cast<float>(cfg_.beta2);
        const auto eps = static_cast<float>(cfg_.eps);
        float* m = s.m.data();
        float* v = s.v.data();
        if (cfg_.use_amsgrad) {
          // ApplyAdamWithAmsgradV2 CPU kernel.
          const float new_lr =
              lr_t * static_cast<float>(std::sqrt(static_cast<double>(one - beta2_power_))) /
              (one - beta1_power_);
          float* vh = s.vhat.data();
          for_elements(n, [&](size_t i) {
            m[i] += (gv[i] - m[i]) * (one - b1);
            v[i] += (gv[i] * gv[i] - v[i]) * (one - b2);
            vh[i] = std::max(vh[i], v[i]);
            const auto sq = static_cast<float>(std::sqrt(static_cast<double>(vh[i])));
            w[i] -= new_lr * m[i] / (sq + eps);
          });
        } else {
          // Adam CPU kernel (nnacl AdamFp32).
          const float new_lr = lr_t * std::sqrt(one - beta2_power_) / (one - beta1_power_);
          for_elements(n, [&](size_t i) {
            m[i] += (gv[i] - m[i]) * (one - b1);
            v[i] += (gv[i] * gv[i] - v[i]) * (one - b2);
            const float den = std::sqrt(v[i]) + eps;
            if (cfg_.nesterov) {
              w[i] -= new_lr * (m[i] * b1 + (one - b1) * gv[i]) / den;
            } else {
              w[i] -= new_lr * m[i] / den;
            }
          });
        }
        break;
      }
      case OptimizerKind::AdamWeightDecay: {
        // AdamWeightDecay CPU kernel (nnacl AdamWeightDecayFp32); decay 0 for undecayed ones.
        const float b1m = one - static_cast<float>(cfg_.beta1);
        const float b2m = one - static_cast<float>(cfg_.beta2);
        const auto eps = static_cast<float>(cfg_.eps);
        const float decay = (exec_decay && s.decay) ? s.weight_decay : 0.0f;
        float* m = s.m.data();
        float* v = s.v.data();
        for_elements(n, [&](size_t i) {
          m[i] += (gv[i] - m[i]) * b1m;
          v[i] += (gv[i] * gv[i] - v[i]) * b2m;
          w[i] -= lr_t * (m[i] / (std::sqrt(v[i]) + eps) + decay * w[i]);
        });
        break;
      }
    }
  }
}

namespace {

Tensor vec_tensor(const std::vector<float>& v, const std::vector<int64_t>& shape) {
  return Tensor::from_floats(shape, v);
}

const char* moment_prefix(OptimizerKind k, int which) {
  switch (k) {
    case OptimizerKind::SGD:
      return which == 0 ? "accum" : "stat";
    case OptimizerKind::Momentum:
      return "moments";
    case OptimizerKind::Adam:
      return which == 0 ? "moment1" : which == 1 ? "moment2" : "vhat";
    case OptimizerKind::AdamWeightDecay:
      return which == 0 ? "adam_m" : "adam_v";
  }
  return "";
}

}  // namespace

std::vector<CheckpointTensor> Optimizer::state() const {
  std::vector<CheckpointTensor> out;
  out.push_back(
      checkpoint_entry("global_step", Tensor::from_ints({1}, {global_step_}, DType::Int32)));
  // The learning-rate Parameters: a number is a float32 scalar, a list a float32 vector (MindSpore
  // saves a list's Parameter after the moments; the order does not matter to load_checkpoint).
  std::set<std::string> done;
  auto add_lr = [&](const GroupLr& g) {
    if (!g.schedule.is_parameter() || !done.insert(g.param_name).second) return;
    if (g.schedule.kind == LrSchedule::Kind::Constant) {
      out.push_back(checkpoint_entry(
          g.param_name, Tensor::full({}, static_cast<float>(g.schedule.learning_rate))));
    } else {
      out.push_back(checkpoint_entry(
          g.param_name, Tensor::from_floats({static_cast<int64_t>(g.schedule.values.size())},
                                            g.schedule.values)));
    }
  };
  for (const Slot& s : slots_) add_lr(lrs_[s.group]);
  if (cfg_.kind == OptimizerKind::SGD || cfg_.kind == OptimizerKind::Momentum) {
    out.push_back(
        checkpoint_entry("momentum", Tensor::full({}, static_cast<float>(cfg_.momentum))));
  }
  if (cfg_.kind == OptimizerKind::Adam) {
    out.push_back(checkpoint_entry("beta1_power", Tensor::full({}, beta1_power_)));
    out.push_back(checkpoint_entry("beta2_power", Tensor::full({}, beta2_power_)));
  }
  auto add_moments = [&](int which, const std::vector<float> Slot::*field) {
    for (const Slot& s : slots_) {
      out.push_back(checkpoint_entry(std::string(moment_prefix(cfg_.kind, which)) + "." + s.name,
                                     vec_tensor(s.*field, s.shape)));
    }
  };
  add_moments(0, &Slot::m);
  if (cfg_.kind != OptimizerKind::Momentum) add_moments(1, &Slot::v);
  if (cfg_.kind == OptimizerKind::Adam && cfg_.use_amsgrad) add_moments(2, &Slot::vhat);
  return out;
}

size_t Optimizer::load_state(std::span<const CheckpointTensor> entries) {
  std::map<std::string_view, const CheckpointTensor*> by_name;
  for (const CheckpointTensor& e : entries) by_name[e.name] = &e;
  std::vector<std::string> errors;
  auto find = [&](const std::string& name, const std::vector<int64_t>& shape,
                  bool want_float) -> const CheckpointTensor* {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      errors.push_back("'" + name + "' is missing");
      return nullptr;
    }
    const CheckpointTensor& e = *it->second;
    if (!e.value.defined()) {
      errors.push_back("'" + name + "' has no value (" + e.skipped + ")");
      return nullptr;
    }
    const auto n = checked_numel(shape);
    if (e.value.numel() != n.value_or(-1) || e.value.is_float() != want_float) {
      errors.push_back("'" + name + "' is " + e.value.type_str() + ", expected " +
                       shape_str(shape) + (want_float ? " float" : " int"));
      return nullptr;
    }
    return &e;
  };
  const CheckpointTensor* step = find("global_step", {1}, false);
  const CheckpointTensor *b1 = nullptr, *b2 = nullptr;
  if (cfg_.kind == OptimizerKind::Adam) {
    b1 = find("beta1_power", {}, true);
    b2 = find("beta2_power", {}, true);
  }
  std::vector<std::array<const CheckpointTensor*, 3>> moments(slots_.size(),
                                                              {nullptr, nullptr, nullptr});
  const int kinds = cfg_.kind == OptimizerKind::Momentum                     ? 1
                    : (cfg_.kind == OptimizerKind::Adam && cfg_.use_amsgrad) ? 3
                                                                             : 2;
  for (size_t i = 0; i < slots_.size(); ++i) {
    for (int k = 0; k < kinds; ++k) {
      moments[i][static_cast<size_t>(k)] = find(
          std::string(moment_prefix(cfg_.kind, k)) + "." + slots_[i].name, slots_[i].shape, true);
    }
  }
  if (!errors.empty()) {
    std::string msg = std::string(optimizer_kind_name(cfg_.kind)) +
                      ": cannot resume the optimizer state: " + std::to_string(errors.size()) +
                      " problem(s)";
    for (size_t k = 0; k < errors.size() && k < 20; ++k) msg += "\n  " + errors[k];
    if (errors.size() > 20) msg += "\n  ... (" + std::to_string(errors.size() - 20) + " more)";
    throw RuntimeError(msg);
  }
  size_t used = 1;
  global_step_ = static_cast<int64_t>(step->value.at(0));
  if (b1 && b2) {
    beta1_power_ = static_cast<float>(b1->value.at(0));
    beta2_power_ = static_cast<float>(b2->value.at(0));
    used += 2;
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    std::vector<float>* fields[3] = {&slots_[i].m, &slots_[i].v, &slots_[i].vhat};
    for (int k = 0; k < kinds; ++k) {
      const Tensor& t = moments[i][static_cast<size_t>(k)]->value;
      std::vector<float>& f = *fields[k];
      f.resize(static_cast<size_t>(t.numel()));
      for (int64_t j = 0; j < t.numel(); ++j)
        f[static_cast<size_t>(j)] = static_cast<float>(t.at(j));
      ++used;
    }
  }
  return used;
}

// ---- loss scaling -------------------------------------------------------------------------------

LossScaler::LossScaler(LossScaleConfig cfg) : cfg_(cfg) {
  switch (cfg_.kind) {
    case LossScaleConfig::Kind::None:
      scale_ = 1.0f;
      break;
    case LossScaleConfig::Kind::Fixed:
      if (!(cfg_.loss_scale >= 1) || !std::isfinite(cfg_.loss_scale)) {
        bad("FixedLossScaleManager",
            "the argument 'loss_scale' must be > 1, but got " + num(cfg_.loss_scale) + ".");
      }
      scale_ = static_cast<float>(cfg_.loss_scale);
      break;
    case LossScaleConfig::Kind::Dynamic:
      if (!(cfg_.init_loss_scale >= 1) || !std::isfinite(cfg_.init_loss_scale)) {
        bad("DynamicLossScaleManager", "the argument 'init_loss_scale' must be > 1, but got " +
                                           num(cfg_.init_loss_scale) + ".");
      }
      if (!(cfg_.scale_factor > 0) || !std::isfinite(cfg_.scale_factor)) {
        bad("DynamicLossScaleManager",
            "the argument 'scale_factor' must be > 0, but got " + num(cfg_.scale_factor) + ".");
      }
      check_positive_int(cfg_.scale_window, "scale_window", "DynamicLossScaleManager");
      if (cfg_.scale_window > std::numeric_limits<int32_t>::max())
        bad("DynamicLossScaleManager", "'scale_window' does not fit in int32.");
      scale_ = static_cast<float>(cfg_.init_loss_scale);
      if (cfg_.amp_scaler) cur_iter_ = 0;  // DynamicLossScaler's counter starts at 0
      break;
  }
}

bool LossScaler::has_update_cell() const {
  return cfg_.kind == LossScaleConfig::Kind::Dynamic ||
         (cfg_.kind == LossScaleConfig::Kind::Fixed && cfg_.drop_overflow_update);
}

bool all_finite(std::span<const Tensor> tensors) {
  for (const Tensor& t : tensors) {
    if (!t.defined() || !t.is_float()) continue;
    const auto* d = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!std::isfinite(d[i])) return false;
  }
  return true;
}

bool LossScaler::unscale_and_update(std::span<Tensor> grads) {
  if (!has_update_cell()) return true;
  // TrainOneStepWithLossScaleCell: grad * Cast(Reciprocal(scale_sense)).
  const float r = 1.0f / scale_;
  for (Tensor& t : grads) {
    if (!t.defined() || !t.is_float()) continue;
    auto* d = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = d[i] * r;
  }
  const bool overflow = !all_finite(grads);
  if (overflow) ++overflows_;
  if (cfg_.kind == LossScaleConfig::Kind::Dynamic && cfg_.amp_scaler) {
    // mindspore.amp.DynamicLossScaler.adjust, in float32 / int32: `cur_iter_` is its counter.
    const auto factor = static_cast<float>(cfg_.scale_factor);
    if (overflow) {
      scale_ = std::max(1.0f, scale_ / factor);
      cur_iter_ = 0;
    } else {
      const float grown = scale_ * factor;
      if (cur_iter_ == static_cast<int32_t>(cfg_.scale_window) - 1 && std::isfinite(grown))
        scale_ = grown;
      cur_iter_ = static_cast<int32_t>((static_cast<int64_t>(cur_iter_) + 1) % cfg_.scale_window);
    }
  } else if (cfg_.kind == LossScaleConfig::Kind::Dynamic) {
    // DynamicLossScaleUpdateCell.construct, in float32 / int32.
    const auto factor = static_cast<float>(cfg_.scale_factor);
    const float on_overflow = overflow ? std::max(scale_ * (1.0f / factor), 1.0f) : scale_;
    const bool should_inc =
        static_cast<int32_t>(cfg_.scale_window) <= cur_iter_ - last_overflow_iter_;
    if (overflow || should_inc) last_overflow_iter_ = cur_iter_;
    scale_ = (should_inc && !overflow) ? on_overflow * factor : on_overflow;
    ++cur_iter_;
  }
  return !overflow;
}

std::vector<CheckpointTensor> LossScaler::state() const {
  std::vector<CheckpointTensor> out;
  if (!has_update_cell()) return out;
  out.push_back(checkpoint_entry("scale_sense", Tensor::full({}, scale_)));
  if (cfg_.kind == LossScaleConfig::Kind::Dynamic) {
    out.push_back(checkpoint_entry("current_iterator_step",
                                   Tensor::from_ints({}, {cur_iter_}, DType::Int32)));
    out.push_back(checkpoint_entry("last_overflow_iterator_step",
                                   Tensor::from_ints({}, {last_overflow_iter_}, DType::Int32)));
  }
  return out;
}

size_t LossScaler::load_state(std::span<const CheckpointTensor> entries) {
  size_t used = 0;
  std::optional<float> scale;
  std::optional<int32_t> cur, last;
  for (const CheckpointTensor& e : entries) {
    if (!e.value.defined() || e.value.numel() != 1) continue;
    if (e.name == "scale_sense" && e.value.is_float()) scale = static_cast<float>(e.value.at(0));
    if (e.name == "current_iterator_step" && !e.value.is_float())
      cur = static_cast<int32_t>(e.value.at(0));
    if (e.name == "last_overflow_iterator_step" && !e.value.is_float())
      last = static_cast<int32_t>(e.value.at(0));
  }
  if (!has_update_cell()) return 0;
  if (scale) {
    if (!(*scale >= 1.0f) || !std::isfinite(*scale))
      throw RuntimeError("cannot resume the loss scale: scale_sense is " + num(*scale));
    scale_ = *scale;
    ++used;
  }
  if (cfg_.kind == LossScaleConfig::Kind::Dynamic) {
    if (cur) cur_iter_ = *cur, ++used;
    if (last) last_overflow_iter_ = *last, ++used;
  }
  return used;
}

// ---- clip_by_global_norm ------------------------------------------------------------------------

float clip_by_global_norm(std::span<Tensor> grads, double clip_norm) {
  if (!(clip_norm > 0) || !std::isfinite(clip_norm))
    bad("clip_by_global_norm", "the 'clip_norm' must be > 0, but got " + num(clip_norm) + ".");
  // _get_square_sum: ReduceSum(Square(x)) per tensor, in float32 (accumulated here in double,
  // then rounded: MindSpore's blocked float32 sum differs by rounding only); AddN in order.
  float total = 0.0f;
  for (const Tensor& t : grads) {
    if (!t.defined() || !t.is_float())
      throw RuntimeError("clip_by_global_norm: every gradient must be a float tensor");
    const auto* d = t.data<float>();
    double s = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float sq = d[i] * d[i];
      s += sq;
    }
    total = total + static_cast<float>(s);
  }
  const float global_norm = std::sqrt(total);
  const auto c = static_cast<float>(clip_norm);
  const float denom = global_norm >= c ? global_norm : c;  // Select(global_norm >= clip_norm)
  for (Tensor& t : grads) {
    auto* d = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = d[i] * c / denom;
  }
  return global_norm;
}

}  // namespace graphcore::runtime
