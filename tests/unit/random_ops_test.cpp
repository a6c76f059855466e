// The runtime's random operators (ops.randn, ops.rand, ops.randint): the distribution, range
// and dtype MindSpore documents, the same values for the same run seed and different ones for
// another (the runtime's own generator: MindSpore's Philox stream is not reproduced).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "expect_analysis.h"
#include "graphcore/runtime.h"

namespace graphcore {
namespace {

using runtime::Executor;
using runtime::Tensor;

const char* kModel = R"(import mindspore.nn as nn
import mindspore.ops as ops


class Net(nn.Cell):
    def construct(self, x):
        return ops.randn(4000), ops.rand(50, 80), ops.randint(2, 7, (4000,))
)";

std::vector<Tensor> run(uint64_t seed) {
  AnalysisResult r = analyse_net(kModel);
  EXPECT_EQ(r.cells.size(), 1U);
  if (r.cells.empty()) return {};
  runtime::ExecOptions eo;
  eo.seed = seed;
  Executor ex(r.cells[0], eo);
  ex.set_input_spec(0, "random", seed);
  auto s = ex.run();
  EXPECT_EQ(s.kind, runtime::RunStatus::Kind::Finished) << s.message;
  return ex.outputs();
}

TEST(RandomOps, SamplesHaveTheDocumentedDistributionsAndDtypes) {
  auto outs = run(11);
  ASSERT_EQ(outs.size(), 3U);
  const Tensor& normal = outs[0];
  EXPECT_EQ(normal.dtype(), DType::Float32);
  EXPECT_EQ(normal.shape(), (std::vector<int64_t>{4000}));
  auto st = runtime::compute_stats(normal);
  EXPECT_LT(std::fabs(st.mean), 0.06);  // 4000 samples: the mean's sd is 0.016
  EXPECT_NEAR(st.std, 1.0, 0.05);
  const Tensor& uniform = outs[1];
  EXPECT_EQ(uniform.shape(), (std::vector<int64_t>{50, 80}));
  st = runtime::compute_stats(uniform);
  EXPECT_GE(st.min, 0.0);
  EXPECT_LT(st.max, 1.0);
  EXPECT_NEAR(st.mean, 0.5, 0.03);
  const Tensor& ints = outs[2];
  EXPECT_EQ(ints.dtype(), DType::Int64);
  std::set<int64_t> seen;
  for (int64_t i = 0; i < ints.numel(); ++i) seen.insert(static_cast<int64_t>(ints.at(i)));
  EXPECT_EQ(seen, (std::set<int64_t>{2, 3, 4, 5, 6}));
}

TEST(RandomOps, TheRunSeedDecidesTheValues) {
  auto a = run(11), b = run(11), c = run(12);
  ASSERT_EQ(a.size(), 3U);
  ASSERT_EQ(c.size(), 3U);
  for (size_t k = 0; k < 3; ++k) {
    int64_t same = 0, differ = 0;
    for (int64_t i = 0; i < a[k].numel(); ++i) {
      same += a[k].at(i) == b[k].at(i) ? 1 : 0;
      differ += a[k].at(i) != c[k].at(i) ? 1 : 0;
    }
    EXPECT_EQ(same, a[k].numel()) << "output " << k;
    EXPECT_GT(differ, a[k].numel() / 2) << "output " << k;
  }
}

}  // namespace
}  // namespace graphcore
