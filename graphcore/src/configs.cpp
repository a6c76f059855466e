// Config files the user names (AnalysisOptions::config_files): when the analysed program loads
// one (`yaml.safe_load(open(path))`, `json.load(f)`), its contents become known constants, so
// models built from a YAML config (mindyolo's `parse_model(cfg.backbone + cfg.head)`) can be
// built statically. The file is read through the SourceProvider (an editor's unsaved buffer
// wins) and parsed with yaml-cpp (JSON is read the same way); scalars are resolved the way
// PyYAML's safe_load does (YAML 1.1: `yes`/`on` are booleans, `1e-4` without a dot is a string).
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <regex>

#include "interp.h"

namespace graphcore::eval {

namespace fs = std::filesystem;

namespace {

// PyYAML's implicit resolvers for a plain (unquoted) scalar.
Value resolve_scalar(const std::string& s) {
  static const std::regex kInt("^[-+]?(0|[1-9][0-9_]*)$");
  static const std::regex kHex("^[-+]?0x[0-9a-fA-F_]+$");
  static const std::regex kFloat("^[-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+][0-9]+)?$");
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return Value::none();
  for (const char* t : {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
    if (s == t) return Value::boolean(true);
  for (const char* f : {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
    if (s == f) return Value::boolean(false);
  auto digits = [](std::string t) {
    t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
    return t;
  };
  try {
    if (std::regex_match(s, kInt)) return Value::integer(std::stoll(digits(s)));
    if (std::regex_match(s, kHex)) return Value::integer(std::stoll(digits(s), nullptr, 16));
    if (s != "." && std::regex_match(s, kFloat)) return Value::real(std::stod(digits(s)));
  } catch (const std::out_of_range&) {
    return Value::unknown();  // a number Python holds but int64 does not
  } catch (const std::invalid_argument&) {
    return Value::unknown();  // "._": PyYAML's float() of it raises
  }
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf")
    return Value::real(std::numeric_limits<double>::infinity());
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF")
    return Value::real(-std::numeric_limits<double>::infinity());
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return Value::real(std::nan(""));
  return make_str(s);
}

Value to_value(const YAML::Node& n, int depth) {
  if (depth > 256) return Value::unknown();
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return Value::none();
    case YAML::NodeType::Scalar:
      // A quoted scalar (tag "!") is a string whatever it looks like.
      return n.Tag() == "!" ? make_str(n.Scalar()) : resolve_scalar(n.Scalar());
    case YAML::NodeType::Sequence: {
      std::vector<Value> items;
      items.reserve(n.size());
      for (const auto& item : n) items.push_back(to_value(item, depth + 1));
      return make_list(std::move(items));
    }
    case YAML::NodeType::Map: {
      auto d = std::make_shared<DictObj>();
      for (const auto& kv : n)
        d->set(to_value(kv.first, depth + 1), to_value(kv.second, depth + 1));
      return Value::obj(d);
    }
  }
  return Value::unknown();
}

}  // namespace

std::optional<fs::path> Interpreter::named_config(const std::string& path) const {
  if (options.config_files.empty() || path.empty()) return std::nullopt;
  std::error_code ec;
  auto canon = [&](const fs::path& p) {
    fs::path c = fs::weakly_canonical(p, ec);
    return ec ? p.lexically_normal() : c;
  };
  // Where a relative path may be meant from: the working directory, the workspace root, the
  // analysed file's directory.
  std::vector<fs::path> candidates;
  fs::path p(path);
  if (p.is_absolute()) {
    candidates.push_back(p);
  } else {
    candidates.push_back(fs::current_path(ec) / p);
    if (options.workspace_root) candidates.push_back(*options.workspace_root / p);
    if (!main_file.empty()) candidates.push_back(fs::absolute(main_file, ec).parent_path() / p);
  }
  for (const fs::path& named : options.config_files) {
    fs::path want = canon(named);
    for (const fs::path& c : candidates) {
      if (canon(c) == want) return named;
    }
  }
  // `configs/yolov8n.yaml` read relative to a working directory the analyser cannot know:
  // the one named file whose path ends with those components.
  std::optional<fs::path> only;
  for (const fs::path& named : options.config_files) {
    fs::path want = canon(named);
    auto w = want.end();
    bool match = true;
    for (auto it = p.end(); it != p.begin();) {
      --it;
      if (*it == "." || it->empty()) continue;
      if (w == want.begin() || *--w != *it) {
        match = false;
        break;
      }
    }
    if (!match) continue;
    if (only) return std::nullopt;  // ambiguous
    only = named;
  }
  return only;
}

std::optional<std::string> Interpreter::config_text(const Value& file_obj, const Site& site,
                                                    std::string* shown) {
  // open(path) gives a file object that remembers its path (builtins.cpp).
  auto* file = file_obj.as<OpaqueObj>();
  if (!file || file->type_name != "file") return std::nullopt;
  const Value* name = file->attrs.find_str("name");
  const std::string* path = name ? str_of(*name) : nullptr;
  if (!path) return std::nullopt;
  auto named = named_config(*path);
  if (!named) return std::nullopt;
  *shown = named->string();
  auto text = loader.read_text(*named);
  // A dependency like an imported module: an edit to the config re-analyses the model.
  if (std::find(loader.files_read.begin(), loader.files_read.end(), named->string()) ==
      loader.files_read.end())
    loader.files_read.push_back(named->string());
  if (!text) {
    report(site, Severity::Error, "config-error",
           "cannot read the config file `" + named->string() + "` named in the project settings");
  }
  return text;
}

Value Interpreter::load_config(const Value& source, const Site& site, bool all_documents) {
  // A named config file, or a string the program holds (`yaml.load_all(f.read())` of one, or a
  // literal): both are constants.
  std::string shown = "the YAML text";
  std::optional<std::string> text;
  if (const std::string* s = str_of(source)) {
    text = *s;
  } else {
    text = config_text(source, site, &shown);
    if (!text) return Value::unknown();
    shown = "the config file `" + shown + "`";
  }
  try {
    if (!all_documents) return to_value(YAML::Load(*text), 0);
    std::vector<Value> docs;
    for (const YAML::Node& d : YAML::LoadAll(*text)) docs.push_back(to_value(d, 0));
    return make_list(std::move(docs));
  } catch (const YAML::Exception& e) {
    report(site, Severity::Error, "config-error",
           shown + " is not valid YAML/JSON: line " + std::to_string(e.mark.line + 1) +
               ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
    return Value::unknown();
  }
}

}  // namespace graphcore::eval
