// The gradient rules of the operator table (OpDef::grad, graphcore/opdef.h): one function per
// family of forward operators, each emitting the backward nodes of one application through the
// GradBuilder (graphcore/autodiff.h). The backward operators they emit are the rows of
// graphcore/src/ops/grad.cpp, run by the kernels of graphcore/src/runtime/kernels_grad.cpp.
#pragma once

#include "graphcore/autodiff.h"

namespace graphcore::autodiff::rules {

void g_identity(GradBuilder& b);          // Identity: the gradient passes through
void g_reshape(GradBuilder& b);           // Reshape, Flatten, ExpandDims, Squeeze
void g_cast(GradBuilder& b);              // Cast back to the input's dtype
void g_neg(GradBuilder& b);               // Neg
void g_unary(GradBuilder& b);             // elementwise math and activations: "<Op>Grad"
void g_binary(GradBuilder& b);            // broadcasting Add, Sub, Mul, Div, Pow, Maximum, Minimum
void g_bias_add(GradBuilder& b);          // BiasAdd
void g_dense(GradBuilder& b);             // Dense (activation, bias), MatMul of nn.Dense
void g_matmul(GradBuilder& b);            // MatMul, BatchMatMul (transposes, broadcast batch dims)
void g_conv(GradBuilder& b);              // Conv2D, Conv1D
void g_pool(GradBuilder& b);              // MaxPool, AvgPool
void g_adaptive_avgpool(GradBuilder& b);  // AdaptiveAvgPool1D/2D/3D, AdaptiveMaxPool2D
void g_batchnorm(GradBuilder& b);         // gradient and, with moving statistics, their update
void g_layernorm(GradBuilder& b);
void g_softmax(GradBuilder& b);          // Softmax, LogSoftmax
void g_reduce(GradBuilder& b);           // ReduceSum, ReduceMean
void g_reduce_extremum(GradBuilder& b);  // ReduceMax, ReduceMin (with indices too)
void g_transpose(GradBuilder& b);
void g_concat(GradBuilder& b);
void g_split(GradBuilder& b);
void g_strided_slice(GradBuilder& b);
void g_gather(GradBuilder& b);   // Gather and nn.Embedding: the table's gradient
void g_dropout(GradBuilder& b);  // Dropout, Dropout2D
void g_broadcast_to(GradBuilder& b);
// Not differentiable: MindSpore's gradient of the inputs is zero (nothing is emitted).
void g_no_gradient(GradBuilder& b);
void g_tile(GradBuilder& b);     // Tile: the copies summed (Reshape + ReduceSum)
void g_stack(GradBuilder& b);    // Stack: Unstack of the gradient
void g_unstack(GradBuilder& b);  // Unstack: Stack of the gradients
void g_select(GradBuilder& b);   // Select / ops.where: the gradient routed by the condition
void g_masked_fill(GradBuilder& b);
void g_cumsum(GradBuilder& b);        // CumSum: the reversed running sum (CumSumGrad)
void g_pad(GradBuilder& b);           // Pad, every mode (PadGrad)
void g_l2_normalize(GradBuilder& b);  // L2Normalize (L2NormalizeGrad)
void g_roll(GradBuilder& b);          // Roll: rolled back (Roll by the negated shifts)
void g_recurrent(GradBuilder& b);     // LSTM, GRU, RNN: backward through time (RecurrentGrad)
void g_multihead_attention(GradBuilder& b);  // MultiheadAttentionGrad
void g_norm(GradBuilder& b);                 // Norm, LpNorm (NormGrad)
void g_conv3d(GradBuilder& b);               // Conv3D (Conv3DGrad)
void g_merge(GradBuilder& b);  // Merge: dy to the branch the condition took (Select) // Conv3D
                               // (Conv3DGrad)
void g_group_norm(GradBuilder& b);
void g_conv_transpose(GradBuilder& b);  // Conv2DTranspose (Conv2DTransposeGrad)
// LogSumExp: exp(x - y) dy, from forward operators.
void g_logsumexp(GradBuilder& b);
// Nearest, linear and bicubic resizes (ResizeGrad).
void g_resize(GradBuilder& b);
// ArgMaxWithValue / ArgMinWithValue: the values' gradient to the index (IndexScatterGrad).
void g_arg_extremum_with_value(GradBuilder& b);
// TopK: the values' gradient to their indices (IndexScatterGrad).
void g_topk(GradBuilder& b);
// ClipByValue: dy inside the bounds (inclusive).
void g_clip(GradBuilder& b);
void g_prelu(GradBuilder& b);
void g_softmin(GradBuilder& b);
// ReduceVar, ReduceStd (ddof), from forward operators.
void g_moments(GradBuilder& b);
// Narrow: Pad of the gradient with zeros.
void g_narrow(GradBuilder& b);
// ReduceProd (ReduceProdGrad: exact with zeros).
void g_reduce_prod(GradBuilder& b);

}  // namespace graphcore::autodiff::rules
