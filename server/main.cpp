// cellscope: the command-line entry point. Subcommands `check`, `graph`, `view`, `train`,
// `export`, `deploy`, `launch`, `agent`, `lsp` and `dap` (the debug adapter, adapter/).
//
// stdout carries only the requested output (in `lsp` mode, only protocol messages); logs go to
// stderr or --log-file.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "agent/agent.h"
#include "commands.h"
#include "dap_server.h"
#include "graphcore/optimize.h"
#include "graphcore/version.h"
#include "launch.h"
#include "lsp/server.h"
#include "project_config.h"
#include "protocol/document.h"
#include "view/view_command.h"

#ifndef CELLSCOPE_TS_PYTHON_VERSION
#define CELLSCOPE_TS_PYTHON_VERSION "unknown"
#endif

namespace {

using cellscope::server::kExitUsage;

// The targets graphcore knows (graphcore::targets()), for option validation.
std::vector<std::string> target_names() {
  std::vector<std::string> out;
  for (const auto& t : graphcore::targets()) out.emplace_back(t.name);
  return out;
}

std::string version_text() {
  return "cellscope " + std::string(cellscope::protocol::tool_version()) + " (MindSpore API " +
         graphcore::kDefaultMindSporeVersion.str() + " by default; tree-sitter-python " +
         CELLSCOPE_TS_PYTHON_VERSION + ")";
}

void add_common(CLI::App* cmd, cellscope::server::CommonOptions* common) {
  cmd->add_option("--target", common->target, "Backend the graph is compiled for")
      ->check(CLI::IsMember(target_names()))
      ->capture_default_str();
  cmd->add_option("--ms-version", common->ms_version,
                  "MindSpore API version to check against (default " +
                      graphcore::kDefaultMindSporeVersion.str() + ")");
  cmd->add_option("--root", common->root,
                  "Workspace root for absolute imports (default: the file's directory and its "
                  "ancestors)");
  cmd->add_option("--config", common->configs,
                  "A YAML or JSON config file the model loads (yaml.safe_load(open(path)), "
                  "json.load): its values are constants (repeatable; adds to "
                  "mindspore_config.json's `configs`)");
}

// The options that say which model to compile and how: shared by graph and view.
void add_model_options(CLI::App* cmd, cellscope::server::GraphOptions* graph) {
  cmd->add_option("file", graph->file, "The model file")->required();
  auto* cell_opt =
      cmd->add_option("--cell", graph->cell, "Analyse only the root Cell with this class name");
  auto* entry_opt =
      cmd->add_option("--entry", graph->entries,
                      "Python expression that builds the Cell, e.g. \"resnet50(num_classes=10)\" "
                      "(repeatable)")
          ->allow_extra_args(false);
  cell_opt->excludes(entry_opt);
  cmd->add_option("--input", graph->inputs,
                  "Input shape[:dtype] for construct, e.g. 1,3,224,224 or 8,128:int32 "
                  "(repeat for several inputs)")
      ->allow_extra_args(false);
  cmd->add_option("--mode", graph->pipeline.mode,
                  "With --layer hardware: infer (one forward pass per batch) or train (forward, "
                  "backward and optimizer update per step)")
      ->check(CLI::IsMember({"infer", "train"}))
      ->capture_default_str();
  cmd->add_option("--optimizer", graph->pipeline.optimizer,
                  "With --mode train: the optimizer whose update is costed")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "lamb"}))
      ->capture_default_str();
  cmd->add_option("--precision", graph->pipeline.precision,
                  "With --layer hardware: mixed (float tensors in fp16 on Ascend, as MindSpore "
                  "amp and ATC models run) or fp32")
      ->check(CLI::IsMember({"mixed", "fp32"}))
      ->capture_default_str();
  add_common(cmd, &graph->common);
}

// The first word that is not an option or a global option's value: the intended subcommand.
std::optional<std::string> first_command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--log-level" || arg == "--log-file") {
      ++i;
      continue;
    }
    if (!arg.empty() && arg[0] != '-') return std::string(arg);
  }
  return std::nullopt;
}

bool setup_logging(const std::string& level, const std::string& file) {
  try {
    spdlog::sink_ptr sink;
    if (file.empty()) {
      sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    } else {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, /*truncate=*/false);
    }
    auto logger = std::make_shared<spdlog::logger>("cellscope", std::move(sink));
    logger->set_level(spdlog::level::from_str(level));
    logger->flush_on(spdlog::level::warn);
    spdlog::set_default_logger(std::move(logger));
    return true;
  } catch (const std::exception& e) {
    std::cerr << "cellscope: error: cannot open log file " << file << ": " << e.what() << "\n";
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Until configured, nothing may log to stdout (spdlog's default logger writes there).
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "cellscope", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  spdlog::set_level(spdlog::level::warn);

  CLI::App app{
      "Cellscope: compiles MindSpore nn.Cell model source into shape-checked graphs "
      "without running it.",
      "cellscope"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 no errors, 1 errors found, 2 usage error (bad arguments, missing files).\n"
      "Run 'cellscope COMMAND --help' for a command's options.");

  std::string log_level = "warn";
  std::string log_file;
  app.add_option("--log-level", log_level, "Log level (logs go to stderr or --log-file)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--log-file", log_file, "Append logs to this file instead of stderr");

  cellscope::server::CheckOptions check;
  auto* check_cmd = app.add_subcommand(
      "check", "Report diagnostics for model files (directories are searched for *.py)");
  check_cmd->fallthrough();
  check_cmd->add_option("paths", check.paths, "Files or directories")->required();
  check_cmd->add_option("--format", check.format, "Output format")
      ->check(CLI::IsMember({"text", "json", "sarif"}))
      ->capture_default_str();
  check_cmd->add_flag("--no-snippets{false}", check.snippets,
                      "text: do not print the source line under each diagnostic");
  add_common(check_cmd, &check.common);

  cellscope::server::GraphOptions graph;
  auto* graph_cmd =
      app.add_subcommand("graph", "Compile a model file and print the graph of its Cells");
  graph_cmd->fallthrough();
  add_model_options(graph_cmd, &graph);
  graph_cmd
      ->add_option("--format", graph.format,
                   "Output format (html: the graph view as one self-contained page, every "
                   "layer, no server needed)")
      ->check(CLI::IsMember({"json", "text", "dot", "html"}))
      ->capture_default_str();
  graph_cmd->add_option("-o,--output", graph.output,
                        "Write to this file (atomically) instead of stdout");
  graph_cmd->add_flag("--compact", graph.compact, "json: no indentation");
  auto* layer_opt =
      graph_cmd
          ->add_option("--layer", graph.pipeline.layer,
                       "Graph layer: semantic (the graph construct builds), optimized (after "
                       "dead-code elimination, constant folding, fusion, layout and memory "
                       "planning for --target) or hardware (an analytical model of the optimized "
                       "graph on --target: units, tiling, cores, cycles, bytes, latency and "
                       "throughput; the default for --format html)")
          ->check(CLI::IsMember({"semantic", "optimized", "hardware"}))
          ->capture_default_str();
  graph_cmd->add_option(
      "--dump-passes", graph.pipeline.dump_passes,
      "With --layer optimized|hardware: write the optimization layer after each pass as "
      "DIR/<cell>/NN-<pass>.json (\"-\": JSON lines on stderr)");
  graph_cmd->add_option("--progress", graph.snapshot_progress,
                        "With --format html: a training run to chart in the page (the output of "
                        "`cellscope train --format json`, or a view.proto TrainProgress as JSON)");
  graph_cmd->add_option("--drift", graph.snapshot_drift,
                        "With --format html: a per-layer precision drift (view.proto's "
                        "PrecisionDrift as JSON) for the page's drift colouring");

  cellscope::server::view::ViewCommandOptions view;
  auto* view_cmd = app.add_subcommand(
      "view",
      "Serve the live graph view of a model file on 127.0.0.1 and print its URL; the view "
      "follows every change to the file");
  view_cmd->fallthrough();
  add_model_options(view_cmd, &view.graph);
  view_cmd->add_option("--port", view.port, "Port to listen on (default: a free port)")
      ->check(CLI::Range(0, 65535));
  view_cmd->add_flag("--open", view.open, "Open the URL in the desktop's browser (xdg-open)");
  view_cmd
      ->add_option("--max-connections", view.max_connections,
                   "Connections (HTTP and WebSocket) served at once; more are answered 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  view_cmd->add_option(
      "--compare-with", view.compare_with,
      "Compare the graph with a base: HEAD (the file as of the last git commit) or another "
      "model file (analysed with its own settings); the view marks the nodes added, removed and "
      "changed and the change of the totals");

  cellscope::lsp::ServerOptions lsp_options;
  auto* lsp_cmd =
      app.add_subcommand("lsp", "Serve the Language Server Protocol on stdin/stdout (for editors)");
  lsp_cmd->fallthrough();
  bool lsp_stdio = true;
  lsp_cmd->add_flag("--stdio", lsp_stdio, "Use stdin/stdout (the default and only transport)");
  lsp_cmd
      ->add_option("--debounce-ms", lsp_options.debounce_ms,
                   "A fixed delay between a keystroke and its analysis (the `cellscope.debounceMs` "
                   "setting overrides it); by default the delay follows the file's measured "
                   "analysis time (10-500 ms)")
      ->check(CLI::Range(0, 5000));
  lsp_cmd
      ->add_option("--progress-delay-ms", lsp_options.progress_delay_ms,
                   "Show an analysis still running after this long as work-done progress")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();

  cellscope::server::TrainCommandOptions train;
  auto* train_cmd = app.add_subcommand(
      "train",
      "Train a training script on the CPU runtime without executing it: its network, loss, "
      "optimizer and dataset pipeline as the script builds them (Model.train, a train_step over "
      "ms.value_and_grad, or TrainOneStepCell), a line per step as LossMonitor prints them");
  train_cmd->fallthrough();
  train_cmd->add_option("file", train.file, "The training script")->required();
  train_cmd->add_option("args", train.script_args,
                        "After --: the script's own command line (what its argparse "
                        "parse_args() reads; default: none, every option at its default)");
  train_cmd->add_option("--steps", train.steps, "Stop after this many steps");
  train_cmd->add_option("--epochs", train.epochs, "Epochs (default: the script's)");
  train_cmd->add_option("--data", train.data,
                        "The dataset's directory (default: the path the script names)");
  train_cmd->add_option("--batch", train.batch, "Batch size (default: the script's)")
      ->check(CLI::PositiveNumber);
  train_cmd
      ->add_option("--seed", train.seed,
                   "Seed of shuffles, random transforms, Dropout and initializers")
      ->capture_default_str();
  train_cmd->add_flag("--no-shuffle{false}", train.shuffle,
                      "Read the data in file order (the sources' shuffle and .shuffle() off), to "
                      "compare with a reference run whose shuffle is off too");
  train_cmd->add_option("--checkpoint", train.checkpoint,
                        "Initial parameters from a MindSpore checkpoint (.ckpt or .safetensors)");
  train_cmd->add_option("-o,--output", train.output,
                        "Write the trained parameters (and optimizer state) to this MindSpore "
                        "checkpoint (atomically; nothing is written if training fails)");
  train_cmd->add_option("--dump-grads", train.dump_grads,
                        "Write the first step's gradients as DIR/<parameter>.npy");
  train_cmd->add_option("--format", train.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  train_cmd->add_flag("--synthetic", train.synthetic,
                      "Train on seeded random batches of the network's input types instead of "
                      "the dataset (for a GeneratorDataset, whose rows exist only when the "
                      "script runs); needs --steps");
  train_cmd->add_option("--input", train.inputs,
                        "With --synthetic: a batch column's shape[:dtype], batch dimension "
                        "included, e.g. 32,1,28,28 then 32:int32 (repeat per column; default: "
                        "the types the script's pipeline gives)");
  train_cmd
      ->add_option("--drift", train.drift,
                   "After training, compare the network at fp32 with the device's precision "
                   "layer by layer on held-out batches: target (fp16 storage, fp32 "
                   "accumulation) or int8 (post-training quantisation)")
      ->check(CLI::IsMember({"target", "int8", "fp32"}));
  train_cmd->add_option("--eval-batches", train.eval_batches, "With --drift: batches compared")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train_cmd
      ->add_option("--calibration-batches", train.calibration_batches,
                   "With --drift int8: batches whose min/max calibrate the activations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train_cmd
      ->add_option("--calibration", train.calibration,
                   "With --drift int8: how the activation ranges are calibrated: minmax, "
                   "percentile or kl (entropy, as TensorRT and MindSpore Lite)")
      ->check(CLI::IsMember({"minmax", "percentile", "kl"}))
      ->capture_default_str();
  train_cmd
      ->add_option("--percentile", train.percentile,
                   "With --calibration percentile: the share of values kept, in percent")
      ->check(CLI::Range(50.0, 100.0))
      ->capture_default_str();
  train_cmd->add_option("--quant-table", train.quant_table,
                        "With --drift int8: write the calibrated int8 quantisation table (JSON) "
                        "to this file");
  train_cmd
      ->add_option("--drift-threshold", train.drift_threshold,
                   "With --drift: the cosine under which a layer is reported as the first to "
                   "lose accuracy")
      ->check(CLI::Range(-1.0, 1.0))
      ->capture_default_str();
  train_cmd->add_flag("--view", train.view,
                      "Serve the graph view of the script on 127.0.0.1 with a live chart of the "
                      "loss and learning rate per step; print its URL and keep serving after the "
                      "run until Ctrl+C");
  train_cmd->add_option("--view-port", train.view_port,
                        "With --view: the port (default: a free one)");
  train_cmd->add_flag("--view-wait", train.view_wait,
                      "With --view: start training once a view has connected");
  add_common(train_cmd, &train.common);

  cellscope::server::ExportCommandOptions export_opts;
  auto* export_cmd = app.add_subcommand(
      "export",
      "Export a model file's Cell with its initialised or checkpointed weights as a deployable "
      "model (MindIR, as mindspore.export writes it, or ONNX), without running Python; refusals "
      "are located diagnostics (exit 1) and nothing is written");
  export_cmd->fallthrough();
  export_cmd->add_option("file", export_opts.model.file, "The model file")->required();
  auto* export_cell = export_cmd->add_option("--cell", export_opts.model.cell,
                                             "Export the root Cell with this class name");
  export_cmd
      ->add_option("--entry", export_opts.model.entries,
                   "Python expression that builds the Cell, e.g. \"resnet50(num_classes=10)\"")
      ->allow_extra_args(false)
      ->excludes(export_cell);
  export_cmd
      ->add_option("--input", export_opts.model.inputs,
                   "Input shape[:dtype] (static), e.g. 1,3,224,224 (repeat for several inputs)")
      ->allow_extra_args(false);
  export_cmd
      ->add_option("--format", export_opts.format,
                   "Model format: mindir or onnx (default: from -o's extension, .mindir / .onnx)")
      ->check(CLI::IsMember({"mindir", "onnx"}));
  export_cmd->add_option(
      "-o,--output", export_opts.output,
      "The file to write (atomically: the old file or the whole new one); without "
      "-o, --cell, --entry and --input: the file's ms.export(net, *inputs, "
      "file_name=..., file_format=...) call gives them");
  export_cmd->add_option("--checkpoint", export_opts.checkpoint,
                         "Weights from a MindSpore checkpoint (.ckpt or .safetensors); default: "
                         "the initializers' values");
  export_cmd->add_option("--seed", export_opts.seed, "Seed of the initializers")
      ->capture_default_str();
  add_common(export_cmd, &export_opts.model.common);

  cellscope::server::DeployCommandOptions deploy;
  auto* deploy_cmd = app.add_subcommand(
      "deploy",
      "Send a model to a device running `cellscope agent` (mindspore_config.json's `devices`): "
      "a .py is exported to MindIR first; the transfer is chunked, hashed and resumable; the "
      "device loads and checks the model before it replaces the one serving (docs/deploy.md)");
  deploy_cmd->fallthrough();
  deploy_cmd->add_option("model", deploy.model, "The model: a .mindir, or a .py to export");
  deploy_cmd->add_option("--device", deploy.device,
                         "The device's name in mindspore_config.json (default: the only one)");
  deploy_cmd->add_flag("--rollback", deploy.rollback,
                       "Switch the device back to its previous bundle (no model argument)");
  deploy_cmd->add_flag("--watch", deploy.watch,
                       "Print the device's telemetry (fps, latency, RSS, power) as one JSON line a "
                       "second on stdout until killed (docs/deploy.md)");
  deploy_cmd
      ->add_option("--progress", deploy.progress,
                   "text: progress on stderr; json: also one JSON object a line on stdout (phase "
                   "connect/export/upload/commit/done/error) for editors")
      ->check(CLI::IsMember({"text", "json"}));
  deploy_cmd->add_option("--name", deploy.name,
                         "The model's name on the device (default: the file's name; a plain "
                         "file name ending in .mindir)");
  deploy_cmd->add_option("--chunk-kib", deploy.chunk_kib, "Chunk size in KiB (64-8192)")
      ->check(CLI::Range(64, 8192))
      ->capture_default_str();
  deploy_cmd
      ->add_option("--retry-for", deploy.retry_for,
                   "Seconds to keep retrying a dropped link or a restarting agent")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  deploy_cmd
      ->add_option("--chunk-delay-ms", deploy.chunk_delay_ms,
                   "Pause after each chunk (throttles the link)")
      ->check(CLI::Range(0, 60000));
  deploy_cmd
      ->add_option("--fault-corrupt-chunk", deploy.fault_corrupt_chunk,
                   "Testing only: flip one byte of this chunk's first send (the device must "
                   "reject it and the chunk is sent again)")
      ->check(CLI::NonNegativeNumber);
  deploy_cmd
      ->add_option("--precision", deploy.precision,
                   "The bundle the device builds: fp32; int8 with a quantisation table "
                   "calibrated on the device; target: fp16 between ops, fp32 accumulation (as "
                   "`train --drift target`)")
      ->check(CLI::IsMember({"fp32", "int8", "target"}));
  deploy_cmd
      ->add_option("--calibration", deploy.calibration,
                   "int8: how activation ranges are chosen (docs/precision.md)")
      ->check(CLI::IsMember({"minmax", "percentile", "kl"}));
  deploy_cmd->add_option("--percentile", deploy.percentile, "int8 percentile: the kept share")
      ->check(CLI::Range(50.0001, 100.0));
  deploy_cmd->add_option("--calibration-data", deploy.calibration_data,
                         "int8: a .npy of N inputs (N, then the input's shape after its batch "
                         "axis), or a .npz of one such array per model input (named after the "
                         "inputs, or in their order), sent with the model; target: optional, "
                         "the inputs its quality against fp32 is measured on");
  deploy_cmd
      ->add_option("--backend", deploy.backend,
                   "What serves on the device: cellscope-cpu, or mindspore (mindspore.load + "
                   "nn.GraphCell, when the device has MindSpore)")
      ->check(CLI::IsMember({"cellscope-cpu", "mindspore"}));
  deploy_cmd->add_option("--labels", deploy.labels,
                         "A .npy of the N labels of --calibration-data (accuracy)");
  auto* deploy_cell = deploy_cmd->add_option("--cell", deploy.export_options.model.cell,
                                             "A .py: export the root Cell with this class name");
  deploy_cmd
      ->add_option("--entry", deploy.export_options.model.entries,
                   "A .py: the expression that builds the Cell")
      ->allow_extra_args(false)
      ->excludes(deploy_cell);
  deploy_cmd
      ->add_option("--input", deploy.export_options.model.inputs,
                   "A .py: input shape[:dtype] of the export (repeat for several inputs)")
      ->allow_extra_args(false);
  deploy_cmd->add_option("--checkpoint", deploy.export_options.checkpoint,
                         "A .py: weights from a MindSpore checkpoint");
  add_common(deploy_cmd, &deploy.export_options.model.common);

  cellscope::server::LaunchCommandOptions launch;
  auto* launch_cmd = app.add_subcommand(
      "launch",
      "Run a training script on a cluster with MindSpore's launcher: `--msrun FILE [-- ARGS]` "
      "checks the file as `cellscope check` does (errors refuse the launch, exit 1), then runs "
      "msrun with mindspore_config.json's `cluster` and streams every rank's log prefixed "
      "[rank N]; the exit code is the job's (docs/parallel.md)");
  launch_cmd->fallthrough();
  launch_cmd->add_flag("--msrun", launch.msrun, "Launch with MindSpore's msrun")->required();
  launch_cmd->add_option("file", launch.file, "The training script")->required();
  launch_cmd->add_option("args", launch.script_args, "The script's own arguments, after `--`");
  launch_cmd->add_flag("--force", launch.force,
                       "Launch even when the check finds errors (said loudly)");
  launch_cmd->add_flag("--dry-run", launch.dry_run,
                       "Check and print the msrun command (and the other nodes'); start nothing");
  launch_cmd->add_option("--worker-num", launch.cli.worker_num, "msrun --worker_num: all workers")
      ->check(CLI::Range(1, 65536));
  launch_cmd
      ->add_option("--local-worker-num", launch.cli.local_worker_num,
                   "msrun --local_worker_num: the workers of this node")
      ->check(CLI::Range(1, 65536));
  launch_cmd->add_option("--master-addr", launch.cli.master_addr,
                         "msrun --master_addr: the scheduler's host");
  launch_cmd->add_option("--master-port", launch.cli.master_port, "msrun --master_port")
      ->check(CLI::Range(1024, 65535));
  launch_cmd
      ->add_option("--node-rank", launch.cli.node_rank,
                   "msrun --node_rank: this node's index in the hostfile")
      ->check(CLI::Range(0, 65535));
  launch_cmd
      ->add_option("--cluster-time-out", launch.cli.cluster_time_out,
                   "msrun --cluster_time_out, in seconds")
      ->check(CLI::Range(-1, 604800));
  launch_cmd->add_option("--hostfile", launch.cli.hostfile,
                         "A file of \"HOST slots=N\" lines: the nodes of the cluster");
  launch_cmd->add_option("--log-dir", launch.cli.log_dir,
                         "msrun --log_dir (worker_<rank>.log, scheduler.log)");
  launch_cmd->add_option("--python", launch.cli.python,
                         "The interpreter (with mindspore) that msrun and its workers run "
                         "(default: the first python3 / python on PATH that has mindspore)");
  add_common(launch_cmd, &launch.common);

  cellscope::agent::AgentOptions agent_opts;
  std::string agent_state;
  auto* agent_cmd = app.add_subcommand(
      "agent",
      "Run the device agent that `cellscope deploy` sends models to: HTTPS with a self-signed "
      "certificate made on first start, token authentication, staged bundles with rollback "
      "(docs/deploy.md)");
  agent_cmd->fallthrough();
  agent_cmd->add_option("--listen", agent_opts.listen, "ADDR:PORT to listen on (port 0: any)")
      ->capture_default_str();
  agent_cmd->add_option("--state-dir", agent_state,
                        "Certificate, token, uploads and bundles (default: "
                        "/var/lib/cellscope-agent as root, else $XDG_STATE_HOME/cellscope-agent)");
  agent_cmd->add_option("--token-file", agent_opts.token_file,
                        "The token hosts must send (default: $CELLSCOPE_AGENT_TOKEN, else "
                        "STATE/token, made on first start)");
  agent_cmd
      ->add_option("--max-connections", agent_opts.max_connections, "Connections served at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  agent_cmd
      ->add_option("--python", agent_opts.python,
                   "The Python whose `import mindspore` enables the mindspore backend")
      ->capture_default_str();
  agent_cmd
      ->add_option("--threads", agent_opts.threads,
                   "Threads of the CPU runtime's kernels for each model (0: every hardware "
                   "thread)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();

  auto* dap_cmd = app.add_subcommand(
      "dap",
      "Serve the Debug Adapter Protocol on stdin/stdout: run a model's construct on the CPU "
      "runtime with breakpoints, stepping and tensor inspection (for editors)");
  dap_cmd->fallthrough();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (app.get_subcommands().empty()) {
      auto is_command = [&app](const std::string& word) {
        try {
          return app.get_subcommand_ptr(word) != nullptr;
        } catch (const CLI::OptionNotFound&) {
          return false;
        }
      };
      if (auto word = first_command_word(argc, argv); word && !is_command(*word)) {
        std::cerr << "cellscope: error: unknown command '" << *word << "'\n\n" << app.help();
        return kExitUsage;
      }
    }
    std::cerr << "cellscope: error: " << e.what() << "\n\n";
    const auto* sub = app.get_subcommands().empty() ? &app : app.get_subcommands().front();
    std::cerr << sub->help("", CLI::AppFormatMode::Normal);
    return kExitUsage;
  }

  if (!setup_logging(log_level, log_file)) return kExitUsage;

  // mindspore_config.json (nearest to the model, not above --root): what the command line does
  // not say explicitly.
  auto apply_project_config = [](CLI::App* cmd, cellscope::server::CommonOptions& common,
                                 const std::string& model, std::vector<std::string>* inputs,
                                 const std::string& cell) {
    std::optional<std::filesystem::path> stop;
    if (!common.root.empty()) stop = std::filesystem::path(common.root);
    auto config =
        cellscope::server::load_project_config(std::filesystem::path(model).parent_path().empty()
                                                   ? std::filesystem::path(".")
                                                   : std::filesystem::path(model).parent_path(),
                                               stop);
    if (config.file.empty()) return config;
    spdlog::info("project configuration: {}", config.file);
    if (cmd->get_option("--target")->count() == 0 && config.target) common.target = *config.target;
    if (cmd->get_option("--ms-version")->count() == 0 && config.mindspore_version)
      common.ms_version = config.mindspore_version->str();
    if (inputs && inputs->empty()) {
      for (const auto& t : config.inputs_for(cell, model)) {
        std::string spec;
        for (const auto& d : t.shape.dims) spec += (spec.empty() ? "" : ",") + d.str();
        inputs->push_back(spec + ":" + std::string(graphcore::dtype_name(t.dtype)));
      }
    }
    for (const auto& c : config.config_paths()) common.configs.push_back(c.string());
    common.cell_inputs = config.inputs;
    if (auto n = config.device_count()) common.device_num = *n;
    common.config_diagnostics = std::move(config.diagnostics);
    return config;
  };
  if (check_cmd->parsed() && !check.paths.empty())
    apply_project_config(check_cmd, check.common, check.paths.front(), nullptr, "");
  if (graph_cmd->parsed()) {
    apply_project_config(graph_cmd, graph.common, graph.file,
                         graph.entries.empty() ? &graph.inputs : nullptr, graph.cell.value_or(""));
    if (graph.format == "html" && layer_opt->count() == 0) graph.pipeline.layer = "hardware";
  }
  if (train_cmd->parsed()) apply_project_config(train_cmd, train.common, train.file, nullptr, "");
  if (view_cmd->parsed()) {
    apply_project_config(view_cmd, view.graph.common, view.graph.file,
                         view.graph.entries.empty() ? &view.graph.inputs : nullptr,
                         view.graph.cell.value_or(""));
  }
  if (export_cmd->parsed()) {
    // The configuration's inputs are applied (and checked) by run_export, which knows the Cell.
    auto config = apply_project_config(export_cmd, export_opts.model.common, export_opts.model.file,
                                       nullptr, "");
    if (!config.file.empty()) {
      export_opts.project =
          std::make_shared<const cellscope::server::ProjectConfig>(std::move(config));
    }
  }
  if (deploy_cmd->parsed()) {
    if ((deploy.rollback ? 1 : 0) + (deploy.watch ? 1 : 0) + (deploy.model.empty() ? 0 : 1) != 1) {
      std::cerr << "cellscope deploy: error: give a model file, or --rollback or --watch without "
                   "one\n";
      return kExitUsage;
    }
    if (!deploy.model.empty() && !deploy.rollback) {
      auto config = apply_project_config(deploy_cmd, deploy.export_options.model.common,
                                         deploy.model, nullptr, "");
      if (!config.file.empty()) {
        deploy.export_options.project =
            std::make_shared<const cellscope::server::ProjectConfig>(std::move(config));
      }
    }
  }
  if (launch_cmd->parsed()) {
    auto config = apply_project_config(launch_cmd, launch.common, launch.file, nullptr, "");
    if (!config.file.empty()) {
      launch.project = std::make_shared<const cellscope::server::ProjectConfig>(std::move(config));
    }
  }
  if (agent_cmd->parsed()) agent_opts.state_dir = agent_state;
  spdlog::debug("{}", version_text());

  try {
    if (check_cmd->parsed()) return cellscope::server::run_check(check);
    if (graph_cmd->parsed()) return cellscope::server::run_graph(graph);
    if (view_cmd->parsed()) return cellscope::server::view::run_view(view);
    if (train_cmd->parsed()) return cellscope::server::run_train(train);
    if (export_cmd->parsed()) return cellscope::server::run_export(export_opts);
    if (deploy_cmd->parsed()) return cellscope::server::run_deploy(deploy);
    if (launch_cmd->parsed()) return cellscope::server::run_launch(launch);
    if (agent_cmd->parsed()) return cellscope::agent::run_agent(agent_opts);
    if (lsp_cmd->parsed()) return cellscope::lsp::run_stdio_server(lsp_options, log_file);
    if (dap_cmd->parsed()) return cellscope::dap::run_stdio_server(log_file);
  } catch (const std::exception& e) {
    spdlog::critical("internal error: {}", e.what());
    std::cerr << "cellscope: internal error: " << e.what() << "\n";
    return 3;
  }
  std::cerr << app.help();
  return kExitUsage;
}
