// Operator definitions: elementwise arithmetic, comparison, logic and unary math; Cast.
// Columns (graphcore/opdef.h): name, category, traits, unit, vector instructions per element (the
// hardware model's cost), precision under amp O2, CPU kernel, produced only by a pass.
#include "ops/families.h"

namespace graphcore::ops {

// MindIR export facts (opdef.h MindirDef): Add(x, y), a function primitive in MindSpore 2.10.
constexpr MindirArg kMindirAddArgs[] = {{"x", MindirValue::Input, {}, 0},
                                        {"y", MindirValue::Input, {}, 1}};
constexpr MindirDef kMindirAdd{"Add", MindirKind::Function, kMindirAddArgs};
// Sub, Mul, Div, Equal, NotEqual (input, other): gen_ops_prim classes. A Python scalar operand
// (`1.0 - m`, `ids != 0`) is a 0-d tensor Constant of the other operand's dtype, as
// mindspore.export writes `1.0 - m` and `ids != 0` (it writes `x * 2.0` as Muls(x, 2.0): the
// same value, docs/export.md).
constexpr MindirArg kMindirBinaryArgs[] = {{"input", MindirValue::Input, {}, 0},
                                           {"other", MindirValue::Input, {}, 1}};
constexpr MindirDef kMindirSub{"Sub", MindirKind::Function, kMindirBinaryArgs};
constexpr MindirDef kMindirMul{"Mul", MindirKind::Function, kMindirBinaryArgs};
constexpr MindirDef kMindirDiv{"Div", MindirKind::Function, kMindirBinaryArgs};
constexpr MindirDef kMindirEqual{"Equal", MindirKind::Function, kMindirBinaryArgs};
constexpr MindirDef kMindirNotEqual{"NotEqual", MindirKind::Function, kMindirBinaryArgs};
// Maximum, Minimum, Pow, Greater, Less (input, other / exponent) and the one-input Exp, Sqrt,
// Neg, Square, Rsqrt, Abs, Erf, Log: gen_ops_prim classes, function primitives in
// mindspore.export's files (measured; `ops.pow(x, 2.0)` writes Pow(x, 0-d tensor)).
constexpr MindirDef kMindirMaximum{"Maximum", MindirKind::Function, kMindirBinaryArgs};
constexpr MindirDef kMindirMinimum{"Minimum", MindirKind::Function, kMindirBinaryArgs};
constexpr MindirDef kMindirPow{"Pow", MindirKind::Function, kMindirBinaryArgs};
constexpr MindirDef kMindirGreater{"Greater", MindirKind::Function, kMindirBinaryArgs};
constexpr MindirDef kMindirLess{"Less", MindirKind::Function, kMindirBinaryArgs};
// FloorDiv(input, other) (measured: `x // 2.0` and ops.floor_div(x, y) in mindspore.export's
// file; a scalar operand is a 0-d tensor).
constexpr MindirDef kMindirFloorDiv{"FloorDiv", MindirKind::Function, kMindirBinaryArgs};
constexpr MindirArg kMindirUnaryArgs[] = {{"input", MindirValue::Input}};
constexpr MindirDef kMindirExp{"Exp", MindirKind::Function, kMindirUnaryArgs};
constexpr MindirDef kMindirSqrt{"Sqrt", MindirKind::Function, kMindirUnaryArgs};
constexpr MindirDef kMindirNeg{"Neg", MindirKind::Function, kMindirUnaryArgs};
// Sin(input), Cos(input): gen_ops_prim classes of one input (MindSpore 2.10's __call__(self,
// input), no __init__ arguments); edgenext's positional encoding.
constexpr MindirDef kMindirSin{"Sin", MindirKind::Function, kMindirUnaryArgs};
constexpr MindirDef kMindirCos{"Cos", MindirKind::Function, kMindirUnaryArgs};
// LogicalNot(input): `~mask` on a bool tensor in mindspore.export's file (measured).
constexpr MindirDef kMindirLogicalNot{"LogicalNot", MindirKind::Function, kMindirUnaryArgs};
constexpr MindirDef kMindirSquare{"Square", MindirKind::Function, kMindirUnaryArgs};
constexpr MindirDef kMindirRsqrt{"Rsqrt", MindirKind::Function, kMindirUnaryArgs};
constexpr MindirDef kMindirAbs{"Abs", MindirKind::Function, kMindirUnaryArgs};
constexpr MindirDef kMindirErf{"Erf", MindirKind::Function, kMindirUnaryArgs};
constexpr MindirDef kMindirLog{"Log", MindirKind::Function, kMindirUnaryArgs};
// ClipByValue: Maximum / Minimum with the bounds (MindirExpansion::ClipForms), as
// mindspore.export writes ops.clip_by_value.
constexpr MindirDef kMindirClip{
    "Maximum",        MindirKind::Function,      {}, {}, -1, false, false,
    MindirFold::None, MindirExpansion::ClipForms};
// Cast(input_x, dtype): not a gen_ops_prim class, but a function primitive in mindspore.export's
// file, the dtype an INT64 TypeId (float32 = 43, int32 = 34).
constexpr MindirArg kMindirCastArgs[] = {{"input_x", MindirValue::Input},
                                         {"dtype", MindirValue::TypeId}};
constexpr MindirDef kMindirCast{"Cast", MindirKind::Function, kMindirCastArgs};

// Sharding: BiasAdd's bias (C,) splits as the input's channel dimension 1; the output as the
// input (bias_add_info.cc).
constexpr ShardTie kShardBiasAddTies[] = {{{0, 1}, {1, 0}}};
constexpr ShardRule kShardBiasAdd{ShardOutput::Input0, kShardBiasAddTies};

std::span<const OpDef> elementwise_ops() {
  using C = OpCategory;
  using U = OpUnit;
  using P = OpPrecision;
  static const OpDef kRows[] = {
      {"Add", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_add, false,
       &ad::g_binary, false, &ox::o_add, &kMindirAdd},
      {"Sub", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_sub, false,
       &ad::g_binary, false, &ox::o_sub, &kMindirSub},
      {"Mul", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_mul, false,
       &ad::g_binary, false, &ox::o_mul, &kMindirMul},
      {"Div", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_div, false,
       &ad::g_binary, false, &ox::o_div, &kMindirDiv},
      {"RealDiv", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_div, false,
       &ad::g_binary},
      {"FloorDiv", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_floordiv,
       false, &ad::g_no_gradient, false, &ox::o_floordiv, &kMindirFloorDiv},
      {"FloorMod", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_mod, false,
       &ad::g_binary},
      {"Mod", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_trunc_mod, false,
       &ad::g_binary},
      {"Maximum", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_maximum,
       false, &ad::g_binary, false, nullptr, &kMindirMaximum},
      {"Minimum", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_minimum,
       false, &ad::g_binary, false, nullptr, &kMindirMinimum},
      {"Pow", C::Elementwise, kElementwise, U::Vector, 3, P::Float16, &kernels::k_pow, false,
       &ad::g_binary, false, nullptr, &kMindirPow},
      {"Neg", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_neg, false,
       &ad::g_neg, false, nullptr, &kMindirNeg},
      {"Abs", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_abs, false,
       &ad::g_unary, false, nullptr, &kMindirAbs},
      {"Exp", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_exp, false,
       &ad::g_unary, false, nullptr, &kMindirExp},
      {"Log", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_log, false,
       &ad::g_unary, false, nullptr, &kMindirLog},
      {"Sqrt", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_sqrt, false,
       &ad::g_unary, false, nullptr, &kMindirSqrt},
      {"Rsqrt", C::Elementwise, kElementwise, U::Vector, 2, P::Float16, &kernels::k_rsqrt, false,
       &ad::g_unary, false, nullptr, &kMindirRsqrt},
      {"Square", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_square, false,
       &ad::g_unary, false, nullptr, &kMindirSquare},
      {"Reciprocal", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_reciprocal,
       false, &ad::g_unary},
      {"Sign", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_sign, false,
       &ad::g_no_gradient},
      {"Floor", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_floor, false,
       &ad::g_no_gradient},
      {"Round", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_round, false,
       &ad::g_no_gradient},
      {"Erf", C::Elementwise, kElementwise, U::Vector, 4, P::Float16, &kernels::k_erf, false,
       &ad::g_unary, false, nullptr, &kMindirErf},
      {"Sin", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_sin, false,
       &ad::g_unary, false, nullptr, &kMindirSin},
      {"Cos", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_cos, false,
       &ad::g_unary, false, nullptr, &kMindirCos},
      {"Equal", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_eq, false,
       &ad::g_no_gradient, false, &ox::o_equal, &kMindirEqual},
      {"NotEqual", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_ne, false,
       &ad::g_no_gradient, false, &ox::o_equal, &kMindirNotEqual},
      {"Greater", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_gt, false,
       &ad::g_no_gradient, false, nullptr, &kMindirGreater},
      {"GreaterEqual", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_ge,
       false, &ad::g_no_gradient},
      {"Less", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_lt, false,
       &ad::g_no_gradient, false, nullptr, &kMindirLess},
      {"LessEqual", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_le, false,
       &ad::g_no_gradient},
      {"LogicalAnd", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_and, false,
       &ad::g_no_gradient},
      {"LogicalOr", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_or, false,
       &ad::g_no_gradient},
      {"LogicalNot", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_not, false,
       &ad::g_no_gradient, false, nullptr, &kMindirLogicalNot},
      {"Select", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_select, false,
       &ad::g_select},
      {"BiasAdd", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_bias_add,
       false, &ad::g_bias_add, false, &ox::o_bias_add, nullptr, &kShardBiasAdd},
      {"ClipByValue", C::Elementwise, kElementwise, U::Vector, 1, P::Float16, &kernels::k_clip,
       false, &ad::g_clip, false, &ox::o_clip, &kMindirClip},
      {"Invert", C::Elementwise, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_invert, false,
       &ad::g_no_gradient},
      {"Cast", C::Cast, kElementwise, U::Vector, 1, P::Float16, &kernels::k_cast, false,
       &ad::g_cast, false, &ox::o_cast, &kMindirCast},
      {"FusedElemwise", C::Elementwise, kTraitNone, U::Vector, 1, P::Float16, nullptr, true},
  };
  return kRows;
}

}  // namespace graphcore::ops
