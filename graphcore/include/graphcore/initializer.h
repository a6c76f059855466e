// Parameter initializers as facts of the analysed program: a MindSpore initializer
// (mindspore.common.initializer) with its arguments, recorded when a Parameter is created — a
// layer's `weight_init=Normal(0.02)`, MindSpore's default for that layer, or the
// `initializer(TruncatedNormal(0.02), shape)` of a Parameter built in model code. The runtime
// fills parameters from these records; nothing re-reads the source text.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace graphcore {

struct InitSpec {
  enum class Kind : uint8_t {
    Zero,
    One,
    Constant,         // value
    Normal,           // sigma, mean
    TruncatedNormal,  // sigma, mean, a, b (absolute bounds, like MindSpore)
    Uniform,          // scale: U(-scale, scale)
    HeUniform,        // negative_slope, mode, nonlinearity
    HeNormal,
    XavierUniform,  // gain
    XavierNormal,
    Values,  // the elements the program computed (`Parameter(Tensor(np_array))`), row-major
  };
  Kind kind = Kind::Zero;
  double value = 0;                                   // Constant
  double sigma = 0.01;                                // Normal, TruncatedNormal
  double mean = 0;                                    // Normal, TruncatedNormal
  double a = -2, b = 2;                               // TruncatedNormal
  double scale = 0.07;                                // Uniform
  double negative_slope = 0;                          // He*
  bool fan_out = false;                               // He*: mode='fan_out'
  std::string nonlinearity = "leaky_relu";            // He*
  double gain = 1;                                    // Xavier*
  std::shared_ptr<const std::vector<double>> values;  // Values: one per element

  // `kind` with its default arguments; Constant(value).
  static InitSpec of(Kind kind) {
    InitSpec s;
    s.kind = kind;
    return s;
  }
  static InitSpec constant(double value) {
    InitSpec s = of(Kind::Constant);
    s.value = value;
    return s;
  }
  // One argument of an initializer's constructor as the evaluator knows it.
  struct Arg {
    std::string_view keyword;           // empty: positional
    std::optional<double> number;       // an int, float or bool
    std::optional<std::string> string;  // a str
  };
  // The initializer MindSpore accepts by name ('normal', 'zeros', 'xavier_uniform', 'HeUniform':
  // mindspore.common.initializer's aliases, case-insensitive); nullopt for another name (and for
  // the ones Cellscope does not model: 'orthogonal', 'dirac', 'sparse', ...).
  static std::optional<InitSpec> named(std::string_view name);
  // `cls(*args)` for an initializer class ("Normal", "TruncatedNormal", ...) with the parameter
  // order of its __init__ in MindSpore 2.10; nullopt when an argument is not known or not one the
  // class takes.
  static std::optional<InitSpec> call(std::string_view cls, std::span<const Arg> args);
  [[nodiscard]] std::string str() const;  // "Normal(sigma=0.02, mean=0)"
  bool operator==(const InitSpec&) const = default;
};

// How a Parameter was to be initialised, recorded when it was created.
struct ParamInit {
  enum class Origin : uint8_t {
    Argument,      // what the program passed: `weight_init=...`, `initializer(...)`, a tensor of
                   // one known value
    LayerDefault,  // MindSpore's default for this layer and parameter
    Substitute,    // the program's initializer is not known statically (a tensor it computes):
                   // the layer's default stands in, and the note says so
  };
  InitSpec spec;
  Origin origin = Origin::LayerDefault;
  std::string note;  // "weight_init=Normal(sigma=0.02, mean=0)", "nn.Dense's default for bias"
  bool operator==(const ParamInit&) const = default;
};

}  // namespace graphcore
