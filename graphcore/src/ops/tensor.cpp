// Operator definitions: reductions, shape and index operators, creation, random operators, and
// the operators only passes (fusion, amp, layout, folding) or control flow (Merge) produce.
// Columns (graphcore/opdef.h): name, category, traits, unit, vector instructions per element (the
// hardware model's cost), precision under amp O2, CPU kernel, produced only by a pass.
#include "ops/families.h"

namespace graphcore::ops {

std::span<const OpDef> tensor_ops() {
  using C = OpCategory;
  using U = OpUnit;
  using P = OpPrecision;
  static const OpDef kRows[] = {
      {"ReduceSum", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_sum,
       false, &ad::g_reduce},
      {"ReduceMean", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_mean,
       false, &ad::g_reduce},
      {"ReduceMax", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_max,
       false, &ad::g_reduce_extremum},
      {"ReduceMin", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_min,
       false, &ad::g_reduce_extremum},
      {"ReduceProd", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_prod,
       false},
      {"ReduceStd", C::Reduction, kTraitNone, U::Vector, 3, P::Float16, &kernels::k_reduce_std,
       false},
      {"ReduceVar", C::Reduction, kTraitNone, U::Vector, 3, P::Float16, &kernels::k_reduce_var,
       false},
      {"LogSumExp", C::Reduction, kTraitNone, U::Vector, 4, P::Float16, &kernels::k_logsumexp,
       false},
      {"Argmax", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_argmax_, false},
      {"Argmin", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_argmin_, false},
      {"ArgMaxWithValue", C::Reduction, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_argmax_with_value, false},
      {"ArgMinWithValue", C::Reduction, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_argmin_with_value, false},
      {"TopK", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_topk, false},
      {"CumSum", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_cumsum, false},
      {"Reshape", C::Shape, kReshapeLike | kHostNoop, U::Host, 1, P::Float16, &kernels::k_reshape,
       false, &ad::g_reshape},
      {"Flatten", C::Shape, kReshapeLike | kHostNoop, U::Host, 1, P::Float16, &kernels::k_reshape,
       false, &ad::g_reshape},
      {"ExpandDims", C::Shape, kReshapeLike | kHostNoop, U::Host, 1, P::Float16,
       &kernels::k_reshape, false, &ad::g_reshape},
      {"Squeeze", C::Shape, kReshapeLike | kHostNoop, U::Host, 1, P::Float16, &kernels::k_reshape,
       false, &ad::g_reshape},
      {"Identity", C::Shape, kHostNoop, U::Host, 1, P::Float16, &kernels::k_identity, false,
       &ad::g_identity},
      {"Narrow", C::Shape, kHostNoop, U::Host, 1, P::Float16, &kernels::k_narrow, false},
      {"Transpose", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_transpose, false,
       &ad::g_transpose},
      {"Concat", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_concat, false,
       &ad::g_concat},
      {"Stack", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_stack, false},
      {"Split", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_split, false,
       &ad::g_split},
      {"Unstack", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_unstack, false},
      {"Tile", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_tile, false},
      {"BroadcastTo", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_broadcast_to,
       false, &ad::g_broadcast_to},
      {"StridedSlice", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_strided_slice,
       false, &ad::g_strided_slice},
      {"Pad", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_pad, false},
      {"Gather", C::Index, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_gather, false,
       &ad::g_gather},
      {"OneHot", C::Index, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_one_hot, false},
      {"MaskedFill", C::Index, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_masked_fill,
       false},
      {"Zeros", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_fill, false},
      {"Ones", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_fill, false},
      {"Fill", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_fill, false},
      {"FillLike", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_fill, false},
      {"LinSpace", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_linspace, false},
      {"Range", C::Creation, kTraitNone, U::AiCpu, 1, P::Float16, &kernels::k_range, false},
      {"ZerosLike", C::Creation, kLikeInput, U::Vector, 1, P::Float16, &kernels::k_zeros_like,
       false},
      {"OnesLike", C::Creation, kLikeInput, U::Vector, 1, P::Float16, &kernels::k_ones_like, false},
      {"Constant", C::Creation, kTraitNone, U::Vector, 1, P::Float16, nullptr, true},
      {"Dropout", C::Random, kElementwise | kRandom, U::Vector, 3, P::Float16, &kernels::k_dropout,
       false, &ad::g_dropout},
      {"Dropout2D", C::Random, kRandom, U::Vector, 1, P::Float16, &kernels::k_dropout, false,
       &ad::g_dropout},
      {"StandardNormal", C::Random, kRandom, U::Vector, 1, P::Float16, &kernels::k_random, false},
      {"UniformReal", C::Random, kRandom, U::Vector, 1, P::Float16, &kernels::k_random, false},
      {"UniformInt", C::Random, kRandom, U::Vector, 1, P::Float16, &kernels::k_random, false},
      {"TransData", C::DataMove, kTraitNone, U::Vector, 1, P::Float16, nullptr, true},
      {"Merge", C::Other, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_merge, false},
      {"Custom", C::Other, kTraitNone, U::Vector, 1, P::Float16, nullptr, false},
  };
  return kRows;
}

}  // namespace graphcore::ops
