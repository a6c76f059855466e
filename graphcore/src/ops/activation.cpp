// Operator definitions: activations and softmax.
// Columns (graphcore/opdef.h): name, category, traits, unit, vector instructions per element (the
// hardware model's cost), precision under amp O2, CPU kernel, produced only by a pass.
#include "ops/families.h"

namespace graphcore::ops {

std::span<const OpDef> activation_ops() {
  using C = OpCategory;
  using U = OpUnit;
  using P = OpPrecision;
  static const OpDef kRows[] = {
      {"ReLU", C::Activation, kElementwise | kActivation, U::Vector, 1, P::Float16,
       &kernels::k_relu, false},
      {"ReLU6", C::Activation, kElementwise | kActivation, U::Vector, 1, P::Float16,
       &kernels::k_relu6, false},
      {"Sigmoid", C::Activation, kElementwise | kActivation, U::Vector, 4, P::Float16,
       &kernels::k_sigmoid, false},
      {"Tanh", C::Activation, kElementwise | kActivation, U::Vector, 4, P::Float16,
       &kernels::k_tanh, false},
      {"GeLU", C::Activation, kElementwise | kActivation, U::Vector, 6, P::Float16,
       &kernels::k_gelu, false},
      {"FastGeLU", C::Activation, kElementwise | kActivation, U::Vector, 4, P::Float16,
       &kernels::k_fast_gelu, false},
      {"SiLU", C::Activation, kElementwise | kActivation, U::Vector, 4, P::Float16,
       &kernels::k_silu, false},
      {"HSwish", C::Activation, kElementwise | kActivation, U::Vector, 3, P::Float16,
       &kernels::k_hswish, false},
      {"HSigmoid", C::Activation, kElementwise | kActivation, U::Vector, 3, P::Float16,
       &kernels::k_hsigmoid, false},
      {"LeakyReLU", C::Activation, kElementwise | kActivation, U::Vector, 1, P::Float16,
       &kernels::k_leaky_relu, false},
      {"Elu", C::Activation, kElementwise | kActivation, U::Vector, 1, P::Float16, &kernels::k_elu,
       false},
      {"Softplus", C::Activation, kElementwise, U::Vector, 1, P::Float16, &kernels::k_softplus,
       false},
      {"Mish", C::Activation, kElementwise, U::Vector, 6, P::Float16, &kernels::k_mish, false},
      {"PReLU", C::Activation, kElementwise, U::Vector, 1, P::Float16, &kernels::k_prelu, false},
      {"Tanhshrink", C::Activation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_tanhshrink,
       false},
      {"Softmax", C::Softmax, kTraitNone, U::Vector, 5, P::Float16, &kernels::k_softmax, false},
      {"LogSoftmax", C::Softmax, kTraitNone, U::Vector, 6, P::Float16, &kernels::k_log_softmax,
       false},
      {"Softmin", C::Softmax, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_softmin, false},
  };
  return kRows;
}

}  // namespace graphcore::ops
