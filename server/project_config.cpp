#include "project_config.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graphcore/analysis.h"
#include "graphcore/optimize.h"
#include "graphcore/source.h"
#include "graphcore/text.h"

namespace cellscope::server {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// Reports problems at the first occurrence of `"key"` in the text (nlohmann keeps no positions).
class Reporter {
 public:
  Reporter(const std::string& file, const std::string& text, ProjectConfig& out)
      : file_(file), text_(text), index_(text), out_(out) {}
  void at_key(const std::string& key, const std::string& message,
              graphcore::Severity severity = graphcore::Severity::Error) {
    size_t off = text_.find("\"" + key + "\"");
    graphcore::SourceRange r;
    if (off != std::string::npos) {
      r.start = index_.position_of(off);
      r.end = index_.position_of(off + key.size() + 2);
    }
    add(r, message, severity);
  }
  void at_offset(size_t off, const std::string& message) {
    graphcore::Position p = index_.position_of(std::min(off, text_.size()));
    add({p, {p.line, p.column + 1}}, message, graphcore::Severity::Error);
  }

 private:
  void add(graphcore::SourceRange r, const std::string& message, graphcore::Severity severity) {
    out_.diagnostics.push_back(
        graphcore::Diagnostic{file_, r, severity, "invalid-config", message, {}, {}});
  }
  const std::string& file_;
  const std::string& text_;
  graphcore::LineIndex index_;
  ProjectConfig& out_;
};

// "cpu, gpu, ascend910, ...": the targets graphcore knows, for messages.
std::string target_list() {
  std::string out;
  for (const auto& t : graphcore::targets()) {
    if (!out.empty()) out += ", ";
    out += t.name;
  }
  return out;
}

// `devices`: [{name, address, target, token_file | token_env}]; a bad entry is reported and
// skipped, the others still apply.
void read_devices(const Json& list, ProjectConfig& out, const SettingsProblem& problem) {
  if (!list.is_array()) {
    problem("devices",
            "`devices` must be a list of {\"name\", \"address\", \"target\", "
            "\"token_file\" or \"token_env\"}");
    return;
  }
  for (const auto& d : list) {
    auto text = [&d](const char* key) {
      auto it = d.find(key);
      return it != d.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    if (!d.is_object() || text("name").empty() || text("address").empty()) {
      problem("devices", "each device needs a \"name\" and an \"address\" (HOST:PORT)");
      continue;
    }
    DeviceConfig dev{text("name"), text("address"), text("target"), text("token_file"),
                     text("token_env")};
    if (dev.target.empty()) {
      dev.target = "cpu";
    } else if (auto t = normalize_target(dev.target)) {
      dev.target = *t;
    } else {
      problem("target", "device `" + dev.name + "`: unknown target `" + dev.target + "` (one of " +
                            target_list() + ")");
      continue;
    }
    if (dev.token_file.empty() == dev.token_env.empty()) {
      problem("devices",
              "device `" + dev.name + "` needs exactly one of \"token_file\" and \"token_env\"");
      continue;
    }
    if (std::ranges::any_of(out.devices, [&](const auto& o) { return o.name == dev.name; })) {
      problem("devices", "device `" + dev.name + "` is listed twice");
      continue;
    }
    out.devices.push_back(std::move(dev));
  }
}

// `cluster` (docs/parallel.md, "Launching on a cluster"): a bad field is reported and left unset,
// the others still apply.
void read_cluster(const Json& c, ProjectConfig& out, const SettingsProblem& problem) {
  if (!c.is_object()) {
    problem("cluster",
            "`cluster` must be an object such as {\"worker_num\": 2, \"master_port\": 8118}");
    return;
  }
  ClusterConfig& cl = out.cluster;
  cl.present = true;
  auto integer = [&](const char* key, int lo, int hi, std::optional<int>& field) {
    auto it = c.find(key);
    if (it == c.end() || it->is_null()) return;
    if (it->is_number_integer() && it->get<int64_t>() >= lo && it->get<int64_t>() <= hi) {
      field = static_cast<int>(it->get<int64_t>());
    } else {
      problem(key, "`" + std::string(key) + "` must be an integer from " + std::to_string(lo) +
                       " to " + std::to_string(hi) + "; got " + it->dump());
    }
  };
  auto text = [&](const char* key, std::string& field) {
    auto it = c.find(key);
    if (it == c.end() || it->is_null()) return;
    if (it->is_string() && !it->get<std::string>().empty()) {
      field = it->get<std::string>();
    } else {
      problem(key, "`" + std::string(key) + "` must be a non-empty string; got " + it->dump());
    }
  };
  integer("worker_num", 1, 65536, cl.worker_num);
  integer("local_worker_num", 1, 65536, cl.local_worker_num);
  integer("master_port", 1024, 65535, cl.master_port);  // msrun's range
  integer("node_rank", 0, 65535, cl.node_rank);
  integer("cluster_time_out", -1, 86400 * 7, cl.cluster_time_out);
  std::string addr;
  text("master_addr", addr);
  if (!addr.empty()) cl.master_addr = addr;
  text("log_dir", cl.log_dir);
  text("python", cl.python);
  text("rank_table_file", cl.rank_table_file);
  auto hf = c.find("hostfile");
  if (hf == c.end() || hf->is_null()) return;
  if (hf->is_string() && !hf->get<std::string>().empty()) {
    cl.hostfile = hf->get<std::string>();
    return;
  }
  const char* shape =
      "`hostfile` must be a path (lines \"HOST slots=N\") or a list of {\"host\": \"10.0.0.1\", "
      "\"slots\": 8}";
  if (!hf->is_array() || hf->empty()) {
    problem("hostfile", shape);
    return;
  }
  std::vector<ClusterHost> hosts;
  for (const auto& h : *hf) {
    auto host = h.is_object() ? h.find("host") : h.end();
    auto slots = h.is_object() ? h.find("slots") : h.end();
    const bool slots_ok =
        slots == h.end() || (slots->is_number_integer() && slots->get<int64_t>() >= 1 &&
                             slots->get<int64_t>() <= 65536);
    if (!h.is_object() || host == h.end() || !host->is_string() ||
        host->get<std::string>().empty() || !slots_ok) {
      problem("hostfile", std::string(shape) + "; got " + h.dump());
      return;  // a partial host list would give the wrong ranks: none is used
    }
    hosts.push_back(
        {host->get<std::string>(), slots == h.end() ? 1 : static_cast<int>(slots->get<int64_t>())});
  }
  cl.hosts = std::move(hosts);
}

}  // namespace

std::optional<std::string> normalize_target(std::string name) {
  name = graphcore::text::lower(name);
  if (name == "ascend") return std::string("ascend910b");
  if (graphcore::find_target(name) != nullptr) return name;
  return std::nullopt;
}

void read_settings(const Json& j, ProjectConfig& out, const SettingsProblem& problem) {
  if (!j.is_object()) return;
  // A string as written, anything else as JSON: for messages.
  auto shown = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  if (auto t = j.find("target"); t != j.end()) {
    auto n = t->is_string() ? normalize_target(t->get<std::string>()) : std::nullopt;
    if (n) {
      out.target = *n;
    } else {
      problem("target",
              "unknown target `" + shown(*t) + "` (expected one of " + target_list() + ")");
    }
  }
  for (const char* key : {"mindspore_version", "mindsporeVersion"}) {
    auto v = j.find(key);
    if (v == j.end() || (v->is_string() && v->get<std::string>().empty())) continue;  // unset
    auto ver = v->is_string() ? graphcore::Version::parse(v->get<std::string>()) : std::nullopt;
    if (ver) {
      out.mindspore_version = *ver;
    } else {
      problem(key, "invalid MindSpore version `" + shown(*v) + "` (expected e.g. \"2.10.0\")");
    }
  }
  if (auto in = j.find("inputs"); in != j.end()) {
    if (!in->is_object()) {
      problem("inputs",
              "`inputs` must map a Cell name, a file or \"*\" to input shapes, "
              "e.g. {\"LeNet5\": [\"32,1,32,32\"]}");
    } else {
      for (const auto& [key, specs] : in->items()) {
        std::vector<graphcore::TensorType> types;
        for (const auto& spec : specs.is_array() ? specs : Json::array({specs})) {
          std::string err = "not a string";
          std::optional<graphcore::TensorType> t;
          if (spec.is_string()) t = graphcore::parse_input_spec(spec.get<std::string>(), &err);
          if (t) {
            types.push_back(*t);
          } else {
            std::string message = "input `" + shown(spec) + "` for ";
            message.append(key).append(": ").append(err);
            problem(key, message);
          }
        }
        out.inputs[key] = std::move(types);
      }
    }
  }
  if (auto c = j.find("configs"); c != j.end()) {
    bool ok = c->is_string() || c->is_array();
    for (const auto& item : c->is_array() ? *c : Json::array({*c})) {
      if (item.is_string() && !item.get<std::string>().empty()) {
        out.configs.push_back(item.get<std::string>());
      } else {
        ok = false;
      }
    }
    if (!ok) {
      problem("configs",
              "`configs` must be a path or a list of paths of YAML/JSON files, e.g. "
              "[\"configs/yolov8n.yaml\"]");
    }
  }
  if (auto d = j.find("device_num"); d != j.end()) {
    // MindSpore's range for device_num ([1, 4096], _set_auto_parallel_context's docstring).
    if (d->is_number_integer() && d->get<int64_t>() >= 1 && d->get<int64_t>() <= 4096) {
      out.device_num = d->get<int64_t>();
    } else {
      problem("device_num",
              "`device_num` must be an integer from 1 to 4096 (the devices of the "
              "parallel job), but got " +
                  shown(*d));
    }
  }
  if (auto d = j.find("debounceMs"); d != j.end() && !d->is_null()) {  // null: adaptive
    if (d->is_number_integer()) {
      out.debounce_ms = std::clamp(d->get<int>(), 0, 5000);
    } else {
      problem("debounceMs", "`debounceMs` must be an integer number of milliseconds");
    }
  }
}

std::vector<fs::path> ProjectConfig::config_paths() const {
  std::vector<fs::path> out;
  for (const std::string& c : configs) {
    fs::path p(c);
    if (p.is_relative() && !file.empty()) p = fs::path(file).parent_path() / p;
    out.push_back(p.lexically_normal());
  }
  return out;
}

std::vector<graphcore::TensorType> ProjectConfig::inputs_for(const std::string& cell,
                                                             const std::string& model_file) const {
  std::vector<std::string> keys;
  if (!cell.empty()) keys.push_back(cell);
  if (!file.empty()) {
    std::error_code ec;
    fs::path rel = fs::relative(fs::absolute(model_file, ec), fs::path(file).parent_path(), ec);
    if (!ec) keys.push_back(rel.generic_string());
  }
  keys.push_back(fs::path(model_file).filename().string());
  keys.emplace_back("*");
  for (const auto& k : keys) {
    if (auto it = inputs.find(k); it != inputs.end()) return it->second;
  }
  return {};
}

ProjectConfig parse_project_config(const std::string& file, const std::string& text) {
  ProjectConfig out;
  out.file = file;
  Reporter report(file, text, out);
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    report.at_offset(e.byte > 0 ? e.byte - 1 : 0,
                     std::string("mindspore_config.json is not valid JSON: ") + e.what());
    return out;
  } catch (const Json::out_of_range& e) {
    // A number past a double's range (1e400): nlohmann names the token but not its offset.
    const std::string what = e.what();
    const size_t open = what.find('\''), close = what.rfind('\'');
    size_t at = 0;
    if (open != std::string::npos && close > open + 1)
      at = text.find(what.substr(open + 1, close - open - 1));
    report.at_offset(at == std::string::npos ? 0 : at,
                     "mindspore_config.json is not valid JSON: " + what);
    return out;
  }
  if (!j.is_object()) {
    report.at_offset(0, "mindspore_config.json must be a JSON object");
    return out;
  }
  if (auto gv = j.find("graph_visualization"); gv != j.end()) {
    if (!gv->is_object()) {
      report.at_key("graph_visualization",
                    "`graph_visualization` must be an object such as {\"enable\": true, "
                    "\"backend\": \"ascend\"}");
    } else {
      if (auto en = gv->find("enable"); en != gv->end()) {
        if (en->is_boolean()) {
          out.visualization_enabled = en->get<bool>();
        } else {
          report.at_key("enable", "`enable` must be true or false");
        }
      }
      if (auto b = gv->find("backend"); b != gv->end()) {
        auto n = b->is_string() ? normalize_target(b->get<std::string>()) : std::nullopt;
        if (n) {
          out.target = *n;
        } else {
          report.at_key("backend",
                        "`backend` must be \"ascend\", \"cpu\" or \"gpu\" (or a chip "
                        "such as \"ascend910b\"); got " +
                            b->dump());
        }
      }
    }
  }
  const SettingsProblem at_key = [&](const std::string& key, const std::string& message) {
    report.at_key(key, message);
  };
  read_settings(j, out, at_key);  // "target" here overrides the backend's default chip
  if (auto dv = j.find("devices"); dv != j.end()) read_devices(*dv, out, at_key);
  if (auto cl = j.find("cluster"); cl != j.end()) read_cluster(*cl, out, at_key);
  if (auto cs = j.find("cellscope"); cs != j.end()) {
    if (cs->is_object()) {
      read_settings(*cs, out, at_key);
    } else {
      report.at_key("cellscope", "`cellscope` must be an object");
    }
  }
  return out;
}

std::optional<fs::path> find_project_config(const fs::path& start,
                                            const std::optional<fs::path>& stop) {
  std::error_code ec;
  fs::path dir = fs::absolute(start, ec).lexically_normal();
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path();
  const std::optional<fs::path> limit =
      stop ? std::optional<fs::path>(fs::absolute(*stop, ec).lexically_normal()) : std::nullopt;
  for (;;) {
    fs::path candidate = dir / kProjectConfigName;
    if (fs::is_regular_file(candidate, ec)) return candidate;
    if ((limit && dir == *limit) || dir == dir.root_path() || !dir.has_parent_path()) break;
    fs::path parent = dir.parent_path();
    if (parent == dir) break;
    dir = parent;
  }
  return std::nullopt;
}

ProjectConfig load_project_config(const fs::path& start, const std::optional<fs::path>& stop) {
  auto found = find_project_config(start, stop);
  if (!found) return {};
  std::ifstream in(*found, std::ios::binary);
  if (!in) {
    ProjectConfig out;
    out.file = found->string();
    out.diagnostics.push_back(graphcore::Diagnostic{out.file,
                                                    {},
                                                    graphcore::Severity::Error,
                                                    "invalid-config",
                                                    "cannot read " + out.file,
                                                    {},
                                                    {}});
    return out;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_project_config(found->string(), ss.str());
}

}  // namespace cellscope::server
