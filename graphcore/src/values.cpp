// Value helpers: construction, repr, equality, dict storage, class lookup.
#include <cmath>
#include <cstdint>
#include <sstream>

#include "value.h"

namespace graphcore::eval {

namespace {
thread_local size_t t_value_bytes = 0;
}  // namespace

void charge_value_bytes(size_t bytes) {
  // Saturating: the total is compared with a budget, never used as a size.
  t_value_bytes = bytes > SIZE_MAX - t_value_bytes ? SIZE_MAX : t_value_bytes + bytes;
}
size_t value_bytes_charged() { return t_value_bytes; }
void reset_value_bytes() { t_value_bytes = 0; }

Value make_str(std::string s) {
  charge_value_bytes(s.size());
  return Value::obj(std::make_shared<StrObj>(std::move(s)));
}
Value make_tuple(std::vector<Value> v) {
  charge_value_bytes(v.size() * kItemBytes);
  return Value::obj(std::make_shared<TupleObj>(std::move(v)));
}
Value make_list(std::vector<Value> v) {
  charge_value_bytes(v.size() * kItemBytes);
  return Value::obj(std::make_shared<ListObj>(std::move(v)));
}
Value make_tensor(TensorType t) { return Value::obj(std::make_shared<TensorObj>(std::move(t))); }

const std::string* str_of(const Value& v) {
  auto* s = v.as<StrObj>();
  return s ? &s->s : nullptr;
}

const std::vector<Value>* seq_items(const Value& v) {
  if (auto* t = v.as<TupleObj>()) return &t->items;
  if (auto* l = v.as<ListObj>()) return &l->items;
  return nullptr;
}

std::optional<SliceIndices> slice_indices(const SliceObj& s, int64_t n) {
  auto known = [](const Value& v) { return v.is_none() || v.is_int(); };
  if (!known(s.start) || !known(s.stop) || !known(s.step)) return std::nullopt;
  const int64_t step = s.step.is_int() ? s.step.as_int() : 1;
  if (step == 0) return std::nullopt;
  auto part = [](const Value& v) { return v.is_int() ? std::optional(v.as_int()) : std::nullopt; };
  return graphcore::slice_indices(part(s.start), part(s.stop), step, n);
}

int64_t RangeObj::size() const {
  return checked_range_length(start, stop, step).value_or(INT64_MAX);
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.k == VK::Float || b.k == VK::Float) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.k != b.k) return false;
  switch (a.k) {
    case VK::None:
      return true;
    case VK::Unknown:
      return false;
    case VK::Obj:
      break;
    default:
      return false;
  }
  if (a.o == b.o) return true;
  if (!a.o || !b.o || a.o->kind != b.o->kind) return false;
  switch (a.o->kind) {
    case OK::Str:
      return a.as<StrObj>()->s == b.as<StrObj>()->s;
    case OK::Tuple:
    case OK::List: {
      const auto& x = *seq_items(a);
      const auto& y = *seq_items(b);
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!values_equal(x[i], y[i])) return false;
      }
      return true;
    }
    case OK::DType:
      return a.as<DTypeObj>()->dtype == b.as<DTypeObj>()->dtype;
    case OK::ApiFunction:
      return a.as<ApiFunctionObj>()->entry == b.as<ApiFunctionObj>()->entry;
    default:
      return false;
  }
}

Value* DictObj::find_str(std::string_view key) {
  if (entries.size() < kIndexFrom) {
    for (auto& [k, v] : entries) {
      if (auto* ks = k.as<StrObj>(); ks && ks->s == key) return &v;
    }
    return nullptr;
  }
  auto it = str_index_.find(key);
  return it == str_index_.end() ? nullptr : &entries[it->second].second;
}

Value* DictObj::find(const Value& key) {
  if (auto* ks = key.as<StrObj>()) return find_str(ks->s);
  for (auto& [k, v] : entries) {
    if (values_equal(k, key)) return &v;
  }
  return nullptr;
}

void DictObj::set(const Value& key, Value v) {
  if (Value* cur = find(key)) {
    *cur = std::move(v);
    return;
  }
  entries.emplace_back(key, std::move(v));
  charge_value_bytes(2 * kItemBytes);
  if (entries.size() == kIndexFrom) {
    reindex();
  } else if (entries.size() > kIndexFrom) {
    if (auto* ks = key.as<StrObj>()) str_index_.emplace(ks->s, entries.size() - 1);
  }
}

bool DictObj::erase(const Value& key) {
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (values_equal(it->first, key)) {
      entries.erase(it);
      reindex();
      return true;
    }
  }
  return false;
}

void DictObj::release(std::vector<Value>& out) {
  str_index_.clear();  // views strings of the keys
  for (auto& [k, v] : entries) {
    out.push_back(std::move(k));
    out.push_back(std::move(v));
  }
  entries.clear();
}

void DictObj::reindex() {
  str_index_.clear();
  if (entries.size() < kIndexFrom) return;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (auto* ks = entries[i].first.as<StrObj>()) str_index_.emplace(ks->s, i);
  }
}

const Value* ClassObj::lookup(std::string_view name) const {
  for (ClassObj* c : mro) {
    if (Value* v = c->attrs.find_str(name)) return v;
  }
  return nullptr;
}

bool ClassObj::derives_from(const ClassObj* other) const {
  for (ClassObj* c : mro) {
    if (c == other) return true;
  }
  return false;
}

NativeClass ClassObj::native_base() const {
  for (ClassObj* c : mro) {
    if (c->native != NativeClass::None) return c->native;
  }
  return NativeClass::None;
}

const ApiEntry* ClassObj::api_base() const {
  for (ClassObj* c : mro) {
    if (c->api) return c->api;
  }
  return nullptr;
}

std::string type_name(const Value& v) {
  switch (v.k) {
    case VK::None:
      return "NoneType";
    case VK::Bool:
      return "bool";
    case VK::Int:
      return "int";
    case VK::Float:
      return "float";
    case VK::Unknown:
      return "unknown";
    case VK::Obj:
      break;
  }
  if (!v.o) return "NoneType";
  switch (v.o->kind) {
    case OK::Str:
      return "str";
    case OK::Tuple:
      return "tuple";
    case OK::List:
      return "list";
    case OK::Dict:
      return "dict";
    case OK::Set:
      return "set";
    case OK::Range:
      return "range";
    case OK::Slice:
      return "slice";
    case OK::Ellipsis:
      return "ellipsis";
    case OK::Function:
      return "function";
    case OK::BoundMethod:
      return "method";
    case OK::Builtin:
      return "builtin_function";
    case OK::Class:
      return "type";
    case OK::Instance:
      return v.as<InstanceObj>()->cls->name;
    case OK::Module:
      return "module";
    case OK::Namespace:
      return "module";
    case OK::ApiFunction:
      return "function";
    case OK::Tensor:
      return v.as<TensorObj>()->is_parameter ? "Parameter"
                                             : (v.as<TensorObj>()->is_numpy ? "ndarray" : "Tensor");
    case OK::DType:
      return "dtype";
    case OK::Super:
      return "super";
    case OK::Property:
      return "property";
    case OK::Opaque:
      return v.as<OpaqueObj>()->type_name;
    case OK::SymInt:
      return "int";
  }
  return "object";
}

std::string repr(const Value& v, int depth) {
  if (depth > 4) return "...";
  switch (v.k) {
    case VK::None:
      return "None";
    case VK::Bool:
      return v.b ? "True" : "False";
    case VK::Int:
      return std::to_string(v.i);
    case VK::Float: {
      if (std::isinf(v.f)) return v.f > 0 ? "inf" : "-inf";
      if (std::isnan(v.f)) return "nan";
      std::ostringstream os;
      os.precision(12);
      os << v.f;
      std::string s = os.str();
      if (s.find_first_of(".en") == std::string::npos) s += ".0";
      return s;
    }
    case VK::Unknown:
      return "<unknown>";
    case VK::Obj:
      break;
  }
  if (!v.o) return "None";
  switch (v.o->kind) {
    case OK::Str:
      return "'" + v.as<StrObj>()->s + "'";
    case OK::Tuple:
    case OK::List:
    case OK::Set: {
      const std::vector<Value>* items = seq_items(v);
      if (!items) items = &v.as<SetObj>()->items;
      bool tuple = v.o->kind == OK::Tuple;
      std::string out = tuple ? "(" : (v.o->kind == OK::List ? "[" : "{");
      for (size_t i = 0; i < items->size(); ++i) {
        if (i) out += ", ";
        out += repr((*items)[i], depth + 1);
      }
      if (tuple && items->size() == 1) out += ",";
      out += tuple ? ")" : (v.o->kind == OK::List ? "]" : "}");
      return out;
    }
    case OK::Dict: {
      std::string out = "{";
      bool first = true;
      for (auto& [k, val] : v.as<DictObj>()->entries) {
        if (!first) out += ", ";
        first = false;
        out += repr(k, depth + 1) + ": " + repr(val, depth + 1);
      }
      return out + "}";
    }
    case OK::Range: {
      auto* r = v.as<RangeObj>();
      return "range(" + std::to_string(r->start) + ", " + std::to_string(r->stop) + ")";
    }
    case OK::Tensor: {
      auto* t = v.as<TensorObj>();
      return type_name(v) + t->type.shape.str() + " " + std::string(dtype_name(t->type.dtype));
    }
    case OK::DType:
      return "mindspore." + std::string(dtype_name(v.as<DTypeObj>()->dtype));
    case OK::Class:
      return "<class '" + v.as<ClassObj>()->name + "'>";
    case OK::Function:
      return "<function " + v.as<FunctionObj>()->name + ">";
    case OK::ApiFunction:
      return "<function mindspore." + v.as<ApiFunctionObj>()->entry->name + ">";
    case OK::Instance:
      return "<" + v.as<InstanceObj>()->cls->name + " object>";
    default:
      return "<" + type_name(v) + ">";
  }
}

}  // namespace graphcore::eval
