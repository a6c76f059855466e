// The CPU runtime's kernels (runtime/kernels.cpp), named by the operator definitions of
// graphcore/src/ops/: an operator's kernel is the `kernel` of its OpDef.
#pragma once

#include "runtime/internal.h"

namespace graphcore::runtime::kernels {

void k_abs(KernelCall& c);
void k_adaptive_avgpool(KernelCall& c);
void k_add(KernelCall& c);
void k_and(KernelCall& c);
void k_argmax_(KernelCall& c);
void k_argmin_(KernelCall& c);
void k_avgpool(KernelCall& c);
void k_batchnorm(KernelCall& c);
void k_bias_add(KernelCall& c);
void k_broadcast_to(KernelCall& c);
void k_cast(KernelCall& c);
void k_clip(KernelCall& c);
void k_concat(KernelCall& c);
void k_conv2d(KernelCall& c);
void k_cos(KernelCall& c);
void k_cumsum(KernelCall& c);
void k_dense(KernelCall& c);
void k_div(KernelCall& c);
void k_elu(KernelCall& c);
void k_eq(KernelCall& c);
void k_erf(KernelCall& c);
void k_exp(KernelCall& c);
void k_fast_gelu(KernelCall& c);
void k_fill(KernelCall& c);
void k_floor(KernelCall& c);
void k_floordiv(KernelCall& c);
void k_gather(KernelCall& c);
void k_ge(KernelCall& c);
void k_gelu(KernelCall& c);
void k_group_norm(KernelCall& c);
void k_gt(KernelCall& c);
void k_hsigmoid(KernelCall& c);
void k_hswish(KernelCall& c);
void k_identity(KernelCall& c);
void k_layernorm(KernelCall& c);
void k_le(KernelCall& c);
void k_leaky_relu(KernelCall& c);
void k_log(KernelCall& c);
void k_log_softmax(KernelCall& c);
void k_lt(KernelCall& c);
void k_masked_fill(KernelCall& c);
void k_matmul(KernelCall& c);
void k_maximum(KernelCall& c);
void k_maxpool(KernelCall& c);
void k_minimum(KernelCall& c);
void k_mish(KernelCall& c);
void k_mod(KernelCall& c);
void k_mul(KernelCall& c);
void k_ne(KernelCall& c);
void k_neg(KernelCall& c);
void k_not(KernelCall& c);
void k_one_hot(KernelCall& c);
void k_ones_like(KernelCall& c);
void k_or(KernelCall& c);
void k_pow(KernelCall& c);
void k_range(KernelCall& c);
void k_reciprocal(KernelCall& c);
void k_reduce_max(KernelCall& c);
void k_reduce_mean(KernelCall& c);
void k_reduce_min(KernelCall& c);
void k_reduce_prod(KernelCall& c);
void k_reduce_sum(KernelCall& c);
void k_relu(KernelCall& c);
void k_relu6(KernelCall& c);
void k_reshape(KernelCall& c);
void k_round(KernelCall& c);
void k_rsqrt(KernelCall& c);
void k_select(KernelCall& c);
void k_sigmoid(KernelCall& c);
void k_sign(KernelCall& c);
void k_silu(KernelCall& c);
void k_sin(KernelCall& c);
void k_softmax(KernelCall& c);
void k_softmin(KernelCall& c);
void k_softplus(KernelCall& c);
void k_split(KernelCall& c);
void k_sqrt(KernelCall& c);
void k_square(KernelCall& c);
void k_stack(KernelCall& c);
void k_strided_slice(KernelCall& c);
void k_sub(KernelCall& c);
void k_tanh(KernelCall& c);
void k_tanhshrink(KernelCall& c);
void k_tile(KernelCall& c);
void k_transpose(KernelCall& c);
void k_unstack(KernelCall& c);
void k_zeros_like(KernelCall& c);

}  // namespace graphcore::runtime::kernels
