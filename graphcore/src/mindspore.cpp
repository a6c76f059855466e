// The MindSpore surface the evaluator understands: namespaces (mindspore, nn, ops, initializer,
// dtype, context), Tensor/Parameter constructors, and registry-backed API objects and calls.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <unordered_set>

#include "graphcore/checked.h"
#include "graphcore/text.h"
#include "interp.h"
#include "known_names.h"
#include "npvalues.h"
#include "training_eval.h"

namespace graphcore::eval {

namespace {

// Parses the Python literal of a registry default ("'same'", "(1, 1)", "mindspore.float32").
class LiteralParser {
 public:
  explicit LiteralParser(std::string_view s) : s_(s) {}
  Value parse() {
    Value v = value();
    skip();
    return pos_ == s_.size() ? v : Value::unknown();
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  void skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  Value value() {
    skip();
    if (pos_ >= s_.size()) return Value::unknown();
    char c = s_[pos_];
    if (c == '(' || c == '[') return sequence(c == '(' ? ')' : ']', c == '(');
    if (c == '\'' || c == '"') {
      size_t end = s_.find(c, pos_ + 1);
      if (end == std::string_view::npos) return Value::unknown();
      std::string str(s_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return make_str(str);
    }
    if (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9')) {
      size_t start = pos_;
      ++pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
              ((s_[pos_] == '-' || s_[pos_] == '+') &&
               (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E')))) {
        ++pos_;
      }
      std::string num(s_.substr(start, pos_ - start));
      if (num.find_first_of(".eE") != std::string::npos)
        return Value::real(std::strtod(num.c_str(), nullptr));
      return Value::integer(std::strtoll(num.c_str(), nullptr, 10));
    }
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                s_[pos_] == '_' || s_[pos_] == '.'))
      ++pos_;
    std::string_view word = s_.substr(start, pos_ - start);
    if (word == "None") return Value::none();
    if (word == "True") return Value::boolean(true);
    if (word == "False") return Value::boolean(false);
    auto dot = word.rfind('.');
    std::string_view last = dot == std::string_view::npos ? word : word.substr(dot + 1);
    if (auto dt = dtype_from_name(last); dt && dot != std::string_view::npos) {
      return Value::obj(std::make_shared<DTypeObj>(*dt));
    }
    return Value::unknown();
  }
  Value sequence(char close, bool tuple) {
    ++pos_;
    std::vector<Value> items;
    while (true) {
      skip();
      if (pos_ < s_.size() && s_[pos_] == close) {
        ++pos_;
        break;
      }
      items.push_back(value());
      skip();
      if (pos_ < s_.size() && s_[pos_] == ',')
        ++pos_;
      else if (pos_ < s_.size() && s_[pos_] == close)
        continue;
      else
        return Value::unknown();
    }
    return tuple ? make_tuple(std::move(items)) : make_list(std::move(items));
  }
};

std::string target_device_name(std::string_view target) {
  if (target.rfind("ascend", 0) == 0) return "Ascend";
  if (target == "gpu") return "GPU";
  return "CPU";
}

// Shape and dtype of a nested Python list literal: [[1, 2], [3, 4]] -> (2, 2) int64.
bool nested_shape(Interpreter& in, const Value& v, std::vector<int64_t>& shape, size_t depth,
                  DType& dt) {
  if (v.is_number()) {
    if (v.k == VK::Float)
      dt = DType::Float32;
    else if (v.k == VK::Bool && dt == DType::Unknown)
      dt = DType::Bool;
    else if (v.k == VK::Int && dt != DType::Float32)
      dt = DType::Int64;
    return depth == shape.size();
  }
  auto* items = seq_items(v);
  if (!items) return false;
  if (depth == shape.size())
    shape.push_back(static_cast<int64_t>(items->size()));
  else if (shape[depth] != static_cast<int64_t>(items->size()))
    return false;
  for (const auto& x : *items) {
    if (!nested_shape(in, x, shape, depth + 1, dt)) return false;
  }
  return true;
}

}  // namespace

Value Interpreter::default_value(const ParamSpec& p) {
  auto it = default_cache_.find(&p);
  if (it != default_cache_.end()) return it->second;
  Value v = p.default_src.empty() ? Value::unknown() : LiteralParser(p.default_src).parse();
  default_cache_.emplace(&p, v);
  return v;
}

ArgValue Interpreter::to_arg(const Value& v, SourceRange range, bool explicit_arg) {
  ArgValue a;
  a.range = range;
  a.explicit_arg = explicit_arg;
  switch (v.k) {
    case VK::None:
      a.kind = ArgValue::Kind::None;
      return a;
    case VK::Bool:
      a.kind = ArgValue::Kind::Bool;
      a.b = v.b;
      a.i = v.b ? 1 : 0;
      a.dim = Dim::known(a.i);
      return a;
    case VK::Int:
      a.kind = ArgValue::Kind::Int;
      a.i = v.i;
      a.dim = v.i >= 0 ? Dim::known(v.i) : Dim::unknown();
      return a;
    case VK::Float:
      a.kind = ArgValue::Kind::Float;
      a.f = v.f;
      return a;
    case VK::Unknown:
      a.kind = ArgValue::Kind::Unknown;
      a.dim = Dim::unknown();
      return a;
    case VK::Obj:
      break;
  }
  if (!v.o) {
    a.kind = ArgValue::Kind::None;
    return a;
  }
  switch (v.o->kind) {
    case OK::Str:
      a.kind = ArgValue::Kind::Str;
      a.s = v.as<StrObj>()->s;
      return a;
    case OK::Tuple:
    case OK::List:
      a.kind = ArgValue::Kind::Sequence;
      for (const Value& x : *seq_items(v)) a.items.push_back(to_arg(x, range, explicit_arg));
      return a;
    case OK::Tensor:
      a.kind = ArgValue::Kind::Tensor;
      a.tensor = v.as<TensorObj>()->type;
      return a;
    case OK::DType:
      a.kind = ArgValue::Kind::DType;
      a.dtype = v.as<DTypeObj>()->dtype;
      return a;
    case OK::SymInt:
      a.kind = ArgValue::Kind::SymInt;
      a.dim = v.as<SymIntObj>()->dim;
      return a;
    case OK::Instance:
      a.kind = v.as<InstanceObj>()->is_cell() ? ArgValue::Kind::Cell : ArgValue::Kind::Other;
      a.s = v.as<InstanceObj>()->cls->name;
      return a;
    case OK::Opaque:
      a.kind = ArgValue::Kind::Other;
      a.s = v.as<OpaqueObj>()->type_name;
      a.initializer = v.as<OpaqueObj>()->initializer;
      return a;
    default:
      a.kind = ArgValue::Kind::Other;
      a.s = type_name(v);
      return a;
  }
}

Value Interpreter::from_arg(const ArgValue& a) {
  switch (a.kind) {
    case ArgValue::Kind::None:
      return Value::none();
    case ArgValue::Kind::Bool:
      return Value::boolean(a.b);
    case ArgValue::Kind::Int:
      return Value::integer(a.i);
    case ArgValue::Kind::Float:
      return Value::real(a.f);
    case ArgValue::Kind::Str:
      return make_str(a.s);
    case ArgValue::Kind::Sequence: {
      std::vector<Value> items;
      for (const auto& x : a.items) items.push_back(from_arg(x));
      return make_tuple(std::move(items));
    }
    case ArgValue::Kind::Tensor:
      return make_tensor(a.tensor);
    case ArgValue::Kind::DType:
      return dtype_value(a.dtype);
    case ArgValue::Kind::SymInt:
      return Value::obj(std::make_shared<SymIntObj>(a.dim));
    default:
      return Value::unknown();
  }
}

Value Interpreter::dtype_value(DType t) { return Value::obj(std::make_shared<DTypeObj>(t)); }

Value Interpreter::make_parameter(TensorType t, std::string name, bool requires_grad) {
  auto p = std::make_shared<TensorObj>(std::move(t));
  p->is_parameter = true;
  p->requires_grad = requires_grad;
  p->param_name = std::move(name);
  return Value::obj(p);
}

Value Interpreter::make_parameter(const ParamInfo& p) {
  Value v = make_parameter(TensorType{p.shape, p.dtype}, p.name, p.trainable);
  v.as<TensorObj>()->init = p.init;
  return v;
}

Value Interpreter::api_class(const ApiEntry* e) {
  auto it = api_classes_.find(e);
  if (it != api_classes_.end()) return it->second;
  auto cls = std::make_shared<ClassObj>();
  cls->name = e->name;
  cls->api = e;
  cls->mro.push_back(cls.get());
  cls->is_cell = e->kind == ApiKind::CellClass;
  if (cls->is_cell) {
    Value cell = native_class(NativeClass::Cell);
    cls->bases.push_back(cell);
    cls->mro.push_back(cell.as<ClassObj>());
  }
  Value v = Value::obj(cls);
  api_classes_.emplace(e, v);
  return v;
}

Value Interpreter::mindspore_module(std::string_view dotted) {
  auto ns = [&](std::string name, std::string prefix, bool strict) {
    std::string key = "ns:" + name;
    auto it = natives_.find(key);
    if (it != natives_.end()) return it->second;
    Value v =
        Value::obj(std::make_shared<NamespaceObj>(std::move(name), std::move(prefix), strict));
    natives_.emplace(key, v);
    return v;
  };
  if (dotted == "mindspore" || dotted == "mindspore.common" ||
      dotted == "mindspore.common.tensor" || dotted == "mindspore.common.parameter" ||
      dotted == "mindspore.common.api") {
    return ns("mindspore", "", false);
  }
  auto starts = [&](std::string_view p) {
    return dotted == p || dotted.rfind(std::string(p) + ".", 0) == 0;
  };
  // Only the public namespaces are checked name by name (their names are known_names.cpp);
  // MindSpore's submodules (`mindspore.ops.function.nn_func`, `mindspore.nn.learning_rate_
  // schedule`, `mindspore.ops.operations.nn_ops`) hold more than the public names, so a name the
  // registry does not know there is unknown, not missing.
  if (dotted == "mindspore.nn") return ns("mindspore.nn", "nn.", true);
  if (dotted == "mindspore.ops") return ns("mindspore.ops", "ops.", true);
  if (starts("mindspore.nn")) return ns(std::string(dotted), "nn.", false);
  if (starts("mindspore.ops")) return ns(std::string(dotted), "ops.", false);
  if (dotted == "mindspore.common.initializer")
    return ns("mindspore.common.initializer", "init.", false);
  if (dotted == "mindspore.common.dtype" || dotted == "mindspore.dtype")
    return ns("mindspore.common.dtype", "dtype.", false);
  if (dotted == "mindspore.context") return ns("mindspore.context", "context.", false);
  if (dotted == "mindspore.numpy") return ns("mindspore.numpy", "numpy.", false);
  if (dotted.rfind("mindspore", 0) == 0) return ns(std::string(dotted), "opaque.", false);
  return Value::unknown();
}

Value Interpreter::namespace_attr(NamespaceObj* ns, std::string_view name, const Site& site,
                                  bool report_missing, bool from_import) {
  Value key = make_str(std::string(name));
  if (Value* v = ns->cache.find(key)) return *v;
  if (TrainingRecorder::may_handle(ns, name)) {
    if (auto v = TrainingRecorder::api(*this, ns, name)) {
      ns->cache.set(key, *v);
      return *v;
    }
  }
  Value result = Value::unknown();
  const Version& ver = options.mindspore_version;
  const Registry& reg = Registry::instance();
  std::string n(name);
  const std::string& p = ns->prefix;
  auto resolve_api = [&](const std::string& full) -> Value {
    const ApiEntry* e = reg.find(full, ver);
    if (!e || !e->replacement.empty()) return Value::unknown();  // kept only to explain a mistake
    if (e->kind == ApiKind::CellClass || e->kind == ApiKind::PrimitiveClass) return api_class(e);
    return Value::obj(std::make_shared<ApiFunctionObj>(e));
  };
  if (p.empty()) {
    static const std::unordered_set<std::string_view> kSub = {
        "nn",           "ops",  "numpy",         "common",   "context",  "dataset",
        "train",        "amp",  "communication", "parallel", "dtype",    "nn.probability",
        "experimental", "mint", "hal",           "runtime",  "profiler", "rewrite"};
    if (kSub.count(name)) {
      result = mindspore_module("mindspore." + n);
      if (name == "common") result = mindspore_module("mindspore.common");
      if (name == "dtype") result = mindspore_module("mindspore.common.dtype");
    } else if (n == "Tensor" || n == "Parameter" || n == "COOTensor" || n == "CSRTensor") {
      result = native_class(n == "Parameter" ? NativeClass::Parameter : NativeClass::Tensor);
    } else if (auto dt = dtype_from_name(n);
               dt && n != "int" && n != "float" && n != "double" && n != "half") {
      result = dtype_value(*dt);
    } else if (has_builtin("ms." + n)) {
      result = builtin("ms." + n);
    } else if (n == "GRAPH_MODE") {
      result = Value::integer(0);
    } else if (n == "PYNATIVE_MODE") {
      result = Value::integer(1);
    }
  } else if (p == "nn.") {
    if (n == "Cell")
      result = native_class(NativeClass::Cell);
    else if (n == "SequentialCell")
      result = native_class(NativeClass::SequentialCell);
    else if (n == "CellList")
      result = native_class(NativeClass::CellList);
    else if (n == "CellDict")
      result = native_class(NativeClass::CellDict);
    else if (n == "WithLossCell")
      result = native_class(NativeClass::WithLossCell);
    else if (n == "TrainOneStepCell")
      result = native_class(NativeClass::TrainOneStepCell);
    else if (n == "TrainOneStepWithLossScaleCell")
      result = native_class(NativeClass::TrainOneStepWithLossScaleCell);
    else if (has_builtin("nn." + n))  // nn.PipelineCell (parallel_eval.cpp)
      result = builtin("nn." + n);
    else
      result = resolve_api("nn." + n);
  } else if (p == "ops.") {
    static const std::unordered_set<std::string_view> kSub = {
        "operations",    "functional", "composite", "nn_func",
        "auto_generate", "function",   "primitive"};
    if (kSub.count(name)) return mindspore_module(ns->name + "." + n);
    if (has_builtin("ops." + n))
      result = builtin("ops." + n);
    else
      result = resolve_api("ops." + n);
  } else if (p == "opaque.") {
    // MindSpore's parallel interfaces the evaluator models (parallel_eval.cpp):
    // mindspore.parallel.Layout, mindspore.parallel.auto_parallel.AutoParallel, ...
    std::string full = ns->name + "." + n;
    if (has_builtin(full))
      result = builtin(full);
    else if (full == "mindspore.parallel.auto_parallel" || full == "mindspore.parallel.nn")
      result = mindspore_module(full);
  } else if (p == "init." || p == "dtype." || p == "context." || p == "numpy.") {
    if (has_builtin(p + n))
      result = builtin(p + n);
    else if (auto dt = dtype_from_name(n); dt && p == "dtype.")
      result = dtype_value(*dt);
    // mindspore.numpy has numpy's signatures (`split(x, indices_or_sections, axis)`), not those
    // of the ops with the same names. Its array creation functions compute what numpy's do, as
    // MindSpore Tensors (`mnp.arange(w, dtype=mstype.float32)` for anchor grids); the other
    // functions are unknown until modelled.
    static const std::unordered_set<std::string_view> kCreation = {
        "arange", "ones", "zeros", "full", "linspace", "eye", "array", "asarray"};
    // Functions the registry defines under `numpy.` (mindspore.numpy.roll).
    if (p == "numpy." && result.is_unknown()) {
      if (Registry::instance().find(p + n, ver) != nullptr) result = resolve_api(p + n);
    }
    if (p == "numpy." && result.is_unknown() && kCreation.count(name) && has_builtin("np." + n)) {
      Value np_fn = builtin("np." + n);
      if (!np_fn.is_unknown()) {
        result = Value::obj(std::make_shared<BuiltinObj>(
            "mindspore.numpy." + n, [np_fn](Interpreter& in, CallArgs& a, const Site& s) {
              Value v = in.call(np_fn, a, s);
              if (auto* t = v.as<TensorObj>()) t->is_numpy = false;  // a fresh array: now a Tensor
              return v;
            }));
      }
    }
  }
  // Private names (`ops._inner_pad`) are MindSpore's internals: they exist or not by version,
  // and no public list says which.
  if (result.is_unknown() && ns->strict && !n.starts_with("_")) {
    std::string short_ns = p.substr(0, p.size() - 1);
    if (!known_mindspore_name(short_ns, n, ver)) {
      // Not a MindSpore API at all: explain, suggest, and continue with the best suggestion.
      std::vector<std::string> suggestions = reg.suggest(p + n, ver);
      std::string other = p == "ops." ? "nn." + n : "ops." + n;
      if (reg.find(other, ver) &&
          std::find(suggestions.begin(), suggestions.end(), other) == suggestions.end()) {
        suggestions.insert(suggestions.begin(), other);
      }
      for (const auto& e : reg.find_all(p + n)) {
        if (!e->replacement.empty() && std::find(suggestions.begin(), suggestions.end(),
                                                 e->replacement) == suggestions.end()) {
          suggestions.insert(suggestions.begin(), e->replacement);
        }
      }
      std::string msg = "`" + p + n + "` does not exist in MindSpore " + ver.str();
      if (!suggestions.empty()) {
        msg += "; did you mean ";
        for (size_t i = 0; i < suggestions.size() && i < 3; ++i) {
          msg += (i ? (i + 1 == std::min<size_t>(suggestions.size(), 3) ? " or `" : ", `") : "`") +
                 suggestions[i] + "`";
        }
        msg += "?";
      }
      if (report_missing) {
        Diagnostic* before = diagnostics.empty() ? nullptr : &diagnostics.back();
        if (from_import) msg = "cannot import `" + n + "` from `" + ns->name + "`: " + msg;
        report(site, Severity::Error, from_import ? "import-error" : "unknown-api", msg);
        if (!diagnostics.empty() && &diagnostics.back() != before && !suggestions.empty() &&
            site.node && site.node->kind == ast::K::Attribute) {
          const std::string& best = suggestions.front();
          // Quick fix: replace the whole dotted reference when the namespace changes, else the
          // name.
          Diagnostic& d = diagnostics.back();
          std::string best_ns = best.substr(0, best.find('.'));
          std::string best_name = best.substr(best.find('.') + 1);
          SourceRange attr_range = site.range();
          if (best_ns == short_ns) {
            attr_range.start = Position{attr_range.end.line,
                                        attr_range.end.column - static_cast<uint32_t>(n.size())};
            d.fixes.push_back(Fix{"Replace `" + p + n + "` with `" + best + "`",
                                  {TextEdit{site.file(), attr_range, best_name}}});
          } else {
            d.fixes.push_back(Fix{"Replace `" + p + n + "` with `" + best + "`",
                                  {TextEdit{site.file(), attr_range, best}}});
          }
        }
      }
      if (!suggestions.empty()) {
        const std::string& best = suggestions.front();
        bool close =
            best.substr(best.find('.') + 1) == n ||
            (best.size() + 2 >= p.size() + n.size() && p.size() + n.size() + 2 >= best.size());
        if (close) {
          if (const ApiEntry* e = reg.find(best, ver)) {
            result = (e->kind == ApiKind::CellClass || e->kind == ApiKind::PrimitiveClass)
                         ? api_class(e)
                         : Value::obj(std::make_shared<ApiFunctionObj>(e));
          }
        }
      }
      return result;
    }
    // A real MindSpore API that Cellscope has no rule for: opaque, and said once where it is used.
    auto cls = std::make_shared<OpaqueObj>("mindspore." + p + n);
    result = Value::obj(std::make_shared<BuiltinObj>(
        p + n, [full = p + n](Interpreter& in, CallArgs& args, const Site& s) -> Value {
          in.mark_consumed(args.pos);
          bool tensor_in = false;
          for (auto& a : args.pos) tensor_in |= a.as<TensorObj>() != nullptr;
          if (tensor_in && in.graph) {
            in.report(s, Severity::Information, "unmodelled-api",
                      "Cellscope has no shape rule for `" + full +
                          "`; shapes after this call are unknown");
            auto t = std::make_shared<TensorObj>(TensorType{Shape::unranked(), DType::Unknown});
            t->poisoned = true;
            return Value::obj(t);
          }
          return Value::unknown();
        }));
  }
  ns->cache.set(key, result);
  return result;
}

// ---- registry-backed objects and calls
// ------------------------------------------------------------

namespace {

// Arguments bound to registry parameters. Names view the registry's ParamSpec names (or the
// call's keyword names, for **kwargs); the registry's ArgValue view of an argument is built
// when a rule first asks for it.
struct BoundArgs {
  explicit BoundArgs(Interpreter& interp) : in(&interp) {}
  struct Arg {
    std::string_view name;
    Value value;
    SourceRange range;
    bool explicit_arg = false;
    bool defaulted = false;  // bound to the parameter's default value
  };
  Interpreter* in;
  std::vector<Arg> values;
  std::vector<ArgValue> varargs;
  std::vector<Value> vararg_values;
  bool ok = true;
  mutable std::vector<std::optional<ArgValue>> converted;  // aligned with `values`
  const ArgValue* find(std::string_view n) const {
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].name != n) continue;
      if (converted.size() < values.size()) converted.resize(values.size());
      if (!converted[i]) {
        const Arg& a = values[i];
        converted[i] = in->to_arg(a.value, a.range, a.explicit_arg);
      }
      return &*converted[i];
    }
    return nullptr;
  }
};

const ArgValue& missing_arg() {
  static const ArgValue kMissing;
  return kMissing;
}

std::string closest(std::string_view name, const std::vector<ParamSpec>& specs) {
  std::string best;
  size_t best_d = 3;
  for (const auto& s : specs) {
    const std::string& c = s.name;
    std::vector<size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= name.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        cur[j] = std::min(
            {prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (name[i - 1] == c[j - 1] ? 0 : 1)});
      }
      std::swap(prev, cur);
    }
    if (prev[c.size()] < best_d) {
      best_d = prev[c.size()];
      best = c;
    }
  }
  return best;
}

// Context implementations over bound arguments: what construction and application share.
template <class Base>
class BoundCtx : public Base {
 public:
  BoundCtx(Interpreter& in, const BoundArgs& b, const Site& site) : in_(in), b_(b), site_(site) {}
  const ArgValue& arg(std::string_view name) const override {
    const ArgValue* a = b_.find(name);
    return a ? *a : missing_arg();
  }
  Version version() const override { return in_.options.mindspore_version; }
  std::string_view target() const override { return in_.options.target; }
  void error(std::string_view code, std::string message, std::string_view at_arg) override {
    failed_ = true;
    emit(Severity::Error, code, std::move(message), at_arg);
  }
  void warning(std::string_view code, std::string message, std::string_view at_arg) override {
    emit(Severity::Warning, code, std::move(message), at_arg);
  }
  bool failed() const override { return failed_; }

 protected:
  // The quick fix of suggest_init_value for argument `a` written in `file`.
  void attach_init_fix(const std::string& file, const ArgValue& a, std::string_view param,
                       std::string value) {
    if (!a.explicit_arg || file.empty() || in_.diagnostics.empty()) return;
    // A keyword argument's range covers `name=value`; keep the keyword.
    std::string written = in_.source_text(file, a.range);
    size_t eq = written.find('=');
    const std::string_view lhs =
        eq == std::string::npos ? "" : text::trim(std::string_view(written).substr(0, eq));
    std::string text = lhs == param ? std::string(param) + "=" + value : value;
    in_.diagnostics.back().fixes.push_back(
        Fix{"Change " + std::string(param) + " to " + value, {TextEdit{file, a.range, text}}});
  }
  // Where a problem is reported: the argument it is about when the user wrote it, else the call.
  SourceRange location(std::string_view at_arg) const {
    if (const ArgValue* a = b_.find(at_arg); a && a->explicit_arg && !at_arg.empty())
      return a->range;
    return site_.range();
  }
  virtual void emit(Severity sev, std::string_view code, std::string message,
                    std::string_view at_arg) = 0;
  Interpreter& in_;
  const BoundArgs& b_;
  const Site& site_;
  bool failed_ = false;
};

class InitCtx final : public BoundCtx<InitContext> {
 public:
  InitCtx(Interpreter& in, const BoundArgs& b, const Site& site, std::string_view api)
      : BoundCtx(in, b, site), api_(api) {}
  void add_parameter(std::string name, Shape shape, DType dtype, bool trainable) override {
    ParamInfo p{std::move(name), std::move(shape), dtype, trainable};
    p.init = initializer_of(p);
    params.push_back(std::move(p));
  }
  void set_attr(std::string name, AttrValue value) override {
    attrs.push_back(Attr{std::move(name), std::move(value)});
  }
  std::vector<ParamInfo> params;
  std::vector<Attr> attrs;
  void suggest_init_value(std::string_view param, std::string value) override {
    if (const ArgValue* a = b_.find(param))
      attach_init_fix(site_.file(), *a, param, std::move(value));
  }

 private:
  void emit(Severity sev, std::string_view code, std::string message,
            std::string_view at_arg) override {
    in_.report_at(site_.file(), location(at_arg), sev, std::string(code),
                  std::move(message) + in_.instance_note());
  }
  // How the layer initialises Parameter `p`: its `<p>_init` argument (as written, or the
  // signature's default such as gamma_init='ones'), else MindSpore's default for the layer.
  // nullptr when that is not known (a tensor or an unknown value passed as the initializer).
  std::shared_ptr<const ParamInit> initializer_of(const ParamInfo& p) const {
    const std::string keyword = init_argument_of(p.name);
    const ArgValue* given = b_.find(keyword);
    if (given && (given->is_none() || given->is_missing())) given = nullptr;
    if (given) {
      if (auto spec = given->as_initializer()) {
        const bool written = given->explicit_arg;
        std::string note = (written ? "" : "default ") + keyword + "=" + spec->str();
        return std::make_shared<const ParamInit>(
            ParamInit{std::move(*spec),
                      written ? ParamInit::Origin::Argument : ParamInit::Origin::LayerDefault,
                      std::move(note)});
      }
    }
    // A bias's default depends on the fan-in of the weight declared before it.
    const Shape* weight = nullptr;
    const std::string weight_name = weight_beside(p.name);
    for (const ParamInfo& q : params) {
      if (q.name == weight_name) weight = &q.shape;
    }
    auto spec = default_initializer(api_, p.name, weight, arg("hidden_size").as_int());
    if (!spec) return nullptr;
    std::string note = std::string(api_) + "'s default for " + p.name + ": " + spec->str();
    if (given) {
      note = keyword + "=" + given->repr() + " is not known statically; " + note + " stands in";
      return std::make_shared<const ParamInit>(
          ParamInit{std::move(*spec), ParamInit::Origin::Substitute, std::move(note)});
    }
    return std::make_shared<const ParamInit>(
        ParamInit{std::move(*spec), ParamInit::Origin::LayerDefault, std::move(note)});
  }
  std::string_view api_;
};

class CallCtx final : public BoundCtx<CallContext> {
 public:
  CallCtx(Interpreter& in, const BoundArgs& b, const Site& site, InstanceObj* obj)
      : BoundCtx(in, b, site), obj_(obj) {}
  const ArgValue& init_arg(std::string_view name) const override {
    if (!obj_ || !obj_->cell) return missing_arg();
    for (auto& [k, v] : init_cache_) {
      if (k == name) return v;
    }
    if (auto a = in_.api_init_arg(*obj_->cell, name))
      return init_cache_.emplace_back(a->name, in_.to_arg(a->value, a->range, a->explicit_arg))
          .second;
    return missing_arg();
  }
  const AttrValue* init_attr(std::string_view name) const override {
    if (obj_ && obj_->cell) {
      if (!obj_->cell->attrs) return nullptr;
      for (auto& a : *obj_->cell->attrs) {
        if (a.name == name) return &a.value;
      }
    }
    return nullptr;
  }
  const ParamInfo* param(std::string_view name) const override {
    if (obj_ && obj_->cell) {
      for (auto& p : *obj_->cell->api_params) {
        if (p.name == name) return &p;
      }
    }
    return nullptr;
  }
  const std::vector<ArgValue>& varargs() const override { return b_.varargs; }
  void add_output(TensorType t) override { outputs.push_back(std::move(t)); }
  void set_attr(std::string name, AttrValue value) override {
    attrs.push_back(Attr{std::move(name), std::move(value)});
  }
  void set_flops(double f) override { flops = f; }
  void set_op(std::string_view o) override { op = IStr(o); }
  void suggest_init_value(std::string_view param, std::string value) override {
    if (obj_ && obj_->cell)
      attach_init_fix(obj_->cell->file, init_arg(param), param, std::move(value));
  }
  std::vector<TensorType> outputs;
  std::vector<Attr> attrs;
  double flops = 0;
  IStr op;  // set_op's operator; empty: the entry's
  // The first error shown to the user (not one the interpreter suppressed): what the failed
  // call's marker says.
  std::string error_code, error_message;

 private:
  void emit(Severity sev, std::string_view code, std::string message,
            std::string_view at_arg) override {
    SourceRange r = location(at_arg);
    const std::string text = message.substr(0, message.find('\x1f'));
    std::vector<RelatedLocation> related;
    if (obj_ && obj_->cell && !obj_->cell->file.empty()) {
      std::string who = obj_->cell->path.empty() ? obj_->cls->name : "`" + obj_->cell->path + "`";
      related.push_back(RelatedLocation{obj_->cell->file, obj_->cell->site,
                                        who + " (" + obj_->cls->name + ") is defined here"});
    }
    const bool shown = in_.report_at(site_.file(), r, sev, std::string(code),
                                     std::move(message) + in_.instance_note(), std::move(related));
    if (shown && sev == Severity::Error && error_code.empty()) {
      error_code = code;
      error_message = text;
    }
  }
  InstanceObj* obj_;
  mutable std::deque<std::pair<std::string_view, ArgValue>> init_cache_;  // converted init args
};

}  // namespace

// Binds call arguments to registry parameters, reporting unknown/missing/extra/deprecated ones.
static BoundArgs bind_specs(Interpreter& in, const std::vector<ParamSpec>& specs, CallArgs& args,
                            const Site& site, const std::string& callee) {
  BoundArgs b(in);
  const Version& ver = in.options.mindspore_version;
  // The parameters of this version, and which are bound (inline for the usual signature sizes).
  constexpr size_t kInline = 32;
  std::array<const ParamSpec*, kInline> active_buf{};
  std::array<bool, kInline> bound_buf{};
  std::vector<const ParamSpec*> active_heap;
  std::vector<char> bound_heap;
  size_t n_active = 0;
  for (const auto& s : specs) n_active += s.versions.contains(ver) ? 1 : 0;
  std::span<const ParamSpec*> active;
  std::span<bool> bound;
  if (n_active <= kInline) {
    active = std::span<const ParamSpec*>(active_buf.data(), n_active);
    bound = std::span<bool>(bound_buf.data(), n_active);
  } else {
    active_heap.resize(n_active);
    bound_heap.assign(n_active, 0);
    active = std::span<const ParamSpec*>(active_heap);
    bound = std::span<bool>(reinterpret_cast<bool*>(bound_heap.data()), n_active);
  }
  {
    size_t k = 0;
    for (const auto& s : specs) {
      if (s.versions.contains(ver)) active[k++] = &s;
    }
  }
  b.values.reserve(n_active);
  size_t pi = 0;
  const ParamSpec* var_pos = nullptr;
  const ParamSpec* var_kw = nullptr;
  for (auto* s : active) {
    if (s->kind == ParamKind::VarPositional) var_pos = s;
    if (s->kind == ParamKind::VarKeyword) var_kw = s;
  }
  auto bind = [&](size_t idx, const Value& v, SourceRange r) {
    b.values.push_back(BoundArgs::Arg{active[idx]->name, v, r, true, false});
    bound[idx] = true;
    if (!active[idx]->deprecated.empty()) {
      const size_t before = in.diagnostics.size();
      in.report_at(site.file(), r, Severity::Warning, "deprecated-argument",
                   "`" + active[idx]->name + "` of `" + callee + "` is deprecated in MindSpore " +
                       ver.str() + ": " + active[idx]->deprecated);
      // keep_prob -> p is mechanical: offer the rewrite.
      // Only on the diagnostic just made: a repeat of a reported one (the same layer built by
      // many instances) adds nothing, not another copy of the fix to some earlier diagnostic.
      if (active[idx]->name == "keep_prob" && v.is_number() && in.diagnostics.size() > before) {
        double p = 1.0 - v.as_float();
        std::string text = repr(Value::real(std::round(p * 1e6) / 1e6));
        in.diagnostics.back().fixes.push_back(
            Fix{"Use p=" + text + " instead of keep_prob=" + repr(v),
                {TextEdit{site.file(), r, "p=" + text}}});
      }
    }
  };
  bool misnamed = false;  // a keyword the API does not take was given
  size_t a = 0;
  for (; a < args.pos.size(); ++a) {
    while (pi < active.size() && active[pi]->kind != ParamKind::PositionalOrKeyword) {
      if (active[pi]->kind == ParamKind::VarPositional) break;
      ++pi;
    }
    if (pi >= active.size() || active[pi]->kind != ParamKind::PositionalOrKeyword) break;
    bind(pi, args.pos[a], a < args.pos_ranges.size() ? args.pos_ranges[a] : site.range());
    ++pi;
  }
  if (a < args.pos.size()) {
    if (var_pos) {
      for (; a < args.pos.size(); ++a) {
        b.varargs.push_back(in.to_arg(
            args.pos[a], a < args.pos_ranges.size() ? args.pos_ranges[a] : site.range(), true));
        b.vararg_values.push_back(args.pos[a]);
      }
    } else if (!args.open) {
      size_t npos = 0;
      for (auto* s : active) npos += s->kind == ParamKind::PositionalOrKeyword ? 1 : 0;
      in.report_at(site.file(), a < args.pos_ranges.size() ? args.pos_ranges[a] : site.range(),
                   Severity::Error, "too-many-arguments",
                   "`" + callee + "` takes " +
                       (npos == 0 ? std::string("no positional arguments")
                                  : "at most " + std::to_string(npos) + " positional argument" +
                                        (npos > 1 ? "s" : "")) +
                       ", but " + std::to_string(args.pos.size()) +
                       (args.pos.size() > 1 ? " were" : " was") + " given" + in.instance_note());
      b.ok = false;
    }
  }
  for (size_t k = 0; k < args.kw.size(); ++k) {
    const auto& [name, v] = args.kw[k];
    SourceRange r = k < args.kw_ranges.size() ? args.kw_ranges[k] : site.range();
    size_t idx = active.size();
    for (size_t i = 0; i < active.size(); ++i) {
      if (active[i]->name == name && (active[i]->kind == ParamKind::PositionalOrKeyword ||
                                      active[i]->kind == ParamKind::KeywordOnly)) {
        idx = i;
      }
    }
    if (idx < active.size()) {
      if (bound[idx]) {
        in.report_at(site.file(), r, Severity::Error, "invalid-argument",
                     "`" + callee + "` got multiple values for argument `" + name + "`");
        b.ok = false;
        continue;
      }
      bind(idx, v, r);
      continue;
    }
    if (var_kw) {
      // The keyword's name outlives the call (a layer keeps its constructor arguments).
      b.values.push_back(BoundArgs::Arg{IStr(name).str(), v, r, true, false});
      continue;
    }
    // Unknown keyword: say whether another MindSpore version has it.
    std::string msg = "`" + callee + "` got an unexpected keyword argument `" + name + "`";
    for (const auto& s : specs) {
      if (s.name == name && !s.versions.contains(ver)) {
        msg += ver < s.versions.since ? " (added in MindSpore " + s.versions.since.str() + ")"
                                      : " (removed in MindSpore " + s.versions.until.str() + ")";
      }
    }
    std::string near = closest(name, specs);
    if (!near.empty() && near != name) msg += "; did you mean `" + near + "`?";
    in.report_at(site.file(), r, Severity::Error, "unknown-keyword", msg + in.instance_note());
    b.ok = false;
    misnamed = true;
  }
  for (size_t i = 0; i < active.size(); ++i) {
    if (bound[i] || active[i]->kind == ParamKind::VarPositional ||
        active[i]->kind == ParamKind::VarKeyword)
      continue;
    if (args.open || (misnamed && active[i]->required())) {
      // The unknown `*args`/`**kwargs` may carry it; or a misnamed keyword was meant for it,
      // which is the one mistake to report.
      b.values.push_back(
          BoundArgs::Arg{active[i]->name, Value::unknown(), site.range(), false, false});
      continue;
    }
    if (active[i]->required()) {
      in.report(site, Severity::Error, "missing-argument",
                "`" + callee + "` missing required argument `" + active[i]->name + "`" +
                    in.instance_note());
      b.ok = false;
      b.values.push_back(
          BoundArgs::Arg{active[i]->name, Value::unknown(), site.range(), false, false});
      continue;
    }
    b.values.push_back(
        BoundArgs::Arg{active[i]->name, in.default_value(*active[i]), site.range(), false, true});
  }
  return b;
}

void Interpreter::init_api_object(InstanceObj* inst, const ApiEntry* e, CallArgs& args,
                                  const Site& site) {
  if (!inst->cell) {
    inst->cell = std::make_unique<CellState>();
    inst->cell->file = site.file_id();
    inst->cell->site = site.range();
  }
  CellState& cs = *inst->cell;
  cs.api = e;
  BoundArgs b = bind_specs(*this, e->init_params, args, site, e->name);
  InitCtx ctx(*this, b, site, e->name);
  if (b.ok && e->init) e->init(ctx);
  cs.init_failed = !b.ok || ctx.failed();
  // Defaulted arguments are not kept: init_arg() finds them from the registry entry.
  cs.init_args.clear();
  size_t kept = 0;
  for (const auto& a : b.values) kept += a.defaulted ? 0 : 1;
  cs.init_args.reserve(kept);
  for (auto& a : b.values) {
    if (a.defaulted) continue;
    cs.init_args.push_back(CellState::InitArg{a.name, std::move(a.value), a.range, a.explicit_arg});
  }
  // A Parameter with more elements than int64 holds: MindSpore cannot create it either (the
  // initializer's numpy array); the layer is broken, not counted with a wrapped size.
  std::erase_if(ctx.params, [&](const ParamInfo& p) {
    if (!p.shape.fully_known()) return false;
    int64_t n = 1;
    for (const Dim& d : p.shape.dims) {
      auto m = checked_mul(n, d.value());
      if (!m) {
        report(site, Severity::Error, "invalid-argument",
               "`" + e->name + "`: Parameter `" + p.name + "` of shape " + p.shape.str() +
                   " has more elements than fit in int64" + instance_note());
        cs.init_failed = true;
        return true;
      }
      n = *m;
    }
    return false;
  });
  cs.attrs = shared_attrs(std::move(ctx.attrs));
  cs.api_params = shared_params(std::move(ctx.params));
  for (const ParamInfo& p : *cs.api_params) {
    Value pv = make_parameter(p);
    cs.params.emplace_back(p.name, pv);
    inst->attrs.set(name_str(p.name), pv);
  }
}

std::shared_ptr<const std::vector<Attr>> Interpreter::shared_attrs(std::vector<Attr> attrs) {
  auto mix = [](size_t h, size_t v) {
    return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  };
  size_t h = attrs.size();
  for (const Attr& a : attrs) {
    h = mix(h, std::hash<std::string>()(a.name));
    h = mix(h, a.value.index());
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            for (int64_t x : v) h = mix(h, std::hash<int64_t>()(x));
          } else if constexpr (!std::is_same_v<T, std::monostate>) {
            h = mix(h, std::hash<T>()(v));
          }
        },
        a.value);
  }
  auto same = [&](const std::vector<Attr>& other) {
    if (other.size() != attrs.size()) return false;
    for (size_t i = 0; i < attrs.size(); ++i) {
      if (other[i].name != attrs[i].name || other[i].value != attrs[i].value) return false;
      // Identical bits for floats (0.0 == -0.0 but they render differently).
      const auto* x = std::get_if<double>(&attrs[i].value);
      if (x &&
          std::bit_cast<uint64_t>(*x) != std::bit_cast<uint64_t>(std::get<double>(other[i].value)))
        return false;
    }
    return true;
  };
  auto& bucket = attr_sets_[h];
  for (const auto& s : bucket) {
    if (same(*s)) return s;
  }
  bucket.push_back(std::make_shared<const std::vector<Attr>>(std::move(attrs)));
  return bucket.back();
}

std::shared_ptr<const std::vector<ParamInfo>> Interpreter::shared_params(
    std::vector<ParamInfo> params) {
  if (params.empty()) return CellState::no_params();
  size_t h = params.size();
  for (const ParamInfo& p : params) {
    h = h * 31 + std::hash<std::string>()(p.name);
    h = h * 31 + p.shape.rank();
    for (const Dim& d : p.shape.dims) h = h * 31 + static_cast<size_t>(d.coefficient());
  }
  auto same = [&](const std::vector<ParamInfo>& other) {
    if (other.size() != params.size()) return false;
    for (size_t i = 0; i < params.size(); ++i) {
      const ParamInfo& a = params[i];
      const ParamInfo& b = other[i];
      if (a.name != b.name || !(a.shape == b.shape) || a.dtype != b.dtype ||
          a.trainable != b.trainable)
        return false;
      if (a.init != b.init && (!a.init || !b.init || !(*a.init == *b.init))) return false;
    }
    return true;
  };
  auto& bucket = param_sets_[h];
  for (const auto& s : bucket) {
    if (same(*s)) return s;
  }
  bucket.push_back(std::make_shared<const std::vector<ParamInfo>>(std::move(params)));
  return bucket.back();
}

Value Interpreter::name_str(std::string_view s) {
  auto it = name_strs_.find(s);
  if (it == name_strs_.end()) {
    Value v = make_str(std::string(s));
    it = name_strs_.emplace(std::string_view(*str_of(v)), v).first;  // views the object's text
  }
  return it->second;
}

std::optional<CellState::InitArg> Interpreter::api_init_arg(const CellState& cs,
                                                            std::string_view name) {
  for (const auto& a : cs.init_args) {
    if (a.name == name) return a;
  }
  if (!cs.api) return std::nullopt;
  const Version& ver = options.mindspore_version;
  for (const ParamSpec& s : cs.api->init_params) {
    if (s.name != name || !s.versions.contains(ver) || s.required()) continue;
    if (s.kind == ParamKind::VarPositional || s.kind == ParamKind::VarKeyword) continue;
    return CellState::InitArg{s.name, default_value(s), cs.site, false};
  }
  return std::nullopt;
}

// The bound non-tensor arguments of a call that have an attribute form, appended to `attrs`
// unless an attribute of that name is already there.
static void record_call_args(const BoundArgs& b, std::vector<Attr>& attrs) {
  // A Python scalar operand of an elementwise op is recorded by its rule as `scalar` at operand
  // position `scalar_index` (rules.h, record_scalar), which is its argument's position: not twice.
  std::optional<size_t> scalar_operand;
  for (const Attr& x : attrs)
    if (x.name == "scalar_index")
      if (const auto* i = std::get_if<int64_t>(&x.value); i && *i >= 0)
        scalar_operand = static_cast<size_t>(*i);
  for (size_t k = 0; k < b.values.size(); ++k) {
    const BoundArgs::Arg& a = b.values[k];
    if (a.value.as<TensorObj>() || a.name == "self" || k == scalar_operand) continue;
    if (std::ranges::any_of(attrs, [&](const Attr& x) { return x.name == a.name; })) continue;
    const ArgValue* v = b.find(a.name);
    if (!v) continue;
    if (auto attr = v->as_attr()) attrs.push_back(Attr{std::string(a.name), std::move(*attr)});
  }
}

Value Interpreter::call_api_function(const ApiEntry* e, CallArgs& args, const Site& site,
                                     InstanceObj* self_obj) {
  if (self_obj && self_obj->cell && self_obj->cell->init_failed) {
    // The layer itself is broken (reported at its construction): do not pile on.
    if (graph) {
      for (const Value& v : args.pos) {
        auto* in_t = v.as<TensorObj>();
        if (in_t && in_t->graph_id == graph->graph_id)
          graph->consumed_by_failed.insert(in_t->ref.node);
      }
    }
    auto t = std::make_shared<TensorObj>(TensorType{Shape::unranked(), DType::Unknown});
    t->poisoned = true;
    return Value::obj(t);
  }
  BoundArgs b = bind_specs(*this, e->call_params, args, site, e->name);
  std::vector<Value> tensor_inputs;
  bool poisoned = !b.ok;
  auto consider = [&](const Value& v) {
    if (auto* t = v.as<TensorObj>()) {
      tensor_inputs.push_back(v);
      poisoned |= t->poisoned;
    } else if (auto* items = seq_items(v)) {
      for (const auto& x : *items) {
        if (auto* t2 = x.as<TensorObj>()) {
          tensor_inputs.push_back(x);
          poisoned |= t2->poisoned;
        }
      }
    }
  };
  for (auto& a : b.values) consider(a.value);
  for (auto& v : b.vararg_values) consider(v);
  // Tensors the layer was constructed with that its operator reads (a loss's class weights).
  if (self_obj && self_obj->cell) {
    for (const std::string& name : e->init_tensor_inputs) {
      for (const auto& a : self_obj->cell->init_args) {
        if (a.name == name) consider(a.value);
      }
    }
  }
  bool unknown_input = false;
  for (auto& a : b.values) unknown_input |= a.value.is_unknown();
  auto poison = [&]() {
    auto t = std::make_shared<TensorObj>(TensorType{Shape::unranked(), DType::Unknown});
    t->poisoned = true;
    return Value::obj(t);
  };
  auto mark_consumed = [&]() {
    // Inputs of a failed op are not "unused": the failure is the diagnostic.
    if (!graph) return;
    for (const Value& v : tensor_inputs) {
      auto* t = v.as<TensorObj>();
      if (t && t->graph_id == graph->graph_id) graph->consumed_by_failed.insert(t->ref.node);
    }
  };
  if (poisoned) {
    mark_consumed();
    return poison();
  }
  CallCtx ctx(*this, b, site, self_obj);
  if (e->infer) e->infer(ctx);
  if (ctx.failed()) {
    mark_consumed();
    if (graph && !ctx.error_code.empty())
      add_failed_call(e, self_obj, tensor_inputs, site, std::move(ctx.error_code),
                      std::move(ctx.error_message), ctx.op);
    return poison();
  }
  // What a layer or primitive records when it is constructed, a function or a Tensor method
  // records when it is called: its arguments (defaults included) are its node's attributes, so
  // `ops.gelu(x, approximate='tanh')` carries approximate='tanh' to every later stage. An
  // attribute the rule set itself (normalised, resolved) wins.
  if (e->kind == ApiKind::Function || e->kind == ApiKind::TensorMethod)
    record_call_args(b, ctx.attrs);
  if (ctx.outputs.empty()) {
    if (unknown_input) return Value::unknown();
    return Value::none();
  }
  // While construct is compiled every operation is a node, constants included (folding them
  // is an optimisation-layer decision); outside construct the result is a constant.
  // A tuple-returning op (split, unstack, unbind) on an input of unknown shape: how many pieces
  // it returns is unknown too, so the result is a tuple nobody can count (unpacking it into any
  // number of names is fine), not one piece.
  bool count_unknown = e->returns_tuple && ctx.outputs.size() == 1 && !ctx.outputs[0].shape.ranked;
  if (graph) {
    Value r = add_op_node(e, self_obj, std::move(tensor_inputs), std::move(ctx.outputs),
                          std::move(ctx.attrs), ctx.flops, site, e->returns_tuple, ctx.op);
    if (count_unknown) {
      if (auto* items = seq_items(r); items && !items->empty()) {
        if (auto* t = (*items)[0].as<TensorObj>(); t && t->graph_id == graph->graph_id)
          graph->consumed_by_failed.insert(t->ref.node);
      }
      return Value::unknown();
    }
    return r;
  }
  if (count_unknown) return Value::unknown();
  // Constant folding: every input is a constant, so the result is a constant too.
  std::vector<Value> outs;
  for (auto& t : ctx.outputs) outs.push_back(make_tensor(std::move(t)));
  if (outs.size() == 1 && e->name == "ops.linspace") {
    // Its elements, for model code that reads them back (npvalues.h).
    std::vector<Value> bound;
    for (auto& a : b.values) bound.push_back(a.value);
    npv::registry_function(e->name, bound, nullptr, *outs[0].as<TensorObj>());
  } else if (outs.size() == 1) {
    const std::string_view op =
        !ctx.op.empty() ? std::string_view(ctx.op) : std::string_view(e->op);
    auto* t = outs[0].as<TensorObj>();
    if (t != nullptr && (op == "Zeros" || op == "Ones")) {
      // `ops.zeros(shape, dtype)` built in __init__ (CMT's relative-position buffers): every
      // element is known, as for np.zeros.
      t->fill = op == "Ones" ? 1.0 : 0.0;
    } else if (t != nullptr && !b.values.empty()) {
      // An elementwise function of one constant whose elements are known: its elements, for the
      // runtime and export (SwinV2's `self.value_max = ops.log(Tensor(100, mstype.float32))`,
      // the bound of its logit scale). Computed in the output's dtype, as numpy's ufunc would.
      const std::string_view fn = npv::ufunc_of_op(op);
      if (!fn.empty()) npv::unary(fn, b.values[0].value, *t);
    }
  }
  return pack_outputs(std::move(outs), ctx.attrs, e->returns_tuple);
}

// `cls(...)` of an initializer class when every argument is a known number or string.
static std::optional<InitSpec> initializer_call(std::string_view cls, const CallArgs& a) {
  if (a.open) return std::nullopt;
  std::vector<InitSpec::Arg> args;
  auto add = [&](std::string_view keyword, const Value& v) {
    InitSpec::Arg x;
    x.keyword = keyword;
    if (v.is_number()) {
      x.number = v.as_float();
    } else if (const std::string* text = str_of(v)) {
      x.string = *text;
    } else {
      return false;
    }
    args.push_back(std::move(x));
    return true;
  };
  for (const Value& v : a.pos) {
    if (!add({}, v)) return std::nullopt;
  }
  for (const auto& [k, v] : a.kw) {
    if (!add(k, v)) return std::nullopt;
  }
  return InitSpec::call(cls, args);
}

// ---- natives: Tensor, Parameter, initializers, context
// ---------------------------------------------

void register_mindspore_natives(Interpreter& in, std::unordered_map<std::string, Value>& natives);

void register_mindspore_natives(Interpreter& /*interp*/,
                                std::unordered_map<std::string, Value>& natives) {
  auto add = [&](const std::string& name, BuiltinFn fn) {
    natives[name] = Value::obj(std::make_shared<BuiltinObj>(name, std::move(fn)));
  };
  auto arg = [](CallArgs& a, size_t i, std::string_view kw) -> const Value* {
    if (i < a.pos.size()) return &a.pos[i];
    return a.find_kw(kw);
  };
  // Tensor(input_data=None, dtype=None, shape=None, init=None, ...)
  add("__new_Tensor", [arg](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    const Value* data = arg(a, 0, "input_data");
    const Value* dt = arg(a, 1, "dtype");
    const Value* shape = arg(a, 2, "shape");
    std::optional<DType> want;
    if (dt) {
      if (auto* d = dt->as<DTypeObj>()) want = d->dtype;
    }
    TensorType t{Shape::unranked(), DType::Unknown};
    std::optional<double> fill;  // every element's value, when known
    if (data && !data->is_none()) {
      if (auto* src = data->as<TensorObj>()) {
        t = src->type;
      } else if (data->k == VK::Int) {
        t = TensorType{Shape{}, DType::Int64};
        fill = data->as_float();
      } else if (data->k == VK::Bool) {
        t = TensorType{Shape{}, DType::Bool};
        fill = data->as_float();
      } else if (data->k == VK::Float) {
        t = TensorType{Shape{}, DType::Float32};
        fill = data->as_float();
      } else if (seq_items(*data)) {
        std::vector<int64_t> dims;
        DType d = DType::Unknown;
        if (nested_shape(in, *data, dims, 0, d))
          t = TensorType{Shape::of(dims), d == DType::Unknown ? DType::Float32 : d};
      }
    } else if (shape && !shape->is_none()) {
      if (auto* items = seq_items(*shape)) {
        Shape s;
        for (auto& x : *items)
          s.dims.push_back(x.is_int() ? Dim::known(x.as_int()) : Dim::unknown());
        t.shape = s;
      } else if (shape->is_int()) {
        t.shape = Shape::of({shape->as_int()});
      }
      t.dtype = DType::Float32;
    }
    if (want) t.dtype = *want;
    (void)site;
    auto obj = std::make_shared<TensorObj>(t);
    // The elements, when known: copied (converted to the tensor's dtype) from a numpy array or
    // tensor, a Python number, or a nested list of numbers.
    if (data && data->as<TensorObj>()) {
      npv::same_order(*data, *obj);
    } else if (fill) {
      obj->fill = npv::to_dtype(t.dtype, *fill);
    } else if (data && seq_items(*data)) {
      std::vector<double> vals;
      std::function<bool(const Value&)> flat = [&](const Value& x) {
        if (x.is_number()) {
          vals.push_back(x.as_float());
          return true;
        }
        auto* items = seq_items(x);
        if (!items) return false;
        for (const Value& y : *items) {
          if (!flat(y)) return false;
        }
        return true;
      };
      if (flat(*data)) npv::set_values(*obj, std::move(vals));
    }
    return Value::obj(obj);
  });
  // Parameter(default_input, name=None, requires_grad=True, ...)
  add("__new_Parameter", [arg](Interpreter& in, CallArgs& a, const Site&) -> Value {
    const Value* data = arg(a, 0, "default_input");
    const Value* name = arg(a, 1, "name");
    const Value* rg = arg(a, 2, "requires_grad");
    TensorType t{Shape{}, DType::Float32};
    std::shared_ptr<const ParamInit> init;
    if (data) {
      if (auto* src = data->as<TensorObj>()) {
        t = src->type;
        init = src->init;          // initializer(...)
        if (!init && src->fill) {  // Tensor(np.zeros(...)), ops.ones(...)
          std::string note = "a tensor filled with " + repr(Value::real(*src->fill));
          init = std::make_shared<const ParamInit>(ParamInit{
              InitSpec::constant(*src->fill), ParamInit::Origin::Argument, std::move(note)});
        } else if (!init && src->values) {  // Tensor(np_array) of computed elements (Swin's
                                            // relative position tables)
          InitSpec spec;
          spec.kind = InitSpec::Kind::Values;
          spec.values = src->values;
          std::string note = "a tensor of " + std::to_string(src->values->size()) +
                             " elements computed in __init__";
          init = std::make_shared<const ParamInit>(
              ParamInit{std::move(spec), ParamInit::Origin::Argument, std::move(note)});
        }
      } else if (data->k == VK::Int) {
        t = TensorType{Shape{}, DType::Int64};
      } else if (data->is_unknown()) {
        t = TensorType{Shape::unranked(), DType::Float32};
      }
    }
    bool requires_grad = true;
    if (rg) {
      bool known = true;
      requires_grad = in.truthy(*rg, &known) || !known;
    }
    std::string n;
    if (name) {
      if (auto* s = str_of(*name)) n = *s;
    }
    Value p = in.make_parameter(t, n, requires_grad);
    p.as<TensorObj>()->init = std::move(init);
    return p;
  });
  add("ms.ParameterTuple", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty()) return make_tuple({});
    auto* items = seq_items(a.pos[0]);
    if (items == nullptr) return Value::unknown();
    Value t = make_tuple(*items);
    t.as<TupleObj>()->parameter_tuple = true;
    return t;
  });
  add("ms.get_context", [](Interpreter& in, CallArgs& a, const Site&) -> Value {
    std::string key;
    if (!a.pos.empty()) {
      if (auto* s = str_of(a.pos[0])) key = *s;
    } else if (const Value* k = a.find_kw("attr_key")) {
      if (auto* s = str_of(*k)) key = *s;
    }
    if (key == "device_target") return make_str(target_device_name(in.options.target));
    if (key == "mode") return Value::integer(0);
    if (key == "device_id") return Value::integer(0);
    return Value::unknown();
  });
  natives["context.get_context"] = natives["ms.get_context"];
  auto none_fn = [](Interpreter&, CallArgs&, const Site&) -> Value { return Value::none(); };
  // `set_context(mode=GRAPH_MODE)`: construct's GRAPH_MODE restrictions are then certain.
  auto set_context = [](Interpreter& in, CallArgs& a, const Site&) -> Value {
    if (const Value* m = a.find_kw("mode"); m && m->is_int())
      in.selected_mode = static_cast<int>(m->as_int());
    return Value::none();
  };
  add("ms.set_context", set_context);
  add("context.set_context", set_context);
  for (const char* n : {"ms.set_seed", "ms.set_device", "ms.set_recursion_limit",
                        "ms.load_param_into_net", "ms.save_checkpoint", "ms.set_dump"}) {
    add(n, none_fn);
  }
  auto identity_decorator = [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.size() == 1 && a.kw.empty()) return a.pos[0];
    // Used as @jit(...) with arguments: return an identity decorator.
    return Value::obj(
        std::make_shared<BuiltinObj>("decorator", [](Interpreter&, CallArgs& b, const Site&) {
          return b.pos.empty() ? Value::unknown() : b.pos[0];
        }));
  };
  for (const char* n :
       {"ms.jit", "ms.ms_function", "ms.ms_class", "ms.jit_class", "ops.constexpr",
        "ops.primitive_attr_register", "ops.prim_attr_register", "ms.lazy_inline"}) {
    add(n, identity_decorator);
  }
  add("ms.load_checkpoint",
      [](Interpreter&, CallArgs&, const Site&) -> Value { return Value::unknown(); });
  // ms.export(net, *inputs, file_name=..., file_format=...): a call site with concrete inputs.
  add("ms.export", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.empty()) return Value::none();
    if (in.training) in.training->record_export(in, a, site);
    std::vector<Value> inputs(a.pos.begin() + 1, a.pos.end());
    if (in.graph == nullptr) {
      const Value* name = a.find_kw("file_name");
      const Value* format = a.find_kw("file_format");
      in.export_calls.push_back(Interpreter::ExportSite{
          a.pos[0], inputs, name ? *name : Value::unknown(), format ? *format : Value::unknown(),
          plan_call(in, "ms.export", a, site)});
    }
    if (in.graph == nullptr) in.call_sites.push_back(Interpreter::CallSite{a.pos[0], inputs, site});
    return Value::none();
  });
  // Shape/rank/dtype helpers, as functions and as primitive classes.
  auto shape_fn = [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.empty()) return Value::unknown();
    return in.tensor_attr(a.pos[0], "shape", site);
  };
  add("ops.shape", shape_fn);
  add("ops.rank", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    return a.pos.empty() ? Value::unknown() : in.tensor_attr(a.pos[0], "ndim", site);
  });
  add("ops.size", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    return a.pos.empty() ? Value::unknown() : in.tensor_attr(a.pos[0], "size", site);
  });
  add("ops.dtype", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    return a.pos.empty() ? Value::unknown() : in.tensor_attr(a.pos[0], "dtype", site);
  });
  add("ops.stop_gradient", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    return a.pos.empty() ? Value::unknown() : a.pos[0];
  });
  auto prim_factory = [&](const std::string& name, BuiltinFn fn) {
    add(name, [fn](Interpreter&, CallArgs&, const Site&) -> Value {
      return Value::obj(std::make_shared<BuiltinObj>("primitive", fn));
    });
  };
  prim_factory("ops.Shape", shape_fn);
  prim_factory("ops.TensorShape", shape_fn);
  prim_factory("ops.Rank", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    return a.pos.empty() ? Value::unknown() : in.tensor_attr(a.pos[0], "ndim", site);
  });
  prim_factory("ops.Size", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    return a.pos.empty() ? Value::unknown() : in.tensor_attr(a.pos[0], "size", site);
  });
  prim_factory("ops.DType", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    return a.pos.empty() ? Value::unknown() : in.tensor_attr(a.pos[0], "dtype", site);
  });
  // Initializers: objects that only carry their name; initializer(init, shape, dtype) is a tensor.
  for (const char* n : {"Normal", "TruncatedNormal", "HeUniform", "HeNormal", "XavierUniform",
                        "XavierNormal", "Uniform", "Zero", "One", "Constant", "Orthogonal", "Dirac",
                        "Identity", "Sparse", "VarianceScaling", "Initializer"}) {
    std::string name = n;
    add(std::string("init.") + n, [name](Interpreter&, CallArgs& a, const Site&) -> Value {
      auto o = std::make_shared<OpaqueObj>(name);
      o->args = a.pos;
      if (auto spec = initializer_call(name, a))
        o->initializer = std::make_shared<const InitSpec>(std::move(*spec));
      return Value::obj(o);
    });
  }
  add("init.initializer", [arg](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    const Value* shape = arg(a, 1, "shape");
    const Value* dt = arg(a, 2, "dtype");
    TensorType t{Shape::unranked(), DType::Float32};
    if (shape) {
      if (auto* items = seq_items(*shape)) {
        Shape s;
        for (auto& x : *items) {
          if (auto* sym = x.as<SymIntObj>())
            s.dims.push_back(sym->dim);
          else
            s.dims.push_back(x.is_int() ? Dim::known(x.as_int()) : Dim::unknown());
        }
        t.shape = s;
      } else if (shape->is_int()) {
        t.shape = Shape::of({shape->as_int()});
      }
    } else if (!a.pos.empty()) {
      if (auto* src = a.pos[0].as<TensorObj>()) t = src->type;
    }
    if (dt) {
      if (auto* d = dt->as<DTypeObj>()) t.dtype = d->dtype;
    }
    Value tensor = make_tensor(t);
    // What a Parameter wrapping this tensor starts from.
    if (const Value* init = arg(a, 0, "init")) {
      if (auto spec = in.to_arg(*init, site.range(), true).as_initializer()) {
        std::string note = "initializer(" + spec->str() + ")";
        tensor.as<TensorObj>()->init = std::make_shared<const ParamInit>(
            ParamInit{std::move(*spec), ParamInit::Origin::Argument, std::move(note)});
      }
    }
    return tensor;
  });
}

}  // namespace graphcore::eval
