// Python semantics over abstract values: operators, truthiness, iteration, indexing,
// attribute access, instantiation. Tensor operands are handed to the graph builder.
#include <algorithm>
#include <climits>
#include <cmath>

#include "graphcore/checked.h"
#include "interp.h"
#include "training_eval.h"

namespace graphcore::eval {

using ast::BinOpKind;
using ast::CmpKind;
using ast::UnaryKind;

namespace {

const char* tensor_api_for(BinOpKind op) {
  switch (op) {
    case BinOpKind::Add:
      return "ops.add";
    case BinOpKind::Sub:
      return "ops.sub";
    case BinOpKind::Mul:
      return "ops.mul";
    case BinOpKind::Div:
      return "ops.div";
    case BinOpKind::FloorDiv:
      return "ops.floor_div";
    case BinOpKind::Mod:
      return "ops.mod";
    case BinOpKind::Pow:
      return "ops.pow";
    case BinOpKind::MatMul:
      return "ops.matmul";
    case BinOpKind::BitAnd:
      return "ops.logical_and";
    case BinOpKind::BitOr:
      return "ops.logical_or";
    default:
      return nullptr;
  }
}

const char* tensor_api_for(CmpKind op) {
  switch (op) {
    case CmpKind::Eq:
      return "ops.equal";
    case CmpKind::NotEq:
      return "ops.not_equal";
    case CmpKind::Lt:
      return "ops.less";
    case CmpKind::LtE:
      return "ops.less_equal";
    case CmpKind::Gt:
      return "ops.greater";
    case CmpKind::GtE:
      return "ops.greater_equal";
    default:
      return nullptr;
  }
}

int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t py_mod(int64_t a, int64_t b) {
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

std::optional<int64_t> ipow(int64_t base, int64_t exp) {
  int64_t r = 1;
  for (int64_t i = 0; i < exp; ++i) {
    if (__builtin_mul_overflow(r, base, &r)) return std::nullopt;
  }
  return r;
}

std::vector<Value> repeat(const std::vector<Value>& items, int64_t n) {
  std::vector<Value> out;
  if (n <= 0) return out;
  for (int64_t i = 0; i < n && out.size() < 1'000'000; ++i)
    out.insert(out.end(), items.begin(), items.end());
  return out;
}

// items[s], or nullopt when the slice is not known (slice_indices).
std::optional<std::vector<Value>> slice_items(const std::vector<Value>& items, const SliceObj& s) {
  const auto b = slice_indices(s, static_cast<int64_t>(items.size()));
  if (!b) return std::nullopt;
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(b->length));
  // k * step stays within the sequence (never start + length * step, which can overflow).
  for (int64_t k = 0; k < b->length; ++k)
    out.push_back(items[static_cast<size_t>(b->start + k * b->step)]);
  return out;
}

}  // namespace

Value Interpreter::binop(BinOpKind op, const Value& a, const Value& b, const Site& site) {
  if (a.as<TensorObj>() || b.as<TensorObj>()) {
    if (a.is_unknown() || b.is_unknown()) return Value::unknown();
    const char* api = tensor_api_for(op);
    if (!api) return Value::unknown();
    return tensor_binop(api, a, b, site);
  }
  if (a.is_unknown() || b.is_unknown()) return Value::unknown();
  if (auto* sa = a.as<SetObj>(); sa && b.as<SetObj>()) {
    // Set algebra: difference, union, intersection, symmetric difference.
    const auto& x = sa->items;
    const auto& y = b.as<SetObj>()->items;
    auto in = [](const std::vector<Value>& v, const Value& e) {
      return std::any_of(v.begin(), v.end(), [&](const Value& o) { return values_equal(o, e); });
    };
    std::vector<Value> out;
    if (op == BinOpKind::Sub || op == BinOpKind::BitAnd || op == BinOpKind::BitXor) {
      for (const Value& e : x) {
        if (in(y, e) == (op == BinOpKind::BitAnd)) out.push_back(e);
      }
    }
    if (op == BinOpKind::BitOr) out = x;
    if (op == BinOpKind::BitOr || op == BinOpKind::BitXor) {
      for (const Value& e : y) {
        if (!in(x, e)) out.push_back(e);
      }
    }
    if (op != BinOpKind::Sub && op != BinOpKind::BitAnd && op != BinOpKind::BitOr &&
        op != BinOpKind::BitXor)
      return Value::unknown();
    return Value::obj(std::make_shared<SetObj>(std::move(out)));
  }
  if (a.as<SymIntObj>() || b.as<SymIntObj>()) {
    // Symbolic ints (batch sizes read from shapes) follow the dimension algebra.
    auto as_dim = [](const Value& v) -> std::optional<Dim> {
      if (auto* s = v.as<SymIntObj>()) return s->dim;
      if (v.is_int() && v.as_int() >= 0) return Dim::known(v.as_int());
      return std::nullopt;
    };
    auto x = as_dim(a);
    auto y = as_dim(b);
    if (!x || !y) return Value::unknown();
    Dim r;
    switch (op) {
      case BinOpKind::Add:
        r = *x + *y;
        break;
      case BinOpKind::Sub:
        r = *x - *y;
        break;
      case BinOpKind::Mul:
        r = *x * *y;
        break;
      case BinOpKind::FloorDiv:
        r = Dim::floor_div(*x, *y);
        break;
      default:
        return Value::unknown();
    }
    if (r.is_known()) return Value::integer(r.value());
    if (r.is_unknown()) return Value::unknown();
    return Value::obj(std::make_shared<SymIntObj>(r));
  }
  if (a.is_number() && b.is_number()) {
    bool ints = a.is_int() && b.is_int();
    if (ints) {
      int64_t x = a.as_int();
      int64_t y = b.as_int();
      int64_t r = 0;
      switch (op) {
        case BinOpKind::Add:
          if (__builtin_add_overflow(x, y, &r)) return Value::real(double(x) + double(y));
          return Value::integer(r);
        case BinOpKind::Sub:
          if (__builtin_sub_overflow(x, y, &r)) return Value::real(double(x) - double(y));
          return Value::integer(r);
        case BinOpKind::Mul:
          if (__builtin_mul_overflow(x, y, &r)) return Value::real(double(x) * double(y));
          return Value::integer(r);
        case BinOpKind::Div:
          if (y == 0) break;
          return Value::real(static_cast<double>(x) / static_cast<double>(y));
        case BinOpKind::FloorDiv:
          if (y == 0) break;
          if (x == INT64_MIN && y == -1) return Value::real(-static_cast<double>(INT64_MIN));
          return Value::integer(py_floordiv(x, y));
        case BinOpKind::Mod:
          if (y == 0) break;
          if (y == -1) return Value::integer(0);
          return Value::integer(py_mod(x, y));
        case BinOpKind::Pow:
          if (y >= 0) {
            if (auto p = ipow(x, y)) return Value::integer(*p);
            return Value::real(std::pow(double(x), double(y)));
          }
          return Value::real(std::pow(static_cast<double>(x), static_cast<double>(y)));
        case BinOpKind::LShift:
          return Value::integer(y >= 0 && y < 63 ? x << y : 0);
        case BinOpKind::RShift:
          return Value::integer(y >= 0 && y < 63 ? x >> y : 0);
        case BinOpKind::BitAnd:
          return a.k == VK::Bool && b.k == VK::Bool ? Value::boolean(x & y) : Value::integer(x & y);
        case BinOpKind::BitOr:
          return a.k == VK::Bool && b.k == VK::Bool ? Value::boolean(x | y) : Value::integer(x | y);
        case BinOpKind::BitXor:
          return Value::integer(x ^ y);
        case BinOpKind::MatMul:
          return Value::unknown();
      }
      report(site, Severity::Error, "zero-division", "division by zero");
      return Value::unknown();
    }
    double x = a.as_float();
    double y = b.as_float();
    switch (op) {
      case BinOpKind::Add:
        return Value::real(x + y);
      case BinOpKind::Sub:
        return Value::real(x - y);
      case BinOpKind::Mul:
        return Value::real(x * y);
      case BinOpKind::Div:
        if (y == 0) break;
        return Value::real(x / y);
      case BinOpKind::FloorDiv:
        if (y == 0) break;
        return Value::real(std::floor(x / y));
      case BinOpKind::Mod:
        if (y == 0) break;
        return Value::real(x - std::floor(x / y) * y);
      case BinOpKind::Pow:
        return Value::real(std::pow(x, y));
      default:
        return Value::unknown();
    }
    report(site, Severity::Error, "zero-division", "float division by zero");
    return Value::unknown();
  }
  // Sequences and strings. A result larger than the analyser follows (a string or list doubled
  // in a loop) is unknown: the evaluation's memory stays bounded, and no value is truncated.
  constexpr size_t kMaxItems = size_t{1} << 20;   // list/tuple elements
  constexpr size_t kMaxChars = size_t{16} << 20;  // string bytes
  auto too_big = [](size_t unit, int64_t count, size_t limit) {
    return count > 0 && unit > 0 && static_cast<uint64_t>(count) > limit / unit;
  };
  if (op == BinOpKind::Add) {
    if (auto* x = str_of(a)) {
      if (auto* y = str_of(b)) {
        if (x->size() + y->size() > kMaxChars) return Value::unknown();
        return make_str(*x + *y);
      }
    }
    if (auto* sa = seq_items(a);
        sa && seq_items(b) && sa->size() + seq_items(b)->size() > kMaxItems &&
        ((a.as<TupleObj>() && b.as<TupleObj>()) || (a.as<ListObj>() && b.as<ListObj>())))
      return Value::unknown();
    if (a.as<TupleObj>() && b.as<TupleObj>()) {
      auto items = a.as<TupleObj>()->items;
      auto& more = b.as<TupleObj>()->items;
      items.insert(items.end(), more.begin(), more.end());
      return make_tuple(std::move(items));
    }
    if (a.as<ListObj>() && b.as<ListObj>()) {
      auto items = a.as<ListObj>()->items;
      auto& more = b.as<ListObj>()->items;
      items.insert(items.end(), more.begin(), more.end());
      return make_list(std::move(items));
    }
  }
  if (op == BinOpKind::Mul) {
    const Value& seq = a.is_int() ? b : a;
    const Value& n = a.is_int() ? a : b;
    if (n.is_int()) {
      const int64_t times = n.as_int();
      if (auto* items = seq_items(seq); items && too_big(items->size(), times, kMaxItems))
        return Value::unknown();
      if (auto* t = seq.as<TupleObj>()) return make_tuple(repeat(t->items, times));
      if (auto* l = seq.as<ListObj>()) return make_list(repeat(l->items, times));
      if (auto* s = str_of(seq)) {
        if (too_big(s->size(), times, kMaxChars)) return Value::unknown();
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += *s;
        return make_str(out);
      }
    }
  }
  if (op == BinOpKind::Mod && str_of(a)) return Value::unknown();  // %-formatting: value not needed
  if (op == BinOpKind::BitOr && a.as<DictObj>() && b.as<DictObj>()) {
    auto d = std::make_shared<DictObj>();
    for (auto& [k, v] : a.as<DictObj>()->entries) d->set(k, v);
    for (auto& [k, v] : b.as<DictObj>()->entries) d->set(k, v);
    d->open = a.as<DictObj>()->open || b.as<DictObj>()->open;
    return Value::obj(d);
  }
  if (a.as<OpaqueObj>() || b.as<OpaqueObj>() || a.as<ClassObj>() || b.as<ClassObj>())
    return Value::unknown();
  report(site, Severity::Error, "type-error",
         std::string("unsupported operand types for ") + ast::binop_symbol(op) + ": `" +
             type_name(a) + "` and `" + type_name(b) + "`");
  return Value::unknown();
}

Value Interpreter::compare(CmpKind op, const Value& a, const Value& b, const Site& site) {
  if (op == CmpKind::Is || op == CmpKind::IsNot) {
    bool same;
    if (a.is_unknown() || b.is_unknown()) {
      // `x is None` where x is a known non-None value is still decidable.
      const Value& other = a.is_unknown() ? b : a;
      if (!other.is_none() || (a.is_unknown() && b.is_unknown())) return Value::unknown();
      return Value::unknown();
    }
    if (a.k != b.k)
      same = false;
    else if (a.k == VK::Obj)
      same = a.o == b.o || (a.as<DTypeObj>() != nullptr && values_equal(a, b));
    else
      same = values_equal(a, b) || (a.is_none() && b.is_none());
    return Value::boolean(op == CmpKind::Is ? same : !same);
  }
  if (op == CmpKind::In || op == CmpKind::NotIn) {
    if (a.is_unknown() || b.is_unknown()) return Value::unknown();
    if (auto* i = b.as<InstanceObj>(); i && i->mapping && !i->cls->lookup("__contains__"))
      return compare(op, a, Value::obj(i->mapping), site);  // `k in config` of a dict subclass
    bool found = false;
    if (auto* s = str_of(b)) {
      auto* needle = str_of(a);
      if (!needle) return Value::unknown();
      found = s->find(*needle) != std::string::npos;
    } else if (auto* d = b.as<DictObj>()) {
      found = d->find(a) != nullptr;
      if (!found && d->open) return Value::unknown();
    } else if (auto items = iterate(b, site)) {
      for (auto& x : *items) {
        if (values_equal(x, a)) {
          found = true;
          break;
        }
      }
    } else {
      return Value::unknown();
    }
    return Value::boolean(op == CmpKind::In ? found : !found);
  }
  if (a.as<TensorObj>() || b.as<TensorObj>()) {
    if (a.is_none() || b.is_none()) return Value::boolean(op == CmpKind::NotEq);
    return tensor_binop(tensor_api_for(op), a, b, site);
  }
  if (a.is_unknown() || b.is_unknown()) return Value::unknown();
  if (a.as<SymIntObj>() || b.as<SymIntObj>()) {
    // A symbolic size (`H` from x.shape) against another: decided only when the algebra can
    // (`H == H`, `2*N != N+1`...); otherwise it depends on the input, so it is unknown.
    auto dim_of = [](const Value& v) -> std::optional<Dim> {
      if (auto* s = v.as<SymIntObj>()) return s->dim;
      if (v.is_int()) return Dim::known(v.as_int());
      return std::nullopt;
    };
    auto x = dim_of(a);
    auto y = dim_of(b);
    if (!x || !y) return Value::boolean(op == CmpKind::NotEq);
    if (op == CmpKind::Eq || op == CmpKind::NotEq) {
      Tri eq = dims_equal(*x, *y);
      if (eq == Tri::Maybe) return Value::unknown();
      return Value::boolean((eq == Tri::Yes) == (op == CmpKind::Eq));
    }
    return Value::unknown();
  }
  // Instances compare through their class's rich comparisons (`VersionComparator.__gt__`),
  // tried on the left operand, then reflected on the right, as Python does.
  if (a.as<InstanceObj>() || b.as<InstanceObj>()) {
    struct Dunder {
      CmpKind op;
      const char* name;
      const char* reflected;
    };
    static const Dunder kDunders[] = {
        {CmpKind::Eq, "__eq__", "__eq__"}, {CmpKind::NotEq, "__ne__", "__ne__"},
        {CmpKind::Lt, "__lt__", "__gt__"}, {CmpKind::LtE, "__le__", "__ge__"},
        {CmpKind::Gt, "__gt__", "__lt__"}, {CmpKind::GtE, "__ge__", "__le__"}};
    for (const Dunder& d : kDunders) {
      if (d.op != op) continue;
      for (int side = 0; side < 2; ++side) {
        const Value& self = side == 0 ? a : b;
        const Value& other = side == 0 ? b : a;
        auto* inst = self.as<InstanceObj>();
        if (!inst) continue;
        const Value* m = inst->cls->lookup(side == 0 ? d.name : d.reflected);
        if (auto* fn = m ? m->as<FunctionObj>() : nullptr) {
          CallArgs args;
          args.pos.push_back(other);
          args.pos_ranges.push_back(site.range());
          return call_function(fn, args, site, &self, inst->cls);
        }
      }
    }
    // No method for this operator: equality is identity; an ordering may come from what the
    // evaluator does not see (functools.total_ordering, an unknown base): unknown.
    if (op == CmpKind::Eq) return Value::boolean(values_equal(a, b));
    if (op == CmpKind::NotEq) {
      auto* ia = a.as<InstanceObj>();
      auto* ib = b.as<InstanceObj>();
      bool has_eq = (ia && ia->cls->lookup("__eq__")) || (ib && ib->cls->lookup("__eq__"));
      if (!has_eq) return Value::boolean(!values_equal(a, b));
      Value eq = compare(CmpKind::Eq, a, b, site);  // the default __ne__ inverts __eq__
      return eq.k == VK::Bool ? Value::boolean(!eq.b) : Value::unknown();
    }
    return Value::unknown();
  }
  if (op == CmpKind::Eq) return Value::boolean(values_equal(a, b));
  if (op == CmpKind::NotEq) return Value::boolean(!values_equal(a, b));
  int c = 0;
  if (a.is_number() && b.is_number()) {
    double x = a.as_float();
    double y = b.as_float();
    if (a.is_int() && b.is_int())
      c = a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    else
      c = x < y ? -1 : (x > y ? 1 : 0);
  } else if (str_of(a) && str_of(b)) {
    c = str_of(a)->compare(*str_of(b));
  } else if (seq_items(a) && seq_items(b)) {
    const auto& x = *seq_items(a);
    const auto& y = *seq_items(b);
    size_t n = std::min(x.size(), y.size());
    for (size_t i = 0; i < n && c == 0; ++i) {
      if (values_equal(x[i], y[i])) continue;
      Value lt = compare(CmpKind::Lt, x[i], y[i], site);
      if (lt.k != VK::Bool) return Value::unknown();
      c = lt.b ? -1 : 1;
    }
    if (c == 0) c = x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  } else {
    if (a.as<OpaqueObj>() || b.as<OpaqueObj>()) return Value::unknown();
    report(site, Severity::Error, "type-error",
           "cannot order `" + type_name(a) + "` and `" + type_name(b) + "`");
    return Value::unknown();
  }
  switch (op) {
    case CmpKind::Lt:
      return Value::boolean(c < 0);
    case CmpKind::LtE:
      return Value::boolean(c <= 0);
    case CmpKind::Gt:
      return Value::boolean(c > 0);
    case CmpKind::GtE:
      return Value::boolean(c >= 0);
    default:
      return Value::unknown();
  }
}

Value Interpreter::unary(UnaryKind op, const Value& a, const Site& site) {
  if (a.as<TensorObj>()) {
    if (op == UnaryKind::Pos) return a;
    // MindSpore 2.10's Tensor.__invert__ is `__logical_not__` for every dtype: `~mask` on a bool
    // tensor is a LogicalNot node in mindspore.export's file, and `~x` on int32 [0, 1, 2] gives
    // bool [True, False, False] (measured), not ops.invert's bitwise not.
    return tensor_binop(op == UnaryKind::Neg ? "ops.neg" : "ops.logical_not", a, Value::none(),
                        site);
  }
  if (a.is_unknown()) return a;
  if (a.k == VK::Float) {
    if (op == UnaryKind::Neg) return Value::real(-a.f);
    if (op == UnaryKind::Pos) return a;
  }
  if (a.is_int()) {
    if (op == UnaryKind::Neg) return Value::integer(-a.as_int());
    if (op == UnaryKind::Pos) return Value::integer(a.as_int());
    return Value::integer(~a.as_int());
  }
  if (a.as<OpaqueObj>()) return Value::unknown();
  report(site, Severity::Error, "type-error",
         "bad operand type for unary operator: `" + type_name(a) + "`");
  return Value::unknown();
}

bool Interpreter::truthy(const Value& v, bool* known) {
  *known = true;
  switch (v.k) {
    case VK::None:
      return false;
    case VK::Bool:
      return v.b;
    case VK::Int:
      return v.i != 0;
    case VK::Float:
      return v.f != 0.0;
    case VK::Unknown:
      *known = false;
      return false;
    case VK::Obj:
      break;
  }
  if (!v.o) return false;
  switch (v.o->kind) {
    case OK::Str:
      return !v.as<StrObj>()->s.empty();
    case OK::Tuple:
    case OK::List:
      return !seq_items(v)->empty();
    case OK::Set:
      return !v.as<SetObj>()->items.empty();
    case OK::Dict:
      if (v.as<DictObj>()->entries.empty() && v.as<DictObj>()->open) *known = false;
      return !v.as<DictObj>()->entries.empty();
    case OK::Range:
      return v.as<RangeObj>()->size() > 0;
    case OK::Tensor:
      *known = false;
      return false;
    case OK::Opaque:
      *known = false;
      return false;
    default:
      return true;
  }
}

std::optional<std::vector<Value>> Interpreter::iterate(const Value& v, const Site& site) {
  if (training && v.as<OpaqueObj>()) {
    if (auto batch = training->iterate(*this, v)) return batch;
  }
  if (auto* items = seq_items(v)) return *items;
  if (auto* i = v.as<InstanceObj>(); i && i->mapping && !i->cls->lookup("__iter__"))
    return iterate(Value::obj(i->mapping), site);  // a dict subclass: its keys
  if (auto* s = v.as<SetObj>()) return s->items;
  if (auto* d = v.as<DictObj>()) {
    if (d->open) return std::nullopt;  // keys nobody knows
    std::vector<Value> keys;
    for (auto& [k, val] : d->entries) keys.push_back(k);
    return keys;
  }
  if (auto* r = v.as<RangeObj>()) {
    int64_t n = r->size();
    if (n > static_cast<int64_t>(options.step_budget)) {
      throw BudgetExceeded{
          "range of " + std::to_string(n) + " elements exceeds the evaluation budget", site, true};
    }
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out.push_back(Value::integer(r->start + i * r->step));
    return out;
  }
  if (auto* s = str_of(v)) {
    std::vector<Value> out;
    for (char c : *s) out.push_back(make_str(std::string(1, c)));
    return out;
  }
  if (auto* inst = v.as<InstanceObj>()) {
    if (inst->cell && (inst->cls->native_base() == NativeClass::SequentialCell ||
                       inst->cls->native_base() == NativeClass::CellList)) {
      return inst->cell->items;
    }
    return std::nullopt;
  }
  if (auto* t = v.as<TensorObj>()) {
    const Shape& s = t->type.shape;
    if (!s.ranked || s.rank() == 0 || !s.dims[0].is_known() || s.dims[0].value() > 4096)
      return std::nullopt;
    std::vector<Value> out;
    // The elements of a 1-D numpy array whose values are known are numpy scalars, which model
    // code uses as Python numbers (`[x.item() for x in np.linspace(0, rate, depth)]`).
    // (A constant MindSpore tensor built outside construct is read the same way there.)
    if ((t->is_numpy || (graph == nullptr && t->graph_id == 0)) && s.rank() == 1 &&
        (t->values || t->fill) &&
        (!t->values || static_cast<int64_t>(t->values->size()) == s.dims[0].value())) {
      bool integral = t->type.dtype == DType::Int32 || t->type.dtype == DType::Int64 ||
                      t->type.dtype == DType::Int8 || t->type.dtype == DType::Int16 ||
                      t->type.dtype == DType::UInt8;
      for (int64_t i = 0; i < s.dims[0].value(); ++i) {
        double x = t->values ? (*t->values)[static_cast<size_t>(i)] : *t->fill;
        const auto as_int = integral ? checked_to_int64(x) : std::nullopt;
        out.push_back(as_int     ? Value::integer(*as_int)
                      : integral ? Value::unknown()
                                 : Value::real(x));
      }
      return out;
    }
    for (int64_t i = 0; i < s.dims[0].value(); ++i)
      out.push_back(tensor_subscript(v, Value::integer(i), site));
    return out;
  }
  return std::nullopt;
}

Value Interpreter::subscript(const Value& obj, const Value& index, const Site& site) {
  if (obj.is_unknown()) return obj;
  if (obj.as<TensorObj>()) return tensor_subscript(obj, index, site);
  if (index.is_unknown()) return Value::unknown();
  // `mutable_seq`: a list or a Cell container, which code the analyser did not follow (a loop
  // over run-time data) may have filled: an empty one is not known to be empty.
  auto index_into = [&](const std::vector<Value>& items, const char* what,
                        bool mutable_seq = false) -> Value {
    if (auto* sl = index.as<SliceObj>()) {
      auto part = slice_items(items, *sl);
      return part ? make_list(std::move(*part)) : Value::unknown();
    }
    if (!index.is_int()) {
      // A tensor index, or a type (`Sequence[np.ndarray]` in an annotation alias).
      if (index.as<TensorObj>() || index.as<ClassObj>() || index.as<OpaqueObj>() ||
          index.as<BuiltinObj>() || str_of(index) || seq_items(index))
        return Value::unknown();
      report(site, Severity::Error, "type-error",
             std::string(what) + " indices must be integers or slices, not `" + type_name(index) +
                 "`");
      return Value::unknown();
    }
    int64_t i = index.as_int();
    auto n = static_cast<int64_t>(items.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) {
      if (mutable_seq && n == 0) return Value::unknown();
      report(site, Severity::Error, "index-error",
             std::string(what) + " index " + std::to_string(index.as_int()) +
                 " out of range (length " + std::to_string(n) + ")");
      return Value::unknown();
    }
    return items[static_cast<size_t>(i)];
  };
  if (auto* t = obj.as<TupleObj>()) {
    Value r = index_into(t->items, "tuple");
    if (index.as<SliceObj>() && !r.is_unknown()) return make_tuple(*seq_items(r));
    return r;
  }
  if (auto* l = obj.as<ListObj>()) return index_into(l->items, "list", true);
  if (auto* s = str_of(obj)) {
    if (index.is_int()) {
      int64_t i = index.as_int();
      auto n = static_cast<int64_t>(s->size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return make_str(std::string(1, (*s)[static_cast<size_t>(i)]));
    }
    return Value::unknown();
  }
  if (auto* d = obj.as<DictObj>()) {
    if (Value* v = d->find(index)) return *v;
    if (d->open || index.is_unknown()) return Value::unknown();
    report(site, Severity::Error, "key-error", "key " + repr(index) + " not found in dict");
    return Value::unknown();
  }
  if (auto* r = obj.as<RangeObj>()) {
    if (index.is_int()) {
      int64_t i = index.as_int();
      if (i < 0) i += r->size();
      if (i >= 0 && i < r->size()) return Value::integer(r->start + i * r->step);
    }
    return Value::unknown();
  }
  if (auto* inst = obj.as<InstanceObj>()) {
    if (inst->cell && (inst->cls->native_base() == NativeClass::SequentialCell ||
                       inst->cls->native_base() == NativeClass::CellList)) {
      return index_into(inst->cell->items, inst->cls->name.c_str(), true);
    }
    if (const Value* m = inst->cls->lookup("__getitem__")) {
      if (auto* fn = m->as<FunctionObj>()) {
        CallArgs a;
        a.pos.push_back(index);
        a.pos_ranges.push_back(site.range());
        return call_function(fn, a, site, &obj, inst->cls);
      }
    }
    if (inst->mapping) {
      if (Value* v = inst->mapping->find(index)) return *v;
      return Value::unknown();  // `__missing__`, items set where the analyser cannot see
    }
    return Value::unknown();
  }
  return Value::unknown();  // typing generics (List[int]), opaque objects
}

bool Interpreter::isinstance(const Value& v, const Value& cls) {
  if (auto* items = seq_items(cls)) {
    for (auto& c : *items) {
      if (isinstance(v, c)) return true;
    }
    return false;
  }
  auto* c = cls.as<ClassObj>();
  if (!c) return false;
  switch (c->native) {
    case NativeClass::Int:
      return v.k == VK::Int || v.k == VK::Bool;
    case NativeClass::Float:
      return v.k == VK::Float;
    case NativeClass::Bool:
      return v.k == VK::Bool;
    case NativeClass::Str:
      return v.as<StrObj>() != nullptr;
    case NativeClass::List:
      return v.as<ListObj>() != nullptr;
    case NativeClass::Tuple:
      return v.as<TupleObj>() != nullptr;
    case NativeClass::Dict:
      return v.as<DictObj>() != nullptr ||
             (v.as<InstanceObj>() && v.as<InstanceObj>()->mapping != nullptr);
    case NativeClass::Set:
      return v.as<SetObj>() != nullptr;
    case NativeClass::Tensor:
      return v.as<TensorObj>() != nullptr && !v.as<TensorObj>()->is_numpy;
    case NativeClass::Parameter:
      return v.as<TensorObj>() != nullptr && v.as<TensorObj>()->is_parameter;
    case NativeClass::Object:
      return true;
    default:
      break;
  }
  if (auto* inst = v.as<InstanceObj>()) return inst->cls->derives_from(c);
  return false;
}

}  // namespace graphcore::eval
