// oneDNN building blocks of the CPU runtime: 2-D convolution forward, backward-data and
// backward-weights, and matrix products with transposes and broadcast batch dims. The forward
// kernels (kernels.cpp: Conv2D/Conv1D, Dense/MatMul/BatchMatMul) and the backward kernels call
// these. oneDNN picks its kernels for the CPU at run time (SSE4.1 .. AVX-512), so the binary
// stays portable: nothing here is compiled with -march.
//
// Primitives are created once per shape and thread and cached (creating one costs far more than
// running a small one); the blocked copies oneDNN's fast kernels read and write and its
// scratchpad live in per-thread buffers that only grow, so a run allocates nothing but outputs.
// Every function is safe to call from several threads at once (each uses its own cache).
//
// Errors (a geometry oneDNN refuses, a size past max_tensor_bytes()) are RuntimeErrors; an
// allocation failure is std::bad_alloc, which the Executor turns into a failed node.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graphcore/runtime.h"

namespace graphcore::runtime::dnnl_ops {

// The threads oneDNN's parallel regions use on the calling thread from now on (OpenMP in
// Debian's build: omp_set_num_threads, a per-thread setting). n <= 0 means every hardware thread.
void set_threads(int n);
// What set_threads(n) would use.
int resolve_threads(int n);
// The instruction set oneDNN dispatches to on this CPU ("avx512_core", "avx2"...), and its
// version ("2.6.3").
std::string cpu_isa();
std::string version();

// A 2-D convolution of an NCHW input with an (OC, IC/groups, KH, KW) weight, as MindSpore's
// Conv2D computes it: `dilation` is MindSpore's (1 = dense), pads are explicit (pad_mode already
// resolved into before/after amounts per spatial axis).
struct ConvGeometry {
  int64_t batch = 1, in_channels = 1, in_h = 1, in_w = 1;
  int64_t out_channels = 1, kernel_h = 1, kernel_w = 1;
  int64_t groups = 1;
  std::array<int64_t, 2> stride{1, 1}, dilation{1, 1}, pad_before{0, 0}, pad_after{0, 0};

  // Output height/width; RuntimeError when the window does not fit or a value is out of range.
  [[nodiscard]] int64_t out_h() const;
  [[nodiscard]] int64_t out_w() const;
  [[nodiscard]] std::vector<int64_t> input_shape() const;   // (N, C, H, W)
  [[nodiscard]] std::vector<int64_t> weight_shape() const;  // (OC, C/groups, KH, KW)
  [[nodiscard]] std::vector<int64_t> output_shape() const;  // (N, OC, OH, OW)
  // Throws RuntimeError naming the bad value (non-positive sizes, groups not dividing the
  // channels, negative pads, a window larger than the padded input).
  void validate() const;
};

// y = conv(x, w) + bias. x, w, bias are float tensors (float16 storage is float too) of the
// geometry's shapes; bias is optional (nullptr). Returns a new float32 (N, OC, OH, OW) tensor.
// `cache_weights`: keep the weight's reordered copy with its storage (Tensor::derived) for the
// next call -- for weights that stay the same across runs (inference); it costs one more copy of
// the weight in memory.
Tensor conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w,
                      const Tensor* bias = nullptr, bool cache_weights = false);
// dL/dx from dL/dy (N, OC, OH, OW) and the weight: the (N, C, H, W) input gradient.
Tensor conv2d_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w);
// dL/dw (OC, C/groups, KH, KW) from the forward input x and dL/dy; when `dbias` is given it
// receives dL/dbias (OC,) (the sum of dy over N, OH, OW) from the same pass.
Tensor conv2d_backward_weights(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                               Tensor* dbias = nullptr);

// numpy.matmul with optional transposes of the last two dims of either operand (applied before
// the product; a rank-1 operand is a vector and is never transposed), batch dims broadcast as
// numpy does. `bias`, when given, has the output's last dim and is added to every row.
// Returns a new float32 tensor.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false,
              const Tensor* bias = nullptr);
// The output shape of matmul(a, b, ...) or RuntimeError naming both shapes.
std::vector<int64_t> matmul_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                  bool transpose_a, bool transpose_b);

// The backward of a dense layer y = x W^T + b, x (m, in), W (out, in), dy (m, out), on oneDNN's
// inner-product backward primitives: they read W and write dW in the layer's own (out, in)
// layout, where the matmul above, given W plain, either reads it slowly or reorders all of it
// on every call (BERT-base FFN, one AVX-512 thread: dx 3.7 ms against 5.0-7.1, dW with db
// 3.4 ms against 4.1-4.9 plus the separate bias sum).
// dL/dx (m, in) from dy and W.
Tensor dense_backward_data(const Tensor& dy, const Tensor& w);
// dL/dW (out, in) from x and dy; when `dbias` is given it receives dL/db (out,) from the same
// pass (the sum of dy over the rows).
Tensor dense_backward_weights(const Tensor& x, const Tensor& dy, Tensor* dbias = nullptr);

// Elementwise functions on oneDNN's JIT eltwise kernels (vectorized polynomial erf/exp/tanh;
// libm's scalar calls were ~10 % of BERT-base inference at one thread). y[i] = f(x[i]) for
// i < n; x and y may be the same buffer. Elementwise, so the bits do not depend on the threads.
enum class Eltwise : uint8_t {
  GeluErf,   // 0.5 x (1 + erf(x / sqrt 2))
  GeluTanh,  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
  Exp,
};
void eltwise(Eltwise f, const float* x, float* y, int64_t n);
// dL/dx of eltwise(f) at x given dL/dy (n elements each).
void eltwise_backward(Eltwise f, const float* x, const float* dy, float* dx, int64_t n);

// Softmax (or log-softmax) of a row-major (outer, len, inner) array along `len`; every line is
// computed by one thread as the serial kernel does, so the bits do not depend on the threads.
void softmax(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, bool log);

// Primitives cached by the calling thread (for tests and diagnostics).
size_t cached_primitives();

}  // namespace graphcore::runtime::dnnl_ops
