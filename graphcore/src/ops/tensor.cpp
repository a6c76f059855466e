// Operator definitions: reductions, shape and index operators, creation, random operators, and
// the operators only passes (fusion, amp, layout, folding) or control flow (Merge) produce.
// Columns (graphcore/opdef.h): name, category, traits, unit, vector instructions per element (the
// hardware model's cost), precision under amp O2, CPU kernel, produced only by a pass.
#include "ops/families.h"

namespace graphcore::ops {

// MindIR export facts (opdef.h MindirDef), checked against MindSpore 2.10's exported files.
// ReduceMean(x, axis) + (keep_dims); Flatten(input) keeps the batch axis only.
constexpr MindirArg kMindirReduceMeanArgs[] = {{"x", MindirValue::Input},
                                               {"axis", MindirValue::ReduceAxes, "axis"},
                                               {"keep_dims", MindirValue::ReduceKeep, "keep_dims"}};
constexpr MindirDef kMindirReduceMean{"ReduceMean", MindirKind::Function, kMindirReduceMeanArgs};
// ReduceSum(x, axis) + (keep_dims, skip_mode); ReduceMax / ReduceMin(x, axis) + (keep_dims): the
// axes as the runtime's kernel resolves them (each >= 0; every axis spelled out), measured
// against mindspore.export of ops.ReduceSum(keep_dims=True)(x, (2, 3)), ops.ReduceMax()(x, 1).
// (x.sum(axis) exports as SumExt there; ReduceSum computes the same.)
constexpr MindirArg kMindirReduceSumArgs[] = {{"x", MindirValue::Input},
                                              {"axis", MindirValue::ReduceAxes, "axis"},
                                              {"keep_dims", MindirValue::ReduceKeep, "keep_dims"},
                                              {"skip_mode", MindirValue::LiteralBool, {}, 0}};
constexpr MindirDef kMindirReduceSum{"ReduceSum", MindirKind::Function, kMindirReduceSumArgs};
constexpr MindirArg kMindirReduceExtremumArgs[] = {
    {"x", MindirValue::Input},
    {"axis", MindirValue::ReduceAxes, "axis"},
    {"keep_dims", MindirValue::ReduceKeep, "keep_dims"}};
constexpr MindirDef kMindirReduceMax{"ReduceMax", MindirKind::Function, kMindirReduceExtremumArgs};
constexpr MindirDef kMindirReduceMin{"ReduceMin", MindirKind::Function, kMindirReduceExtremumArgs};
// Squeeze(input) + (axis): the recorded axes, () (every size-1 axis) when none.
constexpr MindirArg kMindirSqueezeArgs[] = {{"input", MindirValue::Input},
                                            {"axis", MindirValue::Axes, "axis"}};
constexpr MindirDef kMindirSqueeze{"Squeeze", MindirKind::Function, kMindirSqueezeArgs};
// Other start_dim / end_dim: a Reshape to the output's shape (MindirExpansion::FlattenReshape).
constexpr MindirArg kMindirFlattenArgs[] = {{"input", MindirValue::Input}};
constexpr MindirDef kMindirFlatten{
    "Flatten",        MindirKind::Function,           kMindirFlattenArgs, {}, -1, false, false,
    MindirFold::None, MindirExpansion::FlattenReshape};
// Reshape(input, shape): the shape as evaluated (the node's output dims, -1 resolved);
// Transpose(input, dims).
constexpr MindirArg kMindirReshapeArgs[] = {{"input", MindirValue::Input},
                                            {"shape", MindirValue::OutputShape}};
constexpr MindirDef kMindirReshape{"Reshape", MindirKind::Function, kMindirReshapeArgs};
constexpr MindirArg kMindirTransposeArgs[] = {{"input", MindirValue::Input},
                                              {"dims", MindirValue::Ints, "perm", 1}};
// Dropout: the exported graph is the inference one (set_train(False)), where it is the identity
// and MindSpore's own export writes nothing.
constexpr MindirDef kMindirDropout{"Dropout", MindirKind::Function, {}, {}, -1, false, true};
constexpr MindirDef kMindirTranspose{"Transpose", MindirKind::Function, kMindirTransposeArgs};

// Sharding (docs/parallel.md §13): a transpose permutes its input's splits (TransposeInfo's
// output tensor map is the permuted input map); a reshape keeps a split that stays on the
// leading dimension of its group of dimensions (graphcore/src/parallel_check.cpp
// reshape_split), anything else needs a redistribution MindSpore inserts (ReshapeInfo).
constexpr ShardRule kShardTranspose{ShardOutput::Permute};
constexpr ShardRule kShardReshape{ShardOutput::Reshape};
// nn.Identity: mindspore.export writes nothing for it (measured), as for Dropout.
constexpr MindirDef kMindirIdentity{"Identity", MindirKind::Function, {}, {}, -1, false, true};
// BroadcastTo(input, shape): the output's static shape (measured: ops.broadcast_to(x, (2, 4, 6,
// 6)) and ops.BroadcastTo((2, 4, 6, 6)) both write the full target shape).
constexpr MindirArg kMindirBroadcastToArgs[] = {{"input", MindirValue::Input},
                                                {"shape", MindirValue::OutputShape}};
constexpr MindirDef kMindirBroadcastTo{"BroadcastTo", MindirKind::Function, kMindirBroadcastToArgs};
// ExpandDims(input_x, axis) with the recorded int axis.
constexpr MindirArg kMindirExpandDimsArgs[] = {{"input_x", MindirValue::Input},
                                               {"axis", MindirValue::RequiredInt, "axis"}};
constexpr MindirDef kMindirExpandDims{"ExpandDims", MindirKind::Function, kMindirExpandDimsArgs};
// Concat(tensors) + (axis): the tensors as a MakeTuple node.
constexpr MindirArg kMindirConcatArgs[] = {{"tensors", MindirValue::AllInputs},
                                           {"axis", MindirValue::Int, "axis", 0}};
constexpr MindirDef kMindirConcat{"Concat", MindirKind::Function, kMindirConcatArgs};
// Unstack: an attribute primitive (num, axis) returning a tuple; readers take TupleGetItem(i).
constexpr MindirArg kMindirUnstackArgs[] = {{"x", MindirValue::Input},
                                            {"num", MindirValue::OutputCount},
                                            {"axis", MindirValue::Int, "axis", 0}};
constexpr MindirDef kMindirUnstack{"Unstack", MindirKind::Attribute, kMindirUnstackArgs};
// Stack: an attribute primitive (num, axis, N) on the tensors as one tuple (measured:
// ops.stack((a, b), -1) and ops.Stack(axis=1)((a, a)) write num = N = 2 and the axis as written;
// a list argument is a make_list node, a tuple a MakeTuple).
constexpr MindirArg kMindirStackArgs[] = {{"x", MindirValue::AllInputs},
                                          {"num", MindirValue::InputCount},
                                          {"axis", MindirValue::Int, "axis", 0},
                                          {"N", MindirValue::InputCount}};
constexpr MindirDef kMindirStack{"Stack", MindirKind::Attribute, kMindirStackArgs};
// Split(input_x, axis, output_num), a function primitive returning a tuple (measured:
// ops.split(x, 2, 1) on (2, 4)); unequal sizes (ops.split(x, [3, 5], 1)) as StridedSlices, as
// MindSpore writes them (MindirExpansion::SplitSlices).
constexpr MindirArg kMindirSplitArgs[] = {{"input_x", MindirValue::Input},
                                          {"axis", MindirValue::Int, "axis", 0},
                                          {"output_num", MindirValue::EqualSplits, "axis"}};
constexpr MindirDef kMindirSplit{
    "Split",          MindirKind::Function,        kMindirSplitArgs, {}, -1, false, false,
    MindirFold::None, MindirExpansion::SplitSlices};
// CumSum(x, axis, exclusive, reverse): exclusive and reverse False (measured: ops.cumsum(x, 1),
// x.cumsum(0)); a dtype other than the input's is refused.
constexpr MindirArg kMindirCumSumArgs[] = {{"x", MindirValue::Input},
                                           {"axis", MindirValue::RequiredInt, "axis"},
                                           {"exclusive", MindirValue::LiteralBool, {}, 0},
                                           {"reverse", MindirValue::LiteralBool, {}, 0},
                                           {"dtype", MindirValue::SameDtype}};
constexpr MindirDef kMindirCumSum{"CumSum", MindirKind::Function, kMindirCumSumArgs};
// Pad: nn.Pad as the Pad primitive, ops.pad as PadV3 (MindirExpansion::PadForms).
constexpr MindirDef kMindirPad{"Pad",
                               MindirKind::Attribute,
                               {},
                               {},
                               -1,
                               false,
                               false,
                               MindirFold::None,
                               MindirExpansion::PadForms,
                               {},
                               "PadV3"};
// ReduceVar and ReduceStd: several primitives (MindirExpansion::VarForms), by the API that
// recorded them and their ddof.
constexpr MindirDef kMindirReduceVar{
    "ReduceStd",      MindirKind::Function,     {}, {}, -1, false, false,
    MindirFold::None, MindirExpansion::VarForms};
// Roll: StridedSlice pairs and Concat (MindirExpansion::RollSlices), as mindspore.numpy.roll
// writes it.
constexpr MindirDef kMindirRoll{
    "StridedSlice",   MindirKind::Function,       {}, {}, -1, false, false,
    MindirFold::None, MindirExpansion::RollSlices};
// Tile(input, multiples): not a gen_ops_prim class; a function primitive in mindspore.export's
// file. The multiples are the output / input dims (the recorded ones may be symbolic).
constexpr MindirArg kMindirTileArgs[] = {{"input", MindirValue::Input},
                                         {"multiples", MindirValue::Multiples}};
constexpr MindirDef kMindirTile{"Tile", MindirKind::Function, kMindirTileArgs};
// StridedSlice(input_x, begin, end, strides) + (begin_mask, end_mask, ellipsis_mask,
// new_axis_mask, shrink_axis_mask): the evaluator records getitem in this form.
constexpr MindirArg kMindirStridedSliceArgs[] = {
    {"input_x", MindirValue::Input},
    {"begin", MindirValue::Ints, "begin", 1},
    {"end", MindirValue::Ints, "end", 1},
    {"strides", MindirValue::Ints, "strides", 1},
    {"begin_mask", MindirValue::Int, "begin_mask", 0},
    {"end_mask", MindirValue::Int, "end_mask", 0},
    {"ellipsis_mask", MindirValue::Int, "ellipsis_mask", 0},
    {"new_axis_mask", MindirValue::Int, "new_axis_mask", 0},
    {"shrink_axis_mask", MindirValue::Int, "shrink_axis_mask", 0},
    // `x[:, :, :, None]`: MindSpore 2.10's StridedSlice refuses a begin longer than the input's
    // rank when the file is loaded (measured on edgenext's positional encoding). The exporter
    // writes a new axis as MindSpore does (ExpandDims first, export/mindir.cpp
    // expand_new_axes); one left here (with an ellipsis) is refused.
    {"new_axis_mask", MindirValue::Require, "new_axis_mask", 0}};
constexpr MindirDef kMindirStridedSlice{"StridedSlice", MindirKind::Function,
                                        kMindirStridedSliceArgs};
// Gather(input_params, input_indices, axis) + (batch_dims): nn.Embedding's table is the
// params (axis 0); ops.gather(x, indices, axis) its two inputs.
constexpr MindirArg kMindirGatherArgs[] = {
    {"input_params", MindirValue::Weight, "embedding_table", 0},
    {"input_indices", MindirValue::IndexInput, "embedding_table", 1},
    {"axis", MindirValue::Int, "axis", 0},
    {"batch_dims", MindirValue::Int, "batch_dims", 0}};
constexpr MindirDef kMindirGather{"Gather", MindirKind::Function, kMindirGatherArgs};
// Folded to constant tensors, as MindSpore's compile folds them (opdef.h MindirFold).
constexpr MindirDef kMindirRange{"Range", MindirKind::Function, {}, {}, -1, false,
                                 false,   MindirFold::Range};
// ops.zeros / ops.Zeros of a static shape: a Constant tensor of zeros (measured: MindSpore's
// compile folds both, `z * x` is Mul(Constant zeros, x)).
constexpr MindirDef kMindirZeros{"Zeros", MindirKind::Function, {}, {}, -1, false,
                                 false,   MindirFold::Zeros};
constexpr MindirDef kMindirZerosLike{"ZerosLike", MindirKind::Function, {}, {}, -1, false,
                                     false,       MindirFold::Zeros};
constexpr MindirDef kMindirOnesLike{"OnesLike", MindirKind::Function, {}, {}, -1, false,
                                    false,      MindirFold::Ones};

std::span<const OpDef> tensor_ops() {
  using C = OpCategory;
  using U = OpUnit;
  using P = OpPrecision;
  static const OpDef kRows[] = {
      {"ReduceSum", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_sum,
       false, &ad::g_reduce, false, &ox::o_reduce_sum, &kMindirReduceSum},
      {"ReduceMean", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_mean,
       false, &ad::g_reduce, false, &ox::o_reduce_mean, &kMindirReduceMean},
      {"ReduceMax", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_max,
       false, &ad::g_reduce_extremum, false, nullptr, &kMindirReduceMax},
      {"ReduceMin", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_min,
       false, &ad::g_reduce_extremum, false, nullptr, &kMindirReduceMin},
      {"ReduceProd", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_reduce_prod,
       false, &ad::g_reduce_prod},
      {"ReduceStd", C::Reduction, kTraitNone, U::Vector, 3, P::Float16, &kernels::k_reduce_std,
       false, &ad::g_moments, false, nullptr, &kMindirReduceVar},
      {"ReduceVar", C::Reduction, kTraitNone, U::Vector, 3, P::Float16, &kernels::k_reduce_var,
       false, &ad::g_moments, false, &ox::o_reduce_var, &kMindirReduceVar},
      {"LogSumExp", C::Reduction, kTraitNone, U::Vector, 4, P::Float16, &kernels::k_logsumexp,
       false, &ad::g_logsumexp},
      {"Argmax", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_argmax_, false,
       &ad::g_no_gradient},
      {"Argmin", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_argmin_, false,
       &ad::g_no_gradient},
      {"ArgMaxWithValue", C::Reduction, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_argmax_with_value, false, &ad::g_arg_extremum_with_value},
      {"ArgMinWithValue", C::Reduction, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_argmin_with_value, false, &ad::g_arg_extremum_with_value},
      {"TopK", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_topk, false,
       &ad::g_topk},
      {"CumSum", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_cumsum, false,
       &ad::g_cumsum, false, &ox::o_cumsum, &kMindirCumSum},
      {"Reshape", C::Shape, kReshapeLike | kHostNoop, U::Host, 1, P::Float16, &kernels::k_reshape,
       false, &ad::g_reshape, false, &ox::o_reshape, &kMindirReshape, &kShardReshape},
      {"Flatten", C::Shape, kReshapeLike | kHostNoop, U::Host, 1, P::Float16, &kernels::k_reshape,
       false, &ad::g_reshape, false, &ox::o_reshape, &kMindirFlatten, &kShardReshape},
      {"ExpandDims", C::Shape, kReshapeLike | kHostNoop, U::Host, 1, P::Float16,
       &kernels::k_reshape, false, &ad::g_reshape, false, &ox::o_reshape, &kMindirExpandDims,
       &kShardReshape},
      {"Squeeze", C::Shape, kReshapeLike | kHostNoop, U::Host, 1, P::Float16, &kernels::k_reshape,
       false, &ad::g_reshape, false, &ox::o_reshape, &kMindirSqueeze, &kShardReshape},
      {"Identity", C::Shape, kHostNoop, U::Host, 1, P::Float16, &kernels::k_identity, false,
       &ad::g_identity, false, nullptr, &kMindirIdentity},
      {"Narrow", C::Shape, kHostNoop, U::Host, 1, P::Float16, &kernels::k_narrow, false,
       &ad::g_narrow},
      {"Transpose", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_transpose, false,
       &ad::g_transpose, false, &ox::o_transpose, &kMindirTranspose, &kShardTranspose},
      {"Concat", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_concat, false,
       &ad::g_concat, false, &ox::o_concat, &kMindirConcat},
      {"Stack", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_stack, false,
       &ad::g_stack, false, &ox::o_stack, &kMindirStack},
      {"Split", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_split, false,
       &ad::g_split, false, &ox::o_split, &kMindirSplit},
      {"Unstack", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_unstack, false,
       &ad::g_unstack, false, &ox::o_unstack, &kMindirUnstack},
      {"Tile", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_tile, false, &ad::g_tile,
       false, &ox::o_tile, &kMindirTile},
      // ops.roll / mindspore.numpy.roll: slices and a concatenation per shifted axis in MindIR
      // (as mindspore.numpy.roll writes it) and in ONNX (which has no roll).
      {"Roll", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_roll, false, &ad::g_roll,
       false, &ox::o_roll, &kMindirRoll},
      {"BroadcastTo", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_broadcast_to,
       false, &ad::g_broadcast_to, false, &ox::o_broadcast_to, &kMindirBroadcastTo},
      {"StridedSlice", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_strided_slice,
       false, &ad::g_strided_slice, false, &ox::o_strided_slice, &kMindirStridedSlice},
      {"Pad", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_pad, false, &ad::g_pad,
       false, &ox::o_pad, &kMindirPad},
      {"Gather", C::Index, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_gather, false,
       &ad::g_gather, false, &ox::o_gather, &kMindirGather},
      {"OneHot", C::Index, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_one_hot, false,
       &ad::g_no_gradient},
      {"MaskedFill", C::Index, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_masked_fill, false,
       &ad::g_masked_fill},
      {"Zeros", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_fill, false,
       &ad::g_no_gradient, false, &ox::o_fill_like, &kMindirZeros},
      {"Ones", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_fill, false,
       &ad::g_no_gradient},
      {"Fill", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_fill, false,
       &ad::g_no_gradient},
      {"FillLike", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_fill, false,
       &ad::g_no_gradient},
      {"LinSpace", C::Creation, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_linspace, false,
       &ad::g_no_gradient},
      {"Range", C::Creation, kTraitNone, U::AiCpu, 1, P::Float16, &kernels::k_range, false,
       &ad::g_no_gradient, false, &ox::o_range, &kMindirRange},
      {"ZerosLike", C::Creation, kLikeInput, U::Vector, 1, P::Float16, &kernels::k_zeros_like,
       false, &ad::g_no_gradient, false, &ox::o_fill_like, &kMindirZerosLike},
      {"OnesLike", C::Creation, kLikeInput, U::Vector, 1, P::Float16, &kernels::k_ones_like, false,
       &ad::g_no_gradient, false, &ox::o_fill_like, &kMindirOnesLike},
      {"Constant", C::Creation, kTraitNone, U::Vector, 1, P::Float16, nullptr, true},
      {"Dropout", C::Random, kElementwise | kRandom, U::Vector, 3, P::Float16, &kernels::k_dropout,
       false, &ad::g_dropout, false, &ox::o_identity, &kMindirDropout},
      {"Dropout2D", C::Random, kRandom, U::Vector, 1, P::Float16, &kernels::k_dropout, false,
       &ad::g_dropout},
      {"StandardNormal", C::Random, kRandom, U::Vector, 1, P::Float16, &kernels::k_random, false,
       &ad::g_no_gradient},
      {"UniformReal", C::Random, kRandom, U::Vector, 1, P::Float16, &kernels::k_random, false,
       &ad::g_no_gradient},
      {"UniformInt", C::Random, kRandom, U::Vector, 1, P::Float16, &kernels::k_random, false,
       &ad::g_no_gradient},
      {"TransData", C::DataMove, kTraitNone, U::Vector, 1, P::Float16, nullptr, true},
      {"Merge", C::Other, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_merge, false,
       &ad::g_merge},
      {"Custom", C::Other, kTraitNone, U::Vector, 1, P::Float16, nullptr, false},
  };
  return kRows;
}

}  // namespace graphcore::ops
