#include "graphcore/shape.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "graphcore/checked.h"

namespace graphcore {

// ---- dtypes -------------------------------------------------------------------------------

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  std::string_view short_name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::Unknown, "unknown", "?", 0},      {DType::Bool, "bool", "bool", 1},
    {DType::Int8, "int8", "i8", 1},           {DType::Int16, "int16", "i16", 2},
    {DType::Int32, "int32", "i32", 4},        {DType::Int64, "int64", "i64", 8},
    {DType::UInt8, "uint8", "u8", 1},         {DType::Float16, "float16", "f16", 2},
    {DType::BFloat16, "bfloat16", "bf16", 2}, {DType::Float32, "float32", "f32", 4},
    {DType::Float64, "float64", "f64", 8},    {DType::Complex64, "complex64", "c64", 8},
    {DType::UInt32, "uint32", "u32", 4},
};
const DTypeInfo& info(DType t) { return kDTypes[static_cast<size_t>(t)]; }

// Promotion rank: bool < unsigned/int widths < float widths.
int rank_of(DType t) {
  switch (t) {
    case DType::Bool:
      return 0;
    case DType::UInt8:
      return 1;
    case DType::Int8:
      return 2;
    case DType::Int16:
      return 3;
    case DType::Int32:
      return 4;
    case DType::UInt32:
      return 5;
    case DType::Int64:
      return 6;
    case DType::Float16:
      return 7;
    case DType::BFloat16:
      return 8;
    case DType::Float32:
      return 9;
    case DType::Float64:
      return 10;
    case DType::Complex64:
      return 11;
    case DType::Unknown:
      return -1;
  }
  return -1;
}
}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
std::string_view dtype_short_name(DType t) { return info(t).short_name; }
size_t dtype_size(DType t) { return info(t).size; }

std::optional<DType> dtype_from_name(std::string_view name) {
  static const std::unordered_map<std::string_view, DType> kAliases = {
      {"bool", DType::Bool},       {"bool_", DType::Bool},          {"int8", DType::Int8},
      {"int16", DType::Int16},     {"short", DType::Int16},         {"int32", DType::Int32},
      {"int", DType::Int32},       {"int64", DType::Int64},         {"long", DType::Int64},
      {"uint8", DType::UInt8},     {"uint32", DType::UInt32},       {"float16", DType::Float16},
      {"half", DType::Float16},    {"fp16", DType::Float16},        {"bfloat16", DType::BFloat16},
      {"float32", DType::Float32}, {"float", DType::Float32},       {"single", DType::Float32},
      {"fp32", DType::Float32},    {"float64", DType::Float64},     {"double", DType::Float64},
      {"fp64", DType::Float64},    {"complex64", DType::Complex64}, {"f32", DType::Float32},
      {"f16", DType::Float16},     {"i32", DType::Int32},           {"i64", DType::Int64},
  };
  auto it = kAliases.find(name);
  if (it == kAliases.end()) return std::nullopt;
  return it->second;
}

bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 ||
         t == DType::Float64 || t == DType::Complex64;
}
bool is_integral(DType t) {
  return t == DType::Bool || t == DType::Int8 || t == DType::Int16 || t == DType::Int32 ||
         t == DType::Int64 || t == DType::UInt8 || t == DType::UInt32;
}

DType promote(DType a, DType b) {
  if (a == DType::Unknown) return b;
  if (b == DType::Unknown) return a;
  if (a == b) return a;
  if ((a == DType::Float16 && b == DType::BFloat16) ||
      (a == DType::BFloat16 && b == DType::Float16))
    return DType::Float32;
  return rank_of(a) >= rank_of(b) ? a : b;
}

// ---- symbolic dimensions --------------------------------------------------------------------

// Process-wide table of symbols. An atom is a named symbol ("N", or an expression that is not a
// monomial, e.g. "H-2"); a product is a sorted multiset of atoms. Entry 0 is unused.
struct DimBuilder {
  struct Entry {
    std::string name;
    std::vector<uint32_t> atoms;  // sorted; an atom lists itself
    bool compound = false;        // an expression that needs parentheses inside a product
    // A floor division by a known positive divisor, `num // den`, kept as structure so that
    // floor divisions of floor divisions merge: ((x // a) + k) // b == (x + k * a) // (a * b).
    Dim num{};
    int64_t den = 0;  // 0: not a floor division
  };
  std::mutex mu;
  std::vector<Entry> entries{Entry{}};
  std::unordered_map<std::string, uint32_t> atoms_by_name;
  std::map<std::vector<uint32_t>, uint32_t> products;

  static DimBuilder& get() {
    static DimBuilder b;
    return b;
  }

  uint32_t atom(const std::string& name, bool compound, Dim num = {}, int64_t den = 0) {
    std::lock_guard lock(mu);
    auto it = atoms_by_name.find(name);
    if (it != atoms_by_name.end()) return it->second;
    auto id = static_cast<uint32_t>(entries.size());
    entries.push_back(Entry{name, {id}, compound, num, den});
    atoms_by_name.emplace(name, id);
    products.emplace(std::vector<uint32_t>{id}, id);
    return id;
  }

  uint32_t product(std::vector<uint32_t> atoms) {
    std::sort(atoms.begin(), atoms.end());
    std::lock_guard lock(mu);
    auto it = products.find(atoms);
    if (it != products.end()) return it->second;
    std::string name;
    for (size_t i = 0; i < atoms.size(); ++i) {
      if (i) name += "*";
      const Entry& e = entries[atoms[i]];
      name += e.compound ? "(" + e.name + ")" : e.name;
    }
    auto id = static_cast<uint32_t>(entries.size());
    entries.push_back(Entry{name, atoms, true});
    products.emplace(std::move(atoms), id);
    return id;
  }

  std::vector<uint32_t> atoms_of(uint32_t sym) {
    std::lock_guard lock(mu);
    return entries[sym].atoms;
  }
  // The floor division `sym` stands for, when it is one.
  std::optional<std::pair<Dim, int64_t>> floor_of(uint32_t sym) {
    std::lock_guard lock(mu);
    const Entry& e = entries[sym];
    if (e.den == 0) return std::nullopt;
    return std::pair{e.num, e.den};
  }
  std::string name_of(uint32_t sym, bool* compound) {
    std::lock_guard lock(mu);
    if (compound) *compound = entries[sym].compound;
    return entries[sym].name;
  }

  static Dim make(int64_t coef, uint32_t sym, int64_t offset = 0) {
    if (sym != 0 && coef == 0) return offset >= 0 ? Dim::known(offset) : Dim::unknown();
    return Dim(coef, sym, sym == 0 ? 0 : offset);
  }
};

Dim Dim::symbol(std::string_view name) {
  return DimBuilder::make(1, DimBuilder::get().atom(std::string(name), false));
}

std::string Dim::str() const {
  if (is_unknown()) return "?";
  if (is_known()) return std::to_string(coef_);
  bool compound = false;
  std::string name = DimBuilder::get().name_of(sym_, &compound);
  std::string out;
  if (coef_ == 1) {
    out = name;
  } else {
    std::string prefix = coef_ == -1 ? "-" : std::to_string(coef_) + "*";
    out = prefix + (compound ? "(" + name + ")" : name);
  }
  if (offset_ > 0) out += "+" + std::to_string(offset_);
  if (offset_ < 0) out += "-" + std::to_string(-offset_);
  return out;
}

namespace {
Dim expression_atom(const std::string& text) {
  return DimBuilder::make(1, DimBuilder::get().atom(text, true));
}
// Whether `s` is one parenthesised group: "(H-2)" but not "(H-3)//2+1".
bool wrapped(const std::string& s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return false;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < s.size()) return false;
  }
  return true;
}
// `d` as an operand of a binary operator: parenthesised unless it is a name, a number or
// already one group.
std::string operand(Dim d) {
  std::string s = d.str();
  if (d.is_symbolic() && s.find_first_of("+-*/") != std::string::npos && !wrapped(s))
    return "(" + s + ")";
  return s;
}
}  // namespace

// Dim arithmetic is checked: a coefficient or offset that would overflow int64 makes the result
// unknown (never a wrapped size).
Dim operator+(Dim a, Dim b) {
  if (a.is_unknown() || b.is_unknown()) return Dim::unknown();
  if (a.is_known() && b.is_known()) {
    auto v = checked_add(a.coef_, b.coef_);
    return v ? Dim::known(*v) : Dim::unknown();
  }
  if (b.is_known() || a.is_known()) {
    const Dim& s = a.is_known() ? b : a;
    const Dim& k = a.is_known() ? a : b;
    auto o = checked_add(s.offset_, k.coef_);
    return o ? DimBuilder::make(s.coef_, s.sym_, *o) : Dim::unknown();
  }
  if (a.sym_ == b.sym_) {
    auto c = checked_add(a.coef_, b.coef_);
    auto o = checked_add(a.offset_, b.offset_);
    return c && o ? DimBuilder::make(*c, a.sym_, *o) : Dim::unknown();
  }
  return expression_atom(a.str() + "+" + b.str());
}

Dim operator-(Dim a, Dim b) {
  if (a.is_unknown() || b.is_unknown()) return Dim::unknown();
  if (a.is_known() && b.is_known()) {
    auto v = checked_sub(a.coef_, b.coef_);
    return v ? Dim::known(*v) : Dim::unknown();
  }
  if (b.is_known()) {
    auto o = checked_sub(a.offset_, b.coef_);
    return o ? DimBuilder::make(a.coef_, a.sym_, *o) : Dim::unknown();
  }
  if (a.sym_ == b.sym_) {
    auto c = checked_sub(a.coef_, b.coef_);
    auto o = checked_sub(a.offset_, b.offset_);
    if (!c || !o) return Dim::unknown();
    if (*c == 0) return *o >= 0 ? Dim::known(*o) : Dim::unknown();
    return DimBuilder::make(*c, a.sym_, *o);
  }
  return expression_atom(a.str() + "-" + operand(b));
}

Dim operator*(Dim a, Dim b) {
  if (a.is_known() && a.coef_ == 0) return a;
  if (b.is_known() && b.coef_ == 0) return b;
  if (a.is_unknown() || b.is_unknown()) return Dim::unknown();
  auto c = checked_mul(a.coef_, b.coef_);
  if (!c) return Dim::unknown();
  if (a.is_known() && b.is_known()) return Dim::known(*c);
  if (a.is_known() || b.is_known()) {
    const Dim& s = a.is_known() ? b : a;
    const Dim& k = a.is_known() ? a : b;
    auto o = checked_mul(s.offset_, k.coef_);
    return o ? DimBuilder::make(*c, s.sym_, *o) : Dim::unknown();
  }
  if (a.offset_ != 0 || b.offset_ != 0) return expression_atom(operand(a) + "*" + operand(b));
  auto& tb = DimBuilder::get();
  std::vector<uint32_t> atoms = tb.atoms_of(a.sym_);
  auto more = tb.atoms_of(b.sym_);
  atoms.insert(atoms.end(), more.begin(), more.end());
  return DimBuilder::make(*c, tb.product(std::move(atoms)));
}

std::optional<Dim> Dim::exact_div(Dim a, Dim b) {
  if (b.is_known() && b.coef_ == 0) return std::nullopt;
  if (a.is_unknown() || b.is_unknown()) return std::nullopt;
  if (b.is_known()) {
    if (a.coef_ % b.coef_ != 0 || a.offset_ % b.coef_ != 0) return std::nullopt;
    return DimBuilder::make(a.coef_ / b.coef_, a.sym_, a.offset_ / b.coef_);
  }
  if (a.is_known()) return std::nullopt;
  if (a.offset_ != 0 || b.offset_ != 0) {
    if (a == b) return Dim::known(1);
    return std::nullopt;
  }
  if (b.coef_ == 0 || a.coef_ % b.coef_ != 0) return std::nullopt;
  auto& tb = DimBuilder::get();
  std::vector<uint32_t> rest = tb.atoms_of(a.sym_);
  for (uint32_t atom : tb.atoms_of(b.sym_)) {
    auto it = std::find(rest.begin(), rest.end(), atom);
    if (it == rest.end()) return std::nullopt;
    rest.erase(it);
  }
  int64_t coef = a.coef_ / b.coef_;
  if (rest.empty()) return Dim::known(coef);
  return DimBuilder::make(coef, tb.product(std::move(rest)));
}

namespace {
int64_t floor_of_quotient(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
}  // namespace

Dim Dim::floor_div(Dim a, Dim b) {
  if (a.is_unknown() || b.is_unknown() || (b.is_known() && b.coef_ == 0)) return Dim::unknown();
  if (a.is_known() && b.is_known()) return Dim::known(floor_of_quotient(a.coef_, b.coef_));
  if (auto exact = exact_div(a, b)) return *exact;
  if (!b.is_known() || b.coef_ < 0) return expression_atom(operand(a) + "//" + operand(b));
  const int64_t den = b.coef_;
  // (m*S + k) // b with b | m: (m/b)*S + k//b.
  if (a.coef_ % den == 0)
    return DimBuilder::make(a.coef_ / den, a.sym_, floor_of_quotient(a.offset_, den));
  // (x // c + k) // b == (x + k*c) // (c*b): nested floor divisions merge (c, b > 0).
  if (a.coef_ == 1) {
    if (auto inner = DimBuilder::get().floor_of(a.sym_)) {
      const Dim& x = inner->first;  // symbolic: a known numerator would have been divided
      auto shift = checked_mul(a.offset_, inner->second);
      auto offset = shift ? checked_add(x.offset_, *shift) : std::nullopt;
      auto merged = checked_mul(inner->second, den);
      if (offset && merged)
        return floor_div(DimBuilder::make(x.coef_, x.sym_, *offset), Dim::known(*merged));
    }
  }
  const std::string name = operand(a) + "//" + std::to_string(den);
  return DimBuilder::make(1, DimBuilder::get().atom(name, true, a, den));
}

// ceil(a / b) == (a + b - 1) // b for a positive divisor: one notation, and it merges with the
// floor divisions around it ("(H+1)//4" rather than "ceil(((H-3)//2+1)/2)").
Dim Dim::ceil_div(Dim a, Dim b) {
  if (a.is_unknown() || b.is_unknown() || (b.is_known() && b.coef_ == 0)) return Dim::unknown();
  if (a.is_known() && b.is_known()) return Dim::known(-floor_of_quotient(-a.coef_, b.coef_));
  if (auto exact = exact_div(a, b)) return *exact;
  if (b.is_known() && b.coef_ > 0) return floor_div(a + Dim::known(b.coef_ - 1), b);
  return expression_atom("ceil(" + operand(a) + "/" + operand(b) + ")");
}

Tri dims_equal(Dim a, Dim b) {
  if (a.is_unknown() || b.is_unknown()) return Tri::Maybe;
  if (a.is_known() && b.is_known()) return a.value() == b.value() ? Tri::Yes : Tri::No;
  if (a == b) return Tri::Yes;
  // Same symbolic term, different constant: H-4 can never equal H-2.
  if (a.is_symbolic() && b.is_symbolic() && a.symbol_id() == b.symbol_id() &&
      a.coefficient() == b.coefficient()) {
    return Tri::No;
  }
  return Tri::Maybe;
}

// ---- shapes ---------------------------------------------------------------------------------

Shape Shape::of(std::initializer_list<int64_t> v) { return of(std::vector<int64_t>(v)); }
Shape Shape::of(const std::vector<int64_t>& v) {
  Shape s;
  s.dims.reserve(v.size());
  for (int64_t d : v) s.dims.push_back(d < 0 ? Dim::unknown() : Dim::known(d));
  return s;
}

bool Shape::fully_known() const {
  return ranked && std::all_of(dims.begin(), dims.end(), [](Dim d) { return d.is_known(); });
}

Dim Shape::num_elements() const {
  if (!ranked) return Dim::unknown();
  Dim n = Dim::known(1);
  for (Dim d : dims) n = n * d;
  return n;
}

const Dim& Shape::at(int64_t axis) const {
  auto a = normalize_axis(axis, dims.size());
  return dims.at(a.value_or(dims.size()));
}

std::string Shape::str() const {
  if (!ranked) return "(?)";
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += dims[i].str();
  }
  if (dims.size() == 1) out += ",";
  out += ")";
  return out;
}

std::optional<size_t> normalize_axis(int64_t axis, size_t rank) {
  auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

std::string TensorType::str() const {
  return shape.str() + " " + std::string(dtype_short_name(dtype));
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b, std::string* why) {
  if (!a.ranked || !b.ranked) return Shape::unranked();
  size_t rank = std::max(a.rank(), b.rank());
  Shape out;
  out.dims.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    size_t from_end = rank - 1 - i;
    Dim da = from_end < a.rank() ? a.dims[a.rank() - 1 - from_end] : Dim::known(1);
    Dim db = from_end < b.rank() ? b.dims[b.rank() - 1 - from_end] : Dim::known(1);
    Dim r;
    if (da.is_known() && da.value() == 1) {
      r = db;
    } else if (db.is_known() && db.value() == 1) {
      r = da;
    } else {
      switch (dims_equal(da, db)) {
        case Tri::Yes:
          r = da;
          break;
        case Tri::No:
          if (why) {
            std::ostringstream os;
            os << "cannot broadcast shapes " << a.str() << " and " << b.str() << ": axis "
               << (static_cast<int64_t>(i) - static_cast<int64_t>(rank)) << " has size " << da.str()
               << " vs " << db.str();
            *why = os.str();
          }
          return std::nullopt;
        case Tri::Maybe:
          r = da.is_known() ? da : (db.is_known() ? db : da);
          break;
      }
    }
    out.dims[i] = r;
  }
  return out;
}

}  // namespace graphcore
