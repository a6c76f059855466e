// Python builtins and the methods of builtin types, plus the synthetic `math` and `numpy`
// modules that model code uses to compute sizes and build constant arrays.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "graphcore/checked.h"
#include "graphcore/dataset.h"
#include "graphcore/pynumber.h"
#include "graphcore/text.h"
#include "interp.h"
#include "npvalues.h"

namespace graphcore::eval {

void register_mindspore_natives(Interpreter& in, std::unordered_map<std::string, Value>& natives);
void register_parallel_natives(Interpreter& in, std::unordered_map<std::string, Value>& natives);

namespace {

using Natives = std::unordered_map<std::string, Value>;

const Value* arg_at(CallArgs& a, size_t i, std::string_view kw = {}) {
  if (i < a.pos.size()) return &a.pos[i];
  if (!kw.empty()) return a.find_kw(kw);
  return nullptr;
}

// Shape argument of numpy/ms constructors: an int, a tuple of ints (or symbolic ints).
std::optional<Shape> shape_arg(const Value* v) {
  if (!v) return Shape{};
  if (v->is_int()) return Shape::of({v->as_int()});
  if (auto* s = v->as<SymIntObj>()) return Shape(std::vector<Dim>{s->dim});
  if (auto* items = seq_items(*v)) {
    Shape s;
    for (const Value& x : *items) {
      if (x.is_int())
        s.dims.push_back(Dim::known(x.as_int()));
      else if (auto* sym = x.as<SymIntObj>())
        s.dims.push_back(sym->dim);
      else
        s.dims.push_back(Dim::unknown());
    }
    return s;
  }
  return std::nullopt;
}

// dict.update(pairs): adds a statically known sequence of (key, value) pairs to `d`; false when
// `v` is not one.
bool in_seq_of_pairs(const Value& v, DictObj* d) {
  const std::vector<Value>* items = seq_items(v);
  if (!items) return false;
  for (const Value& kv : *items) {
    const std::vector<Value>* pair = seq_items(kv);
    if (!pair || pair->size() != 2) return false;
  }
  for (const Value& kv : *items) d->set((*seq_items(kv))[0], (*seq_items(kv))[1]);
  return true;
}

// An instance that may have attributes the evaluator cannot see (see InstanceObj::open).
bool open_instance(const Value& v) {
  auto* inst = v.as<InstanceObj>();
  return inst && inst->is_open();
}

Value ndarray(Shape s, DType d) {
  auto t = std::make_shared<TensorObj>(TensorType{std::move(s), d});
  t->is_numpy = true;
  return Value::obj(t);
}

std::optional<DType> dtype_arg(const Value* v) {
  if (!v) return std::nullopt;
  if (auto* d = v->as<DTypeObj>()) return d->dtype;
  if (auto* s = str_of(*v)) return dtype_from_name(*s);
  if (auto* c = v->as<ClassObj>()) {
    if (c->native == NativeClass::Float) return DType::Float64;
    if (c->native == NativeClass::Int) return DType::Int64;
    if (c->native == NativeClass::Bool) return DType::Bool;
  }
  return std::nullopt;
}

double scalar(const Value& v, bool* ok) {
  *ok = v.is_number();
  return v.is_number() ? v.as_float() : 0.0;
}

Value math_fn1(CallArgs& a, double (*fn)(double), bool to_int) {
  if (a.pos.empty()) return Value::unknown();
  bool ok = false;
  double x = scalar(a.pos[0], &ok);
  if (!ok) return Value::unknown();
  double r = fn(x);
  if (to_int && std::isfinite(r)) return Value::integer(static_cast<int64_t>(r));
  return Value::real(r);
}

}  // namespace

Value Interpreter::builtin(std::string_view name) {
  auto it = natives_.find(std::string(name));
  return it == natives_.end() ? Value::unknown() : it->second;
}

bool Interpreter::has_builtin(std::string_view name) const {
  return natives_.count(std::string(name)) > 0;
}

Value Interpreter::native_class(NativeClass which) {
  static const char* kNames[] = {"",
                                 "object",
                                 "Cell",
                                 "SequentialCell",
                                 "CellList",
                                 "CellDict",
                                 "Exception",
                                 "Parameter",
                                 "Tensor",
                                 "int",
                                 "float",
                                 "str",
                                 "bool",
                                 "list",
                                 "tuple",
                                 "dict",
                                 "set",
                                 "type",
                                 "Initializer",
                                 "WithLossCell",
                                 "TrainOneStepCell",
                                 "TrainOneStepWithLossScaleCell"};
  std::string key = std::string("class:") + kNames[static_cast<size_t>(which)];
  auto it = natives_.find(key);
  if (it != natives_.end()) return it->second;
  auto cls = std::make_shared<ClassObj>();
  cls->name = kNames[static_cast<size_t>(which)];
  cls->native = which;
  cls->mro.push_back(cls.get());
  Value v = Value::obj(cls);
  natives_.emplace(key, v);
  bool cellish = which == NativeClass::Cell || which == NativeClass::SequentialCell ||
                 which == NativeClass::CellList || which == NativeClass::CellDict ||
                 is_train_wrapper(which);
  cls->is_cell = cellish;
  if (which != NativeClass::Cell && cellish) {
    Value base = native_class(NativeClass::Cell);
    cls->bases.push_back(base);
    for (ClassObj* c : base.as<ClassObj>()->mro) cls->mro.push_back(c);
  } else if (which == NativeClass::Parameter) {
    Value base = native_class(NativeClass::Tensor);
    cls->bases.push_back(base);
    cls->mro.push_back(base.as<ClassObj>());
  }
  if (which != NativeClass::Object) {
    Value obj = native_class(NativeClass::Object);
    cls->mro.push_back(obj.as<ClassObj>());
  }
  return v;
}

void Interpreter::init_builtins() {
  Natives& n = natives_;
  auto add = [&](const std::string& name, BuiltinFn fn) {
    n[name] = Value::obj(std::make_shared<BuiltinObj>(name, std::move(fn)));
  };
  register_mindspore_natives(*this, n);
  register_parallel_natives(*this, n);

  n["object"] = native_class(NativeClass::Object);
  n["int"] = native_class(NativeClass::Int);
  n["float"] = native_class(NativeClass::Float);
  n["str"] = native_class(NativeClass::Str);
  n["bool"] = native_class(NativeClass::Bool);
  n["list"] = native_class(NativeClass::List);
  n["tuple"] = native_class(NativeClass::Tuple);
  n["dict"] = native_class(NativeClass::Dict);
  n["set"] = native_class(NativeClass::Set);
  n["frozenset"] = native_class(NativeClass::Set);
  n["type"] = native_class(NativeClass::Type);
  for (const char* exc : {"Exception",
                          "BaseException",
                          "ValueError",
                          "TypeError",
                          "RuntimeError",
                          "KeyError",
                          "IndexError",
                          "AttributeError",
                          "NotImplementedError",
                          "AssertionError",
                          "ImportError",
                          "ModuleNotFoundError",
                          "OSError",
                          "IOError",
                          "ZeroDivisionError",
                          "StopIteration",
                          "Warning",
                          "UserWarning",
                          "DeprecationWarning",
                          "FileNotFoundError",
                          "NameError",
                          "OverflowError",
                          "ArithmeticError",
                          "LookupError",
                          "MemoryError"}) {
    auto cls = std::make_shared<ClassObj>();
    cls->name = exc;
    cls->native = NativeClass::Exception;
    cls->mro.push_back(cls.get());
    n[exc] = Value::obj(cls);
  }
  n["NotImplemented"] = Value::unknown();
  n["Ellipsis"] = Value::obj(std::make_shared<EllipsisObj>());

  add("__new_int", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    const Value* base_arg = a.pos.size() >= 2 ? &a.pos[1] : nullptr;
    for (auto& [k, v] : a.kw) {
      if (k == "base") base_arg = &v;
    }
    if (a.pos.empty()) return base_arg ? Value::unknown() : Value::integer(0);
    const Value& v = a.pos[0];
    if (base_arg) {
      // int(text, base): only text takes a base (a number with one is a TypeError).
      const auto* s = str_of(v);
      if (!s || !base_arg->is_int()) return Value::unknown();
      const int64_t b = base_arg->as_int();
      if (b != 0 && (b < 2 || b > 36)) {
        in.report(site, Severity::Error, "value-error", "int() base must be >= 2 and <= 36, or 0");
        return Value::unknown();
      }
      const PyNumber r = parse_py_int(*s, static_cast<int>(b));
      if (r.kind == PyNumber::Kind::Invalid) {
        in.report(site, Severity::Error, "value-error",
                  "invalid literal for int() with base " + std::to_string(b) + ": " + repr(v));
      }
      return r.kind == PyNumber::Kind::Ok ? Value::integer(r.i) : Value::unknown();
    }
    if (v.is_int()) return Value::integer(v.as_int());
    if (v.k == VK::Float) {
      // int(1e30) is a Python int past int64: unknown here, never a wrapped number.
      auto i = checked_to_int64(v.f);
      return i ? Value::integer(*i) : Value::unknown();
    }
    if (v.as<SymIntObj>()) return v;
    if (auto* s = str_of(v)) {
      const PyNumber r = parse_py_int(*s);
      if (r.kind == PyNumber::Kind::Invalid) {
        in.report(site, Severity::Error, "value-error",
                  "invalid literal for int() with base 10: " + repr(v));
      }
      return r.kind == PyNumber::Kind::Ok ? Value::integer(r.i) : Value::unknown();
    }
    return Value::unknown();
  });
  add("__new_float", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.empty()) return Value::real(0);
    const Value& v = a.pos[0];
    if (v.is_number()) return Value::real(v.as_float());
    if (auto* s = str_of(v)) {
      const PyNumber r = parse_py_float(*s);
      if (r.kind == PyNumber::Kind::Invalid) {
        in.report(site, Severity::Error, "value-error",
                  "could not convert string to float: " + repr(v));
      }
      return r.kind == PyNumber::Kind::Ok ? Value::real(r.f) : Value::unknown();
    }
    return Value::unknown();
  });
  add("__new_bool", [](Interpreter& in, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty()) return Value::boolean(false);
    bool known = true;
    bool t = in.truthy(a.pos[0], &known);
    return known ? Value::boolean(t) : Value::unknown();
  });
  add("__new_str", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty()) return make_str("");
    if (str_of(a.pos[0])) return a.pos[0];
    if (a.pos[0].is_unknown()) return Value::unknown();
    return make_str(repr(a.pos[0]));
  });
  auto to_items = [](Interpreter& in, CallArgs& a,
                     const Site& site) -> std::optional<std::vector<Value>> {
    if (a.pos.empty()) return std::vector<Value>{};
    return in.iterate(a.pos[0], site);
  };
  add("__new_list", [to_items](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    auto items = to_items(in, a, site);
    return items ? make_list(std::move(*items)) : Value::unknown();
  });
  add("__new_tuple", [to_items](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    auto items = to_items(in, a, site);
    return items ? make_tuple(std::move(*items)) : Value::unknown();
  });
  add("__new_set", [to_items](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    auto items = to_items(in, a, site);
    if (!items) return Value::unknown();
    std::vector<Value> uniq;
    for (auto& x : *items) {
      if (std::none_of(uniq.begin(), uniq.end(),
                       [&](const Value& y) { return values_equal(x, y); }))
        uniq.push_back(x);
    }
    return Value::obj(std::make_shared<SetObj>(std::move(uniq)));
  });
  n["__new_frozenset"] = n["__new_set"];
  add("__new_dict", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    auto d = std::make_shared<DictObj>();
    if (!a.pos.empty()) {
      if (auto* src = a.pos[0].as<DictObj>()) {
        for (auto& [k, v] : src->entries) d->set(k, v);
        d->open = src->open;
      } else if (auto items = in.iterate(a.pos[0], site)) {
        for (auto& kv : *items) {
          auto* pair = seq_items(kv);
          if (pair && pair->size() == 2) d->set((*pair)[0], (*pair)[1]);
        }
      } else {
        return Value::unknown();
      }
    }
    for (auto& [k, v] : a.kw) d->set(make_str(k), v);
    return Value::obj(d);
  });
  add("__new_type", [](Interpreter& in, CallArgs& a, const Site&) -> Value {
    if (a.pos.size() != 1) return Value::unknown();
    if (auto* inst = a.pos[0].as<InstanceObj>()) return inst->cls_value;
    const Value& v = a.pos[0];
    if (v.k == VK::Int) return in.native_class(NativeClass::Int);
    if (v.k == VK::Float) return in.native_class(NativeClass::Float);
    if (v.k == VK::Bool) return in.native_class(NativeClass::Bool);
    if (str_of(v)) return in.native_class(NativeClass::Str);
    if (v.as<ListObj>()) return in.native_class(NativeClass::List);
    if (v.as<TupleObj>()) return in.native_class(NativeClass::Tuple);
    if (v.as<DictObj>()) return in.native_class(NativeClass::Dict);
    return Value::unknown();
  });
  add("__new_object", [](Interpreter&, CallArgs&, const Site&) -> Value {
    return Value::obj(std::make_shared<OpaqueObj>("object"));
  });

  add("range", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    std::vector<int64_t> xs;
    for (auto& v : a.pos) {
      if (!v.is_int()) {
        if (!v.is_unknown() && !v.as<SymIntObj>() && !v.as<TensorObj>()) {
          in.report(site, Severity::Error, "type-error",
                    "range() takes integers, not `" + type_name(v) + "`");
        }
        return Value::unknown();
      }
      xs.push_back(v.as_int());
    }
    if (xs.empty() || xs.size() > 3) return Value::unknown();
    int64_t start = xs.size() >= 2 ? xs[0] : 0;
    int64_t stop = xs.size() >= 2 ? xs[1] : xs[0];
    int64_t step = xs.size() == 3 ? xs[2] : 1;
    if (step == 0) {
      in.report(site, Severity::Error, "invalid-argument", "range() arg 3 must not be zero");
      return Value::unknown();
    }
    return Value::obj(std::make_shared<RangeObj>(start, stop, step));
  });
  add("len", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.size() != 1) return Value::unknown();
    const Value& v = a.pos[0];
    if (auto* items = seq_items(v)) return Value::integer(static_cast<int64_t>(items->size()));
    if (auto* s = str_of(v)) return Value::integer(static_cast<int64_t>(s->size()));
    if (auto* d = v.as<DictObj>()) {
      if (d->open) return Value::unknown();
      return Value::integer(static_cast<int64_t>(d->entries.size()));
    }
    if (auto* st = v.as<SetObj>()) return Value::integer(static_cast<int64_t>(st->items.size()));
    if (auto* r = v.as<RangeObj>()) return Value::integer(r->size());
    if (auto* inst = v.as<InstanceObj>(); inst && inst->cell) {
      return Value::integer(static_cast<int64_t>(inst->cell->items.size()));
    }
    if (auto* inst = v.as<InstanceObj>(); inst && inst->mapping && !inst->cls->lookup("__len__")) {
      if (inst->mapping->open) return Value::unknown();
      return Value::integer(static_cast<int64_t>(inst->mapping->entries.size()));
    }
    if (auto* t = v.as<TensorObj>()) {
      if (!t->type.shape.ranked || t->type.shape.rank() == 0) return Value::unknown();
      Dim d = t->type.shape.dims[0];
      if (d.is_known()) return Value::integer(d.value());
      return Value::obj(std::make_shared<SymIntObj>(d));
    }
    if (v.is_unknown() || v.as<OpaqueObj>()) return Value::unknown();
    in.report(site, Severity::Error, "type-error",
              "object of type `" + type_name(v) + "` has no len()");
    return Value::unknown();
  });
  add("zip", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    std::vector<std::vector<Value>> seqs;
    for (auto& v : a.pos) {
      auto items = in.iterate(v, site);
      if (!items) return Value::unknown();
      seqs.push_back(std::move(*items));
    }
    size_t count = seqs.empty() ? 0 : SIZE_MAX;
    for (auto& sq : seqs) count = std::min(count, sq.size());
    std::vector<Value> out;
    for (size_t i = 0; i < count; ++i) {
      std::vector<Value> row;
      for (auto& s : seqs) row.push_back(s[i]);
      out.push_back(make_tuple(std::move(row)));
    }
    return make_list(std::move(out));
  });
  add("enumerate", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.empty()) return Value::unknown();
    auto items = in.iterate(a.pos[0], site);
    if (!items) return Value::unknown();
    int64_t start = 0;
    if (const Value* s = arg_at(a, 1, "start"); s && s->is_int()) start = s->as_int();
    std::vector<Value> out;
    for (size_t i = 0; i < items->size(); ++i) {
      out.push_back(make_tuple({Value::integer(start + static_cast<int64_t>(i)), (*items)[i]}));
    }
    return make_list(std::move(out));
  });
  add("round", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty() || !a.pos[0].is_number()) return Value::unknown();
    const Value* nd = arg_at(a, 1, "ndigits");
    double x = a.pos[0].as_float();
    if (!nd || nd->is_none()) {
      double r = std::nearbyint(x);  // banker's rounding, as Python
      // Python raises on inf/nan and gives an int beyond 64 bits for huge values: unknown here.
      if (!std::isfinite(r) || r < -9.2e18 || r > 9.2e18) return Value::unknown();
      return Value::integer(static_cast<int64_t>(r));
    }
    if (!nd->is_int()) return Value::unknown();
    double scale = std::pow(10.0, static_cast<double>(nd->as_int()));
    return Value::real(std::nearbyint(x * scale) / scale);
  });
  auto minmax = [](bool is_max) {
    return [is_max](Interpreter& in, CallArgs& a, const Site& site) -> Value {
      std::vector<Value> items;
      if (a.pos.size() == 1) {
        auto it = in.iterate(a.pos[0], site);
        if (!it) return Value::unknown();
        items = std::move(*it);
      } else {
        items = a.pos;
      }
      if (items.empty()) {
        if (const Value* d = a.find_kw("default")) return *d;
        in.report(site, Severity::Error, "invalid-argument",
                  std::string(is_max ? "max" : "min") + "() arg is an empty sequence");
        return Value::unknown();
      }
      Value best = items[0];
      for (size_t i = 1; i < items.size(); ++i) {
        Value c = in.compare(is_max ? ast::CmpKind::Gt : ast::CmpKind::Lt, items[i], best, site);
        if (c.k != VK::Bool) return Value::unknown();
        if (c.b) best = items[i];
      }
      return best;
    };
  };
  add("max", minmax(true));
  add("min", minmax(false));
  add("abs", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.empty()) return Value::unknown();
    const Value& v = a.pos[0];
    if (v.is_int()) return Value::integer(std::llabs(v.as_int()));
    if (v.k == VK::Float) return Value::real(std::fabs(v.f));
    if (v.as<TensorObj>()) return in.tensor_binop("ops.abs", v, Value::none(), site);
    return Value::unknown();
  });
  add("sum", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.empty()) return Value::unknown();
    auto items = in.iterate(a.pos[0], site);
    if (!items) return Value::unknown();
    Value acc = a.pos.size() > 1 ? a.pos[1] : Value::integer(0);
    for (auto& x : *items) acc = in.binop(ast::BinOpKind::Add, acc, x, site);
    return acc;
  });
  add("isinstance", [](Interpreter& in, CallArgs& a, const Site&) -> Value {
    if (a.pos.size() != 2) return Value::unknown();
    if (a.pos[0].is_unknown()) return Value::unknown();
    return Value::boolean(in.isinstance(a.pos[0], a.pos[1]));
  });
  add("issubclass", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.size() != 2) return Value::unknown();
    auto* c = a.pos[0].as<ClassObj>();
    auto* b = a.pos[1].as<ClassObj>();
    if (!c || !b) return Value::unknown();
    return Value::boolean(c->derives_from(b));
  });
  add("print", [](Interpreter&, CallArgs&, const Site&) { return Value::none(); });
  add("sorted", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.empty()) return Value::unknown();
    auto items = in.iterate(a.pos[0], site);
    if (!items || a.find_kw("key")) return Value::unknown();
    bool ok = true;
    std::stable_sort(items->begin(), items->end(), [&](const Value& x, const Value& y) {
      Value c = in.compare(ast::CmpKind::Lt, x, y, site);
      if (c.k != VK::Bool) {
        ok = false;
        return false;
      }
      return c.b;
    });
    if (!ok) return Value::unknown();
    if (const Value* r = a.find_kw("reverse"); r && r->k == VK::Bool && r->b)
      std::reverse(items->begin(), items->end());
    return make_list(std::move(*items));
  });
  add("reversed", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.empty()) return Value::unknown();
    auto items = in.iterate(a.pos[0], site);
    if (!items) return Value::unknown();
    std::reverse(items->begin(), items->end());
    return make_list(std::move(*items));
  });
  auto anyall = [](bool is_any) {
    return [is_any](Interpreter& in, CallArgs& a, const Site& site) -> Value {
      if (a.pos.empty()) return Value::unknown();
      auto items = in.iterate(a.pos[0], site);
      if (!items) return Value::unknown();
      for (auto& x : *items) {
        bool known = true;
        bool t = in.truthy(x, &known);
        if (!known) return Value::unknown();
        if (t == is_any) return Value::boolean(is_any);
      }
      return Value::boolean(!is_any);
    };
  };
  add("any", anyall(true));
  add("all", anyall(false));
  add("map", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.size() < 2) return Value::unknown();
    std::vector<std::vector<Value>> seqs;
    for (size_t i = 1; i < a.pos.size(); ++i) {
      auto items = in.iterate(a.pos[i], site);
      if (!items) return Value::unknown();
      seqs.push_back(std::move(*items));
    }
    size_t count = SIZE_MAX;
    for (auto& sq : seqs) count = std::min(count, sq.size());
    std::vector<Value> out;
    for (size_t i = 0; i < count; ++i) {
      CallArgs c;
      for (auto& s : seqs) {
        c.pos.push_back(s[i]);
        c.pos_ranges.push_back(site.range());
      }
      out.push_back(in.call(a.pos[0], c, site));
    }
    return make_list(std::move(out));
  });
  add("filter", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.size() != 2) return Value::unknown();
    auto items = in.iterate(a.pos[1], site);
    if (!items) return Value::unknown();
    std::vector<Value> out;
    for (auto& x : *items) {
      Value keep = x;
      if (!a.pos[0].is_none()) {
        CallArgs c;
        c.pos.push_back(x);
        c.pos_ranges.push_back(site.range());
        keep = in.call(a.pos[0], c, site);
      }
      bool known = true;
      bool t = in.truthy(keep, &known);
      if (!known) return Value::unknown();
      if (t) out.push_back(x);
    }
    return make_list(std::move(out));
  });
  add("getattr", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.size() < 2) return Value::unknown();
    auto* name = str_of(a.pos[1]);
    if (!name) return Value::unknown();
    if (a.pos.size() >= 3 && !in.hasattr(a.pos[0], *name))
      return open_instance(a.pos[0]) ? Value::unknown() : a.pos[2];
    return in.getattr(a.pos[0], *name, site, a.pos.size() < 3);
  });
  add("setattr", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.size() != 3) return Value::unknown();
    if (auto* name = str_of(a.pos[1])) {
      in.setattr(a.pos[0], *name, a.pos[2], site);
    } else if (auto* inst = a.pos[0].as<InstanceObj>()) {
      inst->open = true;  // an attribute whose name the evaluator does not know
    }
    return Value::none();
  });
  add("hasattr", [](Interpreter& in, CallArgs& a, const Site&) -> Value {
    if (a.pos.size() != 2) return Value::unknown();
    auto* name = str_of(a.pos[1]);
    if (!name || a.pos[0].is_unknown()) return Value::unknown();
    bool has = in.hasattr(a.pos[0], *name);
    if (!has && open_instance(a.pos[0])) return Value::unknown();
    return Value::boolean(has);
  });
  add("super", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.size() == 2) {
      if (auto* c = a.pos[0].as<ClassObj>())
        return Value::obj(std::make_shared<SuperObj>(c, a.pos[1]));
    }
    return Value::unknown();
  });
  add("divmod", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.size() != 2) return Value::unknown();
    return make_tuple({in.binop(ast::BinOpKind::FloorDiv, a.pos[0], a.pos[1], site),
                       in.binop(ast::BinOpKind::Mod, a.pos[0], a.pos[1], site)});
  });
  add("pow", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.size() < 2) return Value::unknown();
    return in.binop(ast::BinOpKind::Pow, a.pos[0], a.pos[1], site);
  });
  add("callable", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty()) return Value::unknown();
    auto k = a.pos[0].k == VK::Obj && a.pos[0].o ? a.pos[0].o->kind : OK::Opaque;
    return Value::boolean(k == OK::Function || k == OK::Builtin || k == OK::Class ||
                          k == OK::BoundMethod || k == OK::ApiFunction);
  });
  add("repr", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    return a.pos.empty() ? Value::unknown() : make_str(repr(a.pos[0]));
  });
  add("staticmethod", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty()) return Value::unknown();
    if (auto* fn = a.pos[0].as<FunctionObj>()) fn->is_static = true;
    return a.pos[0];
  });
  add("classmethod", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty()) return Value::unknown();
    if (auto* fn = a.pos[0].as<FunctionObj>()) fn->is_classmethod = true;
    return a.pos[0];
  });
  add("property", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty()) return Value::unknown();
    return Value::obj(std::make_shared<PropertyObj>(a.pos[0]));
  });
  for (const char* name :
       {"id",         "hash", "input",   "exit",   "quit", "vars",       "globals",
        "locals",     "iter", "next",    "format", "chr",  "ord",        "bytes",
        "memoryview", "exec", "compile", "dir",    "help", "__import__", "breakpoint"}) {
    add(name, [](Interpreter&, CallArgs&, const Site&) { return Value::unknown(); });
  }
  // eval of a (dotted) name, as config-driven builders do (mindyolo's `eval("ConvNormAct")`):
  // the name in the calling module. Any other expression is unknown.
  add("eval", [](Interpreter& in, CallArgs& a, const Site& s) -> Value {
    const std::string* src = a.pos.size() == 1 ? str_of(a.pos[0]) : nullptr;
    return src ? in.eval_name(*src, nullptr, s) : Value::unknown();
  });
  // A file object that remembers its path: yaml.safe_load / json.load of a config file the user
  // names read it as constants (configs.cpp); anything else about it is unknown.
  add("open", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    const Value* p = a.pos.empty() ? a.find_kw("file") : &a.pos[0];
    if (!p || !str_of(*p)) return Value::unknown();
    auto f = std::make_shared<OpaqueObj>("file");
    f->attrs.set(make_str("name"), *p);
    Value file = Value::obj(f);
    // f.read() of a named config: its text (a constant); of any other file: unknown.
    std::weak_ptr<Object> weak = f;
    f->attrs.set(make_str("read"),
                 Value::obj(std::make_shared<BuiltinObj>(
                     "read", [weak](Interpreter& in, CallArgs&, const Site& s) -> Value {
                       auto self = weak.lock();
                       if (!self) return Value::unknown();
                       std::string shown;
                       auto text = in.config_text(Value::obj(self), s, &shown);
                       return text ? make_str(*text) : Value::unknown();
                     })));
    return file;
  });
  add("slice", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    Value s = a.pos.size() >= 2 ? a.pos[0] : Value::none();
    Value e = a.pos.size() >= 2 ? a.pos[1] : (a.pos.empty() ? Value::none() : a.pos[0]);
    Value st = a.pos.size() >= 3 ? a.pos[2] : Value::none();
    return Value::obj(std::make_shared<SliceObj>(s, e, st));
  });

  // ---- math ----
  add("math.sqrt", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::sqrt(x); }, false);
  });
  add("math.floor", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::floor(x); }, true);
  });
  add("math.ceil", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::ceil(x); }, true);
  });
  add("math.trunc", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::trunc(x); }, true);
  });
  add("math.exp", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::exp(x); }, false);
  });
  add("math.log2", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::log2(x); }, false);
  });
  add("math.log10", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::log10(x); }, false);
  });
  add("math.fabs", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::fabs(x); }, false);
  });
  add("math.sin", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::sin(x); }, false);
  });
  add("math.cos", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::cos(x); }, false);
  });
  add("math.tanh", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::tanh(x); }, false);
  });
  add("math.erf", [](Interpreter&, CallArgs& a, const Site&) {
    return math_fn1(
        a, [](double x) { return std::erf(x); }, false);
  });
  add("math.log", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty() || !a.pos[0].is_number()) return Value::unknown();
    double x = std::log(a.pos[0].as_float());
    if (a.pos.size() > 1 && a.pos[1].is_number()) x /= std::log(a.pos[1].as_float());
    return Value::real(x);
  });
  add("math.pow", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.size() != 2 || !a.pos[0].is_number() || !a.pos[1].is_number())
      return Value::unknown();
    return Value::real(std::pow(a.pos[0].as_float(), a.pos[1].as_float()));
  });
  add("math.gcd", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.size() != 2 || !a.pos[0].is_int() || !a.pos[1].is_int()) return Value::unknown();
    return Value::integer(std::gcd(a.pos[0].as_int(), a.pos[1].as_int()));
  });
  add("math.prod", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    if (a.pos.empty()) return Value::unknown();
    auto items = in.iterate(a.pos[0], site);
    if (!items) return Value::unknown();
    Value acc = Value::integer(1);
    for (auto& x : *items) acc = in.binop(ast::BinOpKind::Mul, acc, x, site);
    return acc;
  });
  add("math.isclose", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.size() < 2 || !a.pos[0].is_number() || !a.pos[1].is_number()) return Value::unknown();
    return Value::boolean(std::fabs(a.pos[0].as_float() - a.pos[1].as_float()) < 1e-9);
  });
  n["math.pi"] = Value::real(M_PI);
  n["math.e"] = Value::real(M_E);
  n["math.inf"] = Value::real(INFINITY);
  n["math.nan"] = Value::real(NAN);

  // ---- numpy: constant arrays ----
  // Shape and dtype always; element values too when small and fully known (npvalues.h): a fill
  // for uniform arrays, elements up to npv::kMaxElements, nothing beyond.
  auto np_fill = [](DType dflt, std::optional<double> value) {
    return [dflt, value](Interpreter&, CallArgs& a, const Site&) -> Value {
      auto s = shape_arg(arg_at(a, 0, "shape"));
      if (!s) return Value::unknown();
      DType d = dtype_arg(a.find_kw("dtype")).value_or(dflt);
      if (a.pos.size() > 1) d = dtype_arg(&a.pos[1]).value_or(d);
      Value r = ndarray(*s, d);
      r.as<TensorObj>()->fill = value;
      return r;
    };
  };
  add("np.ones", np_fill(DType::Float64, 1.0));
  add("np.zeros", np_fill(DType::Float64, 0.0));
  add("np.empty", np_fill(DType::Float64, std::nullopt));
  add("np.full", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    auto s = shape_arg(arg_at(a, 0, "shape"));
    if (!s) return Value::unknown();
    const Value* fill = arg_at(a, 1, "fill_value");
    DType d = fill && fill->is_int() && fill->k != VK::Bool ? DType::Int64 : DType::Float64;
    d = dtype_arg(arg_at(a, 2, "dtype")).value_or(d);
    Value r = ndarray(*s, d);
    if (fill && fill->is_number()) r.as<TensorObj>()->fill = npv::to_dtype(d, fill->as_float());
    return r;
  });
  auto np_like = [](std::optional<double> value) {
    return [value](Interpreter&, CallArgs& a, const Site&) -> Value {
      if (a.pos.empty()) return Value::unknown();
      auto* t = a.pos[0].as<TensorObj>();
      if (!t) return Value::unknown();
      DType d = dtype_arg(a.find_kw("dtype")).value_or(t->type.dtype);
      Value r = ndarray(t->type.shape, d);
      if (value) r.as<TensorObj>()->fill = npv::to_dtype(d, *value);
      return r;
    };
  };
  add("np.ones_like", np_like(1.0));
  add("np.zeros_like", np_like(0.0));
  add("np.empty_like", np_like(std::nullopt));
  add("np.arange", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    std::vector<double> xs;
    bool all_int = true;
    for (auto& v : a.pos) {
      if (!v.is_number()) return Value::unknown();
      all_int &= v.is_int();
      xs.push_back(v.as_float());
    }
    if (xs.empty() || xs.size() > 3) return Value::unknown();
    double start = xs.size() >= 2 ? xs[0] : 0, stop = xs.size() >= 2 ? xs[1] : xs[0];
    double step = xs.size() == 3 ? xs[2] : 1;
    if (step == 0) return Value::unknown();
    auto count = static_cast<int64_t>(std::max(0.0, std::ceil((stop - start) / step)));
    DType d = dtype_arg(a.find_kw("dtype")).value_or(all_int ? DType::Int64 : DType::Float64);
    Value r = ndarray(Shape::of({count}), d);
    if (count <= npv::element_limit()) {
      std::vector<double> vals(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) vals[static_cast<size_t>(i)] = start + i * step;
      npv::set_values(*r.as<TensorObj>(), std::move(vals));
    }
    return r;
  });
  // np.unique(values, return_counts=...): sorted distinct elements (RegNet's stage widths).
  add("np.unique", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty()) return Value::unknown();
    auto* t = a.pos[0].as<TensorObj>();
    if (!t || !t->values) return Value::unknown();
    std::vector<double> v(*t->values);
    std::sort(v.begin(), v.end());
    std::vector<double> uniq;
    std::vector<double> counts;
    for (double x : v) {
      if (!uniq.empty() && uniq.back() == x) {
        counts.back() += 1;
      } else {
        uniq.push_back(x);
        counts.push_back(1);
      }
    }
    auto count = static_cast<int64_t>(uniq.size());
    Value u = ndarray(Shape::of({count}), t->type.dtype);
    npv::set_values(*u.as<TensorObj>(), std::move(uniq));
    const Value* rc = a.find_kw("return_counts");
    if (!rc || rc->k != VK::Bool || !rc->b) return u;
    Value c = ndarray(Shape::of({count}), DType::Int64);
    npv::set_values(*c.as<TensorObj>(), std::move(counts));
    return make_tuple({u, c});
  });
  // np.meshgrid(*xi, indexing='xy'): one array per input, each input (flattened) along its own
  // axis; 'xy' swaps the first two axes (numpy's Cartesian indexing). Elements are computed when
  // the inputs' are known (Swin V2's relative coordinate tables).
  add("np.meshgrid", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    bool xy = true;
    if (const Value* ix = a.find_kw("indexing")) {
      const auto* text = str_of(*ix);
      if (text == nullptr || (*text != "xy" && *text != "ij")) return Value::unknown();
      xy = *text == "xy";
    }
    struct Axis {
      DType dtype;
      int64_t len;
      std::optional<std::vector<double>> values;
    };
    std::vector<Axis> axes;
    for (const Value& v : a.pos) {
      if (auto* t = v.as<TensorObj>()) {
        std::vector<int64_t> in_dims;
        if (!t->type.shape.ranked) return Value::unknown();
        for (const Dim& d : t->type.shape.dims) {
          if (!d.is_known()) return Value::unknown();
          in_dims.push_back(d.value());
        }
        const auto count = checked_numel(in_dims);
        if (!count) return Value::unknown();
        Axis ax{t->type.dtype, *count, std::nullopt};
        if (t->values && static_cast<int64_t>(t->values->size()) == *count) {
          ax.values = *t->values;
        } else if (t->fill) {
          ax.values = std::vector<double>(static_cast<size_t>(*count), *t->fill);
        }
        axes.push_back(std::move(ax));
      } else if (const auto* items = seq_items(v)) {
        Axis ax{DType::Int64, static_cast<int64_t>(items->size()), std::vector<double>{}};
        for (const Value& x : *items) {
          if (!x.is_number()) return Value::unknown();
          if (!x.is_int()) ax.dtype = DType::Float64;
          ax.values->push_back(x.as_float());
        }
        axes.push_back(std::move(ax));
      } else {
        return Value::unknown();
      }
    }
    const size_t rank = axes.size();
    // Output axis of input k.
    auto axis_of = [&](size_t k) -> size_t {
      if (!xy || rank < 2 || k > 1) return k;
      return 1 - k;
    };
    std::vector<int64_t> dims(rank);
    for (size_t k = 0; k < rank; ++k) dims[axis_of(k)] = axes[k].len;
    int64_t total = 1;
    for (int64_t d : dims) {
      auto p = checked_mul(total, d);
      if (!p) return Value::unknown();
      total = *p;
    }
    std::vector<Value> outs;
    for (size_t k = 0; k < rank; ++k) {
      Value r = ndarray(Shape::of(dims), axes[k].dtype);
      if (axes[k].values && total <= npv::element_limit()) {
        const size_t ax = axis_of(k);
        int64_t inner = 1;
        for (size_t j = ax + 1; j < rank; ++j) inner *= dims[j];
        std::vector<double> vals(static_cast<size_t>(total));
        for (int64_t o = 0; o < total; ++o) {
          const int64_t i = (o / inner) % dims[ax];
          vals[static_cast<size_t>(o)] = (*axes[k].values)[static_cast<size_t>(i)];
        }
        npv::set_values(*r.as<TensorObj>(), std::move(vals));
      }
      outs.push_back(std::move(r));
    }
    return make_tuple(std::move(outs));
  });
  add("np.linspace", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    const Value* num = arg_at(a, 2, "num");
    int64_t count = num && num->is_int() ? num->as_int() : 50;
    if (count < 0) return Value::unknown();
    DType d = dtype_arg(arg_at(a, 5, "dtype")).value_or(DType::Float64);
    Value r = ndarray(Shape::of({count}), d);
    const Value* lo = arg_at(a, 0, "start");
    const Value* hi = arg_at(a, 1, "stop");
    const Value* endpoint = arg_at(a, 3, "endpoint");
    bool ep = !endpoint || endpoint->k != VK::Bool || endpoint->b;
    if (lo && hi && lo->is_number() && hi->is_number() && count <= npv::element_limit()) {
      // numpy: start + arange(num) * step, the last element set to stop exactly.
      double x0 = lo->as_float(), x1 = hi->as_float();
      int64_t div = ep ? count - 1 : count;
      double step = div > 0 ? (x1 - x0) / static_cast<double>(div) : 0;
      std::vector<double> vals(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) vals[static_cast<size_t>(i)] = x0 + i * step;
      if (ep && count > 1) vals.back() = x1;
      npv::set_values(*r.as<TensorObj>(), std::move(vals));
    }
    return r;
  });
  add("np.eye", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty() || !a.pos[0].is_int()) return Value::unknown();
    int64_t rows = a.pos[0].as_int();
    const Value* m = arg_at(a, 1, "M");
    int64_t cols = m && m->is_int() ? m->as_int() : rows;
    const Value* kv = arg_at(a, 2, "k");
    int64_t k = kv && kv->is_int() ? kv->as_int() : 0;
    Value r =
        ndarray(Shape::of({rows, cols}), dtype_arg(arg_at(a, 3, "dtype")).value_or(DType::Float64));
    if (rows >= 0 && cols >= 0 && rows <= npv::element_limit() &&
        rows * cols <= npv::element_limit()) {
      std::vector<double> vals(static_cast<size_t>(rows * cols), 0.0);
      for (int64_t i = 0; i < rows; ++i)
        if (i + k >= 0 && i + k < cols) vals[static_cast<size_t>(i * cols + i + k)] = 1;
      npv::set_values(*r.as<TensorObj>(), std::move(vals));
    }
    return r;
  });
  n["np.identity"] = n["np.eye"];
  auto np_array = [](Interpreter& in, CallArgs& a, const Site&) -> Value {
    if (a.pos.empty()) return Value::unknown();
    const Value& v = a.pos[0];
    std::optional<DType> want = dtype_arg(arg_at(a, 1, "dtype"));
    if (auto* t = v.as<TensorObj>()) {
      Value r = ndarray(t->type.shape, want.value_or(t->type.dtype));
      npv::same_order(v, *r.as<TensorObj>());
      return r;
    }
    if (v.is_number()) {
      Value r = ndarray(Shape{}, want.value_or(v.k == VK::Float  ? DType::Float64
                                               : v.k == VK::Bool ? DType::Bool
                                                                 : DType::Int64));
      r.as<TensorObj>()->fill = npv::to_dtype(r.as<TensorObj>()->type.dtype, v.as_float());
      return r;
    }
    std::vector<int64_t> dims;
    bool any_float = false;
    bool all_bool = true;
    std::vector<double> vals;  // the elements, row-major (lists are small: they are source text)
    std::function<bool(const Value&, size_t)> walk = [&](const Value& x, size_t depth) -> bool {
      if (x.is_number()) {
        any_float |= x.k == VK::Float;
        all_bool &= x.k == VK::Bool;
        vals.push_back(x.as_float());
        return depth == dims.size();
      }
      auto* items = seq_items(x);
      if (!items) return false;
      if (depth == dims.size())
        dims.push_back(static_cast<int64_t>(items->size()));
      else if (dims[depth] != static_cast<int64_t>(items->size()))
        return false;
      for (auto& y : *items) {
        if (!walk(y, depth + 1)) return false;
      }
      return true;
    };
    (void)in;
    if (!walk(v, 0)) return Value::unknown();
    DType d = want.value_or(any_float                   ? DType::Float64
                            : all_bool && !vals.empty() ? DType::Bool
                                                        : DType::Int64);
    Value r = ndarray(Shape::of(dims), d);
    npv::set_values(*r.as<TensorObj>(), std::move(vals));
    return r;
  };
  add("np.array", np_array);
  add("np.asarray", np_array);
  auto np_random = [](size_t shape_from, DType d) {
    return [shape_from, d](Interpreter&, CallArgs& a, const Site&) -> Value {
      if (shape_from == 0) {  // randn(d0, d1, ...)
        Shape s;
        for (auto& v : a.pos) {
          if (!v.is_int()) return Value::unknown();
          s.dims.push_back(Dim::known(v.as_int()));
        }
        return ndarray(s, d);
      }
      const Value* size = arg_at(a, shape_from, "size");
      if (!size || size->is_none()) return Value::real(0.5);
      auto s = shape_arg(size);
      return s ? ndarray(*s, d) : Value::unknown();
    };
  };
  add("np.random.randn", np_random(0, DType::Float64));
  add("np.random.rand", np_random(0, DType::Float64));
  add("np.random.random", [](Interpreter&, CallArgs& a, const Site&) -> Value {
    auto s = shape_arg(arg_at(a, 0, "size"));
    return s ? ndarray(*s, DType::Float64) : Value::unknown();
  });
  n["np.random.random_sample"] = n["np.random.random"];
  n["np.random.standard_normal"] = n["np.random.random"];
  add("np.random.uniform", np_random(2, DType::Float64));
  add("np.random.normal", np_random(2, DType::Float64));
  add("np.random.randint", np_random(2, DType::Int64));
  // np.load(file): a .npy file's type from its header (the data is never read here); the array
  // remembers the file, so a NumpySlicesDataset over it is read by the runtime. Looked for in
  // the training data directory by its name when one is given, else where the program names it.
  // Anything else (an .npz, a missing file, a path not known statically) is unknown.
  add("np.load", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    const Value* f = arg_at(a, 0, "file");
    const std::string* path = f ? str_of(*f) : nullptr;
    if (path == nullptr || !path->ends_with(".npy")) return Value::unknown();
    namespace fs = std::filesystem;
    fs::path p(*path);
    if (in.options.data_dir) {
      p = *in.options.data_dir / p.filename();
    } else if (p.is_relative() && !site.file().empty()) {
      p = fs::path(site.file()).parent_path() / p;
    }
    std::error_code ec;
    const fs::path abs = fs::absolute(p, ec).lexically_normal();
    if (ec) return Value::unknown();
    const auto info = runtime::read_npy_header(abs);
    if (!info) return Value::unknown();
    const auto d = dtype_from_name(runtime::data_type_name(info->dtype));
    if (!d) return Value::unknown();
    Value r = ndarray(Shape::of(info->shape), *d);
    r.as<TensorObj>()->file = std::make_shared<const std::string>(abs.string());
    return r;
  });
  add("np.random.seed", [](Interpreter&, CallArgs&, const Site&) { return Value::none(); });
  add("np.prod", n["math.prod"].as<BuiltinObj>()->fn);
  // np.sqrt, np.exp, np.log, np.floor, np.ceil...: numpy_function (arrays and scalars).
  n["np.pi"] = Value::real(M_PI);
  n["np.e"] = Value::real(M_E);
  n["np.inf"] = Value::real(INFINITY);
  n["np.nan"] = Value::real(NAN);
  n["np.newaxis"] = Value::none();
  for (const char* dn : {"float32", "float16", "float64", "int32", "int64", "int8", "int16",
                         "uint8", "bool_", "double", "half", "single"}) {
    n[std::string("np.") + dn] = dtype_value(*dtype_from_name(dn));
  }
  n["np.float_"] = dtype_value(DType::Float64);
}

namespace {
Value make_module(const std::string& name, const std::string& prefix,
                  const std::unordered_map<std::string, Value>& natives) {
  auto m = std::make_shared<ModuleObj>();
  m->name = name;
  for (const auto& [k, v] : natives) {
    if (k.rfind(prefix, 0) == 0 && k.find('.', prefix.size()) == std::string::npos) {
      m->globals.set(make_str(k.substr(prefix.size())), v);
    }
  }
  return Value::obj(m);
}
}  // namespace

// numpy functions without an explicit model above: elementwise ones keep the array's shape, the
// rest reuse the MindSpore registry rule of the same operation (constant-folded, no graph node).
Value Interpreter::numpy_function(std::string_view name) {
  static const std::unordered_map<std::string_view, std::string_view> kViaRegistry = {
      {"concatenate", "ops.concat"},
      {"stack", "ops.stack"},
      {"expand_dims", "ops.expand_dims"},
      {"reshape", "ops.reshape"},
      {"transpose", "ops.transpose"},
      {"squeeze", "ops.squeeze"},
      {"tile", "ops.tile"},
      {"broadcast_to", "ops.broadcast_to"},
      {"where", "ops.where"},
      {"maximum", "ops.maximum"},
      {"minimum", "ops.minimum"},
      {"matmul", "ops.matmul"},
      {"dot", "ops.matmul"},
      {"sum", "ops.sum"},
      {"mean", "ops.mean"},
      {"multiply", "ops.mul"},
      {"add", "ops.add"},
      {"subtract", "ops.sub"},
      {"divide", "ops.div"},
      {"outer", "ops.outer"}};
  static const std::unordered_set<std::string_view> kElementwise = {"sin",
                                                                    "cos",
                                                                    "tan",
                                                                    "tanh",
                                                                    "exp",
                                                                    "log",
                                                                    "sqrt",
                                                                    "abs",
                                                                    "absolute",
                                                                    "triu",
                                                                    "tril",
                                                                    "clip",
                                                                    "round",
                                                                    "floor",
                                                                    "ceil",
                                                                    "negative",
                                                                    "square",
                                                                    "sign",
                                                                    "log1p",
                                                                    "expm1",
                                                                    "log2",
                                                                    "log10",
                                                                    "arcsin",
                                                                    "arccos",
                                                                    "arctan",
                                                                    "sinh",
                                                                    "cosh",
                                                                    "copy",
                                                                    "float32",
                                                                    "nan_to_num",
                                                                    "ascontiguousarray"};
  std::string n(name);
  if (n == "power") {  // np.power(a, b): the ** operator's rule, numpy's dtype and values
    return Value::obj(std::make_shared<BuiltinObj>(
        "numpy.power", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
          if (a.pos.size() != 2) return Value::unknown();
          return in.binop(ast::BinOpKind::Pow, a.pos[0], a.pos[1], site);
        }));
  }
  if (kElementwise.count(name)) {
    bool keeps_dtype = n == "abs" || n == "absolute" || n == "triu" || n == "tril" || n == "clip" ||
                       n == "negative" || n == "square" || n == "sign" || n == "copy" ||
                       n == "ascontiguousarray" || n == "nan_to_num";
    Value math_fn = builtin("math." + n);
    return Value::obj(std::make_shared<BuiltinObj>(
        "numpy." + n,
        [keeps_dtype, math_fn, n](Interpreter& in, CallArgs& a, const Site& site) -> Value {
          if (a.pos.empty()) return Value::unknown();
          if (auto* t = a.pos[0].as<TensorObj>()) {
            DType d = n == "float32" ? DType::Float32
                      : keeps_dtype  ? t->type.dtype
                      : n == "floor" || n == "ceil" || n == "round"
                          ? (is_floating(t->type.dtype) ? t->type.dtype : DType::Float64)
                          : npv::float_ufunc_dtype(t->type.dtype);
            auto out = std::make_shared<TensorObj>(TensorType{t->type.shape, d});
            out->is_numpy = true;
            if (n == "triu" || n == "tril") {
              const Value* k = arg_at(a, 1, "k");
              if (!k || (k->is_int() && k->k != VK::Bool))
                npv::triangle(a.pos[0], k ? k->as_int() : 0, n == "triu", *out);
            } else if (n == "float32") {
              npv::same_order(a.pos[0], *out);
            } else if (n != "clip" && n != "nan_to_num" && (n != "round" || a.pos.size() == 1)) {
              npv::unary(n, a.pos[0], *out);
            }
            return Value::obj(out);
          }
          if (!math_fn.is_unknown()) return in.call(math_fn, a, site);
          return Value::unknown();
        }));
  }
  auto it = kViaRegistry.find(name);
  if (it != kViaRegistry.end()) {
    if (const ApiEntry* e = Registry::instance().find(it->second, options.mindspore_version)) {
      return Value::obj(std::make_shared<BuiltinObj>(
          "numpy." + n, [e, n](Interpreter& in, CallArgs& args, const Site& site) -> Value {
            // numpy's keyword names where the registry function spells them otherwise
            // (np.sum(a, axis, keepdims=) is ops.sum(input, dim, keepdim=)).
            CallArgs a = args;
            for (auto& [key, value] : a.kw) {
              if (n == "sum" && key == "axis") key = "dim";
              if (n == "sum" && key == "keepdims") key = "keepdim";
              if (n == "mean" && key == "keepdims") key = "keep_dims";
            }
            bool any_tensor = false;
            for (auto& v : a.pos) {
              any_tensor |= v.as<TensorObj>() != nullptr;
              if (auto* items = seq_items(v)) {
                for (auto& x : *items) any_tensor |= x.as<TensorObj>() != nullptr;
              }
            }
            if (!any_tensor) return Value::unknown();
            GraphBuilder* saved = in.graph;
            in.graph = nullptr;  // numpy never adds graph nodes
            Value r;
            try {
              r = in.call_api_function(e, a, site, nullptr);
            } catch (...) {
              in.graph = saved;
              throw;
            }
            in.graph = saved;
            if (auto* t = r.as<TensorObj>()) {
              t->is_numpy = true;
              const Value* axis_kw =
                  args.find_kw(n == "transpose" ? "axes" : "axis");  // numpy's name
              npv::registry_function(e->name, a.pos, axis_kw, *t);
              // A reduction to one element is a numpy scalar (np.sum(a), np.mean(a, axis=...)):
              // a Python number when its value is known, as an element of an array is.
              if (auto scalar = npv::as_numpy_scalar(*t)) return *scalar;
            }
            return r;
          }));
    }
  }
  return Value::obj(std::make_shared<BuiltinObj>(
      "numpy." + n, [](Interpreter&, CallArgs&, const Site&) { return Value::unknown(); }));
}

Value Interpreter::math_module() {
  auto it = natives_.find("module:math");
  if (it != natives_.end()) return it->second;
  Value m = make_module("math", "math.", natives_);
  natives_["module:math"] = m;
  return m;
}

Value Interpreter::numpy_module() {
  auto it = natives_.find("module:numpy");
  if (it != natives_.end()) return it->second;
  Value m = make_module("numpy", "np.", natives_);
  Value random = make_module("numpy.random", "np.random.", natives_);
  m.as<ModuleObj>()->globals.set(make_str("random"), random);
  natives_["module:numpy"] = m;
  natives_["module:numpy.random"] = random;
  return m;
}

std::optional<Value> Interpreter::builtin_method(const Value& obj, std::string_view name) {
  auto method = [&](BuiltinFn fn) {
    return Value::obj(std::make_shared<BuiltinObj>(std::string(name), std::move(fn), obj));
  };
  Value self = obj;
  std::string nm(name);
  if (auto* l = obj.as<ListObj>()) {
    if (nm == "append")
      return method([l](Interpreter&, CallArgs& a, const Site&) {
        if (!a.pos.empty()) l->items.push_back(a.pos[0]);
        charge_value_bytes(kItemBytes);
        return Value::none();
      });
    if (nm == "extend")
      return method([l](Interpreter& in, CallArgs& a, const Site& s) {
        if (!a.pos.empty()) {
          if (auto it = in.iterate(a.pos[0], s)) {
            l->items.insert(l->items.end(), it->begin(), it->end());
            charge_value_bytes(it->size() * kItemBytes);
          }
        }
        return Value::none();
      });
    if (nm == "insert")
      return method([l](Interpreter&, CallArgs& a, const Site&) {
        if (a.pos.size() == 2 && a.pos[0].is_int()) {
          auto n = static_cast<int64_t>(l->items.size());
          int64_t i = a.pos[0].as_int();
          if (i < 0) i = std::max<int64_t>(0, i + n);
          i = std::min(i, n);
          l->items.insert(l->items.begin() + i, a.pos[1]);
        }
        return Value::none();
      });
    if (nm == "pop")
      return method([l](Interpreter& in, CallArgs& a, const Site& s) -> Value {
        if (l->items.empty()) {
          in.report(s, Severity::Error, "index-error", "pop from empty list");
          return Value::unknown();
        }
        auto n = static_cast<int64_t>(l->items.size());
        int64_t i = a.pos.empty() || !a.pos[0].is_int() ? n - 1 : a.pos[0].as_int();
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::unknown();
        Value v = l->items[static_cast<size_t>(i)];
        l->items.erase(l->items.begin() + i);
        return v;
      });
    if (nm == "remove")
      return method([l](Interpreter&, CallArgs& a, const Site&) {
        if (!a.pos.empty()) {
          auto it = std::find_if(l->items.begin(), l->items.end(),
                                 [&](const Value& v) { return values_equal(v, a.pos[0]); });
          if (it != l->items.end()) l->items.erase(it);
        }
        return Value::none();
      });
    if (nm == "reverse")
      return method([l](Interpreter&, CallArgs&, const Site&) {
        std::reverse(l->items.begin(), l->items.end());
        return Value::none();
      });
    if (nm == "copy")
      return method([l](Interpreter&, CallArgs&, const Site&) { return make_list(l->items); });
    if (nm == "clear")
      return method([l](Interpreter&, CallArgs&, const Site&) {
        l->items.clear();
        return Value::none();
      });
    if (nm == "sort")
      return method([l, self](Interpreter& in, CallArgs& a, const Site& s) {
        CallArgs c;
        c.pos.push_back(self);
        c.kw = a.kw;
        Value sorted = in.call(in.builtin("sorted"), c, s);
        if (auto* items = seq_items(sorted)) l->items = *items;
        return Value::none();
      });
  }
  if (seq_items(obj)) {
    const auto* items = seq_items(obj);
    if (nm == "index")
      return method([items](Interpreter& in, CallArgs& a, const Site& s) -> Value {
        for (size_t i = 0; i < items->size(); ++i) {
          if (!a.pos.empty() && values_equal((*items)[i], a.pos[0]))
            return Value::integer(static_cast<int64_t>(i));
        }
        in.report(s, Severity::Error, "value-error", "value is not in the sequence");
        return Value::unknown();
      });
    if (nm == "count")
      return method([items](Interpreter&, CallArgs& a, const Site&) -> Value {
        int64_t c = 0;
        for (auto& x : *items) c += !a.pos.empty() && values_equal(x, a.pos[0]) ? 1 : 0;
        return Value::integer(c);
      });
  }
  if (auto* d = obj.as<DictObj>()) {
    if (nm == "get")
      return method([d](Interpreter&, CallArgs& a, const Site&) -> Value {
        if (a.pos.empty()) return Value::unknown();
        if (Value* v = d->find(a.pos[0])) return *v;
        if (d->open || a.pos[0].is_unknown()) return Value::unknown();
        return a.pos.size() > 1 ? a.pos[1] : Value::none();
      });
    auto collect = [d](int which) {
      return [d, which](Interpreter&, CallArgs&, const Site&) -> Value {
        if (d->open) return Value::unknown();
        std::vector<Value> out;
        for (auto& [k, v] : d->entries)
          out.push_back(which == 0 ? k : which == 1 ? v : make_tuple({k, v}));
        return make_list(std::move(out));
      };
    };
    if (nm == "keys") return method(collect(0));
    if (nm == "values") return method(collect(1));
    if (nm == "items") return method(collect(2));
    if (nm == "update")
      return method([d](Interpreter&, CallArgs& a, const Site&) {
        if (!a.pos.empty()) {
          if (auto* o = a.pos[0].as<DictObj>()) {
            for (auto& [k, v] : o->entries) d->set(k, v);
            if (o->open) d->open = true;
          } else if (!in_seq_of_pairs(a.pos[0], d)) {
            d->open = true;  // update(mapping the evaluator does not know)
          }
        }
        if (a.open) d->open = true;
        for (auto& [k, v] : a.kw) d->set(make_str(k), v);
        return Value::none();
      });
    if (nm == "pop")
      return method([d](Interpreter&, CallArgs& a, const Site&) -> Value {
        if (a.pos.empty()) return Value::unknown();
        if (Value* v = d->find(a.pos[0])) {
          Value r = *v;
          d->erase(a.pos[0]);
          return r;
        }
        if (d->open || a.pos[0].is_unknown()) return Value::unknown();
        return a.pos.size() > 1 ? a.pos[1] : Value::unknown();
      });
    if (nm == "setdefault")
      return method([d](Interpreter&, CallArgs& a, const Site&) -> Value {
        if (a.pos.empty()) return Value::unknown();
        if (Value* v = d->find(a.pos[0])) return *v;
        if (d->open || a.pos[0].is_unknown()) return Value::unknown();
        Value dv = a.pos.size() > 1 ? a.pos[1] : Value::none();
        d->set(a.pos[0], dv);
        return dv;
      });
    if (nm == "copy")
      return method([d](Interpreter&, CallArgs&, const Site&) {
        auto c = std::make_shared<DictObj>();
        for (const auto& [k, v] : d->entries) c->set(k, v);
        c->open = d->open;
        return Value::obj(c);
      });
  }
  if (auto* st = obj.as<SetObj>()) {
    if (nm == "add")
      return method([st](Interpreter&, CallArgs& a, const Site&) {
        if (!a.pos.empty() && std::none_of(st->items.begin(), st->items.end(), [&](const Value& v) {
              return values_equal(v, a.pos[0]);
            }))
          st->items.push_back(a.pos[0]);
        return Value::none();
      });
  }
  if (auto* s = str_of(obj)) {
    std::string str = *s;
    if (nm == "format")
      return method([str](Interpreter&, CallArgs& a, const Site&) -> Value {
        std::string out;
        size_t next = 0;
        for (size_t i = 0; i < str.size(); ++i) {
          if (str[i] == '{' && i + 1 < str.size() && str[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
          }
          if (str[i] == '}' && i + 1 < str.size() && str[i + 1] == '}') {
            out += '}';
            ++i;
            continue;
          }
          if (str[i] != '{') {
            out += str[i];
            continue;
          }
          size_t end = str.find('}', i);
          if (end == std::string::npos) return Value::unknown();
          std::string field = str.substr(i + 1, end - i - 1);
          if (auto colon = field.find(':'); colon != std::string::npos) field.resize(colon);
          const Value* v = nullptr;
          if (field.empty())
            v = next < a.pos.size() ? &a.pos[next++] : nullptr;
          else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
            size_t k = 0;  // the leading digits ("{0.x}" reads argument 0)
            auto [end2, ec] = std::from_chars(field.data(), field.data() + field.size(), k);
            if (ec != std::errc()) return Value::unknown();  // an index beyond size_t
            v = k < a.pos.size() ? &a.pos[k] : nullptr;
          } else {
            v = a.find_kw(field);
          }
          if (!v || v->is_unknown()) return Value::unknown();
          if (auto* vs = str_of(*v))
            out += *vs;
          else
            out += repr(*v);
          i = end;
        }
        return make_str(out);
      });
    if (nm == "join")
      return method([str](Interpreter& in, CallArgs& a, const Site& site) -> Value {
        if (a.pos.empty()) return Value::unknown();
        auto items = in.iterate(a.pos[0], site);
        if (!items) return Value::unknown();
        std::string out;
        for (size_t i = 0; i < items->size(); ++i) {
          auto* p = str_of((*items)[i]);
          if (!p) return Value::unknown();
          if (i) out += str;
          out += *p;
        }
        return make_str(out);
      });
    auto str_fn = [&](std::function<Value(const std::string&, CallArgs&)> fn) {
      return method([str, fn](Interpreter&, CallArgs& a, const Site&) { return fn(str, a); });
    };
    if (nm == "upper")
      return str_fn([](const std::string& x, CallArgs&) {
        std::string r = x;
        for (auto& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return make_str(r);
      });
    if (nm == "lower")
      return str_fn([](const std::string& x, CallArgs&) { return make_str(text::lower(x)); });
    if (nm == "strip" || nm == "lstrip" || nm == "rstrip") {
      bool l = nm != "rstrip", r = nm != "lstrip";
      return str_fn([l, r](const std::string& x, CallArgs&) {
        size_t b = 0, e = x.size();
        while (l && b < e && std::isspace(static_cast<unsigned char>(x[b]))) ++b;
        while (r && e > b && std::isspace(static_cast<unsigned char>(x[e - 1]))) --e;
        return make_str(x.substr(b, e - b));
      });
    }
    if (nm == "startswith" || nm == "endswith") {
      bool start = nm == "startswith";
      return str_fn([start](const std::string& x, CallArgs& a) -> Value {
        if (a.pos.empty()) return Value::unknown();
        auto* p = str_of(a.pos[0]);
        if (!p) return Value::unknown();
        if (p->size() > x.size()) return Value::boolean(false);
        return Value::boolean(start ? x.compare(0, p->size(), *p) == 0
                                    : x.compare(x.size() - p->size(), p->size(), *p) == 0);
      });
    }
    if (nm == "replace")
      return str_fn([](const std::string& x, CallArgs& a) -> Value {
        if (a.pos.size() < 2 || !str_of(a.pos[0]) || !str_of(a.pos[1])) return Value::unknown();
        const std::string& from = *str_of(a.pos[0]);
        const std::string& to = *str_of(a.pos[1]);
        if (from.empty()) return make_str(x);
        std::string r;
        size_t i = 0;
        while (true) {
          size_t j = x.find(from, i);
          if (j == std::string::npos) {
            r += x.substr(i);
            break;
          }
          r += x.substr(i, j - i) + to;
          i = j + from.size();
        }
        return make_str(r);
      });
    if (nm == "split")
      return str_fn([](const std::string& x, CallArgs& a) -> Value {
        std::vector<Value> out;
        const std::string* sep = a.pos.empty() ? nullptr : str_of(a.pos[0]);
        if (!sep) {
          size_t i = 0;
          while (i < x.size()) {
            while (i < x.size() && std::isspace(static_cast<unsigned char>(x[i]))) ++i;
            size_t j = i;
            while (j < x.size() && !std::isspace(static_cast<unsigned char>(x[j]))) ++j;
            if (j > i) out.push_back(make_str(x.substr(i, j - i)));
            i = j;
          }
        } else if (!sep->empty()) {
          size_t i = 0;
          while (true) {
            size_t j = x.find(*sep, i);
            if (j == std::string::npos) {
              out.push_back(make_str(x.substr(i)));
              break;
            }
            out.push_back(make_str(x.substr(i, j - i)));
            i = j + sep->size();
          }
        }
        return make_list(std::move(out));
      });
    if (nm == "isdigit")
      return str_fn([](const std::string& x, CallArgs&) {
        return Value::boolean(!x.empty() && std::all_of(x.begin(), x.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        }));
      });
    if (nm == "find")
      return str_fn([](const std::string& x, CallArgs& a) -> Value {
        if (a.pos.empty() || !str_of(a.pos[0])) return Value::unknown();
        size_t p = x.find(*str_of(a.pos[0]));
        return Value::integer(p == std::string::npos ? -1 : static_cast<int64_t>(p));
      });
    if (nm == "capitalize" || nm == "title" || nm == "zfill" || nm == "center" || nm == "ljust" ||
        nm == "rjust") {
      return method([](Interpreter&, CallArgs&, const Site&) { return Value::unknown(); });
    }
  }
  return std::nullopt;
}

}  // namespace graphcore::eval
