// mindspore_config.json: the project's configuration at the workspace root, read by the CLI and
// the language server alike. As users of the article expect:
//
//   {
//     "graph_visualization": {"enable": true, "backend": "ascend"},   // backend: the target
//     "target": "ascend910b",              // optional: the chip, overriding the backend's default
//     "mindspore_version": "2.10.0",       // optional: the MindSpore API to check against
//     "inputs": {"LeNet5": ["32,1,32,32"], "models/resnet.py": ["1,3,224,224"], "*": [...]},
//     "configs": ["configs/yolov8n.yaml"], // YAML/JSON files the models load: known constants
//     "devices": [{"name": "edge1", "address": "10.0.0.2:8443", "target": "ascend310",
//                  "token_file": "~/.config/cellscope/edge1.token"}], // `cellscope deploy`
//     "cluster": {"worker_num": 16, "master_addr": "10.0.0.1", "master_port": 8118,
//                 "hostfile": [{"host": "10.0.0.1", "slots": 8}, {"host": "10.0.0.2", "slots": 8}],
//                 "log_dir": "msrun_log", "python": "~/venv/bin/python"}  // `cellscope launch`
//   }
//
// A "cellscope" object may hold the same keys (and "debounceMs" for the language server). Bad
// values become diagnostics located in the file; the rest of the file still applies.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graphcore/diagnostic.h"
#include "graphcore/shape.h"
#include "graphcore/version.h"

namespace cellscope::server {

inline constexpr const char* kProjectConfigName = "mindspore_config.json";

// A device `cellscope deploy --device NAME` sends models to (docs/deploy.md): an agent at
// `address` (HOST:PORT), authenticated with the token read from `token_file` (relative to the
// config's directory; "~/" is the home directory) or the environment variable `token_env`.
struct DeviceConfig {
  std::string name;
  std::string address;
  std::string target;  // a graphcore target name ("cpu" when not given)
  std::string token_file;
  std::string token_env;
};

// A host of `cluster.hostfile`: a machine and the workers (devices) it runs.
struct ClusterHost {
  std::string host;
  int slots = 1;
};

// `cluster`: how `cellscope launch --msrun` runs MindSpore's msrun (docs/parallel.md, "Launching
// on a cluster"). Unset fields take the command line's value, else a default derived from the
// others (launch.h: resolve_cluster).
struct ClusterConfig {
  bool present = false;  // the config has a valid `cluster` object
  std::optional<int> worker_num;
  std::optional<int> local_worker_num;
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  std::optional<int> node_rank;
  std::optional<int> cluster_time_out;  // seconds; msrun's --cluster_time_out
  std::vector<ClusterHost> hosts;       // `hostfile` given as a list
  std::string hostfile;                 // `hostfile` given as a path (lines "HOST slots=N")
  std::string log_dir;                  // as written (relative to the config's directory)
  std::string python;                   // as written ("~/" is the home directory)
  std::string rank_table_file;          // msrun's --rank_table_file, as written
};

struct ProjectConfig {
  std::string file;                   // the file read ("" when there is none)
  bool visualization_enabled = true;  // graph_visualization.enable
  std::optional<std::string> target;  // a graphcore target name ("ascend910b", "cpu", ...)
  std::optional<graphcore::Version> mindspore_version;
  // Input shapes by Cell name, by file (relative to the config's directory, or a file name),
  // or "*" for any.
  std::map<std::string, std::vector<graphcore::TensorType>> inputs;
  std::optional<int> debounce_ms;  // the language server's debounce
  // `device_num`: the devices of the parallel job, for scripts whose set_auto_parallel_context
  // gives none (msrun decides it at launch; docs/parallel.md). 1..4096.
  std::optional<int64_t> device_num;
  // `configs`: YAML/JSON files the models load, as written (relative to the config's directory).
  std::vector<std::string> configs;
  // `configs` as paths: relative ones against the directory of `file` (or as they are).
  [[nodiscard]] std::vector<std::filesystem::path> config_paths() const;
  std::vector<graphcore::Diagnostic> diagnostics;  // problems, located in `file`
  std::vector<DeviceConfig> devices;               // `devices` (top level only)
  ClusterConfig cluster;                           // `cluster` (top level only)

  // The device count of the parallel job: `device_num`, else `cluster.worker_num` (MindSpore
  // takes the count from the launcher when the script sets none, and `cellscope launch --msrun`
  // starts worker_num workers), else none.
  [[nodiscard]] std::optional<int64_t> device_count() const {
    if (device_num) return device_num;
    if (cluster.worker_num) return static_cast<int64_t>(*cluster.worker_num);
    return std::nullopt;
  }
  // The inputs for `cell` (may be empty) in `model_file`, or an empty list.
  [[nodiscard]] std::vector<graphcore::TensorType> inputs_for(const std::string& cell,
                                                              const std::string& model_file) const;
};

// Reads the settings keys of a JSON object (target, mindspore_version / mindsporeVersion, inputs,
// debounceMs) into `out`: the shared reader of mindspore_config.json and of the editor's
// `cellscope` settings. A value that cannot be used is reported through `problem(key, message)`
// and leaves its field unset; an empty version string means "not set".
using SettingsProblem = std::function<void(const std::string& key, const std::string& message)>;
void read_settings(const nlohmann::json& j, ProjectConfig& out, const SettingsProblem& problem);

// "Ascend" (a backend), "CPU", "ascend910b" -> a graphcore target name; nullopt if unknown.
std::optional<std::string> normalize_target(std::string name);

// Parses the text of a mindspore_config.json; never throws.
ProjectConfig parse_project_config(const std::string& file, const std::string& text);

// The nearest mindspore_config.json in `start` or its ancestors (not above `stop` when given).
std::optional<std::filesystem::path> find_project_config(
    const std::filesystem::path& start, const std::optional<std::filesystem::path>& stop = {});

// find + read + parse; an empty config when there is none or it cannot be read.
ProjectConfig load_project_config(const std::filesystem::path& start,
                                  const std::optional<std::filesystem::path>& stop = {});

}  // namespace cellscope::server
