// Optimizer, learning-rate and loss-scale configs from the calls of a training plan
// (graphcore/training.h -> graphcore/optim.h): the arguments the program passed, by MindSpore's
// parameter names, with MindSpore's defaults for the rest.
#include <string>

#include "graphcore/optim.h"

namespace graphcore::runtime {

namespace {

std::string where(const PlanCall& c) {
  std::string s = c.api;
  if (!c.file.empty()) s += " at " + c.file + ":" + std::to_string(c.range.start.line + 1);
  return s;
}

const AttrValue* find(const PlanCall& c, std::string_view name) {
  for (const Attr& a : c.args)
    if (a.name == name) return &a.value;
  return nullptr;
}

[[noreturn]] void unusable(const PlanCall& c, std::string_view name, const AttrValue& v) {
  throw RuntimeError(where(c) + ": argument '" + std::string(name) + "' is " +
                     (std::holds_alternative<std::monostate>(v)
                          ? std::string("not known statically")
                          : "'" + attr_to_string(v) + "', which the runtime cannot use here"));
}

std::optional<double> number(const PlanCall& c, std::string_view name) {
  const AttrValue* v = find(c, name);
  if (v == nullptr) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  unusable(c, name, *v);
}

std::optional<int64_t> integer(const PlanCall& c, std::string_view name) {
  const AttrValue* v = find(c, name);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  unusable(c, name, *v);
}

std::optional<bool> flag(const PlanCall& c, std::string_view name) {
  const AttrValue* v = find(c, name);
  if (v == nullptr) return std::nullopt;
  if (const auto* b = std::get_if<bool>(v)) return *b;
  unusable(c, name, *v);
}

double need_number(const PlanCall& c, std::string_view name) {
  auto v = number(c, name);
  if (!v) throw RuntimeError(where(c) + ": missing argument '" + std::string(name) + "'");
  return *v;
}
int64_t need_integer(const PlanCall& c, std::string_view name) {
  auto v = integer(c, name);
  if (!v) throw RuntimeError(where(c) + ": missing argument '" + std::string(name) + "'");
  return *v;
}

// "nn.CosineDecayLR", "mindspore.nn.cosine_decay_lr", "CosineDecayLR" -> "CosineDecayLR".
std::string_view last_name(std::string_view api) {
  const size_t dot = api.rfind('.');
  return dot == std::string_view::npos ? api : api.substr(dot + 1);
}

}  // namespace

LrSchedule lr_schedule_from_call(const PlanCall& c) {
  const std::string_view fn = last_name(c.api);
  try {
    if (fn == "piecewise_constant_lr") {
      const AttrValue* m = find(c, "milestone");
      const auto* ms = m ? std::get_if<std::vector<int64_t>>(m) : nullptr;
      if (ms == nullptr) throw RuntimeError(where(c) + ": 'milestone' is not known statically");
      // learning_rates is a list of floats, which a plan's AttrValue cannot hold.
      throw RuntimeError(where(c) + ": 'learning_rates' (a list of floats) is not in the plan");
    }
    if (fn == "exponential_decay_lr" || fn == "natural_exp_decay_lr" || fn == "inverse_decay_lr") {
      auto f = fn == "exponential_decay_lr"   ? exponential_decay_lr
               : fn == "natural_exp_decay_lr" ? natural_exp_decay_lr
                                              : inverse_decay_lr;
      return LrSchedule::list(f(need_number(c, "learning_rate"), need_number(c, "decay_rate"),
                                need_integer(c, "total_step"), need_integer(c, "step_per_epoch"),
                                need_integer(c, "decay_epoch"),
                                flag(c, "is_stair").value_or(false)));
    }
    if (fn == "cosine_decay_lr") {
      return LrSchedule::list(cosine_decay_lr(
          need_number(c, "min_lr"), need_number(c, "max_lr"), need_integer(c, "total_step"),
          need_integer(c, "step_per_epoch"), need_integer(c, "decay_epoch")));
    }
    if (fn == "polynomial_decay_lr") {
      return LrSchedule::list(
          polynomial_decay_lr(need_number(c, "learning_rate"), need_number(c, "end_learning_rate"),
                              need_integer(c, "total_step"), need_integer(c, "step_per_epoch"),
                              need_integer(c, "decay_epoch"), need_number(c, "power"),
                              flag(c, "update_decay_epoch").value_or(false)));
    }
    if (fn == "warmup_lr") {
      return LrSchedule::list(
          warmup_lr(need_number(c, "learning_rate"), need_integer(c, "total_step"),
                    need_integer(c, "step_per_epoch"), need_integer(c, "warmup_epoch")));
    }
    if (fn == "ExponentialDecayLR") {
      return LrSchedule::exponential_decay(
          need_number(c, "learning_rate"), need_number(c, "decay_rate"),
          need_integer(c, "decay_steps"), flag(c, "is_stair").value_or(false));
    }
    if (fn == "NaturalExpDecayLR") {
      return LrSchedule::natural_exp_decay(
          need_number(c, "learning_rate"), need_number(c, "decay_rate"),
          need_integer(c, "decay_steps"), flag(c, "is_stair").value_or(false));
    }
    if (fn == "InverseDecayLR") {
      return LrSchedule::inverse_decay(need_number(c, "learning_rate"),
                                       need_number(c, "decay_rate"), need_integer(c, "decay_steps"),
                                       flag(c, "is_stair").value_or(false));
    }
    if (fn == "CosineDecayLR") {
      return LrSchedule::cosine_decay(need_number(c, "min_lr"), need_number(c, "max_lr"),
                                      need_integer(c, "decay_steps"));
    }
    if (fn == "PolynomialDecayLR") {
      return LrSchedule::polynomial_decay(need_number(c, "learning_rate"),
                                          need_number(c, "end_learning_rate"),
                                          need_integer(c, "decay_steps"), need_number(c, "power"),
                                          flag(c, "update_decay_steps").value_or(false));
    }
    if (fn == "WarmUpLR")
      return LrSchedule::warmup(need_number(c, "learning_rate"), need_integer(c, "warmup_steps"));
  } catch (const RuntimeError& e) {
    const std::string msg = e.what();
    if (msg.starts_with(c.api)) throw;
    throw RuntimeError(where(c) + ": " + msg);  // MindSpore's argument checks, located
  }
  throw RuntimeError(where(c) + ": not a learning-rate schedule the runtime knows");
}

LossScaleConfig loss_scale_from_call(const PlanCall& c) {
  const std::string_view cls = last_name(c.api);
  LossScaleConfig cfg;
  if (cls == "FixedLossScaleManager") {
    cfg.kind = LossScaleConfig::Kind::Fixed;
    cfg.loss_scale = number(c, "loss_scale").value_or(128.0);
    cfg.drop_overflow_update = flag(c, "drop_overflow_update").value_or(true);
  } else if (cls == "DynamicLossScaleManager") {
    cfg.kind = LossScaleConfig::Kind::Dynamic;
    cfg.init_loss_scale = number(c, "init_loss_scale").value_or(cfg.init_loss_scale);
    cfg.scale_factor = number(c, "scale_factor").value_or(cfg.scale_factor);
    cfg.scale_window = integer(c, "scale_window").value_or(cfg.scale_window);
  } else if (cls == "DynamicLossScaler") {
    // mindspore.amp.DynamicLossScaler(scale_value, scale_factor, scale_window): all three are
    // required; the functional train_step skips the update when all_finite(grads) is false.
    cfg.kind = LossScaleConfig::Kind::Dynamic;
    const auto value = number(c, "scale_value");
    const auto factor = number(c, "scale_factor");
    const auto window = integer(c, "scale_window");
    if (!value || !factor || !window) {
      throw RuntimeError(where(c) +
                         ": DynamicLossScaler's scale_value, scale_factor and scale_window "
                         "are not all known statically");
    }
    cfg.init_loss_scale = *value;
    cfg.scale_factor = *factor;
    cfg.scale_window = *window;
    cfg.amp_scaler = true;
  } else if (cls == "StaticLossScaler") {
    cfg.kind = LossScaleConfig::Kind::Fixed;
    const auto value = number(c, "scale_value");
    if (!value) throw RuntimeError(where(c) + ": StaticLossScaler's scale_value is not known");
    cfg.loss_scale = *value;
    // The functional idiom guards the update with all_finite(grads) itself.
    cfg.drop_overflow_update = true;
  } else {
    throw RuntimeError(where(c) + ": not a loss-scale manager the runtime knows");
  }
  return cfg;
}

OptimizerConfig optimizer_config_from_plan(const TrainingPlan& plan) {
  const PlanCall& c = plan.optimizer;
  const auto kind = optimizer_kind_from_name(c.api);
  if (!kind) {
    throw RuntimeError(where(c) +
                       ": the runtime trains with nn.SGD, nn.Momentum, nn.Adam and "
                       "nn.AdamWeightDecay only");
  }
  OptimizerConfig cfg = OptimizerConfig::defaults(*kind);
  const AttrValue* lr = find(c, "learning_rate");
  if (lr != nullptr &&
      (std::holds_alternative<double>(*lr) || std::holds_alternative<int64_t>(*lr))) {
    cfg.learning_rate = LrSchedule::constant(*number(c, "learning_rate"));
  } else if (plan.lr_graph.compiled) {
    cfg.learning_rate = LrSchedule::from_graph(plan.lr_graph);
  } else if (plan.lr_schedule && !plan.lr_graph_reason.empty()) {
    throw RuntimeError(where(*plan.lr_schedule) + ": the learning rate " +
                       plan.lr_graph.class_name +
                       " (a LearningRateSchedule subclass) cannot be "
                       "evaluated: " +
                       plan.lr_graph_reason);
  } else if (plan.lr_schedule) {
    cfg.learning_rate = lr_schedule_from_call(*plan.lr_schedule);
  } else if (lr != nullptr || *kind == OptimizerKind::Momentum) {
    throw RuntimeError(where(c) + ": the learning rate is not known statically");
  }
  if (*kind == OptimizerKind::Momentum && !find(c, "momentum"))
    throw RuntimeError(where(c) + ": missing argument 'momentum'");
  cfg.momentum = number(c, "momentum").value_or(cfg.momentum);
  cfg.dampening = number(c, "dampening").value_or(cfg.dampening);
  cfg.weight_decay = number(c, "weight_decay").value_or(cfg.weight_decay);
  cfg.loss_scale = number(c, "loss_scale").value_or(cfg.loss_scale);
  cfg.beta1 = number(c, "beta1").value_or(cfg.beta1);
  cfg.beta2 = number(c, "beta2").value_or(cfg.beta2);
  cfg.eps = number(c, "eps").value_or(cfg.eps);
  cfg.nesterov =
      flag(c, *kind == OptimizerKind::SGD ? "nesterov" : "use_nesterov").value_or(cfg.nesterov);
  cfg.use_amsgrad = flag(c, "use_amsgrad").value_or(false);
  for (const TrainingPlan::ParamGroup& g : plan.param_groups) {
    PlanCall overrides{c.api, g.overrides, c.file, c.range};
    if (find(overrides, "order_params") != nullptr) {
      cfg.order_params = g.params;
      continue;
    }
    ParamGroupConfig pg;
    pg.params = g.params;
    if (auto v = number(overrides, "lr")) pg.lr = LrSchedule::constant(*v);
    pg.weight_decay = number(overrides, "weight_decay");
    pg.grad_centralization = flag(overrides, "grad_centralization");
    cfg.groups.push_back(std::move(pg));
  }
  try {
    cfg.validate();
  } catch (const RuntimeError& e) {
    throw RuntimeError(where(c) + ": " + e.what());
  }
  return cfg;
}

}  // namespace graphcore::runtime
