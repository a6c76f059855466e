// Parameter initializers (graphcore/initializer.h, recorded by the analysis) filled reproducibly
// from a seed, as MindSpore's mindspore.common.initializer classes fill them.
#include <algorithm>
#include <cmath>

#include "runtime/internal.h"

namespace graphcore::runtime {

namespace {

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

void fill_init(Tensor& t, const InitSpec& s, uint64_t seed) {
  if (s.kind == InitSpec::Kind::Values) {
    if (!s.values || static_cast<int64_t>(s.values->size()) != t.numel())
      throw RuntimeError("the parameter's computed values do not match its shape");
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, (*s.values)[static_cast<size_t>(i)]);
    return;
  }
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
    case K::Values:  // filled above
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
    case InitSource::Argument:
      return "argument";
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
