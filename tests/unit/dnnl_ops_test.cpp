// The runtime's oneDNN building blocks (graphcore/src/runtime/dnnl_ops.h): convolution forward,
// backward-data and backward-weights, and matmul with transposes and broadcast batch dims,
// against direct loops written from the definitions, plus a finite-difference check that the
// backward passes are the derivatives of the forward one; the eltwise (GeLU, exp) and softmax
// primitives against libm in double.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "graphcore/runtime.h"
// A private header of graphcore (its include directory is private to the library).
#include "../../graphcore/src/runtime/dnnl_ops.h"

namespace {

using graphcore::DType;
using graphcore::runtime::RuntimeError;
using graphcore::runtime::Tensor;
namespace dnnl_ops = graphcore::runtime::dnnl_ops;
using dnnl_ops::ConvGeometry;

// x[n][c][ih][iw] for an output position and kernel tap, or nullopt in the padding.
struct Tap {
  bool inside;
  int64_t index;
};

Tap input_tap(const ConvGeometry& g, int64_t n, int64_t c, int64_t oh, int64_t ow, int64_t i,
              int64_t j) {
  const int64_t ih = oh * g.stride[0] - g.pad_before[0] + i * g.dilation[0];
  const int64_t iw = ow * g.stride[1] - g.pad_before[1] + j * g.dilation[1];
  if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) return {false, 0};
  return {true, ((n * g.in_channels + c) * g.in_h + ih) * g.in_w + iw};
}

// Calls f(y index, x index, w index) for every multiply-add of the convolution.
template <class F>
void for_each_mac(const ConvGeometry& g, F f) {
  const int64_t oh_n = g.out_h(), ow_n = g.out_w();
  const int64_t icg = g.in_channels / g.groups, ocg = g.out_channels / g.groups;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t o = 0; o < g.out_channels; ++o) {
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          const int64_t yi = ((n * g.out_channels + o) * oh_n + oh) * ow_n + ow;
          for (int64_t c = 0; c < icg; ++c) {
            for (int64_t i = 0; i < g.kernel_h; ++i) {
              for (int64_t j = 0; j < g.kernel_w; ++j) {
                Tap t = input_tap(g, n, (o / ocg) * icg + c, oh, ow, i, j);
                if (!t.inside) continue;
                f(yi, t.index, ((o * icg + c) * g.kernel_h + i) * g.kernel_w + j);
              }
            }
          }
        }
      }
    }
  }
}

std::vector<double> ref_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w,
                                const Tensor* b) {
  std::vector<double> y(static_cast<size_t>(g.batch * g.out_channels * g.out_h() * g.out_w()));
  for_each_mac(g, [&](int64_t yi, int64_t xi, int64_t wi) {
    y[yi] += static_cast<double>(x.data<float>()[xi]) * w.data<float>()[wi];
  });
  if (b) {
    const int64_t hw = g.out_h() * g.out_w();
    for (size_t k = 0; k < y.size(); ++k)
      y[k] += b->data<float>()[(static_cast<int64_t>(k) / hw) % g.out_channels];
  }
  return y;
}

void expect_close(const Tensor& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  double scale = 1e-6;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_NEAR(got.data<float>()[k], want[k], tol * scale) << what << " at " << k;
  }
}

struct Case {
  const char* name;
  ConvGeometry g;
};

std::vector<Case> conv_cases() {
  std::vector<Case> cs;
  ConvGeometry g;
  g.batch = 2, g.in_channels = 3, g.in_h = 9, g.in_w = 8, g.out_channels = 5;
  g.kernel_h = 3, g.kernel_w = 3, g.pad_before = {1, 1}, g.pad_after = {1, 1};
  cs.push_back({"3x3 same", g});
  ConvGeometry s = g;
  s.stride = {2, 3}, s.pad_before = {0, 2}, s.pad_after = {1, 0};
  cs.push_back({"strided, asymmetric pads", s});
  ConvGeometry d = g;
  d.dilation = {2, 3}, d.in_h = 11, d.in_w = 12, d.pad_before = {2, 0}, d.pad_after = {2, 1};
  cs.push_back({"dilated", d});
  ConvGeometry gr = g;
  gr.in_channels = 6, gr.out_channels = 4, gr.groups = 2, gr.kernel_w = 2;
  cs.push_back({"grouped", gr});
  ConvGeometry dw = g;
  dw.in_channels = 4, dw.out_channels = 8, dw.groups = 4, dw.stride = {2, 2};
  cs.push_back({"depthwise (multiplier 2)", dw});
  ConvGeometry pw = g;
  pw.in_channels = 16, pw.out_channels = 24, pw.kernel_h = 1, pw.kernel_w = 1;
  pw.pad_before = {0, 0}, pw.pad_after = {0, 0};
  cs.push_back({"1x1", pw});
  ConvGeometry one_d = g;  // Conv1D as a height-1 image
  one_d.in_h = 1, one_d.kernel_h = 1, one_d.in_w = 20, one_d.kernel_w = 5;
  one_d.pad_before = {0, 2}, one_d.pad_after = {0, 2}, one_d.stride = {1, 2};
  cs.push_back({"1-D", one_d});
  return cs;
}

TEST(DnnlOps, ConvForwardMatchesDirectLoops) {
  dnnl_ops::set_threads(1);
  uint64_t seed = 1;
  for (const Case& k : conv_cases()) {
    const ConvGeometry& g = k.g;
    Tensor x = Tensor::random(g.input_shape(), DType::Float32, seed++);
    Tensor w = Tensor::random(g.weight_shape(), DType::Float32, seed++);
    Tensor b = Tensor::random({g.out_channels}, DType::Float32, seed++);
    Tensor y = dnnl_ops::conv2d_forward(g, x, w);
    EXPECT_EQ(y.shape(), g.output_shape()) << k.name;
    expect_close(y, ref_forward(g, x, w, nullptr), 1e-5, k.name);
    expect_close(dnnl_ops::conv2d_forward(g, x, w, &b), ref_forward(g, x, w, &b), 1e-5, k.name);
  }
}

// Inference keeps the weight's reordered copy with its storage: a second call reads it, and a
// weight written in place (or a new weight tensor) is reordered again, never the stale copy.
TEST(DnnlOps, CachedReorderedWeightsFollowTheWeight) {
  dnnl_ops::set_threads(1);
  ConvGeometry g;  // channels of 32: oneDNN's blocked layouts, so the weight is reordered
  g.batch = 1, g.in_channels = 32, g.in_h = 7, g.in_w = 7, g.out_channels = 32;
  g.kernel_h = 3, g.kernel_w = 3, g.pad_before = {1, 1}, g.pad_after = {1, 1};
  Tensor x = Tensor::random(g.input_shape(), DType::Float32, 11);
  Tensor w = Tensor::random(g.weight_shape(), DType::Float32, 12);
  for (int run = 0; run < 2; ++run) {
    expect_close(dnnl_ops::conv2d_forward(g, x, w, nullptr, true), ref_forward(g, x, w, nullptr),
                 1e-5, "cached, run " + std::to_string(run));
  }
  for (int64_t k = 0; k < w.numel(); k += 7) w.data<float>()[k] *= -2.0f;  // written in place
  expect_close(dnnl_ops::conv2d_forward(g, x, w, nullptr, true), ref_forward(g, x, w, nullptr),
               1e-5, "after an in-place write");
  Tensor w2 = Tensor::random(g.weight_shape(), DType::Float32, 13);
  expect_close(dnnl_ops::conv2d_forward(g, x, w2, nullptr, true), ref_forward(g, x, w2, nullptr),
               1e-5, "another weight");
  expect_close(dnnl_ops::conv2d_forward(g, x, w, nullptr, true), ref_forward(g, x, w, nullptr),
               1e-5, "the first weight again");
}

TEST(DnnlOps, ConvBackwardMatchesDirectFormulas) {
  dnnl_ops::set_threads(1);
  uint64_t seed = 100;
  for (const Case& k : conv_cases()) {
    const ConvGeometry& g = k.g;
    Tensor x = Tensor::random(g.input_shape(), DType::Float32, seed++);
    Tensor w = Tensor::random(g.weight_shape(), DType::Float32, seed++);
    Tensor dy = Tensor::random(g.output_shape(), DType::Float32, seed++);
    // dx[xi] = sum dy[yi] w[wi], dw[wi] = sum dy[yi] x[xi], db[o] = sum dy over n, oh, ow.
    std::vector<double> dx(static_cast<size_t>(x.numel())), dw(static_cast<size_t>(w.numel()));
    for_each_mac(g, [&](int64_t yi, int64_t xi, int64_t wi) {
      dx[xi] += static_cast<double>(dy.data<float>()[yi]) * w.data<float>()[wi];
      dw[wi] += static_cast<double>(dy.data<float>()[yi]) * x.data<float>()[xi];
    });
    std::vector<double> db(static_cast<size_t>(g.out_channels));
    const int64_t hw = g.out_h() * g.out_w();
    for (int64_t i = 0; i < dy.numel(); ++i) {
      db[(i / hw) % g.out_channels] += dy.data<float>()[i];
    }

    expect_close(dnnl_ops::conv2d_backward_data(g, dy, w), dx, 1e-5, std::string(k.name) + " dx");
    Tensor dbias;
    Tensor dwt = dnnl_ops::conv2d_backward_weights(g, x, dy, &dbias);
    EXPECT_EQ(dwt.shape(), g.weight_shape()) << k.name;
    expect_close(dwt, dw, 1e-5, std::string(k.name) + " dw");
    expect_close(dbias, db, 1e-5, std::string(k.name) + " db");
    expect_close(dnnl_ops::conv2d_backward_weights(g, x, dy), dw, 1e-5,
                 std::string(k.name) + " dw without bias");
  }
}

// <dy, (f(x + e v) - f(x - e v)) / 2e> = <dx, v> and likewise for the weight: the backward
// passes are the derivatives of the forward one (in double-checked float arithmetic: the
// convolution is linear in each operand, so the difference quotient is exact up to rounding).
TEST(DnnlOps, ConvBackwardIsTheForwardsDerivative) {
  dnnl_ops::set_threads(1);
  ConvGeometry g = conv_cases()[1].g;
  Tensor x = Tensor::random(g.input_shape(), DType::Float32, 7);
  Tensor w = Tensor::random(g.weight_shape(), DType::Float32, 8);
  Tensor dy = Tensor::random(g.output_shape(), DType::Float32, 9);
  auto dot = [](const Tensor& a, const Tensor& b) {
    double s = 0;
    for (int64_t i = 0; i < a.numel(); ++i)
      s += static_cast<double>(a.data<float>()[i]) * b.data<float>()[i];
    return s;
  };
  auto shifted = [](const Tensor& t, const Tensor& v, float e) {
    Tensor r = t.clone();
    for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] += e * v.data<float>()[i];
    return r;
  };
  const float eps = 0.5f;
  Tensor vx = Tensor::random(g.input_shape(), DType::Float32, 10);
  double fd_x = (dot(dy, dnnl_ops::conv2d_forward(g, shifted(x, vx, eps), w)) -
                 dot(dy, dnnl_ops::conv2d_forward(g, shifted(x, vx, -eps), w))) /
                (2 * eps);
  double an_x = dot(dnnl_ops::conv2d_backward_data(g, dy, w), vx);
  EXPECT_NEAR(fd_x, an_x, 1e-4 * std::max(1.0, std::abs(an_x)));
  Tensor vw = Tensor::random(g.weight_shape(), DType::Float32, 11);
  double fd_w = (dot(dy, dnnl_ops::conv2d_forward(g, x, shifted(w, vw, eps))) -
                 dot(dy, dnnl_ops::conv2d_forward(g, x, shifted(w, vw, -eps)))) /
                (2 * eps);
  double an_w = dot(dnnl_ops::conv2d_backward_weights(g, x, dy), vw);
  EXPECT_NEAR(fd_w, an_w, 1e-4 * std::max(1.0, std::abs(an_w)));
}

TEST(DnnlOps, ConvRefusesBadGeometryWithAMessage) {
  ConvGeometry g;
  g.in_channels = 6, g.out_channels = 4, g.groups = 4, g.in_h = 5, g.in_w = 5;
  EXPECT_THROW(
      {
        try {
          (void)dnnl_ops::conv2d_forward(g, Tensor::zeros(g.input_shape()),
                                         Tensor::zeros({4, 1, 1, 1}));
        } catch (const RuntimeError& e) {
          EXPECT_NE(std::string(e.what()).find("group=4"), std::string::npos) << e.what();
          throw;
        }
      },
      RuntimeError);
  ConvGeometry big;
  big.in_h = 3, big.in_w = 3, big.kernel_h = 5, big.kernel_w = 1;
  EXPECT_THROW((void)big.out_h(), RuntimeError);
  ConvGeometry ok;
  ok.in_h = 4, ok.in_w = 4, ok.kernel_h = 3, ok.kernel_w = 3;
  // A weight of the wrong shape names both shapes.
  try {
    (void)dnnl_ops::conv2d_forward(ok, Tensor::zeros(ok.input_shape()),
                                   Tensor::zeros({1, 1, 2, 2}));
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("(1, 1, 3, 3)"), std::string::npos) << e.what();
  }
}

// numpy.matmul from the definition, with the transposes applied first.
std::vector<double> ref_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  std::vector<int64_t> sa = a.shape(), sb = b.shape();
  const bool av = sa.size() == 1, bv = sb.size() == 1;
  if (av) sa.insert(sa.begin(), 1);
  if (bv) sb.push_back(1);
  const size_t rank = std::max(sa.size(), sb.size());
  sa.insert(sa.begin(), rank - sa.size(), 1);
  sb.insert(sb.begin(), rank - sb.size(), 1);
  const int64_t ra = sa[rank - 2], ca = sa[rank - 1], rb = sb[rank - 2], cb = sb[rank - 1];
  const int64_t m = ta && !av ? ca : ra, k = ta && !av ? ra : ca, n = tb && !bv ? rb : cb;
  std::vector<int64_t> batch(rank - 2);
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < rank; ++i) batches *= (batch[i] = std::max(sa[i], sb[i]));
  std::vector<double> y(static_cast<size_t>(batches * m * n));
  for (int64_t o = 0; o < batches; ++o) {
    int64_t ia = 0, ib = 0, rem = o;
    int64_t mul_a = 1, mul_b = 1;
    for (size_t i = rank - 2; i-- > 0;) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      ia += (sa[i] == 1 ? 0 : idx) * mul_a;
      ib += (sb[i] == 1 ? 0 : idx) * mul_b;
      mul_a *= sa[i];
      mul_b *= sb[i];
    }
    const float* pa = a.data<float>() + ia * ra * ca;
    const float* pb = b.data<float>() + ib * rb * cb;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) {
          const float va = ta && !av ? pa[q * ca + i] : pa[i * ca + q];
          const float vb = tb && !bv ? pb[j * cb + q] : pb[q * cb + j];
          s += static_cast<double>(va) * vb;
        }
        y[(o * m + i) * n + j] = s;
      }
    }
  }
  return y;
}

TEST(DnnlOps, MatmulMatchesNumpyDefinition) {
  struct M {
    std::vector<int64_t> a, b;
    bool ta, tb;
    std::vector<int64_t> out;
  };
  const std::vector<M> cases = {
      {{5, 7}, {7, 3}, false, false, {5, 3}},
      {{7, 5}, {7, 3}, true, false, {5, 3}},
      {{5, 7}, {3, 7}, false, true, {5, 3}},
      {{7, 5}, {3, 7}, true, true, {5, 3}},
      {{2, 4, 5, 6}, {2, 4, 6, 3}, false, false, {2, 4, 5, 3}},  // attention scores
      {{2, 1, 5, 6}, {4, 6, 3}, false, false, {2, 4, 5, 3}},     // broadcast batch dims
      {{3, 6, 5}, {6, 4}, true, false, {3, 5, 4}},               // batched @ matrix
      {{6}, {2, 6, 3}, false, false, {2, 3}},                    // vector @ batched
      {{2, 5, 6}, {6}, false, false, {2, 5}},                    // batched @ vector
      {{6}, {6}, false, false, {}},                              // dot product
      {{1, 8, 16, 32}, {1, 8, 16, 32}, false, true, {1, 8, 16, 16}},
  };
  dnnl_ops::set_threads(1);
  uint64_t seed = 300;
  for (const M& c : cases) {
    Tensor a = Tensor::random(c.a, DType::Float32, seed++);
    Tensor b = Tensor::random(c.b, DType::Float32, seed++);
    std::string what = graphcore::runtime::shape_str(c.a) + " @ " +
                       graphcore::runtime::shape_str(c.b) + (c.ta ? " ta" : "") +
                       (c.tb ? " tb" : "");
    EXPECT_EQ(dnnl_ops::matmul_shape(c.a, c.b, c.ta, c.tb), c.out) << what;
    Tensor y = dnnl_ops::matmul(a, b, c.ta, c.tb);
    EXPECT_EQ(y.shape(), c.out) << what;
    expect_close(y, ref_matmul(a, b, c.ta, c.tb), 1e-5, what);
  }
  // A bias on the last dim (Dense).
  Tensor x = Tensor::random({4, 6}, DType::Float32, 1),
         w = Tensor::random({3, 6}, DType::Float32, 2);
  Tensor bias = Tensor::random({3}, DType::Float32, 3);
  std::vector<double> want = ref_matmul(x, w, false, true);
  for (size_t i = 0; i < want.size(); ++i) want[i] += bias.data<float>()[i % 3];
  expect_close(dnnl_ops::matmul(x, w, false, true, &bias), want, 1e-5, "dense with bias");
}

TEST(DnnlOps, MatmulRefusesMismatchedShapesWithAMessage) {
  try {
    (void)dnnl_ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}));
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 3) @ (4, 5)"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)dnnl_ops::matmul(Tensor::zeros({2, 2, 3}), Tensor::zeros({3, 3, 4})),
               RuntimeError);
}

// Operands of at least 64 rows and columns: a plain second operand goes to oneDNN's own layout
// (reordered on each call); a transposed one with a bias (Dense) is read in place.
TEST(DnnlOps, MatmulReorderedSecondOperand) {
  dnnl_ops::set_threads(1);
  Tensor x = Tensor::random({8, 80}, DType::Float32, 21);
  Tensor b = Tensor::random({80, 96}, DType::Float32, 22);
  expect_close(dnnl_ops::matmul(x, b), ref_matmul(x, b, false, false), 1e-5, "plain, reordered");
  Tensor w = Tensor::random({96, 80}, DType::Float32, 23);
  Tensor bias = Tensor::random({96}, DType::Float32, 24);
  std::vector<double> want = ref_matmul(x, w, false, true);
  for (size_t i = 0; i < want.size(); ++i) want[i] += bias.data<float>()[i % 96];
  expect_close(dnnl_ops::matmul(x, w, false, true, &bias), want, 1e-5, "transposed, bias");
}

// The dense layer's backward (inner product): dx = dy W, dW = dy^T x, db = the column sums of
// dy, against loops in double, at one and two threads, for shapes below and above the sizes
// where oneDNN blocks; the bits repeat from call to call; empty row counts give zeros.
TEST(DnnlOps, DenseBackwardMatchesTheDefinitions) {
  struct D {
    int64_t m, out, in;
  };
  for (int threads : {1, 2}) {
    dnnl_ops::set_threads(threads);
    uint64_t seed = 500;
    for (const D& d : {D{1, 3, 5}, D{4, 6, 7}, D{33, 80, 72}, D{128, 96, 200}}) {
      const std::string what = std::to_string(d.m) + "x" + std::to_string(d.out) + "x" +
                               std::to_string(d.in) + " threads " + std::to_string(threads);
      Tensor x = Tensor::random({d.m, d.in}, DType::Float32, seed++);
      Tensor w = Tensor::random({d.out, d.in}, DType::Float32, seed++);
      Tensor dy = Tensor::random({d.m, d.out}, DType::Float32, seed++);
      // dx = dy @ W, dW = dy^T @ x (ref_matmul's transposes).
      Tensor dx = dnnl_ops::dense_backward_data(dy, w);
      EXPECT_EQ(dx.shape(), (std::vector<int64_t>{d.m, d.in})) << what;
      expect_close(dx, ref_matmul(dy, w, false, false), 1e-5, "dx " + what);
      Tensor db;
      Tensor dw = dnnl_ops::dense_backward_weights(x, dy, &db);
      EXPECT_EQ(dw.shape(), (std::vector<int64_t>{d.out, d.in})) << what;
      expect_close(dw, ref_matmul(dy, x, true, false), 1e-5, "dW " + what);
      std::vector<double> want_db(static_cast<size_t>(d.out), 0.0);
      for (int64_t i = 0; i < d.m; ++i) {
        for (int64_t o = 0; o < d.out; ++o) want_db[o] += dy.data<float>()[i * d.out + o];
      }
      ASSERT_EQ(db.shape(), (std::vector<int64_t>{d.out})) << what;
      expect_close(db, want_db, 1e-5, "db " + what);
      // Without the bias: the same dW; and the same bits on a second call.
      Tensor dw2 = dnnl_ops::dense_backward_weights(x, dy);
      EXPECT_EQ(0, std::memcmp(dw.data<float>(), dw2.data<float>(), dw.numel() * sizeof(float)))
          << what;
      Tensor dx2 = dnnl_ops::dense_backward_data(dy, w);
      EXPECT_EQ(0, std::memcmp(dx.data<float>(), dx2.data<float>(), dx.numel() * sizeof(float)))
          << what;
    }
  }
  dnnl_ops::set_threads(1);
  Tensor db;
  Tensor dw = dnnl_ops::dense_backward_weights(Tensor::zeros({0, 4}), Tensor::zeros({0, 3}), &db);
  EXPECT_EQ(dw.shape(), (std::vector<int64_t>{3, 4}));
  for (int64_t i = 0; i < dw.numel(); ++i) EXPECT_EQ(dw.data<float>()[i], 0.0f);
  for (int64_t i = 0; i < db.numel(); ++i) EXPECT_EQ(db.data<float>()[i], 0.0f);
  EXPECT_THROW((void)dnnl_ops::dense_backward_data(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})),
               RuntimeError);
  EXPECT_THROW((void)dnnl_ops::dense_backward_weights(Tensor::zeros({2, 3}), Tensor::zeros({3, 5})),
               RuntimeError);
}

double gelu_ref(double v, bool tanh_form) {
  if (tanh_form) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
}

// GeLU (both forms) and exp against libm in double, the backward against a central difference
// of that reference.
TEST(DnnlOps, EltwiseMatchesTheDefinitions) {
  dnnl_ops::set_threads(1);
  const int64_t n = 1001;
  std::vector<float> x(n), y(n), dy(n), dx(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -8.0f + 16.0f * static_cast<float>(i) / (n - 1);
  for (bool tanh_form : {false, true}) {
    const auto f = tanh_form ? dnnl_ops::Eltwise::GeluTanh : dnnl_ops::Eltwise::GeluErf;
    dnnl_ops::eltwise(f, x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = gelu_ref(x[i], tanh_form);
      ASSERT_NEAR(y[i], want, 1e-6 * (1 + std::abs(want))) << x[i] << (tanh_form ? " tanh" : "");
    }
    for (int64_t i = 0; i < n; ++i) dy[i] = 0.5f + static_cast<float>(i % 7);
    dnnl_ops::eltwise_backward(f, x.data(), dy.data(), dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double h = 1e-4;
      const double d = (gelu_ref(x[i] + h, tanh_form) - gelu_ref(x[i] - h, tanh_form)) / (2 * h);
      ASSERT_NEAR(dx[i], dy[i] * d, 1e-5 * (1 + std::abs(dy[i] * d))) << x[i];
    }
  }
  dnnl_ops::eltwise(dnnl_ops::Eltwise::Exp, x.data(), y.data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], std::exp(x[i]), 2e-6 * std::exp(x[i]));
}

// Softmax and LogSoftmax along the middle axis of (outer, len, inner) against double loops;
// two threads give the same bits as one (each line on one thread).
TEST(DnnlOps, SoftmaxMatchesTheDefinitionAtAnyThreadCount) {
  for (const auto& dims : std::vector<std::array<int64_t, 3>>{{3, 37, 1}, {2, 5, 9}}) {
    const int64_t outer = dims[0], len = dims[1], inner = dims[2];
    Tensor x = Tensor::random({outer, len, inner}, DType::Float32, 31);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 20.0f;
    for (bool log : {false, true}) {
      std::vector<float> y1(x.numel()), y2(x.numel());
      dnnl_ops::set_threads(1);
      dnnl_ops::softmax(x.data<float>(), y1.data(), outer, len, inner, log);
      dnnl_ops::set_threads(2);
      dnnl_ops::softmax(x.data<float>(), y2.data(), outer, len, inner, log);
      dnnl_ops::set_threads(1);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
          double mx = -INFINITY, sum = 0;
          for (int64_t k = 0; k < len; ++k) mx = std::max<double>(mx, x.data<float>()[at(k)]);
          for (int64_t k = 0; k < len; ++k) sum += std::exp(x.data<float>()[at(k)] - mx);
          for (int64_t k = 0; k < len; ++k) {
            const double v = x.data<float>()[at(k)] - mx;
            const double want = log ? v - std::log(sum) : std::exp(v) / sum;
            // LogSoftmax: oneDNN's log near 1 is off by up to ~5e-6 absolute (the runtime's
            // LogSoftmax kernel keeps libm for that reason).
            ASSERT_NEAR(y1[at(k)], want, (log ? 1e-5 : 2e-6) * (1 + std::abs(want)))
                << o << ',' << k << ',' << i;
            ASSERT_EQ(y1[at(k)], y2[at(k)]);
          }
        }
      }
    }
  }
}

// Two threads give the same forward numbers as one (oneDNN splits forward work by output, not
// by reduction), and the primitives are cached per shape and thread count.
TEST(DnnlOps, ThreadsAndPrimitiveCache) {
  ConvGeometry g = conv_cases()[0].g;
  g.batch = 4, g.in_channels = 16, g.out_channels = 32, g.in_h = g.in_w = 28;
  Tensor x = Tensor::random(g.input_shape(), DType::Float32, 5);
  Tensor w = Tensor::random(g.weight_shape(), DType::Float32, 6);
  dnnl_ops::set_threads(1);
  Tensor y1 = dnnl_ops::conv2d_forward(g, x, w);
  const size_t cached = dnnl_ops::cached_primitives();
  Tensor again = dnnl_ops::conv2d_forward(g, x, w);
  EXPECT_EQ(dnnl_ops::cached_primitives(), cached);  // same shape: no new primitive
  dnnl_ops::set_threads(2);
  Tensor y2 = dnnl_ops::conv2d_forward(g, x, w);
  EXPECT_EQ(dnnl_ops::cached_primitives(), cached + 1);  // another thread count: its own
  dnnl_ops::set_threads(1);
  for (int64_t i = 0; i < y1.numel(); ++i) {
    ASSERT_EQ(y1.data<float>()[i], again.data<float>()[i]) << i;
    ASSERT_NEAR(y1.data<float>()[i], y2.data<float>()[i],
                1e-5 * (1 + std::abs(y1.data<float>()[i])))
        << i;
  }
  EXPECT_EQ(dnnl_ops::resolve_threads(3), 3);
  EXPECT_GE(dnnl_ops::resolve_threads(0), 1);
  EXPECT_NE(graphcore::runtime::kernel_library().find("oneDNN"), std::string::npos);
}

}  // namespace
