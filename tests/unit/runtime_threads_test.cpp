// The runtime's own threads (graphcore/src/runtime/parallel.h): parallel_for covers every item
// once in ranges of at least the grain, and the threaded kernels (elementwise, broadcast binaries,
// pooling, BatchNorm, LayerNorm, Softmax, their gradients, the optimizer update, Dropout's mask)
// give the same bits at one, two and three threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/autodiff.h"
#include "graphcore/optim.h"
#include "graphcore/runtime.h"
#include "graphcore/source.h"
// Private headers of graphcore (its include directory is private to the library).
#include "../../graphcore/src/runtime/dnnl_ops.h"
#include "../../graphcore/src/runtime/kernels.h"
#include "../../graphcore/src/runtime/parallel.h"

using namespace graphcore;
using namespace graphcore::runtime;

namespace {

struct Split {
  std::vector<int> hits;
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

Split split(int64_t n, int64_t grain, int threads) {
  dnnl_ops::set_threads(threads);
  Split s;
  s.hits.assign(static_cast<size_t>(n), 0);
  std::vector<std::atomic<int64_t>> seen(8);
  std::atomic<int> count{0};
  std::vector<std::pair<int64_t, int64_t>> ranges(8);
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    const int at = count.fetch_add(1);
    if (at < 8) ranges[static_cast<size_t>(at)] = {b, e};
    for (int64_t i = b; i < e; ++i) ++s.hits[static_cast<size_t>(i)];  // disjoint ranges
  });
  ranges.resize(static_cast<size_t>(std::min(count.load(), 8)));
  s.ranges = ranges;
  dnnl_ops::set_threads(1);
  return s;
}

}  // namespace

TEST(RuntimeThreads, ParallelForCoversEveryItemOnceInRangesOfAtLeastTheGrain) {
  for (int threads : {1, 2, 3}) {
    for (int64_t n : {0, 1, 7, 64, 1000, 100003}) {
      for (int64_t grain : {1, 64, 1 << 15}) {
        const Split s = split(n, grain, threads);
        for (int h : s.hits) ASSERT_EQ(h, 1) << n << " " << grain << " " << threads;
        if (n == 0) {
          EXPECT_TRUE(s.ranges.empty());
          continue;
        }
        int64_t expect_ranges = std::min<int64_t>(threads, (n + grain - 1) / grain);
#ifndef _OPENMP
        expect_ranges = 1;  // no OpenMP: one range on the calling thread
#endif
        EXPECT_EQ(static_cast<int64_t>(s.ranges.size()), expect_ranges) << n << " " << grain;
        if (s.ranges.size() > 1) {
          for (const auto& [b, e] : s.ranges) EXPECT_GE(e - b, grain);
        }
      }
    }
  }
}

namespace {

// A network whose every layer the runtime runs itself (no convolution or matrix product), on
// tensors large enough to be split between threads (several times kGrainCheap elements).
const char* kNet = R"(import mindspore as ms
from mindspore import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="same")
        self.avg = nn.AvgPool2d(kernel_size=2, stride=2)
        self.ln = nn.LayerNorm((64,), epsilon=1e-5)
        self.gelu = nn.GELU(approximate=False)
        self.softmax = nn.Softmax(axis=-1)
        self.softmax1 = nn.Softmax(axis=1)
        self.bias = ms.Parameter(ops.ones((64,), ms.float32), name="bias")

    def construct(self, x):
        y = ops.relu(self.bn(x))
        y = self.avg(self.pool(y) * 2.0)
        y = ops.reshape(y, (4, 16, 64, 64)) + self.bias
        z = self.gelu(self.ln(y))
        z = ops.reshape(z, (4, 16, 4096))
        a = self.softmax(z) + self.softmax1(z)
        return ops.sum(ops.tanh(a) * a - ops.maximum(a, a * 0.5))
)";

std::vector<Tensor> grads_at(const CellReport& back, int threads) {
  ExecOptions eo;
  eo.training = true;
  eo.threads = threads;
  eo.seed = 5;
  Executor ex(back, eo);
  ex.set_input(0, Tensor::random({4, 16, 256, 256}, DType::Float32, 11));
  const RunStatus st = ex.run();
  EXPECT_EQ(st.kind, RunStatus::Kind::Finished) << st.message;
  dnnl_ops::set_threads(1);
  return ex.outputs();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data<float>(), b.data<float>(), static_cast<size_t>(a.numel()) * 4) == 0;
}

}  // namespace

TEST(RuntimeThreads, ThreadedKernelsAndGradientsGiveTheSameBitsAtAnyThreadCount) {
  MemorySourceProvider src("/mem/net.py", kNet);
  AnalysisOptions opts;
  opts.cell = "Net";
  opts.inputs = {TensorType{Shape::of(std::vector<int64_t>{4, 16, 256, 256}), DType::Float32}};
  const AnalysisResult res = analyze_file("/mem/net.py", opts, src);
  ASSERT_FALSE(res.cells.empty());
  for (const Diagnostic& d : res.diagnostics) EXPECT_NE(d.severity, Severity::Error) << d.message;
  const autodiff::GradResult g = autodiff::build_backward(res.cells[0]);
  ASSERT_TRUE(g.ok()) << g.error;
  const std::vector<Tensor> one = grads_at(g.grad->report, 1);
  ASSERT_GE(one.size(), 5u);  // loss, gradients, BatchNorm's statistics
  for (int threads : {2, 3}) {
    const std::vector<Tensor> many = grads_at(g.grad->report, threads);
    ASSERT_EQ(many.size(), one.size());
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_TRUE(same_bits(one[i], many[i])) << "output " << i << " at " << threads << " threads";
    }
  }
  // Not all zero: the comparison compares something.
  EXPECT_FALSE(compute_stats(one[1]).all_zero());
}

// Every optimizer's update, element by element, split between threads: the same bits.
TEST(RuntimeThreads, OptimizerUpdatesGiveTheSameBitsAtAnyThreadCount) {
  const int64_t n = 100003;
  const Tensor w0 = Tensor::random({n}, DType::Float32, 1);
  const Tensor grad = Tensor::random({n}, DType::Float32, 2);
  for (OptimizerKind kind : {OptimizerKind::Momentum, OptimizerKind::SGD, OptimizerKind::Adam,
                             OptimizerKind::AdamWeightDecay}) {
    OptimizerConfig cfg = OptimizerConfig::defaults(kind);
    cfg.learning_rate = LrSchedule::constant(0.01);
    cfg.weight_decay = 0.01;
    std::vector<Tensor> results;
    for (int threads : {1, 2, 3}) {
      Optimizer opt(cfg, {"fc.weight"}, {{n}});
      Tensor p = w0.clone();
      Tensor* ptrs[] = {&p};
      dnnl_ops::set_threads(threads);
      for (int i = 0; i < 3; ++i) opt.step(ptrs, std::span<const Tensor>(&grad, 1));
      dnnl_ops::set_threads(1);
      results.push_back(p);
    }
    EXPECT_FALSE(same_bits(results[0], w0)) << optimizer_kind_name(kind);
    EXPECT_TRUE(same_bits(results[0], results[1])) << optimizer_kind_name(kind);
    EXPECT_TRUE(same_bits(results[0], results[2])) << optimizer_kind_name(kind);
  }
}

// Dropout's masked product draws each element's (Dropout2D: each channel's) value from the
// counter-based stream in blocks on the runtime's threads: the bits of the product with the
// sequential stream's mask, at every thread count, and about keep_prob of the elements kept.
TEST(RuntimeThreads, DropoutDrawsTheSequentialStreamsMaskAtAnyThreadCount) {
  for (const bool channels : {false, true}) {
    Node n;
    n.id = "encoder.drop";
    n.op = channels ? "Dropout2D" : "Dropout";
    n.attrs.push_back(Attr{"p", AttrValue(0.3)});
    const std::vector<int64_t> shape =
        channels ? std::vector<int64_t>{4, 700, 9, 11} : std::vector<int64_t>{3, 100003};
    const Tensor x = Tensor::random(shape, DType::Float32, 7);
    const std::vector<float> mask = kernels::dropout_mask(n, channels, n.id, shape, 42);
    const int64_t per = x.numel() / static_cast<int64_t>(mask.size());
    Tensor want = Tensor::uninitialized(shape, DType::Float32);
    const auto scale = static_cast<float>(1.0 / 0.7);
    int64_t kept = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      want.data<float>()[i] = x.data<float>()[i] * mask[i / per] * scale;
      kept += mask[i / per] != 0.0f ? 1 : 0;
    }
    EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(x.numel()), 0.7, 0.02);
    for (int threads : {1, 2, 3}) {
      dnnl_ops::set_threads(threads);
      Tensor y = Tensor::uninitialized(shape, DType::Float32);
      kernels::dropout_apply(n, channels, n.id, shape, 42, x.data<float>(), y.data<float>());
      EXPECT_TRUE(same_bits(y, want)) << n.op << " at " << threads << " threads";
    }
    dnnl_ops::set_threads(1);
  }
}
