// `cellscope launch --msrun FILE [-- ARGS]` (launch_command.cpp; docs/parallel.md, "Launching on a
// cluster"): the static check `cellscope check` runs, then MindSpore's own launcher (msrun) with
// the cluster of mindspore_config.json's `cluster` and the command line, every rank's log
// streamed with a `[rank N]` prefix. The pure parts (the cluster resolved from the configuration
// and the options, msrun's command line) are declared here for the unit tests.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "project_config.h"

namespace cellscope::server {

// The command line's cluster options; unset ones come from mindspore_config.json's `cluster`.
struct ClusterOverrides {
  std::optional<int> worker_num;
  std::optional<int> local_worker_num;
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  std::optional<int> node_rank;
  std::optional<int> cluster_time_out;
  std::optional<std::string> hostfile;  // a file of "HOST slots=N" lines
  std::optional<std::string> log_dir;
  std::optional<std::string> python;
};

struct LaunchCommandOptions {
  CommonOptions common;
  std::string file;
  std::vector<std::string> script_args;  // after `--`: the script's own arguments
  bool msrun = false;                    // --msrun: the launcher (the only one so far)
  bool force = false;                    // launch even when the check finds errors
  bool dry_run = false;                  // check and print the commands; start nothing
  ClusterOverrides cli;
  std::shared_ptr<const ProjectConfig> project;  // nullptr: no mindspore_config.json
};

// The cluster as msrun runs it, for this node.
struct ResolvedCluster {
  int worker_num = 8;  // msrun's defaults
  int local_worker_num = 8;
  std::string master_addr = "127.0.0.1";
  int master_port = 8118;
  int node_rank = 0;
  std::optional<int> cluster_time_out;
  std::vector<ClusterHost> hosts;  // the hostfile (empty: this machine only)
  std::filesystem::path log_dir;   // absolute
  std::string python;              // empty: the first python3 / python on PATH with mindspore
  std::string rank_table_file;     // absolute, or empty
};

// A hostfile's text: one host a line, "HOST slots=N" (or "HOST": one slot); "#" starts a comment.
// nullopt with *error set (line number and why) when a line is not of that form or there is no
// host.
std::optional<std::vector<ClusterHost>> parse_hostfile(const std::string& text, std::string* error);

// The configuration's `cluster` (nullptr: none; relative paths against `config_dir`) with the
// command line's values over it (relative paths against the current directory). Defaults: with a
// hostfile, worker_num is the sum of its slots, master_addr its first host and local_worker_num
// this node's (node_rank's) slots; without one, worker_num and local_worker_num default to each
// other, then to msrun's 8. log_dir defaults to msrun_log in `config_dir` (or the script's
// directory when there is no configuration). nullopt with *error set when the values contradict
// each other (local_worker_num > worker_num, slots not summing to worker_num, node_rank past the
// hostfile, an unreadable hostfile).
std::optional<ResolvedCluster> resolve_cluster(const ClusterConfig* config,
                                               const std::filesystem::path& config_dir,
                                               const ClusterOverrides& cli,
                                               const std::filesystem::path& script,
                                               std::string* error);

// msrun's arguments (after the executable) for node `node_rank` running `local_worker_num`
// workers: --worker_num --local_worker_num --master_addr --master_port --node_rank --log_dir
// --join=True [--cluster_time_out] [--rank_table_file], then the script and its arguments.
std::vector<std::string> msrun_arguments(const ResolvedCluster& cluster, int node_rank,
                                         int local_worker_num, const std::string& script,
                                         const std::vector<std::string>& script_args);

// `word` quoted for a POSIX shell when it needs it (printed command lines).
std::string shell_quote(const std::string& word);

int run_launch(const LaunchCommandOptions& options);

}  // namespace cellscope::server
