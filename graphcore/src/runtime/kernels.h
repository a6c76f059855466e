// The CPU runtime's kernels (runtime/kernels.cpp), named by the operator definitions of
// graphcore/src/ops/: an operator's kernel is the `kernel` of its OpDef.
#pragma once

#include <array>

#include "runtime/dnnl_ops.h"
#include "runtime/internal.h"

namespace graphcore::runtime::kernels {

// ---- helpers of kernels.cpp that the backward kernels (kernels_grad.cpp) share ----------------
[[noreturn]] void fail(const std::string& msg);
// Input `i`, failing with a clear message when the graph gives fewer.
const Tensor& in(const KernelCall& c, size_t i);
Tensor as_float(const Tensor& t);
int64_t norm_axis(int64_t axis, size_t rank);
DType out_dtype(const KernelCall& c, size_t i = 0, DType fallback = DType::Float32);
std::optional<std::vector<int64_t>> out_shape(const KernelCall& c, size_t i = 0);
Tensor& emit(KernelCall& c, Tensor t);
// An elementwise op's operands: its tensor inputs with the recorded Python scalar inserted.
std::vector<Tensor> operands(const KernelCall& c, size_t n);
std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// Strides of `s` broadcast to `out` (0 along broadcast dims).
std::vector<int64_t> bstrides(const std::vector<int64_t>& s, const std::vector<int64_t>& out);
float gelu_erf(float v);
float gelu_tanh(float v);
bool gelu_approximate(const Node& n);

// A Dense layer's fused activation ("relu", "gelu", ...; "" or "None": none), in place.
void apply_activation(Tensor& y, const std::string& act);

// A convolution's or pool's window over the spatial dims (MindSpore's pad modes).
struct Window {
  std::vector<int64_t> kernel, stride, dilation;
  std::vector<int64_t> pad_before, pad_after;
  std::vector<int64_t> out;
};
Window make_window(const Node& n, const std::vector<int64_t>& spatial, std::vector<int64_t> kernel,
                   bool ceil_mode);
Window window_1d(const Node& n, int64_t length, int64_t kernel);
// A StridedSlice / getitem over an input of `shape` (the recorded begin/end/strides and masks):
// per input axis the first index, the step and the count taken, and the output shape (shrunk
// axes dropped, new axes added). What the kernel gathers and what the ONNX exporter slices.
struct SliceGeometry {
  std::vector<int64_t> start, step, count, out;
};
SliceGeometry strided_slice_geometry(const Node& node, const std::vector<int64_t>& shape);
// A reduction's axes (normalised, from `axis` or from the output shape) and whether it keeps the
// reduced dims: what the reduce kernels compute over, and what the ONNX exporter writes.
std::vector<int64_t> reduce_axes(const KernelCall& c, const std::vector<int64_t>& in_shape,
                                 bool* keep);
// The oneDNN geometry of a convolution of an NCHW input (dims `nchw`) with the window the
// forward kernel resolved: what Conv2D's forward and backward kernels both hand to dnnl_ops.
dnnl_ops::ConvGeometry conv_geometry(const std::vector<int64_t>& nchw, int64_t out_channels,
                                     int64_t groups, const Window& w);

// nn.Conv2dTranspose's geometry: input (n, ic, h, w), weight (ic, ocg, kh, kw), output
// (n, oc = ocg * groups, oh, ow) from the graph, and the padding taken off the top/left (the
// explicit padding; for 'same' half of what the full result has over the output).
struct ConvTransposeGeometry {
  int64_t n = 0, ic = 0, h = 0, w = 0, groups = 1, kh = 0, kw = 0, ocg = 0, oc = 0, icg = 0;
  int64_t oh = 0, ow = 0, top = 0, left = 0;
  std::vector<int64_t> stride, dil;
  // f(x offset, weight offset, y offset) for every product the forward sum has: each input pixel
  // scatters its kernel into the output at stride steps.
  template <class F>
  void for_each_tap(F f) const {
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ci = 0; ci < ic; ++ci) {
        const int64_t g = ci / icg;
        for (int64_t i = 0; i < h; ++i) {
          for (int64_t j = 0; j < w; ++j) {
            const int64_t xi = ((b * ic + ci) * h + i) * w + j;
            for (int64_t q = 0; q < ocg; ++q) {
              const int64_t yo = (b * oc + g * ocg + q) * oh * ow;
              const int64_t wo = (ci * ocg + q) * kh * kw;
              for (int64_t a = 0; a < kh; ++a) {
                const int64_t r = i * stride[0] - top + a * dil[0];
                if (r < 0 || r >= oh) continue;
                for (int64_t e = 0; e < kw; ++e) {
                  const int64_t col = j * stride[1] - left + e * dil[1];
                  if (col >= 0 && col < ow) f(xi, wo + a * kw + e, yo + r * ow + col);
                }
              }
            }
          }
        }
      }
    }
  }
};
ConvTransposeGeometry conv_transpose_geometry(const Node& node, const std::vector<int64_t>& x,
                                              const std::vector<int64_t>& w,
                                              const std::optional<std::vector<int64_t>>& out);

// nn.Conv3d / ops.conv3d on NCDHW: input (n, ch, id, ih, iw), weight (oc, icg, kd, kh, kw), the
// pad modes of make_window. Checked once here for the forward kernel and its gradient
// (`what` names the kernel in the messages).
struct Conv3DGeometry {
  int64_t n = 0, ch = 0, oc = 0, icg = 0, groups = 1, ocg = 0;
  int64_t id = 0, ih = 0, iw = 0;
  Window w;
  int64_t out_numel() const { return n * oc * w.out[0] * w.out[1] * w.out[2]; }
  // f(x offset, weight offset, y offset) for every product of the forward sum, output element by
  // output element (batch, channel, depth, height, width), each element's taps in (input
  // channel, kd, kh, kw) order: the summation order both kernels keep.
  template <class F>
  void for_each_tap(F f) const {
    const int64_t kd = w.kernel[0], kh = w.kernel[1], kw = w.kernel[2];
    int64_t yi = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t o = 0; o < oc; ++o) {
        const int64_t g = o / ocg;
        for (int64_t od = 0; od < w.out[0]; ++od) {
          for (int64_t oh = 0; oh < w.out[1]; ++oh) {
            for (int64_t ow = 0; ow < w.out[2]; ++ow, ++yi) {
              for (int64_t ci = 0; ci < icg; ++ci) {
                const int64_t xoff = (b * ch + g * icg + ci) * id * ih * iw;
                const int64_t woff = (o * icg + ci) * kd * kh * kw;
                for (int64_t a = 0; a < kd; ++a) {
                  const int64_t zd = od * w.stride[0] - w.pad_before[0] + a * w.dilation[0];
                  if (zd < 0 || zd >= id) continue;
                  for (int64_t e = 0; e < kh; ++e) {
                    const int64_t zh = oh * w.stride[1] - w.pad_before[1] + e * w.dilation[1];
                    if (zh < 0 || zh >= ih) continue;
                    for (int64_t q = 0; q < kw; ++q) {
                      const int64_t zw = ow * w.stride[2] - w.pad_before[2] + q * w.dilation[2];
                      if (zw < 0 || zw >= iw) continue;
                      f(xoff + (zd * ih + zh) * iw + zw, woff + (a * kh + e) * kw + q, yi);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
};
Conv3DGeometry conv3d_geometry(const Node& node, const Tensor& x, const Tensor& wt,
                               std::string_view what);

// A resize (ResizeNearestNeighbor[V2], UpsampleNearest3D, ResizeLinear1D, ResizeBilinearV2,
// UpsampleTrilinear3D, ResizeBicubic) as separable taps: output index o of spatial dim d reads
// input indices taps[d][o].at with weights taps[d][o].w. Shared by the forward kernel and
// ResizeGrad's, which scatters the same weights back.
struct ResizeTaps {
  static constexpr size_t kMaxRank = 5;  // ops.interpolate's 3-D to 5-D inputs
  struct Taps {
    std::vector<int64_t> at;
    std::vector<double> w;
  };
  std::vector<int64_t> in, out;
  std::vector<std::vector<Taps>> taps;  // per dim; the first two empty
  // f(flat output offset, flat input offset, weight) for every tap of every output element, the
  // taps of one element in the odometer order of the spatial dims (the last turning fastest).
  template <class F>
  void for_each_tap(F f) const {
    const size_t rank = in.size();
    std::array<int64_t, kMaxRank> stride{};
    stride[rank - 1] = 1;
    for (size_t i = rank - 1; i > 0; --i) stride[i - 1] = stride[i] * in[i];
    int64_t total = 1;
    for (int64_t d : out) total *= d;
    std::array<const Taps*, kMaxRank> pick{};
    for (int64_t o = 0; o < total; ++o) {
      int64_t rest = o, base = 0;
      for (size_t d = rank; d > 0; --d) {
        const int64_t i = rest % out[d - 1];
        rest /= out[d - 1];
        if (d - 1 < 2) {
          base += i * stride[d - 1];
        } else {
          pick[d - 1] = &taps[d - 1][static_cast<size_t>(i)];
        }
      }
      std::array<size_t, kMaxRank> k{};
      for (bool more = true; more;) {
        int64_t from = base;
        double w = 1;
        for (size_t d = 2; d < rank; ++d) {
          from += pick[d]->at[k[d]] * stride[d];
          w *= pick[d]->w[k[d]];
        }
        f(o, from, w);
        more = false;
        for (size_t d = rank; d > 2; --d) {
          if (++k[d - 1] < pick[d - 1]->at.size()) {
            more = true;
            break;
          }
          k[d - 1] = 0;
        }
      }
    }
  }
};
// The taps of resize operator `op` with node `n`'s attributes from an input of shape `in` to `out`
// (its recorded output shape).
ResizeTaps resize_taps(const Node& n, std::string_view op, const std::vector<int64_t>& in,
                       const std::optional<std::vector<int64_t>>& out);

// Pad's geometry (nn.Pad's `paddings`, ops.pad's `padding`, mode, value), shared by the forward
// kernel and PadGrad's.
struct PadPlan {
  std::vector<int64_t> in, out, before, after;
  std::string mode;
  double value = 0;
  // The input index along dim `d` that output index `o` reads; -1 for the constant.
  [[nodiscard]] int64_t source(size_t d, int64_t o) const;
  // The flat input offset that flat output offset `o` reads; -1 for the constant.
  [[nodiscard]] int64_t source_offset(int64_t o) const;
};
PadPlan pad_plan(const Node& n, const std::vector<int64_t>& x);

// One item of a basic index (StridedSlice's recorded begin/end/strides and masks).
struct IndexItem {
  enum Kind { Int, Slice, Ellipsis, NewAxis } kind;
  int64_t i = 0;
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  static IndexItem of(Kind k) {
    IndexItem it;
    it.kind = k;
    return it;
  }
};
std::vector<IndexItem> index_items(const Node& n);

// BatchNorm: whether this application normalises with the batch's statistics, and those
// statistics (per channel of (N, C, ...): mean and biased variance).
bool batchnorm_uses_batch_stats(const KernelCall& c);
void batch_moments(const Tensor& x, std::vector<double>* mean, std::vector<double>* var);
// Dropout's keep probability and its mask in training (one value per element; Dropout2D: per
// (N, C) channel), drawn from the run's seed and `rng_id` (the forward node's id).
double dropout_keep(const Node& n);
std::vector<float> dropout_mask(const Node& n, bool channels, std::string_view rng_id,
                                const std::vector<int64_t>& shape, uint64_t run_seed);
// y[i] = x[i] * mask(i) * (1 / keep) over a tensor of `shape` (x and y may be the same
// buffer): the values dropout_mask's mask gives, without materialising it, on the runtime's
// threads (each draw is a function of its index, so the bits do not depend on the threads).
void dropout_apply(const Node& n, bool channels, std::string_view rng_id,
                   const std::vector<int64_t>& shape, uint64_t run_seed, const float* x, float* y);

// ---- kernels -----------------------------------------------------------------------------------

void k_abs(KernelCall& c);
void k_adaptive_avgpool(KernelCall& c);
void k_adaptive_maxpool(KernelCall& c);
void k_add(KernelCall& c);
void k_and(KernelCall& c);
void k_argmax_(KernelCall& c);
void k_argmax_with_value(KernelCall& c);
void k_argmin_(KernelCall& c);
void k_argmin_with_value(KernelCall& c);
void k_avgpool(KernelCall& c);
void k_batchnorm(KernelCall& c);
void k_bias_add(KernelCall& c);
void k_broadcast_to(KernelCall& c);
void k_cast(KernelCall& c);
void k_clip(KernelCall& c);
void k_concat(KernelCall& c);
void k_conv2d(KernelCall& c);
void k_conv2d_transpose(KernelCall& c);
void k_conv3d(KernelCall& c);
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
void k_invert(KernelCall& c);
void k_layernorm(KernelCall& c);
void k_le(KernelCall& c);
void k_leaky_relu(KernelCall& c);
void k_linspace(KernelCall& c);
void k_log(KernelCall& c);
void k_log_softmax(KernelCall& c);
void k_logsumexp(KernelCall& c);
void k_lp_norm(KernelCall& c);
void k_l2_normalize(KernelCall& c);
void k_lt(KernelCall& c);
void k_masked_fill(KernelCall& c);
void k_matmul(KernelCall& c);
void k_maximum(KernelCall& c);
void k_maxpool(KernelCall& c);
void k_merge(KernelCall& c);
void k_minimum(KernelCall& c);
void k_mish(KernelCall& c);
void k_mod(KernelCall& c);
void k_mul(KernelCall& c);
void k_multihead_attention(KernelCall& c);
void k_narrow(KernelCall& c);
void k_ne(KernelCall& c);
void k_neg(KernelCall& c);
void k_norm(KernelCall& c);
void k_not(KernelCall& c);
void k_one_hot(KernelCall& c);
void k_ones_like(KernelCall& c);
void k_or(KernelCall& c);
void k_pad(KernelCall& c);
void k_pow(KernelCall& c);
void k_prelu(KernelCall& c);
void k_random(KernelCall& c);
void k_range(KernelCall& c);
void k_reciprocal(KernelCall& c);
void k_recurrent(KernelCall& c);
void k_reduce_max(KernelCall& c);
void k_reduce_mean(KernelCall& c);
void k_reduce_min(KernelCall& c);
void k_reduce_prod(KernelCall& c);
void k_reduce_std(KernelCall& c);
void k_reduce_sum(KernelCall& c);
void k_reduce_var(KernelCall& c);
void k_relu(KernelCall& c);
void k_relu6(KernelCall& c);
void k_reshape(KernelCall& c);
void k_resize(KernelCall& c);  // every resize operator: nearest, linear, bicubic taps
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
void k_topk(KernelCall& c);
void k_transpose(KernelCall& c);
void k_trunc_mod(KernelCall& c);
void k_unstack(KernelCall& c);
void k_zeros_like(KernelCall& c);
void k_dropout(KernelCall& c);

// Backward kernels (kernels_grad.cpp): the operators of graphcore/src/ops/grad.cpp.
void k_unary_grad(KernelCall& c);
void k_binary_grad(KernelCall& c);
void k_bias_add_grad(KernelCall& c);
void k_dense_grad(KernelCall& c);
void k_matmul_grad(KernelCall& c);
void k_conv2d_grad(KernelCall& c);
void k_pool_grad(KernelCall& c);
void k_adaptive_avgpool_grad(KernelCall& c);
void k_batchnorm_grad(KernelCall& c);
void k_batchnorm_update(KernelCall& c);
void k_layernorm_grad(KernelCall& c);
void k_softmax_grad(KernelCall& c);
void k_concat_grad(KernelCall& c);
void k_strided_slice_grad(KernelCall& c);
void k_gather_grad(KernelCall& c);
void k_dropout_grad(KernelCall& c);
void k_reduce_extremum_grad(KernelCall& c);
void k_cumsum_grad(KernelCall& c);
void k_pad_grad(KernelCall& c);
void k_l2_normalize_grad(KernelCall& c);
void k_roll(KernelCall& c);
// L2Normalize's lines of node `n` over `x`: `len` elements along its one axis, `inner` apart, for
// each of `outer * inner` lines (line l starts at (l / inner) * len * inner + l % inner). Shared
// by the forward kernel and its gradient; fails on several axes or a 0-d input.
struct AxisLines {
  int64_t len = 0;
  int64_t inner = 1;
  int64_t outer = 0;
  double epsilon = 1e-4;
};
AxisLines l2_normalize_lines(const Node& n, const Tensor& x);
void k_group_norm_grad(KernelCall& c);
void k_conv2d_transpose_grad(KernelCall& c);
void k_resize_grad(KernelCall& c);
void k_index_scatter_grad(KernelCall& c);
void k_clip_by_value_grad(KernelCall& c);
void k_prelu_grad(KernelCall& c);
void k_reduce_prod_grad(KernelCall& c);

// Backward operators of the fused layers (kernels_grad_layers.cpp).
void k_recurrent_grad(KernelCall& c);  // LSTM, GRU, RNN: backward through time
void k_multihead_attention_grad(KernelCall& c);
void k_norm_grad(KernelCall& c);  // Norm, LpNorm
void k_conv3d_grad(KernelCall& c);

// Losses and their backward operators (loss_kernels.cpp).
void k_bce_with_logits(KernelCall& c);
void k_bce_with_logits_grad(KernelCall& c);
void k_class_loss(KernelCall& c);  // CrossEntropyLoss, NLLLoss, SoftmaxCrossEntropyWithLogits
void k_class_loss_grad(KernelCall& c);
void k_pointwise_loss(KernelCall& c);  // MSELoss, L1Loss, SmoothL1Loss
void k_pointwise_loss_grad(KernelCall& c);

}  // namespace graphcore::runtime::kernels
