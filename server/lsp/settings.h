// The settings analyses run under, for the language server: the client's `cellscope.*` settings
// over the workspace's mindspore_config.json over the server's defaults, and the workspace folders
// that relative paths and per-file inputs resolve against. One reader for both sources
// (server/project_config.h). Inputs are keyed by file (relative to the workspace folder), file
// name, "*", or a Cell's class name (AnalysisOptions::cell_inputs). No protocol: the caller
// publishes what loading a project config reports.
//
// Thread-safety: none; it belongs to the I/O thread (an analysis gets a copy of its options).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/version.h"
#include "lsp/convert.h"
#include "project_config.h"

namespace cellscope::lsp {

using Settings = server::ProjectConfig;

// Reads the client's settings object; problems are appended to `problems` (shown to the user).
Settings parse_settings(const Json& j, std::vector<std::string>& problems);

class WorkspaceSettings {
 public:
  // `default_debounce_ms`: the server's --debounce-ms, or nullopt (adaptive).
  explicit WorkspaceSettings(std::optional<int> default_debounce_ms)
      : default_debounce_ms_(default_debounce_ms) {}

  std::vector<std::string> roots;  // the workspace folders, normalised, without a trailing '/'
  Settings client;                 // `cellscope.*` from the client

  // The debounce someone chose (the client's setting, mindspore_config.json, --debounce-ms), or
  // nullopt: the scheduler sizes it from measured analysis times (DebouncePolicy).
  [[nodiscard]] std::optional<int> debounce_ms() const;
  [[nodiscard]] std::string target() const;
  [[nodiscard]] graphcore::Version ms_version() const;
  // The workspace folder holding `path` (the innermost), or "".
  [[nodiscard]] std::string root_of(const std::string& path) const;
  [[nodiscard]] std::vector<graphcore::TensorType> inputs_for(const std::string& path) const;

  // The options to analyse `path` with: target, MindSpore version, inputs, workspace root.
  [[nodiscard]] graphcore::AnalysisOptions options_for(const std::string& path) const;
  // The same plus the config files the settings name (what editor analyses read).
  [[nodiscard]] graphcore::AnalysisOptions options_with_configs_for(const std::string& path) const;

  // Re-reads mindspore_config.json from the first workspace folder that has one. Returns its text
  // (the positions of project().diagnostics are in it), or nullopt when there is none.
  std::optional<std::string> reload_project_config();
  // The mindspore_config.json in use ("" when there is none), and what it says.
  [[nodiscard]] const std::string& config_file() const { return config_file_; }
  [[nodiscard]] const Settings& project() const { return project_; }

 private:
  std::optional<int> default_debounce_ms_;
  Settings project_;         // mindspore_config.json
  std::string config_file_;  // the mindspore_config.json in use, if any
};

}  // namespace cellscope::lsp
