// Operator definitions of layers: normalization, convolution, matrix multiplication, attention,
// recurrent cells, pooling.
// Columns (graphcore/opdef.h): name, category, traits, unit, vector instructions per element (the
// hardware model's cost), precision under amp O2, CPU kernel, produced only by a pass.
#include "ops/families.h"

namespace graphcore::ops {

std::span<const OpDef> nn_ops() {
  using C = OpCategory;
  using U = OpUnit;
  using P = OpPrecision;
  static const OpDef kRows[] = {
      {"BatchNorm", C::Normalization, kTraitNone, U::Vector, 4, P::KeepFloat32,
       &kernels::k_batchnorm, false, &ad::g_batchnorm, false, &ox::o_batchnorm},
      {"LayerNorm", C::Normalization, kTraitNone, U::Vector, 8, P::KeepFloat32,
       &kernels::k_layernorm, false, &ad::g_layernorm, false, &ox::o_layernorm},
      {"AddLayerNorm", C::Normalization, kTraitNone, U::Vector, 9, P::KeepFloat32, nullptr, true},
      {"GroupNorm", C::Normalization, kTraitNone, U::Vector, 8, P::Float16, &kernels::k_group_norm,
       false, &ad::g_group_norm},
      {"Norm", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_norm, false,
       &ad::g_norm},
      {"LpNorm", C::Reduction, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_lp_norm, false,
       &ad::g_norm},
      {"Conv1D", C::Convolution, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_conv2d, false,
       &ad::g_conv, false, &ox::o_conv},
      {"Conv2D", C::Convolution, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_conv2d, false,
       &ad::g_conv, false, &ox::o_conv},
      {"Conv3D", C::Convolution, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_conv3d, false,
       &ad::g_conv3d},
      {"Conv2DTranspose", C::Convolution, kTraitNone, U::Cube, 1, P::Float16,
       &kernels::k_conv2d_transpose, false, &ad::g_conv_transpose},
      {"FusedConv2D", C::Convolution, kTraitNone, U::Cube, 1, P::Float16, nullptr, true},
      {"MatMul", C::MatMul, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_matmul, false,
       &ad::g_matmul, false, &ox::o_matmul},
      {"BatchMatMul", C::MatMul, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_matmul, false,
       &ad::g_matmul, false, &ox::o_matmul},
      {"Dense", C::MatMul, kTraitNone, U::Cube, 1, P::Float16, &kernels::k_dense, false,
       &ad::g_dense, false, &ox::o_dense},
      {"FusedMatMul", C::MatMul, kTraitNone, U::Cube, 1, P::Float16, nullptr, true},
      {"MultiheadAttention", C::Attention, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_multihead_attention, false, &ad::g_multihead_attention},
      {"FusedAttention", C::Attention, kTraitNone, U::Cube, 1, P::Float16, nullptr, true},
      {"LSTM", C::Other, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_recurrent, false,
       &ad::g_recurrent},
      {"GRU", C::Other, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_recurrent, false,
       &ad::g_recurrent},
      {"RNN", C::Other, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_recurrent, false,
       &ad::g_recurrent},
      {"MaxPool", C::Pooling, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_maxpool, false,
       &ad::g_pool, false, &ox::o_pool},
      {"AvgPool", C::Pooling, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_avgpool, false,
       &ad::g_pool, false, &ox::o_pool},
      {"AdaptiveAvgPool1D", C::Pooling, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_adaptive_avgpool, false, &ad::g_adaptive_avgpool},
      {"AdaptiveAvgPool2D", C::Pooling, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_adaptive_avgpool, false, &ad::g_adaptive_avgpool, false,
       &ox::o_adaptive_avgpool},
      {"AdaptiveMaxPool2D", C::Pooling, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_adaptive_maxpool, false, &ad::g_adaptive_avgpool},
      {"AdaptiveAvgPool3D", C::Pooling, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_adaptive_avgpool, false, &ad::g_adaptive_avgpool},
      // Resizing. Vector instructions per output element: a multiply and an add per tap
      // (nearest 1 tap; linear 2 per spatial dim; bicubic 4 per dim).
      {"ResizeNearestNeighbor", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_resize,
       false, &ad::g_resize},
      {"ResizeNearestNeighborV2", C::Shape, kTraitNone, U::Vector, 1, P::Float16,
       &kernels::k_resize, false, &ad::g_resize},
      {"UpsampleNearest3D", C::Shape, kTraitNone, U::Vector, 1, P::Float16, &kernels::k_resize,
       false, &ad::g_resize},
      {"ResizeLinear1D", C::Other, kTraitNone, U::Vector, 4, P::Float16, &kernels::k_resize, false,
       &ad::g_resize},
      {"ResizeBilinearV2", C::Other, kTraitNone, U::Vector, 8, P::Float16, &kernels::k_resize,
       false, &ad::g_resize},
      {"UpsampleTrilinear3D", C::Other, kTraitNone, U::Vector, 16, P::Float16, &kernels::k_resize,
       false, &ad::g_resize},
      {"ResizeBicubic", C::Other, kTraitNone, U::Vector, 32, P::Float16, &kernels::k_resize, false,
       &ad::g_resize},
  };
  return kRows;
}

}  // namespace graphcore::ops
