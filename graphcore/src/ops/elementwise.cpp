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
      {"Add", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_add, false},
      {"Sub", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_sub, false},
      {"Mul", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_mul, false},
      {"Div", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_div, false},
      {"RealDiv", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_div, false},
      {"FloorDiv", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_floordiv,
       false},
      {"FloorMod", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_mod, false},
      {"Mod", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_trunc_mod, false},
      {"Maximum", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_maximum,
       false},
      {"Minimum", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_minimum,
       false},
      {"Pow", C::Elementwise, kElementwise, U::Vector, 3, P::Float16, &kernels::k_pow, false},
      {"Neg", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_neg, false},
      {"Abs", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_abs, false},
      {"Exp", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_exp, false},
      {"Log", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_log, false},
      {"Sqrt", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_sqrt, false},
      {"Rsqrt", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_rsqrt, false},
      {"Square", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_square, false},
      {"Reciprocal", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_reciprocal,
       false},
      {"Sign", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_sign, false},
      {"Floor", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_floor, false},
      {"Round", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_round, false},
      {"Erf", C::Elementwise, kElementwise, U::Vector, 4, P::Float16, &kernels::k_erf, false},
      {"Sin", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_sin, false},
      {"Cos", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_cos, false},
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
       false},
      {"ClipByValue", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_clip,
       false},
      {"Invert", C::Elementwise, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_invert, false},
      {"Cast", C::Cast, kElementwise, U::Vector, 1, P::Float16, &kernels::k_cast, false},
      {"FusedElemwise", C::Elementwise, kTraitNone, U::Vector, 1, P::Float16, nullptr, true},
  };
  return kRows;
}

}  // namespace graphcore::ops
