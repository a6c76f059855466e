// Operator definitions: activations and softmax.
// Columns (graphcore/opdef.h): name, category, traits, unit, vector instructions per element (the
// hardware model's cost), precision under amp O2, CPU kernel, produced only by a pass.
#include "ops/families.h"

namespace graphcore::ops {

// MindIR export facts (opdef.h MindirDef), checked against MindSpore 2.10's exported files.
constexpr MindirArg kMindirX[] = {{"x", MindirValue::Input}};
constexpr MindirDef kMindirReLU{"ReLU", MindirKind::Function, kMindirX};
constexpr MindirDef kMindirReLU6{"ReLU6", MindirKind::Function, kMindirX};
// Sigmoid(input), Tanh(input): gen_ops_prim classes.
constexpr MindirArg kMindirInput[] = {{"input", MindirValue::Input}};
constexpr MindirDef kMindirSigmoid{"Sigmoid", MindirKind::Function, kMindirInput};
constexpr MindirDef kMindirTanh{"Tanh", MindirKind::Function, kMindirInput};
// nn.HSigmoid, nn.HSwish, nn.SiLU: one-input function primitives (measured; ops.hardswish and
// nn.HSwish both write HSwish(input)).
constexpr MindirDef kMindirHSwish{"HSwish", MindirKind::Function, kMindirInput};
constexpr MindirDef kMindirHSigmoid{"HSigmoid", MindirKind::Function, kMindirInput};
constexpr MindirDef kMindirSiLU{"SiLU", MindirKind::Function, kMindirInput};
// GeLU is the tanh approximation; nn.GELU(approximate=False) is written as its construct computes
// it (Div, Erf, Add, Mul, Mul), as mindspore.export writes it.
constexpr MindirDef kMindirGeLU{
    "GeLU",           MindirKind::Function,    kMindirInput, {}, -1, false, false,
    MindirFold::None, MindirExpansion::GeluErf};
// Softmax(input) + (axis), the axis as a tuple.
constexpr MindirArg kMindirSoftmaxArgs[] = {{"input", MindirValue::Input},
                                            {"axis", MindirValue::Ints, "axis", 1}};
constexpr MindirDef kMindirSoftmax{"Softmax", MindirKind::Function, kMindirSoftmaxArgs};

// Sharding: the softmax axis must not be split (softmax_info.cc); the output splits as the input.
constexpr ShardRule kShardSoftmax{ShardOutput::Input0, {}, {}, "axis", -1};

std::span<const OpDef> activation_ops() {
  using C = OpCategory;
  using U = OpUnit;
  using P = OpPrecision;
  static const OpDef kRows[] = {
      {"ReLU", C::Activation, kElementwise | kActivation, U::Vector, 1, P::Float16,
       &kernels::k_relu, false, &ad::g_unary, false, &ox::o_relu, &kMindirReLU},
      {"ReLU6", C::Activation, kElementwise | kActivation, U::Vector, 1, P::Float16,
       &kernels::k_relu6, false, &ad::g_unary, false, &ox::o_relu6, &kMindirReLU6},
      {"Sigmoid", C::Activation, kElementwise | kActivation, U::Vector, 4, P::Float16,
       &kernels::k_sigmoid, false, &ad::g_unary, false, &ox::o_sigmoid, &kMindirSigmoid},
      {"Tanh", C::Activation, kElementwise | kActivation, U::Vector, 4, P::Float16,
       &kernels::k_tanh, false, &ad::g_unary, false, &ox::o_tanh, &kMindirTanh},
      {"GeLU", C::Activation, kElementwise | kActivation, U::Vector, 6, P::Float16,
       &kernels::k_gelu, false, &ad::g_unary, false, &ox::o_gelu, &kMindirGeLU},
      {"FastGeLU", C::Activation, kElementwise | kActivation, U::Vector, 4, P::Float16,
       &kernels::k_fast_gelu, false, &ad::g_unary},
      {"SiLU", C::Activation, kElementwise | kActivation, U::Vector, 4, P::Float16,
       &kernels::k_silu, false, &ad::g_unary, false, &ox::o_silu, &kMindirSiLU},
      {"HSwish", C::Activation, kElementwise | kActivation, U::Vector, 3, P::Float16,
       &kernels::k_hswish, false, &ad::g_unary, false, &ox::o_hswish, &kMindirHSwish},
      {"HSigmoid", C::Activation, kElementwise | kActivation, U::Vector, 3, P::Float16,
       &kernels::k_hsigmoid, false, &ad::g_unary, false, &ox::o_hsigmoid, &kMindirHSigmoid},
      {"LeakyReLU", C::Activation, kElementwise | kActivation, U::Vector, 1, P::Float16,
       &kernels::k_leaky_relu, false, &ad::g_unary},
      {"Elu", C::Activation, kElementwise | kActivation, U::Vector, 1, P::Float16, &kernels::k_elu,
       false, &ad::g_unary},
      {"Softplus", C::Activation, kElementwise, U::Vector, 1, P::Float16, &kernels::k_softplus,
       false, &ad::g_unary},
      {"Mish", C::Activation, kElementwise, U::Vector, 6, P::Float16, &kernels::k_mish, false,
       &ad::g_unary},
      {"PReLU", C::Activation, kElementwise, U::Vector, 1, P::Float16, &kernels::k_prelu, false,
       &ad::g_prelu},
      {"Tanhshrink", C::Activation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_tanhshrink,
       false, &ad::g_unary},
      {"Softmax", C::Softmax, kTraitNone, U::Vector, 5, P::Float16, &kernels::k_softmax, false,
       &ad::g_softmax, false, &ox::o_softmax, &kMindirSoftmax, &kShardSoftmax},
      {"LogSoftmax", C::Softmax, kTraitNone, U::Vector, 6, P::Float16, &kernels::k_log_softmax,
       false, &ad::g_softmax, false, nullptr, nullptr, &kShardSoftmax},
      {"Softmin", C::Softmax, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_softmin, false,
       &ad::g_softmin},
  };
  return kRows;
}

}  // namespace graphcore::ops
