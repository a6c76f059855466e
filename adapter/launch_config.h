// The `launch` request of `cellscope dap`, without protocol: its arguments read into a typed
// configuration (parse_launch_config), and the model that configuration loads (load_model: the
// pipeline's analysis, the executor, its inputs and checkpoint). See docs/dap.md's table of keys.
//
// Errors name the key and the value at fault ("launch: 'seed' must be a non-negative integer");
// the first problem found wins, in the order of the keys below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graphcore/analysis.h"
#include "graphcore/runtime.h"
#include "graphcore/trainer.h"

namespace cellscope::dap {

// A launch configuration the adapter refuses; what() is the message for the user.
struct LaunchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a session runs: the model's construct once (infer), the file's training plan (train),
// or the training plan then the trained network on held-out batches (joint).
enum class Mode : uint8_t { Infer, Train, Joint };

// joint: when the session stops after the inference half to show the Precision drift scope
// (`stopOnDrift`): when a layer's cosine falls under the threshold (the default), always, never.
enum class DriftStop : uint8_t { BelowThreshold, Always, Never };

struct LaunchConfig {
  Mode mode = Mode::Infer;
  std::string program;                   // the model file, as given
  std::optional<std::string> cell;       // the root Cell (class name or analysed entry)
  graphcore::AnalysisOptions analysis;   // target and input types; facts and constant values on
  graphcore::runtime::ExecOptions exec;  // seed, precision
  size_t max_tensor_bytes = 0;           // 0: the runtime's default (physical memory)
  bool stop_on_entry = false;
  std::optional<std::string> checkpoint;
  // One per entry of `inputs`: its value spec (random[:seed], ones, zeros, a .npy path), or ""
  // for an entry that gives a shape only. Empty when `inputs` is not given.
  std::vector<std::string> value_specs;
  std::string default_spec = "random";  // `input`: for inputs given by shape only

  // ---- train and joint ----
  std::optional<int64_t> steps;     // at most this many steps (all epochs together)
  std::optional<int64_t> epochs;    // overrides the plan's epoch count
  std::optional<int64_t> batch;     // overrides the pipeline's batch size
  std::optional<std::string> data;  // the dataset directory, replacing the script's
  // joint: the inference half's batches, its precision ("fp32", "target", "int8") and the
  // batches int8 calibrates on.
  int64_t eval_batches = 10;
  std::string precision = "fp32";
  int64_t calibration_batches = 4;
  DriftStop stop_on_drift = DriftStop::BelowThreshold;
  double drift_threshold = 0.99;  // the cosine under which a layer counts as drifted
};

// Reads the launch arguments. Throws LaunchError (or, for `stopOnEntry` of the wrong type,
// nlohmann::json::type_error). Besides the arguments it reads the file system only: the program
// and the checkpoint must be files, and an .npy input is read for its shape and dtype, under the
// `maxTensorBytes` limit, which is applied to the runtime's process-wide limit
// (graphcore::runtime::set_max_tensor_bytes) before any input is read.
LaunchConfig parse_launch_config(const nlohmann::json& args);

// Analyses `config.program` (the pipeline's guarded analysis), picks the Cell, binds an executor
// (parameters initialised, inputs set from their specs, the checkpoint loaded: `console` gets
// its summary). Throws LaunchError with the compile diagnostics or the runtime's reason.
std::unique_ptr<graphcore::runtime::Executor> load_model(
    const LaunchConfig& config, const std::function<void(const std::string&)>& console);

// A launched training plan (train and joint modes): the analysis it comes from (kept: the
// plan refers into it), the Trainer over it (the debugging options set: hooks installed by the
// session, values kept, updates recorded) and what the joint mode's inference half needs.
struct TrainProgram {
  graphcore::AnalysisResult analysis;
  size_t plan_index = 0;
  [[nodiscard]] const graphcore::TrainingPlan& plan() const {
    return analysis.training.at(plan_index);
  }
  graphcore::runtime::TrainOptions options;
  std::unique_ptr<graphcore::runtime::Trainer> trainer;
  // The analysis' report of the trained network's class (its Cell instances and assignments,
  // for the debugger's frames and locals: the loss graph's scopes are the network's paths), or
  // nullptr.
  const graphcore::CellReport* network = nullptr;
};

// Analyses `config.program` for its training plans (the first, or the one whose network is
// `config.cell`) and builds the Trainer with `options` as the base (its hooks, keep_values...).
// Throws LaunchError: no training in the file (with what Cellscope follows), the data or the
// plan's own reasons (graphcore::runtime::RuntimeError's message).
std::unique_ptr<TrainProgram> load_training(const LaunchConfig& config,
                                            graphcore::runtime::TrainOptions options);

// The trained network compiled for one batch of the plan's first column, for the joint mode's
// inference half; throws LaunchError when it does not compile.
graphcore::CellReport compile_network(const TrainProgram& program, const LaunchConfig& config);

// "cellscope: LeNet5 from lenet5.py, 12 nodes, 10 parameters, inputs x(1, 1, 32, 32) f32".
std::string launch_summary(const graphcore::runtime::Executor& ex, const std::string& program);

}  // namespace cellscope::dap
