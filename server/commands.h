// The CLI's subcommands. Each returns the process exit code: 0 no errors, 1 errors found,
// 2 usage errors (bad arguments, missing files).
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/diagnostic.h"
#include "graphcore/source.h"
#include "pipeline.h"
#include "protocol/graph.pb.h"

namespace cellscope::server {

inline constexpr int kExitOk = 0;
inline constexpr int kExitErrors = 1;
inline constexpr int kExitUsage = 2;

struct CommonOptions {
  std::string target = "cpu";
  std::string ms_version;  // empty: the registry's default
  std::string root;        // workspace root for absolute imports; empty: automatic
  // Config files (YAML/JSON) whose loads are known constants: --config, then
  // mindspore_config.json's `configs`.
  std::vector<std::string> configs;
  // mindspore_config.json's `inputs` (by Cell class name, file or "*"): a root Cell whose class
  // is named there gets those inputs when no --input is given.
  std::map<std::string, std::vector<graphcore::TensorType>> cell_inputs;
  // mindspore_config.json's `device_num` (0: none).
  int64_t device_num = 0;
  // Problems in the project's mindspore_config.json (reported with the analysis' diagnostics).
  std::vector<graphcore::Diagnostic> config_diagnostics;
};

struct CheckOptions {
  CommonOptions common;
  std::vector<std::string> paths;
  std::string format = "text";  // text | json | sarif
  bool snippets = true;         // text: show the source line under each diagnostic
};

struct GraphOptions {
  CommonOptions common;
  std::string file;
  std::optional<std::string> cell;
  std::vector<std::string> entries;
  std::vector<std::string> inputs;  // "1,3,224,224", "8,128:int32"
  std::string format = "json";      // json | text | dot | html (the view, self-contained)
  std::string output;               // empty or "-": stdout
  bool compact = false;             // json: no whitespace
  // --layer, --mode, --optimizer, --precision, --dump-passes (config_diagnostics: see
  // pipeline_options).
  PipelineOptions pipeline;
  // html: --progress (a training run: view.proto's TrainProgress, or `cellscope train --format
  // json`'s output) and --drift (view.proto's PrecisionDrift) embedded in the snapshot.
  std::string snapshot_progress;
  std::string snapshot_drift;
};

// `cellscope train FILE`: the script's training plan run on the CPU runtime (train_command.cpp).
struct TrainCommandOptions {
  CommonOptions common;
  std::string file;
  std::optional<int64_t> steps;
  std::optional<int64_t> epochs;
  std::string data;  // replaces the dataset's directory
  std::optional<int64_t> batch;
  uint64_t seed = 0;
  bool shuffle = true;          // --no-shuffle: the data in file order
  std::string checkpoint;       // initial parameters (MindSpore .ckpt / .safetensors)
  std::string output;           // -o: the checkpoint written after training
  std::string dump_grads;       // the first step's gradients as <dir>/<param>.npy
  std::string format = "text";  // text | json
  // --synthetic: seeded random batches instead of the dataset's rows; --input: the batch's
  // column types ("32,1,28,28", "32:int32"), batch dimension included.
  bool synthetic = false;
  std::vector<std::string> inputs;
  std::vector<std::string> script_args;  // after `--`: the script's own command line
  // --drift target|int8|fp32: the precision drift after training (graphcore/drift.h).
  std::string drift;
  int64_t eval_batches = 4;
  int64_t calibration_batches = 4;
  // --drift int8: --calibration minmax|percentile|kl, --percentile P, --quant-table OUT.json
  // (the calibrated table, graphcore/quant.h).
  std::string calibration = "minmax";
  double percentile = 99.99;
  std::string quant_table;
  double drift_threshold = 0.99;
  // --view: serve the graph view of the script with the live training chart (view/train_view.h);
  // --view-port, --view-wait (train only once a view is connected).
  bool view = false;
  uint16_t view_port = 0;
  bool view_wait = false;
};

// `cellscope export FILE [--format mindir|onnx] -o OUT` (export_command.cpp).
struct ProjectConfig;

struct ExportCommandOptions {
  GraphOptions model;  // file, --cell / --entry, --input (given), --target (format unused)
  // mindspore_config.json (nullptr: none): its inputs are the Cell's when no --input is given,
  // and an export input that differs from them is refused (export-input-mismatch).
  std::shared_ptr<const ProjectConfig> project;
  std::string format;      // "mindir" or "onnx"; empty: from -o's extension
  std::string output;      // -o
  std::string checkpoint;  // parameters from a MindSpore checkpoint, else initialised
  uint64_t seed = 0;       // the initializers' seed without --checkpoint
};

// `cellscope deploy MODEL.mindir|FILE.py --device NAME` (deploy_command.cpp, docs/deploy.md).
struct DeployCommandOptions {
  std::string model;
  std::string device;  // a name in mindspore_config.json's devices; empty: the only one
  bool rollback = false;
  bool watch = false;             // print the device's telemetry stream, a JSON line a message
  std::string progress = "text";  // "json": progress events as JSON lines on stdout
  std::string name;               // the model's name on the device; empty: the file's name
  uint64_t chunk_kib = 2048;
  int64_t retry_for = 120;  // seconds a dropped link is retried
  int64_t chunk_delay_ms = 0;
  int64_t fault_corrupt_chunk = -1;  // test-only (docs/deploy.md): flip a byte of this chunk once
  std::string precision = "fp32";    // fp32 | int8 | target: the bundle the device builds
  std::string backend = "cellscope-cpu";  // or mindspore (fp32)
  std::string calibration = "minmax";     // int8: minmax | percentile | kl
  double percentile = 99.99;
  std::string calibration_data;  // int8: .npy of N inputs, or .npz of one array per input, sent
                                 // with the model (target: optional, its quality's inputs)
  std::string labels;            // optional .npy of their N labels (accuracy)
  ExportCommandOptions export_options;  // a .py: how to export it (--cell, --input, ...)
};

int run_check(const CheckOptions& options);
// `cellscope check`'s text report of options.paths (each diagnostic, with its source line when
// options.snippets, then the summary line) written to `out`, and its numbers of errors and
// warnings; kExitUsage after a usage error (printed), else kExitOk.
int check_report_text(const CheckOptions& options, std::ostream& out, size_t* errors,
                      size_t* warnings);
int run_deploy(const DeployCommandOptions& options);
// ~/.config/cellscope/known_devices.json ($XDG_CONFIG_HOME respected): the pinned fingerprints.
std::filesystem::path known_devices_file();
int run_export(const ExportCommandOptions& options);
int run_graph(const GraphOptions& options);
int run_train(const TrainCommandOptions& options);

// Fills the analysis options every command shares (target, version, root, configs); false after
// printing a usage error.
bool common_analysis_options(const CommonOptions& common, graphcore::AnalysisOptions* out);

// The pieces of `graph` that `view` reuses.
// Validates `options` and fills `analysis`; false after printing a usage error.
bool graph_analysis_options(const GraphOptions& options, graphcore::AnalysisOptions* analysis);
// options.pipeline with the project configuration's problems (options.common).
PipelineOptions pipeline_options(const GraphOptions& options);

}  // namespace cellscope::server
