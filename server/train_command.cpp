// `cellscope train FILE`: analyse the script, take its training plan (graphcore/training.h), run
// it on the CPU runtime's Trainer (graphcore/trainer.h) a step at a time with a progress line per
// step in LossMonitor's words, and write the trained parameters as a MindSpore checkpoint. With
// --drift, the trained network's precision drift (graphcore/drift.h) follows.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "commands.h"
#include "files.h"
#include "graphcore/analysis.h"
#include "graphcore/drift.h"
#include "graphcore/optim.h"
#include "graphcore/trainer.h"
#include "render.h"
#include "view/train_view.h"

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

void train_error(const std::string& message) {
  std::cerr << "cellscope: error: " << message << "\n";
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

// Diagnostics of the analysis that bear on training, on stderr in the compiler's format.
void print_diagnostics(const graphcore::AnalysisResult& result) {
  for (const auto& d : result.diagnostics) {
    if (d.severity == graphcore::Severity::Hint) continue;
    std::cerr << display_path(d.file.empty() ? result.file : d.file) << ":"
              << d.range.start.line + 1 << ":" << d.range.start.column + 1 << ": "
              << graphcore::severity_name(d.severity) << ": " << d.message << " [" << d.code
              << "]\n";
  }
}

nlohmann::json drift_json(const graphcore::runtime::DriftReport& r) {
  // NaN and inf (a layer that overflowed) become null.
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& d : r.layers) {
    layers.push_back({{"node", d.node},
                      {"op", d.op},
                      {"scope", d.scope},
                      {"file", d.file},
                      {"line", d.line},
                      {"max_abs", number(d.max_abs)},
                      {"max_rel", number(d.max_rel)},
                      {"cosine", number(d.cosine)},
                      {"nonfinite", d.nonfinite},
                      {"fp16_overflows", d.fp16_overflows},
                      {"quantized", d.quantized}});
  }
  nlohmann::json j = {
      {"precision", std::string(graphcore::runtime::eval_precision_name(r.precision))},
      {"threshold", r.threshold},
      {"layers", layers},
      {"first_below", r.first_below},
      {"logits", r.logits},
      {"top1_agreement", number(r.top1_agreement)},
      {"samples", r.samples},
      {"batches", r.batches},
      {"calibration_samples", r.calibration_samples},
      {"calibration", r.quant_table ? std::string(graphcore::runtime::quant::calibration_name(
                                          r.quant_table->calibration.method))
                                    : std::string()},
      {"data", r.data},
      {"notes", r.notes}};
  j["accuracy_fp32"] = r.accuracy_fp32 ? number(*r.accuracy_fp32) : nlohmann::json();
  j["accuracy_precision"] = r.accuracy_precision ? number(*r.accuracy_precision) : nlohmann::json();
  return j;
}

}  // namespace

int run_train(const TrainCommandOptions& options) {
  graphcore::AnalysisOptions analysis;
  if (!common_analysis_options(options.common, &analysis)) return kExitUsage;
  std::error_code ec;
  if (!fs::is_regular_file(options.file, ec)) {
    train_error("no such file: " + options.file);
    return kExitUsage;
  }
  if ((options.view_wait || options.view_port != 0) && !options.view) {
    train_error("--view-port and --view-wait need --view");
    return kExitUsage;
  }
  if (options.steps && *options.steps < 0) {
    train_error("--steps must be 0 (no training: the initial or --checkpoint weights) or more");
    return kExitUsage;
  }
  const auto drift_precision = graphcore::runtime::eval_precision_from_name(options.drift);
  if (!options.drift.empty() && !drift_precision) {
    train_error("--drift must be target, int8 or fp32");
    return kExitUsage;
  }
  if (!options.quant_table.empty() && drift_precision != graphcore::runtime::EvalPrecision::Int8) {
    train_error("--quant-table writes the table --drift int8 calibrates: it needs --drift int8");
    return kExitUsage;
  }
  if (options.epochs && *options.epochs <= 0) {
    train_error("--epochs must be positive");
    return kExitUsage;
  }
  if (options.batch && *options.batch <= 0) {
    train_error("--batch must be positive");
    return kExitUsage;
  }
  analysis.constant_values = true;  // the runtime fills constants computed in __init__
  analysis.training_batch = options.batch;
  analysis.script_args = options.script_args;
  if (!options.inputs.empty() && !options.synthetic) {
    train_error("--input gives the columns of synthetic batches: it needs --synthetic");
    return kExitUsage;
  }
  if (options.synthetic && options.batch && !options.inputs.empty()) {
    train_error("--batch and --input both give the batch size: give it in --input only");
    return kExitUsage;
  }
  if (options.synthetic && drift_precision) {
    train_error("--drift compares the network on real batches: it cannot follow --synthetic");
    return kExitUsage;
  }
  if (options.synthetic && !options.steps) {
    train_error(
        "--synthetic needs --steps (how many rows the script's dataset yields is not "
        "known)");
    return kExitUsage;
  }
  for (const std::string& spec : options.inputs) {
    std::string why;
    auto t = graphcore::parse_input_spec(spec, &why);
    if (!t) {
      train_error("invalid --input '" + spec + "'" + (why.empty() ? "" : ": " + why) +
                  " (expected e.g. 32,1,28,28 or 32:int32)");
      return kExitUsage;
    }
    analysis.training_inputs.push_back(std::move(*t));
  }
  if (!options.data.empty()) analysis.data_dir = fs::path(options.data);
  graphcore::DiskSourceProvider sources;
  const graphcore::AnalysisResult result = graphcore::analyze_file(options.file, analysis, sources);
  print_diagnostics(result);
  if (result.training.empty()) {
    train_error(display_path(options.file) +
                ": no training found: Cellscope follows Model(net, loss_fn, optimizer).train(...), "
                "a train_step over ms.value_and_grad(...) with an optimizer, and "
                "nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)");
    return kExitErrors;
  }
  // A script that trains twice (two Model.train calls ...) trains its first plan here.
  const graphcore::TrainingPlan& plan = result.training.front();  // kPlanIndex below

  graphcore::runtime::TrainOptions train;
  train.steps = options.steps;
  train.epochs = options.epochs;
  if (!options.data.empty()) train.data_dir = fs::path(options.data);
  train.batch = options.batch;
  // Another batch size (the last batch of batch(n, drop_remainder=False)): the same plan of the
  // same file compiled again for it.
  constexpr size_t kPlanIndex = 0;
  train.compile_for_batch = [analysis, file = options.file](int64_t rows) {
    graphcore::AnalysisOptions again = analysis;
    again.training_batch = rows;
    graphcore::DiskSourceProvider disk;
    graphcore::AnalysisResult r = graphcore::analyze_file(file, again, disk);
    if (r.training.size() <= kPlanIndex) return graphcore::CellReport{};
    return std::move(r.training[kPlanIndex].loss_graph);
  };
  train.seed = options.seed;
  train.synthetic = options.synthetic;
  train.shuffle = options.shuffle;
  if (!options.checkpoint.empty()) train.checkpoint = fs::path(options.checkpoint);
  if (!options.dump_grads.empty()) train.dump_grads = fs::path(options.dump_grads);

  const bool json = options.format == "json";
  // --view: the graph view with the live chart, fed a TrainProgress per step.
  std::unique_ptr<view::TrainView> live;
  if (options.view) {
    GraphOptions graph;
    graph.common = options.common;
    graph.file = options.file;
    live = view::TrainView::start(graph, options.view_port, plan.network,
                                  json ? std::cerr : std::cout);
    if (!live) return kExitUsage;
    if (options.view_wait && !live->wait_for_view()) return kExitOk;
  }
  nlohmann::json out;
  out["file"] = options.file;
  nlohmann::json steps = nlohmann::json::array();
  try {
    graphcore::runtime::Trainer trainer(plan, train);
    if (!json) std::cout << trainer.summary() << "\n";
    for (const std::string& n : trainer.notes()) {
      if (json) {
        out["notes"].push_back(n);
      } else {
        std::cout << "note: " << n << "\n";
      }
    }
    while (auto s = trainer.step()) {
      if (live) live->step(*s, options.steps);
      const double per_s = s->ms > 0 ? static_cast<double>(s->samples) * 1000.0 / s->ms : 0.0;
      if (json) {
        steps.push_back({{"epoch", s->epoch},
                         {"step", s->step},
                         {"global_step", s->global_step},
                         {"loss", s->loss},
                         {"learning_rate", s->learning_rate},
                         {"loss_scale", s->loss_scale},
                         {"grad_norm", std::isfinite(s->grad_norm) ? nlohmann::json(s->grad_norm)
                                                                   : nlohmann::json()},
                         {"skipped", s->skipped},
                         {"ms", s->ms},
                         {"samples", s->samples}});
      } else {
        std::ostringstream line;
        line << "epoch: " << s->epoch << " step: " << s->step << ", loss is " << s->loss << " ("
             << fixed(s->ms, 1) << " ms, " << fixed(per_s, 0) << " samples/s"
             << (s->skipped ? ", update skipped: gradients overflowed at loss scale " +
                                  std::to_string(s->loss_scale)
                            : "")
             << ")";
        std::cout << line.str() << std::endl;
      }
    }
    if (!options.output.empty()) {
      graphcore::runtime::write_checkpoint(options.output, trainer.checkpoint());
      if (!json) std::cout << "wrote " << display_path(options.output) << "\n";
      out["checkpoint"] = options.output;
    }
    out["summary"] = trainer.summary();
    if (drift_precision) {
      graphcore::runtime::DriftOptions drift;
      drift.precision = *drift_precision;
      drift.eval_batches = options.eval_batches;
      drift.calibration_batches = options.calibration_batches;
      drift.calibration.method =
          graphcore::runtime::quant::calibration_from_name(options.calibration)
              .value_or(graphcore::runtime::quant::Calibration::MinMax);
      drift.calibration.percentile = options.percentile;
      drift.cosine_threshold = options.drift_threshold;
      drift.seed = options.seed;
      if (!options.data.empty()) drift.data_dir = fs::path(options.data);
      drift.batch = options.batch;
      const graphcore::runtime::DriftReport report =
          graphcore::runtime::measure_drift(plan, trainer.checkpoint(), drift);
      if (!options.quant_table.empty() && report.quant_table) {
        try {
          write_file_atomic(options.quant_table,
                            graphcore::runtime::quant::write_quant_table(*report.quant_table));
        } catch (const std::system_error& e) {
          throw graphcore::runtime::RuntimeError("cannot write " + options.quant_table + ": " +
                                                 e.what());
        }
        if (!json) std::cout << "wrote " << display_path(options.quant_table) << "\n";
      }
      if (json) {
        out["drift"] = drift_json(report);
      } else {
        std::cout << graphcore::runtime::drift_table_text(report);
      }
      if (live) live->drift(view::precision_drift_of(report, "", plan.network));
    }
  } catch (const graphcore::runtime::RuntimeError& e) {
    train_error(e.what());
    if (json) {
      out["steps"] = steps;
      out["error"] = e.what();
      std::cout << out.dump(2) << "\n";
    }
    if (live) live->serve_until_stopped();  // the chart up to the failing step
    return kExitErrors;
  }
  if (json) {
    out["steps"] = steps;
    std::cout << out.dump(2) << "\n";
  }
  if (live) live->serve_until_stopped();
  return kExitOk;
}

}  // namespace cellscope::server
