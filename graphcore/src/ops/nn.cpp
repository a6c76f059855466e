// Operator definitions of layers: normalization, convolution, matrix multiplication, attention,
// recurrent cells, pooling.
// Columns (graphcore/opdef.h): name, category, traits, unit, vector instructions per element (the
// hardware model's cost), precision under amp O2, CPU kernel, produced only by a pass.
#include "ops/families.h"

namespace graphcore::ops {

// ---- MindIR export facts (opdef.h MindirDef) ----------------------------------------------
// As MindSpore 2.10 exports nn.Conv2d, nn.MaxPool2d, nn.BatchNorm2d (inference) and nn.Dense /
// ops.matmul (docs/mindir-notes.md; tests/mindspore/test_export_mindir.py loads the result).
using MV = MindirValue;
// Conv2D is an attribute primitive; nn.Conv2d's bias is a BiasAdd after it.
constexpr MindirArg kMindirConv2DArgs[] = {
    {"x", MV::Input},
    {"weight", MV::Weight, "weight", 1},
    {"kernel_size", MV::Ints, "kernel_size", 2},
    {"mode", MV::Literal, {}, 1},
    {"out_channel", MV::Int, "out_channels"},
    {"pad", MV::Pad4, "padding"},
    {"pad_mode", MV::Lower, "pad_mode"},
    {"format", MV::LiteralText, "NCHW"},
    {"pad_list", MV::PadList, "padding"},
    {"groups", MV::Int, "group", 1},
    {"group", MV::Int, "group", 1},
    {"stride", MV::Ints4, "stride"},
    {"dilation", MV::Ints4, "dilation"},
};
constexpr MindirDef kMindirConv2D{"Conv2D", MindirKind::Attribute, kMindirConv2DArgs, "bias"};
// MaxPool: an attribute primitive with NCHW 4-tuples and an upper-case pad_mode. nn.MaxPool2d
// with pad_mode 'pad' is MaxPool3DWithArgmax on a 5-D view (MindirExpansion::Pool3DForms); the
// Require rows check the other forms.
constexpr MindirArg kMindirMaxPoolArgs[] = {
    {"x", MV::Input},
    {"pad_mode", MV::Upper, "pad_mode"},
    {"kernel_size", MV::Ints4, "kernel_size"},
    {"strides", MV::Ints4, "stride"},
    {"format", MV::LiteralText, "NCHW"},
    {"padding", MV::Require, "padding", 0},
    {"ceil_mode", MV::Require, "ceil_mode", 0},
    {"return_indices", MV::Require, "return_indices", 0},
};
constexpr MindirDef kMindirMaxPool{
    "MaxPool", MindirKind::Attribute, kMindirMaxPoolArgs,          {}, -1, false,
    false,     MindirFold::None,      MindirExpansion::Pool3DForms};
// AvgPool(x) + (kernel_size, strides, pad_mode, data_format): a function primitive with (h, w)
// pairs and pad_mode as MindSpore's enum (same 1, valid 2), data_format NCHW = 0 (measured:
// nn.AvgPool2d(2, 2) and nn.AvgPool2d(3, 1, pad_mode='same')). nn.AvgPool2d's padding /
// ceil_mode / count_include_pad / divisor_override forms are AvgPool3D on a 5-D view
// (MindirExpansion::Pool3DForms).
constexpr MindirArg kMindirAvgPoolArgs[] = {
    {"x", MV::Input},
    {"kernel_size", MV::Ints, "kernel_size", 2},
    {"strides", MV::Ints, "stride", 2},
    {"pad_mode", MV::PadModeEnum, "pad_mode"},
    {"data_format", MV::Literal, {}, 0},
    {"padding", MV::Require, "padding", 0},
    {"ceil_mode", MV::Require, "ceil_mode", 0},
};
constexpr MindirDef kMindirAvgPool{
    "AvgPool", MindirKind::Function, kMindirAvgPoolArgs,          {}, -1, false,
    false,     MindirFold::None,     MindirExpansion::Pool3DForms};
// AdaptiveAvgPool2D: an attribute primitive whose output_size is the output's (h, w) (measured:
// nn.AdaptiveAvgPool2d(1) writes output_size (1, 1)).
constexpr MindirArg kMindirAdaptiveAvgPool2DArgs[] = {
    {"input", MV::Input},
    {"output_size", MV::OutputHW, "output_size"},
};
constexpr MindirDef kMindirAdaptiveAvgPool2D{"AdaptiveAvgPool2D", MindirKind::Attribute,
                                             kMindirAdaptiveAvgPool2DArgs};
// BatchNorm(x, scale, bias, mean, variance) + (is_training, epsilon, momentum, data_format):
// inference form; MindSpore's momentum is 1 - nn.BatchNorm2d's; data_format NCHW = 0. The
// primitive returns (y, ...): element 0 is the output.
constexpr MindirArg kMindirBatchNormArgs[] = {
    {"x", MV::Input},
    {"scale", MV::Weight, "gamma", -1},
    {"bias", MV::Weight, "beta", -1},
    {"mean", MV::Weight, "moving_mean", -1},
    {"variance", MV::Weight, "moving_variance", -1},
    {"is_training", MV::LiteralBool, {}, 0},
    {"epsilon", MV::Float, "eps", 1e-5},
    {"momentum", MV::OneMinus, "momentum", 0.9},
    {"data_format", MV::Literal, {}, 0},
};
constexpr MindirDef kMindirBatchNorm{
    "BatchNorm", MindirKind::Function, kMindirBatchNormArgs, {}, 0};
// MatMul(input, mat2) + (transpose_a, transpose_b); nn.Dense's [out, in] weight is transposed,
// and its bias is a BiasAdd.
constexpr MindirArg kMindirMatMulArgs[] = {
    {"input", MV::Input},
    {"mat2", MV::Weight, "weight", 1},
    {"transpose_a", MV::Bool, "transpose_a", 0},
    {"transpose_b", MV::HasWeight, "weight"},
};
constexpr MindirDef kMindirMatMul{
    "MatMul", MindirKind::Function, kMindirMatMulArgs,     "bias",      -1, true,
    false,    MindirFold::None,     MindirExpansion::None, "activation"};
// BatchMatMul(x, y) + (transpose_a, transpose_b).
constexpr MindirArg kMindirBatchMatMulArgs[] = {
    {"x", MV::Input, {}, 0},
    {"y", MV::Input, {}, 1},
    {"transpose_a", MV::Bool, "transpose_a", 0},
    {"transpose_b", MV::Bool, "transpose_b", 0},
};
constexpr MindirDef kMindirBatchMatMul{"BatchMatMul", MindirKind::Function, kMindirBatchMatMulArgs};

// Sharding (docs/parallel.md, S7/S8): the contracted dimension (a's columns, b's rows; swapped by
// the transposes) splits alike on both inputs and leaves partial sums (a forward AllReduce);
// the output is split as a's rows by b's columns (matmul_info.cc MatMul::CheckInputStrategy,
// MatMulBase::InferForwardCommunication). BatchMatMul's batch dimensions split alike too.
constexpr ShardTie kShardMatMulTies[] = {{{0, -1, "transpose_a"}, {1, -2, "transpose_b"}, true}};
constexpr ShardDim kShardMatMulOut[] = {{0, -2, "transpose_a"}, {1, -1, "transpose_b"}};
constexpr ShardRule kShardMatMul{
    ShardOutput::Dims, kShardMatMulTies, kShardMatMulOut, {}, -1, true, true};
constexpr ShardRule kShardBatchMatMul{
    ShardOutput::Dims, kShardMatMulTies, kShardMatMulOut, {}, -1, false, false};
// Sharding: the dimensions from begin_norm_axis on are not split, gamma and beta split as the
// input's last dimensions, the output as the input (layer_norm_info.cc
// LayerNormInfo::CheckStrategy, InferTensorMap).
constexpr ShardTie kShardLayerNormTies[] = {{{1, -1}, {0, -1}, false}, {{2, -1}, {0, -1}, false}};
constexpr ShardRule kShardLayerNorm{
    ShardOutput::Input0, kShardLayerNormTies, {}, "begin_norm_axis", -1, false, false, true};
// LayerNorm(input_x, gamma, beta) + (begin_norm_axis, begin_params_axis, epsilon); the
// primitive returns (y, mean, variance): element 0 is nn.LayerNorm's output; the ops.LayerNorm
// primitive's node has the three outputs (a TupleGetItem each) and gamma, beta as operands 1, 2
// (measured: mindspore.export of ops.LayerNorm(-1, -1, 1e-5)(x, g, b) unpacked).
constexpr MindirArg kMindirLayerNormArgs[] = {
    {"input_x", MV::Input},
    {"gamma", MV::Weight, "gamma", 1},
    {"beta", MV::Weight, "beta", 2},
    {"begin_norm_axis", MV::Int, "begin_norm_axis", -1},
    {"begin_params_axis", MV::Int, "begin_params_axis", -1},
    {"epsilon", MV::Float, "epsilon", 1e-7},
};
constexpr MindirDef kMindirLayerNorm{
    "LayerNorm", MindirKind::Function, kMindirLayerNormArgs, {}, 0};

// GroupNorm(input, num_groups, weight, bias, eps) returns (y, mean, rstd): element 0 (measured:
// mindspore.export of nn.GroupNorm(2, 4)).
constexpr MindirArg kMindirGroupNormArgs[] = {
    {"input", MV::Input},
    {"num_groups", MV::RequiredInt, "num_groups"},
    {"weight", MV::Weight, "gamma", -1},
    {"bias", MV::Weight, "beta", -1},
    {"eps", MV::Float, "eps", 1e-5},
};
constexpr MindirDef kMindirGroupNorm{
    "GroupNorm", MindirKind::Function, kMindirGroupNormArgs, {}, 0};
// The resize primitives as mindspore.export writes them (measured): function primitives
// (image, size, align_corners, half_pixel_centers) with size the output's (h, w).
// ops.interpolate(mode='nearest') is ResizeNearestNeighborV2(x, size, False, False);
// mode='bilinear' ResizeBilinearV2(x, size, align_corners, not align_corners);
// ops.ResizeNearestNeighbor(size) ResizeNearestNeighbor(x, size, align_corners, False) (the
// runtime's nearest grid has no half-pixel form: half_pixel_centers=True refuses).
constexpr MindirArg kMindirResizeNearestV2Args[] = {
    {"image", MV::Input},
    {"size", MV::OutputHW},
    {"align_corners", MV::Bool, "align_corners", 0},
    {"half_pixel_centers", MV::LiteralBool, {}, 0},
};
constexpr MindirDef kMindirResizeNearestV2{"ResizeNearestNeighborV2", MindirKind::Function,
                                           kMindirResizeNearestV2Args};
constexpr MindirArg kMindirResizeNearestArgs[] = {
    {"input_x", MV::Input},
    {"size", MV::OutputHW},
    {"align_corners", MV::Bool, "align_corners", 0},
    {"half_pixel_centers", MV::Require, "half_pixel_centers", 0},
    {"half_pixel_centers", MV::LiteralBool, {}, 0},
};
constexpr MindirDef kMindirResizeNearest{"ResizeNearestNeighbor", MindirKind::Function,
                                         kMindirResizeNearestArgs};
constexpr MindirArg kMindirResizeBilinearV2Args[] = {
    {"image", MV::Input},
    {"size", MV::OutputHW},
    {"align_corners", MV::Bool, "align_corners", 0},
    {"half_pixel_centers", MV::BoolNot, "align_corners", 0},
};
constexpr MindirDef kMindirResizeBilinearV2{"ResizeBilinearV2", MindirKind::Function,
                                            kMindirResizeBilinearV2Args};

// LpNorm: a PRIMITIVE with attributes axis (a LIST of INT64 in MindSpore's file; a tuple loads the
// same), p (INT64), keep_dims (BOOL) and epsilon (FLOAT), measured on mindspore.export of
// ConvNeXt V2's GRN, ops.LpNorm(axis=[1, 2], p=2, keep_dims=True).
constexpr MindirArg kMindirLpNormArgs[] = {{"input", MV::Input},
                                           {"axis", MV::Ints, "axis", 0},
                                           {"p", MV::Int, "p", 2},
                                           {"keep_dims", MV::Bool, "keep_dims", 0},
                                           {"epsilon", MV::Float, "epsilon", 1e-12}};
constexpr MindirDef kMindirLpNorm{"LpNorm", MindirKind::Attribute, kMindirLpNormArgs};

// L2Normalize: a PRIMITIVE with attributes axis (MindSpore writes a LIST of one INT64; a tuple
// loads the same) and epsilon (FLOAT), measured on mindspore.export of ops.L2Normalize(-1).
constexpr MindirArg kMindirL2NormalizeArgs[] = {
    {"x", MV::Input}, {"axis", MV::Ints, "axis", 1}, {"epsilon", MV::Float, "epsilon", 1e-4}};
constexpr MindirDef kMindirL2Normalize{"L2Normalize", MindirKind::Attribute,
                                       kMindirL2NormalizeArgs};

std::span<const OpDef> nn_ops() {
  using C = OpCategory;
  using U = OpUnit;
  using P = OpPrecision;
  static const OpDef kRows[] = {
      {"BatchNorm", C::Normalization, kTraitNone, U::Vector, 4, P::KeepFloat32,
       &kernels::k_batchnorm, false, &ad::g_batchnorm, false, &ox::o_batchnorm, &kMindirBatchNorm},
      {"LayerNorm", C::Normalization, kTraitNone, U::Vector, 8, P::KeepFloat32,
       &kernels::k_layernorm, false, &ad::g_layernorm, false, &ox::o_layernorm, &kMindirLayerNorm,
       &kShardLayerNorm},
      {"AddLayerNorm", C::Normalization, kTraitNone, U::Vector, 9, P::KeepFloat32, nullptr, true},
      {"GroupNorm", C::Normalization, kTraitNone, U::Vector, 8, P::Float16, &kernels::k_group_norm,
       false, &ad::g_group_norm, false, &ox::o_group_norm, &kMindirGroupNorm},
      {"Norm", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_norm, false,
       &ad::g_norm},
      {"LpNorm", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_lp_norm, false,
       &ad::g_norm, false, &ox::o_lp_norm, &kMindirLpNorm},
      {"L2Normalize", C::Normalization, kTraitNone, U::Vector, 4, P::Float16,
       &kernels::k_l2_normalize, false, &ad::g_l2_normalize, false, &ox::o_l2_normalize,
       &kMindirL2Normalize},
      {"Conv1D", C::Convolution, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_conv2d, false,
       &ad::g_conv, false, &ox::o_conv},
      {"Conv2D", C::Convolution, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_conv2d, false,
       &ad::g_conv, false, &ox::o_conv, &kMindirConv2D},
      {"Conv3D", C::Convolution, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_conv3d, false,
       &ad::g_conv3d},
      {"Conv2DTranspose", C::Convolution, kTraitNone, U::Cube, 1, P::Float16,
       &kernels::k_conv2d_transpose, false, &ad::g_conv_transpose},
      {"FusedConv2D", C::Convolution, kTraitNone, U::Cube, 1, P::Float16, nullptr, true},
      {"MatMul", C::MatMul, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_matmul, false,
       &ad::g_matmul, false, &ox::o_matmul, &kMindirMatMul, &kShardMatMul},
      {"BatchMatMul", C::MatMul, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_matmul, false,
       &ad::g_matmul, false, &ox::o_matmul, &kMindirBatchMatMul, &kShardBatchMatMul},
      {"Dense", C::MatMul, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_dense, false,
       &ad::g_dense, false, &ox::o_dense},
      {"FusedMatMul", C::MatMul, kTraitNone, U::Cube, 1, P::Float16, nullptr, true},
      {"MultiheadAttention", C::Attention, kTraitNone, U::Cube, 1, P::Float16,
       &kernels::k_multihead_attention, false, &ad::g_multihead_attention},
      {"FusedAttention", C::Attention, kTraitNone, U::Cube, 1, P::Float16, nullptr, true},
      {"LSTM", C::Recurrent, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_recurrent, false,
       &ad::g_recurrent},
      {"GRU", C::Recurrent, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_recurrent, false,
       &ad::g_recurrent},
      {"RNN", C::Recurrent, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_recurrent, false,
       &ad::g_recurrent},
      {"MaxPool", C::Pooling, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_maxpool, false,
       &ad::g_pool, false, &ox::o_pool, &kMindirMaxPool},
      {"AvgPool", C::Pooling, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_avgpool, false,
       &ad::g_pool, false, &ox::o_pool, &kMindirAvgPool},
      {"AdaptiveAvgPool1D", C::Pooling, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_adaptive_avgpool, false, &ad::g_adaptive_avgpool},
      {"AdaptiveAvgPool2D", C::Pooling, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_adaptive_avgpool, false, &ad::g_adaptive_avgpool, false, &ox::o_adaptive_avgpool,
       &kMindirAdaptiveAvgPool2D},
      {"AdaptiveMaxPool2D", C::Pooling, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_adaptive_maxpool, false, &ad::g_adaptive_avgpool},
      {"AdaptiveAvgPool3D", C::Pooling, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_adaptive_avgpool, false, &ad::g_adaptive_avgpool},
      // Resizing. Vector instructions per output element: a multiply and an add per tap
      // (nearest 1 tap; linear 2 per spatial dim; bicubic 4 per dim).
      {"ResizeNearestNeighbor", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_resize,
       false, &ad::g_resize, false, &ox::o_resize, &kMindirResizeNearest},
      {"ResizeNearestNeighborV2", C::Shape, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_resize, false, &ad::g_resize, false, &ox::o_resize, &kMindirResizeNearestV2},
      {"UpsampleNearest3D", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_resize,
       false, &ad::g_resize},
      {"ResizeLinear1D", C::Other, kTraitNone, U::Vector, 4, P::Float16, &kernels::k_resize, false,
       &ad::g_resize},
      {"ResizeBilinearV2", C::Other, kTraitNone, U::Vector, 8, P::Float16, &kernels::k_resize,
       false, &ad::g_resize, false, &ox::o_resize, &kMindirResizeBilinearV2},
      {"UpsampleTrilinear3D", C::Other, kTraitNone, U::Vector, 16, P::Float16, &kernels::k_resize,
       false, &ad::g_resize},
      {"ResizeBicubic", C::Other, kTraitNone, U::Vector, 32, P::Float16, &kernels::k_resize, false,
       &ad::g_resize},
  };
  return kRows;
}

}  // namespace graphcore::ops
