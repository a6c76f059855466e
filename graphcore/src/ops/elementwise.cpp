// Operator definitions: elementwise arithmetic, comparison, logic and unary math; Cast.
// Columns (graphcore/opdef.h): name, category, traits, unit, vector instructions per element (the
// hardware model's cost), precision under amp O2, CPU kernel, produced only by a pass.
#include "ops/families.h"

namespace graphcore::ops {

std::span<const OpDef> elementwise_ops() {
  using C = OpCategory;
  using U = OpUnit;
  using P = OpPrecision;
  static const OpDef kRows[] = {
      {"Add", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_add, false,
       &ad::g_binary},
      {"Sub", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_sub, false,
       &ad::g_binary},
      {"Mul", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_mul, false,
       &ad::g_binary},
      {"Div", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_div, false,
       &ad::g_binary},
      {"RealDiv", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_div, false,
       &ad::g_binary},
      {"FloorDiv", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_floordiv,
       false},
      {"FloorMod", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_mod, false},
      {"Mod", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_trunc_mod, false},
      {"Maximum", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_maximum,
       false, &ad::g_binary},
      {"Minimum", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_minimum,
       false, &ad::g_binary},
      {"Pow", C::Elementwise, kElementwise, U::Vector, 3, P::Float16, &kernels::k_pow, false,
       &ad::g_binary},
      {"Neg", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_neg, false,
       &ad::g_neg},
      {"Abs", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_abs, false,
       &ad::g_unary},
      {"Exp", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_exp, false,
       &ad::g_unary},
      {"Log", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_log, false,
       &ad::g_unary},
      {"Sqrt", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_sqrt, false,
       &ad::g_unary},
      {"Rsqrt", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_rsqrt, false,
       &ad::g_unary},
      {"Square", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_square, false,
       &ad::g_unary},
      {"Reciprocal", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_reciprocal,
       false, &ad::g_unary},
      {"Sign", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_sign, false},
      {"Floor", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_floor, false},
      {"Round", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_round, false},
      {"Erf", C::Elementwise, kElementwise, U::Vector, 4, P::Float16, &kernels::k_erf, false,
       &ad::g_unary},
      {"Sin", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_sin, false,
       &ad::g_unary},
      {"Cos", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_cos, false,
       &ad::g_unary},
      {"Equal", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_eq, false},
      {"NotEqual", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_ne, false},
      {"Greater", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_gt, false},
      {"GreaterEqual", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_ge,
       false},
      {"Less", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_lt, false},
      {"LessEqual", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_le, false},
      {"LogicalAnd", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_and,
       false},
      {"LogicalOr", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_or, false},
      {"LogicalNot", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_not,
       false},
      {"Select", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_select, false},
      {"BiasAdd", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_bias_add,
       false, &ad::g_bias_add},
      {"ClipByValue", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_clip,
       false},
      {"Invert", C::Elementwise, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_invert, false},
      {"Cast", C::Cast, kElementwise, U::Vector, 1, P::Float16, &kernels::k_cast, false,
       &ad::g_cast},
      {"FusedElemwise", C::Elementwise, kTraitNone, U::Vector, 1, P::Float16, nullptr, true},
  };
  return kRows;
}

}  // namespace graphcore::ops
