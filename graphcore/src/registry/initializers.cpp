// MindSpore's default Parameter initializers per layer (registry.h, default_initializer), as the
// nn layer sources of MindSpore 2.10 set them when `<param>_init` is None or not an argument.
#include <cmath>

#include "graphcore/registry.h"

namespace graphcore {

namespace {

// HeUniform(negative_slope=sqrt(5)): the weight default of nn.Conv*, nn.Dense (the PyTorch-like
// kaiming_uniform_(a=sqrt(5))).
InitSpec he_uniform_sqrt5() {
  InitSpec s = InitSpec::of(InitSpec::Kind::HeUniform);
  s.negative_slope = std::sqrt(5.0);
  return s;
}

// Uniform(1/sqrt(fan_in)) with the weight's fan-in: the bias default of nn.Conv*, nn.Dense.
std::optional<InitSpec> fan_in_uniform(const Shape* weight) {
  if (weight == nullptr || weight->rank() < 2 || !weight->fully_known()) return std::nullopt;
  double fan = 1;
  for (size_t i = 1; i < weight->rank(); ++i) fan *= static_cast<double>(weight->dims[i].value());
  if (fan <= 0) return std::nullopt;
  InitSpec s = InitSpec::of(InitSpec::Kind::Uniform);
  s.scale = 1.0 / std::sqrt(fan);
  return s;
}

}  // namespace

std::string weight_beside(std::string_view param) {
  const size_t dot = param.rfind('.');
  return std::string(dot == std::string_view::npos ? std::string_view()
                                                   : param.substr(0, dot + 1)) +
         "weight";
}

std::string init_argument_of(std::string_view rel) {
  if (rel == "moving_variance") return "moving_var_init";
  if (rel == "embedding_table") return "embedding_table";
  return std::string(rel) + "_init";
}

std::optional<InitSpec> default_initializer(std::string_view api, std::string_view rel,
                                            const Shape* weight,
                                            std::optional<int64_t> hidden_size) {
  using K = InitSpec::Kind;
  constexpr auto of = &InitSpec::of;
  if (api.starts_with("nn.Conv") || api == "nn.Dense" || api == "nn.BiDense") {
    if (rel == "weight") return he_uniform_sqrt5();
    if (rel == "bias") return fan_in_uniform(weight);
  }
  // Normalisation layers and embeddings, by the parameter's own name.
  const std::string_view leaf = rel.substr(rel.find_last_of('.') + 1);
  if (leaf == "gamma" || leaf == "moving_variance") return of(K::One);
  if (leaf == "beta" || leaf == "moving_mean") return of(K::Zero);
  if (leaf == "embedding_table") return of(K::Normal);  // 'normal': Normal(sigma=0.01)
  if (api == "nn.PReLU" && rel == "w") return InitSpec::constant(0.25);
  if (api == "nn.MultiheadAttention") {
    if (rel.ends_with("proj_weight")) return of(K::XavierUniform);
    if (rel == "out_proj.weight") return he_uniform_sqrt5();
    if (rel.ends_with("bias")) return of(K::Zero);
    if (rel == "bias_k" || rel == "bias_v") return of(K::XavierNormal);
  }
  if (hidden_size && *hidden_size > 0) {  // nn.RNN / LSTM / GRU: U(-1/sqrt(hidden), 1/sqrt(hidden))
    InitSpec s = of(K::Uniform);
    s.scale = 1.0 / std::sqrt(static_cast<double>(*hidden_size));
    return s;
  }
  if (leaf == "weight") return he_uniform_sqrt5();
  if (leaf == "bias") return of(K::Zero);
  return std::nullopt;
}

}  // namespace graphcore
