// Parameter initializers: MindSpore's mindspore.common.initializer classes, parsed from the text
// model code writes, and filled reproducibly from a seed.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "runtime/internal.h"

namespace graphcore::runtime {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// Splits "a, b=(1, 2), c" at top-level commas.
std::vector<std::string_view> split_args(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string_view last = trim(s.substr(start));
  if (!last.empty()) out.push_back(last);
  return out;
}

// A numeric literal, possibly negated, or math.sqrt(<number>) / sqrt(<number>).
std::optional<double> number(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  if (s.front() == '-') {
    auto v = number(s.substr(1));
    return v ? std::optional<double>(-*v) : std::nullopt;
  }
  for (std::string_view p : {"math.sqrt(", "np.sqrt(", "numpy.sqrt(", "sqrt("}) {
    if (s.starts_with(p) && s.back() == ')') {
      auto v = number(s.substr(p.size(), s.size() - p.size() - 1));
      return v ? std::optional<double>(std::sqrt(*v)) : std::nullopt;
    }
  }
  if (s == "True") return 1.0;
  if (s == "False") return 0.0;
  std::string text(s);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return std::nullopt;
  return v;
}

std::optional<std::string> string_literal(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
    return std::string(s.substr(1, s.size() - 2));
  return std::nullopt;
}

std::optional<InitSpec::Kind> kind_from_name(std::string_view name) {
  std::string n = lower(name);
  n.erase(std::remove(n.begin(), n.end(), '_'), n.end());
  using K = InitSpec::Kind;
  if (n == "zero" || n == "zeros") return K::Zero;
  if (n == "one" || n == "ones") return K::One;
  if (n == "normal") return K::Normal;
  if (n == "truncatednormal") return K::TruncatedNormal;
  if (n == "uniform") return K::Uniform;
  if (n == "heuniform") return K::HeUniform;
  if (n == "henormal") return K::HeNormal;
  if (n == "xavieruniform") return K::XavierUniform;
  if (n == "xaviernormal") return K::XavierNormal;
  if (n == "constant") return K::Constant;
  return std::nullopt;
}

// fan_in, fan_out as mindspore.common.initializer._calculate_fan_in_and_fan_out.
std::pair<double, double> fans(const std::vector<int64_t>& shape) {
  if (shape.size() < 2) {
    double n = 1;
    for (int64_t d : shape) n *= static_cast<double>(d);
    return {n, n};
  }
  double rf = 1;
  for (size_t i = 2; i < shape.size(); ++i) rf *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[1]) * rf, static_cast<double>(shape[0]) * rf};
}

double gain_of(const std::string& nl, double slope) {
  if (nl == "tanh") return 5.0 / 3;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1 + slope * slope));
  if (nl == "selu") return 3.0 / 4;
  return 1;  // linear, conv*, sigmoid
}

}  // namespace

uint64_t hash_name(uint64_t seed, std::string_view name) {
  uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::optional<InitSpec> InitSpec::parse(std::string_view src) {
  src = trim(src);
  if (src.empty()) return std::nullopt;
  InitSpec spec;
  if (auto s = string_literal(src)) {
    auto k = kind_from_name(*s);
    if (!k || *k == Kind::Constant) return std::nullopt;
    spec.kind = *k;
    return spec;
  }
  if (auto v = number(src)) {
    spec.kind = Kind::Constant;
    spec.value = *v;
    return spec;
  }
  size_t open = src.find('(');
  if (open == std::string_view::npos || src.back() != ')') return std::nullopt;
  std::string_view callee = trim(src.substr(0, open));
  if (size_t dot = callee.rfind('.'); dot != std::string_view::npos)
    callee = callee.substr(dot + 1);
  auto k = kind_from_name(callee);
  if (!k) return std::nullopt;
  spec.kind = *k;
  // Positional parameter order of each initializer's __init__.
  std::vector<std::string> order;
  switch (*k) {
    case Kind::Normal:
      order = {"sigma", "mean"};
      break;
    case Kind::TruncatedNormal:
      order = {"sigma", "mean", "a", "b"};
      break;
    case Kind::Uniform:
      order = {"scale"};
      break;
    case Kind::HeUniform:
    case Kind::HeNormal:
      order = {"negative_slope", "mode", "nonlinearity"};
      break;
    case Kind::XavierUniform:
    case Kind::XavierNormal:
      order = {"gain"};
      break;
    case Kind::Constant:
      order = {"value"};
      break;
    default:
      break;
  }
  std::vector<std::string_view> args = split_args(src.substr(open + 1, src.size() - open - 2));
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name;
    std::string_view val = args[i];
    size_t eq = val.find('=');
    if (eq != std::string_view::npos && val.find('(') > eq) {
      name = std::string(trim(val.substr(0, eq)));
      val = trim(val.substr(eq + 1));
    } else if (i < order.size()) {
      name = order[i];
    } else {
      return std::nullopt;
    }
    if (name == "mode" || name == "nonlinearity") {
      auto s = string_literal(val);
      if (!s) return std::nullopt;
      if (name == "mode")
        spec.fan_out = *s == "fan_out";
      else
        spec.nonlinearity = *s;
      continue;
    }
    auto v = number(val);
    if (!v) return std::nullopt;
    if (name == "sigma")
      spec.sigma = *v;
    else if (name == "mean")
      spec.mean = *v;
    else if (name == "a")
      spec.a = *v;
    else if (name == "b")
      spec.b = *v;
    else if (name == "scale")
      spec.scale = *v;
    else if (name == "negative_slope")
      spec.negative_slope = *v;
    else if (name == "gain")
      spec.gain = *v;
    else if (name == "value")
      spec.value = *v;
    else
      return std::nullopt;
  }
  return spec;
}

std::string InitSpec::str() const {
  std::ostringstream os;
  switch (kind) {
    case Kind::Zero:
      return "Zero()";
    case Kind::One:
      return "One()";
    case Kind::Constant:
      os << "Constant(" << value << ")";
      break;
    case Kind::Normal:
      os << "Normal(sigma=" << sigma << ", mean=" << mean << ")";
      break;
    case Kind::TruncatedNormal:
      os << "TruncatedNormal(sigma=" << sigma << ", mean=" << mean << ", a=" << a << ", b=" << b
         << ")";
      break;
    case Kind::Uniform:
      os << "Uniform(scale=" << scale << ")";
      break;
    case Kind::HeUniform:
    case Kind::HeNormal:
      os << (kind == Kind::HeUniform ? "HeUniform" : "HeNormal")
         << "(negative_slope=" << negative_slope << ", mode='" << (fan_out ? "fan_out" : "fan_in")
         << "', nonlinearity='" << nonlinearity << "')";
      break;
    case Kind::XavierUniform:
    case Kind::XavierNormal:
      os << (kind == Kind::XavierUniform ? "XavierUniform" : "XavierNormal") << "(gain=" << gain
         << ")";
      break;
  }
  return os.str();
}

void fill_init(Tensor& t, const InitSpec& s, uint64_t seed) {
  if (!t.is_float()) {
    double v = s.kind == InitSpec::Kind::One ? 1 : s.kind == InitSpec::Kind::Constant ? s.value : 0;
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v);
    return;
  }
  float* p = t.data<float>();
  int64_t n = t.numel();
  Rng rng(seed);
  auto [fan_in, fan_out] = fans(t.shape());
  auto uniform = [&](double lo, double hi) {
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(lo + (hi - lo) * rng.uniform());
  };
  auto normal = [&](double mean, double sd) {
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(mean + sd * rng.normal());
  };
  using K = InitSpec::Kind;
  switch (s.kind) {
    case K::Zero:
      std::fill_n(p, n, 0.0f);
      break;
    case K::One:
      std::fill_n(p, n, 1.0f);
      break;
    case K::Constant:
      std::fill_n(p, n, static_cast<float>(s.value));
      break;
    case K::Normal:
      normal(s.mean, s.sigma);
      break;
    case K::TruncatedNormal:
      for (int64_t i = 0; i < n; ++i) {
        double v = 0;
        for (int tries = 0; tries < 1000; ++tries) {
          v = s.mean + s.sigma * rng.normal();
          if (v >= s.a && v <= s.b) break;
          v = std::clamp(v, s.a, s.b);
        }
        p[i] = static_cast<float>(v);
      }
      break;
    case K::Uniform:
      uniform(-s.scale, s.scale);
      break;
    case K::HeUniform:
    case K::HeNormal: {
      double fan = s.fan_out ? fan_out : fan_in;
      double sd = gain_of(s.nonlinearity, s.negative_slope) / std::sqrt(std::max(fan, 1.0));
      if (s.kind == K::HeUniform)
        uniform(-std::sqrt(3.0) * sd, std::sqrt(3.0) * sd);
      else
        normal(0, sd);
      break;
    }
    case K::XavierUniform: {
      double bound = s.gain * std::sqrt(6.0 / std::max(fan_in + fan_out, 1.0));
      uniform(-bound, bound);
      break;
    }
    case K::XavierNormal:
      normal(0, s.gain * std::sqrt(2.0 / std::max(fan_in + fan_out, 1.0)));
      break;
  }
  if (t.dtype() == DType::Float16) round_to_half(t);
}

std::string_view init_source_name(InitSource s) {
  switch (s) {
    case InitSource::Override:
      return "override";
    case InitSource::Attribute:
      return "attribute";
    case InitSource::SourceText:
      return "source";
    case InitSource::LayerDefault:
      return "layer default";
    case InitSource::Unknown:
      return "unknown";
    case InitSource::Loaded:
      return "loaded";
  }
  return "";
}

}  // namespace graphcore::runtime
