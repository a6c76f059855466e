// Imports: workspace modules (relative and absolute), MindSpore namespaces, numpy/math, and the
// few standard-library helpers model code relies on; everything else is an opaque module.
#include <algorithm>
#include <chrono>
#include <list>
#include <mutex>
#include <unordered_set>

#include "argparse_model.h"
#include "interp.h"

namespace graphcore {

struct ParseCache::Impl {
  size_t capacity;
  mutable std::mutex mutex;
  // Most recently used last.
  std::list<std::shared_ptr<const ast::ParsedFile>> files;
  size_t hits = 0;
  size_t misses = 0;
  size_t incremental = 0;
  size_t from_scratch = 0;
  size_t max_bytes = 0;  // the limit the cached parses were made with

  // The parse of `path` with this text, or nullptr; `*previous` then gets the file's last parse
  // (another version of its text), if any.
  std::shared_ptr<const ast::ParsedFile> find(const std::string& path, const std::string& text,
                                              const ast::ParseLimits& limits,
                                              std::shared_ptr<const ast::ParsedFile>* previous) {
    std::lock_guard lock(mutex);
    for (auto it = files.begin(); it != files.end(); ++it) {
      const ast::ParsedFile& f = **it;
      if (f.path != path || max_bytes != limits.max_bytes) continue;
      if (!f.same_source(text)) {
        *previous = *it;
        continue;
      }
      auto hit = *it;
      files.erase(it);
      files.push_back(hit);
      ++hits;
      return hit;
    }
    ++misses;
    return nullptr;
  }
  void store(const std::shared_ptr<const ast::ParsedFile>& parsed, const ast::ParseLimits& limits) {
    std::lock_guard lock(mutex);
    if (max_bytes != limits.max_bytes) {
      files.clear();
      max_bytes = limits.max_bytes;
    }
    if (parsed->reparsed_incrementally) ++incremental;
    if (parsed->reparsed_from_scratch) ++from_scratch;
    std::erase_if(files, [&](const auto& f) { return f->path == parsed->path; });
    files.push_back(parsed);
    while (files.size() > capacity) files.pop_front();
  }
};

}  // namespace graphcore

namespace graphcore::eval {

namespace fs = std::filesystem;

namespace {
// The directory of a module's file, absolute: `check layoutlmv3.py` run inside its package
// must resolve `from ..layoutxlm import ...` as Python would.
fs::path module_dir(const ModuleObj* m) {
  fs::path file(m->file);
  if (file.is_relative()) {
    std::error_code ec;
    fs::path abs = fs::absolute(file, ec);
    if (!ec) file = abs.lexically_normal();
  }
  return file.parent_path();
}

// A path found from module_dir(from), written the way `from`'s own path is: relative to the
// working directory when that one is, so diagnostics name files one way.
fs::path like_importer(const fs::path& found, const ModuleObj* from) {
  if (!from || fs::path(from->file).is_absolute() || found.is_relative()) return found;
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  if (ec) return found;
  fs::path rel = found.lexically_normal().lexically_relative(cwd);
  if (rel.empty() || *rel.begin() == "..") return found;
  return rel;
}
}  // namespace

ModuleLoader::ModuleLoader(SourceProvider& sources, const AnalysisOptions& options)
    : sources_(sources), options_(options) {}

// Where Python would look: sys.path entries. A directory that is itself a package (has an
// __init__.py) never is one, so `import transformers` inside mindone/transformers/... is the
// third-party library, not the sibling package mindone.transformers.
std::vector<fs::path> ModuleLoader::sys_path(const ModuleObj* from) const {
  std::vector<fs::path> roots;
  if (options_.workspace_root) roots.push_back(*options_.workspace_root);
  if (from && !from->file.empty()) {
    std::error_code ec;
    fs::path dir = module_dir(from);
    for (int i = 0; i < 8 && !dir.empty(); ++i) {
      // The analysed file's own directory is sys.path[0] when it runs as a script.
      bool script_dir = i == 0 && from->name == "__main__";
      if (script_dir || !fs::exists(dir / "__init__.py", ec)) roots.push_back(dir);
      if (dir == dir.parent_path()) break;
      dir = dir.parent_path();
    }
  }
  return roots;
}

std::optional<fs::path> ModuleLoader::resolve(std::string_view dotted, int level, ModuleObj* from) {
  std::vector<fs::path> roots;
  if (level > 0) {
    if (!from || from->file.empty()) return std::nullopt;
    fs::path base = module_dir(from);
    for (int i = 1; i < level; ++i) base = base.parent_path();
    roots.push_back(base);
  } else {
    roots = sys_path(from);
  }
  std::string rel;
  for (char c : dotted) rel.push_back(c == '.' ? '/' : c);
  for (const fs::path& root : roots) {
    fs::path base = rel.empty() ? root : root / rel;
    for (fs::path candidate : {fs::path(base.string() + ".py"), base / "__init__.py"}) {
      if (rel.empty() && candidate.filename() != "__init__.py") continue;
      if (auto text = sources_.read(candidate)) {
        candidate = like_importer(candidate, from);
        prefetched_[candidate.string()] = std::move(*text);  // load_file uses it: one read
        return candidate;
      }
    }
  }
  return std::nullopt;
}

ModuleObj* ModuleLoader::load_file(Interpreter& in, const fs::path& file, const std::string& name) {
  std::error_code ec;
  fs::path canon = fs::weakly_canonical(file, ec);
  if (ec) canon = file;
  std::string key = canon.string();
  auto it = modules_.find(key);
  if (it != modules_.end()) return static_cast<ModuleObj*>(it->second.get());
  std::optional<std::string> text;
  if (auto pre = prefetched_.find(file.string()); pre != prefetched_.end()) {
    text = std::move(pre->second);
    prefetched_.erase(pre);
  } else {
    text = sources_.read(file);
  }
  if (!text) return nullptr;
  auto m = std::make_shared<ModuleObj>();
  m->name = name;
  m->file = file.string();
  m->file_id = m->file;
  modules_.emplace(key, m);
  files_read.push_back(m->file);
  ast::ParseLimits limits;
  limits.max_bytes = options_.max_file_bytes;
  auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const ast::ParsedFile> parsed;
  std::shared_ptr<const ast::ParsedFile> previous;
  if (options_.parse_cache)
    parsed = options_.parse_cache->impl().find(m->file, *text, limits, &previous);
  if (!parsed) {
    // An earlier version of the file (the one being edited) is re-parsed incrementally.
    parsed = ast::parse_python(m->file, std::move(*text), limits, previous.get(),
                               options_.parse_cache != nullptr);
    if (options_.parse_cache) options_.parse_cache->impl().store(parsed, limits);
  }
  parse_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& d : parsed->diagnostics) in.diagnostics.push_back(d);
  m->parsed = parsed.get();
  parsed_.emplace(key, std::move(parsed));
  const bool imported_root = name == "__main__" && !options_.as_script;
  m->globals.set(make_str("__name__"),
                 make_str(imported_root ? fs::path(m->file).stem().string() : name));
  {
    // Python gives a script's __file__ as an absolute path (3.9+).
    std::error_code abs_ec;
    fs::path abs = fs::absolute(m->file, abs_ec);
    m->globals.set(make_str("__file__"),
                   make_str(abs_ec ? m->file : abs.lexically_normal().string()));
  }
  m->loading = true;
  in.run_module(m.get());
  m->loading = false;
  return m.get();
}

ModuleObj* ModuleLoader::load(Interpreter& in, std::string_view dotted, int level, ModuleObj* from,
                              const Site& site, bool* missing_relative) {
  (void)site;
  *missing_relative = false;
  auto path = resolve(dotted, level, from);
  if (!path) {
    // A relative import of a directory without __init__.py: a namespace package (PEP 420),
    // whose submodules load as usual (`from . import qwen_vl`).
    if (level > 0 && from && !from->file.empty()) {
      fs::path dir = module_dir(from);
      for (int i = 1; i < level; ++i) dir = dir.parent_path();
      std::string rel;
      for (char c : dotted) rel.push_back(c == '.' ? '/' : c);
      if (!rel.empty()) dir /= rel;
      std::error_code ec;
      if (fs::is_directory(dir, ec)) {
        return namespace_package(like_importer(dir, from).string());
      }
    }
    *missing_relative = level > 0;
    return nullptr;
  }
  std::string name = std::string(dotted);
  if (level > 0 && from) name = from->name + ":" + std::string(level, '.') + name;
  return load_file(in, *path, name);
}

const ast::ParsedFile* ModuleLoader::parsed(const std::string& file) const {
  std::error_code ec;
  fs::path canon = fs::weakly_canonical(file, ec);
  auto it = parsed_.find(ec ? file : canon.string());
  return it == parsed_.end() ? nullptr : it->second.get();
}

void Interpreter::run_module(ModuleObj* m) {
  auto frame = std::make_shared<Frame>();
  frame->is_module = true;
  frame->module = m;
  bool saved_level = at_module_level;
  int saved_depth = call_depth;
  at_module_level = true;
  call_depth = 0;
  for (ast::Node* s : m->parsed->module->list) {
    try {
      exec(s, *frame);
    } catch (const PyRaise& r) {
      report(r.site, Severity::Warning, "raises",
             "module-level code raises " + r.type + (r.message.empty() ? "" : ": " + r.message));
    } catch (const BudgetExceeded& b) {
      report_budget(b);
    }
  }
  at_module_level = saved_level;
  call_depth = saved_depth;
}

namespace {

// A module that may hold names its code does not visibly define (see ModuleObj::open).
bool module_open(ModuleObj* m) {
  return m->open || m->globals.find_str("__getattr__") != nullptr ||
         m->globals.find_str("__cellscope_opaque_star__") != nullptr;
}

// A cycle back into the analysed file when that file is a script (no package around it): the
// import order is then the one the user runs, so a name it does not define yet is an error.
bool cycle_through_script(const ModuleObj* m) {
  if (m->name != "__main__" || m->file.empty()) return false;
  std::error_code ec;
  return !std::filesystem::exists(module_dir(m) / "__init__.py", ec);
}

bool is_stdlib_or_known(std::string_view top) {
  static const std::unordered_set<std::string_view> kKnown = {
      "os",          "sys",       "time",     "argparse",   "typing",      "typing_extensions",
      "collections", "functools", "copy",     "json",       "logging",     "random",
      "warnings",    "re",        "pathlib",  "abc",        "dataclasses", "enum",
      "itertools",   "easydict",  "yaml",     "ast",        "inspect",     "shutil",
      "glob",        "pickle",    "datetime", "contextlib", "__future__",  "operator",
      "string",      "types",     "numbers"};
  return kKnown.count(top) > 0;
}

// Deep copy of Cells and containers (copy.deepcopy of a layer, as Transformer code does).
Value deep_copy(const Value& v, std::unordered_map<const Object*, Value>& memo) {
  if (v.k != VK::Obj || !v.o) return v;
  auto it = memo.find(v.o.get());
  if (it != memo.end()) return it->second;
  switch (v.o->kind) {
    case OK::List: {
      auto l = std::make_shared<ListObj>(std::vector<Value>{});
      Value out = Value::obj(l);
      memo[v.o.get()] = out;
      for (auto& x : v.as<ListObj>()->items) l->items.push_back(deep_copy(x, memo));
      return out;
    }
    case OK::Tuple: {
      std::vector<Value> items;
      for (auto& x : v.as<TupleObj>()->items) items.push_back(deep_copy(x, memo));
      return make_tuple(std::move(items));
    }
    case OK::Dict: {
      auto d = std::make_shared<DictObj>();
      Value out = Value::obj(d);
      memo[v.o.get()] = out;
      for (auto& [k, x] : v.as<DictObj>()->entries) d->set(k, deep_copy(x, memo));
      return out;
    }
    case OK::Tensor: {
      auto* t = v.as<TensorObj>();
      auto c = std::make_shared<TensorObj>(t->type);
      c->is_parameter = t->is_parameter;
      c->requires_grad = t->requires_grad;
      c->param_name = t->param_name;
      c->param_path = t->param_path;
      c->is_numpy = t->is_numpy;
      Value out = Value::obj(c);
      memo[v.o.get()] = out;
      return out;
    }
    case OK::Instance: {
      auto* src = v.as<InstanceObj>();
      auto c = std::make_shared<InstanceObj>(src->cls, src->cls_value);
      Value out = Value::obj(c);
      memo[v.o.get()] = out;
      for (auto& [k, x] : src->attrs.entries) c->attrs.set(k, deep_copy(x, memo));
      c->open = src->open;
      if (src->mapping) {
        c->mapping = std::make_shared<DictObj>();
        c->mapping->open = src->mapping->open;
        for (auto& [k, x] : src->mapping->entries) c->mapping->set(k, deep_copy(x, memo));
      }
      if (src->cell) {
        c->cell = std::make_unique<CellState>(*src->cell);
        for (auto& [k, x] : c->cell->children) x = deep_copy(x, memo);
        for (auto& [k, x] : c->cell->params) x = deep_copy(x, memo);
        for (auto& x : c->cell->items) x = deep_copy(x, memo);
        for (auto& a : c->cell->init_args) a.value = deep_copy(a.value, memo);
      }
      return out;
    }
    default:
      return v;
  }
}

Value std_module(Interpreter& interp, std::string_view name) {
  auto m = std::make_shared<ModuleObj>();
  m->name = std::string(name);
  auto add = [&](const char* n, BuiltinFn fn) {
    m->globals.set(make_str(n), Value::obj(std::make_shared<BuiltinObj>(n, std::move(fn))));
  };
  if (name == "argparse") return argparse_module();
  if (name == "collections") {
    m->globals.set(make_str("OrderedDict"), interp.builtin("dict"));
    m->globals.set(make_str("defaultdict"), interp.builtin("dict"));
    add("namedtuple", [](Interpreter&, CallArgs&, const Site&) { return Value::unknown(); });
    m->globals.set(make_str("abc"), std_module(interp, "collections.abc"));
    return Value::obj(m);
  }
  if (name == "yaml" || name == "json") {
    // Loading a config file the user names gives its contents (configs.cpp); the rest of the
    // module (dump, Loader classes, loads of strings read at run time) is unknown.
    auto load = [](Interpreter& in, CallArgs& a, const Site& s) -> Value {
      return a.pos.empty() ? Value::unknown() : in.load_config(a.pos[0], s);
    };
    auto load_all = [](Interpreter& in, CallArgs& a, const Site& s) -> Value {
      return a.pos.empty() ? Value::unknown() : in.load_config(a.pos[0], s, true);
    };
    if (name == "yaml") {
      for (const char* n : {"safe_load", "load", "full_load", "unsafe_load"}) add(n, load);
      for (const char* n : {"safe_load_all", "load_all", "full_load_all"}) add(n, load_all);
    } else {
      add("load", load);
      add("loads", load);
    }
    return Value::obj(m);
  }
  if (name == "os" || name == "os.path") {
    // os.path on known strings (`os.path.join(os.path.dirname(__file__), "cfg.yaml")`): pure
    // path arithmetic. Whatever depends on the machine (exists, abspath of a relative path, the
    // environment) is unknown.
    auto p = std::make_shared<ModuleObj>();
    p->name = "os.path";
    auto padd = [&](const char* n, BuiltinFn fn) {
      p->globals.set(make_str(n), Value::obj(std::make_shared<BuiltinObj>(n, std::move(fn))));
    };
    auto strs = [](const CallArgs& a) -> std::optional<std::vector<std::string>> {
      std::vector<std::string> out;
      for (const Value& v : a.pos) {
        const std::string* s = str_of(v);
        if (!s) return std::nullopt;
        out.push_back(*s);
      }
      return out;
    };
    padd("join", [strs](Interpreter&, CallArgs& a, const Site&) -> Value {
      auto s = strs(a);
      if (!s || s->empty()) return Value::unknown();
      std::string out;
      for (const std::string& part : *s) {
        if (!part.empty() && part[0] == '/')
          out = part;
        else if (out.empty() || out.back() == '/')
          out += part;
        else
          out += "/" + part;
      }
      return make_str(out);
    });
    padd("dirname", [strs](Interpreter&, CallArgs& a, const Site&) -> Value {
      auto s = strs(a);
      if (!s || s->size() != 1) return Value::unknown();
      auto slash = (*s)[0].rfind('/');
      if (slash == std::string::npos) return make_str("");
      std::string head = (*s)[0].substr(0, slash + 1);
      while (head.size() > 1 && head.back() == '/') head.pop_back();
      return make_str(head);
    });
    padd("basename", [strs](Interpreter&, CallArgs& a, const Site&) -> Value {
      auto s = strs(a);
      if (!s || s->size() != 1) return Value::unknown();
      auto slash = (*s)[0].rfind('/');
      return make_str(slash == std::string::npos ? (*s)[0] : (*s)[0].substr(slash + 1));
    });
    auto absolute_only = [strs](Interpreter&, CallArgs& a, const Site&) -> Value {
      auto s = strs(a);
      if (!s || s->size() != 1 || (*s)[0].empty() || (*s)[0][0] != '/') return Value::unknown();
      return make_str(std::filesystem::path((*s)[0]).lexically_normal().string());
    };
    padd("splitext", [strs](Interpreter&, CallArgs& a, const Site&) -> Value {
      auto s = strs(a);
      if (!s || s->size() != 1) return Value::unknown();
      const std::string& x = (*s)[0];
      auto slash = x.rfind('/');
      auto dot = x.rfind('.');
      size_t base = slash == std::string::npos ? 0 : slash + 1;
      while (base < x.size() && x[base] == '.') ++base;  // leading dots are not an extension
      if (dot == std::string::npos || dot < base) return make_tuple({make_str(x), make_str("")});
      return make_tuple({make_str(x.substr(0, dot)), make_str(x.substr(dot))});
    });
    padd("abspath", absolute_only);
    padd("realpath", absolute_only);
    padd("normpath", [strs](Interpreter&, CallArgs& a, const Site&) -> Value {
      auto s = strs(a);
      if (!s || s->size() != 1 || (*s)[0].empty()) return Value::unknown();
      return make_str(std::filesystem::path((*s)[0]).lexically_normal().string());
    });
    if (name == "os.path") return Value::obj(p);
    m->globals.set(make_str("path"), Value::obj(p));
    m->globals.set(make_str("sep"), make_str("/"));
    return Value::obj(m);
  }
  if (name == "copy") {
    auto copy_fn = [](Interpreter&, CallArgs& a, const Site&) -> Value {
      if (a.pos.empty()) return Value::unknown();
      std::unordered_map<const Object*, Value> memo;
      return deep_copy(a.pos[0], memo);
    };
    add("deepcopy", copy_fn);
    add("copy", copy_fn);
    return Value::obj(m);
  }
  if (name == "functools") {
    add("partial", [](Interpreter&, CallArgs& a, const Site&) -> Value {
      if (a.pos.empty()) return Value::unknown();
      Value fn = a.pos[0];
      std::vector<Value> bound(a.pos.begin() + 1, a.pos.end());
      auto kw = a.kw;
      return Value::obj(std::make_shared<BuiltinObj>(
          "partial", [fn, bound, kw](Interpreter& in, CallArgs& b, const Site& s) {
            CallArgs c;
            c.pos = bound;
            c.pos_ranges.assign(bound.size(), s.range());
            c.pos.insert(c.pos.end(), b.pos.begin(), b.pos.end());
            c.pos_ranges.insert(c.pos_ranges.end(), b.pos_ranges.begin(), b.pos_ranges.end());
            // A keyword given at the call replaces the one the partial holds, as in Python.
            for (const auto& [key, v] : kw) {
              if (b.find_kw(key)) continue;
              c.kw.emplace_back(key, v);
              c.kw_ranges.push_back(s.range());
            }
            c.kw.insert(c.kw.end(), b.kw.begin(), b.kw.end());
            c.kw_ranges.insert(c.kw_ranges.end(), b.kw_ranges.begin(), b.kw_ranges.end());
            c.open = b.open;
            return in.call(fn, c, s);
          }));
    });
    add("reduce", [](Interpreter& in, CallArgs& a, const Site& s) -> Value {
      if (a.pos.size() < 2) return Value::unknown();
      auto items = in.iterate(a.pos[1], s);
      if (!items || items->empty()) return a.pos.size() > 2 ? a.pos[2] : Value::unknown();
      size_t i = 0;
      Value acc = a.pos.size() > 2 ? a.pos[2] : (*items)[i++];
      for (; i < items->size(); ++i) {
        CallArgs c;
        c.pos = {acc, (*items)[i]};
        c.pos_ranges = {s.range(), s.range()};
        acc = in.call(a.pos[0], c, s);
      }
      return acc;
    });
    add("wraps", [](Interpreter&, CallArgs&, const Site&) {
      return Value::obj(
          std::make_shared<BuiltinObj>("wraps", [](Interpreter&, CallArgs& b, const Site&) {
            return b.pos.empty() ? Value::unknown() : b.pos[0];
          }));
    });
    add("lru_cache", [](Interpreter&, CallArgs& a, const Site&) -> Value {
      if (a.pos.size() == 1 && a.pos[0].as<FunctionObj>()) return a.pos[0];
      return Value::obj(
          std::make_shared<BuiltinObj>("lru_cache", [](Interpreter&, CallArgs& b, const Site&) {
            return b.pos.empty() ? Value::unknown() : b.pos[0];
          }));
    });
    return Value::obj(m);
  }
  if (name == "inspect") {
    // inspect.signature: version-compatibility shims branch on it (`if "output_num" in
    // inspect.signature(ops.split).parameters`), so it answers from the registry's signatures
    // of the configured MindSpore version, or from the user function's own parameters.
    add("signature", [](Interpreter& in, CallArgs& a, const Site&) -> Value {
      if (a.pos.size() != 1) return Value::unknown();
      auto params = std::make_shared<DictObj>();
      auto add_param = [&](const std::string& pname, const Value& dflt) {
        auto p = std::make_shared<OpaqueObj>("inspect.Parameter");
        p->attrs.set(make_str("name"), make_str(pname));
        p->attrs.set(make_str("default"), dflt);
        params->set(make_str(pname), Value::obj(p));
      };
      auto from_specs = [&](const std::vector<ParamSpec>& specs, bool skip_self) {
        for (const ParamSpec& ps : specs) {
          if (!ps.versions.contains(in.options.mindspore_version)) continue;
          if (skip_self && ps.name == "self") continue;
          add_param(ps.name, ps.default_src.empty() ? Value::unknown() : in.default_value(ps));
        }
      };
      auto from_function = [&](const FunctionObj* fn, bool skip_self) {
        for (size_t i = 0; i < fn->def->list.size(); ++i) {
          if (skip_self && i == 0) continue;
          add_param(std::string(fn->def->list[i]->str),
                    fn->has_default[i] ? fn->defaults[i] : Value::unknown());
        }
      };
      const Value& f = a.pos[0];
      if (auto* api = f.as<ApiFunctionObj>()) {
        from_specs(api->entry->call_params, false);
      } else if (auto* fn = f.as<FunctionObj>()) {
        from_function(fn, false);
      } else if (auto* b = f.as<BuiltinObj>(); b && b->init_of) {
        from_specs(b->init_of->init_params, true);
      } else if (auto* bm = f.as<BoundMethodObj>(); bm && bm->func.as<FunctionObj>()) {
        from_function(bm->func.as<FunctionObj>(), true);
      } else if (auto* cls = f.as<ClassObj>()) {
        const Value* init = cls->lookup("__init__");
        if (init && init->as<FunctionObj>())
          from_function(init->as<FunctionObj>(), true);
        else if (const ApiEntry* e = cls->api_base())
          from_specs(e->init_params, true);
        else
          return Value::unknown();
      } else {
        return Value::unknown();
      }
      auto sig = std::make_shared<OpaqueObj>("inspect.Signature");
      sig->attrs.set(make_str("parameters"), Value::obj(params));
      return Value::obj(sig);
    });
    return Value::obj(m);
  }
  if (name == "enum") {
    for (const char* n : {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}) {
      auto cls = std::make_shared<ClassObj>();
      cls->name = n;
      cls->mro.push_back(cls.get());
      cls->is_enum = true;
      cls->open = true;
      m->globals.set(make_str(n), Value::obj(cls));
    }
    add("auto", [](Interpreter&, CallArgs&, const Site&) { return Value::unknown(); });
    add("unique", [](Interpreter&, CallArgs& a, const Site&) {
      return a.pos.empty() ? Value::unknown() : a.pos[0];
    });
    return Value::obj(m);
  }
  if (name == "typing" || name == "typing_extensions") {
    m->globals.set(make_str("TYPE_CHECKING"), Value::boolean(false));  // False at run time
    return Value::obj(m);
  }
  if (name == "itertools") {
    // repeat(x, n): what `to_2tuple` helpers build (`tuple(repeat(x, 2))`).
    add("repeat", [](Interpreter&, CallArgs& a, const Site&) -> Value {
      if (a.pos.size() != 2 || !a.pos[1].is_int()) return Value::unknown();
      int64_t n = a.pos[1].as_int();
      if (n < 0 || n > 1'000'000) return Value::unknown();
      return make_list(std::vector<Value>(static_cast<size_t>(n), a.pos[0]));
    });
    add("chain", [](Interpreter& in, CallArgs& a, const Site& s) -> Value {
      std::vector<Value> out;
      for (const Value& it : a.pos) {
        auto items = in.iterate(it, s);
        if (!items) return Value::unknown();
        out.insert(out.end(), items->begin(), items->end());
      }
      return make_list(std::move(out));
    });
    return Value::obj(m);
  }
  if (name == "collections.abc") {
    // isinstance(x, collections.abc.Iterable) on the values the evaluator models: a tuple of
    // the builtin classes that are (Python's own registrations).
    auto classes = [&](std::initializer_list<NativeClass> which) {
      std::vector<Value> v;
      for (NativeClass c : which) v.push_back(interp.native_class(c));
      return make_tuple(std::move(v));
    };
    using NC = NativeClass;
    m->globals.set(make_str("Iterable"),
                   classes({NC::List, NC::Tuple, NC::Dict, NC::Set, NC::Str}));
    m->globals.set(make_str("Sequence"), classes({NC::List, NC::Tuple, NC::Str}));
    m->globals.set(make_str("Mapping"), classes({NC::Dict}));
    m->globals.set(make_str("MutableMapping"), classes({NC::Dict}));
    m->globals.set(make_str("Set"), classes({NC::Set}));
    return Value::obj(m);
  }
  m->opaque = true;
  return Value::obj(m);
}

}  // namespace

void Interpreter::exec_import(const ast::Node* s, Frame& f) {
  for (ast::Node* al : s->list) {
    std::string dotted(al->str);
    // A view into the syntax tree's text, which outlives the frame: a function's locals are
    // keyed by views (store_name), so `import os` in a function body must not bind a view of
    // `dotted`, which dies with this call.
    std::string_view top = al->str.substr(0, al->str.find('.'));
    Site site{al, f.module};
    Value target;     // bound to the as-name
    Value top_value;  // bound to the first component without as-name
    if (top == "mindspore") {
      target = mindspore_module(dotted);
      top_value = mindspore_module("mindspore");
    } else if (top == "numpy") {
      Value np = numpy_module();
      target = dotted == "numpy.random" ? *np.as<ModuleObj>()->globals.find_str("random") : np;
      top_value = np;
    } else if (top == "math") {
      target = top_value = math_module();
    } else {
      bool missing_rel = false;
      ModuleObj* m = loader.load(*this, dotted, 0, f.module, site, &missing_rel);
      if (m) {
        auto as_value = [](ModuleObj* mod) {
          return Value::obj(std::shared_ptr<Object>(std::shared_ptr<Object>{}, mod));
        };
        target = as_value(m);
        // `import pkg.sub.mod` binds `pkg`, with `pkg.sub.mod` reachable through attributes
        // (packages without __init__.py are namespace packages).
        ModuleObj* parent = nullptr;
        size_t pos = 0;
        while (true) {
          size_t dot = dotted.find('.', pos);
          std::string prefix = dotted.substr(0, dot);
          ModuleObj* cur = dot == std::string::npos ? m : nullptr;
          if (!cur) {
            bool missing = false;
            cur = loader.load(*this, prefix, 0, f.module, site, &missing);
            if (!cur) cur = loader.namespace_package(prefix);
          }
          if (parent)
            parent->globals.set(make_str(dotted.substr(
                                    pos, dot == std::string::npos ? std::string::npos : dot - pos)),
                                as_value(cur));
          else
            top_value = as_value(cur);
          if (dot == std::string::npos) break;
          parent = cur;
          pos = dot + 1;
        }
      } else {
        target = top_value = std_module(*this, dotted);
      }
    }
    if (!al->str2.empty())
      store_name(al->str2, target, f);
    else
      store_name(top, top_value, f);
  }
}

void Interpreter::exec_import_from(const ast::Node* s, Frame& f) {
  std::string module(s->str);
  int level = static_cast<int>(s->ival);
  std::string_view top = std::string_view(module).substr(0, module.find('.'));
  Site site{s, f.module};
  // Resolve the module to import names from.
  Value source;
  ModuleObj* ws_module = nullptr;
  if (level == 0 && top == "mindspore") {
    source = mindspore_module(module);
  } else if (level == 0 && top == "numpy") {
    source = numpy_module();
    if (module == "numpy.random") source = *source.as<ModuleObj>()->globals.find_str("random");
  } else if (level == 0 && top == "math") {
    source = math_module();
  } else {
    bool missing_rel = false;
    ws_module = loader.load(*this, module, level, f.module, site, &missing_rel);
    if (ws_module) {
      source = Value::obj(std::shared_ptr<Object>(std::shared_ptr<Object>{}, ws_module));
      // `from .lr import build_lr` in a package's __init__.py: importing the submodule also
      // binds `lr` in the package (`__all__.extend(lr.__all__)` relies on it).
      if (level == 1 && !top.empty() && f.module && f.is_module &&
          fs::path(f.module->file).filename() == "__init__.py" &&
          !f.module->globals.find_str(top)) {
        ModuleObj* child = ws_module;
        if (top.size() != module.size()) {
          bool ignored = false;
          child = loader.load(*this, std::string(top), level, f.module, site, &ignored);
        }
        if (child)
          f.module->globals.set(make_str(std::string(top)), Value::obj(std::shared_ptr<Object>(
                                                                std::shared_ptr<Object>{}, child)));
      }
    } else if (missing_rel) {
      report(site, Severity::Error, "import-error",
             "cannot resolve `" + std::string(static_cast<size_t>(level), '.') + module +
                 "`: no such module next to this file");
      source = Value::unknown();
    } else if (level == 0 && !is_stdlib_or_known(top) && loader.package_dir_exists(top, f.module)) {
      report(site, Severity::Error, "import-error",
             "cannot resolve `" + module + "`: package `" + std::string(top) +
                 "` is in the workspace, but this module is not");
      source = Value::unknown();
    } else {
      source = std_module(*this, module);
    }
  }
  if (s->list.empty()) {  // from x import *
    if (auto* m = source.as<ModuleObj>(); m && !m->opaque) {
      for (auto& [k, v] : m->globals.entries) {
        auto* name = str_of(k);
        if (name && !name->empty() && (*name)[0] != '_') f.module->globals.set(k, v);
      }
      // A module still being initialised (a cycle through the analysed file) or one that
      // answers names it does not define: what the star brings is not all known.
      if (m->loading || module_open(m)) f.module->open = true;
    } else {
      f.module->globals.set(make_str("__cellscope_opaque_star__"), Value::boolean(true));
    }
    return;
  }
  for (ast::Node* al : s->list) {
    std::string name(al->str);
    Site name_site{al, f.module};
    Value v;
    if (source.is_unknown()) {
      v = Value::unknown();
    } else if (auto* ns = source.as<NamespaceObj>()) {
      v = namespace_attr(ns, name, name_site, true, /*from_import=*/true);
    } else if (auto* m = source.as<ModuleObj>()) {
      if (m->opaque) {
        v = Value::unknown();
      } else if (Value* found = m->globals.find_str(name)) {
        v = *found;
      } else if (ws_module) {
        // A submodule of a package: from pkg import mod.
        bool missing_rel = false;
        std::string sub = module.empty() ? name : module + "." + name;
        ModuleObj* sm = loader.load(*this, sub, level, f.module, name_site, &missing_rel);
        if (sm) {
          v = Value::obj(std::shared_ptr<Object>(std::shared_ptr<Object>{}, sm));
        } else if (ws_module->loading && cycle_through_script(ws_module)) {
          report(name_site, Severity::Error, "cyclic-import",
                 "cannot import `" + name + "` from `" +
                     std::string(static_cast<size_t>(level), '.') + module +
                     "`: the modules import each other (cyclic import) and it is not defined yet");
          v = Value::unknown();
        } else if (ws_module->loading || module_open(ws_module)) {
          // Still being initialised: in the real program the import order can differ (the
          // analysed file is loaded as __main__, before its own package), so the name may well
          // be there by then. Or the module answers names its code does not define.
          v = Value::unknown();
        } else {
          report(name_site, Severity::Error, "import-error",
                 "cannot import name `" + name + "` from `" +
                     std::string(static_cast<size_t>(level), '.') + module + "`");
          v = Value::unknown();
        }
      } else {
        v = getattr(source, name, name_site, true);
      }
    } else {
      v = Value::unknown();
    }
    if (refs) record_ref(name_site, v);  // go to definition / hover on the imported name
    store_name(al->str2.empty() ? al->str : al->str2, v, f);
  }
}

ModuleObj* ModuleLoader::namespace_package(const std::string& dotted) {
  std::string key = "namespace:" + dotted;
  auto it = modules_.find(key);
  if (it != modules_.end()) return static_cast<ModuleObj*>(it->second.get());
  auto m = std::make_shared<ModuleObj>();
  m->name = dotted;
  modules_.emplace(key, m);
  return m.get();
}

// A regular package (with __init__.py) on the import path: a module missing from it is
// really missing. A namespace package (no __init__.py, like mindone's partial `comfy`) may have
// other portions installed elsewhere, so it proves nothing.
bool ModuleLoader::package_dir_exists(std::string_view top, ModuleObj* from) {
  for (auto& r : sys_path(from)) {
    std::error_code ec;
    if (fs::exists(r / std::string(top) / "__init__.py", ec)) return true;
  }
  return false;
}

}  // namespace graphcore::eval

namespace graphcore {

ParseCache::ParseCache(size_t capacity) : impl_(std::make_unique<Impl>()) {
  impl_->capacity = std::max<size_t>(capacity, 1);
}
ParseCache::~ParseCache() = default;
size_t ParseCache::hits() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->hits;
}
size_t ParseCache::incremental_reparses() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->incremental;
}
size_t ParseCache::reparses_from_scratch() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->from_scratch;
}
size_t ParseCache::misses() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->misses;
}

}  // namespace graphcore
