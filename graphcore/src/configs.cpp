// Config files the user names (AnalysisOptions::config_files): when the analysed program loads
// one (`yaml.safe_load(open(path))`, `json.load(f)`), its contents become known constants, so
// models built from a YAML config (mindyolo's `parse_model(cfg.backbone + cfg.head)`) can be
// built statically. The file is read through the SourceProvider (an editor's unsaved buffer
// wins) and parsed with libyaml, the parser of PyYAML's C loader (JSON is read the same way);
// scalars are resolved the way PyYAML's safe_load does (YAML 1.1: `yes`/`on` are booleans,
// `1e-4` without a dot is a string).
#include <yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>
#include <unordered_map>

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

struct YamlError {
  size_t line = 0;  // 0-based, as libyaml's marks
  size_t column = 0;
  std::string message;
};

// The documents of a YAML stream, built from libyaml's events: collections are made when they
// start (an alias inside its own anchor's collection is the same object, as in PyYAML) and
// filled as their items arrive, on an explicit stack (no recursion, whatever the nesting).
// Nodes with tags safe_load would not construct are unknown. A stream nested deeper than
// kMaxDepth is not read on (nullopt): libyaml's time grows with the square of the depth (25 s
// for 100,000 levels), and PyYAML's recursive composer fails far earlier on CPython's recursion
// limit. Throws YamlError.
class YamlReader {
 public:
  static constexpr size_t kMaxDepth = 256;

  explicit YamlReader(const std::string& text) : text_(text) {
    if (yaml_parser_initialize(&parser_) == 0) throw YamlError{0, 0, "out of memory"};
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~YamlReader() { yaml_parser_delete(&parser_); }
  YamlReader(const YamlReader&) = delete;
  YamlReader& operator=(const YamlReader&) = delete;

  std::optional<std::vector<Value>> documents() {
    try {
      return read_documents();
    } catch (YamlError& e) {
      // libyaml puts the end of the stream on a line of its own; PyYAML at the end of the text.
      const auto lines = static_cast<size_t>(std::count(text_.begin(), text_.end(), '\n'));
      if (e.column == 0 && e.line > lines) {
        const size_t last = text_.rfind('\n');
        e.line = lines;
        e.column = last == std::string::npos ? text_.size() : text_.size() - last - 1;
      }
      throw;
    }
  }

 private:
  std::optional<std::vector<Value>> read_documents() {
    std::vector<Value> docs;
    for (;;) {
      if (stack_.size() > kMaxDepth) return std::nullopt;
      Event e(parser_);
      switch (e.event.type) {
        case YAML_STREAM_END_EVENT:
          return docs;
        case YAML_DOCUMENT_START_EVENT:
          anchors_.clear();  // anchors do not cross documents
          root_ = Value::none();
          break;
        case YAML_DOCUMENT_END_EVENT:
          docs.push_back(root_);
          break;
        case YAML_ALIAS_EVENT: {
          auto it = anchors_.find(text_of(e.event.data.alias.anchor));
          if (it == anchors_.end())
            throw YamlError{e.event.start_mark.line, e.event.start_mark.column,
                            "found undefined alias"};
          add(it->second);
          break;
        }
        case YAML_SCALAR_EVENT: {
          const auto& sc = e.event.data.scalar;
          Value v = scalar(std::string(reinterpret_cast<const char*>(sc.value), sc.length),
                           text_of(sc.tag), sc.style == YAML_PLAIN_SCALAR_STYLE);
          anchor(sc.anchor, v);
          add(v);
          break;
        }
        case YAML_SEQUENCE_START_EVENT:
          open(make_list({}), e.event.data.sequence_start.anchor,
               text_of(e.event.data.sequence_start.tag), "tag:yaml.org,2002:seq");
          break;
        case YAML_MAPPING_START_EVENT:
          open(Value::obj(std::make_shared<DictObj>()), e.event.data.mapping_start.anchor,
               text_of(e.event.data.mapping_start.tag), "tag:yaml.org,2002:map");
          break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
          Open done = std::move(stack_.back());
          stack_.pop_back();
          add(done.usable ? done.value : Value::unknown());
          break;
        }
        default:  // stream start, no event
          break;
      }
    }
  }

  // One event, deleted when it goes out of scope.
  struct Event {
    yaml_event_t event{};
    explicit Event(yaml_parser_t& parser) {
      if (yaml_parser_parse(&parser, &event) == 0) {
        std::string why = parser.problem != nullptr ? parser.problem : "invalid YAML";
        if (parser.context != nullptr) why = std::string(parser.context) + ": " + why;
        throw YamlError{parser.problem_mark.line, parser.problem_mark.column, why};
      }
    }
    ~Event() { yaml_event_delete(&event); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
  };

  struct Open {
    Value value;               // the ListObj or DictObj being filled
    std::optional<Value> key;  // a mapping's key waiting for its value
    bool usable = true;        // false: a tag safe_load does not construct
  };

  static std::string text_of(const yaml_char_t* s) {
    return s != nullptr ? reinterpret_cast<const char*>(s) : "";
  }

  // A scalar as safe_load constructs it: plain ones by PyYAML's implicit resolvers, quoted and
  // block ones as strings; explicit tags of the core schema honoured, others unknown.
  static Value scalar(const std::string& text, const std::string& tag, bool plain) {
    if (tag.empty() || tag == "!")
      return plain && tag.empty() ? resolve_scalar(text) : make_str(text);
    if (tag == "tag:yaml.org,2002:str") return make_str(text);
    for (const char* t : {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                          "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"})
      if (tag == t) return resolve_scalar(text);
    return Value::unknown();
  }

  void anchor(const yaml_char_t* name, const Value& v) {
    if (name != nullptr) anchors_[text_of(name)] = v;
  }

  void open(Value v, const yaml_char_t* name, const std::string& tag, const char* own_tag) {
    anchor(name, v);
    const bool usable = tag.empty() || tag == own_tag;
    stack_.push_back(Open{std::move(v), std::nullopt, usable});
  }

  void add(const Value& v) {
    if (stack_.empty()) {
      root_ = v;
      return;
    }
    Open& top = stack_.back();
    if (auto* list = top.value.as<ListObj>()) {
      list->items.push_back(v);
    } else if (!top.key) {
      top.key = v;
    } else {
      top.value.as<DictObj>()->set(*top.key, v);
      top.key.reset();
    }
  }

  const std::string& text_;
  yaml_parser_t parser_{};
  std::vector<Open> stack_;
  std::unordered_map<std::string, Value> anchors_;
  Value root_ = Value::none();
};

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
    std::optional<std::vector<Value>> docs = YamlReader(*text).documents();
    if (!docs) return Value::unknown();
    if (all_documents) return make_list(std::move(*docs));
    return docs->empty() ? Value::none() : docs->front();  // an empty stream loads as None
  } catch (const YamlError& e) {
    report(site, Severity::Error, "config-error",
           shown + " is not valid YAML/JSON: line " + std::to_string(e.line + 1) + ", column " +
               std::to_string(e.column + 1) + ": " + e.message);
    return Value::unknown();
  }
}

}  // namespace graphcore::eval
