// The launch configuration of `cellscope dap`: see launch_config.h.
#include "launch_config.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <utility>

#include "graphcore/optimize.h"
#include "pipeline.h"

namespace cellscope::dap {

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
using nlohmann::json;

namespace {

// An input given by value rather than by shape.
bool is_value_spec(const std::string& s) {
  return s == "random" || s.rfind("random:", 0) == 0 || s == "ones" || s == "zeros" ||
         (s.size() > 4 && s.substr(s.size() - 4) == ".npy");
}

// The type of the tensor in an .npy file, as an input spec ("2,4:float32").
std::optional<graphcore::TensorType> npy_input_type(const std::string& path) {
  rt::Tensor t = rt::read_npy(path);
  std::string spec;
  for (int64_t d : t.shape()) spec += (spec.empty() ? "" : ",") + std::to_string(d);
  std::string err;
  return graphcore::parse_input_spec(spec + ":" + std::string(graphcore::dtype_name(t.dtype())),
                                     &err);
}

}  // namespace

LaunchConfig parse_launch_config(const json& args) {
  LaunchConfig c;
  auto str_arg = [&](const char* key) -> std::optional<std::string> {
    if (!args.contains(key) || args[key].is_null()) return std::nullopt;
    if (!args[key].is_string())
      throw LaunchError(std::string("launch: '") + key + "' must be a string");
    return args[key].get<std::string>();
  };
  auto prog = str_arg("program");
  if (!prog || prog->empty()) throw LaunchError("launch: 'program' (the model file) is required");
  c.program = *prog;
  std::error_code ec;
  if (!fs::is_regular_file(c.program, ec))
    throw LaunchError("launch: program '" + c.program + "' does not exist or is not a file");

  // mode, and the keys that belong to one mode only.
  if (auto m = str_arg("mode")) {
    if (*m == "train") {
      c.mode = Mode::Train;
    } else if (*m == "joint") {
      c.mode = Mode::Joint;
    } else if (*m != "infer") {
      throw LaunchError("launch: 'mode' must be \"infer\", \"train\" or \"joint\", not \"" + *m +
                        "\"");
    }
  }
  const char* mode_name = c.mode == Mode::Infer   ? "infer"
                          : c.mode == Mode::Train ? "train"
                                                  : "joint";
  auto only_in = [&](const char* key, bool allowed, const char* modes) {
    if (args.contains(key) && !args[key].is_null() && !allowed) {
      throw LaunchError(std::string("launch: '") + key + "' applies to mode " + modes +
                        ", not to mode \"" + mode_name + "\"");
    }
  };
  const bool training = c.mode != Mode::Infer;
  for (const char* key : {"steps", "epochs", "batch", "data"})
    only_in(key, training, "\"train\" or \"joint\"");
  for (const char* key : {"evalBatches", "calibrationBatches", "stopOnDrift", "driftThreshold"})
    only_in(key, c.mode == Mode::Joint, "\"joint\"");
  for (const char* key : {"inputs", "input"})
    only_in(key, !training, "\"infer\" (training reads the script's dataset)");
  auto positive = [&](const char* key) -> std::optional<int64_t> {
    if (!args.contains(key) || args[key].is_null()) return std::nullopt;
    const json& v = args[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
      throw LaunchError(std::string("launch: '") + key + "' must be a positive integer, not " +
                        v.dump());
    }
    return v.get<int64_t>();
  };
  c.steps = positive("steps");
  c.epochs = positive("epochs");
  c.batch = positive("batch");
  c.eval_batches = positive("evalBatches").value_or(c.eval_batches);
  c.calibration_batches = positive("calibrationBatches").value_or(c.calibration_batches);
  if (args.contains("driftThreshold") && !args["driftThreshold"].is_null()) {
    const json& v = args["driftThreshold"];
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1) {
      throw LaunchError("launch: 'driftThreshold' must be a number in (0, 1], not " + v.dump());
    }
    c.drift_threshold = v.get<double>();
  }
  if (args.contains("stopOnDrift") && !args["stopOnDrift"].is_null()) {
    const json& v = args["stopOnDrift"];
    if (v.is_boolean()) {
      c.stop_on_drift = v.get<bool>() ? DriftStop::Always : DriftStop::Never;
    } else if (v == "belowThreshold") {
      c.stop_on_drift = DriftStop::BelowThreshold;
    } else if (v == "always") {
      c.stop_on_drift = DriftStop::Always;
    } else if (v == "never") {
      c.stop_on_drift = DriftStop::Never;
    } else {
      throw LaunchError(
          "launch: 'stopOnDrift' must be \"belowThreshold\", \"always\", \"never\" or a "
          "boolean, not " +
          v.dump());
    }
  }
  c.data = str_arg("data");
  if (c.data) {
    if (c.data->empty()) throw LaunchError("launch: 'data' is an empty path");
    if (!fs::is_directory(*c.data, ec))
      throw LaunchError("launch: data directory '" + *c.data + "' does not exist");
  }

  c.analysis.record_facts = true;
  c.analysis.constant_values = true;  // numpy-computed constants' elements, for the runtime
  if (auto t = str_arg("target")) {
    bool known = false;
    std::string names;
    for (const auto& ti : graphcore::targets()) {
      known |= ti.name == *t;
      names += (names.empty() ? "" : ", ") + std::string(ti.name);
    }
    if (!known) throw LaunchError("launch: unknown target '" + *t + "' (known: " + names + ")");
    c.analysis.target = *t;
  }
  if (args.contains("seed")) {
    if (!args["seed"].is_number_integer() || args["seed"].get<int64_t>() < 0)
      throw LaunchError("launch: 'seed' must be a non-negative integer");
    c.exec.seed = args["seed"].get<uint64_t>();
  }
  if (auto p = str_arg("precision")) {
    if (c.mode == Mode::Joint) {
      // The inference half's precision (its drift against fp32).
      if (*p != "fp32" && *p != "target" && *p != "int8") {
        throw LaunchError("launch: precision must be \"fp32\", \"target\" or \"int8\", not \"" +
                          *p + "\"");
      }
      c.precision = *p;
    } else if (c.mode == Mode::Train) {
      if (*p != "fp32") {
        throw LaunchError("launch: precision \"" + *p +
                          "\" is the inference half's (mode \"joint\"); training computes in fp32");
      }
    } else if (*p == "target") {
      c.exec.precision = rt::Precision::Target;
    } else if (*p == "int8") {
      throw LaunchError(
          "launch: precision \"int8\" is the inference half's of mode \"joint\" (post-training "
          "quantisation of the trained network); mode \"infer\" runs \"fp32\" or \"target\"");
    } else if (*p != "fp32") {
      throw LaunchError("launch: precision must be \"fp32\" or \"target\", not \"" + *p + "\"");
    }
  }
  // The largest tensor the runtime may allocate; larger inputs, parameters or outputs fail with
  // their shape and size instead of exhausting the machine (default: its physical memory).
  if (args.contains("maxTensorBytes")) {
    const json& m = args["maxTensorBytes"];
    if (!m.is_number_unsigned() || m.get<uint64_t>() == 0)
      throw LaunchError("launch: 'maxTensorBytes' must be a positive integer");
    c.max_tensor_bytes = static_cast<size_t>(m.get<uint64_t>());
  }
  rt::set_max_tensor_bytes(c.max_tensor_bytes);
  c.stop_on_entry = args.value("stopOnEntry", false);
  // checkpoint: a MindSpore .ckpt (or .safetensors) loaded into the parameters after they are
  // initialised. Checked here, before the analysis, so a wrong path fails fast.
  c.checkpoint = str_arg("checkpoint");
  if (c.checkpoint) {
    if (c.checkpoint->empty()) throw LaunchError("launch: 'checkpoint' is an empty path");
    if (!fs::is_regular_file(*c.checkpoint, ec)) {
      throw LaunchError("launch: checkpoint '" + *c.checkpoint +
                        "' does not exist or is not a file");
    }
  }

  // inputs: shapes ("1,3,224,224[:dtype]") or value specs (random[:seed], ones, zeros, .npy).
  if (args.contains("inputs")) {
    if (!args["inputs"].is_array()) throw LaunchError("launch: 'inputs' must be a list of strings");
    for (const json& j : args["inputs"]) {
      if (!j.is_string()) throw LaunchError("launch: 'inputs' must be a list of strings");
      std::string s = j.get<std::string>();
      if (is_value_spec(s)) {
        c.value_specs.push_back(s);
        if (s.size() > 4 && s.substr(s.size() - 4) == ".npy") {
          try {
            if (auto parsed = npy_input_type(s)) c.analysis.inputs.push_back(*parsed);
          } catch (const std::exception& e) {
            throw LaunchError("launch: cannot read input " + s + ": " + e.what());
          }
        }
        continue;
      }
      std::string err;
      auto t = graphcore::parse_input_spec(s, &err);
      if (!t) {
        std::string msg = "launch: bad input shape \"" + s;
        msg += "\": ";
        msg += err;
        throw LaunchError(msg);
      }
      c.analysis.inputs.push_back(*t);
      c.value_specs.emplace_back();
    }
  }
  if (args.contains("input")) {
    if (!args["input"].is_string()) throw LaunchError("launch: 'input' must be a string");
    c.default_spec = args["input"].get<std::string>();
    if (!is_value_spec(c.default_spec)) {
      throw LaunchError(
          "launch: 'input' must be random, random:SEED, ones, zeros or a .npy file, not \"" +
          c.default_spec + "\"");
    }
  }
  c.cell = str_arg("cell");
  return c;
}

std::unique_ptr<rt::Executor> load_model(const LaunchConfig& c,
                                         const std::function<void(const std::string&)>& console) {
  // The pipeline's first stage, as the CLI and the language server run it (an internal error
  // becomes an error diagnostic); both analyses read each file once.
  cellscope::server::CachingSourceProvider sources;
  const std::string& program = c.program;
  const std::optional<std::string>& cell = c.cell;
  graphcore::AnalysisOptions opts = c.analysis;
  graphcore::AnalysisResult res = cellscope::server::analyze_guarded(program, opts, sources);
  auto pick = [&](const graphcore::AnalysisResult& r) -> const graphcore::CellReport* {
    for (const auto& cr : r.cells)
      if (!cell || cr.name == *cell || cr.class_name == *cell) return &cr;
    return nullptr;
  };
  const graphcore::CellReport* report = pick(res);
  graphcore::AnalysisResult res2;
  if (!report && cell) {
    opts.cell = *cell;
    res2 = cellscope::server::analyze_guarded(program, opts, sources);
    report = pick(res2);
    if (!report) {
      std::string names;
      for (const auto& cr : res.cells) names += (names.empty() ? "" : ", ") + cr.name;
      throw LaunchError(
          "launch: unknown cell '" + *cell + "' in " + program +
          (names.empty() ? std::string(" (no Cell found)") : " (cells: " + names + ")"));
    }
  }
  const auto& diags = res2.cells.empty() ? res.diagnostics : res2.diagnostics;
  if (!report) {
    std::string msg = "launch: no Cell could be analysed in " + program;
    for (const auto& d : diags) {
      if (d.severity == graphcore::Severity::Error)
        msg += "\n  line " + std::to_string(d.range.start.line + 1) + ": " + d.message;
    }
    throw LaunchError(msg);
  }
  std::string errors;
  for (const auto& d : diags) {
    if (d.severity != graphcore::Severity::Error) continue;
    errors += "\n  ";
    errors += fs::path(d.file.empty() ? program : d.file).filename().string();
    errors += ":" + std::to_string(d.range.start.line + 1) + ": " + d.message;
  }
  if (!report->compiled || !errors.empty()) {
    throw LaunchError("launch: " + report->name + " does not compile with the given inputs" +
                      (errors.empty() ? std::string() : ":" + errors));
  }

  try {
    auto ex = std::make_unique<rt::Executor>(*report, c.exec);
    if (!c.value_specs.empty() && c.value_specs.size() != ex->num_inputs()) {
      throw LaunchError("launch: " + report->name + " takes " + std::to_string(ex->num_inputs()) +
                        " input(s), 'inputs' gives " + std::to_string(c.value_specs.size()));
    }
    for (size_t i = 0; i < ex->num_inputs(); ++i) {
      const std::string& spec =
          i < c.value_specs.size() && !c.value_specs[i].empty() ? c.value_specs[i] : c.default_spec;
      ex->set_input_spec(i, spec, c.exec.seed);
    }
    if (c.checkpoint) {
      rt::CheckpointLoad loaded = ex->load_checkpoint(*c.checkpoint);
      spdlog::info("dap: {}", loaded.summary());
      console("cellscope: " + loaded.summary());
    }
    return ex;
  } catch (const LaunchError&) {
    throw;
  } catch (const std::exception& e) {
    throw LaunchError("launch: " + std::string(e.what()));
  }
}

namespace {

// The analysis options of the training run: the CLI's (`cellscope train`).
graphcore::AnalysisOptions training_analysis(const LaunchConfig& c) {
  graphcore::AnalysisOptions a = c.analysis;
  a.constant_values = true;
  a.training_batch = c.batch;
  if (c.data) a.data_dir = fs::path(*c.data);
  return a;
}

std::string error_lines(const graphcore::AnalysisResult& r, const std::string& program) {
  std::string errors;
  for (const auto& d : r.diagnostics) {
    if (d.severity != graphcore::Severity::Error) continue;
    errors += "\n  ";
    errors += fs::path(d.file.empty() ? program : d.file).filename().string();
    errors += ":" + std::to_string(d.range.start.line + 1) + ": " + d.message;
  }
  return errors;
}

}  // namespace

std::unique_ptr<TrainProgram> load_training(const LaunchConfig& c, rt::TrainOptions options) {
  auto tp = std::make_unique<TrainProgram>();
  const graphcore::AnalysisOptions analysis = training_analysis(c);
  cellscope::server::CachingSourceProvider sources;
  tp->analysis = cellscope::server::analyze_guarded(c.program, analysis, sources);
  const auto& plans = tp->analysis.training;
  if (plans.empty()) {
    throw LaunchError("launch: no training found in " + c.program +
                      ": Cellscope follows Model(net, loss_fn, optimizer).train(...), a train_step "
                      "over ms.value_and_grad(...) with an optimizer, and "
                      "nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)" +
                      error_lines(tp->analysis, c.program));
  }
  tp->plan_index = plans.size();
  for (size_t i = 0; i < plans.size() && tp->plan_index == plans.size(); ++i)
    if (!c.cell || plans[i].network == *c.cell) tp->plan_index = i;
  if (tp->plan_index == plans.size()) {
    std::string names;
    for (const auto& p : plans) names += (names.empty() ? "" : ", ") + p.network;
    throw LaunchError("launch: no training of cell '" + *c.cell + "' in " + c.program +
                      " (it trains " + names + ")");
  }
  const graphcore::TrainingPlan& plan = tp->plan();
  if (!plan.loss_graph.compiled) {
    throw LaunchError("launch: " + plan.network + " with its loss (" + plan.loss.api +
                      ") does not compile" + error_lines(tp->analysis, c.program));
  }
  options.steps = c.steps;
  options.epochs = c.epochs;
  options.batch = c.batch;
  if (c.data) options.data_dir = fs::path(*c.data);
  options.seed = c.exec.seed;
  if (c.checkpoint) options.checkpoint = fs::path(*c.checkpoint);
  options.compile_for_batch = [analysis, file = c.program, index = tp->plan_index](int64_t rows) {
    graphcore::AnalysisOptions again = analysis;
    again.training_batch = rows;
    cellscope::server::CachingSourceProvider disk;
    graphcore::AnalysisResult r = cellscope::server::analyze_guarded(file, again, disk);
    if (r.training.size() <= index) return graphcore::CellReport{};
    return std::move(r.training[index].loss_graph);
  };
  tp->options = options;
  for (const auto& cr : tp->analysis.cells) {
    if (cr.class_name == plan.network && !cr.instances.empty()) {
      tp->network = &cr;
      break;
    }
  }
  try {
    tp->trainer = std::make_unique<rt::Trainer>(plan, options);
  } catch (const std::exception& e) {
    throw LaunchError("launch: " + std::string(e.what()));
  }
  return tp;
}

graphcore::CellReport compile_network(const TrainProgram& tp, const LaunchConfig& c) {
  const graphcore::TrainingPlan& plan = tp.plan();
  // The network alone, for a batch of the dataset's first column (what construct takes).
  const rt::Executor& ex = tp.trainer->executor();
  if (ex.num_inputs() == 0) throw LaunchError("launch: the loss graph has no input");
  graphcore::AnalysisOptions a = training_analysis(c);
  a.cell = plan.network;
  a.inputs = {ex.input_type(0)};
  a.record_facts = false;
  cellscope::server::CachingSourceProvider sources;
  graphcore::AnalysisResult r = cellscope::server::analyze_guarded(c.program, a, sources);
  for (auto& cr : r.cells) {
    if ((cr.class_name == plan.network || cr.name == plan.network) && cr.compiled)
      return std::move(cr);
  }
  throw LaunchError("launch: " + plan.network + " does not compile alone for the inference half" +
                    error_lines(r, c.program));
}

std::string launch_summary(const rt::Executor& ex, const std::string& program) {
  std::string inputs;
  for (size_t i = 0; i < ex.num_inputs(); ++i) {
    const rt::Tensor* t = ex.value(*ex.find_node(ex.input_name(i)));
    inputs += (inputs.empty() ? "" : ", ") + ex.input_name(i) + (t ? t->type_str() : "");
  }
  return "cellscope: " + ex.report().name + " from " + program + ", " +
         std::to_string(ex.graph().nodes.size()) + " nodes, " + std::to_string(ex.params().size()) +
         " parameters, inputs " + inputs;
}

}  // namespace cellscope::dap
