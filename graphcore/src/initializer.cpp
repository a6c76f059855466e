// InitSpec: MindSpore's initializers by name and by constructor call (graphcore/initializer.h).
#include "graphcore/initializer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <sstream>

namespace graphcore {

namespace {

std::optional<InitSpec::Kind> kind_from_name(std::string_view name) {
  std::string n;
  for (char c : name) {
    if (c != '_') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  using K = InitSpec::Kind;
  static constexpr std::array<std::pair<std::string_view, K>, 12> kNames = {{
      {"zero", K::Zero},
      {"zeros", K::Zero},
      {"one", K::One},
      {"ones", K::One},
      {"normal", K::Normal},
      {"truncatednormal", K::TruncatedNormal},
      {"uniform", K::Uniform},
      {"heuniform", K::HeUniform},
      {"henormal", K::HeNormal},
      {"xavieruniform", K::XavierUniform},
      {"xaviernormal", K::XavierNormal},
      {"constant", K::Constant},
  }};
  for (const auto& [text, kind] : kNames) {
    if (n == text) return kind;
  }
  return std::nullopt;
}

// The parameters of each initializer's __init__, in order (inspect.signature, MindSpore 2.10).
std::span<const std::string_view> parameters(InitSpec::Kind k) {
  using K = InitSpec::Kind;
  static constexpr std::array<std::string_view, 2> kNormal = {"sigma", "mean"};
  static constexpr std::array<std::string_view, 4> kTruncated = {"sigma", "mean", "a", "b"};
  static constexpr std::array<std::string_view, 1> kUniform = {"scale"};
  static constexpr std::array<std::string_view, 3> kHe = {"negative_slope", "mode", "nonlinearity"};
  static constexpr std::array<std::string_view, 1> kXavier = {"gain"};
  static constexpr std::array<std::string_view, 1> kConstant = {"value"};
  switch (k) {
    case K::Normal:
      return kNormal;
    case K::TruncatedNormal:
      return kTruncated;
    case K::Uniform:
      return kUniform;
    case K::HeUniform:
    case K::HeNormal:
      return kHe;
    case K::XavierUniform:
    case K::XavierNormal:
      return kXavier;
    case K::Constant:
      return kConstant;
    case K::Zero:
    case K::One:
    case K::Values:
      break;
  }
  return {};
}

// Sets parameter `name` of `spec` from `arg`; false when the value is not one it can take.
bool set_parameter(InitSpec& spec, std::string_view name, const InitSpec::Arg& arg) {
  if (name == "mode" || name == "nonlinearity") {
    if (!arg.string) return false;
    if (name == "mode") {
      if (*arg.string != "fan_in" && *arg.string != "fan_out") return false;
      spec.fan_out = *arg.string == "fan_out";
    } else {
      spec.nonlinearity = *arg.string;
    }
    return true;
  }
  if (!arg.number) return false;
  const double v = *arg.number;
  if (name == "sigma") {
    spec.sigma = v;
  } else if (name == "mean") {
    spec.mean = v;
  } else if (name == "a") {
    spec.a = v;
  } else if (name == "b") {
    spec.b = v;
  } else if (name == "scale") {
    spec.scale = v;
  } else if (name == "negative_slope") {
    spec.negative_slope = v;
  } else if (name == "gain") {
    spec.gain = v;
  } else if (name == "value") {
    spec.value = v;
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::optional<InitSpec> InitSpec::named(std::string_view name) {
  auto k = kind_from_name(name);
  // 'constant' is not a name MindSpore's initializer() accepts (Constant needs its value).
  if (!k || *k == Kind::Constant) return std::nullopt;
  return of(*k);
}

std::optional<InitSpec> InitSpec::call(std::string_view cls, std::span<const Arg> args) {
  auto k = kind_from_name(cls);
  if (!k) return std::nullopt;
  InitSpec spec = of(*k);
  const auto order = parameters(*k);
  bool value_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view name = args[i].keyword;
    if (name.empty()) {
      if (i >= order.size()) return std::nullopt;
      name = order[i];
    } else if (std::ranges::find(order, name) == order.end()) {
      return std::nullopt;
    }
    if (!set_parameter(spec, name, args[i])) return std::nullopt;
    value_given |= name == "value";
  }
  if (*k == Kind::Constant && !value_given) return std::nullopt;  // Constant(value) is required
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
    case Kind::Values:
      os << "values computed by the program (" << (values ? values->size() : 0) << " elements)";
      break;
  }
  return os.str();
}

}  // namespace graphcore
