#include "lsp/settings.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace cellscope::lsp {

namespace fs = std::filesystem;

Settings parse_settings(const Json& j, std::vector<std::string>& problems) {
  Settings s;
  server::read_settings(
      j, s, [&](const std::string&, const std::string& message) { problems.push_back(message); });
  return s;
}

std::optional<int> WorkspaceSettings::debounce_ms() const {
  if (client.debounce_ms) return client.debounce_ms;
  if (project_.debounce_ms) return project_.debounce_ms;
  return default_debounce_ms_;
}

std::string WorkspaceSettings::target() const {
  return client.target.value_or(project_.target.value_or("cpu"));
}

graphcore::Version WorkspaceSettings::ms_version() const {
  return client.mindspore_version.value_or(
      project_.mindspore_version.value_or(graphcore::kDefaultMindSporeVersion));
}

std::string WorkspaceSettings::root_of(const std::string& path) const {
  std::string best;
  for (const auto& r : roots) {
    if (path.starts_with(r + "/") && r.size() > best.size()) best = r;
  }
  return best;
}

std::vector<graphcore::TensorType> WorkspaceSettings::inputs_for(const std::string& path) const {
  const std::string root = root_of(path);
  const std::string rel = root.empty() ? path : path.substr(root.size() + 1);
  const std::string name = fs::path(path).filename().string();
  for (const Settings* s : {&client, &project_}) {
    for (const std::string& key : {rel, path, name, std::string("*")}) {
      if (auto it = s->inputs.find(key); it != s->inputs.end()) return it->second;
    }
  }
  return {};
}

graphcore::AnalysisOptions WorkspaceSettings::options_for(const std::string& path) const {
  graphcore::AnalysisOptions o;
  o.target = target();
  o.mindspore_version = ms_version();
  o.inputs = inputs_for(path);
  // Inputs keyed by a Cell's class name (`"inputs": {"Net": ["1,1,28,28"]}`): the client's
  // settings over the project file's.
  o.cell_inputs = project_.inputs;
  for (const auto& [key, types] : client.inputs) o.cell_inputs[key] = types;
  if (auto n = project_.device_count()) o.device_num = *n;
  if (auto n = client.device_count()) o.device_num = *n;
  if (std::string root = root_of(path); !root.empty()) o.workspace_root = root;
  return o;
}

graphcore::AnalysisOptions WorkspaceSettings::options_with_configs_for(
    const std::string& path) const {
  graphcore::AnalysisOptions o = options_for(path);
  for (const auto& c : project_.config_paths()) o.config_files.push_back(c);
  for (const auto& c : client.configs) {
    fs::path p(c);
    if (p.is_relative() && !root_of(path).empty()) p = fs::path(root_of(path)) / p;
    o.config_files.push_back(p);
  }
  return o;
}

std::optional<std::string> WorkspaceSettings::reload_project_config() {
  project_ = Settings{};
  config_file_.clear();
  for (const auto& root : roots) {
    fs::path file = fs::path(root) / server::kProjectConfigName;
    std::ifstream in(file, std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    project_ = server::parse_project_config(file.string(), text);
    config_file_ = file.string();
    return text;  // the first folder's file wins
  }
  return std::nullopt;
}

}  // namespace cellscope::lsp
