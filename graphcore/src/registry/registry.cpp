// Registry storage, lookup and "did you mean" suggestions; ArgValue accessors.
#include "graphcore/registry.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "graphcore/text.h"

namespace graphcore {

// ---- ArgValue ---------------------------------------------------------------------------------
std::optional<int64_t> ArgValue::as_int() const {
  if (kind == Kind::Int) return i;
  if (kind == Kind::Bool) return b ? 1 : 0;
  return std::nullopt;
}

std::optional<double> ArgValue::as_float() const {
  if (kind == Kind::Float) return f;
  if (auto v = as_int()) return static_cast<double>(*v);
  return std::nullopt;
}

std::optional<bool> ArgValue::as_bool() const {
  if (kind == Kind::Bool) return b;
  if (kind == Kind::Int) return i != 0;
  if (kind == Kind::None) return false;
  return std::nullopt;
}

std::optional<std::string> ArgValue::as_str() const {
  if (kind == Kind::Str) return s;
  return std::nullopt;
}

std::optional<InitSpec> ArgValue::as_initializer() const {
  switch (kind) {
    case Kind::Other:
      if (initializer) return *initializer;
      return std::nullopt;
    case Kind::Str:
      return InitSpec::named(s);
    case Kind::Bool:
    case Kind::Int:
    case Kind::Float:
      return InitSpec::constant(*as_float());
    default:
      return std::nullopt;
  }
}

std::optional<AttrValue> ArgValue::as_attr() const {
  switch (kind) {
    case Kind::Bool:
      return AttrValue(b);
    case Kind::Int:
      return AttrValue(i);
    case Kind::Float:
      return AttrValue(f);
    case Kind::Str:
      return AttrValue(s);
    case Kind::Sequence:
      if (auto ints = as_ints()) return AttrValue(std::move(*ints));
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<std::vector<int64_t>> ArgValue::as_ints(size_t n) const {
  if (kind == Kind::Int) return std::vector<int64_t>(n == 0 ? 1 : n, i);
  if (kind != Kind::Sequence) return std::nullopt;
  if (n != 0 && items.size() != n) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(items.size());
  for (const ArgValue& item : items) {
    if (item.kind != Kind::Int) return std::nullopt;
    out.push_back(item.i);
  }
  return out;
}

std::optional<std::vector<Dim>> ArgValue::as_dims(size_t n) const {
  auto one = [](const ArgValue& v) -> std::optional<Dim> {
    if (v.kind == Kind::Int) return v.i >= 0 ? std::optional<Dim>(Dim::known(v.i)) : std::nullopt;
    if (v.kind == Kind::SymInt) return v.dim;
    if (v.kind == Kind::Unknown) return Dim::unknown();
    return std::nullopt;
  };
  if (kind != Kind::Sequence) {
    auto d = one(*this);
    if (!d) return std::nullopt;
    return std::vector<Dim>(n == 0 ? 1 : n, *d);
  }
  if (n != 0 && items.size() != n) return std::nullopt;
  std::vector<Dim> out;
  out.reserve(items.size());
  for (const ArgValue& item : items) {
    auto d = one(item);
    if (!d) return std::nullopt;
    out.push_back(*d);
  }
  return out;
}

std::string ArgValue::repr() const {
  switch (kind) {
    case Kind::Missing:
      return "<missing>";
    case Kind::None:
      return "None";
    case Kind::Bool:
      return b ? "True" : "False";
    case Kind::Int:
      return std::to_string(i);
    case Kind::Float: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", f);
      // Shortest representation that round-trips, Python style.
      for (int prec = 1; prec <= 17; ++prec) {
        char tmp[32];
        std::snprintf(tmp, sizeof tmp, "%.*g", prec, f);
        if (std::strtod(tmp, nullptr) == f) {
          std::snprintf(buf, sizeof buf, "%s", tmp);
          break;
        }
      }
      std::string out = buf;
      if (out.find_first_of(".eni") == std::string::npos) out += ".0";
      return out;
    }
    case Kind::Str:
      return "'" + s + "'";
    case Kind::Sequence: {
      std::string out = "(";
      for (size_t k = 0; k < items.size(); ++k) out += (k ? ", " : "") + items[k].repr();
      return out + (items.size() == 1 ? ",)" : ")");
    }
    case Kind::Tensor:
      return "Tensor" + tensor.str();
    case Kind::DType:
      return "mindspore." + std::string(dtype_name(dtype));
    case Kind::Cell:
    case Kind::Other:
      return s.empty() ? "<object>" : s;
    case Kind::Unknown:
      return "<unknown>";
    case Kind::SymInt:
      return dim.str();
  }
  return "<?>";
}

// ---- Registry ---------------------------------------------------------------------------------
const Registry& Registry::instance() {
  static const Registry registry;
  return registry;
}

Registry::Registry() {
  register_nn_layers(*this);
  register_ops(*this);
  register_tensor_methods(*this);
  register_losses(*this);
}

void Registry::add(ApiEntry entry) {
  if (entry.op.empty()) {
    size_t dot = entry.name.rfind('.');
    entry.op = dot == std::string::npos ? entry.name : entry.name.substr(dot + 1);
  }
  entries_.push_back(std::make_unique<ApiEntry>(std::move(entry)));
  const ApiEntry* e = entries_.back().get();
  by_name_[e->name].push_back(e);
}

const ApiEntry* Registry::find(std::string_view name, const Version& version) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return nullptr;
  for (const ApiEntry* e : it->second)
    if (e->versions.contains(version)) return e;
  return nullptr;
}

std::vector<const ApiEntry*> Registry::find_all(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? std::vector<const ApiEntry*>{} : it->second;
}

std::vector<const ApiEntry*> Registry::list(std::string_view prefix, const Version& version) const {
  std::vector<const ApiEntry*> out;
  for (const auto& e : entries_)
    if (e->name.starts_with(prefix) && e->versions.contains(version) && e->replacement.empty())
      out.push_back(e.get());
  std::sort(out.begin(), out.end(),
            [](const ApiEntry* a, const ApiEntry* b) { return a->name < b->name; });
  return out;
}

namespace {

using text::lower;

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::pair<std::string_view, std::string_view> split_ns(std::string_view name) {
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return {{}, name};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

// Drops underscores so that "max_pool2d" and "MaxPool2d" compare equal case-insensitively.
std::string squash(std::string_view s) {
  std::string out;
  for (char c : lower(s))
    if (c != '_') out += c;
  return out;
}

}  // namespace

std::vector<std::string> Registry::suggest(std::string_view name, const Version& version) const {
  struct Scored {
    size_t score;
    std::string name;
  };
  std::vector<Scored> scored;
  auto [ns, leaf] = split_ns(name);
  std::string leaf_lc = lower(leaf);
  std::string leaf_sq = squash(leaf);
  size_t limit = std::max<size_t>(2, leaf.size() / 3);
  // Entries kept to explain a mistake name their replacement first.
  std::string name_lc = lower(name);
  for (const auto& e : entries_)
    if (!e->replacement.empty() && lower(e->name) == name_lc) scored.push_back({0, e->replacement});
  for (const auto& e : entries_) {
    if (!e->replacement.empty() || !e->versions.contains(version) || e->name == name) continue;
    auto [ens, eleaf] = split_ns(e->name);
    size_t score = SIZE_MAX;
    if (lower(eleaf) == leaf_lc) {
      score = ens == ns ? 1 : 2;  // case slip, or the right name in another namespace
    } else if (ens == ns) {
      size_t d =
          std::min(edit_distance(lower(eleaf), leaf_lc), edit_distance(squash(eleaf), leaf_sq) + 1);
      if (d <= limit) score = 2 + d;
    } else if (squash(eleaf) == leaf_sq) {
      score = 3;
    }
    if (score != SIZE_MAX) scored.push_back({score, e->name});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& a, const Scored& b) { return a.score < b.score; });
  std::vector<std::string> out;
  for (const Scored& s : scored) {
    if (std::find(out.begin(), out.end(), s.name) == out.end()) out.push_back(s.name);
    if (out.size() == 5) break;
  }
  return out;
}

std::optional<std::string> api_namespace_of(std::string_view module) {
  auto below = [&](std::string_view top) {
    return module == top || (module.starts_with(top) && module[top.size()] == '.');
  };
  if (module == "mindspore") return std::string();
  if (below("mindspore.nn")) return std::string("nn");
  if (below("mindspore.ops")) return std::string("ops");
  if (module == "mindspore.common.initializer") return std::string("init");
  if (module == "mindspore.common.dtype" || module == "mindspore.dtype")
    return std::string("dtype");
  if (module == "mindspore.numpy") return std::string("numpy");
  return std::nullopt;
}

std::optional<std::string> api_name_of(std::string_view dotted) {
  if (!dotted.starts_with("mindspore.")) return std::nullopt;
  size_t dot = dotted.rfind('.');
  std::string_view module = dotted.substr(0, dot);
  std::string_view name = dotted.substr(dot + 1);
  if (auto ns = api_namespace_of(module)) {
    return ns->empty() ? std::string(name) : *ns + "." + std::string(name);
  }
  // mindspore.Tensor.reshape, mindspore.common.tensor.Tensor.reshape
  for (std::string_view tensor : {"mindspore.Tensor", "mindspore.common.tensor.Tensor"}) {
    if (module == tensor) return "Tensor." + std::string(name);
  }
  return std::nullopt;
}

std::vector<const ParamSpec*> api_signature_params(const ApiEntry& e, const Version& version,
                                                   bool init) {
  std::vector<const ParamSpec*> out;
  const auto& specs = init ? e.init_params : e.call_params;
  for (size_t i = 0; i < specs.size(); ++i) {
    // Tensor methods take the tensor itself first; it is not written in the call.
    if (!init && i == 0 && e.kind == ApiKind::TensorMethod) continue;
    if (specs[i].versions.contains(version)) out.push_back(&specs[i]);
  }
  return out;
}

std::string api_signature(const ApiEntry& e, const Version& version, bool init,
                          std::vector<std::pair<size_t, size_t>>* param_spans) {
  std::string out = e.name + "(";
  bool keyword_only_marked = false;
  bool first = true;
  for (const ParamSpec* p : api_signature_params(e, version, init)) {
    if (!first) out += ", ";
    first = false;
    if (p->kind == ParamKind::KeywordOnly && !keyword_only_marked) {
      out += "*, ";
      keyword_only_marked = true;
    }
    size_t begin = out.size();
    if (p->kind == ParamKind::VarPositional) {
      out += "*";
      keyword_only_marked = true;
    }
    if (p->kind == ParamKind::VarKeyword) out += "**";
    out += p->name;
    if (!p->default_src.empty()) out += "=" + p->default_src;
    if (param_spans) param_spans->emplace_back(begin, out.size());
  }
  return out + ")";
}

}  // namespace graphcore
