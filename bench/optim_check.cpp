// cellscope-optim: runs graphcore's optimizers (graphcore/optim.h) on given parameters and
// gradients, for the MindSpore comparison tier (tests/training/check_optim.py).
//
// Usage: cellscope-optim SPEC.json IN_DIR OUT_DIR [--checkpoint FILE] [--crc] [--resume FILE]
//   SPEC.json  {"optimizer": {"kind": "Momentum", "learning_rate": LR, "momentum": 0.9, ...,
//                             "groups": [{"params": [...], "lr": LR, "weight_decay": 0.01,
//                                         "grad_centralization": true}],
//                             "order_params": [...]},
//               "params": [{"name": "fc.weight", "shape": [2, 3]}, ...],
//               "steps": N,
//               "loss_scale": {"kind": "fixed", "loss_scale": 128, "drop_overflow_update": true}
//                           | {"kind": "dynamic", "init_loss_scale": 1024, "scale_factor": 2,
//                              "scale_window": 3},
//               "clip_norm": 1.0,
//               "lr_lists": [{"fn": "cosine_decay_lr", "args": {...}}, ...]}
//     LR: a number | a list | {"fn": "<dynamic_lr function>", "args": {...}} |
//         {"schedule": "CosineDecayLR", <the class's arguments>}
//   IN_DIR     param_<i>.npy (initial values) and grad_<step>_<i>.npy (the unscaled gradients of
//              each step; with a loss scale the tool multiplies them by the current scale first,
//              as a backward pass seeded with it would)
//   OUT_DIR    param_<i>.npy after the steps, state/<entry>.npy (the optimizer's and the loss
//              scaler's checkpoint entries), summary.json {"lr": [per step, the first parameter's
//              learning rate], "scale": [the scale each step used], "stepped": [...],
//              "global_norm": [...], "lr_lists": [[...], ...], "global_step": n}
//   --checkpoint FILE  also writes the parameters and the state as a MindSpore checkpoint
//   --resume FILE      starts from a checkpoint's parameters and optimizer state instead
// Exit status: 0 on success, 1 on a runtime error, 2 on bad usage.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graphcore/optim.h"

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
using nlohmann::json;

namespace {

struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double num(const json& j, const char* key, double dflt) {
  if (!j.contains(key)) return dflt;
  if (!j[key].is_number()) throw Usage(std::string("'") + key + "' must be a number");
  return j[key].get<double>();
}
int64_t integer(const json& j, const char* key, int64_t dflt) {
  if (!j.contains(key)) return dflt;
  if (!j[key].is_number_integer()) throw Usage(std::string("'") + key + "' must be an integer");
  return j[key].get<int64_t>();
}
bool boolean(const json& j, const char* key, bool dflt) {
  if (!j.contains(key)) return dflt;
  if (!j[key].is_boolean()) throw Usage(std::string("'") + key + "' must be true or false");
  return j[key].get<bool>();
}
int64_t need_int(const json& j, const char* key) {
  if (!j.contains(key)) throw Usage(std::string("missing '") + key + "'");
  return integer(j, key, 0);
}
double need_num(const json& j, const char* key) {
  if (!j.contains(key)) throw Usage(std::string("missing '") + key + "'");
  return num(j, key, 0);
}

// {"fn": "cosine_decay_lr", "args": {...}}: the list MindSpore's function returns.
std::vector<double> lr_list(const json& spec) {
  const std::string fn = spec.at("fn").get<std::string>();
  const json& a = spec.at("args");
  if (fn == "piecewise_constant_lr") {
    return rt::piecewise_constant_lr(a.at("milestone").get<std::vector<int64_t>>(),
                                     a.at("learning_rates").get<std::vector<double>>());
  }
  if (fn == "exponential_decay_lr" || fn == "natural_exp_decay_lr" || fn == "inverse_decay_lr") {
    auto f = fn == "exponential_decay_lr"   ? rt::exponential_decay_lr
             : fn == "natural_exp_decay_lr" ? rt::natural_exp_decay_lr
                                            : rt::inverse_decay_lr;
    return f(need_num(a, "learning_rate"), need_num(a, "decay_rate"), need_int(a, "total_step"),
             need_int(a, "step_per_epoch"), need_int(a, "decay_epoch"),
             boolean(a, "is_stair", false));
  }
  if (fn == "cosine_decay_lr") {
    return rt::cosine_decay_lr(need_num(a, "min_lr"), need_num(a, "max_lr"),
                               need_int(a, "total_step"), need_int(a, "step_per_epoch"),
                               need_int(a, "decay_epoch"));
  }
  if (fn == "polynomial_decay_lr") {
    return rt::polynomial_decay_lr(need_num(a, "learning_rate"), need_num(a, "end_learning_rate"),
                                   need_int(a, "total_step"), need_int(a, "step_per_epoch"),
                                   need_int(a, "decay_epoch"), need_num(a, "power"),
                                   boolean(a, "update_decay_epoch", false));
  }
  if (fn == "warmup_lr") {
    return rt::warmup_lr(need_num(a, "learning_rate"), need_int(a, "total_step"),
                         need_int(a, "step_per_epoch"), need_int(a, "warmup_epoch"));
  }
  throw Usage("unknown dynamic_lr function '" + fn + "'");
}

rt::LrSchedule schedule(const json& j) {
  if (j.is_number()) return rt::LrSchedule::constant(j.get<double>());
  if (j.is_array()) return rt::LrSchedule::list(j.get<std::vector<double>>());
  if (!j.is_object()) throw Usage("a learning rate must be a number, a list or an object");
  if (j.contains("fn")) return rt::LrSchedule::list(lr_list(j));
  const std::string s = j.at("schedule").get<std::string>();
  if (s == "ExponentialDecayLR") {
    return rt::LrSchedule::exponential_decay(need_num(j, "learning_rate"),
                                             need_num(j, "decay_rate"), need_int(j, "decay_steps"),
                                             boolean(j, "is_stair", false));
  }
  if (s == "NaturalExpDecayLR") {
    return rt::LrSchedule::natural_exp_decay(need_num(j, "learning_rate"),
                                             need_num(j, "decay_rate"), need_int(j, "decay_steps"),
                                             boolean(j, "is_stair", false));
  }
  if (s == "InverseDecayLR") {
    return rt::LrSchedule::inverse_decay(need_num(j, "learning_rate"), need_num(j, "decay_rate"),
                                         need_int(j, "decay_steps"), boolean(j, "is_stair", false));
  }
  if (s == "CosineDecayLR") {
    return rt::LrSchedule::cosine_decay(need_num(j, "min_lr"), need_num(j, "max_lr"),
                                        need_int(j, "decay_steps"));
  }
  if (s == "PolynomialDecayLR") {
    return rt::LrSchedule::polynomial_decay(
        need_num(j, "learning_rate"), need_num(j, "end_learning_rate"), need_int(j, "decay_steps"),
        need_num(j, "power"), boolean(j, "update_decay_steps", false));
  }
  if (s == "WarmUpLR")
    return rt::LrSchedule::warmup(need_num(j, "learning_rate"), need_int(j, "warmup_steps"));
  throw Usage("unknown LearningRateSchedule '" + s + "'");
}

rt::OptimizerConfig optimizer(const json& j) {
  auto kind = rt::optimizer_kind_from_name(j.at("kind").get<std::string>());
  if (!kind) throw Usage("unknown optimizer '" + j.at("kind").get<std::string>() + "'");
  rt::OptimizerConfig c = rt::OptimizerConfig::defaults(*kind);
  if (j.contains("learning_rate")) c.learning_rate = schedule(j["learning_rate"]);
  c.weight_decay = num(j, "weight_decay", c.weight_decay);
  c.loss_scale = num(j, "loss_scale", c.loss_scale);
  c.momentum = num(j, "momentum", c.momentum);
  c.dampening = num(j, "dampening", c.dampening);
  c.nesterov = boolean(j, "nesterov", c.nesterov);
  c.beta1 = num(j, "beta1", c.beta1);
  c.beta2 = num(j, "beta2", c.beta2);
  c.eps = num(j, "eps", c.eps);
  c.use_amsgrad = boolean(j, "use_amsgrad", c.use_amsgrad);
  if (j.contains("groups")) {
    for (const json& g : j["groups"]) {
      rt::ParamGroupConfig pg;
      pg.params = g.at("params").get<std::vector<std::string>>();
      if (g.contains("lr")) pg.lr = schedule(g["lr"]);
      if (g.contains("weight_decay")) pg.weight_decay = num(g, "weight_decay", 0);
      if (g.contains("grad_centralization"))
        pg.grad_centralization = boolean(g, "grad_centralization", false);
      c.groups.push_back(std::move(pg));
    }
  }
  if (j.contains("order_params"))
    c.order_params = j["order_params"].get<std::vector<std::string>>();
  return c;
}

rt::LossScaleConfig loss_scale(const json& j) {
  rt::LossScaleConfig c;
  const std::string kind = j.at("kind").get<std::string>();
  if (kind == "fixed") {
    c.kind = rt::LossScaleConfig::Kind::Fixed;
    c.loss_scale = num(j, "loss_scale", 128.0);
    c.drop_overflow_update = boolean(j, "drop_overflow_update", true);
  } else if (kind == "dynamic") {
    c.kind = rt::LossScaleConfig::Kind::Dynamic;
    c.init_loss_scale = num(j, "init_loss_scale", c.init_loss_scale);
    c.scale_factor = num(j, "scale_factor", c.scale_factor);
    c.scale_window = integer(j, "scale_window", c.scale_window);
  } else if (kind != "none") {
    throw Usage("unknown loss_scale kind '" + kind + "'");
  }
  return c;
}

int run(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string checkpoint, resume;
  bool crc = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--checkpoint" && i + 1 < argc) {
      checkpoint = argv[++i];
    } else if (a == "--resume" && i + 1 < argc) {
      resume = argv[++i];
    } else if (a == "--crc") {
      crc = true;
    } else if (a.starts_with("--")) {
      throw Usage("unknown option " + a);
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 3) throw Usage("expected SPEC.json IN_DIR OUT_DIR");
  json spec;
  {
    std::ifstream in(pos[0]);
    if (!in) throw Usage("cannot read " + pos[0]);
    spec = json::parse(in);
  }
  const fs::path in_dir = pos[1], out_dir = pos[2];
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (const json& p : spec.at("params")) {
    names.push_back(p.at("name").get<std::string>());
    shapes.push_back(p.at("shape").get<std::vector<int64_t>>());
  }
  rt::Optimizer opt(optimizer(spec.at("optimizer")), names, shapes);
  rt::LossScaler scaler(spec.contains("loss_scale") ? loss_scale(spec["loss_scale"])
                                                    : rt::LossScaleConfig{});
  const int64_t steps = integer(spec, "steps", 1);
  // clip_norm <= 0: no clipping.
  const double clip = num(spec, "clip_norm", 0.0);

  std::vector<rt::Tensor> params;
  if (!resume.empty()) {
    const auto entries = rt::read_checkpoint(resume);
    for (const std::string& n : names) {
      auto it = std::find_if(entries.begin(), entries.end(),
                             [&](const rt::CheckpointTensor& e) { return e.name == n; });
      if (it == entries.end()) {
        std::string msg = resume + " has no parameter '";
        msg += n;
        throw rt::RuntimeError(msg + "'");
      }
      params.push_back(it->value.clone());
    }
    opt.load_state(entries);
    scaler.load_state(entries);
  } else {
    for (size_t i = 0; i < names.size(); ++i)
      params.push_back(rt::read_npy(in_dir / ("param_" + std::to_string(i) + ".npy")));
  }
  std::vector<rt::Tensor*> ptrs;
  ptrs.reserve(params.size());
  for (rt::Tensor& p : params) ptrs.push_back(&p);

  json lr = json::array(), scale = json::array(), stepped = json::array(), norms = json::array();
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<rt::Tensor> grads;
    for (size_t i = 0; i < names.size(); ++i) {
      rt::Tensor g =
          rt::read_npy(in_dir / ("grad_" + std::to_string(s) + "_" + std::to_string(i) + ".npy"));
      if (scaler.config().kind != rt::LossScaleConfig::Kind::None) {
        // A backward pass seeded with the scale: every gradient times it (float32).
        auto* d = g.data<float>();
        for (int64_t k = 0; k < g.numel(); ++k) d[k] = d[k] * scaler.scale();
      }
      grads.push_back(std::move(g));
    }
    scale.push_back(scaler.scale());
    const bool go = scaler.unscale_and_update(grads);
    stepped.push_back(go);
    if (!go) continue;
    if (clip > 0) norms.push_back(rt::clip_by_global_norm(grads, clip));
    lr.push_back(opt.current_lr());
    opt.step(ptrs, grads);
  }

  fs::create_directories(out_dir / "state");
  for (size_t i = 0; i < params.size(); ++i)
    rt::write_npy(out_dir / ("param_" + std::to_string(i) + ".npy"), params[i]);
  std::vector<rt::CheckpointTensor> state = opt.state();
  for (auto& e : scaler.state()) state.push_back(std::move(e));
  for (const auto& e : state) rt::write_npy(out_dir / "state" / (e.name + ".npy"), e.value);
  json lists = json::array();
  if (spec.contains("lr_lists"))
    for (const json& l : spec["lr_lists"]) lists.push_back(lr_list(l));
  json summary = {{"lr", lr},           {"scale", scale},
                  {"stepped", stepped}, {"global_norm", norms},
                  {"lr_lists", lists},  {"global_step", opt.global_step()}};
  std::ofstream(out_dir / "summary.json") << summary.dump() << "\n";
  if (!checkpoint.empty()) {
    std::vector<rt::CheckpointTensor> entries;
    for (size_t i = 0; i < names.size(); ++i)
      entries.push_back(rt::checkpoint_entry(names[i], params[i]));
    for (auto& e : state) entries.push_back(std::move(e));
    rt::write_checkpoint(checkpoint, entries, crc);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("cellscope-optim"));
  try {
    return run(argc, argv);
  } catch (const Usage& e) {
    std::cerr << "cellscope-optim: " << e.what() << "\n";
    return 2;
  } catch (const json::exception& e) {
    std::cerr << "cellscope-optim: bad spec: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "cellscope-optim: " << e.what() << "\n";
    return 1;
  }
}
